/* sim/store/evict/evict_belady.c — Belady's MIN, the offline optimum, as a reference
 * for `kvsim hitrate --policy belady`.
 *
 * Needs the future: every access carries the position of the key's next
 * access in the replayed block stream (kv_evict_req.next_use, filled by
 * the offline replay; unknown counts as never). A max-heap on next use
 * gives the victim — the block needed furthest in the future — in
 * O(log n) per access (an offline reference, not held to the O(1) budget).
 *
 * With admission (bypass): a missed block is only inserted when it will be
 * needed sooner than the furthest resident one. For the chained-prefix
 * block stream this makes the result an upper bound on prefix hits too:
 * a block's parent is always accessed just before it, so the parent's next
 * use is strictly sooner, the cache never holds a block without its prefix,
 * and every block hit is a prefix hit. */
#include "sim/store/evict/evict.h"

#include <stdlib.h>

typedef struct belady_state {
    int64_t *heap; /* slots, max-heap on next use */
    int64_t n;
    int64_t *pos;  /* slot → heap index */
    int64_t *next; /* slot → next use */
    int64_t *held; /* scratch for pinned slots passed over */
} belady_state;

static int64_t next_use_of(const kv_evict_req *req)
{
    return req->next_use == KV_NEXT_USE_UNKNOWN ? INT64_MAX : req->next_use;
}

static void heap_set(belady_state *st, int64_t i, int64_t slot)
{
    st->heap[i] = slot;
    st->pos[slot] = i;
}

static void sift_up(belady_state *st, int64_t i)
{
    int64_t slot = st->heap[i];
    while (i > 0 && st->next[st->heap[(i - 1) / 2]] < st->next[slot]) {
        heap_set(st, i, st->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(st, i, slot);
}

static void sift_down(belady_state *st, int64_t i)
{
    int64_t slot = st->heap[i];
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= st->n) break;
        if (c + 1 < st->n && st->next[st->heap[c + 1]] > st->next[st->heap[c]]) c++;
        if (st->next[st->heap[c]] <= st->next[slot]) break;
        heap_set(st, i, st->heap[c]);
        i = c;
    }
    heap_set(st, i, slot);
}

static void heap_push(belady_state *st, int64_t slot)
{
    heap_set(st, st->n++, slot);
    sift_up(st, st->n - 1);
}

static void heap_remove(belady_state *st, int64_t slot)
{
    int64_t i = st->pos[slot], last = st->heap[--st->n];
    if (i == st->n) return;
    heap_set(st, i, last);
    sift_up(st, i);
    sift_down(st, st->pos[last]);
}

static int belady_create(void **state, int64_t capacity, const json_t *params, sim_err *err)
{
    *state = sim_xcalloc(1, sizeof(belady_state));
    return 0;
}

static void belady_destroy(void *state)
{
    belady_state *st = state;
    free(st->heap);
    free(st->pos);
    free(st->next);
    free(st->held);
    free(st);
}

static void belady_resize(void *state, int64_t nslots)
{
    belady_state *st = state;
    size_t n = (size_t)nslots * sizeof(int64_t);
    st->heap = sim_xrealloc(st->heap, n);
    st->pos = sim_xrealloc(st->pos, n);
    st->next = sim_xrealloc(st->next, n);
    st->held = sim_xrealloc(st->held, n);
}

static void belady_on_hit(void *state, int64_t slot, const kv_evict_req *req)
{
    belady_state *st = state;
    st->next[slot] = next_use_of(req);
    sift_up(st, st->pos[slot]);
    sift_down(st, st->pos[slot]);
}

static void belady_on_insert(void *state, int64_t slot, const kv_evict_req *req)
{
    belady_state *st = state;
    st->next[slot] = next_use_of(req);
    heap_push(st, slot);
}

static bool belady_admit(void *state, const kv_evict_req *req)
{
    belady_state *st = state;
    return st->n == 0 || next_use_of(req) < st->next[st->heap[0]];
}

/* The furthest-needed evictable slot: pinned ones are lifted off the heap
 * while searching and put back afterwards. */
static int64_t belady_victim(void *state, const kv_evict_view *view)
{
    belady_state *st = state;
    int64_t nheld = 0, v = KV_NO_VICTIM;
    while (st->n > 0) {
        int64_t top = st->heap[0];
        if (kv_evictable(view, top)) {
            v = top;
            break;
        }
        heap_remove(st, top);
        st->held[nheld++] = top;
    }
    while (nheld > 0) heap_push(st, st->held[--nheld]);
    return v;
}

static void belady_on_remove(void *state, int64_t slot)
{
    belady_state *st = state;
    heap_remove(st, slot);
}

const kv_evict_ops kv_evict_belady_ops = {
    .create = belady_create,
    .destroy = belady_destroy,
    .resize = belady_resize,
    .on_hit = belady_on_hit,
    .on_insert = belady_on_insert,
    .admit = belady_admit,
    .victim = belady_victim,
    .on_remove = belady_on_remove,
};
