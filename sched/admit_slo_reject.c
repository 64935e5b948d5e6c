/* sched/admit_slo_reject.c — `slo_reject` admission: Mooncake Algorithm 1
 * lines 18–19. When the best predicted TTFT exceeds the TTFT SLO, or the
 * chosen decode instance's predicted TBT exceeds the TBT SLO (its decode
 * load, which counts waiting for HBM room, is above 1), answer HTTP
 * 429 (counted as stage ttft_slo). Requests nothing can serve are rejected
 * at arrival as under `none`. */
#include "sched/sched.h"

static sched_verdict admit_slo(void *state, const sched_ctx *ctx, const sim_request *req, const sched_route *route,
                               const sched_decode_choice *dec)
{
    bool needs_decode = req->output_len > 1;
    if (route->prefill < 0 || (needs_decode && dec->decode < 0)) return SCHED_REJECT_AT_ARRIVAL;
    if (route->ttft_s > sched_slo_ttft_s(ctx, req)) return SCHED_REJECT_TTFT_SLO;
    if (needs_decode && dec->load > 1) return SCHED_REJECT_TTFT_SLO;
    return SCHED_ACCEPT;
}

const sched_admission_ops sched_admit_slo_reject = {
    .name = "slo_reject",
    .help = "HTTP 429 when predicted TTFT or TBT exceeds its SLO (Algorithm 1 lines 18-19)",
    .params = "",
    .admit = admit_slo,
};
