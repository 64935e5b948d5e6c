/* sched/decode_least_loaded.c — `least_loaded` decode selector (Mooncake
 * Algorithm 1 line 17, §4.1).
 *
 * The predicted TBT of an instance with this request added is one decode
 * iteration over its batch + pending requests + this one, reading all their
 * reserved KV. Its load is the greater of predicted TBT / SLO_tbt and
 * reserved KV / HBM capacity (sched_decode_load): an instance whose HBM
 * cannot hold the request now would make it wait. The least-loaded active
 * instance wins (ties: lowest index), so the SLO holds and the KV fits
 * wherever possible. Only a request larger than an empty instance's HBM
 * gets no instance (-1). */
#include "sched/sched.h"

static void select_least_loaded(void *state, const sched_ctx *ctx, const sim_request *req, sched_decode_choice *out)
{
    int64_t need = (int64_t)req->input_len + req->output_len;
    out->decode = -1;
    out->tbt_s = out->load = 0;
    for (int j = 0; j < ctx->n_decode; j++) {
        const sched_decode_view *d = &ctx->decode[j];
        if (!d->active || need > d->kv_capacity) continue;
        double tbt = sim_est_decode_iter_s(ctx->est, d->batch + d->pending + 1, d->kv_tokens + need);
        double load = sched_decode_load(ctx, req, tbt, d->kv_tokens + need, d->kv_capacity);
        if (out->decode < 0 || load < out->load) *out = (sched_decode_choice){j, tbt, load};
    }
}

const sched_decode_ops sched_decode_least_loaded = {
    .name = "least_loaded",
    .help = "least-loaded decode instance: max(predicted TBT/SLO, reserved KV/HBM) (Algorithm 1 line 17)",
    .params = "",
    .select = select_least_loaded,
};
