/* datapath/pool.c — slots, key index, LRU and pins of the pinned chunk pool.
 *
 * The index is an open-addressing table (linear probing, backward-shift
 * deletion, size a power of two at least twice the slot count). The LRU is
 * an intrusive doubly linked list over slot numbers, least recent at the
 * head; eviction walks from the head past pinned slots, as LMCache's
 * get_evict_candidates does. */
#include "datapath/pool.h"

#include <stdlib.h>
#include <string.h>

#define NIL (-1)

struct dp_pool {
    dp_dev *dev;
    char *base;
    size_t slot_bytes;
    int64_t nslots;
    uint64_t *key;     /* per slot */
    int32_t *pins;     /* per slot */
    int64_t *prev, *next, head, tail;  /* LRU list of used slots */
    int64_t *free_slots, nfree;
    uint64_t *tkey;    /* index */
    int64_t *tslot;    /* NIL = empty */
    uint64_t tmask;
    dp_pool_evict_fn evict;
    void *evict_ctx;
    dp_pool_stats stats;
};

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Table position of key, or of the empty cell where it would go. */
static uint64_t index_probe(const dp_pool *p, uint64_t key)
{
    uint64_t i = mix64(key) & p->tmask;
    while (p->tslot[i] != NIL && p->tkey[i] != key) i = (i + 1) & p->tmask;
    return i;
}

static int64_t index_get(const dp_pool *p, uint64_t key) { return p->tslot[index_probe(p, key)]; }

static void index_put(dp_pool *p, uint64_t key, int64_t slot)
{
    uint64_t i = index_probe(p, key);
    p->tkey[i] = key;
    p->tslot[i] = slot;
}

/* Backward-shift deletion: pull later cells of the probe run into the gap
 * unless their home position lies cyclically inside (gap, cell]. */
static void index_del(dp_pool *p, uint64_t key)
{
    uint64_t gap = index_probe(p, key);
    if (p->tslot[gap] == NIL) return;
    for (uint64_t i = (gap + 1) & p->tmask; p->tslot[i] != NIL; i = (i + 1) & p->tmask) {
        uint64_t home = mix64(p->tkey[i]) & p->tmask;
        if (((i - home) & p->tmask) >= ((i - gap) & p->tmask)) {
            p->tkey[gap] = p->tkey[i];
            p->tslot[gap] = p->tslot[i];
            gap = i;
        }
    }
    p->tslot[gap] = NIL;
}

static void lru_unlink(dp_pool *p, int64_t s)
{
    if (p->prev[s] != NIL) p->next[p->prev[s]] = p->next[s];
    else p->head = p->next[s];
    if (p->next[s] != NIL) p->prev[p->next[s]] = p->prev[s];
    else p->tail = p->prev[s];
}

static void lru_push_mru(dp_pool *p, int64_t s)
{
    p->prev[s] = p->tail;
    p->next[s] = NIL;
    if (p->tail != NIL) p->next[p->tail] = s;
    else p->head = s;
    p->tail = s;
}

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
    p->prev = sim_xcalloc((size_t)nslots, sizeof *p->prev);
    p->next = sim_xcalloc((size_t)nslots, sizeof *p->next);
    p->free_slots = sim_xcalloc((size_t)nslots, sizeof *p->free_slots);
    for (int64_t s = 0; s < nslots; s++) p->free_slots[s] = nslots - 1 - s;
    p->nfree = nslots;
    p->head = p->tail = NIL;
    uint64_t cap = 2;
    while (cap < 2 * (uint64_t)nslots) cap *= 2;
    p->tmask = cap - 1;
    p->tkey = sim_xcalloc(cap, sizeof *p->tkey);
    p->tslot = sim_xmalloc(cap * sizeof *p->tslot);
    for (uint64_t i = 0; i < cap; i++) p->tslot[i] = NIL;
    *out = p;
    return DP_OK;
}

void dp_pool_free(dp_pool *p)
{
    if (!p) return;
    dp_dev_host_free(p->dev, p->base);
    free(p->key);
    free(p->pins);
    free(p->prev);
    free(p->next);
    free(p->free_slots);
    free(p->tkey);
    free(p->tslot);
    free(p);
}

void dp_pool_set_evict_cb(dp_pool *p, dp_pool_evict_fn fn, void *ctx)
{
    p->evict = fn;
    p->evict_ctx = ctx;
}

void *dp_pool_find(dp_pool *p, uint64_t key)
{
    int64_t s = index_get(p, key);
    if (s == NIL) {
        p->stats.misses++;
        return NULL;
    }
    p->stats.hits++;
    lru_unlink(p, s);
    lru_push_mru(p, s);
    return slot_ptr(p, s);
}

static void release_slot(dp_pool *p, int64_t s)
{
    index_del(p, p->key[s]);
    lru_unlink(p, s);
    p->pins[s] = 0;
}

/* The least recently used unpinned slot, evicted (callback first), or NIL. */
static int64_t evict_one(dp_pool *p)
{
    int64_t s = p->head;
    while (s != NIL && p->pins[s] > 0) s = p->next[s];
    if (s == NIL) return NIL;
    sim_err ignored;
    if (p->evict && p->evict(p->evict_ctx, p->key[s], slot_ptr(p, s), &ignored)) p->stats.evict_errors++;
    release_slot(p, s);
    p->stats.evictions++;
    return s;
}

int dp_pool_insert(dp_pool *p, uint64_t key, void **slot, sim_err *err)
{
    int64_t s = index_get(p, key);
    if (s != NIL) {
        lru_unlink(p, s);
        lru_push_mru(p, s);
        *slot = slot_ptr(p, s);
        return DP_OK;
    }
    s = p->nfree > 0 ? p->free_slots[--p->nfree] : evict_one(p);
    if (s == NIL) {
        p->stats.full++;
        sim_errf(err, "chunk pool full: all %lld slots are pinned (key %016llx not stored)", (long long)p->nslots,
                 (unsigned long long)key);
        return DP_EFULL;
    }
    p->key[s] = key;
    p->pins[s] = 0;
    index_put(p, key, s);
    lru_push_mru(p, s);
    p->stats.inserts++;
    *slot = slot_ptr(p, s);
    return DP_OK;
}

void dp_pool_remove(dp_pool *p, uint64_t key)
{
    int64_t s = index_get(p, key);
    if (s == NIL) return;
    release_slot(p, s);
    p->free_slots[p->nfree++] = s;
}

int dp_pool_pin(dp_pool *p, uint64_t key)
{
    int64_t s = index_get(p, key);
    if (s == NIL) return DP_MISS;
    p->pins[s]++;
    return DP_OK;
}

void dp_pool_unpin(dp_pool *p, uint64_t key)
{
    int64_t s = index_get(p, key);
    if (s != NIL && p->pins[s] > 0) p->pins[s]--;
}

size_t dp_pool_slot_bytes(const dp_pool *p) { return p->slot_bytes; }
int64_t dp_pool_used(const dp_pool *p) { return p->nslots - p->nfree; }
dp_pool_stats dp_pool_get_stats(const dp_pool *p) { return p->stats; }
