/* sim/slo/probe.c — one probe of `kvsim plan slo`: a split (P prefill, D
 * decode instances, or an aggregated cluster's instances) at one DRAM
 * level, run at every knob point (scope × CPP; disk × remote × load) as
 * one sweep (sim/sweep: parallel `kvsim run` workers, or one Slurm job
 * array under opts.slurm, into the plan's results database, points already
 * recorded skipped), each point read back
 * from its run's summary (runs.summary_json, found by config hash and trace
 * fingerprint, as the sweep finds recorded points) and judged.
 *
 * Judging a point: it is feasible when every target holds: each metric at
 * most its target; the run's SLO attainment (against slo.ttft_ms and
 * slo.tbt_ms or the trace's own per-request SLOs) at least --attainment
 * (0.9 unless given) and the run not overloaded by its own diagnosis
 * (diagnosis.overloaded, sim/serving/diagnose.c) — both dropped by
 * --attainment 0, the explicit way to ignore SLOs; and, without
 * --allow-rejected, no request rejected or lost. For the search it is also
 * split by side: the prefill side fails when a TTFT target does, the
 * decode side when a TBT target does. A miss of SLO attainment is charged
 * to the SLO that more requests miss, as far as the summary tells (how
 * many of p50, p90, p99 of TTFT exceed slo.ttft_ms, of TBT slo.tbt_ms; a
 * trace's own per-request SLOs are not seen here), or to both sides when
 * it cannot tell; an overload to the side of the diagnosis's bottleneck
 * (decode, or else prefill); a rejected or lost request to the busier side
 * (the summary's utilisation.prefill, the prefill busy fraction, against
 * its decode_load — utilisation.decode in a database recorded before
 * decode_load existed, when that was the decode load). A run that failed
 * fails both sides. */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/config/config.h"
#include "sim/config/scope.h"
#include "sim/results/results.h"
#include "sim/slo/slo_int.h"
#include "sim/sweep/sweep.h"

enum { SPLIT_SETS = 3, KNOB_SETS = 3 };

/* "cluster.prefill=P", "cluster.decode=D", "kvstore.dram_bytes=B", or for
 * an aggregated cluster "cluster.instances=P" and the DRAM, which one
 * without LMCache has no tier for (caller frees each); returns how many. */
int slo_split_sets(const slo_plan *pl, int P, int D, int lv, char **sets)
{
    char buf[128];
    int n = 0;
    snprintf(buf, sizeof buf, pl->agg ? "cluster.instances=%d" : "cluster.prefill=%d", P);
    sets[n++] = sim_xstrdup(buf);
    if (!pl->agg) snprintf(buf, sizeof buf, "cluster.decode=%d", D), sets[n++] = sim_xstrdup(buf);
    if (slo_no_cpu_tier(pl->r)) return n;
    snprintf(buf, sizeof buf, "kvstore.dram_bytes=%.17g", pl->r->dram[lv]);
    sets[n++] = sim_xstrdup(buf);
    return n;
}

static int find_point(const sim_slo_result *r, int P, int D, int lv, int knob)
{
    for (int i = 0; i < r->npts; i++) {
        const sim_slo_point *p = &r->pts[i];
        if (p->prefill == P && p->decode == D && p->dram_level == lv && p->knob == knob) return i;
    }
    return -1;
}

int slo_feasible_point(const sim_slo_result *r, int P, int D, int lv)
{
    for (int i = 0; i < r->npts; i++) {
        const sim_slo_point *p = &r->pts[i];
        if (p->prefill == P && p->decode == D && p->dram_level == lv && p->feasible) return i;
    }
    return -1;
}

static const char *const *const load_names = sim_load_names;

