/* sim/store/evict/evict_sieve.c — SIEVE (Zhang et al., NSDI'24).
 *
 * One insertion-order queue with a visited bit per slot and a hand. A hit
 * only sets the bit (no list surgery, which is what makes SIEVE cheap). To
 * evict, the hand walks from where it stopped toward newer slots (wrapping
 * from the head back to the tail), clearing visited bits, and stops at the
 * first slot that is unvisited and evictable; after the eviction the hand
 * rests on the next newer slot. Survivors stay in place, so new objects
 * are sifted out quickly while popular ones stay. Pinned slots are passed
 * over like visited ones. O(1) amortized: each step of the hand clears a
 * bit set by an earlier hit, or passes a pinned slot once per lap. */
#include "sim/index/dlist.h"
#include "sim/store/evict/evict.h"

#include <stdlib.h>

typedef struct sieve_state {
    sim_links links;
    sim_list queue; /* newest at head */
    uint8_t *visited;
    int64_t hand; /* next slot to examine; -1 = start at the tail */
} sieve_state;

static int sieve_create(void **state, int64_t capacity, const json_t *params, sim_err *err)
{
    sieve_state *st = sim_xcalloc(1, sizeof *st);
    sim_list_init(&st->queue);
    st->hand = -1;
    *state = st;
    return 0;
}

static void sieve_destroy(void *state)
{
    sieve_state *st = state;
    sim_links_free(&st->links);
    free(st->visited);
    free(st);
}

static void sieve_resize(void *state, int64_t nslots)
{
    sieve_state *st = state;
    sim_links_resize(&st->links, nslots);
    st->visited = sim_xrealloc(st->visited, (size_t)nslots);
}

static void sieve_on_hit(void *state, int64_t slot, const kv_evict_req *req)
{
    sieve_state *st = state;
    st->visited[slot] = 1;
}

static void sieve_on_insert(void *state, int64_t slot, const kv_evict_req *req)
{
    sieve_state *st = state;
    st->visited[slot] = 0;
    sim_list_push_head(&st->queue, &st->links, slot);
}

/* Two laps suffice: the first clears every visited bit, the second finds an
 * evictable slot if there is one. */
static int64_t sieve_victim(void *state, const kv_evict_view *view)
{
    sieve_state *st = state;
    int64_t o = st->hand;
    for (int64_t steps = 2 * st->queue.size + 1; steps > 0 && st->queue.size > 0; steps--) {
        if (o < 0) o = st->queue.tail;
        if (st->visited[o]) {
            st->visited[o] = 0;
        } else if (kv_evictable(view, o)) {
            st->hand = o;
            return o;
        }
        o = st->links.at[o].prev;
    }
    st->hand = o;
    return KV_NO_VICTIM;
}

static void sieve_on_remove(void *state, int64_t slot)
{
    sieve_state *st = state;
    if (st->hand == slot) st->hand = st->links.at[slot].prev;
    sim_list_unlink(&st->queue, &st->links, slot);
}

const kv_evict_ops kv_evict_sieve_ops = {
    .create = sieve_create,
    .destroy = sieve_destroy,
    .resize = sieve_resize,
    .on_hit = sieve_on_hit,
    .on_insert = sieve_on_insert,
    .admit = NULL,
    .victim = sieve_victim,
    .on_remove = sieve_on_remove,
};
