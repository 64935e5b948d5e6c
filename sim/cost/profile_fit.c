/* sim/cost/profile_fit.c — the compute section of a calibration file from
 * the GPU layer probe's JSON, and the per-point comparison with the
 * analytic model (sim/cost/profile_fit.h). */
#include "sim/cost/profile_fit.h"

#include <gsl/gsl_fit.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/config/config.h"
#include "sim/cost/calib_fit.h"
#include "sim/cost/cost.h"
#include "sim/cost/profile.h"

enum { PF_MAX_HEAD = 32, PF_MAX_POINTS = 64, PF_MAX_PASSES = 256 };

/* One measured pass, as a whole model: prefill (x new tokens after y
 * cached) or decode (batch x, y tokens of context each). */
typedef struct pf_point {
    long x, y;
    double s; /* layers × the layer's time + the head */
} pf_point;

/* One model of the probe document while its section is built. */
typedef struct pf_model {
    const char *path, *name;
    const json_t *m; /* the probe's object for it */
    double layers;
    int nhead;
    double head_batch[PF_MAX_HEAD], head_s[PF_MAX_HEAD];
    size_t npre, ndec;
    pf_point pre[PF_MAX_PASSES], dec[PF_MAX_PASSES];
} pf_model;

/* No layer's (or head's) pass takes 100 s: a larger ms is a unit error or a
 * corrupt file, and a 1e300 ms point overflowed the fit of its neighbours to
 * 0 ms (issue 40 item 7). */
#define PF_MAX_MS 1e5

/* The whole-model seconds of point i of the probe's `kind` array:
 * layers × its ms + the head at `batch`. */
static int point_s(const pf_model *pm, const char *kind, size_t i, double batch, double *s, sim_err *err)
{
    const json_t *pt = json_array_get(json_object_get(pm->m, kind), i);
    const json_t *ms = json_object_get(pt, "ms"), *why = json_object_get(pt, "error");
    if (why)
        return sim_errf(err, "%s: model %s: %s[%zu]: the probe failed there (%s)", pm->path, pm->name, kind, i,
                        json_string_value(why) ? json_string_value(why) : "?");
    if (!json_is_number(ms) || !(json_number_value(ms) > 0))
        return sim_errf(err, "%s: model %s: %s[%zu].ms: missing or not a positive number", pm->path, pm->name, kind, i);
    if (json_number_value(ms) > PF_MAX_MS)
        return sim_errf(err,
                        "%s: model %s: %s[%zu].ms: %g ms for one layer is not a measurement (at most %g ms; a unit "
                        "error?)",
                        pm->path, pm->name, kind, i, json_number_value(ms), PF_MAX_MS);
    for (int h = 0; h < pm->nhead; h++)
        if (pm->head_batch[h] == batch) {
            *s = (pm->layers * json_number_value(ms) + pm->head_s[h]) / 1e3;
            return 0;
        }
    return sim_errf(err, "%s: model %s: no head point for batch %g (needed by %s[%zu])", pm->path, pm->name, batch,
                    kind, i);
}

/* An integer field of point i of `kind`, > 0 (or >= 0 with zero_ok). */
static int point_int(const pf_model *pm, const char *kind, size_t i, const char *key, int zero_ok, long *out,
                     sim_err *err)
{
    const json_t *v = json_object_get(json_array_get(json_object_get(pm->m, kind), i), key);
    if (!json_is_integer(v) || json_integer_value(v) < (zero_ok ? 0 : 1))
        return sim_errf(err, "%s: model %s: %s[%zu].%s: missing or not an integer >= %d", pm->path, pm->name, kind, i,
                        key, zero_ok ? 0 : 1);
    *out = (long)json_integer_value(v);
    return 0;
}