int slo_knob_sets(const slo_plan *pl, int k, char (*sets)[64])
{
    const slo_knob *kn = &pl->knob[k];
    const sim_slo_opts *o = pl->o;
    int n = 0;
    if (!pl->agg) {
        snprintf(sets[n++], 64, "cluster.scope=%s", kv_scope_name((kv_scope)kn->scope));
        snprintf(sets[n++], 64, "cluster.cpp_group=%d", kn->cpp);
        return n;
    }
    if (o->nssd) snprintf(sets[n++], 64, "kvstore.ssd_bytes=%.17g", kn->ssd);
    if (o->nremote) snprintf(sets[n++], 64, "kvstore.remote.bytes=%.17g", kn->remote);
    snprintf(sets[n++], 64, "kvstore.load=%s", load_names[kn->load]);
    return n;
}

/* The summary of the run of config hash h, or NULL (none finished). */
static json_t *recorded_summary(sim_results *db, uint64_t h, uint64_t fp, int64_t *run_id)
{
    sqlite3_stmt *st;
    json_t *s = NULL;
    if (sqlite3_prepare_v2(sim_results_handle(db),
                           "SELECT id, summary_json FROM runs WHERE config_hash=?1 AND trace_fingerprint=?2"
                           " AND summary_json IS NOT NULL ORDER BY id LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return NULL;
    char hash[17], fps[17];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)h);
    snprintf(fps, sizeof fps, "%016llx", (unsigned long long)fp);
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, fps, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW) {
        *run_id = sqlite3_column_int64(st, 0);
        s = json_loads((const char *)sqlite3_column_text(st, 1), 0, NULL);
    }
    sqlite3_finalize(st);
    return s;
}

static double num(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    return json_number_value(b ? json_object_get(v, b) : v);
}

double sim_slo_decode_load(const json_t *summary)
{
    const json_t *v = json_object_get(summary, "decode_load");
    return v ? json_number_value(v) : num(summary, "utilisation", "decode");
}

static void read_summary(const json_t *s, sim_slo_point *p)
{
    for (int t = 0; t < SIM_SLO_NTARGETS; t++) { /* null (no request completed): NaN, which meets no target */
        const json_t *v = json_object_get(json_object_get(s, sim_slo_metric_key(t)), sim_slo_stat_key(t));
        p->value[t] = json_is_number(v) ? json_number_value(v) : NAN;
    }
    p->attainment = num(s, "slo_attainment", NULL);
    p->util_prefill = num(s, "utilisation", "prefill");
    p->decode_load = sim_slo_decode_load(s);
    p->hit_rate = num(s, "hit_rate_tokens", NULL);
    p->goodput = num(s, "goodput_rps", NULL);
    p->tokens = num(s, "tokens", NULL);
    p->sim_seconds = num(s, "sim_seconds", NULL);
    p->requests = (int64_t)num(s, "requests", NULL);
    p->rejected = (int64_t)(num(s, "rejected", "total") + num(s, "lost", NULL));
    const json_t *d = json_object_get(s, "diagnosis");
    p->overloaded = json_is_true(json_object_get(d, "overloaded"));
    const char *b = json_string_value(json_object_get(d, "bottleneck"));
    snprintf(p->busiest, sizeof p->busiest, "%s", b ? b : "");
    p->busiest_util = num(d, "utilisation", NULL);
}

/* How many of p50, p90, p99 of metric m (0 TTFT, 1 TBT) exceed slo: a
 * coarse share of the requests that miss it (0: under 1%, 3: over half). */
static int miss_rank(const sim_slo_point *p, int m, double slo)
{
    int k = 0;
    for (int s = 1; s < SIM_SLO_NSTATS; s++) k += p->value[m * SIM_SLO_NSTATS + s] > slo;
    return k;
}

