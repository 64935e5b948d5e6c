/* sim/cost/calib_fit.c — a calibration file from the data-path probe's raw
 * samples: grouping them by (direction, tier, method), fitting each group
 * (sim_curve_fit_samples in calib.c), choosing the method each of the
 * simulator's four transfers uses, and writing the file. See calib_fit.h. */
#include "sim/cost/calib_fit.h"

#include <errno.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "sim/cost/calib.h"
#include "sim/outfile.h"

#define CAL_REF_BYTES 33554432.0 /* 256 tokens × 128 KiB */
void sim_calib_fitting_free(sim_calib_fitting *s)
{
    for (int i = 0; i < s->ngroups; i++) {
        free(s->groups[i].bytes);
        free(s->groups[i].secs);
        json_decref(s->groups[i].shapes);
    }
    json_decref(s->probe);
    json_decref(s->use);
}

static sim_calib_group *group_for(sim_calib_fitting *s, const char *backend, const char *dir, const char *tier,
                                  const char *method)
{
    for (int i = 0; i < s->ngroups; i++) {
        sim_calib_group *g = &s->groups[i];
        if (!strcmp(g->direction, dir) && !strcmp(g->tier, tier) && !strcmp(g->method, method)) return g;
    }
    if (s->ngroups == SIM_CALIB_MAX_GROUPS) return NULL;
    sim_calib_group *g = &s->groups[s->ngroups++];
    *g =
        (sim_calib_group){.backend = backend, .direction = dir, .tier = tier, .method = method, .shapes = json_array()};
    return g;
}

static void group_add(sim_calib_group *g, const char *shape, double bytes, double secs)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 32;
        g->bytes = sim_xrealloc(g->bytes, g->cap * sizeof *g->bytes);
        g->secs = sim_xrealloc(g->secs, g->cap * sizeof *g->secs);
    }
    g->bytes[g->n] = bytes;
    g->secs[g->n++] = secs;
    size_t i;
    json_t *v;
    json_array_foreach(g->shapes, i, v) if (!strcmp(json_string_value(v), shape)) return;
    json_array_append_new(g->shapes, json_string(shape));
}

/* ---- reading the probe document ---------------------------------------------- */

static const char *const sample_strings[] = {"backend", "shape", "direction", "tier", "method"};

static int read_sample(sim_calib_fitting *s, size_t i, const json_t *smp, const char *only_shape, sim_err *err)
{
    const char *v[5];
    for (int k = 0; k < 5; k++)
        if (!(v[k] = json_string_value(json_object_get(smp, sample_strings[k]))))
            return sim_errf(err, "%s: samples[%zu].%s: missing or not a string", s->probe_path, i, sample_strings[k]);
    const json_t *b = json_object_get(smp, "bytes"), *t = json_object_get(smp, "median_s");
    if (!json_is_number(b) || json_number_value(b) <= 0)
        return sim_errf(err, "%s: samples[%zu].bytes: must be a positive number", s->probe_path, i);
    if (!json_is_number(t) || json_number_value(t) <= 0)
        return sim_errf(err, "%s: samples[%zu].median_s: must be a positive number", s->probe_path, i);
    if (only_shape && strcmp(v[3], "ssd") && strcmp(v[1], only_shape)) return 0; /* file I/O is shape-free */
    sim_calib_group *g = group_for(s, v[0], v[2], v[3], v[4]);
    if (!g)
        return sim_errf(err, "%s: more than %d (direction, tier, method) groups", s->probe_path, SIM_CALIB_MAX_GROUPS);
    group_add(g, v[1], json_number_value(b), json_number_value(t));
    if (!strcmp(v[0], "cuda")) s->backend = "cuda";
    return 0;
}

