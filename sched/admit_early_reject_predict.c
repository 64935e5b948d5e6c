/* sched/admit_early_reject_predict.c — `early_reject_predict` admission:
 * Mooncake §4.3.4, early rejection based on system-level prediction.
 *
 * At arrival the conductor predicts the decode load at the moment t this
 * request's prefill would finish (t = its predicted TTFT): every admitted
 * request whose prefill completes by t is added to the decode pool, every
 * request whose decode — assumed to take a uniform time t_d — has ended by
 * t is removed. The pool's requests and KV are spread evenly over the
 * decode instances, and the load of one of them with this request added
 * (sched_decode_load: predicted TBT / SLO_tbt or KV / HBM capacity) is the
 * decode load. Reject when the greater of that and the prefill load exceeds
 * load_threshold.
 *
 * Decision where the paper is silent: t_d defaults (t_d_s = 0) to the
 * conductor's running estimate (sim/serving/disagg/cluster.c build_inflight: mean finished
 * decode time, at least twice the mean elapsed time of decodes in progress),
 * 10 s before any request decoded. */
#include "sim/config/param.h"
#include "sched/sched.h"

#include <math.h>
#include <stdlib.h>

typedef struct predict_state {
    double threshold, t_d;
} predict_state;

static int predict_create(void **state, const json_t *params, sim_err *err)
{
    predict_state *st = sim_xcalloc(1, sizeof *st);
    *state = st;
    if (sim_param_number(params, "load_threshold", 1.0, 0, 1e9, &st->threshold, err)) return -1;
    return sim_param_number(params, "t_d_s", 0, 0, 1e9, &st->t_d, err);
}

/* Predicted decode load of one decode instance at time t (seconds from now). */
static double predicted_load(const sched_ctx *ctx, const sim_request *req, double t, double t_d)
{
    int64_t batch = 1, kv = (int64_t)req->input_len + req->output_len;
    for (int i = 0; i < ctx->n_inflight; i++) {
        const sched_inflight *f = &ctx->inflight[i];
        if (f->decode_start_s <= t && f->decode_start_s + t_d > t) batch++, kv += f->ctx_tokens;
    }
    int n = 0;
    int64_t capacity = 0;
    for (int j = 0; j < ctx->n_decode; j++)
        if (ctx->decode[j].active) n++, capacity = ctx->decode[j].kv_capacity;
    if (n == 0) return INFINITY;
    double tbt = sim_est_decode_iter_s(ctx->est, (int)((batch + n - 1) / n), kv / n);
    return sched_decode_load(ctx, req, tbt, kv / n, capacity);
}

static sched_verdict predict_admit(void *state, const sched_ctx *ctx, const sim_request *req, const sched_route *route,
                                   const sched_decode_choice *dec)
{
    const predict_state *st = state;
    bool needs_decode = req->output_len > 1;
    if (route->prefill < 0 || (needs_decode && dec->decode < 0)) return SCHED_REJECT_AT_ARRIVAL;
    double load = sched_prefill_load(ctx, req, route);
    if (needs_decode) {
        double t_d = st->t_d > 0 ? st->t_d : ctx->mean_decode_s > 0 ? ctx->mean_decode_s : 10.0;
        load = fmax(load, predicted_load(ctx, req, route->ttft_s, t_d));
    }
    return load > st->threshold ? SCHED_REJECT_AT_ARRIVAL : SCHED_ACCEPT;
}

const sched_admission_ops sched_admit_early_reject_predict = {
    .name = "early_reject_predict",
    .help = "early rejection on the decode load predicted for when the prefill ends (4.3.4)",
    .params = "load_threshold=1: reject above this load; t_d_s=0: uniform decode time t_d (0 = running estimate)",
    .create = predict_create,
    .destroy = sched_state_free,
    .admit = predict_admit,
    .needs_inflight = true,
};
