/* sim/replay/validate_run.c — `kvsim validate`'s loop (sim/replay/validate.h):
 * generate an experiment's workload, replay it on the configuration
 * validate.c derived, and set each measured metric beside its prediction.
 *
 * The measurements describe the first `measured.requests` requests of a
 * load that went on behind them (validation/README.md), so the replay goes
 * on too: it sends the stages' requests past the measured ones, at first
 * half as many again (at least 64), doubled until the last measured request
 * has left before the last arrival (or the stages end), and predicts from
 * the measured requests alone (sim/results/results_int.h, "the head of a
 * run"). The trace goes to a temporary file (replay reads a file twice: its
 * fingerprint, then its requests) that is removed after the run. The
 * prediction of metric M statistic S is M.S over those requests, as the run
 * summary computes every latency (sim/results/results.c, docs/definitions.md:
 * the same percentile definition as numpy's default, which inference-perf
 * uses); measured itl_ms is inference-perf's normalized time per output
 * token (what the study calls ITL), predicted as end-to-end latency over
 * output tokens per request, and tpot_ms is the summary's itl_ms. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "sim/config/config.h"
#include "sim/replay/validate_int.h"
#include "sim/results/results.h"
#include "sim/serving/serving.h"
#include "sim/trace/trace.h"

/* The metrics a measurements file may hold and the head's metric that
 * predicts each (sim_results_head). */
static const char *const metrics[][2] = {
    {"e2e_ms", "e2e_ms"}, {"ttft_ms", "ttft_ms"}, {"itl_ms", "ntpot_ms"}, {"tpot_ms", "itl_ms"}};
enum { NMETRICS = sizeof metrics / sizeof metrics[0] };

/* The head's name for measured metric name; NULL: not one kvsim predicts. */
static const char *predictor(const char *name)
{
    for (int m = 0; m < NMETRICS; m++)
        if (!strcmp(name, metrics[m][0])) return metrics[m][1];
    return NULL;
}

/* The generated workload in a temporary file; its path in path. */
static int write_trace(const vexp *e, int64_t requests, char *path, size_t n, sim_err *err)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(path, n, "%s/kvsim-validate-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) return sim_errf(err, "%s: cannot create a temporary trace: %s", path, strerror(errno));
    FILE *f = fdopen(fd, "w");
    int64_t written = 0;
    sim_tracegen_sp_opts gen = e->gen;
    gen.requests = requests;
    int rc = sim_tracegen_sp_write(&gen, f, path, &written, err);
    if (fclose(f) && !rc) rc = sim_errf(err, "%s: %s", path, strerror(errno));
    if (!rc && written < e->requests)
        rc = sim_errf(err,
                      "%s: experiment '%s': its load stages send %lld requests, fewer than measured.requests (%lld)",
                      e->file, e->id, (long long)written, (long long)e->requests);
    if (rc) unlink(path);
    return rc;
}

/* The config of e replaying r->requests requests from the trace at path. */
static int load_config(const vexp *e, const sim_validate_opts *o, const char *path, int64_t requests, sim_config *cfg,
                       sim_err *err)
{
    char trace[4200], limit[64];
    int n = e->nsets + o->nsets + 2;
    char **sets = sim_xcalloc((size_t)n, sizeof *sets);
    memcpy(sets, e->sets, (size_t)e->nsets * sizeof *sets);
    memcpy(sets + e->nsets, o->sets, (size_t)o->nsets * sizeof *sets);
    json_t *p = json_string(path);
    char *quoted = json_dumps(p, JSON_ENCODE_ANY);
    snprintf(trace, sizeof trace, "trace.path=%s", quoted);
    free(quoted);
    json_decref(p);
    snprintf(limit, sizeof limit, "trace.limit=%lld", (long long)requests);
    sets[n - 2] = trace;
    sets[n - 1] = limit;
    int rc = sim_config_load(cfg, NULL, sets, n, err);
    free(sets);
    return rc;
}

