/* sched/admit_early_reject_predict.c — `early_reject_predict` admission:
 * Mooncake §4.3.4 (§6.2 of the 2024 preprint), early rejection based on
 * system-level prediction.
 *
 * At arrival the conductor predicts the decode load at the moment t this
 * request's prefill would finish (t = its predicted TTFT): every admitted
 * request whose decode starts by t is in the decode pool at t unless its
 * decode has ended by then — "we assume that each request's decoding stage
 * takes a uniform time t_d" (the paper; its remaining length is then what
 * is left of t_d). With lengths=1, when it ends comes instead from the
 * lengths of the outputs that finished: a request with k tokens out is
 * still decoding Δ steps later with the probability that a finished
 * output longer than k was longer than k + Δ (ctx->outputs). Either way no
 * request's own length is predicted (the paper's request level is future
 * work). Its KV at t is input + k + Δ tokens when decode KV grows a token
 * a step (decode.kv_allocation = incremental; Δ = its time in the pool by
 * t / the pool's step time now), else its reservation. The expected pool
 * is spread evenly over the active decode instances, and the load of one
 * of them with this request added (sched_decode_load: predicted TBT /
 * SLO_tbt or KV / HBM capacity) is the decode load. Reject when the
 * greater of that and the prefill load exceeds load_threshold
 * (docs/definitions-decode.md, "Predicted decode load"). With decode_signal=1
 * the decode load is the TBT term alone: "the average TBT ratio of all
 * decoding instances to l_tbt" (§4.3.4).
 *
 * Decision where the paper is silent: t_d defaults (t_d_s = 0) to the
 * conductor's running estimate (sim/serving/disagg/core.c build_inflight:
 * mean finished decode time, at least twice the mean elapsed time of
 * decodes in progress, a decode timed from its entry into a batch, the
 * start the pool's departures are counted from), 10 s before any request
 * decoded; with lengths=1
 * t_d still applies before any output finished, and a request longer than
 * every finished output is expected to go on decoding. */
#include "sim/config/param.h"
#include "sched/sched.h"

#include <math.h>
#include <stdlib.h>

typedef struct predict_state {
    double threshold, t_d, lengths;
    bool pool; /* decode_signal = 1: the pool's TBT / SLO_tbt, no KV term */
} predict_state;

static int predict_create(void **state, const json_t *params, sim_err *err)
{
    predict_state *st = sim_xcalloc(1, sizeof *st);
    *state = st;
    if (sim_param_number(params, "load_threshold", 1.0, 0, 1e9, &st->threshold, err) ||
        sim_param_number(params, "lengths", 0, 0, 1, &st->lengths, err) ||
        sched_decode_signal_param(params, &st->pool, err))
        return -1;
    return sim_param_number(params, "t_d_s", 0, 0, 1e9, &st->t_d, err);
}

/* Probability that in-flight request f, in the pool from s = max(its
 * decode start, now) with k tokens out, still decodes Δ steps later: by
 * the finished outputs' lengths, or (none kept or finished yet) by the
 * paper's uniform decode time t_d, f's decode ending at end_s. */
static double still_decoding(const sched_lengths *outputs, double k, double delta, double end_s, double t)
{
    if (sched_lengths_n(outputs) == 0) return t < end_s;
    int64_t alive = sched_lengths_above(outputs, k);
    if (alive == 0) return 1; /* longer than every finished output: no evidence it ends */
    return (double)sched_lengths_above(outputs, k + delta) / (double)alive;
}

void sched_predict_pool(const sched_ctx *ctx, const sim_request *req, double t, double t_d, double tau,
                        const sched_lengths *outputs, double *batch, double *kv)
{
    *batch = 1;
    *kv = (double)sched_join_kv(ctx, req);
    for (int i = 0; i < ctx->n_inflight; i++) {
        const sched_inflight *f = &ctx->inflight[i];
        if (f->decode_start_s > t) continue; /* still in prefill (or its KV in flight) at t */
        double from = f->decode_start_s > 0 ? f->decode_start_s : 0, delta = (t - from) / tau;
        double k = f->tokens > 1 ? f->tokens : 1;
        double p = still_decoding(outputs, k, delta, f->decode_start_s + t_d, t);
        bool grows = ctx->kv_incremental && f->input_tokens > 0;
        *batch += p;
        *kv += p * (grows ? f->input_tokens + k + delta : (double)f->ctx_tokens);
    }
}

/* The step time the pool runs at now: the mean predicted iteration of the
 * active decode instances (one request's, over req's input, when all idle). */
static double pool_step_s(const sched_ctx *ctx, const sim_request *req)
{
    double sum = 0;
    int n = 0;
    for (int j = 0; j < ctx->n_decode; j++) {
        const sched_decode_view *d = &ctx->decode[j];
        if (!d->active || d->batch == 0) continue;
        sum += sim_est_decode_iter_s(ctx->est, d->batch, d->ctx_tokens);
        n++;
    }
    return n ? sum / n : sim_est_decode_iter_s(ctx->est, 1, req->input_len);
}

/* Predicted decode load of one decode instance at time t (seconds from
 * now): the expected pool spread evenly over the active instances. With
 * pool (decode_signal=1) its TBT / SLO_tbt alone: every instance then
 * iterates alike, so this is the paper's mean TBT ratio over the pool. */
static double predicted_load(const sched_ctx *ctx, const sim_request *req, double t, double t_d,
                             const sched_lengths *outputs, bool pool)
{
    int n = 0;
    int64_t capacity = 0;
    for (int j = 0; j < ctx->n_decode; j++)
        if (ctx->decode[j].active) n++, capacity = ctx->decode[j].kv_capacity;
    if (n == 0) return INFINITY;
    double batch, kv;
    sched_predict_pool(ctx, req, t, t_d, pool_step_s(ctx, req), outputs, &batch, &kv);
    int64_t per_kv = (int64_t)(kv / n);
    double tbt = sim_est_decode_iter_s(ctx->est, (int)ceil(batch / n), per_kv);
    return pool ? tbt / sched_slo_tbt_s(ctx, req) : sched_decode_load(ctx, req, tbt, per_kv, capacity);
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
        load =
            fmax(load, predicted_load(ctx, req, route->ttft_s, t_d, st->lengths > 0 ? ctx->outputs : NULL, st->pool));
    }
    return load > st->threshold ? SCHED_REJECT_AT_ARRIVAL : SCHED_ACCEPT;
}

const sched_admission_ops sched_admit_early_reject_predict = {
    .name = "early_reject_predict",
    .help = "early rejection on the decode load predicted for when the prefill ends (4.3.4)",
    .params = "load_threshold=1: reject above this load; t_d_s=0: uniform decode time t_d (0 = running estimate); "
              "lengths=0: 1 = expected remaining lengths from finished outputs instead of t_d; "
              "decode_signal=0: 1 = the predicted pool's TBT / SLO_tbt alone (4.3.4), no KV term",
    .create = predict_create,
    .destroy = sched_state_free,
    .admit = predict_admit,
    .needs_inflight = true,
};
