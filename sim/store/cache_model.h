/* sim/store/cache_model.h — the cache-model interface: what a serving model
 * asks of the KV cache for one request — how much of it can be reused on a
 * node (lookup), where those blocks lie (plan, for load costs), keeping them
 * while in use (pin/unpin), storing what the request computed (admit),
 * eviction (inside admit, per the tier's policy), and how much is resident
 * (footprint).
 *
 * A cache model is a struct of function pointers chosen by kvstore.pic (one
 * line in sim/store/cache_model.c). Implementations:
 *   none  sim/store/cache_prefix.c: Mooncake hash_id prefix blocks over the
 *         per-node HBM/DRAM/SSD tiers of sim/store/kvstore.h (a block hits
 *         only when every block before it hit: no position-independent
 *         reuse).
 * The conductor's policies (sched/) read the model's shadow store (view) as
 * their belief of cache contents; they never change it. */
#ifndef KV_CACHE_MODEL_H
#define KV_CACHE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/store/kvstore.h"
#include "sim/trace/trace.h"
#include "sim/util.h"

typedef struct kv_cache_model {
    const char *name; /* the kvstore.pic value */
    const char *help; /* one line, for kvsim policies */
    int (*create)(void **state, const kv_store_cfg *cfg, sim_err *err);
    void (*destroy)(void *state);
    /* The store the conductor's policies read as their shadow view. */
    const kv_store *(*view)(const void *state);
    /* Reusable leading blocks of req for node, no state change: from node's
     * own tiers (pool = false) or from wherever the scope lets node read
     * (pool = true: any node's tiers in global scope). */
    int32_t (*lookup)(const void *state, int node, const sim_request *req, bool pool);
    /* Where req's first hit blocks would come from when served to node:
     * blocks per tier of node, and per holder node and tier otherwise. */
    void (*plan)(const void *state, int node, const sim_request *req, int32_t hit, kv_fetch_plan *plan);
    /* req's first hit blocks on node are in use: never evicted until unpin. */
    void (*pin)(void *state, int node, const sim_request *req, int32_t hit);
    void (*unpin)(void *state, int node, const sim_request *req, int32_t hit);
    /* After compute: req's first `blocks` blocks are stored on node (the
     * first hit were reused and are refreshed; copied into node when
     * replicate), evicting per the tiers' policies. */
    void (*admit)(void *state, int node, const sim_request *req, int32_t blocks, int32_t hit, bool replicate);
    /* Blocks resident in one tier of node. */
    int64_t (*footprint)(const void *state, int node, kv_tier tier);
    /* Node failure: everything node held is gone. */
    void (*drop_node)(void *state, int node);
    /* Each stored block with its replica count (Mooncake Fig. 18 samples). */
    void (*foreach_replica)(const void *state, void (*fn)(void *ctx, uint64_t key, int replicas), void *ctx);
} kv_cache_model;

size_t kv_cache_model_count(void);
const kv_cache_model *kv_cache_model_at(size_t i); /* NULL past the end */
const kv_cache_model *kv_cache_model_lookup(const char *name);

#endif