/* Replay r->requests requests of e into db. */
static int replay_once(const vexp *e, const sim_validate_opts *o, sim_results *db, vrun *r, sim_err *err)
{
    char path[4096];
    if (write_trace(e, r->requests, path, sizeof path, err)) return -1;
    sim_config cfg;
    int rc = load_config(e, o, path, r->requests, &cfg, err);
    if (!rc) {
        char *config_json = json_dumps(cfg.root, JSON_SORT_KEYS | JSON_COMPACT);
        sim_run_info info = {config_json, cfg.hash, e->id, 0, e->gen.seed, !cfg.request_rows, !cfg.sample_rows};
        rc = sim_serving_check(&cfg, err) || sim_trace_fingerprint(path, &info.trace_fingerprint, err) ||
             sim_results_begin_run(db, &info, &(int64_t){0}, err) || sim_serving_replay(&cfg, db, &r->summary, err) ||
             sim_results_head(db, &r->head, &r->left_ms, &r->last_ms, err) ||
             sim_results_finish_run(db, r->summary, 0, err);
        if (rc) sim_results_abandon_run(db); /* the file's next experiment runs */
        free(config_json);
        sim_config_free(&cfg);
    }
    unlink(path);
    return rc;
}

/* Whether e's generator accepts n requests (multi-turn prompts grow with
 * the requests sent: sim_tracegen_sp_check). */
static bool generates(const vexp *e, int64_t n)
{
    sim_tracegen_sp_opts gen = e->gen;
    gen.requests = n;
    sim_err quiet = {0};
    return sim_tracegen_sp_check(&gen, &quiet) == 0;
}

/* The most requests the replay may send: every request e's load stages
 * send, fewer when the generator refuses that many (the largest count it
 * accepts, by bisection; the measured requests themselves it accepts, or
 * writing their trace says why not). */
static int64_t stage_requests(const vexp *e)
{
    int64_t total = 0;
    for (int k = 0; k < e->gen.nstages; k++) total += sim_tracegen_sp_stage_requests(&e->gen.stages[k]);
    if (total <= e->requests || generates(e, total)) return total;
    int64_t lo = e->requests, hi = total; /* generates(lo) is assumed, generates(hi) is false */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        *(generates(e, mid) ? &lo : &hi) = mid;
    }
    return lo;
}

/* Replay e, the load running on past its measured requests (the file's
 * comment) into a scratch database, then, when the user keeps the runs
 * (--db), the last of those replays once more into theirs: one run per
 * experiment there. */
static int replay(const vexp *e, const sim_validate_opts *o, sim_results *db, vrun *r, sim_err *err)
{
    sim_results *scratch = NULL;
    int64_t total = stage_requests(e), extra = e->requests / 2 > 64 ? e->requests / 2 : 64;
    int rc = o->db ? sim_results_open(&scratch, NULL, err) : 0;
    sim_results *at = o->db ? scratch : db;
    if (!rc) sim_results_keep_head(at, e->requests);
    while (!rc) {
        r->requests = e->requests + extra < total ? e->requests + extra : total;
        if ((rc = replay_once(e, o, at, r, err)) || r->left_ms <= r->last_ms || r->requests == total) break;
        vrun_clear(r);
        extra *= 2;
    }
    sim_results_close(scratch);
    if (!rc && o->db) {
        vrun_clear(r);
        sim_results_keep_head(db, e->requests);
        rc = replay_once(e, o, db, r, err);
    }
    return rc;
}

/* The draws of e's workload (validate_draws.c), each replayed as replay()
 * does into db: draw k generates it with seed e's + k, the seed its run
 * carries (--db keeps a run per draw). A workload with no random element
 * (e->fixed: `vllm bench latency`'s one batch of fixed lengths) is one
 * draw: its eight were the same run eight times. */
static int draws_of(const sim_validate_opts *o, const vexp *e)
{
    return e->fixed ? 1 : o->draws > 0 ? o->draws : SIM_VALIDATE_DRAWS;
}

static int replay_draws(const vexp *e, const sim_validate_opts *o, sim_results *db, vrun *r, int n, sim_err *err)
{
    int rc = 0;
    for (int k = 0; k < n && !rc; k++) {
        vexp ek = *e;
        ek.gen.seed = e->gen.seed + (uint64_t)k;
        rc = replay(&ek, o, db, &r[k], err);
    }
    return rc;
}

/* One measured statistic against the prediction x of it: its predicted,
 * ape and mpe entries; a measured value that is no positive number is an
 * error naming it. */
static int compare_stat(const vexp *e, const char *metric, const char *stat, const json_t *v, double got, json_t **p,
                        sim_err *err)
{
    if (!json_is_number(v) || json_number_value(v) <= 0)
        return sim_errf(err, "%s: experiment '%s': measured.%s.%s: expected a positive number", e->file, e->id, metric,
                        stat);
    double meas = json_number_value(v), signed_pct = (got - meas) / meas * 100;
    json_object_set_new(p[0], stat, json_real(got));
    json_object_set_new(p[1], stat, json_real(fabs(signed_pct)));
    json_object_set_new(p[2], stat, json_real(signed_pct));
    return 0;
}

