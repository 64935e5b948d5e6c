/* sim/cost/estimator.h — what the conductor believes (docs/architecture.md §1, truth vs belief).
 *
 * Mooncake §4.1 predicts prefill time "using a polynomial regression model
 * fitted with offline data". kvsim does the same: at start-up it draws
 * `samples` (n, p) pairs, measures the truth model on them with multiplicative
 * Gaussian noise (cost.estimator_noise, the profiling error), and fits
 *     t(n, p) ≈ c0 + c1·(n − p) + c2·(n² − p²)
 * by least squares (GSL multifit). Eq. 1 is exactly of this form, so with zero
 * noise the estimator is exact up to per-chunk overheads; with noise the
 * policies see realistic errors. Transfer and decode estimates use the same
 * analytic curves as the truth (they are what calibration measured). */
#ifndef SIM_ESTIMATOR_H
#define SIM_ESTIMATOR_H

#include <gsl/gsl_rng.h>

#include "sim/cost/cost.h"

typedef struct sim_estimator {
    const sim_cost *cost;
    const sim_cost *decode_cost; /* decode iterations: the decode side's (NULL or = cost unless a cluster sets it) */
    double coef[3];              /* c0, c1, c2 */
    double rel_rmse;             /* relative RMS error of the fit on its samples */
} sim_estimator;

int sim_estimator_fit(sim_estimator *e, const sim_cost *cost, gsl_rng *rng, int samples, double noise, int max_tokens,
                      sim_err *err);
/* Estimated prefill compute time of n tokens with p cached (≥ 0). */
double sim_est_prefill_s(const sim_estimator *e, int32_t n, int32_t p);
/* Estimated time to move `bytes` over a NIC busy for another wait_s. */
double sim_est_nic_s(const sim_estimator *e, double bytes, double wait_s);
/* Estimated load time of cached blocks into HBM. */
double sim_est_h2d_s(const sim_estimator *e, double bytes);
/* Estimated decode iteration time. */
double sim_est_decode_iter_s(const sim_estimator *e, int batch, int64_t ctx_tokens);

#endif
