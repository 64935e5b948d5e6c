/* sched/admit_baseline.c — `baseline` admission: Mooncake §4.3.2's baseline,
 * before early rejection. At arrival a request is admitted on the prefill
 * side's load alone (predicted TTFT / SLO_ttft ≤ load_threshold); its decode
 * instance checks its own load (sched_decode_load) only when the prefill is
 * done, and rejects there if it exceeds the threshold — the prefill work is
 * then wasted (stage after_prefill, Table 4's baseline). */
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
    const sched_decode_view *d = &ctx->decode[decode];
    double tbt = sim_est_decode_iter_s(ctx->est, d->batch + d->pending, d->kv_tokens);
    return sched_decode_load(ctx, req, tbt, d->kv_tokens, d->kv_capacity) <= st->threshold;
}

const sched_admission_ops sched_admit_baseline = {
    .name = "baseline",
    .help = "prefill load at arrival; decode load checked only after prefill (wasted work, 4.3.2)",
    .params = "load_threshold=1: reject above this load (predicted latency / SLO)",
    .create = sched_threshold_create,
    .destroy = sched_state_free,
    .admit = baseline_admit,
    .after_prefill = baseline_after_prefill,
};
