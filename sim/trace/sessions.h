/* sim/trace/sessions.h — closed-loop session replay (trace.replay = closed,
 * docs/trace-replay.md "Closed-loop session replay"): when each turn of a multi-turn
 * session arrives, given when the simulation finished the turn before it.
 *
 * The rule. A request without "session", and the first request of each
 * session, arrives at its recorded time (timestamp / trace.speed). Every
 * later request of a session (its *follow-up turns*, in the replayed order)
 * arrives a think time after the previous request of its session finishes
 * in the simulation — its last token, or its rejection or loss, whichever
 * ends it: a user who got an error also reads it and types on. The think
 * time is the line's "think_ms" / trace.speed, or, without "think_ms", the
 * recorded gap between the two turns' arrivals (the trace records no
 * response times, so the whole gap counts as thinking; a closed replay
 * then never brings a turn earlier than recorded). A session thus slows
 * down when the cluster does.
 *
 * The replay loop reads the trace in recorded order, as an open replay
 * does; a follow-up turn read before its predecessor finished is held here
 * until it does. A turn whose think time is shorter than its recorded gap
 * may be due before the reader would reach it: when a turn finishes and
 * its session has a later request not read yet, the loop reads ahead until
 * it has that request (sim_sessions_wanting). Knowing whether a session has
 * a later request takes one pass over the trace when the replay starts
 * (sim_sessions_open: each session's last request), which also checks that
 * a session's "turn" numbers increase in trace order. Memory grows with the
 * sessions, the held turns and one shift per request (for the p99). */
#ifndef SIM_SESSIONS_H
#define SIM_SESSIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/trace/trace.h"
#include "sim/util.h"

typedef struct sim_sessions sim_sessions;

/* The pass over the trace at path (read with opts, as the replay reads it):
 * the sessions and their last requests; a "turn" that does not increase
 * within its session is an error naming the line. */
int sim_sessions_open(sim_sessions **out, const char *path, const sim_trace_opts *opts, sim_err *err);
/* Frees the held turns too. */
void sim_sessions_free(sim_sessions *s);

/* r was just read at time now (ns). Returns true with r->arrival_ns set to
 * its arrival (≥ now) when it can be scheduled: a request outside sessions
 * or a session's first (its recorded time), or a follow-up turn whose
 * predecessor has finished. Returns false when r is held: s owns it until
 * sim_sessions_finish hands it back. */
bool sim_sessions_admit(sim_sessions *s, sim_request *r, int64_t now);

/* r (admitted earlier) finished at time now. Returns its session's next
 * turn when that one was held, with arrival_ns set (the caller schedules
 * it), else NULL. */
sim_request *sim_sessions_finish(sim_sessions *s, const sim_request *r, int64_t now);

/* A turn finished whose successor has not been read yet: the reader must
 * read on (sim_sessions_admit each request) until this turns false. */
bool sim_sessions_wanting(const sim_sessions *s);

/* How far the replay moved arrivals from the recorded ones. */
typedef struct sim_sessions_stats {
    int64_t sessions;     /* distinct sessions in the trace */
    int64_t turns;        /* follow-up turns (arrival from the previous turn's end) */
    int64_t requests;     /* requests scheduled (every request admitted and released) */
    double shift_mean_ms; /* arrival − recorded arrival, over every request */
    double shift_p99_ms;
    double shift_max_ms;
} sim_sessions_stats;

/* Statistics so far (the p99 sorts the shifts: call once, at the end). */
void sim_sessions_stats_get(sim_sessions *s, sim_sessions_stats *out);

#endif
