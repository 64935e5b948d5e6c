/* sim/serving/serving.h — the serving-model interface: how a cluster admits,
 * schedules and computes requests on the event engine.
 *
 * A timed replay (`kvsim run`) is one loop owned by sim/serving/replay.c: it
 * opens the trace, feeds requests one at a time as ARRIVAL events (the next
 * one is read when the previous arrives, so memory holds only the requests
 * in flight), pops events in (time, insertion) order and hands each to the
 * serving model, then computes the run's summary from the results DB. The
 * serving model owns everything between a request's arrival and its last
 * token: routing and admission (through sched/), queues, compute and
 * transfer times (sim/cost), the KV cache (a cache model, sim/store/cache.h),
 * and one requests row per request.
 *
 * A serving model is a struct of function pointers chosen by cluster.mode
 * (one line in sim/serving/registry.c). Its events use kinds from
 * SIM_EV_MODEL up; it reports a finished request with sim_serving_finished()
 * and reads sim_serving_done() to stop re-arming periodic events.
 *
 * Implementations: sim/serving/disagg (Mooncake's prefill/decode split). */
#ifndef SIM_SERVING_H
#define SIM_SERVING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sim/config/config.h"
#include "sim/cost/cost.h"
#include "sim/engine/engine.h"
#include "sim/results/results.h"
#include "sim/trace/sessions.h"
#include "sim/trace/trace.h"
#include "sim/util.h"

/* Event kinds: ARRIVAL is the replay loop's; a model numbers its own from
 * SIM_EV_MODEL (its handler table is indexed by kind − SIM_EV_MODEL or by
 * kind directly, as it likes). */
enum { SIM_EV_ARRIVAL = 0, SIM_EV_MODEL = 1 };

/* The state of one replay that the loop and the model share. The loop owns
 * it; the model reads cfg, eng, db, err and sets failed on an error (the
 * loop then stops and returns the message in err). */
typedef struct sim_serving_run {
    const sim_config *cfg;
    sim_engine eng;
    sim_results *db;
    sim_err *err;
    bool failed;
    bool trace_done;        /* the trace has no more requests */
    int64_t inflight;       /* read from the trace and not finished yet */
    int64_t first_arrival;  /* ns */
    int64_t last_arrival;   /* ns: the latest arrival read so far */
    int64_t last_done;      /* ns: when the last request finished (or was rejected) */
    int64_t work;           /* requests + output tokens read so far */
    int64_t limit;          /* events and rows allowed so far (limits.event_budget) */
    sim_sessions *sessions; /* trace.replay = closed; NULL in an open replay */
    struct {                /* requests longer than model.context_window (the over_context finding) */
        int64_t n, first_line, longest;
    } over_context;
    int64_t own_slo; /* requests carrying their own slo_ttft_ms or slo_tbt_ms (summary "slo_own_requests") */
} sim_serving_run;

/* The constant part of the work bound: events and rows any replay may use. */
#define SIM_BUDGET_BASE 1e6

typedef struct sim_serving_ops {
    const char *name; /* the cluster.mode value */
    const char *help; /* one line, for kvsim policies */
    /* Every name the model will resolve from cfg exists (policies, cache
     * model); errors name the config key. Called before anything is opened. */
    int (*check)(const sim_config *cfg, sim_err *err);
    /* Build the model for run->cfg. Runs before the first request is read. */
    int (*create)(void **state, sim_serving_run *run, sim_err *err);
    /* The first arrival time is known (run->first_arrival): arm periodic
     * events (samples, controllers, scheduled faults). */
    void (*start)(void *state);
    /* A trace request arrives now; the model owns it from here and must
     * eventually call sim_serving_finished() once for it. */
    void (*arrive)(void *state, sim_request *req);
    /* One of the model's own events (kind ≥ SIM_EV_MODEL). */
    void (*handle)(void *state, const sim_event *ev);
    /* A model event left in the heap when a failed run stops: free what its
     * data points to. */
    void (*discard)(void *state, const sim_event *ev);
    void (*destroy)(void *state);
    /* Optional: add the model's own run-wide metrics to the summary. */
    void (*summarize)(void *state, json_t *summary);
    /* Optional: config keys the model accepts but never reads, with why
     * (ended by {NULL}); kvsim run warns when the user set one. */
    const sim_idle_key *idle_keys;
} sim_serving_ops;

/* Arrival events: a PACED one reads the next request when it pops, so
 * the heap holds one of them at a time (an open replay's every arrival; in
 * a closed replay, data NULL is a bare tick at the last read request's
 * recorded time). An UNPACED one (a closed replay's turn that follows its
 * session, or one read ahead) only arrives (sim/serving/replay.c). */