/* predicted, ape and mpe of every statistic measured, from the head of the
 * run (its measured requests); a metric or statistic kvsim does not give
 * (a file of another study may measure more) is listed in not_predicted. */
static int compare(const vexp *e, const json_t *head, json_t *row, sim_err *err)
{
    json_t *pred = json_object(), *ape = json_object(), *mpe = json_object(), *skipped = json_array();
    json_object_set_new(row, "predicted", pred);
    json_object_set_new(row, "ape", ape);
    json_object_set_new(row, "mpe", mpe);
    const char *metric, *stat;
    const json_t *m, *v;
    char name[160];
    int rc = 0;
    json_object_foreach((json_t *)e->measured, metric, m)
    {
        if (!json_is_object(m)) continue; /* "requests" */
        const char *by = predictor(metric);
        const json_t *have = by ? json_object_get(head, by) : NULL;
        if (!json_is_object(have)) {
            json_array_append_new(skipped, json_string(metric));
            continue;
        }
        json_t *p[3] = {json_object(), json_object(), json_object()};
        json_object_set_new(pred, metric, p[0]);
        json_object_set_new(ape, metric, p[1]);
        json_object_set_new(mpe, metric, p[2]);
        json_object_foreach((json_t *)m, stat, v)
        {
            const json_t *x = json_object_get(have, stat);
            if (!json_is_number(x)) {
                snprintf(name, sizeof name, "%.64s.%.64s", metric, stat);
                json_array_append_new(skipped, json_string(name));
            } else if (!rc) rc = compare_stat(e, metric, stat, v, json_number_value(x), p, err);
        }
    }
    if (json_array_size(skipped)) json_object_set(row, "not_predicted", skipped);
    json_decref(skipped);
    return rc;
}

/* e's draws replayed (r, o->draws of them) and compared: predicted, ape
 * and mpe of their mean (vdraw_mean_head), and "draws": {"n", "seeds":
 * [first, last], "mpe": {metric: {stat: [min, max]}}}, the range of the
 * draws' own errors. */
static int predict(const vexp *e, const sim_validate_opts *o, sim_results *db, vrun *r, int n, json_t *row,
                   sim_err *err)
{
    if (replay_draws(e, o, db, r, n, err)) return -1;
    json_t *head = vdraw_mean_head(r, n), *range = json_object();
    int rc = compare(e, head, row, err);
    for (int k = 0; k < n && !rc; k++) {
        json_t *one_row = json_object();
        if (!(rc = compare(e, r[k].head, one_row, err))) vdraw_range_add(range, json_object_get(one_row, "mpe"));
        json_decref(one_row);
    }
    json_object_set_new(row, "draws",
                        json_pack("{s:i, s:[I,I], s:o, s:b}", "n", n, "seeds", (json_int_t)e->gen.seed,
                                  (json_int_t)(e->gen.seed + (uint64_t)n - 1), "mpe", range, "fixed", e->fixed));
    json_decref(head);
    return rc;
}

/* The mpe of e's draws replayed with every fused-MoE compile taking ms,
 * into a scratch database (--db keeps the experiment's own replay only). */
static int band_end(const vexp *e, const sim_validate_opts *o, int ms, json_t **mpe, sim_err *err)
{
    char set[96];
    snprintf(set, sizeof set, "engine.measured.moe_jit_compile_ms=%d", ms);
    char **sets = sim_xcalloc((size_t)o->nsets + 1, sizeof *sets);
    memcpy(sets, o->sets, (size_t)o->nsets * sizeof *sets);
    sets[o->nsets] = set; /* after the user's: the band is the probe's */
    sim_validate_opts b = *o;
    b.sets = sets;
    b.nsets = o->nsets + 1;
    b.db = NULL;
    sim_results *scratch = NULL;
    int n = draws_of(o, e);
    vrun *r = sim_xcalloc((size_t)n, sizeof *r);
    json_t *row = json_object();
    int rc = sim_results_open(&scratch, NULL, err) || predict(e, &b, scratch, r, n, row, err);
    if (!rc) *mpe = json_incref(json_object_get(row, "mpe"));
    json_decref(row);
    vruns_free(r, n);
    sim_results_close(scratch);
    free(sets);
    return rc;
}