static int read_heads(pf_model *pm, sim_err *err)
{
    const json_t *heads = json_object_get(pm->m, "head");
    size_t n = json_array_size(heads);
    if (n < 1 || n > PF_MAX_HEAD)
        return sim_errf(err, "%s: model %s: head: must be an array of 1 to %d points", pm->path, pm->name, PF_MAX_HEAD);
    for (size_t i = 0; i < n; i++) {
        const json_t *h = json_array_get(heads, i);
        const json_t *b = json_object_get(h, "batch"), *ms = json_object_get(h, "ms");
        if (!json_is_integer(b) || !json_is_number(ms) || !(json_number_value(ms) > 0) ||
            json_number_value(ms) > PF_MAX_MS)
            return sim_errf(err, "%s: model %s: head[%zu]: needs an integer batch and a positive ms (at most %g)",
                            pm->path, pm->name, i, PF_MAX_MS);
        pm->head_batch[i] = (double)json_integer_value(b);
        pm->head_s[i] = json_number_value(ms);
    }
    pm->nhead = (int)n;
    return 0;
}

/* Two points of `kind` at the same (x, y) are an error naming both: one
 * would silently replace the other in the grid or weigh twice in a line. */
static int no_duplicates(const pf_model *pm, const char *kind, const char *kx, const char *ky, const pf_point *pts,
                         size_t n, sim_err *err)
{
    const json_t *arr = json_object_get(pm->m, kind);
    for (size_t j = 1; j < n; j++)
        for (size_t i = 0; i < j; i++) {
            if (pts[i].x != pts[j].x || pts[i].y != pts[j].y) continue;
            double a = json_number_value(json_object_get(json_array_get(arr, i), "ms")),
                   b = json_number_value(json_object_get(json_array_get(arr, j), "ms"));
            return sim_errf(err,
                            "%s: model %s: %s[%zu] and %s[%zu] are the same point (%s %ld, %s %ld), measured %g ms "
                            "and %g ms: keep one",
                            pm->path, pm->name, kind, i, kind, j, kx, pts[i].x, ky, pts[i].y, a, b);
        }
    return 0;
}

/* The probe's `kind` array ("prefill": new, cached; "decode": batch,
 * context) as whole-model points; the head is charged on one token for a
 * prefill and on the batch for a decode. */
static int read_points(const pf_model *pm, const char *kind, const char *kx, const char *ky, pf_point *out, size_t *n,
                       sim_err *err)
{
    int decode = !strcmp(kind, "decode");
    *n = json_array_size(json_object_get(pm->m, kind));
    if (*n > PF_MAX_PASSES)
        return sim_errf(err, "%s: model %s: %s: more than %d points", pm->path, pm->name, kind, PF_MAX_PASSES);
    for (size_t i = 0; i < *n; i++) {
        pf_point *p = &out[i];
        if (point_int(pm, kind, i, kx, 0, &p->x, err) || point_int(pm, kind, i, ky, !decode, &p->y, err) ||
            point_s(pm, kind, i, decode ? (double)p->x : 1, &p->s, err))
            return -1;
    }
    return no_duplicates(pm, kind, kx, ky, out, *n, err);
}

/* Insert v into ascending xs[0..*n) unless present; -1 when full. */
static int axis_add(double *xs, int *n, int max, double v)
{
    int i = 0;
    while (i < *n && xs[i] < v) i++;
    if (i < *n && xs[i] == v) return 0;
    if (*n == max) return -1;
    memmove(xs + i + 1, xs + i, (size_t)(*n - i) * sizeof *xs);
    xs[i] = v;
    (*n)++;
    return 0;
}

static int axis_index(const double *xs, int n, double v)
{
    for (int i = 0; i < n; i++)
        if (xs[i] == v) return i;
    return -1;
}

static json_t *axis_json(const double *xs, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_integer((json_int_t)xs[i]));
    return a;
}

/* ---- the profile of one model ------------------------------------------------ */

