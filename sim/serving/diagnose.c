/* sim/serving/diagnose.c — the overload diagnosis of every `kvsim run`
 * (sim/serving/serving.h), so that an overloaded cluster is never reported
 * as a plain latency number.
 *
 * A serving model puts the busy fraction of each instance kind in the
 * summary's "utilisation" object (busy seconds over instances × simulated
 * seconds). The run is overloaded when any of:
 *   - the simulated span exceeds the trace's arrival span by more than 20%
 *     and by more than 30 s while SLO attainment is below 0.9 or an
 *     instance kind was busy more than 80% of the time: a cluster that met
 *     its SLOs at moderate load, with queues that did not grow, and only
 *     took a while to finish its last long answers (a trace replayed fast,
 *     whose tail is its last requests' own service time) is not overloaded;
 *   - queues grew: the last tenth of the requests (in arrival order) waited
 *     for their first token on average more than twice as long as the
 *     first tenth, and by more than a second;
 *   - an instance kind was busy more than 95% of the time;
 *   - SLO attainment is below 0.5.
 * The bottleneck is the busiest kind; each saturated kind (above 95%)
 * comes with the instance count that would bring it to 0.8 at the same load
 * (utilisation scales as 1 / instances: a first estimate, not a plan).
 * Prefill utilisation is a busy fraction; decode's is the share of its
 * capacity (HBM KV) that running batches held; an aggregated instance's
 * ("gpu") is the time-weighted share of its capacity its iterations held:
 * the largest of token budget, max_num_seqs and KV pages (busy time is
 * not headroom there: continuous batching iterates whenever anything runs;
 * the busy fraction is kept as gpu_busy; docs/definitions.md).
 * The summary's decode_load (KV reserved against HBM, reservations of
 * requests still in prefill queues included, or the iteration against the
 * TBT SLO) is not used: an overloaded prefill side piles reservations on
 * idle decode instances and would name decode saturated. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/serving/serving.h"

#define SPAN_LIMIT   1.2
#define SPAN_SLACK_S 30
#define BUSY_LIMIT   0.95
#define ATTAIN_LIMIT 0.5
#define LATE_ATTAIN  0.9 /* a late finish counts below this attainment... */
#define TARGET_UTIL  0.8 /* ...or above this utilisation */

typedef struct kind_info {
    const char *key, *what;
} kind_info;

static const kind_info kinds[] = {
    {"prefill", "prefill compute"},
    {"decode", "decode"},
    {"gpu", "aggregated instances (token budget, max_num_seqs or KV pages)"},
};

static int instances_of(const sim_config *cfg, const char *key)
{
    if (!strcmp(key, "prefill")) return cfg->n_prefill;
    if (!strcmp(key, "decode")) return cfg->n_decode;
    return cfg->n_instances;
}

/* Every kind busier than BUSY_LIMIT, in table order, each with the
 * instances that would bring it to TARGET_UTIL. */
static json_t *saturated(const sim_config *cfg, const json_t *util)
{
    json_t *a = json_array();
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        const json_t *v = json_object_get(util, kinds[i].key);
        double u = json_number_value(v);
        if (!v || u <= BUSY_LIMIT) continue;
        int n = instances_of(cfg, kinds[i].key);
        json_array_append_new(a, json_pack("{s:s, s:f, s:i, s:i}", "kind", kinds[i].what, "utilisation", u, "instances",
                                           n, "instances_for_0.8", (int)ceil(n * u / TARGET_UTIL)));
    }
    return a;
}

/* Queues grew: the last tenth's mean TTFT more than twice and more than
 * GROWTH_MIN_MS above the first tenth's. */
#define GROWTH_MIN_MS 1000
static bool queues_grew(double first_ms, double last_ms)
{
    return !isnan(first_ms) && !isnan(last_ms) && last_ms > 2 * first_ms && last_ms - first_ms > GROWTH_MIN_MS;
}

void sim_serving_diagnose(const sim_config *cfg, const sim_results *db, double trace_span_s, json_t *summary)
{
    const json_t *util = json_object_get(summary, "utilisation");
    double sim_s = json_number_value(json_object_get(summary, "sim_seconds"));
    double attain = json_number_value(json_object_get(summary, "slo_attainment"));
    const kind_info *worst = NULL;
    double u = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        const json_t *v = json_object_get(util, kinds[i].key);
        if (v && json_number_value(v) > u) u = json_number_value(v), worst = &kinds[i];
    }
    double ratio = trace_span_s > 0 ? sim_s / trace_span_s : 0;
    bool late = ratio > SPAN_LIMIT && sim_s - trace_span_s > SPAN_SLACK_S && (attain < LATE_ATTAIN || u > TARGET_UTIL);
    double first_ms, last_ms;
    sim_results_ttft_trend(db, &first_ms, &last_ms);
    bool grew = queues_grew(first_ms, last_ms);
    bool over = late || grew || u > BUSY_LIMIT || attain < ATTAIN_LIMIT;
    json_t *d = json_pack("{s:b, s:f, s:f, s:f, s:f, s:b}", "overloaded", over, "trace_span_s", trace_span_s,
                          "sim_span_s", sim_s, "span_ratio", ratio, "slo_attainment", attain, "queues_grew", grew);
    if (!isnan(first_ms) && !isnan(last_ms)) {
        json_object_set_new(d, "ttft_first_tenth_ms", json_real(first_ms));
        json_object_set_new(d, "ttft_last_tenth_ms", json_real(last_ms));
    }
    if (worst) {
        json_object_set_new(d, "bottleneck", json_string(worst->what));
        json_object_set_new(d, "utilisation", json_real(u));
    }
    json_object_set_new(d, "saturated", saturated(cfg, util));
    json_object_set_new(summary, "diagnosis", d);
}
