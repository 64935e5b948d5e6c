/* sim/cost/profile.c — interpolating measured prefill and decode times
 * (sim/cost/profile.h) and reading them from a calibration file. */
#include "sim/cost/profile.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The segment [i, i+1] of ascending xs[0..n) to interpolate x on, and the
 * fraction along it: 0 at xs[i], 1 at xs[i+1], beyond 1 past the last
 * point (extrapolation along the last segment). Below xs[0]: the first
 * point (f = 0) when clamp_low, else along the first segment (f < 0). */
static int segment(const double *xs, int n, double x, int clamp_low, double *f)
{
    if (n == 1) {
        *f = 0;
        return 0;
    }
    int i = 0;
    while (i < n - 2 && x > xs[i + 1]) i++;
    *f = (x - xs[i]) / (xs[i + 1] - xs[i]);
    if (*f < 0 && clamp_low) *f = 0;
    return i;
}

static double lerp(double a, double b, double f) { return a + (b - a) * f; }

/* Prefill time on cached row r at new_tokens: flat below the first point. */
static double row_at(const sim_profile *p, int r, double new_tokens)
{
    double f;
    int i = segment(p->new_tokens, p->n_new, new_tokens, 1, &f);
    return p->n_new == 1 ? p->prefill_s[r][0] : lerp(p->prefill_s[r][i], p->prefill_s[r][i + 1], f);
}

double sim_profile_prefill_s(const sim_profile *p, double new_tokens, double cached)
{
    double f;
    int j = segment(p->cached_tokens, p->n_cached, cached, 1, &f);
    double t =
        p->n_cached == 1 ? row_at(p, 0, new_tokens) : lerp(row_at(p, j, new_tokens), row_at(p, j + 1, new_tokens), f);
    return t > 0 ? t : 0;
}

double sim_profile_decode_s(const sim_profile *p, int batch, double kv_tokens)
{
    if (batch <= 0) return 0;
    double f;
    int i = segment(p->batch, p->n_batch, batch, 1, &f);
    double base = p->base_s[i], per = p->per_token_s[i];
    if (p->n_batch > 1) {
        base = lerp(p->base_s[i], p->base_s[i + 1], f);
        per = lerp(p->per_token_s[i], p->per_token_s[i + 1], f > 1 ? 1 : f);
    }
    double t = base + per * kv_tokens;
    return t > 0 ? t : 0;
}

/* ---- reading ---------------------------------------------------------------- */

/* A JSON array of 1..max ascending non-negative numbers into xs. */
static int read_axis(const char *path, const char *field, const json_t *a, int max, double *xs, int *n, sim_err *err)
{
    if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > (size_t)max)
        return sim_errf(err, "%s: %s: must be an array of 1 to %d numbers", path, field, max);
    *n = (int)json_array_size(a);
    for (int i = 0; i < *n; i++) {
        const json_t *v = json_array_get(a, i);
        xs[i] = json_number_value(v);
        if (!json_is_number(v) || !(xs[i] >= 0) || !isfinite(xs[i]) || (i > 0 && !(xs[i] > xs[i - 1])))
            return sim_errf(err, "%s: %s[%d]: must be a number >= 0, above the one before", path, field, i);
    }
    return 0;
}

static int read_seconds(const char *path, const char *field, const json_t *v, double *out, sim_err *err)
{
    *out = json_number_value(v);
    if (!json_is_number(v) || !(*out >= 0) || !isfinite(*out))
        return sim_errf(err, "%s: %s: must be a number of seconds >= 0", path, field);
    return 0;
}

