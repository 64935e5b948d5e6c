/* sim/slo/targets.c — the names of `kvsim plan slo`'s targets (option,
 * summary key, label), its default options and a point's GPU count: the
 * bottom of the room, which every other file of it calls. */
#include "sim/config/scope.h"
#include "sim/slo/plan_slo.h"

static const char *const stat_keys[SIM_SLO_NSTATS] = {"mean", "p50", "p90", "p99"};

const char *sim_slo_metric_key(int t) { return t < SIM_SLO_NSTATS ? "ttft_ms" : "tbt_ms"; }
const char *sim_slo_stat_key(int t) { return stat_keys[t % SIM_SLO_NSTATS]; }
bool sim_slo_is_ttft(int t) { return t < SIM_SLO_NSTATS; }

const char *sim_slo_option(int t)
{
    static const char *const names[SIM_SLO_NTARGETS] = {"ttft-mean-ms", "ttft-p50-ms", "ttft-p90-ms", "ttft-p99-ms",
                                                        "tbt-mean-ms",  "tbt-p50-ms",  "tbt-p90-ms",  "tbt-p99-ms"};
    return names[t];
}

const char *sim_slo_label(int t)
{
    static const char *const names[SIM_SLO_NTARGETS] = {"TTFT mean", "TTFT p50", "TTFT p90", "TTFT p99",
                                                        "TBT mean",  "TBT p50",  "TBT p90",  "TBT p99"};
    return names[t];
}

void sim_slo_opts_init(sim_slo_opts *o)
{
    *o = (sim_slo_opts){.attainment = 0.9,
                        .max_instances = 32,
                        .scope = {KV_SCOPE_GLOBAL, KV_SCOPE_LOCAL},
                        .nscope = 2,
                        .cpp = {1, 4},
                        .ncpp = 2,
                        .jobs = 1};
}

int sim_slo_gpus(const sim_slo_result *r, const sim_slo_point *p)
{
    return p->prefill * r->prefill_gpus + p->decode * r->decode_gpus;
}

double sim_slo_cost(const sim_slo_result *r, const sim_slo_point *p)
{
    double price = sim_slo_price(r, p);
    return price > 0 ? price : sim_slo_gpus(r, p);
}

double sim_slo_price(const sim_slo_result *r, const sim_slo_point *p)
{
    return r->prefill_price > 0 && r->decode_price > 0 ? p->prefill * r->prefill_price + p->decode * r->decode_price
                                                       : 0;
}
