/* sim/cost/estimator.c — the conductor's prefill-time regression and transfer
 * estimates (see sim/cost/estimator.h for the model and why). */
#include "sim/cost/estimator.h"

#include <math.h>

#include <gsl/gsl_multifit.h>
#include <gsl/gsl_randist.h>

static void features(int32_t n, int32_t p, double *x)
{
    double dn = n, dp = p;
    x[0] = 1;
    x[1] = dn - dp;
    x[2] = dn * dn - dp * dp;
}

/* Relative weights: long prefills dominate absolute error otherwise. */
static int fit(sim_estimator *e, const gsl_matrix *X, const gsl_vector *y, const gsl_vector *w, sim_err *err)
{
    size_t k = X->size1;
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(k, 3);
    gsl_vector *c = gsl_vector_alloc(3);
    gsl_matrix *cov = gsl_matrix_alloc(3, 3);
    double chisq;
    int rc = gsl_multifit_wlinear(X, w, y, c, cov, &chisq, ws);
    for (int i = 0; i < 3; i++) e->coef[i] = gsl_vector_get(c, i);
    e->rel_rmse = sqrt(chisq / (double)k);
    gsl_matrix_free(cov);
    gsl_vector_free(c);
    gsl_multifit_linear_free(ws);
    return rc ? sim_errf(err, "estimator: least-squares fit failed (%s)", gsl_strerror(rc)) : 0;
}

int sim_estimator_fit(sim_estimator *e, const sim_cost *cost, gsl_rng *rng, int samples, double noise, int max_tokens,
                      sim_err *err)
{
    e->cost = e->decode_cost = cost;
    gsl_matrix *X = gsl_matrix_alloc((size_t)samples, 3);
    gsl_vector *y = gsl_vector_alloc((size_t)samples), *w = gsl_vector_alloc((size_t)samples);
    sim_cost_quiet(cost, true); /* its samples are no request of the run: no caveat */
    for (int i = 0; i < samples; i++) {
        int32_t n = 1 + (int32_t)gsl_rng_uniform_int(rng, (unsigned long)max_tokens);
        int32_t p = (int32_t)gsl_rng_uniform_int(rng, (unsigned long)n);
        double t = sim_cost_prefill_s(cost, n, p) * (1 + gsl_ran_gaussian(rng, noise));
        double x[3];
        features(n, p, x);
        for (int j = 0; j < 3; j++) gsl_matrix_set(X, (size_t)i, (size_t)j, x[j]);
        gsl_vector_set(y, (size_t)i, t);
        gsl_vector_set(w, (size_t)i, 1.0 / (t * t + 1e-12));
    }
    sim_cost_quiet(cost, false);
    int rc = fit(e, X, y, w, err);
    gsl_matrix_free(X);
    gsl_vector_free(y);
    gsl_vector_free(w);
    return rc;
}

double sim_est_prefill_s(const sim_estimator *e, int32_t n, int32_t p)
{
    if (p >= n) p = n > 0 ? n - 1 : 0;
    double x[3];
    features(n, p, x);
    double t = e->coef[0] * x[0] + e->coef[1] * x[1] + e->coef[2] * x[2];
    return t > 0 ? t : 0;
}

double sim_est_nic_s(const sim_estimator *e, double bytes, double wait_s)
{
    return (bytes > 0 ? wait_s : 0) + sim_cost_nic_s(e->cost, bytes);
}

double sim_est_h2d_s(const sim_estimator *e, double bytes) { return sim_cost_h2d_s(e->cost, bytes); }

double sim_est_decode_iter_s(const sim_estimator *e, int batch, int64_t ctx_tokens)
{
    return sim_cost_decode_iter_s(e->decode_cost ? e->decode_cost : e->cost, batch, ctx_tokens);
}
