/* sched/admit_early_reject.c — `early_reject` admission: Mooncake §4.3.2.
 * The decode side's load is assessed before the prefill begins: at arrival,
 * reject when the greater of the prefill load (predicted TTFT / SLO_ttft on
 * the chosen prefill instance) and the decode load of the chosen decode
 * instance as it is now — the requests that reached it plus this one
 * (sched_decode_load_now) — exceeds load_threshold. No prefill work is wasted,
 * but the decode load it sees lags the requests still in prefill: the
 * anti-phase oscillation of §4.3.3. With decode_signal=1 the decode load is
 * the pool's, the paper's "greater load between the prefill and decoding
 * pools" (sched_decode_pool_load_now). */
#include "sched/sched.h"

#include <math.h>

static sched_verdict early_admit(void *state, const sched_ctx *ctx, const sim_request *req, const sched_route *route,
                                 const sched_decode_choice *dec)
{
    const sched_threshold *st = state;
    bool needs_decode = req->output_len > 1;
    if (route->prefill < 0 || (needs_decode && dec->decode < 0)) return SCHED_REJECT_AT_ARRIVAL;
    double load = sched_prefill_load(ctx, req, route);
    if (needs_decode) load = fmax(load, sched_decode_load_signal(ctx, req, dec->decode, st->pool));
    return load > st->threshold ? SCHED_REJECT_AT_ARRIVAL : SCHED_ACCEPT;
}

const sched_admission_ops sched_admit_early_reject = {
    .name = "early_reject",
    .help = "reject at arrival when max(prefill load, current decode load) exceeds the threshold (4.3.2)",
    .params = "load_threshold=1: reject above this load (predicted latency / SLO); "
              "decode_signal=0: 1 = the decode pool's mean predicted TBT / SLO_tbt (4.3.1) instead of the instance's "
              "max(TBT, KV) load",
    .create = sched_threshold_create,
    .destroy = sched_state_free,
    .admit = early_admit,
};
