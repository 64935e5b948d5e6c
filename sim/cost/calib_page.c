/* sim/cost/calib_page.c — the cost of page-by-page copies from the probe's
 * per_page samples (sim/cost/calib.h: sim_page_cost).
 *
 * The per_page method moves a chunk the way vLLM's native offload does: one
 * cudaMemcpyAsync per 16-token page, layer and K/V half. Its time is not a
 * function of bytes alone (a 256-token chunk of a one-KV-head shard makes
 * 4 KiB copies, of LLaMA3.1-8B 32 KiB ones), so t = alpha + bytes/beta
 * fits it badly. With the copy count as a second regressor,
 *     t = copies × per_copy_s + bytes / beta_Bps,
 * weighted least squares (GSL gsl_multifit_wlinear, weights 1/t², relative
 * error as for the curves) gives the launch cost of one copy and the
 * bandwidth the copies stream at. copies = tokens / page_tokens × layers × 2,
 * from the sample's shape in the probe's config. */
#include <gsl/gsl_multifit.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "sim/cost/calib_fit.h"

/* Layers of the probe's shape `name`, or 0. */
static double shape_layers(const json_t *probe, const char *name)
{
    size_t i;
    json_t *sh;
    json_array_foreach(json_object_get(json_object_get(probe, "config"), "shapes"), i, sh)
    {
        const char *n = json_string_value(json_object_get(sh, "name"));
        if (n && !strcmp(n, name)) return json_number_value(json_object_get(sh, "layers"));
    }
    return 0;
}

/* The per_page samples of one direction on the calibration's backend:
 * (copies, bytes, seconds) rows; returns how many (at most cap). */
static size_t page_rows(const sim_calib_fitting *s, const char *dir, double (*rows)[3], size_t cap)
{
    double page = json_number_value(json_object_get(json_object_get(s->probe, "config"), "page_tokens"));
    size_t i, n = 0;
    json_t *smp;
    json_array_foreach(json_object_get(s->probe, "samples"), i, smp)
    {
        const char *b = json_string_value(json_object_get(smp, "backend"));
        const char *m = json_string_value(json_object_get(smp, "method"));
        const char *d = json_string_value(json_object_get(smp, "direction"));
        const char *sh = json_string_value(json_object_get(smp, "shape"));
        double tokens = json_number_value(json_object_get(smp, "tokens"));
        if (!b || !m || !d || !sh || strcmp(b, s->backend) || strcmp(m, "per_page") || strcmp(d, dir)) continue;
        double layers = shape_layers(s->probe, sh);
        if (!(page > 0) || !(layers > 0) || !(tokens > 0) || n == cap) continue;
        rows[n][0] = ceil(tokens / page) * layers * 2;
        rows[n][1] = json_number_value(json_object_get(smp, "bytes"));
        rows[n++][2] = json_number_value(json_object_get(smp, "median_s"));
    }
    return n;
}

/* Fit one direction; NULL with fewer than three samples or a fit without
 * a positive per-copy cost and bandwidth. */
static json_t *fit_direction(const sim_calib_fitting *s, const char *dir)
{
    double rows[512][3];
    size_t n = page_rows(s, dir, rows, 512);
    if (n < 3) return NULL;
    gsl_matrix *X = gsl_matrix_alloc(n, 2), *cov = gsl_matrix_alloc(2, 2);
    gsl_vector *y = gsl_vector_alloc(n), *w = gsl_vector_alloc(n), *c = gsl_vector_alloc(2);
    for (size_t i = 0; i < n; i++) {
        gsl_matrix_set(X, i, 0, rows[i][0]);
        gsl_matrix_set(X, i, 1, rows[i][1]);
        gsl_vector_set(y, i, rows[i][2]);
        gsl_vector_set(w, i, 1 / (rows[i][2] * rows[i][2]));
    }
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(n, 2);
    double chisq, worst = 0;
    gsl_multifit_wlinear(X, w, y, c, cov, &chisq, ws);
    double a = gsl_vector_get(c, 0), inv_beta = gsl_vector_get(c, 1);
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs(a * rows[i][0] + inv_beta * rows[i][1] - rows[i][2]) / rows[i][2]);
    gsl_multifit_linear_free(ws);
    gsl_matrix_free(X), gsl_matrix_free(cov), gsl_vector_free(y), gsl_vector_free(w), gsl_vector_free(c);
    if (!(a > 0) || !(inv_beta > 0)) return NULL;
    return json_pack("{s:f, s:f, s:f, s:I}", "per_copy_s", a, "beta_Bps", 1 / inv_beta, "max_rel_residual", worst,
                     "points", (json_int_t)n);
}

json_t *sim_calib_page_copies(const sim_calib_fitting *s)
{
    json_t *load = fit_direction(s, "load"), *store = fit_direction(s, "store");
    if (!load || !store) {
        json_decref(load), json_decref(store);
        return NULL;
    }
    return json_pack("{s:s, s:s, s:o, s:o}", "method", "per_page", "model",
                     "t = copies x per_copy_s + bytes / beta_Bps; one copy per 16-token page, layer and K/V half",
                     "load", load, "store", store);
}
