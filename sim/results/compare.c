/* sim/results/compare.c — `kvsim compare`: the difference of each headline
 * metric between groups of runs, with a 95% interval, per load, and where
 * the order flips (sim/results/compare.h; issue 30 item 3).
 *
 * Grouping. Every completed run's config is flattened to dotted keys. Its
 * group is its value of the --by key; its load is trace.speed; its context
 * is everything else but seed (and the trace's fingerprint), so that runs
 * are only compared with runs that differ in the --by key, the seed and
 * nothing else. A context is labelled by the keys that differ between
 * contexts ("cluster.scope=global").
 *
 * Intervals. For value v against the baseline b at one load, with x the
 * metric per run: when two or more seeds have a run in both groups, the
 * paired t interval over d_s = x_v(s) − x_b(s): mean(d) ± t(0.975, n−1) ·
 * sd(d)/√n. Otherwise, with two or more runs a side, Welch's interval:
 * mean_v − mean_b ± t(0.975, ν) · √(s_v²/n_v + s_b²/n_b) with the
 * Welch–Satterthwaite ν. With one run a side there is no interval. A run
 * whose metric is null (no request had one) is left out of that metric. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_statistics_double.h>
#include <sqlite3.h>

#include "sim/results/compare.h"
#include "sim/results/results.h"

const char *const sim_compare_default_metrics[] = {"ttft_ms.mean", "ttft_ms.p90",    "tbt_ms.p90",
                                                   "tbt_ms.p99",   "slo_attainment", "hit_rate_blocks"};
const int sim_compare_ndefault_metrics =
    (int)(sizeof sim_compare_default_metrics / sizeof *sim_compare_default_metrics);

typedef struct cmp_run {
    int64_t id;
    json_t *config;  /* flattened: dotted key -> value */
    json_t *summary; /* flattened */
    int64_t seed;
    char *value;   /* its --by value as text (NULL: the key is absent) */
    char *context; /* canonical text of the config without seed, --by and trace.speed */
    double speed;
} cmp_run;

typedef struct cmp {
    const sim_compare_opts *o;
    cmp_run *runs;
    int n;
    json_t *values;   /* --by values in first-appearance order (strings) */
    json_t *contexts; /* context texts in first-appearance order */
    json_t *speeds;   /* sorted numbers */
    json_t *dups;     /* {run, same_as}: runs that repeat an earlier one, left out */
} cmp;

/* A config value as compare prints it: a string as is, unless it holds a
 * control byte, which no terminal gets raw (quoted as sim_sh_word does,
 * issue 40 item 7); anything else as compact JSON. */
