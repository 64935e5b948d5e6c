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

/* Events are 32 bytes, two to a cache line: kind and target share a word. */
enum { SIM_EVENT_KINDS = 128, SIM_EVENT_TARGETS = 1 << 23 };

typedef struct sim_event {
    int64_t time;        /* ns */
    uint64_t seq;        /* insertion order: the tie-breaker */
    int32_t kind : 8;    /* < SIM_EVENT_KINDS */
    int32_t target : 24; /* e.g. instance index, -1 .. SIM_EVENT_TARGETS - 1 */
    uint32_t gen;        /* the target's generation when scheduled: stale events are recognised */
    void *data;          /* e.g. a request */
} sim_event;

/* A record of an engine's heap operations in order: each push's time (≥ 0)
 * and -1 for each pop. Replayed through a fresh heap with no model behind
 * it (sim_engine_tape_replay), it costs exactly the heap's part of the
 * run: the same pushes and pops, the same (time, seq) keys, the same heap
 * sizes — the event-loop bound of the run (docs/scale.md). */
typedef struct sim_engine_tape {
    int64_t *op;
    int64_t n, cap;
} sim_engine_tape;

typedef struct sim_engine {
    sim_event *heap;
    int64_t n, cap; /* n slots in use, the hole included */
    bool hole;      /* the root slot is empty: the last pop left it (engine.c) */
    uint64_t next_seq;
    int64_t now;
    int64_t processed;
    sim_engine_tape *tape; /* NULL, or where every push and pop is recorded */
} sim_engine;

void sim_engine_init(sim_engine *e);
void sim_engine_free(sim_engine *e);
/* Schedule an event; time must not be in the past. */
void sim_engine_push(sim_engine *e, int64_t time, int32_t kind, int32_t target, uint32_t gen, void *data);
/* Pop the earliest event into *ev and advance now; false when empty. */
bool sim_engine_pop(sim_engine *e, sim_event *ev);
static inline bool sim_engine_empty(const sim_engine *e) { return e->n == (int64_t)e->hole; }
/* The time of the earliest pending event, INT64_MAX when none. */
int64_t sim_engine_next_time(const sim_engine *e);
/* The time of the earliest pending event for which counts() is true,
 * INT64_MAX when none: a scan of the whole heap, for rare questions (when
 * can anything but a periodic sample happen next?). */
int64_t sim_engine_next_time_of(const sim_engine *e, bool (*counts)(const sim_event *ev));

/* The tape's pushes and pops through a fresh engine, no handler behind
 * them: the wall seconds it took; *events gets the pops. */
double sim_engine_tape_replay(const sim_engine_tape *t, int64_t *events);
void sim_engine_tape_free(sim_engine_tape *t);

#endif
