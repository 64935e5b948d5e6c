/* sim/serving/disagg/core.c — what every part of the disaggregated model
 * shares, at the bottom of its call graph (see cluster_int.h): request
 * bookkeeping (the in-flight list, a request's end and its requests row,
 * decode KV reservations, work lost with a failed instance), an instance's
 * switch once drained, the conductor's views of the instances, and the
 * truth noise of compute steps. Calls nothing above it: the events it
 * schedules (RETRY, SWITCH_DONE) are handled by flow.c and control.c. */
#include "sim/serving/disagg/cluster_int.h"

#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_randist.h>

void sim_cluster_live_add(cluster *c, req_state *q)
{
    q->live = true;
    q->live_prev = NULL;
    q->live_next = c->live_head;
    if (c->live_head) c->live_head->live_prev = q;
    c->live_head = q;
    c->n_live++;
}

static void live_remove(cluster *c, req_state *q)
{
    if (!q->live) return;
    if (q->live_prev) q->live_prev->live_next = q->live_next;
    else c->live_head = q->live_next;
    if (q->live_next) q->live_next->live_prev = q->live_prev;
    q->live = false;
    c->n_live--;
}

double sim_cluster_noise(cluster *c)
{
    if (c->cfg->noise <= 0) return 1;
    double f = 1 + gsl_ran_gaussian(c->rng_noise, c->cfg->noise);
    return f > 0.1 ? f : 0.1;
}

int32_t sim_cluster_hit_tokens(const cluster *c, const sim_request *r, int32_t blocks)
{
    int64_t t = (int64_t)blocks * c->cfg->block_tokens;
    return t < r->input_len ? (int32_t)t : r->input_len;
}

void sim_cluster_free_req(req_state *s)
{
    sim_topk_free(&s->topk);
    kv_pic_ticket_free(&s->pic);
    sim_request_free(s->r);
    free(s);
}

static void write_row(cluster *c, req_state *q, sim_stage stage)
{
    const sim_request *r = q->r;
    bool started = q->prefill_start >= 0;
    sim_request_row row;
    sim_serving_row(c->cfg, r, stage, started ? q->shown_first : -1, q->last_token, &q->topk, &row);
    row.prefill_inst = q->prefill;
    row.decode_inst = q->decode;
    /* a PIC store's reuse is no prefix: its tokens and whole blocks, as the
     * aggregated model counts them */
    row.hit_blocks = c->pic ? q->pic_reused / c->cfg->block_tokens : q->hit_blocks;
    row.hit_tokens = c->pic ? q->pic_reused : sim_cluster_hit_tokens(c, r, q->hit_blocks);
    row.remote_blocks = q->remote_blocks;
    row.prefill_start_ms = started ? sim_ns_to_ms(q->prefill_start) : -1;
    row.prefill_gpu_s = q->prefill_gpu_s;
    row.tokens = stage == SIM_STAGE_NONE ? q->tokens : 0;
    row.retries = q->retries + q->preemptions; /* restarts, as the aggregated model counts them */
    row.preemptions = q->preemptions;
    row.left_ms = sim_ns_to_ms(c->eng->now);
    if (sim_results_add_request(c->run->db, &row, c->run->err)) c->run->failed = true;
}

void sim_cluster_pic_release(cluster *c, req_state *q)
{
    if (!q->pic_held) return;
    instance *in = &c->inst[q->pic_node];
    kv_pic_release(c->pic_st[q->pic_node], &q->pic);
    q->pic_held = false;
    if (!in->running && in->queue.head) sim_engine_push(c->eng, c->eng->now, EV_UNBLOCK, in->id, in->gen, NULL);
}

void sim_cluster_finish(cluster *c, req_state *q, sim_stage stage)
{
    sim_cluster_pic_release(c, q);
    write_row(c, q, stage);
    live_remove(c, q);
    sim_serving_finished(c->run, q->r);
    sim_cluster_free_req(q);
}

