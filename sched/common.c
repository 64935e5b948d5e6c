/* sched/common.c — estimates every policy needs, computed one way only:
 * SLOs of a request, service time on an instance, prefill and decode loads
 * (docs/definitions.md), and parameter reading. */
#include "sim/config/param.h"
#include "sched/sched.h"

#include <math.h>
#include <stdlib.h>

double sched_slo_ttft_s(const sched_ctx *ctx, const sim_request *req)
{
    return (req->slo_ttft_ms > 0 ? req->slo_ttft_ms : ctx->cfg->slo_ttft_ms) / 1e3;
}

double sched_slo_tbt_s(const sched_ctx *ctx, const sim_request *req)
{
    return (req->slo_tbt_ms > 0 ? req->slo_tbt_ms : ctx->cfg->slo_tbt_ms) / 1e3;
}

static int32_t prefix_tokens(const sched_ctx *ctx, const sim_request *req, int32_t blocks)
{
    int64_t t = (int64_t)blocks * ctx->cfg->block_tokens;
    return t < req->input_len ? (int32_t)t : req->input_len;
}

double sched_est_service_s(const sched_ctx *ctx, const sim_request *req, int32_t prefix_blocks)
{
    int32_t p = prefix_tokens(ctx, req, prefix_blocks);
    double load = sim_est_h2d_s(ctx->est, (double)p * ctx->kv_bytes_per_token);
    return load + sim_est_prefill_s(ctx->est, req->input_len, p);
}

void sched_route_to_est(const sched_ctx *ctx, int i, int32_t prefix_blocks, double service_s, sched_route *out)
{
    out->prefill = i;
    out->prefix_blocks = prefix_blocks;
    out->fetch_remote = ctx->cfg->scope == KV_SCOPE_GLOBAL;
    out->replicate = false;
    out->transfer_from = -1;
    out->service_s = service_s;
    out->ttft_s = ctx->prefill[i].queue_s + out->service_s;
}

void sched_route_to(const sched_ctx *ctx, const sim_request *req, int i, int32_t prefix_blocks, sched_route *out)
{
    sched_route_to_est(ctx, i, prefix_blocks, sched_est_service_s(ctx, req, prefix_blocks), out);
}

/* Four slots, replaced in turn: a decision sees few distinct prefixes. */
double sched_memo_service(sched_memo *m, const sched_ctx *ctx, const sim_request *req, int32_t prefix_blocks)
{
    for (int k = 0; k < m->n; k++)
        if (m->prefix[k] == prefix_blocks) return m->service_s[k];
    int k = m->n < 4 ? m->n++ : m->next++ % 4;
    m->prefix[k] = prefix_blocks;
    return m->service_s[k] = sched_est_service_s(ctx, req, prefix_blocks);
}

int sched_holder_param(const json_t *params, bool *probe, sim_err *err)
{
    double v;
    if (sim_param_number(params, "holder_index", 1, 0, 1, &v, err)) return -1;
    *probe = v == 0;
    return 0;
}

/* Both ways look only at the first `bound` keys (kv_store_prefix_bound:
 * no node's run goes past the keys some node stores), so an instance's
 * prefix is its run over those: from the index, run[node]; probing, one
 * lookup per key per tier of each instance. */
void sched_local_prefixes(const sched_ctx *ctx, const sim_request *req, bool probe, int32_t *local)
{
    int32_t bound = kv_store_prefix_bound(ctx->shadow, req->keys, req->nblocks);
    int32_t run[kv_store_nodes(ctx->shadow)];
    bool index = !probe && bound > 0 && kv_store_prefix_runs(ctx->shadow, req->keys, bound, run) == 0;
    for (int i = 0; i < ctx->n_prefill; i++) {
        const sched_prefill_view *p = &ctx->prefill[i];
        if (!p->active || bound == 0) local[i] = 0;
        else local[i] = index ? run[p->node] : kv_store_prefix_local(ctx->shadow, p->node, req->keys, bound);
    }
}

int32_t sched_scope_prefix(const sched_ctx *ctx, const sim_request *req, int i)
{
    return kv_store_prefix_any(ctx->shadow, ctx->prefill[i].node, req->keys, req->nblocks);
}

double sched_prefill_load(const sched_ctx *ctx, const sim_request *req, const sched_route *route)
{
    return route->ttft_s / sched_slo_ttft_s(ctx, req);
}

double sched_decode_load(const sched_ctx *ctx, const sim_request *req, double tbt_s, int64_t kv_tokens,
                         int64_t capacity)
{
    double mem = capacity > 0 ? (double)kv_tokens / (double)capacity : 0;
    double tbt = tbt_s / sched_slo_tbt_s(ctx, req);
    return tbt > mem ? tbt : mem;
}

int64_t sched_join_kv(const sched_ctx *ctx, const sim_request *req)
{
    return (int64_t)req->input_len + (ctx->kv_incremental ? 1 : req->output_len);
}

double sched_decode_load_now(const sched_ctx *ctx, const sim_request *req, int decode, double *tbt_s)
{
    const sched_decode_view *d = &ctx->decode[decode];
    int64_t kv = d->kv_resident + sched_join_kv(ctx, req);
    double tbt = sim_est_decode_iter_s(ctx->est, d->batch + 1, kv);
    if (tbt_s) *tbt_s = tbt;
    return sched_decode_load(ctx, req, tbt, kv, d->kv_capacity);
}

/* Mooncake's decode-pool load (§4.3.1, §4.3.2, §4.3.4): "the average TBT
 * ratio of all decoding instances to l_tbt". Each active decode instance's
 * predicted iteration over the requests that reached it (0 when it has
 * none), req joining instance `decode`; KV is not a term. */
double sched_decode_pool_load_now(const sched_ctx *ctx, const sim_request *req, int decode)
{
    double sum = 0;
    int n = 0;
    for (int j = 0; j < ctx->n_decode; j++) {
        const sched_decode_view *d = &ctx->decode[j];
        if (!d->active) continue;
        int batch = d->batch + (j == decode);
        int64_t kv = d->kv_resident + (j == decode ? sched_join_kv(ctx, req) : 0);
        sum += batch > 0 ? sim_est_decode_iter_s(ctx->est, batch, kv) : 0;
        n++;
    }
    return n ? sum / n / sched_slo_tbt_s(ctx, req) : INFINITY;
}

double sched_decode_load_signal(const sched_ctx *ctx, const sim_request *req, int decode, bool pool)
{
    return pool ? sched_decode_pool_load_now(ctx, req, decode) : sched_decode_load_now(ctx, req, decode, NULL);
}

int sched_decode_signal_param(const json_t *params, bool *pool, sim_err *err)
{
    double v;
    if (sim_param_number(params, "decode_signal", 0, 0, 1, &v, err)) return -1;
    *pool = v > 0;
    return 0;
}

int sched_threshold_create(void **state, const json_t *params, sim_err *err)
{
    sched_threshold *st = sim_xcalloc(1, sizeof *st);
    *state = st;
    if (sim_param_number(params, "load_threshold", 1.0, 0, 1e9, &st->threshold, err)) return -1;
    return sched_decode_signal_param(params, &st->pool, err);
}

void sched_state_free(void *state) { free(state); }