static char *value_text(const json_t *v)
{
    const char *s = json_string_value(v);
    if (s) return sim_has_control(s) ? sim_sh_word(s) : sim_xstrdup(s);
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

static int classify(cmp *c, cmp_run *r, json_t *config, const char *fp)
{
    r->config = json_object();
    sim_json_flatten(config, "", r->config);
    const json_t *v = json_object_get(r->config, c->o->by), *sp = json_object_get(r->config, "trace.speed");
    r->value = v ? value_text(v) : NULL;
    r->speed = json_is_number(sp) ? json_number_value(sp) : 1.0;
    json_t *ctx = json_deep_copy(r->config);
    json_object_del(ctx, "seed");
    json_object_del(ctx, c->o->by);
    json_object_del(ctx, "trace.speed");
    json_object_set_new(ctx, "trace_fingerprint", json_string(fp ? fp : ""));
    r->context = json_dumps(ctx, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(ctx);
    return 0;
}

static bool selected(const sim_compare_opts *o, int64_t id)
{
    for (int i = 0; o->ids && i < o->nids; i++)
        if (o->ids[i] == id) return true;
    return !o->ids;
}

/* The earlier run r repeats (the same --by value, context, load and seed:
 * the same config and seed, so the same answer), or NULL. Counting it
 * again would add a sample that carries no information and narrow the
 * interval (issue 40 item 1). */
static const cmp_run *repeated(const cmp *c, const cmp_run *r)
{
    for (int i = 0; i < c->n; i++) {
        const cmp_run *e = &c->runs[i];
        if (e != r && e->seed == r->seed && e->speed == r->speed && !strcmp(e->context, r->context) &&
            (e->value && r->value ? !strcmp(e->value, r->value) : e->value == r->value))
            return e;
    }
    return NULL;
}

static void free_run(cmp_run *r)
{
    json_decref(r->config);
    json_decref(r->summary);
    free(r->value);
    free(r->context);
}

/* Keep the run just added unless it repeats an earlier one; then name it in c->dups. */
static void keep_unless_repeated(cmp *c)
{
    cmp_run *r = &c->runs[c->n - 1];
    const cmp_run *e = repeated(c, r);
    if (!e) return;
    json_array_append_new(c->dups, json_pack("{s:I, s:I}", "run", (json_int_t)r->id, "same_as", (json_int_t)e->id));
    free_run(r);
    c->n--;
}

/* Every completed run of the database (of o->ids when given), in id order, classified. */
static int load_runs(cmp *c, sim_err *err)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rc = sim_results_open_read(c->o->db, &db, err);
    if (!rc && sqlite3_prepare_v2(db,
                                  "SELECT id, config_json, summary_json, seed, trace_fingerprint FROM runs"
                                  " WHERE summary_json IS NOT NULL ORDER BY id",
                                  -1, &st, NULL) != SQLITE_OK)
        rc = sim_errf(err, "%s: %s", c->o->db, sqlite3_errmsg(db));
    while (!rc && sqlite3_step(st) == SQLITE_ROW) {
        json_t *config, *summary;
        int64_t id = sqlite3_column_int64(st, 0);
        if (!selected(c->o, id)) continue;
        rc = sim_results_run_json(c->o->db, id, (const char *)sqlite3_column_text(st, 1),
                                  (const char *)sqlite3_column_text(st, 2), &config, &summary, err);
        if (rc) break;
        c->runs = sim_xrealloc(c->runs, (size_t)(c->n + 1) * sizeof *c->runs);
        cmp_run *r = &c->runs[c->n++];
        *r = (cmp_run){.id = id, .summary = json_object(), .seed = sqlite3_column_int64(st, 3)};
        sim_json_flatten(summary, "", r->summary);
        classify(c, r, config, (const char *)sqlite3_column_text(st, 4));
        keep_unless_repeated(c);
        json_decref(config);
        json_decref(summary);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (!rc && !c->n)
        rc = sim_errf(err, "%s holds no completed run: nothing to compare (" SIM_RESULTS_HOW ")", c->o->db);
    return rc;
}

static bool speed_kept(const sim_compare_opts *o, double s)
{
    for (int i = 0; i < o->nspeeds; i++)
        if (fabs(o->speeds[i] - s) <= 1e-9 * fmax(1, fabs(s))) return true;
    return !o->speeds;
}

static void add_unique_string(json_t *arr, const char *s)
{
    size_t i;
    json_t *x;
    json_array_foreach(arr, i, x) if (!strcmp(json_string_value(x), s)) return;
    json_array_append_new(arr, json_string(s));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The values, contexts and sorted speeds of the runs --speed keeps. */
static void collect_axes(cmp *c)
{
    c->values = json_array();
    c->contexts = json_array();
    c->speeds = json_array();
    double *sp = sim_xcalloc((size_t)c->n + 1, sizeof *sp);
    int ns = 0;
    for (int i = 0; i < c->n; i++) {
        cmp_run *r = &c->runs[i];
        if (!r->value || !speed_kept(c->o, r->speed)) continue;
        add_unique_string(c->values, r->value);
        add_unique_string(c->contexts, r->context);
        int j = 0;
        while (j < ns && sp[j] != r->speed) j++;
        if (j == ns) sp[ns++] = r->speed;
    }
    qsort(sp, (size_t)ns, sizeof *sp, cmp_double);
    for (int j = 0; j < ns; j++) json_array_append_new(c->speeds, json_real(sp[j]));
    free(sp);
}

/* The trace.speed values of the runs, each once ("1,2"). */
static void runs_speeds(const cmp *c, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < c->n && at < size; i++) {
        bool seen = false;
        for (int j = 0; j < i; j++) seen |= c->runs[j].speed == c->runs[i].speed;
        if (!seen) at += (size_t)snprintf(buf + at, size - at, "%s%g", at ? "," : "", c->runs[i].speed);
    }
}

/* --by names what a comparison is made over, not a key of its groups:
 * the seeds pair the runs and the loads are the rows. */
static int check_by(const cmp *c, sim_err *err)
{
    if (!strcmp(c->o->by, "seed"))
        return sim_errf(err, "--by seed: the seeds are what each interval is taken over (runs are paired by "
                             "seed); compare by a config key whose values differ (e.g. --by policy.router)");
    if (!strcmp(c->o->by, "trace.speed"))
        return sim_errf(err, "--by trace.speed: the loads are compare's rows (one per trace.speed); compare by a "
                             "config key whose values differ (e.g. --by policy.router), --speed keeps some loads");
    return 0;
}

/* Each --speed value some run has, else an error naming the runs' own. */
static int check_speeds(const cmp *c, sim_err *err)
{
    for (int s = 0; s < c->o->nspeeds; s++) {
        bool found = false;
        for (int i = 0; i < c->n && !found; i++)
            found = fabs(c->runs[i].speed - c->o->speeds[s]) <= 1e-9 * fmax(1, fabs(c->o->speeds[s]));
        if (found) continue;
        char speeds[512];
        runs_speeds(c, speeds, sizeof speeds);
        return sim_errf(err, "--speed %g: no run of %s has this trace.speed (the runs': %s)", c->o->speeds[s], c->o->db,
                        speeds);
    }
    return 0;
}

/* Errors about the --by key, its values, the baseline and the metrics. */
static int check_options(cmp *c, const char **baseline, sim_err *err)
{
    if (json_array_size(c->values) == 0) {
        bool anywhere = false;
        for (int i = 0; i < c->n; i++) anywhere |= c->runs[i].value != NULL;
        if (!anywhere)
            return sim_errf(err,
                            "--by %s: no run of %s has this config key (e.g. policy.router; kvsim config lists keys)",
                            c->o->by, c->o->db);
        char speeds[512];
        runs_speeds(c, speeds, sizeof speeds);
        return sim_errf(err, "--speed: no run of %s has one of these trace.speed values (the runs': %s)", c->o->db,
                        speeds);
    }
    if (json_array_size(c->values) < 2)
        return sim_errf(err,
                        "--by %s: every run of %s has the value %s; two values are needed to compare (add runs of "
                        "another, e.g. kvsim sweep --grid %s=%s,OTHER --db %s)",
                        c->o->by, c->o->db, json_string_value(json_array_get(c->values, 0)), c->o->by,
                        json_string_value(json_array_get(c->values, 0)), c->o->db);
    *baseline = c->o->baseline ? c->o->baseline : json_string_value(json_array_get(c->values, 0));
    size_t i;
    json_t *x;
    bool found = false;
    json_array_foreach(c->values, i, x) found |= !strcmp(json_string_value(x), *baseline);
    if (!found) {
        char *all = json_dumps(c->values, JSON_COMPACT);
        sim_errf(err, "--baseline %s: no run of %s has %s=%s (its values: %s)", *baseline, c->o->db, c->o->by,
                 *baseline, all);
        free(all);
        return -1;
    }
    return 0;
}

static int check_metrics(const cmp *c, const char *const *metrics, int nm, sim_err *err)
{
    for (int m = 0; m < nm; m++) {
        if (!strcmp(metrics[m], "run_id"))
            return sim_errf(err,
                            "--metric run_id: the run's number in %s, not a result of it (e.g. ttft_ms.mean, "
                            "tbt_ms.p90, slo_attainment, goodput_rps)",
                            c->o->db);
        bool found = false;
        for (int i = 0; i < c->n && !found; i++)
            found = json_is_number(json_object_get(c->runs[i].summary, metrics[m]));
        if (!found)
            return sim_errf(err,
                            "--metric %s: no run of %s has this number in its summary (e.g. ttft_ms.mean, "
                            "tbt_ms.p90, slo_attainment, goodput_rps)",
                            metrics[m], c->o->db);
    }
    return 0;
}

/* ---- statistics --------------------------------------------------------------- */

typedef struct cmp_side {
    double x[256];
    int64_t seed[256];
    int n;
} cmp_side;

static void side_of(const cmp *c, const char *context, const char *value, double speed, const char *metric, cmp_side *s)
{
    s->n = 0;
    for (int i = 0; i < c->n && s->n < 256; i++) {
        const cmp_run *r = &c->runs[i];
        if (!r->value || strcmp(r->value, value) || strcmp(r->context, context) || r->speed != speed) continue;
        const json_t *v = json_object_get(r->summary, metric);
        if (!json_is_number(v) || !isfinite(json_number_value(v))) continue;
        s->x[s->n] = json_number_value(v);
        s->seed[s->n++] = r->seed;
    }
}

/* The paired differences over seeds both sides have, into d; their count. */
static int paired(const cmp_side *b, const cmp_side *v, double *d, double *bx, double *vx)
{
    int n = 0;
    for (int i = 0; i < v->n; i++)
        for (int j = 0; j < b->n; j++)
            if (v->seed[i] == b->seed[j]) {
                bx[n] = b->x[j];
                vx[n] = v->x[i];
                d[n] = v->x[i] - b->x[j];
                n++;
                break;
            }
    return n;
}

/* Whether x[0..n) are all the same number. */
static bool constant(const double *x, int n)
{
    for (int i = 1; i < n; i++)
        if (x[i] != x[0]) return false;
    return true;
}

/* One row: the means, the difference and its interval. seeds_vary is false
 * when neither side changes with the seed: the interval then has zero width,
 * which is no evidence (issue 40 item 10); null with one run a side. */
static json_t *stat_row(const cmp_side *b, const cmp_side *v)
{
    double d[256], bx[256], vx[256], diff, half = NAN, bm, vm;
    int np = paired(b, v, d, bx, vx), n;
    const char *method;
    bool flat;
    if (np >= 2) {
        method = "paired", n = np;
        bm = gsl_stats_mean(bx, 1, (size_t)np), vm = gsl_stats_mean(vx, 1, (size_t)np);
        diff = gsl_stats_mean(d, 1, (size_t)np);
        half = gsl_cdf_tdist_Pinv(0.975, np - 1) * gsl_stats_sd_m(d, 1, (size_t)np, diff) / sqrt(np);
        flat = constant(bx, np) && constant(vx, np);
    } else {
        method = b->n >= 2 && v->n >= 2 ? "welch" : "none", n = v->n < b->n ? v->n : b->n;
        bm = gsl_stats_mean(b->x, 1, (size_t)b->n), vm = gsl_stats_mean(v->x, 1, (size_t)v->n);
        diff = vm - bm;
        flat = constant(b->x, b->n) && constant(v->x, v->n);
        if (b->n >= 2 && v->n >= 2) {
            double qb = gsl_stats_variance(b->x, 1, (size_t)b->n) / b->n;
            double qv = gsl_stats_variance(v->x, 1, (size_t)v->n) / v->n, se = sqrt(qb + qv);
            double df = (qb + qv) * (qb + qv) / (qb * qb / (b->n - 1) + qv * qv / (v->n - 1));
            half = se > 0 ? gsl_cdf_tdist_Pinv(0.975, df) * se : 0;
        }
    }
    json_t *row =
        json_pack("{s:f, s:f, s:f, s:i, s:s}", "baseline", bm, "value", vm, "diff", diff, "n", n, "method", method);
    json_object_set_new(row, "lo", isnan(half) ? json_null() : json_real(diff - half));
    json_object_set_new(row, "hi", isnan(half) ? json_null() : json_real(diff + half));
    json_object_set_new(row, "rel_pct", bm != 0 ? json_real(100 * diff / fabs(bm)) : json_null());
    json_object_set_new(row, "seeds_vary", isnan(half) ? json_null() : json_boolean(!flat));
    return row;
}

/* Which way is better for a metric: "lower" for times and HBM footprints, "higher" for rates
 * and counts of success, NULL when neither; steady_state.X as X. */
static const char *better_of(const char *metric)
{
    if (!strncmp(metric, "steady_state.", 13)) metric += 13;
    static const char *const higher[] = {"slo_attainment", "goodput_rps", "hit_rate",
                                         "chunk_hit_rate", "completed",   "effective"};
    if (strstr(metric, "_ms") || strstr(metric, "gpu_s") || strstr(metric, "rejected") || !strcmp(metric, "lost") ||
        strstr(metric, "peak_footprint"))
        return "lower";
    for (size_t i = 0; i < sizeof higher / sizeof *higher; i++)
        if (!strncmp(metric, higher[i], strlen(higher[i]))) return "higher";
    return NULL;
}

/* The order of a difference: "better", "worse" (with a direction), else
 * "higher", "lower"; "equal" when 0. */
static const char *order_of(double diff, const char *better)
{
    if (diff == 0) return "equal";
    if (!better) return diff > 0 ? "higher" : "lower";
    return (diff < 0) == !strcmp(better, "lower") ? "better" : "worse";
}

#define SEEDS_FLAT "the seeds vary neither side of this metric"

/* The order, or "not distinguishable" when the interval includes 0; with
 * one run a side only the direction (no verdict from one sample), and none
 * when the seeds change neither side (an interval of zero width). */
static const char *verdict(const json_t *row, const char *better)
{
    double diff = json_number_value(json_object_get(row, "diff"));
    const json_t *lo = json_object_get(row, "lo"), *hi = json_object_get(row, "hi");
    if (!json_is_number(lo))
        return diff == 0  ? "equal (one seed: no verdict)"
               : diff > 0 ? "higher (one seed: no verdict)"
                          : "lower (one seed: no verdict)";
    if (json_is_false(json_object_get(row, "seeds_vary"))) return SEEDS_FLAT;
    if (diff != 0 && json_number_value(lo) <= 0 && json_number_value(hi) >= 0) return "not distinguishable";
    return order_of(diff, better);
}

/* ---- the order over the load axis ---------------------------------------------- */

/* Speeds from..to of rows ("1" or "1–2"). */
static void speed_range(FILE *f, const json_t *rows, size_t from, size_t to)
{
    fprintf(f, "%g", json_number_value(json_object_get(json_array_get(rows, from), "speed")));
    if (to > from) fprintf(f, "–%g", json_number_value(json_object_get(json_array_get(rows, to), "speed")));
}

static double speed_at(const json_t *rows, size_t i)
{
    return json_number_value(json_object_get(json_array_get(rows, i), "speed"));
}

/* The order of row i; only the direction where it has one run a side. */
static const char *row_order(const json_t *rows, size_t i, const char *better)
{
    const json_t *row = json_array_get(rows, i);
    return order_of(json_number_value(json_object_get(row, "diff")),
                    json_is_number(json_object_get(row, "lo")) ? better : NULL);
}

/* "; LEAD at speed a, b" over the rows whose verdict is `verdict`. */
static void speeds_with(FILE *f, const json_t *rows, const char *verdict, const char *lead)
{
    bool any = false;
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row) if (!strcmp(json_string_value(json_object_get(row, "verdict")), verdict))
    {
        fprintf(f, "%s%g", any ? ", " : lead, json_number_value(json_object_get(row, "speed")));
        any = true;
    }
}

/* The speeds of rows as a list ("1, 1.5, 3"). */
static void speed_list(FILE *f, const json_t *rows)
{
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row)
        fprintf(f, "%s%g", i ? ", " : "", json_number_value(json_object_get(row, "speed")));
}

