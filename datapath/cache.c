/* datapath/cache.c — store/load of chunks through the pinned pool and the
 * SSD tier, with checksums checked on every load. */
#include "datapath/cache.h"

#include <stdlib.h>
#include <string.h>

#include "datapath/chunk.h"

struct dp_cache {
    dp_dev *dev;
    int chunk_tokens;
    dp_method method;
    dp_pool *pool;
    dp_ssd *ssd;
    dp_cache_stats stats;
};

/* Pool eviction → SSD demotion of the victim's image. */
static int demote_to_ssd(void *ctx, uint64_t key, void *slot, sim_err *err)
{
    dp_cache *c = ctx;
    dp_chunk_hdr h;
    memcpy(&h, slot, sizeof h);
    if (h.magic != DP_CHUNK_MAGIC || h.tokens <= 0 || h.tokens > c->chunk_tokens)
        return sim_errf(err, "chunk %016llx: pool slot holds no sealed chunk; not demoted", (unsigned long long)key);
    return dp_ssd_put(c->ssd, key, slot, (size_t)dp_chunk_image_bytes(&c->dev->shape, h.tokens), err);
}

int dp_cache_new(dp_cache **out, dp_dev *dev, const dp_cache_cfg *cfg, sim_err *err)
{
    if (cfg->chunk_tokens <= 0) {
        sim_errf(err, "chunk cache: chunk_tokens must be positive (got %d)", cfg->chunk_tokens);
        return DP_EINVAL;
    }
    if (!dp_dev_has_method(dev, cfg->method) || cfg->method == DP_METHOD_KERNEL_D2D) {
        sim_errf(err, "chunk cache: method '%s' cannot move chunks to host memory on backend '%s'",
                 dp_method_name(cfg->method), dev->ops->name);
        return DP_EINVAL;
    }
    dp_cache *c = sim_xcalloc(1, sizeof *c);
    c->dev = dev;
    c->chunk_tokens = cfg->chunk_tokens;
    c->method = cfg->method;
    size_t slot = (size_t)dp_chunk_image_bytes(&dev->shape, cfg->chunk_tokens);
    int rc = dp_pool_new(&c->pool, dev, slot, cfg->pool_chunks, err);
    if (!rc && cfg->ssd_dir) rc = dp_ssd_open(&c->ssd, cfg->ssd_dir, &dev->shape, err);
    if (rc) {
        dp_cache_free(c);
        return rc;
    }
    if (c->ssd) dp_pool_set_evict_cb(c->pool, demote_to_ssd, c);
    *out = c;
    return DP_OK;
}

void dp_cache_free(dp_cache *c)
{
    if (!c) return;
    dp_pool_free(c->pool);
    dp_ssd_close(c->ssd);
    free(c);
}

static int check_tokens(const dp_cache *c, const int64_t *slots, int tokens, sim_err *err)
{
    if (tokens > c->chunk_tokens) {
        sim_errf(err, "chunk cache: %d tokens exceed the %d-token chunk", tokens, c->chunk_tokens);
        return DP_ERANGE;
    }
    return dp_slots_check(&c->dev->shape, slots, tokens, err);
}

static int move_chunk(dp_cache *c, dp_dir dir, void *image, const int64_t *slots, int tokens, sim_err *err)
{
    dp_xfer x = {.dir = dir, .method = c->method, .slots = slots, .tokens = tokens, .chunk = dp_chunk_payload(image)};
    return dp_transfer(c->dev, &x, err);
}

int dp_cache_store(dp_cache *c, uint64_t key, const int64_t *slots, int tokens, sim_err *err)
{
    void *image;
    int rc = check_tokens(c, slots, tokens, err);
    if (!rc) rc = dp_pool_insert(c->pool, key, &image, err);
    if (rc) return rc;
    dp_pool_pin(c->pool, key);
    rc = move_chunk(c, DP_STORE, image, slots, tokens, err);
    dp_pool_unpin(c->pool, key);
    if (rc) {
        dp_pool_remove(c->pool, key);
        return rc;
    }
    dp_chunk_seal(image, &c->dev->shape, key, tokens);
    c->stats.stores++;
    return DP_OK;
}

/* Make key's verified image resident and pinned in the pool: a pool hit, or
 * a promotion from SSD. Any failure leaves the key out of the pool. */
static int fetch_pinned(dp_cache *c, uint64_t key, void **image, int *stored_tokens, sim_err *err)
{
    size_t cap = dp_pool_slot_bytes(c->pool);
    int rc;
    if ((*image = dp_pool_find(c->pool, key))) {
        dp_pool_pin(c->pool, key);
        rc = dp_chunk_check(*image, cap, &c->dev->shape, key, stored_tokens, err);
        c->stats.pool_hits += rc == DP_OK;
    } else if (!c->ssd) {
        sim_errf(err, "chunk %016llx: not in the pool (no SSD tier)", (unsigned long long)key);
        return DP_MISS;
    } else {
        if ((rc = dp_pool_insert(c->pool, key, image, err))) return rc;
        dp_pool_pin(c->pool, key);
        rc = dp_ssd_get(c->ssd, key, *image, cap, stored_tokens, err);
        c->stats.ssd_hits += rc == DP_OK;
    }
    if (rc) {
        dp_pool_remove(c->pool, key);
        c->stats.misses += rc == DP_MISS;
        c->stats.short_reads += rc == DP_SHORT;
        c->stats.corrupt += rc == DP_CORRUPT;
    }
    return rc;
}

int dp_cache_load(dp_cache *c, uint64_t key, const int64_t *slots, int tokens, sim_err *err)
{
    void *image;
    int stored_tokens;
    int rc = check_tokens(c, slots, tokens, err);
    if (!rc) rc = fetch_pinned(c, key, &image, &stored_tokens, err);
    if (rc) return rc;
    if (stored_tokens != tokens) {
        sim_errf(err, "chunk %016llx holds %d tokens; the slot mapping has %d", (unsigned long long)key, stored_tokens,
                 tokens);
        rc = DP_EINVAL;
    } else {
        rc = move_chunk(c, DP_LOAD, image, slots, tokens, err);
    }
    dp_pool_unpin(c->pool, key);
    c->stats.loads += rc == DP_OK;
    return rc;
}

int dp_cache_pin(dp_cache *c, uint64_t key) { return dp_pool_pin(c->pool, key); }
void dp_cache_unpin(dp_cache *c, uint64_t key) { dp_pool_unpin(c->pool, key); }
dp_pool *dp_cache_pool(dp_cache *c) { return c->pool; }
dp_ssd *dp_cache_ssd(dp_cache *c) { return c->ssd; }
dp_cache_stats dp_cache_get_stats(const dp_cache *c) { return c->stats; }
