/* sim/cost/calib.c — loading calibration files and fitting transfer curves.
 *
 * The fit. Each probe sample is (bytes, median seconds) of one transfer.
 * t = alpha + bytes/beta is linear in bytes, so GSL's linear least squares
 * gives alpha as the intercept and 1/beta as the slope. Sizes span two
 * orders of magnitude (one 16-token page to 1024 tokens), and an ordinary
 * fit would let the largest transfers decide everything: a 1% error at
 * 128 MiB outweighs a 100% error at 2 MiB. Weighting each sample by 1/t²
 * (gsl_fit_wlinear) minimises relative error instead, so alpha — which is
 * what small transfers are made of — is fitted from the small ones. When
 * the free fit still gives alpha < 0 (bandwidth that improves with size
 * faster than the model allows), we refit through the origin
 * (gsl_fit_wmul), since a negative fixed cost would make tiny transfers
 * take negative time in the simulator. */
#include "sim/cost/calib.h"

#include <gsl/gsl_fit.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const sim_calib_slot slots[] = {
    {"load_dram", "load", "dram", offsetof(sim_calib, load_dram)},
    {"store_dram", "store", "dram", offsetof(sim_calib, store_dram)},
    {"load_ssd", "load", "ssd", offsetof(sim_calib, load_ssd)},
    {"store_ssd", "store", "ssd", offsetof(sim_calib, store_ssd)},
};

const sim_calib_slot *sim_calib_slots(size_t *n)
{
    *n = sizeof slots / sizeof slots[0];
    return slots;
}

double sim_curve_time(const sim_curve *c, double bytes) { return c->alpha_s + bytes / c->beta_Bps; }

/* R² and the largest relative residual of a fitted curve. */
static void fit_quality(const double *x, const double *y, size_t n, sim_curve_fit *f)
{
    double mean = 0, ss_tot = 0, ss_res = 0, worst = 0;
    for (size_t i = 0; i < n; i++) mean += y[i] / (double)n;
    for (size_t i = 0; i < n; i++) {
        double r = sim_curve_time(&f->curve, x[i]) - y[i];
        ss_res += r * r;
        ss_tot += (y[i] - mean) * (y[i] - mean);
        if (fabs(r) / y[i] > worst) worst = fabs(r) / y[i];
    }
    f->r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 1;
    f->max_rel_residual = worst;
    f->points = n;
}

int sim_curve_fit_samples(const double *bytes, const double *secs, size_t n, sim_curve_fit *out, sim_err *err)
{
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(secs[i] > 0) || !(bytes[i] > 0) || !isfinite(secs[i]) || !isfinite(bytes[i]))
            return sim_errf(err, "sample %zu: bytes and seconds must be positive (got %g bytes, %g s)", i, bytes[i],
                            secs[i]);
        distinct += bytes[i] != bytes[0];
    }
    if (n < 2 || distinct == 0) return sim_errf(err, "need samples at two or more sizes (got %zu samples)", n);
    double *w = sim_xmalloc(n * sizeof *w);
    for (size_t i = 0; i < n; i++) w[i] = 1 / (secs[i] * secs[i]);
    double c0, c1, cov00, cov01, cov11, chisq;
    gsl_fit_wlinear(bytes, 1, w, 1, secs, 1, n, &c0, &c1, &cov00, &cov01, &cov11, &chisq);
    memset(out, 0, sizeof *out);
    if (c0 < 0) {
        gsl_fit_wmul(bytes, 1, w, 1, secs, 1, n, &c1, &cov11, &chisq);
        c0 = 0;
        out->alpha_clamped = 1;
    }
    free(w);
    if (!(c1 > 0)) return sim_errf(err, "time does not grow with size (fitted slope %g s/byte)", c1);
    out->curve = (sim_curve){.alpha_s = c0, .beta_Bps = 1 / c1};
    fit_quality(bytes, secs, n, out);
    return 0;
}

/* ---- loading ---------------------------------------------------------------- */

static int get_string(const char *path, const json_t *obj, const char *field, const char *key, char *buf, size_t n,
                      sim_err *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_string(v)) return sim_errf(err, "%s: %s: missing or not a string", path, field);
    if (strlen(json_string_value(v)) >= n)
        return sim_errf(err, "%s: %s: longer than %zu characters", path, field, n - 1);
    snprintf(buf, n, "%s", json_string_value(v));
    return 0;
}

