/* sched/evict_lru.c — least recently used, Mooncake Store's default
 * eviction (§3.2.1).
 *
 * One recency list: an insert or a hit moves the slot to the head, the
 * victim is the oldest evictable slot at the tail (pinned ones are rotated
 * past, see sched_list_victim_rotate). Every hook is O(1). */
#include "sched/dlist.h"
#include "sched/evict.h"

#include <stdlib.h>

typedef struct lru_state {
    sched_links links;
    sched_list list;
} lru_state;

static int lru_create(void **state, int64_t capacity, const json_t *params, sim_err *err)
{
    lru_state *st = sim_xcalloc(1, sizeof *st);
    sched_list_init(&st->list);
    *state = st;
    return 0;
}

static void lru_destroy(void *state)
{
    lru_state *st = state;
    sched_links_free(&st->links);
    free(st);
}

static void lru_resize(void *state, int64_t nslots)
{
    lru_state *st = state;
    sched_links_resize(&st->links, nslots);
}

static void lru_on_hit(void *state, int64_t slot, const sched_evict_req *req)
{
    lru_state *st = state;
    sched_list_move_head(&st->list, &st->links, slot);
}

static void lru_on_insert(void *state, int64_t slot, const sched_evict_req *req)
{
    lru_state *st = state;
    sched_list_push_head(&st->list, &st->links, slot);
}

static int64_t lru_victim(void *state, const sched_evict_view *view)
{
    lru_state *st = state;
    return sched_list_victim_rotate(&st->list, &st->links, view);
}

static void lru_on_remove(void *state, int64_t slot)
{
    lru_state *st = state;
    sched_list_unlink(&st->list, &st->links, slot);
}

const sched_evict_ops sched_evict_lru_ops = {
    .create = lru_create,
    .destroy = lru_destroy,
    .resize = lru_resize,
    .on_hit = lru_on_hit,
    .on_insert = lru_on_insert,
    .admit = NULL,
    .victim = lru_victim,
    .on_remove = lru_on_remove,
};