/* Release q's KV reservation on its decode instance, unless that instance
 * failed since (a failure resets its reservations). */
void sim_cluster_release_decode(cluster *c, req_state *q)
{
    if (q->decode < 0) return;
    instance *d = &c->inst[q->decode];
    if (d->gen == q->decode_gen) {
        d->kv_reserved -= q->need_kv;
        d->pending--;
        sim_cluster_check_drained(c, d);
    }
    q->decode = -1;
}

/* The work q had done was lost with an instance: start over, or count it lost. */
void sim_cluster_lost_work(cluster *c, req_state *q)
{
    sim_cluster_pic_release(c, q);
    sim_cluster_release_decode(c, q);
    live_remove(c, q);
    if (!c->cfg->retry_on_failure) return sim_cluster_finish(c, q, SIM_STAGE_LOST);
    sim_topk_free(&q->topk);
    q->prefill = q->transfer_from = -1;
    q->prefill_start = q->first_token = q->kv_ready = q->last_token = q->shown_first = q->decode_begin = -1;
    q->hit_blocks = q->remote_blocks = q->tokens = q->pic_reused = 0;
    q->kv_held = 0;
    q->preempted = false;
    q->fetched = q->fetch_blocks = 0; /* pins of a fetch went with the failed node's blocks */
    q->prefill_gpu_s = 0;
    q->retries++;
    sim_engine_push(c->eng, c->eng->now, EV_RETRY, -1, 0, q);
}

double sim_cluster_decode_mem(const cluster *c, const instance *d)
{
    int64_t kv = c->cfg->decode_incremental ? d->kv_batch + d->kv_waiting : d->kv_reserved;
    return (double)kv / (double)c->kv_capacity;
}

void sim_cluster_decode_held(cluster *c, const instance *d)
{
    if (c->kv_capacity > 0)
        c->held_decode_s += sim_ns_to_s(c->eng->now - d->iter_start) * (double)d->kv_batch / (double)c->kv_capacity;
}

int64_t sim_cluster_decode_span_ns(const cluster *c, const instance *in, int64_t end)
{
    int64_t from = in->role_since > c->run->first_arrival ? in->role_since : c->run->first_arrival;
    return in->role == ROLE_DECODE && end > from ? end - from : 0;
}

void sim_cluster_refresh_views(cluster *c)
{
    c->n_prefill = c->n_decode = 0;
    for (int i = 0; i < c->n_inst; i++) {
        instance *in = &c->inst[i];
        if (in->role == ROLE_PREFILL) c->pidx[in->view = c->n_prefill++] = i;
        else c->didx[in->view = c->n_decode++] = i;
    }
}

static void build_views(cluster *c)
{
    int64_t now = c->eng->now;
    for (int k = 0; k < c->n_prefill; k++) {
        const instance *in = &c->inst[c->pidx[k]];
        int64_t busy = in->running ? in->running_est_end : now;
        if (in->blocked_until > busy) busy = in->blocked_until;
        double running = busy > now ? sim_ns_to_s(busy - now) : 0;
        c->pview[k] = (sched_prefill_view){
            .node = in->id,
            .active = in->state == ST_ACTIVE,
            .queue_len = in->queue.n + (in->running != NULL),
            .queue_s = running + in->queued_est_s,
            .nic_tx_wait_s = in->nic_tx_free > now ? sim_ns_to_s(in->nic_tx_free - now) : 0,
            .nic_rx_wait_s = in->nic_rx_free > now ? sim_ns_to_s(in->nic_rx_free - now) : 0,
        };
    }
    for (int k = 0; k < c->n_decode; k++) {
        const instance *in = &c->inst[c->didx[k]];
        c->dview[k] = (sched_decode_view){
            .node = in->id,
            .active = in->state == ST_ACTIVE,
            .batch = in->nbatch,
            .pending = in->pending,
            .kv_tokens = in->kv_reserved,
            .kv_resident = in->kv_batch + in->kv_waiting,
            .kv_capacity = c->kv_capacity,
            .ctx_tokens = in->ctx_tokens,
        };
    }
}

