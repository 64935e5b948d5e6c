/* sched/route_kvcentric.c — `kvcentric` router: Mooncake Algorithm 1
 * (KVCache-centric scheduling, §4.1) with cache load balancing (§4.2).
 *
 * For each active prefill instance the conductor knows its local prefix
 * (shadow metadata) and the best prefix any instance holds (best_len on
 * best_instance). If best_len / local_len exceeds
 * kvcache_balancing_threshold (a local_len of 0 counts as infinitely
 * exceeded), the instance would first fetch the missing blocks from the
 * holder: T_transfer = that many blocks over the NIC, after the backlog of
 * the holder's sending side and of this instance's receiving side (the
 * transfer's FIFO start, exactly as sim/serving/disagg/flow.c reserves it).
 * Otherwise it reuses its own prefix. T_queue is the sum of estimated
 * prefill times queued there, T_prefill the fitted estimate (plus loading
 * the prefix into HBM). The minimum T_transfer + T_queue + T_prefill wins
 * (ties: lowest index).
 *
 * Decisions where the paper is silent:
 * - The fetch is an explicit copy into the chosen node's DRAM (Algorithm 1
 *   line 21, TransferKVCache), started when the request is routed, so it
 *   overlaps the queue (§7.4.3: transfers run asynchronously with
 *   inference); hot blocks replicate as a side effect. Without a fetch only
 *   the node's own prefix is reused, even in global scope, so with
 *   threshold = inf no replica is ever made.
 * - The threshold defaults to 1 (fetch whenever a longer prefix exists
 *   elsewhere and the TTFT estimate favours it); "inf" disables fetching.
 * - best_len is searched over prefill instances only (decode nodes hold no
 *   prefix cache in kvsim). */
#include "sim/config/param.h"
#include "sched/sched.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct kvc_state {
    double threshold;
    bool probe; /* policy.params.holder_index = 0 */
} kvc_state;

static int kvc_create(void **state, const json_t *params, sim_err *err)
{
    kvc_state *st = sim_xcalloc(1, sizeof *st);
    const json_t *v = params ? json_object_get(params, "kvcache_balancing_threshold") : NULL;
    if (json_is_string(v) && !strcmp(json_string_value(v), "inf")) st->threshold = INFINITY;
    else if (sim_param_number(params, "kvcache_balancing_threshold", 1.0, 0, INFINITY, &st->threshold, err)) {
        free(st);
        return -1;
    }
    *state = st;
    return sched_holder_param(params, &st->probe, err);
}

/* Fill `out` for instance i reusing `prefix` blocks, `transfer` of them
 * fetched from holder h first (the service estimate of prefix from memo). */
static void candidate(const sched_ctx *ctx, const sim_request *req, sched_memo *memo, int i, int32_t prefix,
                      int32_t transfer, int h, sched_route *out)
{
    double t_transfer = 0;
    if (transfer > 0) { /* the copy queues behind the holder's sends and this node's receipts */
        double bytes = (double)transfer * ctx->cfg->block_tokens * ctx->kv_bytes_per_token;
        double wait = fmax(ctx->prefill[h].nic_tx_wait_s, ctx->prefill[i].nic_rx_wait_s);
        t_transfer = sim_est_nic_s(ctx->est, bytes, wait);
    }
    out->prefill = i;
    out->prefix_blocks = prefix;
    out->fetch_remote = false;
    out->replicate = transfer > 0;
    out->transfer_from = transfer > 0 ? h : -1;
    out->service_s = t_transfer + sched_memo_service(memo, ctx, req, prefix);
    out->ttft_s = ctx->prefill[i].queue_s + out->service_s;
}

static void route_kvcentric(void *state, const sched_ctx *ctx, const sim_request *req, sched_route *out)
{
    const kvc_state *st = state;
    int32_t local[ctx->n_prefill > 0 ? ctx->n_prefill : 1], best_len = 0;
    sched_local_prefixes(ctx, req, st->probe, local);
    int best = -1;
    for (int i = 0; i < ctx->n_prefill; i++)
        if (local[i] > best_len) best_len = local[i], best = i;
    out->prefill = -1;
    sched_memo memo = {0};
    for (int i = 0; i < ctx->n_prefill; i++) {
        if (!ctx->prefill[i].active) continue;
        double ratio = local[i] ? (double)best_len / local[i] : INFINITY;
        bool fetch = best_len > local[i] && ratio > st->threshold;
        sched_route cand;
        candidate(ctx, req, &memo, i, fetch ? best_len : local[i], fetch ? best_len - local[i] : 0, best, &cand);
        if (out->prefill < 0 || cand.ttft_s < out->ttft_s) *out = cand;
    }
}

const sched_router_ops sched_route_kvcentric = {
    .name = "kvcentric",
    .help = "Mooncake Algorithm 1: min TTFT incl. fetching the best remote prefix (replicates hot blocks)",
    .params = "kvcache_balancing_threshold=1: fetch when best_len/local_len exceeds it (\"inf\" = never); "
              "holder_index=1: 0 probes each instance (the reference path)",
    .create = kvc_create,
    .destroy = sched_state_free,
    .route = route_kvcentric,
    .holders = true,
};
