/* sched/dlist.h — intrusive doubly-linked lists over slot numbers, the
 * building block of every list-based eviction policy.
 *
 * The link array (prev/next pairs indexed by slot) is shared by all lists of one
 * policy: a slot is in at most one list at a time, so LFU's frequency buckets
 * or S3-FIFO's small and main queues cost two integers per slot in total.
 * Each list runs from head (newest) to tail (oldest); next points toward the
 * tail, prev toward the head, -1 ends a list. Header-only for inlining. */
#ifndef SCHED_DLIST_H
#define SCHED_DLIST_H

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>

#include "sim/store/evict/evict.h"
#include "sim/util.h"

/* A slot's two neighbours side by side, so that unlinking it reads one
 * cache line instead of two; 32-bit, so that a tier of 64k blocks keeps its
 * links in 512 KiB (a tier holds fewer than 2^31 blocks: sched_links_resize). */
typedef struct sched_link {
    int32_t prev, next;
} sched_link;

typedef struct sched_links {
    sched_link *at; /* indexed by slot */
} sched_links;

typedef struct sched_list {
    int64_t head, tail, size;
} sched_list;

static inline void sched_links_resize(sched_links *l, int64_t nslots)
{
    assert(nslots <= INT32_MAX);
    l->at = sim_xrealloc(l->at, (size_t)nslots * sizeof *l->at);
}

static inline void sched_links_free(sched_links *l)
{
    free(l->at);
}

static inline void sched_list_init(sched_list *q)
{
    q->head = q->tail = -1;
    q->size = 0;
}

static inline void sched_list_push_head(sched_list *q, sched_links *l, int64_t s)
{
    l->at[s] = (sched_link){.prev = -1, .next = (int32_t)q->head};
    if (q->head >= 0) l->at[q->head].prev = (int32_t)s;
    else q->tail = s;
    q->head = s;
    q->size++;
}

static inline void sched_list_unlink(sched_list *q, sched_links *l, int64_t s)
{
    int64_t p = l->at[s].prev, n = l->at[s].next;
    if (p >= 0) l->at[p].next = (int32_t)n;
    else q->head = n;
    if (n >= 0) l->at[n].prev = (int32_t)p;
    else q->tail = p;
    q->size--;
}

static inline void sched_list_move_head(sched_list *q, sched_links *l, int64_t s)
{
    if (q->head == s) return;
    sched_list_unlink(q, l, s);
    sched_list_push_head(q, l, s);
}

/* The oldest evictable slot of q, or SCHED_NO_VICTIM. Slots that may not be
 * evicted now (pinned: in use, hence as good as just used) are rotated to the
 * head on the way, so a long-pinned block is passed over once per lap instead
 * of on every eviction: O(1) amortized while most slots are evictable, one
 * lap (|q| steps, order preserved) when none is. */
static inline int64_t sched_list_victim_rotate(sched_list *q, sched_links *l, const sched_evict_view *v)
{
    for (int64_t k = q->size; k > 0; k--) {
        int64_t s = q->tail;
        if (sched_evictable(v, s)) return s;
        sched_list_move_head(q, l, s);
    }
    return SCHED_NO_VICTIM;
}

#endif
