/* sim/serving/replay.c — the timed replay loop shared by every serving
 * model (see sim/serving/serving.h).
 *
 * Requests are read from the trace one at a time: the next one is read when
 * the previous one arrives, so the event heap holds one ARRIVAL at a time
 * and memory grows with the requests in flight, not with the trace. Events
 * are popped in (time, insertion) order — the engine's deterministic
 * tie-break — and each is handed to the model. The loop ends when the heap
 * is empty (the model stops re-arming periodic events once
 * sim_serving_done()) or the model or the trace reader fails.
 *
 * A closed replay (trace.replay = closed, sim/trace/sessions.h) reads the
 * same way, paced by the recorded times (a bare tick where the request read
 * is held or moved); a session's later turn is scheduled when the turn
 * before it finishes, and when that turn's successor is not read yet the
 * loop reads ahead to it after the event. */
#include <string.h>

#include "sim/cost/measured.h"
#include "sim/serving/serving.h"

/* Read the next trace request and schedule its arrival: at its recorded
 * time (open replay), or as its session allows (closed replay; held turns
 * are scheduled when the turn before them finishes). */
static void read_next(sim_serving_run *run, sim_trace *t, bool paced)
{
    sim_request *r;
    if (run->trace_done) return;
    int rc = sim_trace_next(t, &r, run->err);
    if (rc < 0) run->failed = true;
    if (rc <= 0) {
        run->trace_done = rc == 0;
        return;
    }
    run->inflight++;
    run->work += 1 + (r->output_len > 0 ? r->output_len : 0);
    double budget = run->cfg->event_budget > 0 ? SIM_BUDGET_BASE + run->cfg->event_budget * (double)run->work : 0;
    run->limit = budget > 0 && budget < 9e18 ? (int64_t)budget : INT64_MAX;
    if (!run->sessions) {
        sim_serving_push_arrival(run, r, r->arrival_ns, SIM_ARRIVAL_PACED);
        return;
    }
    int64_t recorded = r->arrival_ns;
    bool now = sim_sessions_admit(run->sessions, r, run->eng.now);
    bool on_time = now && r->arrival_ns == recorded;
    if (now)
        sim_serving_push_arrival(run, r, r->arrival_ns, paced && on_time ? SIM_ARRIVAL_PACED : SIM_ARRIVAL_UNPACED);
    if (paced && !on_time) sim_serving_push_arrival(run, NULL, recorded, SIM_ARRIVAL_PACED);
}

/* A closed replay: a turn finished whose session's next request is not
 * read yet; it may be due before its recorded time, so read up to it. */
static void read_ahead(sim_serving_run *run, sim_trace *t)
{
    while (run->sessions && sim_sessions_wanting(run->sessions) && !run->trace_done && !run->failed)
        read_next(run, t, false);
}

int sim_serving_check(const sim_config *cfg, sim_err *err)
{
    const sim_serving_ops *m = sim_serving_lookup(cfg->mode);
    if (!m) return sim_errf(err, "cluster.mode: unknown serving model '%s' (see kvsim policies)", cfg->mode);
    return m->check(cfg, err);
}

/* The work bound (limits.event_budget): events and rows of a replay follow
 * its work — requests and the tokens they generate — so a run whose events
 * or rows pass 10⁶ + budget × work is spending its time on simulated time
 * itself (a sample period far below the trace's timescale, a cost model
 * whose times are absurd) and is stopped with the reason rather than left
 * to run for hours and fill the disk. Rows are counted every 4096 events. */
