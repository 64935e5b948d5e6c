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
 *   - SLO attainment is below 0.5 while an instance kind was busy at least
 *     half the time. Below that, queueing adds about a service time at
 *     most (an M/M/1 queue at load 0.5 waits one service time on
 *     average), so requests that miss are missing an SLO set below their
 *     own service time: the explanation says so instead (kvsim plan slo
 *     prints that floor). An SLO of 0.001 ms once called a cluster 8%
 *     busy overloaded.
 * The busy and queue rules ask for arrivals spread over the run: a burst
 * (the arrival span under half the simulated span and the run over within
 * the late rule's 30 s of its last arrival, as `--arrivals batch` makes)
 * keeps every instance busy until it drains, and its last requests wait
 * for the first, whatever the cluster's size; SLO attainment alone judges
 * it. A burst of 8 prompts once read "overloaded" on 2 instances, and
 * `kvsim plan slo` sized it 9P1D.
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
#define LOAD_MIN     0.5 /* low attainment counts as overload from this utilisation */
#define BURST_SPAN   0.5 /* arrivals over less than this share of the run: a burst */

typedef struct kind_info {
    const char *key, *what;
} kind_info;

static const kind_info kinds[] = {
    {"prefill", "prefill compute"},
    {"decode", "decode"},
    {"gpu", "aggregated instances (token budget, max_num_seqs or KV pages)"},
    {"remote_link", "the remote store's link (kvstore.remote.Gbps)"},
};

static int instances_of(const sim_config *cfg, const char *key)
{
    if (!strcmp(key, "prefill")) return cfg->n_prefill;
    if (!strcmp(key, "decode")) return cfg->n_decode;
    return cfg->n_instances;
}

/* A saturated kind and what would bring it to TARGET_UTIL: instances, or
 * for the remote store's one link its bandwidth. */
static json_t *saturated_kind(const sim_config *cfg, const kind_info *k, double u)
{
    if (!strcmp(k->key, "remote_link"))
        return json_pack("{s:s, s:f, s:f}", "kind", k->what, "utilisation", u, "Gbps_for_0.8",
                         ceil(cfg->lmc.remote_Bps * 8 / 1e9 * u / TARGET_UTIL));
    int n = instances_of(cfg, k->key);
    return json_pack("{s:s, s:f, s:i, s:i}", "kind", k->what, "utilisation", u, "instances", n, "instances_for_0.8",
                     (int)ceil(n * u / TARGET_UTIL));
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
        json_array_append_new(a, saturated_kind(cfg, &kinds[i], u));
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

void sim_serving_diagnose(const sim_config *cfg, sim_results *db, double trace_span_s, json_t *summary)
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
    bool burst = trace_span_s < BURST_SPAN * sim_s && sim_s - trace_span_s <= SPAN_SLACK_S;
    double first_ms, last_ms;
    sim_results_ttft_trend(db, &first_ms, &last_ms);
    bool grew = !burst && queues_grew(first_ms, last_ms);
    bool busy = !burst && u > BUSY_LIMIT, loaded = burst || u >= LOAD_MIN;
    bool over = late || grew || busy || (attain < ATTAIN_LIMIT && loaded);
    json_t *d = json_pack("{s:b, s:f, s:f, s:o, s:f, s:b}", "overloaded", over, "trace_span_s", trace_span_s,
                          "sim_span_s", sim_s, "span_ratio", trace_span_s > 0 ? json_real(ratio) : json_null(),
                          "slo_attainment", attain, "queues_grew", grew); /* null: arrivals at one instant */
    if (burst) json_object_set_new(d, "burst", json_true());
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

/* ---- which SLO binds, and what resource ---------------------------------------- */

/* How many requests miss an SLO, as far as the summary's percentiles of the
 * metric tell: 0 none of p50, p90, p99 above it (under 1%), 1 the p99
 * (1-10%), 2 the p90 (10-50%), 3 the p50 (over half). */
static int miss_class(const json_t *dist, double slo, const char **stat)
{
    static const char *const stats[] = {"p50", "p90", "p99"};
    for (int k = 0; k < 3; k++)
        if (json_number_value(json_object_get(dist, stats[k])) > slo) return *stat = stats[k], 3 - k;
    return *stat = "p99", 0;
}

static const char *const miss_share[] = {"under 1%", "1-10%", "10-50%", "over half"};

/* The rejections of a run that rejected any, appended at buf + u: those
 * for a KV larger than an instance's HBM (the too_large finding's; at
 * arrival, whatever the policy), then the admission policy's, by where
 * they happened; returns the new length. */
static int say_rejected(const sim_config *cfg, const json_t *summary, char *buf, int u, size_t n)
{
    const json_t *rej = json_object_get(summary, "rejected");
    json_int_t total = json_integer_value(json_object_get(rej, "total")), big = sim_serving_too_large_rejected(summary);
    if (total <= 0 || (size_t)u >= n) return u;
    json_int_t requests = json_integer_value(json_object_get(summary, "requests"));
    if (big > 0)
        u += snprintf(buf + u, n - (size_t)u,
                      "%s%lld of %lld requests rejected at arrival for more KV than an instance's HBM holds "
                      "(caveat too_large)",
                      u ? "; " : "", (long long)big, (long long)requests);
    if (total - big <= 0 || (size_t)u >= n) return u;
    return u + snprintf(buf + u, n - (size_t)u,
                        "%s%lld of %lld requests rejected by policy.admission = %s (at arrival %lld, after prefill "
                        "%lld, on the TTFT SLO %lld)",
                        u ? "; " : "", (long long)(total - big), (long long)requests, cfg->admission,
                        (long long)(json_integer_value(json_object_get(rej, "at_arrival")) - big),
                        (long long)json_integer_value(json_object_get(rej, "after_prefill")),
                        (long long)json_integer_value(json_object_get(rej, "ttft_slo")));
}

/* The explanation: the SLO misses per metric, then the binding side. The
 * side of the metric more requests miss binds (TTFT: prefill, or the
 * aggregated instances, or the remote store's link when it is busier;
 * TBT: decode); its utilisation is set beside the
 * busiest kind's when that is another. Under a PIC policy a TBT-bound run
 * is explained by what prefill no longer computes: requests reach decode
 * sooner and its batches grow, so a policy that recomputes less can have
 * the lower TTFT and the lower attainment (docs/definitions.md). */
void sim_serving_explain(const sim_config *cfg, const json_t *summary, char *buf, size_t n)
{
    *buf = 0;
    double attain = json_number_value(json_object_get(summary, "slo_attainment"));
    if (attain >= 0.99) return;
    const json_t *ttft = json_object_get(summary, "ttft_ms"), *tbt = json_object_get(summary, "tbt_ms"),
                 *util = json_object_get(summary, "utilisation");
    if (json_integer_value(json_object_get(summary, "completed")) == 0) {
        int u = snprintf(buf, n, "SLO attainment %.3f: no request completed", attain);
        say_rejected(cfg, summary, buf, u, n);
        return;
    }
    const char *st, *sb;
    int ct = miss_class(ttft, cfg->slo_ttft_ms, &st), cb = miss_class(tbt, cfg->slo_tbt_ms, &sb);
    bool agg = !strcmp(cfg->mode, "aggregated"), tbt_binds = cb > ct;
    const char *side = tbt_binds ? (agg ? "gpu" : "decode") : (agg ? "gpu" : "prefill");
    /* a first token that waits on the remote store's shared link more than
     * on the instances: the link binds (LMCache, docs/lmcache.md) */
    if (!tbt_binds &&
        json_number_value(json_object_get(util, "remote_link")) > json_number_value(json_object_get(util, side)))
        side = "remote_link";
    const kind_info *k = &kinds[0];
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(kinds[i].key, side)) k = &kinds[i];
    int u = snprintf(buf, n,
                     "SLO attainment %.3f: %s of requests miss slo.tbt_ms %g (TBT %s %.1f ms), %s miss slo.ttft_ms %g "
                     "(TTFT %s %.1f ms)",
                     attain, miss_share[cb], cfg->slo_tbt_ms, sb, json_number_value(json_object_get(tbt, sb)),
                     miss_share[ct], cfg->slo_ttft_ms, st, json_number_value(json_object_get(ttft, st)));
    json_int_t own = json_integer_value(json_object_get(summary, "slo_own_requests"));
    if (own > 0 && (size_t)u < n) /* the shares above test the config's SLOs, not the trace's own */
        u += snprintf(buf + u, n - (size_t)u,
                      "; %lld requests are judged by their own SLOs from the trace (slo_ttft_ms, slo_tbt_ms), which "
                      "these shares do not test",
                      (long long)own);
    u = say_rejected(cfg, summary, buf, u, n);
    if (ct == 0 && cb == 0) return; /* the trace's own SLOs, or the rejections above */
    const json_t *d = json_object_get(summary, "diagnosis");
    double most = json_number_value(json_object_get(d, "utilisation")); /* the busiest kind's (0: none busy) */
    /* not when the diagnosis found overload elsewhere (queues that grew on
     * a link the utilisations do not cover: it once said "not load" under
     * an overloaded LMCache remote store) */
    if (most < LOAD_MIN && !json_is_true(json_object_get(d, "burst")) &&
        !json_is_true(json_object_get(d, "overloaded"))) {
        if ((size_t)u < n)
            snprintf(buf + u, n - (size_t)u,
                     "; at utilisation %.2f at most, not load: the SLO is below these requests' own service time "
                     "(kvsim plan slo prints that floor)",
                     most);
        return;
    }
    u += snprintf(buf + u, (size_t)u < n ? n - (size_t)u : 0, "; binding: %s (utilisation %.2f)", k->what,
                  json_number_value(json_object_get(util, k->key)));
    const char *pic = json_string_value(json_object_get(summary, "pic"));
    if (pic && tbt_binds && (size_t)u < n)
        snprintf(buf + u, n - (size_t)u,
                 "; kvstore.pic = %s recomputes %.1f%% of prompt tokens (chunk hit rate %.3f): the less prefill "
                 "computes, the sooner requests reach decode and the larger its batches, so TBT, not TTFT, binds",
                 pic, 100 * json_number_value(json_object_get(summary, "recompute_fraction")),
                 json_number_value(json_object_get(summary, "chunk_hit_rate")));
}