/* The order segments of `told` (rows with an order, sorted by speed):
 * "better up to speed 1, worse from 1.5" (two) or "better at speed
 * 0.5–1, worse at 1.5, better at 2" (more); "at every load" only when
 * `all` (no load of the comparison is left out). */
static void order_text(FILE *f, const json_t *told, bool all, const char *baseline, const char *better)
{
    size_t n = json_array_size(told), segs = 1, flip = 0;
    for (size_t i = 1; i < n; i++) segs += strcmp(row_order(told, i, better), row_order(told, i - 1, better)) != 0;
    for (size_t i = 0, start = 0, seg = 0; i < n; i++) {
        const char *o = row_order(told, i, better);
        if (i + 1 < n && !strcmp(o, row_order(told, i + 1, better))) continue;
        fprintf(f, "%s%s", seg ? ", " : "", o);
        if (!seg) fprintf(f, " %s %s", strcmp(o, "equal") ? "than" : "to", baseline);
        if (segs == 1 && all) fputs(" at every load (speed ", f), speed_range(f, told, 0, n - 1), fputc(')', f);
        else if (segs == 1) fputs(" at speed ", f), speed_list(f, told);
        else if (segs == 2)
            fprintf(f, seg ? " from speed " : " up to speed "), speed_range(f, told, seg ? start : i, seg ? start : i),
                flip = seg ? flip : i;
        else fputs(" at speed ", f), speed_range(f, told, start, i);
        seg++, start = i + 1;
    }
    if (segs == 2)
        fprintf(f, ": the order flips between speed %g and %g", speed_at(told, flip), speed_at(told, flip + 1));
    else if (segs > 2) fprintf(f, ": the order flips %zu times", segs - 1);
}

