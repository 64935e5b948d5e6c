/* sched/queue.h — the single-queue policy skeleton shared by LRU and FIFO.
 *
 * Both keep one list of resident slots, newest at the head, and evict from
 * the tail; they differ only in what a hit does (LRU moves the slot to the
 * head, FIFO does nothing). These functions have the exact sched_evict_ops
 * signatures, so each policy's ops table names them directly and adds its
 * own on_hit. */
#ifndef SCHED_QUEUE_H
#define SCHED_QUEUE_H

#include "sim/index/dlist.h"
#include "sim/store/evict/evict.h"

typedef struct sched_queue {
    sched_links links;
    sched_list list;
} sched_queue;

int sched_queue_create(void **state, int64_t capacity, const json_t *params, sim_err *err);
void sched_queue_destroy(void *state);
void sched_queue_resize(void *state, int64_t nslots);
/* New slots enter at the head. */
void sched_queue_on_insert(void *state, int64_t slot, const sched_evict_req *req);
/* The oldest evictable slot (sched_list_victim_rotate). */
int64_t sched_queue_victim(void *state, const sched_evict_view *view);
void sched_queue_on_remove(void *state, int64_t slot);

#endif