void slo_judge(const slo_plan *pl, sim_slo_point *p)
{
    const sim_slo_opts *o = pl->o;
    bool miss[2] = {!p->ran, !p->ran}; /* TTFT side, TBT side */
    for (int t = 0; t < SIM_SLO_NTARGETS; t++)
        if (o->target[t] > 0 && !(p->value[t] <= o->target[t])) miss[!sim_slo_is_ttft(t)] = true;
    bool slo = o->attainment > 0;
    bool attain = slo && !(p->attainment >= o->attainment), over = slo && p->overloaded;
    bool reject = !o->allow_rejected && p->rejected;
    int rt = miss_rank(p, 0, pl->r->slo_ttft_ms), rb = miss_rank(p, 1, pl->r->slo_tbt_ms);
    if (attain) { /* charged to the SLO more requests miss; to both when that cannot be told */
        miss[0] |= rt >= rb;
        miss[1] |= rb >= rt;
    }
    if (over) miss[!strcmp(p->busiest, "decode")] = true;      /* charged to the bottleneck's side */
    if (reject) miss[p->util_prefill < p->decode_load] = true; /* charged to the busier side */
    p->prefill_ok = !miss[0];
    p->decode_ok = !miss[1];
    p->feasible = p->ran && !miss[0] && !miss[1] && !attain && !over && !reject;
}

int slo_read_point(slo_plan *pl, sim_results *db, char **sets, int nsets, sim_slo_point *p, sim_err *err)
{
    sim_config cfg;
    if (sim_config_load(&cfg, pl->o->config, sets, nsets, err)) return -1;
    json_t *s = recorded_summary(db, cfg.hash, pl->r->fingerprint, &p->run_id);
    sim_config_free(&cfg);
    p->ran = s != NULL;
    if (s) read_summary(s, p);
    json_decref(s);
    slo_judge(pl, p);
    return 0;
}

static sim_slo_point *append_point(sim_slo_result *r)
{
    if ((r->npts & (r->npts - 1)) == 0) /* 0, 1, 2, 4, ...: grow by doubling */
        r->pts = sim_xrealloc(r->pts, (size_t)(r->npts ? 2 * r->npts : 1) * sizeof *r->pts);
    sim_slo_point *p = &r->pts[r->npts++];
    *p = (sim_slo_point){0};
    return p;
}

/* Read every knob point of the split not read yet (sets: the sweep's base). */
static int read_knobs(slo_plan *pl, sim_results *db, char **sets, int nsets, const int *split, sim_err *err)
{
    char ks[KNOB_SETS][64], **all = sim_xcalloc((size_t)nsets + KNOB_SETS, sizeof *all);
    memcpy(all, sets, (size_t)nsets * sizeof *all);
    int rc = 0;
    for (int k = 0; k < pl->nknob && rc == 0; k++) {
        if (find_point(pl->r, split[0], split[1], split[2], k) >= 0) continue;
        int n = slo_knob_sets(pl, k, ks);
        for (int i = 0; i < n; i++) all[nsets + i] = ks[i];
        const slo_knob *kn = &pl->knob[k];
        sim_slo_point p = {.prefill = split[0],
                           .decode = split[1],
                           .dram_level = split[2],
                           .knob = k,
                           .scope = kn->scope,
                           .cpp = kn->cpp,
                           .load = kn->load,
                           .ssd = kn->ssd,
                           .remote = kn->remote,
                           .probe = pl->r->nprobes};
        if ((rc = slo_read_point(pl, db, all, nsets + n, &p, err)) == 0) *append_point(pl->r) = p;
    }
    free(all);
    return rc;
}

int slo_sweep(slo_plan *pl, char **sets, int n, const char *grid, slo_reader read, const void *ctx, sim_err *err)
{
    const sim_slo_opts *o = pl->o;
    sim_slo_result *r = pl->r;
    sim_sweep_opts so = {.config = o->config,
                         .db = pl->db,
                         .grid_spec = grid,
                         .base = sets,
                         .nbase = n,
                         .jobs = o->jobs,
                         .tty = o->tty,
                         .slurm = o->slurm,
                         .t0 = sim_wall_seconds()};
    sim_sweep s;
    int rc = sim_sweep_open(&s, &so, err);
    if (rc == 0) rc = sim_sweep_run(&s, err);
    if (rc == 0) rc = read(pl, s.db, sets, n, ctx, err);
    r->runs += s.finished - s.failed;
    r->recorded += s.recorded;
    r->failed += s.failed;
    pl->stop_signal = s.stop_signal;
    sim_sweep_free(&s);
    return rc;
}