/* Where the sign of the difference changes along the sorted speeds, over
 * the loads whose verdict gives an order; the loads whose interval
 * includes 0 are named apart, never ordered (an order or a flip there is
 * noise), and when no load has an order the sentence says only that.
 * NULL with fewer than two rows. */
static json_t *flips(const json_t *rows, const char *value, const char *baseline, const char *better)
{
    size_t n = json_array_size(rows), i;
    if (n < 2) return json_null();
    json_t *told = json_array(), *row;
    json_array_foreach(rows, i, row) if (strcmp(json_string_value(json_object_get(row, "verdict")),
                                                "not distinguishable")) json_array_append(told, row);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (json_array_size(told)) {
        fprintf(f, "%s ", value);
        order_text(f, told, json_array_size(told) == n, baseline, better);
        speeds_with(f, rows, "not distinguishable", "; not distinguishable (interval includes 0) at speed ");
    } else {
        fprintf(f, "%s not distinguishable from %s at any load (interval includes 0 at speed ", value, baseline);
        speed_range(f, rows, 0, n - 1), fputc(')', f);
    }
    speeds_with(f, rows, SEEDS_FLAT, "; " SEEDS_FLAT " at speed ");
    fclose(f);
    json_decref(told);
    json_t *j = json_string(text);
    free(text);
    return j;
}

