/* sched/queue.c — the single-queue skeleton of LRU and FIFO (see queue.h). */
#include "sim/store/evict/queue.h"

#include <stdlib.h>

int sched_queue_create(void **state, int64_t capacity, const json_t *params, sim_err *err)
{
    sched_queue *q = sim_xcalloc(1, sizeof *q);
    sched_list_init(&q->list);
    *state = q;
    return 0;
}

void sched_queue_destroy(void *state)
{
    sched_queue *q = state;
    sched_links_free(&q->links);
    free(q);
}

void sched_queue_resize(void *state, int64_t nslots)
{
    sched_queue *q = state;
    sched_links_resize(&q->links, nslots);
}

void sched_queue_on_insert(void *state, int64_t slot, const sched_evict_req *req)
{
    sched_queue *q = state;
    sched_list_push_head(&q->list, &q->links, slot);
}

int64_t sched_queue_victim(void *state, const sched_evict_view *view)
{
    sched_queue *q = state;
    return sched_list_victim_rotate(&q->list, &q->links, view);
}

void sched_queue_on_remove(void *state, int64_t slot)
{
    sched_queue *q = state;
    sched_list_unlink(&q->list, &q->links, slot);
}