/* A replay that stalled on fused-MoE compiles, replayed again at the
 * fastest and slowest compile a lent H200 host measured
 * (SIM_MOE_COMPILE_PROBE_*): each measured mean's error at both ends, so
 * the report says how much the one input no table measures moves it
 * (docs/validation.md §1). */
static int compile_band(const vexp *e, const sim_validate_opts *o, json_t *row, sim_err *err)
{
    const int ms[2] = {SIM_MOE_COMPILE_PROBE_LO_MS, SIM_MOE_COMPILE_PROBE_HI_MS};
    json_t *end[2] = {NULL, NULL};
    int rc = band_end(e, o, ms[0], &end[0], err) || band_end(e, o, ms[1], &end[1], err);
    if (!rc) {
        json_t *mpe = json_object();
        const char *metric;
        json_t *m;
        json_object_foreach(end[0], metric, m)
        {
            const json_t *lo = json_object_get(m, "mean"),
                         *hi = json_object_get(json_object_get(end[1], metric), "mean");
            if (lo && hi) json_object_set_new(mpe, metric, json_pack("{s:[O,O]}", "mean", lo, hi));
        }
        json_object_set_new(row, "compile_band", json_pack("{s:[i,i], s:o}", "kernel_ms", ms[0], ms[1], "mpe", mpe));
    }
    json_decref(end[0]);
    json_decref(end[1]);
    return rc;
}

/* Whether the user set the compile time (--set engine.measured.
 * moe_jit_compile_ms=...): then the band, the default's uncertainty, is
 * theirs to sweep, and not replayed. */
static bool sets_compile_time(const sim_validate_opts *o)
{
    static const char key[] = "engine.measured.moe_jit_compile_ms=";
    for (int i = 0; i < o->nsets; i++)
        if (!strncmp(o->sets[i], key, sizeof key - 1)) return true;
    return false;
}

/* One experiment's row of the report. */
static int one(const vexp *e, const sim_validate_opts *o, sim_results *db, json_t *row, sim_err *err)
{
    json_t *cfg = json_array();
    for (int i = 0; i < e->nsets; i++) json_array_append_new(cfg, json_string(e->sets[i]));
    for (int i = 0; i < o->nsets; i++) /* then the user's, which win (it once left them out) */
        json_array_append_new(cfg, json_string(o->sets[i]));
    json_object_set_new(row, "id", json_string(e->id));
    json_object_set_new(row, "model", json_string(e->model));
    if (e->model_via[0]) json_object_set_new(row, "model_via", json_string(e->model_via));
    if (e->hw_via[0]) json_object_set_new(row, "hardware_via", json_string(e->hw_via));
    if (e->engine_note[0]) json_object_set_new(row, "engine_note", json_string(e->engine_note));
    json_object_set_new(row, "gpu", json_string(e->gpu));
    json_object_set_new(row, "tp", json_integer(e->tp));
    json_object_set_new(row, "workload", json_string(e->workload));
    json_object_set_new(row, "config", cfg);
    json_object_set_new(row, "measured", json_deep_copy(e->measured));
    if (e->why[0]) {
        json_object_set_new(row, "status", json_string("not expressible"));
        json_object_set_new(row, "why", json_string(e->why));
        return 0;
    }
    int n = draws_of(o, e);
    vrun *r = sim_xcalloc((size_t)n, sizeof *r);
    json_t *pred = json_object();
    int rc = 0;
    if (predict(e, o, db, r, n, pred, err)) { /* this experiment's config: the others still run */
        char who[600];                        /* the message may name the file and the experiment already: said once */
        snprintf(who, sizeof who, "experiment '%s': ", e->id);
        fprintf(stderr, "kvsim validate: %s%s\n", strstr(err->msg, who) ? "" : who, err->msg);
        json_object_set_new(row, "status", json_string("not replayed"));
        json_object_set_new(row, "why", json_string(err->msg));
        err->msg[0] = 0;
    } else {
        char limit[64];
        snprintf(limit, sizeof limit, "trace.limit=%lld", (long long)r[0].requests);
        json_array_append_new(cfg, json_string(limit)); /* the first draw's */
        json_object_set_new(row, "status", json_string("ok"));
        json_object_set_new(row, "replayed", json_integer((json_int_t)r[0].requests));
        json_object_update(row, pred);
        vdraw_findings(r, n, row);
        if (json_object_get(row, "moe_compiles") && !sets_compile_time(o)) rc = compile_band(e, o, row, err);
    }
    json_decref(pred);
    vruns_free(r, n);
    return rc;
}