/* ---- building the answer --------------------------------------------------------- */

/* "key=value ..." over the keys whose values differ between contexts. */
static json_t *context_label(const cmp *c, const char *context)
{
    json_t *mine = json_loads(context, 0, NULL);
    char label[512] = "";
    size_t len = 0;
    const char *key;
    json_t *v;
    json_object_foreach(mine, key, v)
    {
        bool differs = false;
        size_t i;
        json_t *other;
        json_array_foreach(c->contexts, i, other)
        {
            json_t *o = json_loads(json_string_value(other), 0, NULL);
            differs |= !json_equal(v, json_object_get(o, key));
            json_decref(o);
        }
        if (!differs || len >= sizeof label) continue;
        char *t = value_text(v);
        len += (size_t)snprintf(label + len, sizeof label - len, "%s%s=%s", len ? " " : "", key, t);
        free(t);
    }
    json_decref(mine);
    return json_string(len ? label : "all runs");
}

/* What the 95% interval covers: the seeds redraw the workload only under
 * trace.resample (docs/trace.md); otherwise they vary the estimator noise
 * and the random policies alone. Written into buf. */
static const char *coverage(const cmp *c, char *buf, size_t n)
{
    const char *first = NULL;
    bool mixed = false;
    for (int i = 0; i < c->n; i++) {
        const char *v = json_string_value(json_object_get(c->runs[i].config, "trace.resample"));
        if (!v) v = "none";
        if (!first) first = v;
        else if (strcmp(first, v)) mixed = true;
    }
    const char *head = "95% interval of value - baseline: paired t over the seeds both groups ran, else Welch's t; ";
    if (mixed)
        snprintf(buf, n,
                 "%strace.resample differs between runs: where it is none the seeds vary only what the seed drives "
                 "(estimator noise, random policies), elsewhere the workload too; compare those intervals with care",
                 head);
    else if (!first || !strcmp(first, "none"))
        snprintf(buf, n,
                 "%sseeds vary only what the seed drives (estimator noise, random policies), so it covers that "
                 "variability only, not the workload's (set trace.resample to cover it)",
                 head);
    else
        snprintf(buf, n,
                 "%sseeds also redraw the workload (trace.resample = %s), so it covers workload variability as well "
                 "as estimator noise and random policies",
                 head, first);
    return buf;
}