/* The prefill grid: every (new, cached) pair measured, none missing. */
static int build_prefill(const pf_model *pm, sim_profile *p, sim_err *err)
{
    for (size_t i = 0; i < pm->npre; i++)
        if (axis_add(p->new_tokens, &p->n_new, SIM_PROFILE_MAX_NEW, (double)pm->pre[i].x) ||
            axis_add(p->cached_tokens, &p->n_cached, SIM_PROFILE_MAX_CACHED, (double)pm->pre[i].y))
            return sim_errf(err, "%s: model %s: more than %d new or %d cached sizes in prefill", pm->path, pm->name,
                            SIM_PROFILE_MAX_NEW, SIM_PROFILE_MAX_CACHED);
    if (pm->npre == 0 || p->cached_tokens[0] != 0)
        return sim_errf(err, "%s: model %s: prefill: needs points with cached = 0", pm->path, pm->name);
    for (int r = 0; r < p->n_cached; r++)
        for (int c = 0; c < p->n_new; c++) p->prefill_s[r][c] = NAN;
    for (size_t i = 0; i < pm->npre; i++)
        p->prefill_s[axis_index(p->cached_tokens, p->n_cached, (double)pm->pre[i].y)]
                    [axis_index(p->new_tokens, p->n_new, (double)pm->pre[i].x)] = pm->pre[i].s;
    for (int r = 0; r < p->n_cached; r++)
        for (int c = 0; c < p->n_new; c++)
            if (isnan(p->prefill_s[r][c]))
                return sim_errf(err,
                                "%s: model %s: prefill: no point for new = %g, cached = %g (the grid must be full)",
                                pm->path, pm->name, p->new_tokens[c], p->cached_tokens[r]);
    return 0;
}

/* Weighted (1/t²) least squares t = base + per · kv (GSL). */
static void wfit(const double *kv, const double *t, size_t n, double *base, double *per)
{
    double w[PF_MAX_POINTS] = {0}, cov00, cov01, cov11, chisq;
    for (size_t i = 0; i < n; i++) w[i] = 1 / (t[i] * t[i]);
    gsl_fit_wlinear(kv, 1, w, 1, t, 1, n, base, per, &cov00, &cov01, &cov11, &chisq);
    if (*per < 0) { /* noise at short contexts: no per-token cost rather than a negative one */
        double sw = 0, swt = 0;
        for (size_t i = 0; i < n; i++) sw += w[i], swt += w[i] * t[i];
        *per = 0, *base = swt / sw;
    }
}

/* One batch size's line over its points. One point keeps the per-token cost
 * of the batch size before. With three or more, a point more than 50% off
 * the line (a hiccup of the machine: one was seen at 3.3× its neighbours)
 * is dropped and the line refitted, once; the comparison rows still show it. */
static void fit_line(const double *kv, const double *t, size_t n, double prev_per, double *base, double *per)
{
    if (n == 1) {
        *per = prev_per;
        *base = t[0] - prev_per * kv[0];
        return;
    }
    wfit(kv, t, n, base, per);
    size_t worst = 0;
    double worst_rel = 0;
    for (size_t i = 0; i < n; i++) {
        double r = fabs(*base + *per * kv[i] - t[i]) / t[i];
        if (r > worst_rel) worst_rel = r, worst = i;
    }
    if (n < 3 || worst_rel <= 0.5) return;
    double kv2[PF_MAX_POINTS], t2[PF_MAX_POINTS];
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (i != worst) kv2[m] = kv[i], t2[m++] = t[i];
    wfit(kv2, t2, m, base, per);
}

static int build_decode(const pf_model *pm, sim_profile *p, sim_err *err)
{
    for (size_t i = 0; i < pm->ndec; i++)
        if (axis_add(p->batch, &p->n_batch, SIM_PROFILE_MAX_BATCH, (double)pm->dec[i].x))
            return sim_errf(err, "%s: model %s: more than %d batch sizes in decode", pm->path, pm->name,
                            SIM_PROFILE_MAX_BATCH);
    if (pm->ndec == 0) return sim_errf(err, "%s: model %s: decode: no points", pm->path, pm->name);
    for (int k = 0; k < p->n_batch; k++) {
        double kv[PF_MAX_POINTS], t[PF_MAX_POINTS];
        size_t m = 0;
        for (size_t i = 0; i < pm->ndec && m < PF_MAX_POINTS; i++) {
            const pf_point *d = &pm->dec[i];
            if ((double)d->x != p->batch[k]) continue;
            t[m] = d->s;
            kv[m++] = (double)d->x * (double)d->y;
        }
        fit_line(kv, t, m, k > 0 ? p->per_token_s[k - 1] : 0, &p->base_s[k], &p->per_token_s[k]);
    }
    return 0;
}

