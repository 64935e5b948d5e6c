/* sched/route_least_loaded.c — `least_loaded` router: the active prefill
 * instance with the smallest estimated queue time, ties to the lowest index
 * (Mooncake §4.2's "load-balancing scheduling" baseline of Fig. 5). Cache
 * contents are ignored when choosing. */
#include "sched/sched.h"

static void route_least_loaded(void *state, const sched_ctx *ctx, const sim_request *req, sched_route *out)
{
    int best = -1;
    for (int i = 0; i < ctx->n_prefill; i++)
        if (ctx->prefill[i].active && (best < 0 || ctx->prefill[i].queue_s < ctx->prefill[best].queue_s)) best = i;
    out->prefill = -1;
    if (best >= 0) sched_route_to(ctx, req, best, sched_scope_prefix(ctx, req, best), out);
}

const sched_router_ops sched_route_least_loaded = {
    .name = "least_loaded",
    .help = "smallest estimated prefill queue time (Fig. 5 load-balancing baseline)",
    .params = "",
    .route = route_least_loaded,
};
