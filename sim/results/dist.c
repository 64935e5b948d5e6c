/* sim/results/dist.c — a latency's {mean, p50, p90, p99} over per-request
 * values, as every summary and the head of a run give it
 * (sim/results/results_int.h).
 *
 * Mean: values added in index order (id order). Quantile q interpolates
 * between the order statistics around q·(n−1) (GSL's definition, numpy's
 * default); each order statistic is found by selection (gsl_stats_select,
 * O(n)) rather than by sorting every value; a streamed run selects the same
 * order statistics from its column (sim_spill_select, results.c). With no
 * value present (no request completed) each is null: undefined, not 0. */
#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_statistics_double.h>

#include "sim/results/results_int.h"

const double sim_results_quantiles[3] = {0.5, 0.9, 0.99};

json_t *sim_results_dist_json(int64_t n, double sum, const double *at)
{
    if (n == 0) return json_pack("{s:n, s:n, s:n, s:n}", "mean", "p50", "p90", "p99");
    return json_pack("{s:f, s:f, s:f, s:f}", "mean", sum / (double)n, "p50", at[0], "p90", at[1], "p99", at[2]);
}

json_t *sim_results_dist(const double *vals, int64_t cap)
{
    double *v = sim_xmalloc((size_t)(cap ? cap : 1) * sizeof *v), sum = 0;
    int64_t n = 0;
    for (int64_t i = 0; i < cap; i++)
        if (!isnan(vals[i])) sum += (v[n++] = vals[i]);
    double at[3] = {0, 0, 0};
    for (int k = 0; k < 3 && n > 0; k++) {
        double pos = sim_results_quantiles[k] * (double)(n - 1);
        int64_t lo = (int64_t)floor(pos);
        double lo_v = gsl_stats_select(v, 1, (size_t)n, (size_t)lo);
        double hi_v = lo + 1 < n ? gsl_stats_select(v, 1, (size_t)n, (size_t)lo + 1) : lo_v;
        at[k] = lo_v + (hi_v - lo_v) * (pos - (double)lo);
    }
    free(v);
    return sim_results_dist_json(n, sum, at);
}
