/* sim/store/evict/evict_lfu.c — least frequently used, with aging.
 *
 * O(1) LFU (Shah, Mitra & Matani 2010): one list per access count 1..max
 * sharing the link arrays; a hit moves the slot one bucket up (counts
 * saturate at lfu_max_freq), the victim is the least recent evictable slot
 * of the lowest non-empty bucket, so ties go to LRU.
 *
 * Aging keeps old popularity from pinning the cache forever: every
 * lfu_age_period accesses (default: 10 × resident blocks, as in TinyLFU's
 * reset), every count is halved (at least 1). A second, global recency list
 * lets the halving rebuild each bucket in exact recency order with one walk
 * from oldest to newest, so aging costs O(resident) once per period:
 * O(1) amortized per access. */
#include "sim/index/dlist.h"
#include "sim/store/evict/evict.h"
#include "sim/config/param.h"

#include <stdlib.h>

typedef struct lfu_state {
    sim_links bucket_links; /* position inside the count bucket */
    sim_links age_links;    /* position in the global recency list */
    sim_list recency;       /* every resident slot, most recent at head */
    sim_list *buckets;      /* [1 .. max_freq] */
    int32_t *freq;
    int max_freq;
    int64_t age_period; /* 0 = 10 × resident blocks */
    int64_t since_age;
} lfu_state;

static int lfu_create(void **state, int64_t capacity, const json_t *params, sim_err *err)
{
    double max_freq, period;
    if (sim_param_number(params, "lfu_max_freq", 15, 1, 1 << 20, &max_freq, err) ||
        sim_param_number(params, "lfu_age_period", 0, 0, 1e18, &period, err))
        return -1;
    lfu_state *st = sim_xcalloc(1, sizeof *st);
    st->max_freq = (int)max_freq;
    st->age_period = (int64_t)period;
    st->buckets = sim_xcalloc((size_t)st->max_freq + 1, sizeof *st->buckets);
    for (int f = 0; f <= st->max_freq; f++) sim_list_init(&st->buckets[f]);
    sim_list_init(&st->recency);
    *state = st;
    return 0;
}

static void lfu_destroy(void *state)
{
    lfu_state *st = state;
    sim_links_free(&st->bucket_links);
    sim_links_free(&st->age_links);
    free(st->buckets);
    free(st->freq);
    free(st);
}

static void lfu_resize(void *state, int64_t nslots)
{
    lfu_state *st = state;
    sim_links_resize(&st->bucket_links, nslots);
    sim_links_resize(&st->age_links, nslots);
    st->freq = sim_xrealloc(st->freq, (size_t)nslots * sizeof *st->freq);
}

/* Halve every count; rebuild buckets walking from the oldest slot to the
 * newest, pushing each at its new bucket's head (newest ends up first). */
static void lfu_age(lfu_state *st)
{
    for (int f = 1; f <= st->max_freq; f++) sim_list_init(&st->buckets[f]);
    for (int64_t s = st->recency.tail; s >= 0; s = st->age_links.at[s].prev) {
        st->freq[s] = st->freq[s] / 2 > 1 ? st->freq[s] / 2 : 1;
        sim_list_push_head(&st->buckets[st->freq[s]], &st->bucket_links, s);
    }
    st->since_age = 0;
}

static void lfu_tick(lfu_state *st)
{
    int64_t period = st->age_period ? st->age_period : 10 * st->recency.size;
    if (++st->since_age >= period) lfu_age(st);
}

static void lfu_on_hit(void *state, int64_t slot, const kv_evict_req *req)
{
    lfu_state *st = state;
    int32_t f = st->freq[slot];
    if (f < st->max_freq) {
        sim_list_unlink(&st->buckets[f], &st->bucket_links, slot);
        st->freq[slot] = f + 1;
        sim_list_push_head(&st->buckets[f + 1], &st->bucket_links, slot);
    } else {
        sim_list_move_head(&st->buckets[f], &st->bucket_links, slot);
    }
    sim_list_move_head(&st->recency, &st->age_links, slot);
    lfu_tick(st);
}

static void lfu_on_insert(void *state, int64_t slot, const kv_evict_req *req)
{
    lfu_state *st = state;
    st->freq[slot] = 1;
    sim_list_push_head(&st->buckets[1], &st->bucket_links, slot);
    sim_list_push_head(&st->recency, &st->age_links, slot);
    lfu_tick(st);
}

static int64_t lfu_victim(void *state, const kv_evict_view *view)
{
    lfu_state *st = state;
    for (int f = 1; f <= st->max_freq; f++) {
        int64_t v = kv_list_victim_rotate(&st->buckets[f], &st->bucket_links, view);
        if (v != KV_NO_VICTIM) return v;
    }
    return KV_NO_VICTIM;
}

static void lfu_on_remove(void *state, int64_t slot)
{
    lfu_state *st = state;
    sim_list_unlink(&st->buckets[st->freq[slot]], &st->bucket_links, slot);
    sim_list_unlink(&st->recency, &st->age_links, slot);
}

const kv_evict_ops kv_evict_lfu_ops = {
    .create = lfu_create,
    .destroy = lfu_destroy,
    .resize = lfu_resize,
    .on_hit = lfu_on_hit,
    .on_insert = lfu_on_insert,
    .admit = NULL,
    .victim = lfu_victim,
    .on_remove = lfu_on_remove,
};
