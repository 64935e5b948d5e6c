/* datapath/cache.h — the chunk store of the real data path: the paged KV
 * buffer of a backend, the pinned chunk pool in front, an optional SSD tier
 * behind it (docs/architecture.md §7, LMCache's StorageManager reduced to two tiers).
 *
 *   store(key, slot mapping)  gather the tokens' KV (all layers) from the
 *                             paged buffer into a pool slot and seal it
 *                             with its checksum; the LRU victim, if any,
 *                             is demoted to the SSD tier first.
 *   load(key, slot mapping)   find the chunk in the pool, else read it from
 *                             SSD into a pool slot (promotion), verify its
 *                             XXH3 checksum, scatter it into the paged
 *                             buffer.
 *
 * A load that cannot deliver the exact bytes returns a miss (DP_MISS,
 * DP_SHORT, DP_CORRUPT) and copies nothing, so the caller recomputes those
 * tokens instead of attending over stale KV. Errors the caller acts on:
 * DP_EFULL (every pool slot pinned), DP_ERANGE (slot outside the buffer or
 * more tokens than a chunk holds), DP_EINVAL (token count differs from the
 * stored chunk). */
#ifndef DP_CACHE_H
#define DP_CACHE_H

#include <stdint.h>

#include "datapath/backend.h"
#include "datapath/pool.h"
#include "datapath/ssd.h"

typedef struct dp_cache_cfg {
    int chunk_tokens;    /* most tokens one chunk holds (LMCache default 256) */
    int64_t pool_chunks; /* pinned pool slots */
    const char *ssd_dir; /* NULL: no SSD tier */
    dp_method method;    /* how chunks move; must be the backend's and host-side */
} dp_cache_cfg;

typedef struct dp_cache_stats {
    int64_t stores, loads, pool_hits, ssd_hits, misses, short_reads, corrupt;
} dp_cache_stats;

typedef struct dp_cache dp_cache;

int dp_cache_new(dp_cache **out, dp_dev *dev, const dp_cache_cfg *cfg, sim_err *err);
void dp_cache_free(dp_cache *c);
int dp_cache_store(dp_cache *c, uint64_t key, const int64_t *slots, int tokens, sim_err *err);
int dp_cache_load(dp_cache *c, uint64_t key, const int64_t *slots, int tokens, sim_err *err);
/* Keep key's pool slot from eviction (DP_MISS if it is not in the pool). */
int dp_cache_pin(dp_cache *c, uint64_t key);
void dp_cache_unpin(dp_cache *c, uint64_t key);

dp_pool *dp_cache_pool(dp_cache *c);
dp_ssd *dp_cache_ssd(dp_cache *c); /* NULL without an SSD tier */
dp_cache_stats dp_cache_get_stats(const dp_cache *c);

#endif
