/* sim/index/dlist.h — intrusive doubly-linked lists over slot numbers, the
 * building block of every list-based eviction policy (sim/store/evict) and
 * of the data path's chunk pool.
 *
 * The link array (prev/next pairs indexed by slot) is shared by all lists of one
 * policy: a slot is in at most one list at a time, so LFU's frequency buckets
 * or S3-FIFO's small and main queues cost two integers per slot in total.
 * Each list runs from head (newest) to tail (oldest); next points toward the
 * tail, prev toward the head, -1 ends a list. Header-only for inlining. */
#ifndef SIM_INDEX_DLIST_H
#define SIM_INDEX_DLIST_H

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>

#include "sim/util.h"

/* A slot's two neighbours side by side, so that unlinking it reads one
 * cache line instead of two; 32-bit, so that a tier of 64k blocks keeps its
 * links in 512 KiB (a tier holds fewer than 2^31 blocks: sim_links_resize). */
typedef struct sim_link {
    int32_t prev, next;
} sim_link;

typedef struct sim_links {
    sim_link *at; /* indexed by slot */
} sim_links;

typedef struct sim_list {
    int64_t head, tail, size;
} sim_list;

static inline void sim_links_resize(sim_links *l, int64_t nslots)
{
    assert(nslots <= INT32_MAX);
    l->at = sim_xrealloc(l->at, (size_t)nslots * sizeof *l->at);
}

static inline void sim_links_free(sim_links *l) { free(l->at); }

static inline void sim_list_init(sim_list *q)
{
    q->head = q->tail = -1;
    q->size = 0;
}

static inline void sim_list_push_head(sim_list *q, sim_links *l, int64_t s)
{
    l->at[s] = (sim_link){.prev = -1, .next = (int32_t)q->head};
    if (q->head >= 0) l->at[q->head].prev = (int32_t)s;
    else q->tail = s;
    q->head = s;
    q->size++;
}

static inline void sim_list_unlink(sim_list *q, sim_links *l, int64_t s)
{
    int64_t p = l->at[s].prev, n = l->at[s].next;
    if (p >= 0) l->at[p].next = (int32_t)n;
    else q->head = n;
    if (n >= 0) l->at[n].prev = (int32_t)p;
    else q->tail = p;
    q->size--;
}

/* Put s right after `at` (one step toward the tail). */
static inline void sim_list_insert_after(sim_list *q, sim_links *l, int64_t at, int64_t s)
{
    int64_t n = l->at[at].next;
    l->at[s] = (sim_link){.prev = (int32_t)at, .next = (int32_t)n};
    l->at[at].next = (int32_t)s;
    if (n >= 0) l->at[n].prev = (int32_t)s;
    else q->tail = s;
    q->size++;
}

static inline void sim_list_move_head(sim_list *q, sim_links *l, int64_t s)
{
    if (q->head == s) return;
    sim_list_unlink(q, l, s);
    sim_list_push_head(q, l, s);
}

#endif