/* The curve of curves[] matching (direction, tier, method). */
static int find_curve(const char *path, const json_t *curves, const sim_calib_slot *s, const char *method,
                      sim_curve *out, sim_err *err)
{
    size_t i;
    json_t *c;
    json_array_foreach(curves, i, c)
    {
        if (!json_is_object(c)) return sim_errf(err, "%s: curves[%zu]: not an object", path, i);
        const char *d = json_string_value(json_object_get(c, "direction"));
        const char *t = json_string_value(json_object_get(c, "tier"));
        const char *m = json_string_value(json_object_get(c, "method"));
        if (!d || !t || !m)
            return sim_errf(err, "%s: curves[%zu]: needs string fields direction, tier and method", path, i);
        if (strcmp(d, s->direction) || strcmp(t, s->tier) || strcmp(m, method)) continue;
        json_t *a = json_object_get(c, "alpha_s"), *b = json_object_get(c, "beta_Bps");
        if (!json_is_number(a) || !(json_number_value(a) >= 0) || !isfinite(json_number_value(a)))
            return sim_errf(err, "%s: curves[%zu].alpha_s: must be a number >= 0", path, i);
        if (!json_is_number(b) || !(json_number_value(b) > 0) || !isfinite(json_number_value(b)))
            return sim_errf(err, "%s: curves[%zu].beta_Bps: must be a positive number", path, i);
        *out = (sim_curve){.alpha_s = json_number_value(a), .beta_Bps = json_number_value(b)};
        return 0;
    }
    return sim_errf(err, "%s: use.%s: no curve with direction \"%s\", tier \"%s\", method \"%s\"", path, s->key,
                    s->direction, s->tier, method);
}

static int read_page_cost(const char *path, const json_t *pc, const char *dir, sim_page_cost *out, sim_err *err)
{
    const json_t *d = json_object_get(pc, dir);
    const json_t *a = json_object_get(d, "per_copy_s"), *b = json_object_get(d, "beta_Bps");
    if (!json_is_number(a) || !(json_number_value(a) >= 0) || !isfinite(json_number_value(a)) || !json_is_number(b) ||
        !(json_number_value(b) > 0) || !isfinite(json_number_value(b)))
        return sim_errf(err, "%s: page_copies.%s: needs per_copy_s >= 0 and beta_Bps > 0", path, dir);
    *out = (sim_page_cost){json_number_value(a), json_number_value(b)};
    return 0;
}

static int calib_from_json(const char *path, const json_t *root, sim_calib *out, sim_err *err)
{
    if (!json_is_object(root)) return sim_errf(err, "%s: not a JSON object", path);
    const json_t *ver = json_object_get(root, "kvsim_calibration");
    if (!json_is_integer(ver) || json_integer_value(ver) != 1)
        return sim_errf(err, "%s: kvsim_calibration: expected 1 (is this a calibration file?)", path);
    if (get_string(path, root, "label", "label", out->label, sizeof out->label, err) ||
        get_string(path, root, "backend", "backend", out->backend, sizeof out->backend, err))
        return -1;
    if (strcmp(out->backend, "cpu") && strcmp(out->backend, "cuda"))
        return sim_errf(err, "%s: backend: \"%s\" is not \"cpu\" or \"cuda\"", path, out->backend);
    const json_t *curves = json_object_get(root, "curves"), *use = json_object_get(root, "use");
    if (!json_is_array(curves)) return sim_errf(err, "%s: curves: missing or not an array", path);
    if (!json_is_object(use)) return sim_errf(err, "%s: use: missing or not an object", path);
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
        char field[32], method[64];
        snprintf(field, sizeof field, "use.%s", slots[i].key);
        if (get_string(path, use, field, slots[i].key, method, sizeof method, err) ||
            find_curve(path, curves, &slots[i], method, (sim_curve *)((char *)out + slots[i].offset), err))
            return -1;
    }
    const json_t *pc = json_object_get(root, "page_copies");
    if (!pc) return 0;
    out->has_pages = 1;
    return read_page_cost(path, pc, "load", &out->load_pages, err) ||
                   read_page_cost(path, pc, "store", &out->store_pages, err)
               ? -1
               : 0;
}

/* The last file read, kept parsed: a process that replays many times
 * (kvsim validate's draws, check, sweep's in-process points) reads its
 * preset's calibration once. Its size and modification time tell a file
 * rewritten since from the one kept. */
static struct {
    char path[4096];
    struct stat st;
    json_t *root;
} kept;

static void drop_kept(void)
{
    json_decref(kept.root);
    kept.root = NULL;
}

json_t *sim_calib_read(const char *path, sim_err *err)
{
    struct stat st;
    bool have = stat(path, &st) == 0;
    if (have && kept.root && !strcmp(kept.path, path) && st.st_size == kept.st.st_size &&
        st.st_mtim.tv_sec == kept.st.st_mtim.tv_sec && st.st_mtim.tv_nsec == kept.st.st_mtim.tv_nsec)
        return json_incref(kept.root);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root && je.line < 1) sim_errf(err, "%s: %s", path, je.text);
    else if (!root) sim_errf(err, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    if (root && have && strlen(path) < sizeof kept.path) {
        if (!kept.root) atexit(drop_kept);
        json_decref(kept.root);
        snprintf(kept.path, sizeof kept.path, "%s", path);
        kept.st = st, kept.root = json_incref(root);
    }
    return root;
}

int sim_calib_from_json(const char *path, const json_t *root, sim_calib *out, sim_err *err)
{
    sim_calib c;
    memset(&c, 0, sizeof c);
    int rc = calib_from_json(path, root, &c, err);
    if (!rc) *out = c;
    return rc;
}

int sim_calib_load(const char *path, sim_calib *out, sim_err *err)
{
    json_t *root = sim_calib_read(path, err);
    if (!root) return -1;
    int rc = sim_calib_from_json(path, root, out, err);
    json_decref(root);
    return rc;
}
