/* tests/fuzz/fuzz_config.c — libFuzzer entry point for the config loader
 * (sim/config/config.c): the input bytes are a config file, loaded over
 * configs/default.json by sim_config_load exactly as `kvsim run --config
 * FILE` loads it. The loader must return 0, or -1 with a message; a config
 * it accepts must load back from its own resolved JSON with the same hash
 * (fuzz_config_verdict). Anything else aborts, and so does any sanitizer
 * report or leak.
 *
 *   make fuzz && build/fuzz/fuzz_config -max_total_time=60 build/fuzz/corpus/config tests/fuzz/corpus/config
 * (libFuzzer adds the inputs it finds to the first folder; the seeds here stay as written).
 *
 * tests/test_fuzz.c includes this file with FUZZ_NO_ENTRY defined and runs
 * fuzz_config_check on a fixed set of mutations of the same corpus. */
#include "tests/fuzz/fuzz.h"

static fuzz_verdict fuzz_config_file(const char *path, const void *ctx) { return fuzz_config_verdict(path, NULL, 0); }

static fuzz_verdict fuzz_config_check(const uint8_t *data, size_t size)
{
    return fuzz_on_file(data, size, fuzz_config_file, NULL);
}

FUZZ_ENTRY(fuzz_config_check)
