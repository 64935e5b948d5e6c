/* sched/pd_dynamic.c — `dynamic` PD-ratio controller: Mooncake §5.1.
 *
 * Every pd_period_s the controller takes the per-instance load samples of
 * the last period (prefill: predicted queue time / SLO_ttft; decode:
 * predicted TBT / SLO_tbt), drops the top and bottom pd_trim (10%) of each
 * role's samples, and computes the imbalance factor
 *     f_im = (L̄_decode + 1) / (L̄_prefill + 1).
 * f_im > pd_band means decode is overloaded: move one instance prefill →
 * decode; f_im < 1/pd_band the other way. Steps are bounded to one instance
 * at a time, never while another is draining or switching, and never below
 * one instance per role; the mechanism drains the instance before its
 * switch, which costs cluster-configured time (pd_switch_s).
 *
 * Decision where the paper is silent: the band (1.5) rather than driving
 * f_im to exactly 1, which the paper warns oscillates. The paper's capacity
 * tide (adding/removing machines over the day) is not modelled. */
#include "sched/registry.h"
#include "sched/sched.h"

#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

typedef struct pd_state {
    double period, band, trim;
} pd_state;

static int pd_create(void **state, const json_t *params, sim_err *err)
{
    pd_state *st = sim_xcalloc(1, sizeof *st);
    *state = st;
    if (sched_param_number(params, "pd_period_s", 30, 1e-3, 1e9, &st->period, err) ||
        sched_param_number(params, "pd_band", 1.5, 1, 1e9, &st->band, err))
        return -1;
    return sched_param_number(params, "pd_trim", 0.1, 0, 0.49, &st->trim, err);
}

static double trimmed_mean(const double *v, int n, double trim)
{
    if (n == 0) return 0;
    double *s = sim_xmalloc((size_t)n * sizeof *s);
    memcpy(s, v, (size_t)n * sizeof *s);
    gsl_sort(s, 1, (size_t)n);
    double m = gsl_stats_trmean_from_sorted_data(trim, s, 1, (size_t)n);
    free(s);
    return m;
}

static int pd_decide(void *state, const sched_pd_view *v)
{
    const pd_state *st = state;
    if (v->switching || v->n_prefill_loads == 0 || v->n_decode_loads == 0) return 0;
    double lp = trimmed_mean(v->prefill_loads, v->n_prefill_loads, st->trim);
    double ld = trimmed_mean(v->decode_loads, v->n_decode_loads, st->trim);
    double f_im = (ld + 1) / (lp + 1);
    if (f_im > st->band && v->n_prefill > 1) return +1;
    if (f_im < 1 / st->band && v->n_decode > 1) return -1;
    return 0;
}

static double pd_period(const void *state) { return ((const pd_state *)state)->period; }

const sched_pd_ops sched_pd_dynamic = {
    .name = "dynamic",
    .help = "move one instance toward the loaded side when f_im leaves the band (Mooncake 5.1)",
    .params = "pd_period_s=30; pd_band=1.5; pd_trim=0.1 (fraction dropped at each end)",
    .create = pd_create,
    .destroy = sched_state_free,
    .decide = pd_decide,
    .period_s = pd_period,
};