static int read_prefill(const char *path, const char *at, const json_t *pf, sim_profile *p, sim_err *err)
{
    char field[160];
    snprintf(field, sizeof field, "%s.prefill", at);
    if (!json_is_object(pf)) return sim_errf(err, "%s: %s: missing or not an object", path, field);
    snprintf(field, sizeof field, "%s.prefill.new_tokens", at);
    if (read_axis(path, field, json_object_get(pf, "new_tokens"), SIM_PROFILE_MAX_NEW, p->new_tokens, &p->n_new, err))
        return -1;
    snprintf(field, sizeof field, "%s.prefill.cached_tokens", at);
    if (read_axis(path, field, json_object_get(pf, "cached_tokens"), SIM_PROFILE_MAX_CACHED, p->cached_tokens,
                  &p->n_cached, err))
        return -1;
    const json_t *rows = json_object_get(pf, "seconds");
    if (!json_is_array(rows) || json_array_size(rows) != (size_t)p->n_cached)
        return sim_errf(err, "%s: %s.prefill.seconds: must hold one row per cached_tokens value", path, at);
    for (int r = 0; r < p->n_cached; r++) {
        const json_t *row = json_array_get(rows, r);
        if (!json_is_array(row) || json_array_size(row) != (size_t)p->n_new)
            return sim_errf(err, "%s: %s.prefill.seconds[%d]: must hold one value per new_tokens value", path, at, r);
        for (int i = 0; i < p->n_new; i++) {
            snprintf(field, sizeof field, "%s.prefill.seconds[%d][%d]", at, r, i);
            if (read_seconds(path, field, json_array_get(row, i), &p->prefill_s[r][i], err)) return -1;
        }
    }
    return 0;
}

static int read_decode(const char *path, const char *at, const json_t *dec, sim_profile *p, sim_err *err)
{
    char field[160];
    if (!json_is_array(dec) || json_array_size(dec) < 1 || json_array_size(dec) > SIM_PROFILE_MAX_BATCH)
        return sim_errf(err, "%s: %s.decode: must be an array of 1 to %d batch lines", path, at, SIM_PROFILE_MAX_BATCH);
    p->n_batch = (int)json_array_size(dec);
    for (int i = 0; i < p->n_batch; i++) {
        const json_t *d = json_array_get(dec, i), *b = json_object_get(d, "batch");
        if (!json_is_integer(b) || json_integer_value(b) < 1 || (i > 0 && json_integer_value(b) <= p->batch[i - 1]))
            return sim_errf(err, "%s: %s.decode[%d].batch: must be an integer >= 1, above the one before", path, at, i);
        p->batch[i] = (double)json_integer_value(b);
        snprintf(field, sizeof field, "%s.decode[%d].base_s", at, i);
        if (read_seconds(path, field, json_object_get(d, "base_s"), &p->base_s[i], err)) return -1;
        snprintf(field, sizeof field, "%s.decode[%d].per_token_s", at, i);
        if (read_seconds(path, field, json_object_get(d, "per_token_s"), &p->per_token_s[i], err)) return -1;
    }
    return 0;
}

static int read_model(const char *path, const char *at, const json_t *m, sim_profile *p, sim_err *err)
{
    if (read_prefill(path, at, json_object_get(m, "prefill"), p, err) ||
        read_decode(path, at, json_object_get(m, "decode"), p, err))
        return -1;
    const json_t *g = json_object_get(m, "flops_per_s");
    p->flops_per_s = json_number_value(g);
    if (!json_is_number(g) || !(p->flops_per_s > 0) || !isfinite(p->flops_per_s))
        return sim_errf(err, "%s: %s.flops_per_s: must be a positive number", path, at);
    if (p->cached_tokens[0] != 0) return sim_errf(err, "%s: %s.prefill.cached_tokens[0]: must be 0", path, at);
    return 0;
}

int sim_profile_from_json(const char *path, const json_t *root, const char *model, sim_profile *out, sim_err *err)
{
    const json_t *c = json_object_get(root, "compute");
    if (!c) return 0;
    const json_t *models = json_object_get(c, "models"), *gpus = json_object_get(c, "gpus");
    if (!json_is_object(c) || !json_is_array(models))
        return sim_errf(err, "%s: compute: must be an object with a models array", path);
    if (!json_is_integer(gpus) || json_integer_value(gpus) < 1)
        return sim_errf(err, "%s: compute.gpus: must be an integer >= 1", path);
    size_t i;
    json_t *m;
    json_array_foreach(models, i, m)
    {
        const char *name = json_string_value(json_object_get(m, "name"));
        if (!name) return sim_errf(err, "%s: compute.models[%zu].name: missing or not a string", path, i);
        if (strcmp(name, model)) continue;
        char at[64];
        snprintf(at, sizeof at, "compute.models[%zu]", i);
        memset(out, 0, sizeof *out);
        snprintf(out->model, sizeof out->model, "%s", name);
        out->gpus = (int)json_integer_value(gpus);
        return read_model(path, at, m, out, err) ? -1 : 1;
    }
    return 0;
}