/* One comparison: value against baseline on one metric, a row per speed. */
static json_t *comparison(const cmp *c, const char *context, const char *value, const char *baseline,
                          const char *metric)
{
    const char *better = better_of(metric);
    json_t *rows = json_array();
    size_t k;
    json_t *sp;
    json_array_foreach(c->speeds, k, sp)
    {
        cmp_side b, v;
        side_of(c, context, baseline, json_number_value(sp), metric, &b);
        side_of(c, context, value, json_number_value(sp), metric, &v);
        if (!b.n || !v.n) continue;
        json_t *row = stat_row(&b, &v);
        json_object_set(row, "speed", sp);
        json_object_set_new(row, "verdict", json_string(verdict(row, better)));
        json_array_append_new(rows, row);
    }
    json_t *cm = json_pack("{s:s, s:s, s:o, s:o}", "value", value, "metric", metric, "better",
                           better ? json_string(better) : json_null(), "rows", rows);
    json_object_set_new(cm, "flips", flips(rows, value, baseline, better));
    return cm;
}

/* Whether a run of `value` is in context (at a load --speed keeps). */
static bool has_run(const cmp *c, const char *context, const char *value)
{
    for (int i = 0; i < c->n; i++) {
        const cmp_run *r = &c->runs[i];
        if (r->value && !strcmp(r->value, value) && !strcmp(r->context, context) && speed_kept(c->o, r->speed))
            return true;
    }
    return false;
}

