/* sim/store/evict/queue.c — the single-queue skeleton of LRU and FIFO (see queue.h). */
#include "sim/store/evict/queue.h"

#include <stdlib.h>

int kv_queue_create(void **state, int64_t capacity, const json_t *params, sim_err *err)
{
    kv_queue *q = sim_xcalloc(1, sizeof *q);
    sim_list_init(&q->list);
    *state = q;
    return 0;
}

void kv_queue_destroy(void *state)
{
    kv_queue *q = state;
    sim_links_free(&q->links);
    free(q);
}

void kv_queue_resize(void *state, int64_t nslots)
{
    kv_queue *q = state;
    sim_links_resize(&q->links, nslots);
}

void kv_queue_on_insert(void *state, int64_t slot, const kv_evict_req *req)
{
    kv_queue *q = state;
    sim_list_push_head(&q->list, &q->links, slot);
}

int64_t kv_queue_victim(void *state, const kv_evict_view *view)
{
    kv_queue *q = state;
    return kv_list_victim_rotate(&q->list, &q->links, view);
}

void kv_queue_on_remove(void *state, int64_t slot)
{
    kv_queue *q = state;
    sim_list_unlink(&q->list, &q->links, slot);
}
