/* sched/route_random.c — `random` router: a uniformly random active prefill
 * instance (Mooncake §4.2's "random scheduling" baseline of Fig. 5). */
#include "sched/sched.h"

static void route_random(void *state, const sched_ctx *ctx, const sim_request *req, sched_route *out)
{
    int active[ctx->n_prefill], n = 0;
    for (int i = 0; i < ctx->n_prefill; i++)
        if (ctx->prefill[i].active) active[n++] = i;
    out->prefill = -1;
    if (n == 0) return;
    int i = active[gsl_rng_uniform_int(ctx->rng, (unsigned long)n)];
    sched_route_to(ctx, req, i, sched_scope_prefix(ctx, req, i), out);
}

const sched_router_ops sched_route_random = {
    .name = "random",
    .help = "uniformly random prefill instance (Fig. 5 baseline)",
    .params = "",
    .route = route_random,
};
