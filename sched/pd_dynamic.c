/* sched/pd_dynamic.c — `dynamic` PD-ratio controller: Mooncake §5.1.
 *
 * Every pd_period_s the controller takes the per-instance load samples of
 * the last period (prefill: predicted queue time / SLO_ttft; decode: the
 * decode load of sched_decode_load), drops the top and bottom pd_trim (10%)
 * of each role's samples, and computes the imbalance factor
 *     f_im = (L̄_decode + 1) / (L̄_prefill + 1).
 * f_im > pd_band means decode is overloaded: move one instance prefill →
 * decode; f_im < 1/pd_band the other way. Steps are bounded to one instance
 * at a time, never while another is draining or switching, and never below
 * one instance per role; the mechanism drains the instance before its
 * switch, which costs cluster.switch_ms.
 *
 * Capacity tide (optional, param `tide`): a schedule [[t_s, instances], ...]
 * of how many instances are powered on from time t_s on (the "machine tide"
 * that adds capacity at peak hours and removes it off-peak). Below the
 * target the controller powers one instance on into the more loaded side
 * (decode when f_im ≥ 1); above it, it drains one from the less loaded side
 * and powers it off. A tide step takes precedence over a ratio move.
 *
 * Decisions where the paper is silent: the band (1.5) rather than driving
 * f_im to exactly 1, which the paper warns oscillates; one tide step per
 * period, like ratio moves; the schedule holds its last value. */
#include "sim/config/param.h"
#include "sched/sched.h"

#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

typedef struct tide_step {
    double t_s;
    int instances;
} tide_step;

typedef struct pd_state {
    double period, band, trim;
    tide_step *tide;
    int ntide;
} pd_state;

static void pd_destroy(void *state)
{
    pd_state *st = state;
    if (st) free(st->tide);
    free(st);
}

/* params.tide: [[t_s, instances], ...] with non-decreasing times and at
 * most the cluster's instances (a larger target could never be met). */
static int read_tide(pd_state *st, const json_t *params, int instances, sim_err *err)
{
    const json_t *tide = params ? json_object_get(params, "tide") : NULL;
    if (!tide) return 0;
    if (!json_is_array(tide) || json_array_size(tide) == 0)
        return sim_errf(err, "policy.params.tide: expected [[t_s, instances], ...]");
    st->ntide = (int)json_array_size(tide);
    st->tide = sim_xcalloc((size_t)st->ntide, sizeof *st->tide);
    for (int i = 0; i < st->ntide; i++) {
        const json_t *e = json_array_get(tide, (size_t)i);
        const json_t *t = json_array_get(e, 0), *n = json_array_get(e, 1);
        if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_number(t) || !json_is_integer(n) ||
            json_integer_value(n) < 2 || (i && json_number_value(t) < st->tide[i - 1].t_s))
            return sim_errf(err, "policy.params.tide[%d]: expected [t_s, instances >= 2] with t_s non-decreasing", i);
        if (json_integer_value(n) > instances)
            return sim_errf(err, "policy.params.tide[%d]: %lld instances, but the cluster has %d (prefill + decode)", i,
                            (long long)json_integer_value(n), instances);
        st->tide[i] = (tide_step){json_number_value(t), (int)json_integer_value(n)};
    }
    return 0;
}

static int pd_create(void **state, const json_t *params, int instances, sim_err *err)
{
    pd_state *st = sim_xcalloc(1, sizeof *st);
    *state = st;
    if (sim_param_number(params, "pd_period_s", 30, 1e-3, 1e9, &st->period, err) ||
        sim_param_number(params, "pd_band", 1.5, 1, 1e9, &st->band, err) ||
        sim_param_number(params, "pd_trim", 0.1, 0, 0.49, &st->trim, err))
        return -1;
    return read_tide(st, params, instances, err);
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

/* Instances the tide wants on at time t; -1 without a tide. */
static int tide_target(const pd_state *st, double t)
{
    int target = -1;
    for (int i = 0; i < st->ntide && st->tide[i].t_s <= t; i++) target = st->tide[i].instances;
    return target;
}

static void pd_decide(void *state, const sched_pd_view *v, sched_pd_decision *out)
{
    const pd_state *st = state;
    *out = (sched_pd_decision){0};
    if (v->switching) return;
    double lp = trimmed_mean(v->prefill_loads, v->n_prefill_loads, st->trim);
    double ld = trimmed_mean(v->decode_loads, v->n_decode_loads, st->trim);
    double f_im = (ld + 1) / (lp + 1);
    int target = tide_target(st, v->t_s); /* <= n_max: checked at create */
    if (target >= 0 && target != v->n_on) {
        out->scale = target > v->n_on ? +1 : -1;
        bool decode_busier = f_im >= 1;
        out->role = (out->scale > 0) == decode_busier ? SCHED_DECODE : SCHED_PREFILL;
        if (out->scale < 0 && (out->role == SCHED_PREFILL ? v->n_prefill : v->n_decode) <= 1)
            out->role = out->role == SCHED_PREFILL ? SCHED_DECODE : SCHED_PREFILL;
        return;
    }
    if (v->n_prefill_loads == 0 || v->n_decode_loads == 0) return;
    if (f_im > st->band && v->n_prefill > 1) out->move = +1;
    else if (f_im < 1 / st->band && v->n_decode > 1) out->move = -1;
}

static double pd_period(const void *state) { return ((const pd_state *)state)->period; }

const sched_pd_ops sched_pd_dynamic = {
    .name = "dynamic",
    .help = "move one instance toward the loaded side when f_im leaves the band; optional capacity tide (5.1)",
    .params = "pd_period_s=30; pd_band=1.5; pd_trim=0.1 (fraction dropped at each end); "
              "tide=[[t_s, instances], ...] (instances powered on from t_s)",
    .create = pd_create,
    .destroy = pd_destroy,
    .decide = pd_decide,
    .period_s = pd_period,
};