/* The prefill FLOP rate: Eq. 1 FLOPs = G · t through the origin, over the
 * grid points of at least 1024 new tokens. */
static int fit_flops(const pf_model *pm, const sim_model *model, sim_profile *p, sim_err *err)
{
    double f[SIM_PROFILE_MAX_NEW * SIM_PROFILE_MAX_CACHED], t[SIM_PROFILE_MAX_NEW * SIM_PROFILE_MAX_CACHED];
    size_t n = 0;
    for (int r = 0; r < p->n_cached; r++)
        for (int c = 0; c < p->n_new; c++) {
            if (p->new_tokens[c] < 1024) continue;
            double cached = p->cached_tokens[r];
            f[n] = sim_prefill_flops(model, cached + p->new_tokens[c]) - sim_prefill_flops(model, cached);
            t[n++] = p->prefill_s[r][c];
        }
    if (n == 0) return sim_errf(err, "%s: model %s: prefill: no point of 1024 or more new tokens", pm->path, pm->name);
    double cov, sumsq;
    gsl_fit_mul(t, 1, f, 1, n, &p->flops_per_s, &cov, &sumsq);
    return 0;
}

/* ---- comparison rows ----------------------------------------------------------- */

static void add_row(sim_profile_fitting *f, const char *model, const char *kind, long x, long y, double measured,
                    double analytic, double calibrated)
{
    if (f->nrows == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 128;
        f->rows = sim_xrealloc(f->rows, f->cap * sizeof *f->rows);
    }
    sim_profile_row *r = &f->rows[f->nrows++];
    snprintf(r->model, sizeof r->model, "%s", model);
    r->kind = kind;
    r->x = x, r->y = y;
    r->measured_s = measured, r->analytic_s = analytic, r->calibrated_s = calibrated;
}

/* The analytic GPU time of a decode step (no per-iteration overhead: the
 * probe measures the GPU's work alone). */
static double analytic_step_s(const sim_cost *c, long batch, double kv)
{
    sim_decode_terms t = sim_cost_decode_terms(c, (int)batch, (int64_t)kv);
    return t.total_s - t.overhead_s;
}

static void compare_points(sim_profile_fitting *f, const pf_model *pm, const sim_cost *c, const sim_profile *p)
{
    for (size_t i = 0; i < pm->npre; i++) {
        const pf_point *q = &pm->pre[i];
        add_row(f, pm->name, "prefill", q->x, q->y, q->s, sim_cost_prefill_pass_s(c, q->x, q->y),
                sim_profile_prefill_s(p, q->x, q->y));
    }
    for (size_t i = 0; i < pm->ndec; i++) {
        const pf_point *q = &pm->dec[i];
        double kv = (double)q->x * q->y;
        add_row(f, pm->name, "decode", q->x, q->y, q->s, analytic_step_s(c, q->x, kv),
                sim_profile_decode_s(p, (int)q->x, kv));
    }
}

/* The probe's whole-model runs of this model: one prefill of `tokens` and
 * one decode step at tokens + 1. */
static int compare_e2e(sim_profile_fitting *f, const pf_model *pm, const sim_cost *c, const sim_profile *p,
                       sim_err *err)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(f->doc, "e2e"), i, e)
    {
        const char *model = json_string_value(json_object_get(e, "model"));
        if (!model || strcmp(model, pm->name) || json_object_get(e, "error")) continue;
        const json_t *tok = json_object_get(e, "tokens"), *tt = json_object_get(e, "ttft_ms"),
                     *tb = json_object_get(e, "tbt_ms");
        if (!json_is_integer(tok) || json_integer_value(tok) < 1 || !json_is_number(tt) || !json_is_number(tb))
            return sim_errf(err, "%s: e2e[%zu]: needs an integer tokens >= 1 and numbers ttft_ms, tbt_ms", f->path, i);
        long n = (long)json_integer_value(tok);
        add_row(f, pm->name, "e2e prefill", n, 0, json_number_value(tt) / 1e3, sim_cost_prefill_pass_s(c, n, 0),
                sim_profile_prefill_s(p, n, 0));
        add_row(f, pm->name, "e2e decode", 1, n + 1, json_number_value(tb) / 1e3, analytic_step_s(c, 1, n + 1.0),
                sim_profile_decode_s(p, 1, n + 1.0));
    }
    return 0;
}