/* Why nothing (or not every value) of a context could be paired with the
 * baseline, as a sentence; null when every value was (issue 40 item 1). */
static json_t *unpaired(const cmp *c, const char *context, const char *baseline, const json_t *cms)
{
    if (!has_run(c, context, baseline))
        return json_sprintf("cannot be paired: the baseline %s has no run here", baseline);
    char list[512] = "";
    size_t len = 0, i, j;
    int count = 0;
    json_t *val, *cm;
    json_array_foreach(c->values, i, val)
    {
        bool found = !strcmp(json_string_value(val), baseline);
        json_array_foreach(cms, j, cm) found |= json_equal(json_object_get(cm, "value"), val);
        if (found || len >= sizeof list) continue;
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", count++ ? ", " : "", json_string_value(val));
    }
    if (!count) return json_null();
    return json_sprintf("cannot be paired: %s %s no run here with the same config as the baseline %s", list,
                        count > 1 ? "have" : "has", baseline);
}

static json_t *build(const cmp *c, const char *baseline, const char **metrics, int nm)
{
    json_t *contexts = json_array();
    size_t i, j;
    json_t *ctx, *val;
    json_array_foreach(c->contexts, i, ctx)
    {
        json_t *cms = json_array();
        json_array_foreach(c->values, j, val)
        {
            if (!strcmp(json_string_value(val), baseline)) continue;
            for (int m = 0; m < nm; m++) {
                json_t *cm = comparison(c, json_string_value(ctx), json_string_value(val), baseline, metrics[m]);
                if (json_array_size(json_object_get(cm, "rows"))) json_array_append_new(cms, cm);
                else json_decref(cm);
            }
        }
        json_t *why = unpaired(c, json_string_value(ctx), baseline, cms);
        json_array_append_new(contexts, json_pack("{s:o, s:o, s:o}", "label", context_label(c, json_string_value(ctx)),
                                                  "comparisons", cms, "unpaired", why));
    }
    json_t *ms = json_array();
    for (int m = 0; m < nm; m++) json_array_append_new(ms, json_string(metrics[m]));
    char cover[512];
    return json_pack("{s:s, s:i, s:s, s:s, s:O, s:O, s:o, s:s, s:o, s:O}", "db", c->o->db, "runs", c->n, "by", c->o->by,
                     "baseline", baseline, "values", c->values, "speeds", c->speeds, "metrics", ms, "interval",
                     coverage(c, cover, sizeof cover), "contexts", contexts, "duplicates", c->dups);
}

static void free_runs(cmp *c)
{
    for (int i = 0; i < c->n; i++) free_run(&c->runs[i]);
    free(c->runs);
    json_decref(c->dups);
    json_decref(c->values);
    json_decref(c->contexts);
    json_decref(c->speeds);
}

