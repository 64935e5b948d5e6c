/* sim/store/evict/evict_fifo.c — first in, first out.
 *
 * One insertion-order queue (sim/store/evict/queue.h): hits change nothing, the victim
 * is the oldest evictable slot (a pinned one is re-queued at the head, as if
 * re-inserted, see kv_list_victim_rotate). Every hook is O(1). */
#include "sim/store/evict/queue.h"

static void fifo_on_hit(void *state, int64_t slot, const kv_evict_req *req) {}

const kv_evict_ops kv_evict_fifo_ops = {
    .create = kv_queue_create,
    .destroy = kv_queue_destroy,
    .resize = kv_queue_resize,
    .on_hit = fifo_on_hit,
    .on_insert = kv_queue_on_insert,
    .admit = NULL,
    .victim = kv_queue_victim,
    .on_remove = kv_queue_on_remove,
};