enum { SIM_ARRIVAL_PACED = -1, SIM_ARRIVAL_UNPACED = 0 };

static inline void sim_serving_push_arrival(sim_serving_run *run, sim_request *r, int64_t at, int32_t pace)
{
    if (r && at > run->last_arrival) run->last_arrival = at;
    sim_engine_push(&run->eng, at, SIM_EV_ARRIVAL, pace, 0, r);
}

/* A request finished, was rejected or was lost: one fewer in flight. In a
 * closed replay its session's next turn, if held, is scheduled now. Inline:
 * the models call it, and the replay loop calls the models. */
static inline void sim_serving_finished(sim_serving_run *run, const sim_request *r)
{
    run->inflight--;
    if (run->eng.now > run->last_done) run->last_done = run->eng.now;
    sim_request *next = run->sessions ? sim_sessions_finish(run->sessions, r, run->eng.now) : NULL;
    if (next) sim_serving_push_arrival(run, next, next->arrival_ns, SIM_ARRIVAL_UNPACED);
}

/* No request is left to arrive or in flight: periodic events stop. */
static inline bool sim_serving_done(const sim_serving_run *run) { return run->trace_done && run->inflight == 0; }

/* ---- overload diagnosis (sim/serving/diagnose.c) ----------------------------- */

/* Add "diagnosis" to a run's summary: whether the cluster was overloaded
 * (the run outlasted the trace's arrivals markedly, queues grew, an instance kind was
 * busy nearly all the time, or SLO attainment collapsed), the bottleneck
 * (the busiest kind in the model's "utilisation" object) and a hint. */
void sim_serving_diagnose(const sim_config *cfg, sim_results *db, double trace_span_s, json_t *summary);
/* Which SLO the run's misses are of and the resource that binds them, as
 * one sentence into buf ("" when SLO attainment is 0.99 or more), from
 * the summary alone (it does not change it): the TTFT and TBT percentiles
 * against slo.ttft_ms and slo.tbt_ms, the utilisations, and under a PIC
 * cache model the share of prompt tokens it recomputes. */
void sim_serving_explain(const sim_config *cfg, const json_t *summary, char *buf, size_t n);

/* ---- caveats (sim/serving/caveats.c) --------------------------------------- */

/* The parts of cfg's model that no measurement has validated, as an array
 * of {"name", "text"} (empty when none); the caller owns it. */
json_t *sim_serving_caveats(const sim_config *cfg);
/* Add them to a run's summary as "caveats" (no key when there are none). */
void sim_serving_add_caveats(const sim_config *cfg, json_t *summary);
/* A caveat the replay found (not one of the config's): appended to the
 * summary's "caveats" as {name, text, found: true}; `kvsim run` prints it
 * as a plain warning (issue 40 items 2 and 6). Returns the finding (the
 * summary's), for the numbers a caller adds to it. */
json_t *sim_serving_add_finding(json_t *summary, const char *name, const char *text);
/* The summary's caveat or finding called name (NULL: none). */
const json_t *sim_serving_caveat(const json_t *summary, const char *name);
/* The requests the too_large finding says were rejected for a KV larger
 * than an instance's HBM (0 without one). */
int64_t sim_serving_too_large_rejected(const json_t *summary);
/* The fit-range finding: the CPU constants of `cost` (engine or measured
 * mode) are fitted on runs of at most sim_cost_fit_seqs sequences at once;
 * when `what` (an instance kind's iterations) reached peak_seqs beyond
 * that, the per-sequence term was extrapolated, `share` of such an
 * iteration. Said as a finding and as the summary's "fit_range"; nothing
 * when within the fit or outside those modes. */
void sim_serving_note_fit_range(json_t *summary, const sim_cost *cost, const char *what, int peak_seqs, double share);
/* The short-step caveat (sim_cost_short_step_s): written into buf and true
 * when a decode step of one sequence of `cost`'s model takes the GPU less
 * time than any step of the training runs its CPU constants were fitted
 * on; false otherwise. sim_serving_note_short_steps says it as a run's
 * finding "short_steps", for `what` (an instance kind's iterations). */
bool sim_serving_short_step_text(char *buf, size_t n, const sim_cost *cost);
void sim_serving_note_short_steps(json_t *summary, const sim_cost *cost, const char *what);
/* A tier's budget (kvstore.dram_bytes, kvstore.ssd_bytes) beyond the memory
 * the hardware gives it (sim_config_node_dram, _disk): the over_node
 * finding, which says the run's hits rest on memory the node lacks. */
