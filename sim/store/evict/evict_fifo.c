/* sched/evict_fifo.c — first in, first out.
 *
 * One insertion-order queue (sched/queue.h): hits change nothing, the victim
 * is the oldest evictable slot (a pinned one is re-queued at the head, as if
 * re-inserted, see sched_list_victim_rotate). Every hook is O(1). */
#include "sim/store/evict/queue.h"

static void fifo_on_hit(void *state, int64_t slot, const sched_evict_req *req) {}

const sched_evict_ops sched_evict_fifo_ops = {
    .create = sched_queue_create,
    .destroy = sched_queue_destroy,
    .resize = sched_queue_resize,
    .on_hit = fifo_on_hit,
    .on_insert = sched_queue_on_insert,
    .admit = NULL,
    .victim = sched_queue_victim,
    .on_remove = sched_queue_on_remove,
};