int sim_compare(const sim_compare_opts *o, json_t **out, sim_err *err)
{
    cmp c = {.o = o, .dups = json_array()};
    const char *baseline = NULL, *present[64], **metrics = o->metrics ? o->metrics : present;
    int nm = o->metrics ? o->nmetrics : 0;
    *out = NULL;
    int rc = check_by(&c, err);
    if (!rc) rc = load_runs(&c, err);
    if (!rc) collect_axes(&c);
    if (!rc) rc = check_speeds(&c, err);
    if (!rc) rc = check_options(&c, &baseline, err);
    for (int m = 0; !rc && !o->metrics && m < sim_compare_ndefault_metrics; m++) /* the defaults the runs have */
        if (!check_metrics(&c, &sim_compare_default_metrics[m], 1, err)) present[nm++] = sim_compare_default_metrics[m];
    if (!rc && !nm)
        rc = sim_errf(
            err,
            "%s: no run has ttft_ms, tbt_ms, slo_attainment or hit_rate_blocks: name the summary numbers with --metric",
            o->db);
    if (!rc) rc = check_metrics(&c, metrics, nm, err);
    if (!rc) *out = build(&c, baseline, metrics, nm);
    free_runs(&c);
    return rc;
}

/* ---- text ------------------------------------------------------------------------- */

static double num(const json_t *o, const char *key) { return json_number_value(json_object_get(o, key)); }

static void print_row(FILE *f, const json_t *row, int wb, int wv)
{
    fprintf(f, "  %6g  %*.6g  %*.6g  %+11.5g  ", num(row, "speed"), wb, num(row, "baseline"), wv, num(row, "value"),
            num(row, "diff"));
    char ci[64] = "no interval (one seed)";
    if (json_is_false(json_object_get(row, "seeds_vary"))) snprintf(ci, sizeof ci, "none (zero width)");
    else if (json_is_number(json_object_get(row, "lo")))
        snprintf(ci, sizeof ci, "[%+.5g, %+.5g]", num(row, "lo"), num(row, "hi"));
    fprintf(f, "%-26s", ci);
    if (json_is_number(json_object_get(row, "rel_pct"))) fprintf(f, "  %+7.1f%%", num(row, "rel_pct"));
    else fputs("         —", f);
    fprintf(f, "  %2d %-6s  %s\n", (int)json_integer_value(json_object_get(row, "n")),
            json_string_value(json_object_get(row, "method")), json_string_value(json_object_get(row, "verdict")));
}

static void print_comparison(FILE *f, const json_t *cm, const char *baseline)
{
    const char *value = json_string_value(json_object_get(cm, "value")),
               *better = json_string_value(json_object_get(cm, "better"));
    int wb = strlen(baseline) > 11 ? (int)strlen(baseline) : 11, wv = strlen(value) > 11 ? (int)strlen(value) : 11;
    fprintf(f, "\n%s: %s − %s", json_string_value(json_object_get(cm, "metric")), value, baseline);
    if (better) fprintf(f, " (%s is better)", better);
    fprintf(f, "\n   speed  %*s  %*s         diff  %-26s       rel   n method  verdict\n", wb, baseline, wv, value,
            "95% interval");
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(cm, "rows"), i, row) print_row(f, row, wb, wv);
    const json_t *fl = json_object_get(cm, "flips");
    if (json_is_string(fl)) fprintf(f, "  %s\n", json_string_value(fl));
}

void sim_compare_print(FILE *f, const json_t *res)
{
    const char *baseline = json_string_value(json_object_get(res, "baseline"));
    fprintf(f, "kvsim compare: %s: %d runs by %s, baseline %s\n", json_string_value(json_object_get(res, "db")),
            (int)json_integer_value(json_object_get(res, "runs")), json_string_value(json_object_get(res, "by")),
            baseline);
    fprintf(f, "%s\n", json_string_value(json_object_get(res, "interval")));
    size_t k;
    json_t *dup;
    json_array_foreach(json_object_get(res, "duplicates"), k, dup)
        fprintf(f, "run %lld repeats run %lld (the same config and seed): counted once\n",
                (long long)json_integer_value(json_object_get(dup, "run")),
                (long long)json_integer_value(json_object_get(dup, "same_as")));
    const json_t *contexts = json_object_get(res, "contexts");
    size_t i, j;
    json_t *ctx, *cm;
    json_array_foreach(contexts, i, ctx)
    {
        if (json_array_size(contexts) > 1) fprintf(f, "\n== %s ==\n", json_string_value(json_object_get(ctx, "label")));
        if (json_is_string(json_object_get(ctx, "unpaired")))
            fprintf(f, "  %s\n", json_string_value(json_object_get(ctx, "unpaired")));
        json_array_foreach(json_object_get(ctx, "comparisons"), j, cm) print_comparison(f, cm, baseline);
    }
}