int sim_calib_read_probe(sim_calib_fitting *s, const char *path, const char *only_shape, sim_err *err)
{
    json_error_t je;
    *s = (sim_calib_fitting){.probe_path = path};
    if (!(s->probe = json_load_file(s->probe_path, 0, &je)))
        return je.line < 1 ? sim_errf(err, "%s: %s", s->probe_path, je.text)
                           : sim_errf(err, "%s:%d:%d: %s", s->probe_path, je.line, je.column, je.text);
    const json_t *ver = json_object_get(s->probe, "kvsim_probe");
    if (!json_is_integer(ver) || json_integer_value(ver) != 1)
        return sim_errf(err, "%s: kvsim_probe: expected 1 (is this kvsim-probe output?)", s->probe_path);
    const json_t *samples = json_object_get(s->probe, "samples");
    if (!json_is_array(samples)) return sim_errf(err, "%s: samples: missing or not an array", s->probe_path);
    s->backend = "cpu";
    size_t i;
    json_t *smp;
    json_array_foreach(samples, i, smp) if (read_sample(s, i, smp, only_shape, err)) return -1;
    if (s->ngroups == 0)
        return sim_errf(err, "%s: no samples%s%s", s->probe_path, only_shape ? " for shape " : "",
                        only_shape ? only_shape : "");
    return 0;
}

/* ---- fitting and choosing ----------------------------------------------------- */

void sim_calib_fit_groups(sim_calib_fitting *s)
{
    for (int i = 0; i < s->ngroups; i++) {
        sim_calib_group *g = &s->groups[i];
        g->fitted = !sim_curve_fit_samples(g->bytes, g->secs, g->n, &g->fit, &g->why);
    }
}

/* Methods the probe used as reference peaks (plain copies, not data paths). */
static int is_reference(const sim_calib_fitting *s, const char *method)
{
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(s->probe, "peaks"), i, p)
    {
        const char *m = json_string_value(json_object_get(p, "method"));
        if (m && !strcmp(m, method)) return 1;
    }
    return 0;
}

static const sim_calib_group *choose(const sim_calib_fitting *s, const sim_calib_slot *slot)
{
    const sim_calib_group *best = NULL;
    for (int i = 0; i < s->ngroups; i++) {
        const sim_calib_group *g = &s->groups[i];
        if (!g->fitted || strcmp(g->direction, slot->direction) || strcmp(g->tier, slot->tier) ||
            is_reference(s, g->method) || (strcmp(g->tier, "ssd") && strcmp(g->backend, s->backend)))
            continue;
        if (!best || sim_curve_time(&g->fit.curve, CAL_REF_BYTES) < sim_curve_time(&best->fit.curve, CAL_REF_BYTES))
            best = g;
    }
    return best;
}

int sim_calib_choose(sim_calib_fitting *s, sim_err *err)
{
    size_t n;
    const sim_calib_slot *slots = sim_calib_slots(&n);
    int rc = 0;
    json_decref(s->use);
    s->use = json_object();
    for (size_t i = 0; i < n && !rc; i++) {
        const sim_calib_group *g = choose(s, &slots[i]);
        if (g) json_object_set_new(s->use, slots[i].key, json_string(g->method));
        else
            rc = sim_errf(err, "%s: no fitted %s curve for %s (direction %s, tier %s)%s", s->probe_path, s->backend,
                          slots[i].key, slots[i].direction, slots[i].tier,
                          strcmp(slots[i].tier, "ssd") ? "" : "; run the probe with its SSD directions");
    }
    return rc;
}

char *sim_calib_use_text(const sim_calib_fitting *s) { return json_dumps(s->use, JSON_COMPACT); }

/* ---- writing ------------------------------------------------------------------ */

json_t *sim_calib_source(const char *path, const json_t *doc, const char *const *keys, size_t nkeys)
{
    json_t *info = json_object();
    json_object_set_new(info, "file", json_string(path));
    char *text = json_dumps(doc, JSON_COMPACT);
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)XXH3_64bits(text, strlen(text)));
    free(text);
    json_object_set_new(info, "xxh3_compact", json_string(hex));
    for (size_t i = 0; i < nkeys; i++) {
        json_t *v = json_object_get(doc, keys[i]);
        if (v) json_object_set(info, keys[i], v);
    }
    return info;
}

