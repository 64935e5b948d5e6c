/* sim/engine/engine.c — binary min-heap ordered by (time, seq). */
#include "sim/engine/engine.h"

#include <stdlib.h>

#include "sim/util.h"

void sim_engine_init(sim_engine *e) { *e = (sim_engine){0}; }

void sim_engine_free(sim_engine *e)
{
    free(e->heap);
    *e = (sim_engine){0};
}

static bool before(const sim_event *a, const sim_event *b)
{
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

void sim_engine_push(sim_engine *e, int64_t time, int32_t kind, int32_t target, uint32_t gen, void *data)
{
    if (e->n == e->cap) {
        e->cap = e->cap ? e->cap * 2 : 256;
        e->heap = sim_xrealloc(e->heap, (size_t)e->cap * sizeof *e->heap);
    }
    sim_event ev = {time < e->now ? e->now : time, e->next_seq++, kind, target, gen, data};
    int64_t i = e->n++;
    while (i > 0 && before(&ev, &e->heap[(i - 1) / 2])) {
        e->heap[i] = e->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    e->heap[i] = ev;
}

bool sim_engine_pop(sim_engine *e, sim_event *ev)
{
    if (e->n == 0) return false;
    *ev = e->heap[0];
    sim_event last = e->heap[--e->n];
    int64_t i = 0;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= e->n) break;
        if (c + 1 < e->n && before(&e->heap[c + 1], &e->heap[c])) c++;
        if (!before(&e->heap[c], &last)) break;
        e->heap[i] = e->heap[c];
        i = c;
    }
    if (e->n) e->heap[i] = last;
    e->now = ev->time;
    e->processed++;
    return true;
}