/* Admitted, unfinished requests as the conductor predicts their decode, and
 * the uniform decode time t_d it assumes (Mooncake §4.3.4: "we assume that
 * each request's decoding stage takes a uniform time t_d", and requests
 * "whose execution time exceeds t_d" are removed): the mean decode time of
 * finished requests, but at least twice the mean time so far of those still
 * decoding — early in a run only short decodes have finished, and a request
 * seen mid-decode has on average half of its decode behind it. A decode's
 * time runs from when it entered a batch (decode_begin) to its last token,
 * the same clock the prediction runs t_d on (start below): measured from
 * the prefill's end instead, t_d would also hold the KV transfer and the
 * wait for HBM room, and requests already in a batch would be predicted to
 * leave that much late (by 81 s of waiting on issue 42's long-prefill
 * trace under decode_signal=1). */
static int build_inflight(cluster *c, double *t_d)
{
    if (c->n_live > c->inflight_cap) {
        c->inflight_cap = (int)c->n_live * 2;
        c->inflight = sim_xrealloc(c->inflight, (size_t)c->inflight_cap * sizeof *c->inflight);
    }
    int n = 0, decoding = 0;
    double elapsed = 0;
    for (req_state *q = c->live_head; q; q = q->live_next) {
        if (q->decode < 0) continue;
        /* its decode's start: when it entered a batch; before that, the
         * prefill's estimate but no earlier than now (one queued for room
         * in HBM must not age out of the predicted pool, nor one that
         * entered late leave it early: t_d runs from the real start) */
        int64_t start = q->decode_begin >= 0                ? q->decode_begin
                        : q->est_decode_start > c->eng->now ? q->est_decode_start
                                                            : c->eng->now;
        c->inflight[n++] = (sched_inflight){sim_ns_to_s(start - c->eng->now), q->need_kv, q->r->input_len, q->tokens};
        if (q->decode_begin >= 0) decoding++, elapsed += sim_ns_to_s(c->eng->now - q->decode_begin);
    }
    double finished = c->decode_n ? c->decode_s_sum / (double)c->decode_n : 0;
    double running = decoding ? 2 * elapsed / decoding : 0;
    *t_d = finished > running ? finished : running;
    return n;
}

sched_ctx sim_cluster_ctx(cluster *c, bool with_inflight)
{
    build_views(c);
    double t_d = 0;
    int n_inflight = with_inflight ? build_inflight(c, &t_d) : 0;
    return (sched_ctx){
        .cfg = c->cfg,
        .est = &c->est,
        .shadow = c->cache->view(c->cache_st),
        .rng = c->rng_policy,
        .now_ns = c->eng->now,
        .n_prefill = c->n_prefill,
        .prefill = c->pview,
        .n_decode = c->n_decode,
        .decode = c->dview,
        .kv_bytes_per_token = c->cost.kv_bytes_per_token,
        .n_inflight = n_inflight,
        .inflight = c->inflight,
        .mean_decode_s = t_d,
        .kv_incremental = c->cfg->decode_incremental,
        .outputs = c->outputs,
    };
}

/* A draining instance with no work left starts its role switch. */
void sim_cluster_check_drained(cluster *c, instance *in)
{
    if (in->state != ST_DRAINING) return;
    bool idle = in->role == ROLE_PREFILL ? !in->running && !in->queue.head
                                         : !in->nbatch && !in->waiting.head && !in->pending && !in->nloading;
    if (!idle) return;
    in->state = ST_SWITCHING;
    sim_engine_push(c->eng, c->eng->now + sim_s_to_ns(c->cfg->switch_s), EV_SWITCH_DONE, in->id, in->gen, NULL);
}
