/* sched/evict_lru.c — least recently used, Mooncake Store's default
 * eviction (§3.2.1).
 *
 * One recency list (sched/queue.h): an insert or a hit puts the slot at the
 * head, the victim is the oldest evictable slot at the tail (pinned ones are
 * rotated past, see sched_list_victim_rotate). Every hook is O(1). */
#include "sim/store/evict/queue.h"

static void lru_on_hit(void *state, int64_t slot, const sched_evict_req *req)
{
    sched_queue *q = state;
    sched_list_move_head(&q->list, &q->links, slot);
}

const sched_evict_ops sched_evict_lru_ops = {
    .create = sched_queue_create,
    .destroy = sched_queue_destroy,
    .resize = sched_queue_resize,
    .on_hit = lru_on_hit,
    .on_insert = sched_queue_on_insert,
    .admit = NULL,
    .victim = sched_queue_victim,
    .on_remove = sched_queue_on_remove,
};
