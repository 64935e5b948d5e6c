/* sim/slo/targets.c — the names of `kvsim plan slo`'s targets (option,
 * summary key, label), its default options and a point's GPU count: the
 * bottom of the room, which every other file of it calls. */
#include "sim/config/scope.h"
#include "sim/trace/trace.h"
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
                        .jobs = 1,
                        .confirm_seeds = 4,
                        .confirm_resample = SIM_RESAMPLE_SESSIONS,
                        .headroom = 0.05};
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

/* The GB of DRAM and disk a point holds: DRAM per node (or per instance)
 * times its nodes — P + D instances, each a node's share, or an aggregated
 * cluster's instances, instances_per_node to a node when the pool is per
 * node — and the disk (kvstore.ssd_bytes, or the point's) likewise. */
double sim_slo_tier_price(const sim_slo_result *r, const sim_slo_point *p)
{
    double nodes = p->prefill + p->decode;
    if (r->aggregated && r->instances_per_node > 1) nodes /= r->instances_per_node;
    double ssd = p->ssd > 0 ? p->ssd : r->ssd_bytes;
    return nodes * (r->dram[p->dram_level] / 1e9 * r->dram_price + ssd / 1e9 * r->ssd_price);
}

double sim_slo_price(const sim_slo_result *r, const sim_slo_point *p)
{
    if (!(r->prefill_price > 0 && r->decode_price > 0)) return 0;
    return p->prefill * r->prefill_price + p->decode * r->decode_price + sim_slo_tier_price(r, p);
}

/* $/h × hours simulated = the run's cost; per output token × 10^6. */
double sim_slo_price_per_mtok(const sim_slo_result *r, const sim_slo_point *p)
{
    double price = sim_slo_price(r, p);
    return price > 0 && p->tokens > 0 ? price * p->sim_seconds / 3600 / p->tokens * 1e6 : 0;
}
