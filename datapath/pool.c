/* datapath/pool.c — slots, key index, LRU and pins of the pinned chunk pool.
 *
 * The index is the simulator's own key → slot map (sim/index/keymap.h) and the
 * LRU its intrusive list over slot numbers (sim/index/dlist.h), most recent at
 * the head. Eviction walks from the tail (least recent) past pinned slots,
 * as LMCache's get_evict_candidates does; unlike the simulated tiers'
 * policies it does not rotate them (a pool is small and pins are short). */
#include "datapath/pool.h"

#include <stdlib.h>
#include <string.h>

#include "sim/index/dlist.h"
#include "sim/index/keymap.h"

struct dp_pool {
    dp_dev *dev;
    char *base;
    size_t slot_bytes;
    int64_t nslots;
    uint64_t *key;   /* per slot */
    int32_t *pins;   /* per slot */
    sim_links links; /* per slot */
    sim_list lru;    /* used slots, most recent at the head */
    int64_t *free_slots, nfree;
    sim_keymap index; /* key → slot */
    dp_pool_evict_fn evict;
    void *evict_ctx;
    dp_pool_stats stats;
};

static void *slot_ptr(const dp_pool *p, int64_t s) { return p->base + (size_t)s * p->slot_bytes; }

int dp_pool_new(dp_pool **out, dp_dev *dev, size_t slot_bytes, int64_t nslots, sim_err *err)
{
    if (nslots <= 0 || slot_bytes == 0) {
        sim_errf(err, "chunk pool: need at least one slot of nonzero size (got %lld × %zu bytes)", (long long)nslots,
                 slot_bytes);
        return DP_EINVAL;
    }
    dp_pool *p = sim_xcalloc(1, sizeof *p);
    p->dev = dev;
    p->slot_bytes = (size_t)dp_align_up((int64_t)slot_bytes);
    p->nslots = nslots;
    if (dp_dev_host_alloc(dev, p->slot_bytes * (size_t)nslots, (void **)&p->base, err)) {
        free(p);
        return DP_EIO;
    }
    p->key = sim_xcalloc((size_t)nslots, sizeof *p->key);
    p->pins = sim_xcalloc((size_t)nslots, sizeof *p->pins);
    sim_links_resize(&p->links, nslots);
    sim_list_init(&p->lru);
    p->free_slots = sim_xcalloc((size_t)nslots, sizeof *p->free_slots);
    for (int64_t s = 0; s < nslots; s++) p->free_slots[s] = nslots - 1 - s;
    p->nfree = nslots;
    sim_keymap_init(&p->index, nslots);
    *out = p;
    return DP_OK;
}

void dp_pool_free(dp_pool *p)
{
    if (!p) return;
    dp_dev_host_free(p->dev, p->base);
    free(p->key);
    free(p->pins);
    sim_links_free(&p->links);
    free(p->free_slots);
    sim_keymap_free(&p->index);
    free(p);
}

void dp_pool_set_evict_cb(dp_pool *p, dp_pool_evict_fn fn, void *ctx)
{
    p->evict = fn;
    p->evict_ctx = ctx;
}

void *dp_pool_find(dp_pool *p, uint64_t key)
{
    int64_t s = sim_keymap_get(&p->index, key);
    if (s < 0) {
        p->stats.misses++;
        return NULL;
    }
    p->stats.hits++;
    sim_list_move_head(&p->lru, &p->links, s);
    return slot_ptr(p, s);
}

static void release_slot(dp_pool *p, int64_t s)
{
    sim_keymap_del(&p->index, p->key[s]);
    sim_list_unlink(&p->lru, &p->links, s);
    p->pins[s] = 0;
}

/* The least recently used unpinned slot, evicted (callback first), or -1. */
static int64_t evict_one(dp_pool *p)
{
    int64_t s = p->lru.tail;
    while (s >= 0 && p->pins[s] > 0) s = p->links.at[s].prev;
    if (s < 0) return -1;
    sim_err ignored;
    if (p->evict && p->evict(p->evict_ctx, p->key[s], slot_ptr(p, s), &ignored)) p->stats.evict_errors++;
    release_slot(p, s);
    p->stats.evictions++;
    return s;
}

int dp_pool_insert(dp_pool *p, uint64_t key, void **slot, sim_err *err)
{
    int64_t s = sim_keymap_get(&p->index, key);
    if (s >= 0) {
        sim_list_move_head(&p->lru, &p->links, s);
        *slot = slot_ptr(p, s);
        return DP_OK;
    }
    s = p->nfree > 0 ? p->free_slots[--p->nfree] : evict_one(p);
    if (s < 0) {
        p->stats.full++;
        sim_errf(err, "chunk pool full: all %lld slots are pinned (key %016llx not stored)", (long long)p->nslots,
                 (unsigned long long)key);
        return DP_EFULL;
    }
    p->key[s] = key;
    p->pins[s] = 0;
    sim_keymap_put(&p->index, key, s);
    sim_list_push_head(&p->lru, &p->links, s);
    p->stats.inserts++;
    *slot = slot_ptr(p, s);
    return DP_OK;
}

void dp_pool_remove(dp_pool *p, uint64_t key)
{
    int64_t s = sim_keymap_get(&p->index, key);
    if (s < 0) return;
    release_slot(p, s);
    p->free_slots[p->nfree++] = s;
}

int dp_pool_pin(dp_pool *p, uint64_t key)
{
    int64_t s = sim_keymap_get(&p->index, key);
    if (s < 0) return DP_MISS;
    p->pins[s]++;
    return DP_OK;
}

void dp_pool_unpin(dp_pool *p, uint64_t key)
{
    int64_t s = sim_keymap_get(&p->index, key);
    if (s >= 0 && p->pins[s] > 0) p->pins[s]--;
}

size_t dp_pool_slot_bytes(const dp_pool *p) { return p->slot_bytes; }
int64_t dp_pool_used(const dp_pool *p) { return p->nslots - p->nfree; }
dp_pool_stats dp_pool_get_stats(const dp_pool *p) { return p->stats; }
