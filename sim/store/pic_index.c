/* sim/store/pic_index.c — growth, insertion and removal of the PIC
 * store's grouped index (sim/store/pic_index.h; lookups are inline). */
#include "sim/store/pic_index.h"

#include <stdlib.h>
#include <string.h>

#include "sim/util.h"

/* All bits set makes every slot −1: one memset empties the table. */
static void alloc_buckets(kv_pic_index *x, int log2n)
{
    size_t n = (size_t)1 << log2n;
    x->e = sim_xmalloc(n * sizeof *x->e);
    memset(x->e, 0xff, n * sizeof *x->e);
    x->mask = n - 1;
    x->log2n = log2n;
    x->count = 0;
}

/* The index is at most half full. */
static int log2_buckets(int64_t expected)
{
    int log2n = 6;
    while (((int64_t)1 << log2n) < 2 * expected) log2n++;
    return log2n;
}

void kv_pic_index_init(kv_pic_index *x, int64_t expected)
{
    *x = (kv_pic_index){0};
    alloc_buckets(x, log2_buckets(expected));
}

void kv_pic_index_free(kv_pic_index *x)
{
    free(x->e);
    free(x->slot);
    *x = (kv_pic_index){0};
}

void kv_pic_index_slots(kv_pic_index *x, int64_t nslots)
{
    x->slot = sim_xrealloc(x->slot, (size_t)nslots * sizeof *x->slot);
}

static uint64_t dist(const kv_pic_index *x, uint64_t b) { return (b - kv_pic_home(x, x->e[b].tag)) & x->mask; }

/* Robin Hood insertion: walk from the home bucket; an entry nearer its
 * own home than the walker is to the new one's gives up its bucket and
 * walks on in its place, so every probe run stays sorted by home bucket.
 * With `key` (not growing), a present name met before the first swap gets
 * the new slot. */
static void insert(kv_pic_index *x, kv_pic_entry e, const uint64_t *key)
{
    uint64_t b = kv_pic_home(x, e.tag), d = 0;
    for (;; b = (b + 1) & x->mask, d++) {
        kv_pic_entry *at = &x->e[b];
        if (at->slot < 0) {
            x->count++;
            *at = e;
            return;
        }
        if (key && at->tag == e.tag && x->slot[at->slot].key == *key) {
            at->slot = e.slot;
            return;
        }
        uint64_t db = dist(x, b);
        if (db < d) {
            kv_pic_entry out = *at;
            *at = e;
            e = out;
            d = db;
            key = NULL;
        }
    }
}

/* Twice the buckets, every entry inserted again. */
static void grow(kv_pic_index *x)
{
    kv_pic_entry *old = x->e;
    uint64_t n = x->mask + 1;
    alloc_buckets(x, x->log2n + 1);
    for (uint64_t b = 0; b < n; b++)
        if (old[b].slot >= 0) insert(x, old[b], NULL);
    free(old);
}

void kv_pic_index_put(kv_pic_index *x, uint64_t key, uint32_t tag, int32_t slot)
{
    if (2 * (x->count + 1) > (int64_t)(x->mask + 1)) grow(x);
    x->slot[slot].key = key;
    x->slot[slot].tag = tag;
    insert(x, (kv_pic_entry){.slot = slot, .tag = tag}, &key);
}

/* Find slot's bucket from its tag's home, then shift back each following
 * entry of the probe run by one bucket, up to the first that sits at its
 * home (the run is sorted by home bucket, so nothing after it may move). */
void kv_pic_index_remove(kv_pic_index *x, int32_t slot)
{
    uint32_t tag = x->slot[slot].tag;
    uint64_t hole = kv_pic_home(x, tag), d = 0;
    for (;; hole = (hole + 1) & x->mask, d++) {
        if (x->e[hole].slot < 0 || dist(x, hole) < d) return;
        if (x->e[hole].slot == slot) break;
    }
    for (uint64_t j = (hole + 1) & x->mask; x->e[j].slot >= 0 && dist(x, j) > 0; j = (j + 1) & x->mask) {
        x->e[hole] = x->e[j];
        hole = j;
    }
    x->e[hole].slot = -1;
    x->count--;
}