static bool over_budget(sim_serving_run *run)
{
    int64_t ev = run->eng.processed;
    if (ev <= run->limit && ((ev & 4095) || sim_results_rows(run->db) <= run->limit)) return false;
    bool rows = ev <= run->limit;
    sim_errf(run->err,
             "stopped after %lld %s at simulated time %.0f s: past the limit of %lld = 10^6 + limits.event_budget "
             "(%g) × %lld units of work (requests and output tokens read so far). Cost should follow work, not "
             "simulated time: check metrics.sample_period_ms / metrics.replica_period_ms and the trace's timestamps, "
             "or raise limits.event_budget (0 = no limit)",
             (long long)(rows ? sim_results_rows(run->db) : ev), rows ? "results rows" : "events",
             sim_ns_to_s(run->eng.now - run->first_arrival), (long long)run->limit, run->cfg->event_budget,
             (long long)run->work);
    return run->failed = true;
}

/* A request is the model's from now: the summary's online steady-state
 * window counts it in the system (sim_results_arrival), then the model. */
static void arrive(const sim_serving_ops *m, void *st, sim_serving_run *run, sim_request *r)
{
    int64_t len = (int64_t)r->input_len + r->output_len, window = run->cfg->model.context_window;
    if (window > 0 && len > window) {
        /* the lowest line, not the first to arrive (a closed replay reorders) */
        if (run->over_context.n++ == 0 || r->line < run->over_context.first_line)
            run->over_context.first_line = r->line;
        if (len > run->over_context.longest) run->over_context.longest = len;
    }
    run->own_slo += r->slo_ttft_ms > 0 || r->slo_tbt_ms > 0;
    sim_results_arrival(run->db, sim_ns_to_ms(r->arrival_ns));
    m->arrive(st, r);
}

static int loop(const sim_serving_ops *m, void *st, sim_serving_run *run, sim_trace *t)
{
    read_next(run, t, true);
    if (run->failed) return -1;
    if (run->trace_done && sim_trace_all_skipped(t, run->err)) return -1;
    if (run->trace_done) return sim_errf(run->err, "trace %s: no requests to replay", sim_trace_name(t));
    run->first_arrival = sim_engine_next_time(&run->eng);
    m->start(st);
    sim_event ev;
    while (!run->failed && sim_engine_pop(&run->eng, &ev)) {
        if (over_budget(run)) {
            if (ev.kind == SIM_EV_ARRIVAL) sim_request_free(ev.data);
            else m->discard(st, &ev);
            break;
        }
        if (ev.kind != SIM_EV_ARRIVAL) m->handle(st, &ev);
        else {
            if (ev.target == SIM_ARRIVAL_PACED) read_next(run, t, true);
            if (ev.data) arrive(m, st, run, ev.data);
        }
        read_ahead(run, t);
    }
    return run->failed ? -1 : 0;
}

/* Free what a failed run left in the heap: arrivals here, model events by
 * the model. */
static void drain(const sim_serving_ops *m, void *st, sim_serving_run *run)
{
    sim_event ev;
    while (sim_engine_pop(&run->eng, &ev)) {
        if (ev.kind == SIM_EV_ARRIVAL) sim_request_free(ev.data);
        else m->discard(st, &ev);
    }
}

/* Lines trace.skip_bad dropped are part of the result, never silent:
 * their count, the first one's message, and the first 100 messages. */
static void note_skipped(const sim_trace *t, json_t *summary)
{
    json_object_set_new(summary, "skipped_lines", json_integer(sim_trace_skipped(t)));
    if (!sim_trace_first_skip(t)) return;
    json_object_set_new(summary, "first_skip", json_string(sim_trace_first_skip(t)));
    json_t *all = json_array(); /* the first SIM_TRACE_SKIPS_KEPT, for kvsim run --verbose */
    for (const char *m; (m = sim_trace_skip_message(t, (int64_t)json_array_size(all))) != NULL;)
        json_array_append_new(all, json_string(m));
    json_object_set_new(summary, "skips", all);
}

/* A trace whose hash_ids fit another block size than trace.block_tokens
 * replays with every hit misplaced: a caveat of the run (issue 40 item 2). */
