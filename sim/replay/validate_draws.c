/* sim/replay/validate_draws.c — the draws of an experiment's workload.
 *
 * A measured run is one draw of its load generator: inference-perf shuffles
 * its prompt pool and jitters its arrival gaps with a seed the study does
 * not publish (sim/trace/tracegen_sp.c). On a mixture-of-experts model one
 * draw differs from the next by which fused-MoE variants its passes meet
 * (docs/measured.md §4), and so by its whole start-up: on the Mixtral
 * training run, mean TTFT varies by a factor of two between seeds. So
 * `kvsim validate` replays each experiment's workload at seeds 1..n and
 * predicts every statistic as its mean over the draws (the expected value
 * of what one run measures), and reports the range of the draws' errors
 * beside it (docs/validation.md §2). */
#include <math.h>
#include <stdlib.h>

#include "sim/replay/validate_int.h"

void vrun_clear(vrun *r)
{
    json_decref(r->summary);
    json_decref(r->head);
    r->summary = r->head = NULL;
}

void vruns_free(vrun *r, int n)
{
    for (int k = 0; k < n; k++) vrun_clear(&r[k]);
    free(r);
}

json_t *vdraw_mean_head(const vrun *r, int n)
{
    json_t *out = json_deep_copy(r[0].head), *m;
    const char *metric, *stat;
    json_object_foreach(out, metric, m)
    {
        json_t *v;
        if (!json_is_object(m)) continue;
        json_object_foreach(m, stat, v)
        {
            if (!json_is_number(v)) continue;
            double sum = 0;
            for (int k = 0; k < n; k++)
                sum += json_number_value(json_object_get(json_object_get(r[k].head, metric), stat));
            json_object_set_new(m, stat, json_real(sum / n));
        }
    }
    return out;
}

void vdraw_range_add(json_t *range, const json_t *mpe)
{
    const char *metric, *stat;
    const json_t *m, *v;
    json_object_foreach((json_t *)mpe, metric, m)
    {
        json_t *to = json_object_get(range, metric);
        if (!to) json_object_set_new(range, metric, to = json_object());
        json_object_foreach((json_t *)m, stat, v)
        {
            double x = json_number_value(v);
            json_t *lh = json_object_get(to, stat);
            if (!lh) json_object_set_new(to, stat, json_pack("[f,f]", x, x));
            else {
                if (x < json_number_value(json_array_get(lh, 0))) json_array_set_new(lh, 0, json_real(x));
                if (x > json_number_value(json_array_get(lh, 1))) json_array_set_new(lh, 1, json_real(x));
            }
        }
    }
}

/* Append the names of summary's caveats to names, each once. */
static void add_caveat_names(json_t *names, const json_t *summary)
{
    json_t *cv, *seen;
    size_t i, j;
    json_array_foreach(json_object_get(summary, "caveats"), i, cv)
    {
        json_t *name = json_object_get(cv, "name");
        bool again = false;
        json_array_foreach(names, j, seen) again |= json_equal(seen, name);
        if (!again) json_array_append(names, name);
    }
}

/* moe_compiles over the draws: {"variants", "stall_s"} as their means
 * (a draw that compiled nothing counts 0) and "by_draw", each draw's. */
static json_t *moe_over_draws(const vrun *r, int n)
{
    json_t *by = json_array();
    double v = 0, s = 0;
    for (int k = 0; k < n; k++) {
        const json_t *c = json_object_get(r[k].summary, "moe_compiles");
        double vk = json_number_value(json_object_get(c, "variants")),
               sk = json_number_value(json_object_get(c, "stall_s"));
        v += vk, s += sk;
        json_array_append_new(by, json_pack("{s:I, s:f}", "variants", (json_int_t)vk, "stall_s", sk));
    }
    return json_pack("{s:f, s:f, s:o}", "variants", v / n, "stall_s", s / n, "by_draw", by);
}

void vdraw_findings(const vrun *r, int n, json_t *row)
{
    bool over = false, moe = false;
    double preempt = 0;
    const json_t *fit = NULL;
    json_t *names = json_array();
    for (int k = 0; k < n; k++) {
        const json_t *f = json_object_get(r[k].summary, "fit_range");
        over |= json_is_true(json_object_get(json_object_get(r[k].summary, "diagnosis"), "overloaded"));
        preempt += json_number_value(json_object_get(r[k].summary, "preemptions"));
        moe |= json_object_get(r[k].summary, "moe_compiles") != NULL;
        add_caveat_names(names, r[k].summary);
        if (f && (!fit || json_integer_value(json_object_get(f, "peak_seqs")) >
                              json_integer_value(json_object_get(fit, "peak_seqs"))))
            fit = f;
    }
    json_object_set_new(row, "overloaded", json_boolean(over));
    json_object_set_new(row, "preemptions", json_real(preempt / n));
    if (json_array_size(names)) json_object_set(row, "caveats", names); /* what no measurement checked */
    json_decref(names);
    if (moe) json_object_set_new(row, "moe_compiles", moe_over_draws(r, n));
    if (fit) json_object_set(row, "fit_range", (json_t *)fit);
}
