/* sched/route_cache_aware_local.c — `cache_aware_local` router: Mooncake
 * §4.1's local cache-aware scheduling (the "local cache aware" bar of Fig. 5).
 *
 * For each active prefill instance, the conductor matches the request's block
 * keys against that instance's own cached prefix (shadow metadata), and
 * estimates TTFT = T_queue + T_load(prefix) + T_prefill(n, prefix). It picks
 * the minimum, ties to the lowest index. So the longest local prefix wins
 * unless its queue costs more than the recomputation it saves. Unlike
 * `kvcentric` (Algorithm 1) it never plans a fetch of a longer remote prefix
 * into the chosen node; in global scope the store still serves remote blocks
 * the node lacks, but without replicating them. */
#include "sched/sched.h"

typedef struct cal_state {
    bool probe; /* policy.params.holder_index = 0 */
} cal_state;

static int cal_create(void **state, const json_t *params, sim_err *err)
{
    cal_state *st = sim_xcalloc(1, sizeof *st);
    *state = st;
    return sched_holder_param(params, &st->probe, err);
}

static void route_cache_aware(void *state, const sched_ctx *ctx, const sim_request *req, sched_route *out)
{
    const cal_state *st = state;
    sched_route cand;
    sched_memo memo = {0};
    int32_t local[ctx->n_prefill > 0 ? ctx->n_prefill : 1];
    sched_local_prefixes(ctx, req, st->probe, local);
    out->prefill = -1;
    for (int i = 0; i < ctx->n_prefill; i++) {
        if (!ctx->prefill[i].active) continue;
        sched_route_to_est(ctx, i, local[i], sched_memo_service(&memo, ctx, req, local[i]), &cand);
        if (out->prefill < 0 || cand.ttft_s < out->ttft_s) *out = cand;
    }
    if (out->prefill >= 0) out->prefix_blocks = sched_scope_prefix(ctx, req, out->prefill);
}

const sched_router_ops sched_route_cache_aware_local = {
    .name = "cache_aware_local",
    .help = "min estimated TTFT using each instance's local prefix (Mooncake 4.1)",
    .params = "holder_index=1: 0 probes each instance (the reference path)",
    .create = cal_create,
    .destroy = sched_state_free,
    .route = route_cache_aware,
    .holders = true,
};
