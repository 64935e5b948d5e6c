/* sim/store/cache_prefix.c — the prefix cache model (kvstore.pic = "none"):
 * Mooncake's hash_id blocks. A request's blocks are chained keys (a block's
 * identity includes every block before it), so a block is reusable only
 * when all blocks before it are: the hit is the leading run of the
 * request's keys resident where the scope lets the node read. Every
 * operation is the per-node tiered store's (sim/store/kvstore.h) over the
 * request's keys; this file only adapts it to the cache-model interface. */
#include "sim/store/cache_model.h"

static int create(void **state, const kv_store_cfg *cfg, sim_err *err)
{
    kv_store *s;
    if (kv_store_new(&s, cfg, err)) return -1;
    *state = s;
    return 0;
}

static void destroy(void *state) { kv_store_free(state); }

static const kv_store *view(const void *state) { return state; }

static int32_t lookup(const void *state, int node, const sim_request *req, bool pool)
{
    return pool ? kv_store_prefix_any(state, node, req->keys, req->nblocks)
                : kv_store_prefix_local(state, node, req->keys, req->nblocks);
}

static void plan(const void *state, int node, const sim_request *req, int32_t hit, kv_fetch_plan *out)
{
    kv_store_plan(state, node, req->keys, hit, out);
}

static void pin(void *state, int node, const sim_request *req, int32_t hit)
{
    kv_store_pin(state, node, req->keys, hit);
}

static void unpin(void *state, int node, const sim_request *req, int32_t hit)
{
    kv_store_unpin(state, node, req->keys, hit);
}

static void admit(void *state, int node, const sim_request *req, int32_t blocks, int32_t hit, bool replicate)
{
    kv_store_commit(state, node, req->keys, blocks, hit, replicate, req->cache);
}

static int64_t footprint(const void *state, int node, kv_tier tier) { return kv_store_blocks(state, node, tier); }

static void drop_node(void *state, int node) { kv_store_drop_node(state, node); }

static void foreach_replica(const void *state, void (*fn)(void *ctx, uint64_t key, int replicas), void *ctx)
{
    kv_store_foreach_replica(state, fn, ctx);
}

const kv_cache_model kv_cache_prefix = {
    .name = "none",
    .help = "prefix reuse of hash_id blocks (Mooncake): a block hits only after every block before it",
    .create = create,
    .destroy = destroy,
    .view = view,
    .lookup = lookup,
    .plan = plan,
    .pin = pin,
    .unpin = unpin,
    .admit = admit,
    .footprint = footprint,
    .drop_node = drop_node,
    .foreach_replica = foreach_replica,
};