/* slo_sweep's reader of a probe: every knob point of the split. */
static int read_split(slo_plan *pl, sim_results *db, char **sets, int n, const void *ctx, sim_err *err)
{
    return read_knobs(pl, db, sets, n, ctx, err);
}

/* Run the split's points not recorded yet, as one sweep over the knobs, and read them. */
static int run_split(slo_plan *pl, const int *split, sim_err *err)
{
    char **sets = sim_xcalloc((size_t)pl->nbase + SPLIT_SETS, sizeof *sets);
    memcpy(sets, pl->base, (size_t)pl->nbase * sizeof *sets);
    int n = pl->nbase + slo_split_sets(pl, split[0], split[1], split[2], sets + pl->nbase);
    int rc = slo_sweep(pl, sets, n, pl->grid, read_split, split, err);
    for (int i = pl->nbase; i < n; i++) free(sets[i]);
    free(sets);
    return rc;
}

static const char *verdict(const slo_plan *pl, const slo_probe *pr)
{
    if (pr->feasible) return "feasible";
    if (pl->agg) return "short";
    if (!pr->prefill_ok && !pr->decode_ok) return "both sides short";
    return !pr->prefill_ok ? "prefill side short" : pr->decode_ok ? "no single point passes" : "decode side short";
}

int slo_probe_run(slo_plan *pl, int P, int D, int lv, const char *why, slo_probe *out, sim_err *err)
{
    sim_slo_result *r = pl->r;
    int split[3] = {P, D, lv}, have = 0;
    for (int k = 0; k < pl->nknob; k++) have += find_point(r, P, D, lv, k) >= 0;
    bool fresh = have < pl->nknob;
    r->nprobes += fresh;
    if (fresh && run_split(pl, split, err)) return -1;
    *out = (slo_probe){.best = -1};
    for (int k = 0; k < pl->nknob; k++) {
        int j = find_point(r, P, D, lv, k);
        out->prefill_ok |= r->pts[j].prefill_ok;
        out->decode_ok |= r->pts[j].decode_ok;
        out->feasible |= r->pts[j].feasible;
        if (r->pts[j].feasible && out->best < 0) out->best = j;
    }
    char split_name[64];
    if (pl->agg) snprintf(split_name, sizeof split_name, "%d instance%s", P, P == 1 ? "" : "s");
    else snprintf(split_name, sizeof split_name, "%dP%dD", P, D);
    if (fresh)
        fprintf(stderr, "kvsim plan slo: probe %d (%s): %s, DRAM %.4g GB/%s: %s\n", r->nprobes, why, split_name,
                r->dram[lv] / 1e9, pl->agg && r->instances_per_node <= 1 ? "instance" : "node", verdict(pl, out));
    return 0;
}

void slo_describe_miss(const sim_slo_opts *o, const sim_slo_point *p, char *buf, size_t n)
{
    if (!p->ran) return (void)snprintf(buf, n, "the run failed");
    for (int t = 0; t < SIM_SLO_NTARGETS; t++)
        if (o->target[t] > 0 && isnan(p->value[t]))
            return (void)snprintf(buf, n, "%s undefined: no request completed", sim_slo_label(t));
        else if (o->target[t] > 0 && !(p->value[t] <= o->target[t]))
            return (void)snprintf(buf, n, "%s %.1f ms > %g ms", sim_slo_label(t), p->value[t], o->target[t]);
    if (o->attainment > 0 && !(p->attainment >= o->attainment))
        return (void)snprintf(buf, n, "SLO attainment %.4f < %g", p->attainment, o->attainment);
    if (o->attainment > 0 && p->overloaded)
        return (void)snprintf(buf, n, "overloaded (busiest: %s %.2f)", p->busiest, p->busiest_util);
    if (p->rejected > 0 && !o->allow_rejected)
        return (void)snprintf(buf, n, "%lld requests rejected or lost", (long long)p->rejected);
    snprintf(buf, n, "all targets met");
}
