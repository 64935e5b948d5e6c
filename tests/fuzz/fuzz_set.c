/* tests/fuzz/fuzz_set.c — libFuzzer entry point for `--set key.path=value`
 * parsing (sim/config/config.c): the input is split at every NUL and newline
 * into strings (at most FUZZ_MAX_SETS; a trailing separator adds no empty
 * string) and given to sim_config_load as the --set list of a run with no
 * config file, as `kvsim run --set A --set B ...` gives them. The loader
 * must return 0, or -1 with a message; a config it accepts must load back
 * from its own resolved JSON with the same hash (fuzz_config_verdict).
 *
 *   make fuzz && build/fuzz/fuzz_set -max_total_time=60 build/fuzz/corpus/set tests/fuzz/corpus/set
 * (libFuzzer adds the inputs it finds to the first folder; the seeds here stay as written).
 *
 * tests/test_fuzz.c includes this file with FUZZ_NO_ENTRY defined and runs
 * fuzz_set_check on a fixed set of mutations of the same corpus. */
#include "tests/fuzz/fuzz.h"

#define FUZZ_MAX_SETS 64

/* Split buf (size bytes, NUL-terminated at buf[size]) in place. */
static int fuzz_set_split(char *buf, size_t size, char **sets)
{
    int n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= size && n < FUZZ_MAX_SETS; i++) {
        if (i < size && buf[i] != '\n' && buf[i] != '\0') continue;
        buf[i] = '\0';
        if (i < size || i > start) sets[n++] = buf + start;
        start = i + 1;
    }
    return n;
}

static fuzz_verdict fuzz_set_check(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1), *sets[FUZZ_MAX_SETS];
    if (!buf) return fuzz_broken("out of memory");
    if (size) memcpy(buf, data, size);
    buf[size] = '\0';
    fuzz_verdict v = fuzz_config_verdict(NULL, sets, fuzz_set_split(buf, size, sets));
    free(buf);
    return v;
}

FUZZ_ENTRY(fuzz_set_check)
