/* sched/admit_baseline.c — `baseline` admission: Mooncake §4.3.2's baseline,
 * before early rejection. At arrival a request is admitted on the prefill
 * side's load alone (predicted TTFT / SLO_ttft ≤ load_threshold); its decode
 * instance checks its load only when the prefill is done, and rejects there
 * if it exceeds the threshold — the prefill work is then wasted (stage
 * after_prefill, Table 4's baseline). The load checked is the decode load
 * at that moment (sched_decode_load_now, as early_reject computes it at
 * arrival): the KV of the requests that reached the instance plus this
 * request's, not the KV reserved for requests still in prefill queues,
 * which have not reached it (§4.3.3: the decode load is assessed when the
 * request would join). With decode_signal=1 it is the decode pool's load
 * (sched_decode_pool_load_now, Mooncake §4.3.1). */
#include "sched/sched.h"

static sched_verdict baseline_admit(void *state, const sched_ctx *ctx, const sim_request *req, const sched_route *route,
                                    const sched_decode_choice *dec)
{
    const sched_threshold *st = state;
    if (route->prefill < 0 || (req->output_len > 1 && dec->decode < 0)) return SCHED_REJECT_AT_ARRIVAL;
    return sched_prefill_load(ctx, req, route) > st->threshold ? SCHED_REJECT_AT_ARRIVAL : SCHED_ACCEPT;
}

static bool baseline_after_prefill(void *state, const sched_ctx *ctx, const sim_request *req, int decode)
{
    const sched_threshold *st = state;
    return sched_decode_load_signal(ctx, req, decode, st->pool) <= st->threshold;
}

const sched_admission_ops sched_admit_baseline = {
    .name = "baseline",
    .help = "prefill load at arrival; decode load checked only after prefill (wasted work, 4.3.2)",
    .params = "load_threshold=1: reject above this load (predicted latency / SLO); "
              "decode_signal=0: 1 = the decode pool's mean predicted TBT / SLO_tbt (4.3.1) instead of the instance's "
              "max(TBT, KV) load",
    .create = sched_threshold_create,
    .destroy = sched_state_free,
    .admit = baseline_admit,
    .after_prefill = baseline_after_prefill,
};
