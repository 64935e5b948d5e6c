/* sim/engine/engine.h — the discrete-event core: a binary min-heap of events on an
 * int64 nanosecond clock.
 *
 * Determinism (ROSS-style): simultaneous events are ordered by insertion
 * sequence, so the same inputs always replay the same way. Events carry a
 * kind (an index into the model's handler table) and two small payload
 * fields; the model owns the meaning. */
#ifndef SIM_ENGINE_H
#define SIM_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct sim_event {
    int64_t time; /* ns */
    uint64_t seq; /* insertion order: the tie-breaker */
    int32_t kind;
    int32_t target; /* e.g. instance index */
    uint32_t gen;   /* the target's generation when scheduled: stale events are recognised */
    void *data;     /* e.g. a request */
} sim_event;

typedef struct sim_engine {
    sim_event *heap;
    int64_t n, cap;
    uint64_t next_seq;
    int64_t now;
    int64_t processed;
} sim_engine;

void sim_engine_init(sim_engine *e);
void sim_engine_free(sim_engine *e);
/* Schedule an event; time must not be in the past. */
void sim_engine_push(sim_engine *e, int64_t time, int32_t kind, int32_t target, uint32_t gen, void *data);
/* Pop the earliest event into *ev and advance now; false when empty. */
bool sim_engine_pop(sim_engine *e, sim_event *ev);
static inline bool sim_engine_empty(const sim_engine *e) { return e->n == 0; }

#endif
