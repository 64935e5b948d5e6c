/* datapath/ssd.h — the SSD tier: one file per chunk key under a directory
 * (LMCache's LocalDiskBackend: index-free here, the file name is the key).
 *
 * A put writes the chunk image (datapath/chunk.h) under a temporary name and
 * renames it into place (datapath/fileio.h), with O_DIRECT when the image is
 * aligned, which pool slots always are. A get reads the file and verifies
 * header and XXH3 checksum; a missing file is DP_MISS, a short one
 * DP_SHORT, a bad one DP_CORRUPT — each removed so the next put replaces it.
 * No fsync: a crash may lose or tear the newest files, and the checksum
 * turns a torn file into a reported miss, which is all a cache needs.
 *
 * Opening the tier removes temporaries left by a crashed writer: one
 * process writes a directory at a time. */
#ifndef DP_SSD_H
#define DP_SSD_H

#include <stddef.h>
#include <stdint.h>

#include "datapath/layout.h"
#include "sim/util.h"

typedef struct dp_ssd dp_ssd;

typedef struct dp_ssd_stats {
    int64_t puts, hits, misses, short_reads, corrupt, direct_ios;
} dp_ssd_stats;

/* Create the directory if needed and sweep stale temporaries. */
int dp_ssd_open(dp_ssd **out, const char *dir, const dp_shape *shape, sim_err *err);
void dp_ssd_close(dp_ssd *d);

/* Store an image of `bytes` (a sealed chunk) as key's file. */
int dp_ssd_put(dp_ssd *d, uint64_t key, const void *image, size_t bytes, sim_err *err);
/* Read key's file into image (capacity cap) and verify it:
 * DP_OK (*tokens set), DP_MISS, DP_SHORT, DP_CORRUPT or DP_EIO. */
int dp_ssd_get(dp_ssd *d, uint64_t key, void *image, size_t cap, int *tokens, sim_err *err);
/* The file name used for key (for tests and tools). */
void dp_ssd_path(const dp_ssd *d, uint64_t key, char *buf, size_t n);
dp_ssd_stats dp_ssd_get_stats(const dp_ssd *d);

#endif