static void note_block_fit(const sim_trace *t, json_t *summary)
{
    char text[768];
    if (sim_trace_block_warning(t, "--set trace.block_tokens=N --set kvstore.block_tokens=N with N = ", text,
                                sizeof text))
        sim_serving_add_finding(summary, "block_size", text);
    if (sim_trace_hash_warning(t, text, sizeof text)) sim_serving_add_finding(summary, "no_block_hashes", text);
}

/* A closed replay's summary: its sessions and how far arrivals moved from
 * the recorded ones (docs/trace.md). */
static void note_sessions(sim_sessions *s, json_t *summary)
{
    sim_sessions_stats st;
    sim_sessions_stats_get(s, &st);
    json_object_set_new(summary, "replay",
                        json_pack("{s:s, s:I, s:I, s:{s:f, s:f, s:f}}", "mode", "closed", "sessions",
                                  (json_int_t)st.sessions, "follow_up_turns", (json_int_t)st.turns, "arrival_shift_ms",
                                  "mean", st.shift_mean_ms, "p99", st.shift_p99_ms, "max", st.shift_max_ms));
}

/* The event-loop bound (kvsim run --engine-bound): the run's own events
 * per second against the same pushes and pops through a fresh heap with
 * no model behind them (sim_engine_tape_replay). The replay's seconds are
 * the loop's (reading the trace included; setup and the summary not). */
static void note_engine_bound(const sim_engine_tape *tape, double loop_s, json_t *summary)
{
    int64_t events;
    double heap_s = sim_engine_tape_replay(tape, &events);
    double n = (double)events;
    json_object_set_new(summary, "engine_bound",
                        json_pack("{s:I, s:f, s:f, s:f, s:f}", "events", (json_int_t)events, "replay_s", loop_s,
                                  "heap_s", heap_s, "replay_events_per_s", loop_s > 0 ? n / loop_s : 0,
                                  "heap_events_per_s", heap_s > 0 ? n / heap_s : 0));
}

/* A run long enough to stream its summary (docs/run.md, "Long traces")
 * whose trace options need the whole trace says so: sort and resample load
 * every request before the first arrives, a closed replay keeps a shift
 * per request (its p99) besides its sessions. Memory grew with the trace. */
static void note_whole_trace(const sim_config *cfg, bool closed, json_t *summary)
{
    if (!json_object_get(summary, "streamed") || !(cfg->trace.sort || cfg->trace.resample || closed)) return;
    char text[512];
    snprintf(text, sizeof text,
             "%s needs the whole trace: every request was %s, so this run's memory grew with the trace, not with the "
             "requests in flight (docs/run.md, \"Long traces\")",
             cfg->trace.sort       ? "trace.sort"
             : cfg->trace.resample ? "trace.resample"
                                   : "trace.replay = closed",
             closed && !cfg->trace.sort && !cfg->trace.resample ? "given a shift kept for the p99"
                                                                : "loaded before the first arrival");
    sim_serving_add_finding(summary, "whole_trace", text);
}

/* Requests longer than the model's context window: vLLM refuses them at
 * its default max_model_len (an error before scheduling), kvsim serves
 * them at the architecture's costs; said with their count and the first. */
static void note_over_context(const sim_serving_run *run, json_t *summary)
{
    if (!run->over_context.n) return;
    json_int_t total = json_integer_value(json_object_get(summary, "requests"));
    char text[640];
    snprintf(text, sizeof text,
             "%lld of the %lld requests (%.1f%%; the first on trace line %lld, the longest %lld tokens) are longer, "
             "prompt and output, than %s's context window of %d tokens (model.context_window, its config.json's "
             "max_position_embeddings): vLLM refuses such a request at its default max_model_len; kvsim served "
             "them, priced by the architecture (docs/models.md)",
             (long long)run->over_context.n, (long long)total, total ? 100.0 * run->over_context.n / total : 0.0,
             (long long)run->over_context.first_line, (long long)run->over_context.longest, run->cfg->model.name,
             run->cfg->model.context_window);
    json_t *f = sim_serving_add_finding(summary, "over_context", text);
    json_object_set_new(f, "requests", json_integer(run->over_context.n));
}

