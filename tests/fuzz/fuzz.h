/* tests/fuzz/fuzz.h — what the fuzz entry points (fuzz_trace.c, fuzz_validate.c, fuzz_model.c,
 * fuzz_config.c, fuzz_set.c, fuzz_ragpulse.c, fuzz_csv.c) share: the verdict a check returns, the input
 * as a file the real loaders can open, and the config round trip.
 *
 * Each entry file defines `static fuzz_verdict fuzz_NAME_check(data, size)`
 * and ends with FUZZ_ENTRY(fuzz_NAME_check): the libFuzzer entry point
 * LLVMFuzzerTestOneInput, which calls it and aborts on FUZZ_BROKEN
 * (libFuzzer then saves the input as a crash), unless FUZZ_NO_ENTRY is
 * defined. tests/test_fuzz.c defines FUZZ_NO_ENTRY and includes all the
 * files, so one binary holds the checks under their own names and no
 * entry point clashes. Header-only: every function is static inline. */
#ifndef TESTS_FUZZ_FUZZ_H
#define TESTS_FUZZ_FUZZ_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <jansson.h>

#include "sim/config/config.h"
#include "sim/util.h"

/* Accepted: every call succeeded. Rejected: a call returned -1 with a
 * message. Broken: a contract of the API was violated (an empty message, a
 * request that breaks the reader's documented invariants, a config whose
 * resolved JSON does not reproduce it); the check has printed why. */
typedef enum fuzz_verdict { FUZZ_BROKEN = -1, FUZZ_ACCEPTED = 0, FUZZ_REJECTED = 1 } fuzz_verdict;

/* Print why a case is broken and return FUZZ_BROKEN. */
__attribute__((format(printf, 1, 2))) static inline fuzz_verdict fuzz_broken(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz: broken: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return FUZZ_BROKEN;
}

/* A call returned -1: rejected when it said why, broken when it did not. */
static inline fuzz_verdict fuzz_rejected(const sim_err *err, const char *call)
{
    if (!err->msg[0]) return fuzz_broken("%s returned -1 with an empty message", call);
    return FUZZ_REJECTED;
}

/* An anonymous in-memory file (memfd) holding data, named path
 * (/proc/self/fd/N, at least 32 bytes), which the loaders open by path like
 * any other file, with nothing written to disk: its fd, or -1. */
static inline int fuzz_memfd(const void *data, size_t size, char *path, size_t cap)
{
    int fd = memfd_create("kvsim-fuzz", MFD_CLOEXEC);
    if (fd < 0) return -1;
    for (size_t off = 0; off < size;) {
        ssize_t k = write(fd, (const char *)data + off, size - off);
        if (k <= 0) {
            close(fd);
            return -1;
        }
        off += (size_t)k;
    }
    snprintf(path, cap, "/proc/self/fd/%d", fd);
    return fd;
}

/* Run check on the input as a file (fuzz_memfd). ctx is passed through. */
static inline fuzz_verdict fuzz_on_file(const void *data, size_t size,
                                        fuzz_verdict (*check)(const char *path, const void *ctx), const void *ctx)
{
    char path[64];
    int fd = fuzz_memfd(data, size, path, sizeof path);
    if (fd < 0) return fuzz_broken("cannot put the input in a memfd");
    fuzz_verdict v = check(path, ctx);
    close(fd);
    return v;
}

/* The resolved config at path loads back with the hash of *ctx. */
static inline fuzz_verdict fuzz_config_reload(const char *path, const void *ctx)
{
    const sim_config *c = ctx;
    sim_config again;
    sim_err err = {{0}};
    if (sim_config_load(&again, path, NULL, 0, &err))
        return fuzz_broken("the resolved config does not load back: %s", err.msg);
    uint64_t hash = again.hash;
    sim_config_free(&again);
    if (hash != c->hash)
        return fuzz_broken("the resolved config loads back with hash %016llx, not %016llx", (unsigned long long)hash,
                           (unsigned long long)c->hash);
    return FUZZ_ACCEPTED;
}

/* sim_config_load(config_path, sets): 0, or -1 with a message. Then its
 * documented promise: the resolved JSON alone reproduces a run, so loaded
 * back as a config file over the defaults it gives the same config hash. */
static inline fuzz_verdict fuzz_config_verdict(const char *config_path, char *const *sets, int nsets)
{
    sim_config c;
    sim_err err = {{0}};
    if (sim_config_load(&c, config_path, sets, nsets, &err)) return fuzz_rejected(&err, "sim_config_load");
    char *dump = json_dumps(c.root, JSON_SORT_KEYS);
    fuzz_verdict v = dump ? fuzz_on_file(dump, strlen(dump), fuzz_config_reload, &c)
                          : fuzz_broken("json_dumps of a resolved config failed");
    free(dump);
    sim_config_free(&c);
    return v;
}

/* LLVMFuzzerTestOneInput over check, aborting (libFuzzer saves the input)
 * when a case is broken; nothing when FUZZ_NO_ENTRY is defined. Written
 * last in each fuzz_NAME.c, with no semicolon. */
#ifdef FUZZ_NO_ENTRY
#define FUZZ_ENTRY(check)
#else
#define FUZZ_ENTRY(check)                                                                                              \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)                                                       \
    {                                                                                                                  \
        if (check(data, size) == FUZZ_BROKEN) abort();                                                                 \
        return 0;                                                                                                      \
    }
#endif

#endif
