/* sched/admit_none.c — `none` admission: accept everything that some
 * instance can serve at all. A request with no active prefill instance, or
 * whose KV exceeds every decode instance's HBM, is rejected at arrival. */
#include "sched/sched.h"

static sched_verdict admit_none(void *state, const sched_ctx *ctx, const sim_request *req, const sched_route *route,
                                const sched_decode_choice *dec)
{
    bool needs_decode = req->output_len > 1;
    return route->prefill < 0 || (needs_decode && dec->decode < 0) ? SCHED_REJECT_AT_ARRIVAL : SCHED_ACCEPT;
}

const sched_admission_ops sched_admit_none = {
    .name = "none",
    .help = "accept every request some instance can serve",
    .params = "",
    .admit = admit_none,
};
