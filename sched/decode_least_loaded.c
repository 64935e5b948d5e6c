/* sched/decode_least_loaded.c — `least_loaded` decode selector (Mooncake
 * Algorithm 1 line 17, §4.1).
 *
 * The predicted TBT of an instance with this request added is one decode
 * iteration over its batch + pending requests + this one, reading all their
 * reserved KV. Among instances whose HBM can hold the request's KV now, pick
 * the lowest predicted TBT (so the SLO holds wherever it can); ties to the
 * lowest index. If none can hold it now, pick the one with the fewest
 * reserved KV tokens (the request waits there for room). Only a request
 * larger than an empty instance's HBM gets no instance (-1). */
#include "sched/sched.h"

static double predicted_tbt(const sched_ctx *ctx, const sched_decode_view *d, int64_t need)
{
    return sim_est_decode_iter_s(ctx->est, d->batch + d->pending + 1, d->kv_tokens + need);
}

static void select_least_loaded(void *state, const sched_ctx *ctx, const sim_request *req, sched_decode_choice *out)
{
    int64_t need = (int64_t)req->input_len + req->output_len;
    int fit = -1, any = -1;
    double fit_tbt = 0;
    for (int j = 0; j < ctx->n_decode; j++) {
        const sched_decode_view *d = &ctx->decode[j];
        if (!d->active || need > d->kv_capacity) continue;
        if (any < 0 || d->kv_tokens < ctx->decode[any].kv_tokens) any = j;
        double tbt = predicted_tbt(ctx, d, need);
        if (d->kv_tokens + need <= d->kv_capacity && (fit < 0 || tbt < fit_tbt)) fit = j, fit_tbt = tbt;
    }
    out->decode = fit >= 0 ? fit : any;
    out->tbt_s = out->decode >= 0 ? predicted_tbt(ctx, &ctx->decode[out->decode], need) : 0;
}

const sched_decode_ops sched_decode_least_loaded = {
    .name = "least_loaded",
    .help = "lowest predicted TBT among decode instances whose HBM holds the request",
    .params = "",
    .select = select_least_loaded,
};
