/* datapath/fileio.h — whole-file I/O for the SSD tier: crash-safe writes
 * (temporary name, then rename) and reads, with O_DIRECT when the buffer and
 * length are DP_ALIGN-aligned so KV bytes bypass the page cache (the pinned
 * pool already is the DRAM copy; LMCache's disk backend does the same).
 *
 * libc only: the probe times these calls for the host↔SSD directions.
 *
 * Under the test build flag KVSIM_TEST_FAULTS, dp_fault_arm() makes the next
 * write fail the way a crash would, so tests can show that no half-written
 * file is ever read back as a valid chunk. */
#ifndef DP_FILEIO_H
#define DP_FILEIO_H

#include <stdbool.h>
#include <stddef.h>

#include "sim/util.h"

/* Write buf to `path` atomically: write "<path>.tmp.<pid>.<n>", close,
 * rename over `path`. A reader sees the old file or the new one, never a
 * partial one from this call. *direct tells whether O_DIRECT was used.
 * DP_OK, or DP_EIO naming the file and the failing call. */
int dp_file_write_atomic(const char *path, const void *buf, size_t n, bool *direct, sim_err *err);

/* Read the whole file into buf (capacity cap). DP_OK with *got bytes;
 * DP_MISS when the file does not exist; DP_CORRUPT when it is larger than
 * cap (it cannot be what the caller expects); DP_EIO on other failures. */
int dp_file_read(const char *path, void *buf, size_t cap, size_t *got, bool *direct, sim_err *err);

/* mkdir -p; -1 naming the directory that could not be created. */
int dp_mkdirs(const char *dir, sim_err *err);

/* Does `name` look like a temporary left behind by dp_file_write_atomic? */
bool dp_file_is_temp(const char *name);

#ifdef KVSIM_TEST_FAULTS
typedef enum dp_fault {
    DP_FAULT_NONE = 0,
    DP_FAULT_CRASH_BEFORE_RENAME, /* whole temp file written, process "dies" before rename */
    DP_FAULT_CRASH_MID_WRITE,     /* half the temp file written, process "dies" */
    DP_FAULT_TORN_RENAME,         /* renamed, but only half the bytes reached the disk
                                   * (power cut after an unsynced rename) — reported success */
} dp_fault;
/* The next dp_file_write_atomic fails this way, once. */
void dp_fault_arm(dp_fault f);
#endif

#endif