/* A cluster that rejected every request for a KV larger than an
 * instance's HBM served nothing and never could, at any load: the run
 * fails (exit 2) with the too_large finding's arithmetic rather than
 * report an attainment of 0 (as a PIC store no request fits does). */
static int fail_if_none_fits(const sim_config *cfg, json_t **summary, sim_err *err)
{
    json_int_t n = json_integer_value(json_object_get(*summary, "requests"));
    if (n == 0 || json_integer_value(json_object_get(*summary, "completed")) > 0 ||
        sim_serving_too_large_rejected(*summary) < n)
        return 0;
    const char *text = json_string_value(json_object_get(sim_serving_caveat(*summary, "too_large"), "text"));
    int rc = sim_errf(err, "no request of trace %s fits this cluster, whatever the load: %s", cfg->trace_path, text);
    json_decref(*summary);
    *summary = NULL;
    return rc;
}

int sim_serving_replay(const sim_config *cfg, sim_results *db, json_t **summary, sim_err *err)
{
    return sim_serving_replay_bound(cfg, db, summary, false, err);
}

int sim_serving_replay_bound(const sim_config *cfg, sim_results *db, json_t **summary, bool engine_bound, sim_err *err)
{
    sim_measured_reset_notes(); /* an earlier run's in this process are not this one's */
    if (sim_serving_check(cfg, err)) return -1;
    const sim_serving_ops *m = sim_serving_lookup(cfg->mode);
    sim_serving_run run = {.cfg = cfg, .db = db, .err = err};
    sim_engine_init(&run.eng);
    void *st = NULL;
    sim_trace *t = NULL;
    int rc = m->create(&st, &run, err);
    if (rc == 0 && cfg->closed_replay) rc = sim_sessions_open(&run.sessions, cfg->trace_path, &cfg->trace, err);
    if (rc == 0) rc = sim_trace_open(&t, cfg->trace_path, &cfg->trace, err);
    sim_engine_tape tape = {0};
    run.eng.tape = engine_bound ? &tape : NULL;
    double t0 = sim_wall_seconds();
    if (rc == 0) rc = loop(m, st, &run, t);
    double loop_s = sim_wall_seconds() - t0;
    run.eng.tape = NULL;
    if (rc == 0) {
        double sim_s = sim_ns_to_s(run.last_done - run.first_arrival);
        rc = sim_results_summary(db, sim_s, run.eng.processed, summary, err);
        if (rc == 0 && m->summarize) m->summarize(st, *summary);
        if (rc == 0 && run.own_slo) /* absent when none: summaries are as they were */
            json_object_set_new(*summary, "slo_own_requests", json_integer(run.own_slo));
        if (rc == 0) sim_serving_diagnose(cfg, db, sim_ns_to_s(run.last_arrival - run.first_arrival), *summary);
        if (rc == 0) sim_serving_add_caveats(cfg, *summary);
        if (rc == 0) note_skipped(t, *summary);
        if (rc == 0) note_block_fit(t, *summary);
        if (rc == 0 && run.sessions) note_sessions(run.sessions, *summary);
        if (rc == 0 && engine_bound) note_engine_bound(&tape, loop_s, *summary);
        if (rc == 0) note_whole_trace(cfg, run.sessions != NULL, *summary);
        if (rc == 0) sim_serving_note_over_node(cfg, *summary);
        if (rc == 0) note_over_context(&run, *summary);
        if (rc == 0) rc = fail_if_none_fits(cfg, summary, err);
    }
    sim_engine_tape_free(&tape);
    drain(m, st, &run);
    if (st) m->destroy(st);
    sim_engine_free(&run.eng);
    if (t) sim_trace_close(t);
    sim_sessions_free(run.sessions);
    return rc;
}
