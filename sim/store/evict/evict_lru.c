/* sim/store/evict/evict_lru.c — least recently used, Mooncake Store's default
 * eviction (§3.2.1).
 *
 * One recency list (sim/store/evict/queue.h): an insert or a hit puts the slot at the
 * head, the victim is the oldest evictable slot at the tail (pinned ones are
 * rotated past, see kv_list_victim_rotate). Every hook is O(1). */
#include "sim/store/evict/queue.h"

static void lru_on_hit(void *state, int64_t slot, const kv_evict_req *req)
{
    kv_queue *q = state;
    sim_list_move_head(&q->list, &q->links, slot);
}

const kv_evict_ops kv_evict_lru_ops = {
    .create = kv_queue_create,
    .destroy = kv_queue_destroy,
    .resize = kv_queue_resize,
    .on_hit = lru_on_hit,
    .on_insert = kv_queue_on_insert,
    .admit = NULL,
    .victim = kv_queue_victim,
    .on_remove = kv_queue_on_remove,
};