/* ---- the section ------------------------------------------------------------------ */

static json_t *profile_json(const sim_profile *p, const pf_model *pm, double hw_flops)
{
    json_t *m = json_object(), *pf = json_object(), *rows = json_array(), *dec = json_array();
    json_object_set_new(m, "name", json_string(pm->name));
    json_object_set_new(m, "layers", json_integer((json_int_t)pm->layers));
    json_object_set_new(pf, "new_tokens", axis_json(p->new_tokens, p->n_new));
    json_object_set_new(pf, "cached_tokens", axis_json(p->cached_tokens, p->n_cached));
    for (int r = 0; r < p->n_cached; r++) {
        json_t *row = json_array();
        for (int c = 0; c < p->n_new; c++) json_array_append_new(row, json_real(p->prefill_s[r][c]));
        json_array_append_new(rows, row);
    }
    json_object_set_new(pf, "seconds", rows);
    json_object_set_new(m, "prefill", pf);
    for (int k = 0; k < p->n_batch; k++)
        json_array_append_new(dec, json_pack("{s:I, s:f, s:f}", "batch", (json_int_t)p->batch[k], "base_s",
                                             p->base_s[k], "per_token_s", p->per_token_s[k]));
    json_object_set_new(m, "decode", dec);
    json_object_set_new(m, "flops_per_s", json_real(p->flops_per_s));
    json_object_set_new(m, "flops_vs_hardware_peak", json_real(p->flops_per_s / hw_flops));
    return m;
}

static json_t *rows_json(const sim_profile_fitting *f, size_t from, const char *model)
{
    json_t *a = json_array();
    for (size_t i = from; i < f->nrows; i++) {
        const sim_profile_row *r = &f->rows[i];
        if (strcmp(r->model, model)) continue;
        int pre = !strstr(r->kind, "decode");
        json_array_append_new(a,
                              json_pack("{s:s, s:I, s:I, s:f, s:f, s:f}", "kind", r->kind, pre ? "new" : "batch",
                                        (json_int_t)r->x, pre ? "cached" : "context", (json_int_t)r->y, "measured_s",
                                        r->measured_s, "analytic_s", r->analytic_s, "calibrated_s", r->calibrated_s));
    }
    return a;
}

/* The config of `model` on `hardware` without the hardware's own calibration. */
static int analytic_config(const char *model, const char *hardware, sim_config *cfg, sim_err *err)
{
    /* cost.compute = analytic: under `auto` a preset with measured tables
     * (h100x1, h200x1) would price these passes from the tables, and the
     * "analytic" column would silently be the measured-kernel model. */
    char m[96], h[96], nocal[] = "hardware.calibration=\"\"", analytic[] = "cost.compute=analytic";
    snprintf(m, sizeof m, "model=%s", model);
    snprintf(h, sizeof h, "hardware=%s", hardware);
    char *sets[] = {m, h, nocal, analytic};
    if (sim_config_load(cfg, NULL, sets, 4, err)) return -1;
    if (cfg->hw.gpus != 1) {
        sim_config_free(cfg);
        return sim_errf(err,
                        "hardware '%s' has %d GPUs per node; the layer probe measures one GPU: compare with a "
                        "one-GPU preset (h100x1, h200x1)",
                        hardware, cfg->hw.gpus);
    }
    return 0;
}

