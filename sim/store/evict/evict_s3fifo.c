/* sim/store/evict/evict_s3fifo.c — S3-FIFO (Yang et al., SOSP'23), as in libCacheSim.
 *
 * Three FIFO queues: a small one S (s3fifo_small_ratio of the capacity), a
 * main one M, and a ghost G remembering the keys recently evicted from S
 * (s3fifo_ghost_ratio of the capacity, keys only). A 2-bit counter per slot
 * counts hits (saturating at 3). New keys enter S, or M directly when G
 * remembers them. To evict: when M is over its share (or S is empty), M's
 * tail is reinserted at M's head with its counter decremented while it is
 * non-zero (CLOCK), else evicted; otherwise S's tail moves to M when it was
 * hit at least s3fifo_move_threshold times, else it is evicted into G. Most
 * one-hit wonders thus leave after a short stay in S.
 *
 * Pinned slots are reinserted at their queue's head and passed over. Every
 * hook is O(1) amortized: each reinsertion spends a counter unit bought by
 * an earlier hit, or passes a pinned slot once per lap. */
#include "sim/index/dlist.h"
#include "sim/store/evict/evict.h"
#include "sim/config/param.h"
#include "sim/index/keymap.h"

#include <stdlib.h>

enum { IN_SMALL = 0, IN_MAIN = 1, MAX_FREQ = 3 };

/* The ghost FIFO: a ring of keys plus an index key → sequence number. A key
 * revived from the ghost is only dropped from the index; its ring entry
 * expires in place. */
typedef struct ghost {
    uint64_t *ring;
    int64_t cap, start, end; /* live sequence numbers are [start, end) */
    sim_keymap index;
} ghost;

typedef struct s3_state {
    sim_links links;
    sim_list small, main;
    uint8_t *freq, *queue;
    uint64_t *keys;
    int64_t main_target;
    int move_threshold;
    ghost g;
} s3_state;

static void ghost_add(ghost *g, uint64_t key)
{
    if (g->cap == 0) return;
    if (!g->ring) g->ring = sim_xmalloc((size_t)g->cap * sizeof *g->ring);
    if (g->end - g->start == g->cap) {
        uint64_t old = g->ring[g->start % g->cap];
        if (sim_keymap_get(&g->index, old) == g->start) sim_keymap_del(&g->index, old);
        g->start++;
    }
    g->ring[g->end % g->cap] = key;
    sim_keymap_put(&g->index, key, g->end++);
}

/* True (and forgets the key) when the ghost remembers key. */
static bool ghost_take(ghost *g, uint64_t key) { return sim_keymap_del(&g->index, key); }

static int s3_create(void **state, int64_t capacity, const json_t *params, sim_err *err)
{
    double small_ratio, ghost_ratio, threshold;
    if (sim_param_number(params, "s3fifo_small_ratio", 0.1, 0.0, 1.0, &small_ratio, err) ||
        sim_param_number(params, "s3fifo_ghost_ratio", 0.9, 0.0, 10.0, &ghost_ratio, err) ||
        sim_param_number(params, "s3fifo_move_threshold", 2, 1, MAX_FREQ, &threshold, err))
        return -1;
    s3_state *st = sim_xcalloc(1, sizeof *st);
    sim_list_init(&st->small);
    sim_list_init(&st->main);
    double cap = (double)capacity;
    st->main_target = capacity - (int64_t)(small_ratio * cap);
    st->move_threshold = (int)threshold;
    st->g.cap = sim_count_in(ghost_ratio * cap, 1); /* an unbounded tier's ghost too (ratio up to 10) */
    sim_keymap_init(&st->g.index, 16);
    *state = st;
    return 0;
}

static void s3_destroy(void *state)
{
    s3_state *st = state;
    sim_links_free(&st->links);
    free(st->freq);
    free(st->queue);
    free(st->keys);
    free(st->g.ring);
    sim_keymap_free(&st->g.index);
    free(st);
}

static void s3_resize(void *state, int64_t nslots)
{
    s3_state *st = state;
    sim_links_resize(&st->links, nslots);
    st->freq = sim_xrealloc(st->freq, (size_t)nslots);
    st->queue = sim_xrealloc(st->queue, (size_t)nslots);
    st->keys = sim_xrealloc(st->keys, (size_t)nslots * sizeof *st->keys);
}

static sim_list *queue_of(s3_state *st, int64_t slot) { return st->queue[slot] == IN_MAIN ? &st->main : &st->small; }

static void s3_on_hit(void *state, int64_t slot, const kv_evict_req *req)
{
    s3_state *st = state;
    if (st->freq[slot] < MAX_FREQ) st->freq[slot]++;
}

static void s3_on_insert(void *state, int64_t slot, const kv_evict_req *req)
{
    s3_state *st = state;
    st->freq[slot] = 0;
    st->keys[slot] = req->key;
    st->queue[slot] = ghost_take(&st->g, req->key) ? IN_MAIN : IN_SMALL;
    sim_list_push_head(queue_of(st, slot), &st->links, slot);
}

/* M's tail: reinserted while its counter lasts (CLOCK), else the victim. */
static int64_t evict_main(s3_state *st, const kv_evict_view *view)
{
    for (int64_t steps = (MAX_FREQ + 1) * st->main.size + 1; steps > 0 && st->main.size > 0; steps--) {
        int64_t t = st->main.tail;
        if (st->freq[t] == 0 && kv_evictable(view, t)) return t;
        if (st->freq[t] > 0) st->freq[t]--;
        sim_list_move_head(&st->main, &st->links, t);
    }
    return KV_NO_VICTIM;
}

/* S's tail: promoted to M when hit often enough, else the victim (its key
 * goes to the ghost). */
static int64_t evict_small(s3_state *st, const kv_evict_view *view)
{
    for (int64_t steps = st->small.size; steps > 0; steps--) {
        int64_t t = st->small.tail;
        if (st->freq[t] >= st->move_threshold) {
            sim_list_unlink(&st->small, &st->links, t);
            st->freq[t] = 0;
            st->queue[t] = IN_MAIN;
            sim_list_push_head(&st->main, &st->links, t);
        } else if (kv_evictable(view, t)) {
            ghost_add(&st->g, st->keys[t]);
            return t;
        } else {
            sim_list_move_head(&st->small, &st->links, t);
        }
    }
    return KV_NO_VICTIM;
}

static int64_t s3_victim(void *state, const kv_evict_view *view)
{
    s3_state *st = state;
    int64_t v = KV_NO_VICTIM;
    if (st->main.size <= st->main_target && st->small.size > 0) v = evict_small(st, view);
    return v != KV_NO_VICTIM ? v : evict_main(st, view);
}

static void s3_on_remove(void *state, int64_t slot)
{
    s3_state *st = state;
    sim_list_unlink(queue_of(st, slot), &st->links, slot);
}

const kv_evict_ops kv_evict_s3fifo_ops = {
    .create = s3_create,
    .destroy = s3_destroy,
    .resize = s3_resize,
    .on_hit = s3_on_hit,
    .on_insert = s3_on_insert,
    .admit = NULL,
    .victim = s3_victim,
    .on_remove = s3_on_remove,
};