static json_t *probe_info(const sim_calib_fitting *s)
{
    const char *const copy[] = {"host", "config", "backends", "peaks"};
    return sim_calib_source(s->probe_path, s->probe, copy, sizeof copy / sizeof copy[0]);
}

static json_t *curve_json(const sim_calib_group *g)
{
    double lo = g->bytes[0], hi = g->bytes[0];
    for (size_t i = 1; i < g->n; i++) {
        lo = g->bytes[i] < lo ? g->bytes[i] : lo;
        hi = g->bytes[i] > hi ? g->bytes[i] : hi;
    }
    json_t *c = json_object();
    json_object_set_new(c, "direction", json_string(g->direction));
    json_object_set_new(c, "tier", json_string(g->tier));
    json_object_set_new(c, "method", json_string(g->method));
    json_object_set_new(c, "backend", json_string(g->backend));
    json_object_set_new(c, "alpha_s", json_real(g->fit.curve.alpha_s));
    json_object_set_new(c, "beta_Bps", json_real(g->fit.curve.beta_Bps));
    json_object_set_new(c, "r2", json_real(g->fit.r2));
    json_object_set_new(c, "max_rel_residual", json_real(g->fit.max_rel_residual));
    json_object_set_new(c, "points", json_integer((json_int_t)g->fit.points));
    json_object_set_new(c, "bytes_min", json_real(lo));
    json_object_set_new(c, "bytes_max", json_real(hi));
    json_object_set_new(c, "shapes", json_incref(g->shapes));
    if (g->fit.alpha_clamped) json_object_set_new(c, "alpha_clamped", json_true());
    return c;
}

/* The label: --label, else the probe's label for the chosen backend. */
static const char *default_label(const sim_calib_fitting *s)
{
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(s->probe, "backends"), i, b)
    {
        const char *name = json_string_value(json_object_get(b, "name"));
        const char *label = json_string_value(json_object_get(b, "label"));
        if (name && label && !strcmp(name, s->backend)) return label;
    }
    return s->backend;
}

int sim_calib_write(const sim_calib_fitting *s, const char *out, const char *label, sim_err *err)
{
    json_t *root = json_object(), *curves = json_array();
    json_object_set_new(root, "kvsim_calibration", json_integer(1));
    json_object_set_new(root, "label", json_string(label ? label : default_label(s)));
    json_object_set_new(root, "backend", json_string(s->backend));
    json_object_set_new(root, "model", json_string("t(bytes) = alpha_s + bytes / beta_Bps; bytes = KV payload"));
    json_object_set_new(root, "probe", probe_info(s));
    for (int i = 0; i < s->ngroups; i++)
        if (s->groups[i].fitted) json_array_append_new(curves, curve_json(&s->groups[i]));
    json_object_set_new(root, "curves", curves);
    json_object_set(root, "use", s->use);
    json_object_set_new(root, "use_rule",
                        json_string("fastest non-reference method at 32 MiB (one 256-token "
                                    "LLaMA3.1-8B chunk) on the calibration's backend"));
    json_t *pages = sim_calib_page_copies(s);
    if (pages) json_object_set_new(root, "page_copies", pages);
    if (s->compute) json_object_set(root, "compute", s->compute);
    sim_outfile o;
    int rc = sim_outfile_open(&o, out, err);
    if (!rc && json_dumpf(root, o.f, JSON_INDENT(2) | JSON_REAL_PRECISION(9))) {
        sim_outfile_abort(&o);
        rc = sim_errf(err, "cannot write %s: %s", out, strerror(errno ? errno : EIO));
    } else if (!rc) {
        rc = sim_outfile_close(&o, err);
    }
    json_decref(root);
    return rc;
}
