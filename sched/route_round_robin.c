/* sched/route_round_robin.c — `round_robin` router: active prefill instances
 * in turn, skipping inactive ones. */
#include "sched/sched.h"

#include <stdlib.h>

typedef struct rr_state {
    int next;
} rr_state;

static int rr_create(void **state, const json_t *params, sim_err *err)
{
    *state = sim_xcalloc(1, sizeof(rr_state));
    return 0;
}

static void route_rr(void *state, const sched_ctx *ctx, const sim_request *req, sched_route *out)
{
    rr_state *st = state;
    out->prefill = -1;
    for (int k = 0; k < ctx->n_prefill; k++) {
        int i = (st->next + k) % ctx->n_prefill;
        if (!ctx->prefill[i].active) continue;
        st->next = (i + 1) % ctx->n_prefill;
        sched_route_to(ctx, req, i, sched_scope_prefix(ctx, req, i), out);
        return;
    }
}

const sched_router_ops sched_route_round_robin = {
    .name = "round_robin",
    .help = "active prefill instances in turn",
    .params = "",
    .create = rr_create,
    .destroy = sched_state_free,
    .route = route_rr,
};
