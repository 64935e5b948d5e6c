/* tests/fuzz/fuzz_validate.c — libFuzzer entry point for the reader of
 * `kvsim validate --measurements FILE` (sim/replay/validate_run.c and
 * validate.c; issue 40): the input bytes are a measurements file, read and
 * checked by sim_validate_read exactly as `kvsim validate` reads it before
 * it replays anything (the format, the ids, every experiment's model,
 * hardware, engine, workload and measured fields). The reader must return
 * 0, or -1 with a message; a file it accepts holds at least one
 * experiment. Anything else aborts, and so does any sanitizer report or
 * leak.
 *
 *   make fuzz && build/fuzz/fuzz_validate -max_total_time=60 build/fuzz/corpus/validate tests/fuzz/corpus/validate
 * (run from the repository root: the seeds name tests/fixtures/validate/'s model and hardware). */
#include "sim/replay/validate.h"
#include "tests/fuzz/fuzz.h"

static fuzz_verdict fuzz_validate_file(const char *path, const void *ctx)
{
    sim_err err = {{0}};
    int n = 0;
    if (sim_validate_read(path, &n, &err)) return fuzz_rejected(&err, "sim_validate_read");
    return n >= 1 ? FUZZ_ACCEPTED : fuzz_broken("an accepted measurements file with %d experiments", n);
}

static fuzz_verdict fuzz_validate_check(const uint8_t *data, size_t size)
{
    return fuzz_on_file(data, size, fuzz_validate_file, NULL);
}

FUZZ_ENTRY(fuzz_validate_check)
