/* sim/engine/engine.c — binary min-heap ordered by (time, seq), with a lazy root.
 *
 * Most handlers schedule one event for the event they handle (a decode
 * step, the next step). A pop therefore leaves its root slot empty (a
 * hole) instead of moving the last event up at once: a push that comes
 * next drops the new event into the hole and sifts it down, one pass where
 * a pop and a push would take two (and never re-reads the slot a push has
 * just written). A pop that finds the hole fills it from the last slot
 * first. Events leave in (time, seq) order either way: keys are unique. */
#include "sim/engine/engine.h"

#include <stdlib.h>

#include "sim/util.h"

void sim_engine_init(sim_engine *e) { *e = (sim_engine){0}; }

void sim_engine_free(sim_engine *e)
{
    free(e->heap);
    *e = (sim_engine){0};
}

/* (time, seq) order without a branch: which child of a node comes first
 * is a coin flip the branch predictor loses. */
static inline bool before(const sim_event *a, const sim_event *b)
{
    return (a->time < b->time) | ((a->time == b->time) & (a->seq < b->seq));
}

/* Place x in the root slot of the n-slot heap h and sift it down. */
static void sift_down(sim_event *h, int64_t n, const sim_event *x)
{
    int64_t i = 0;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n) c += before(&h[c + 1], &h[c]);
        if (!before(&h[c], x)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = *x;
}

static void tape_add(sim_engine_tape *t, int64_t op)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 1 << 16;
        t->op = sim_xrealloc(t->op, (size_t)t->cap * sizeof *t->op);
    }
    t->op[t->n++] = op;
}

void sim_engine_push(sim_engine *e, int64_t time, int32_t kind, int32_t target, uint32_t gen, void *data)
{
    sim_event ev = {time < e->now ? e->now : time, e->next_seq++, kind, target, gen, data};
    if (e->tape) tape_add(e->tape, ev.time);
    if (e->hole) {
        e->hole = false;
        sift_down(e->heap, e->n, &ev);
        return;
    }
    if (e->n == e->cap) {
        e->cap = e->cap ? e->cap * 2 : 256;
        e->heap = sim_xrealloc(e->heap, (size_t)e->cap * sizeof *e->heap);
    }
    int64_t i = e->n++;
    while (i > 0 && before(&ev, &e->heap[(i - 1) / 2])) {
        e->heap[i] = e->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    e->heap[i] = ev;
}

bool sim_engine_pop(sim_engine *e, sim_event *ev)
{
    if (e->hole) {
        e->hole = false;
        if (--e->n > 0) {
            sim_event last = e->heap[e->n];
            sift_down(e->heap, e->n, &last);
        }
    }
    if (e->n == 0) return false;
    *ev = e->heap[0];
    e->hole = true;
    e->now = ev->time;
    e->processed++;
    if (e->tape) tape_add(e->tape, -1);
    return true;
}

int64_t sim_engine_next_time(const sim_engine *e)
{
    if (!e->hole) return e->n ? e->heap[0].time : INT64_MAX;
    int64_t n = e->n - 1, t = INT64_MAX; /* the earliest of the root's children and the last slot */
    for (int64_t c = 1; c <= 2 && c < n; c++)
        if (e->heap[c].time < t) t = e->heap[c].time;
    if (n > 0 && e->heap[n].time < t) t = e->heap[n].time;
    return t;
}

int64_t sim_engine_next_time_of(const sim_engine *e, bool (*counts)(const sim_event *ev))
{
    int64_t t = INT64_MAX;
    for (int64_t i = e->hole; i < e->n; i++)
        if (e->heap[i].time < t && counts(&e->heap[i])) t = e->heap[i].time;
    return t;
}

/* The bare loop: every recorded push and pop in order, each pop's event
 * read (its time summed, so the loop cannot be optimised away). */
double sim_engine_tape_replay(const sim_engine_tape *t, int64_t *events)
{
    sim_engine e;
    sim_event ev;
    sim_engine_init(&e);
    int64_t sum = 0;
    double t0 = sim_wall_seconds();
    for (int64_t i = 0; i < t->n; i++) {
        if (t->op[i] >= 0) sim_engine_push(&e, t->op[i], 0, 0, 0, NULL);
        else if (sim_engine_pop(&e, &ev)) sum += ev.time;
    }
    double wall = sim_wall_seconds() - t0;
    *events = e.processed + (sum == -1); /* sum is never -1: it only keeps the reads */
    sim_engine_free(&e);
    return wall;
}

void sim_engine_tape_free(sim_engine_tape *t)
{
    free(t->op);
    *t = (sim_engine_tape){0};
}