void sim_serving_note_over_node(const sim_config *cfg, json_t *summary);
/* The sentence's part after "beyond", shared by runs and `kvsim cost`:
 * the fit, the extrapolated share of `one` ("this step", "such an
 * iteration") and what follows for `steps` ("the step is", "steps are"). */
void sim_serving_fit_range_tail(char *buf, size_t n, const sim_cost *cost, double share, const char *one,
                                const char *steps);

/* ---- registry (sim/serving/registry.c) ------------------------------------ */

size_t sim_serving_count(void);
const sim_serving_ops *sim_serving_at(size_t i); /* NULL past the end */
const sim_serving_ops *sim_serving_lookup(const char *name);

/* ---- the replay loop (sim/serving/replay.c) --------------------------------- */

/* cfg's serving model exists and accepts cfg (errors name the key). */
int sim_serving_check(const sim_config *cfg, sim_err *err);

/* Replay cfg's trace through cfg's serving model. Writes request and sample
 * rows into db (inside the run begun by the caller) and returns the run's
 * summary (caller owns it). Trace errors fail the run with the reader's
 * message. */
int sim_serving_replay(const sim_config *cfg, sim_results *db, json_t **summary, sim_err *err);
/* sim_serving_replay; with engine_bound, the summary also gets
 * "engine_bound": the run's events per second against the same heap
 * operations alone (docs/scale.md; the record costs 8 bytes a push or pop). */
int sim_serving_replay_bound(const sim_config *cfg, sim_results *db, json_t **summary, bool engine_bound, sim_err *err);

/* ---- TBT (sim/serving/tbt.c) ------------------------------------------------ */

/* TBT of a request: the mean of the longest 10% (at least one) of its
 * inter-token intervals (Mooncake §7.1; docs/architecture.md, definitions).
 * Kept exactly without storing every interval: the k = max(1,
 * floor(intervals/10)) largest among a buffer of candidates, with a
 * threshold below which an interval cannot count (sim/serving/tbt.c). */
typedef struct sim_topk {
    int32_t k, n, cap; /* n candidates of at most cap in v */
    int32_t run;       /* v[run..n) is non-decreasing */
    int64_t min;       /* no interval <= min is among the k largest */
    int64_t *v;        /* intervals, ns */
} sim_topk;

void sim_topk_init(sim_topk *t, int32_t intervals);
/* Keep the k largest, then add x if above the threshold (the slow path of
 * sim_topk_add, when the buffer is full). */
void sim_topk_insert(sim_topk *t, int64_t x);
/* Keep x if it may be among the k largest: O(1) amortised. Most intervals
 * are no larger than the threshold and stop at the first comparison. */
static inline void sim_topk_add(sim_topk *t, int64_t x)
{
    if (x <= t->min) return;
    if (t->n == t->cap) {
        sim_topk_insert(t, x);
        return;
    }
    if (t->n > t->run && x < t->v[t->n - 1]) t->run = t->n;
    t->v[t->n++] = x;
}
/* The mean of the k largest in seconds, from their exact integer sum (the
 * candidates are reduced in place: call once, at the end). */
double sim_topk_mean_s(sim_topk *t);

/* ---- request rows (sim/serving/row.c) ----------------------------------------- */

/* The part of r's requests row every serving model fills alike: identity,
 * lengths, first-token and done times, TTFT, TBT (from topk), end-to-end
 * time, stage, and whether it met both SLOs (its own, else cfg's).
 * first_token < 0: none to record. The model adds instances, hits, prefill
 * start and GPU time, tokens and retries. */
void sim_serving_row(const sim_config *cfg, const sim_request *r, sim_stage stage, int64_t first_token,
                     int64_t last_token, sim_topk *topk, sim_request_row *row);
void sim_topk_free(sim_topk *t);

/* The band of a fused-MoE compile that a lent H200 host measured: the
 * fastest and slowest of 60 compiles of a fused-MoE-shaped Triton kernel
 * (462 and 973 ms, configs/calibration/h200.moe-compile-*.json), rounded
 * outward; their median is engine.measured.moe_jit_compile_ms's default
 * (docs/validation.md §1). A run's moe_compiles finding and `kvsim
 * validate`'s compile_band use it. */
#define SIM_MOE_COMPILE_PROBE_LO_MS 460
#define SIM_MOE_COMPILE_PROBE_HI_MS 980

#endif
