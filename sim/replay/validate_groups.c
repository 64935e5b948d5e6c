/* sim/replay/validate_groups.c — the median errors of a `kvsim validate`
 * report, over all its experiments ("median_ape") and per group of them
 * (`--by model|gpu|tp|workload`): where a model family, a GPU, a
 * parallelism or a workload is off, the overall median hides it. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "sim/replay/validate_int.h"

double sim_validate_median(double *v, int n)
{
    if (n == 0) return NAN;
    gsl_sort(v, 1, (size_t)n);
    return gsl_stats_median_from_sorted_data(v, 1, (size_t)n);
}

static const char *const metrics[] = {"e2e_ms", "ttft_ms", "itl_ms", "tpot_ms"}, *const stats[] = {"mean", "p50", "p90",
                                                                                                   "p99"};
enum { NMETRICS = sizeof metrics / sizeof metrics[0], NSTATS = sizeof stats / sizeof stats[0] };

/* median_ape: per metric and statistic, over the rows that have it. */
json_t *vexp_medians(const json_t *rows)
{
    json_t *out = json_object();
    double *v = sim_xcalloc(json_array_size(rows) + 1, sizeof *v);
    for (int m = 0; m < NMETRICS; m++) {
        json_t *o = json_object();
        for (int s = 0; s < NSTATS; s++) {
            int n = 0;
            size_t i;
            const json_t *r;
            json_array_foreach(rows, i, r)
            {
                const json_t *x = json_object_get(json_object_get(json_object_get(r, "ape"), metrics[m]), stats[s]);
                if (json_is_number(x)) v[n++] = json_number_value(x);
            }
            if (n) json_object_set_new(o, stats[s], json_real(sim_validate_median(v, n)));
        }
        if (json_object_size(o)) json_object_set_new(out, metrics[m], o);
        else json_decref(o);
    }
    free(v);
    return out;
}

/* A row's group under `by`, as text ("" when the row has none). */
static void group_of(const json_t *row, const char *by, char *buf, size_t n)
{
    const json_t *v = json_object_get(row, by);
    if (json_is_integer(v)) snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    else snprintf(buf, n, "%s", json_is_string(v) ? json_string_value(v) : "");
}

/* The expressible rows of group g, in report order. */
static json_t *members(const json_t *rows, const char *by, const char *g)
{
    json_t *out = json_array();
    size_t i;
    const json_t *r;
    char k[160];
    json_array_foreach(rows, i, r)
    {
        group_of(r, by, k, sizeof k);
        if (!strcmp(k, g) && !strcmp(json_string_value(json_object_get(r, "status")), "ok"))
            json_array_append(out, (json_t *)r);
    }
    return out;
}

int sim_validate_by_check(const char *by, sim_err *err)
{
    if (strcmp(by, "model") && strcmp(by, "gpu") && strcmp(by, "tp") && strcmp(by, "workload"))
        return sim_errf(err, "--by '%.64s': group by model, gpu, tp or workload", by);
    return 0;
}

int sim_validate_groups(const json_t *report, const char *by, json_t **out, sim_err *err)
{
    if (sim_validate_by_check(by, err)) return -1;
    const json_t *rows = json_object_get(report, "experiments");
    json_t *groups = json_array(), *seen = json_object();
    size_t i;
    const json_t *r;
    char g[160];
    json_array_foreach(rows, i, r)
    {
        group_of(r, by, g, sizeof g);
        if (json_object_get(seen, g)) continue;
        json_object_set_new(seen, g, json_true());
        json_t *m = members(rows, by, g);
        json_array_append_new(groups, json_pack("{s:s, s:I, s:o}", "group", g, "experiments",
                                                (json_int_t)json_array_size(m), "median_ape", vexp_medians(m)));
        json_decref(m);
    }
    json_decref(seen);
    *out = json_pack("{s:s, s:o}", "by", by, "groups", groups);
    return 0;
}