/* One model of the probe document: its profile, rows and section entry. */
static int fit_model(sim_profile_fitting *f, const json_t *m, const char *hardware, json_t *models, sim_err *err)
{
    pf_model pm = {.path = f->path, .m = m, .name = json_string_value(json_object_get(m, "name"))};
    const json_t *layers = json_object_get(m, "layers");
    if (!pm.name || !json_is_integer(layers) || json_integer_value(layers) < 1)
        return sim_errf(err, "%s: models[]: needs a name and an integer layers >= 1", f->path);
    if (json_object_get(m, "error"))
        return sim_errf(err, "%s: model %s: the probe failed (%s)", f->path, pm.name,
                        json_string_value(json_object_get(m, "error")));
    if (json_is_true(json_object_get(m, "truncated")))
        return sim_errf(err,
                        "%s: model %s: truncated: the probe stopped before measuring every point (--max-seconds ran "
                        "out); rerun datapath/probe/layer_probe.py with a longer --max-seconds",
                        f->path, pm.name);
    pm.layers = (double)json_integer_value(layers);
    sim_config cfg;
    sim_cost c;
    sim_profile p;
    memset(&p, 0, sizeof p);
    snprintf(p.model, sizeof p.model, "%s", pm.name);
    p.gpus = 1;
    if (read_heads(&pm, err) || read_points(&pm, "prefill", "new", "cached", pm.pre, &pm.npre, err) ||
        read_points(&pm, "decode", "batch", "context", pm.dec, &pm.ndec, err) ||
        analytic_config(pm.name, hardware, &cfg, err))
        return -1;
    int rc = sim_cost_setup(&c, &cfg, err) || build_prefill(&pm, &p, err) || build_decode(&pm, &p, err) ||
             fit_flops(&pm, &cfg.model, &p, err);
    size_t from = f->nrows;
    if (!rc) {
        compare_points(f, &pm, &c, &p);
        rc = compare_e2e(f, &pm, &c, &p, err);
    }
    if (!rc) {
        json_t *entry = profile_json(&p, &pm, cfg.hw.flops);
        json_object_set_new(entry, "points", rows_json(f, from, pm.name));
        json_array_append_new(models, entry);
    }
    sim_config_free(&cfg);
    return rc ? -1 : 0;
}

static json_t *source_json(const sim_profile_fitting *f)
{
    const char *const copy[] = {"device", "method", "peaks", "flash_check"};
    return sim_calib_source(f->path, f->doc, copy, sizeof copy / sizeof copy[0]);
}

/* The layer probe's document format this file reads ("version" in its JSON). */
enum { PF_VERSION = 1 };

static int check_version(const char *path, const json_t *v, sim_err *err)
{
    if (json_is_integer(v) && json_integer_value(v) == PF_VERSION) return 0;
    char *text = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    sim_errf(err, "%s: version: %s%.40s%s; this kvsim reads version %d (what datapath/probe/layer_probe.py writes)",
             path, text ? "" : "missing", text ? text : "", text ? " is not a layer probe format it knows" : "",
             PF_VERSION);
    free(text);
    return -1;
}

int sim_profile_fit(sim_profile_fitting *f, const char *path, const char *hardware, sim_err *err)
{
    memset(f, 0, sizeof *f);
    f->path = path;
    json_error_t je;
    if (!(f->doc = json_load_file(path, 0, &je)))
        return sim_errf(err, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    const json_t *kind = json_object_get(f->doc, "kind"), *models = json_object_get(f->doc, "models");
    if (!json_is_string(kind) || strcmp(json_string_value(kind), "kvsim-layer-probe"))
        return sim_errf(err, "%s: kind: expected \"kvsim-layer-probe\" (is this layer_probe.py's output?)", path);
    if (check_version(path, json_object_get(f->doc, "version"), err)) return -1;
    if (!json_is_array(models) || json_array_size(models) == 0)
        return sim_errf(err, "%s: models: missing or empty", path);
    json_t *out = json_array();
    f->compute =
        json_pack("{s:o, s:i, s:s, s:s, s:o}", "source", source_json(f), "gpus", 1, "compared_with", hardware, "rule",
                  "whole model = layers x one measured layer + LM head (1 token for prefill, the batch for "
                  "decode); prefill bilinear in (new, cached); decode per batch size a + b x KV tokens",
                  "models", out);
    size_t i;
    json_t *m;
    json_array_foreach(models, i, m) if (fit_model(f, m, hardware, out, err)) return -1;
    return 0;
}

void sim_profile_fitting_free(sim_profile_fitting *f)
{
    json_decref(f->doc);
    json_decref(f->compute);
    free(f->rows);
    memset(f, 0, sizeof *f);
}
