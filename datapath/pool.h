/* datapath/pool.h — the pinned host chunk pool (LMCache's LocalCPUBackend):
 * one host allocation from the backend (cudaHostAlloc'd and mapped for
 * cuda, page-aligned for cpu) sliced into equal chunk slots, an index from
 * chunk key to slot, an LRU over the slots, and pins.
 *
 * A pin is not a lock: it only keeps a slot from being chosen as an
 * eviction victim (LMCache's can_evict = not pinned). When every slot is
 * pinned an insert fails with DP_EFULL, an error the caller acts on
 * (unpin, or skip storing), never a silent drop of a pinned chunk.
 *
 * Before a slot is reused its evict callback runs (datapath/cache.c demotes
 * the victim to the SSD tier there). */
#ifndef DP_POOL_H
#define DP_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "datapath/backend.h"
#include "sim/util.h"

typedef struct dp_pool dp_pool;

/* Called with a victim's key and slot before the slot is reused. A nonzero
 * return is counted in evict_errors; the slot is reused anyway. */
typedef int (*dp_pool_evict_fn)(void *ctx, uint64_t key, void *slot, sim_err *err);

typedef struct dp_pool_stats {
    int64_t hits, misses, inserts, evictions, full, evict_errors;
} dp_pool_stats;

/* nslots slots of slot_bytes (rounded up to DP_ALIGN) from dev's host memory. */
int dp_pool_new(dp_pool **out, dp_dev *dev, size_t slot_bytes, int64_t nslots, sim_err *err);
void dp_pool_free(dp_pool *p);
void dp_pool_set_evict_cb(dp_pool *p, dp_pool_evict_fn fn, void *ctx);

/* The slot holding key (now most recently used), or NULL. */
void *dp_pool_find(dp_pool *p, uint64_t key);
/* A slot for key: its current one, a free one, or the least recently used
 * unpinned one (evicted). DP_OK, or DP_EFULL when every slot is pinned. */
int dp_pool_insert(dp_pool *p, uint64_t key, void **slot, sim_err *err);
/* Forget key (its slot becomes free). No-op when absent. */
void dp_pool_remove(dp_pool *p, uint64_t key);
/* Pins nest. DP_OK, or DP_MISS when key is absent. */
int dp_pool_pin(dp_pool *p, uint64_t key);
void dp_pool_unpin(dp_pool *p, uint64_t key);

size_t dp_pool_slot_bytes(const dp_pool *p);
int64_t dp_pool_used(const dp_pool *p);
dp_pool_stats dp_pool_get_stats(const dp_pool *p);

#endif