/* The experiments' ids: a list with at least one experiment, each id a
 * string without control bytes (it is printed in tables and terminals)
 * and given once (issue 40 item 7). */
static int check_ids(const char *path, const json_t *xs, sim_err *err)
{
    if (json_array_size(xs) == 0)
        return sim_errf(err, "%s: \"experiments\" is empty: nothing to validate (docs/validation.md has the format)",
                        path);
    size_t i, j;
    const json_t *x, *y;
    json_array_foreach(xs, i, x)
    {
        const char *id = json_string_value(json_object_get(x, "id"));
        if (!id) return sim_errf(err, "%s: experiment %zu has no \"id\" string", path, i + 1);
        if (sim_has_control(id)) {
            char *q = sim_sh_word(id);
            sim_errf(err, "%s: experiment id %s holds a control character: give a printable id", path, q);
            free(q);
            return -1;
        }
        json_array_foreach(xs, j, y)
        {
            const char *other = json_string_value(json_object_get(y, "id"));
            if (j < i && other && !strcmp(id, other))
                return sim_errf(err, "%s: experiments %zu and %zu have the same id '%s': give each its own", path,
                                j + 1, i + 1, id);
        }
    }
    return 0;
}

static json_t *load_file(const char *path, sim_err *err)
{
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        sim_json_file_errf(err, "", path, je.line, je.text, "docs/validation.md has the format");
        return NULL;
    }
    if (!json_is_array(json_object_get(root, "experiments"))) {
        sim_errf(err, "%s: expected an object with an \"experiments\" array (docs/validation.md)", path);
        json_decref(root);
        return NULL;
    }
    if (check_ids(path, json_object_get(root, "experiments"), err)) return json_decref(root), NULL;
    return root;
}

int sim_validate_read(const char *path, int *n, sim_err *err)
{
    json_t *root = load_file(path, err);
    if (!root) return -1;
    size_t i;
    const json_t *x;
    int rc = 0;
    json_array_foreach(json_object_get(root, "experiments"), i, x)
    {
        vexp e;
        rc = vexp_read(&e, path, x, err);
        vexp_free(&e);
        if (rc) break;
    }
    *n = (int)json_array_size(json_object_get(root, "experiments"));
    json_decref(root);
    return rc;
}

/* "a, b, c": the experiments' ids, for the error of an --only that names none. */
static const char *ids_of(const json_t *xs, char *buf, size_t n)
{
    size_t i, at = 0;
    const json_t *x;
    buf[0] = 0;
    json_array_foreach(xs, i, x)
    {
        const char *id = json_string_value(json_object_get(x, "id"));
        if (id && at < n) at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? ", " : "", id);
    }
    return buf;
}

static int each(const sim_validate_opts *o, const json_t *xs, sim_results *db, json_t *rows, sim_err *err)
{
    size_t i;
    const json_t *x;
    json_array_foreach(xs, i, x)
    {
        const char *id = json_string_value(json_object_get(x, "id"));
        if (o->only && id && strcmp(o->only, id)) continue;
        vexp e;
        if (vexp_read(&e, o->measurements, x, err)) return vexp_free(&e), -1;
        json_t *row = json_object();
        json_array_append_new(rows, row);
        int rc = one(&e, o, db, row, err);
        vexp_free(&e);
        if (rc) return -1;
    }
    char ids[1024];
    if (o->only && json_array_size(rows) == 0)
        return sim_errf(err, "%s: no experiment has id '%s' (the ids are: %s)", o->measurements, o->only,
                        ids_of(xs, ids, sizeof ids));
    return 0;
}

int sim_validate(const sim_validate_opts *o, json_t **report, sim_err *err)
{
    *report = NULL;
    json_t *root = load_file(o->measurements, err);
    if (!root) return -1;
    sim_results *db = NULL;
    json_t *rows = json_array();
    int rc = sim_results_open(&db, o->db, err) || each(o, json_object_get(root, "experiments"), db, rows, err);
    sim_results_close(db);
    json_decref(root);
    if (rc) return json_decref(rows), -1;
    *report = json_pack("{s:o, s:o}", "experiments", rows, "median_ape", vexp_medians(rows));
    return 0;
}
