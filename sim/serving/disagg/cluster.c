/* sim/cluster.c — the PD-disaggregated cluster model on the event engine:
 * the life of a request (see sim/cluster.h). The control plane — PD-ratio
 * controller, faults, samples — is in sim/control.c.
 *
 *   ARRIVAL       the conductor routes (sched/ router), picks a decode
 *                 instance and admits or rejects; admitted requests join the
 *                 prefill instance's FIFO queue and reserve KV room on the
 *                 decode one.
 *   PREFILL_DONE  the prefix hit is committed (hits refreshed, new blocks put
 *                 into the node's cache), the next queued request starts, the
 *                 first token is out (TTFT); admission may still reject here
 *                 (the baseline's wasted prefill).
 *   KV_READY      the request's KV reached its decode node: it waits there for
 *                 room in the running batch.
 *   DECODE_STEP   one continuous-batching iteration ends: every batch member
 *                 emits a token; finished requests leave; waiting ones join.
 *
 * Timing of a prefill started at t (Mooncake §3.1 steps 1–3):
 *   load     = local DRAM→HBM (+ SSD reads) in parallel with blocks from other
 *              nodes over both NICs (each NIC a FIFO resource) then →HBM; a
 *              kvcentric fetch copies the holder's prefix into this node first;
 *   compute  = truth prefill time of the uncached part (sim/cost);
 *   duration = max(load, compute) + min(load, compute)/layers with layer-wise
 *              overlap, else load + compute;
 *   the KV streams to the decode node from t (layer-wise) or from the end, on
 *   both NICs, arriving no earlier than one layer after the prefill.
 *
 * Failures: every instance has a generation, bumped when it fails; events
 * carry the generation they were scheduled under, so work on a failed
 * instance is recognised when its event fires and the request is retried
 * or lost (cluster.on_failure). */
#include "sim/serving/disagg/cluster_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>

#include "sched/registry.h"

static void queue_push(req_queue *q, req_state *s)
{
    s->next = NULL;
    if (q->tail) q->tail->next = s;
    else q->head = s;
    q->tail = s;
    q->n++;
}

static req_state *queue_pop(req_queue *q)
{
    req_state *s = q->head;
    if (!s) return NULL;
    q->head = s->next;
    if (!q->head) q->tail = NULL;
    q->n--;
    return s;
}

static void live_add(cluster *c, req_state *q)
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

static int32_t hit_tokens(const cluster *c, const sim_request *r, int32_t blocks)
{
    int64_t t = (int64_t)blocks * c->cfg->block_tokens;
    return t < r->input_len ? (int32_t)t : r->input_len;
}

static void free_req(req_state *s)
{
    sim_topk_free(&s->topk);
    sim_request_free(s->r);
    free(s);
}

bool sim_cluster_done(const cluster *c) { return c->trace_done && c->inflight_reqs == 0; }

/* ---- finishing a request -------------------------------------------------------- */

static void write_row(cluster *c, req_state *q, sim_stage stage)
{
    const sim_request *r = q->r;
    bool done = stage == SIM_STAGE_NONE, started = q->prefill_start >= 0;
    double ttft = done ? sim_ns_to_ms(q->first_token - r->arrival_ns) : -1;
    double tbt = done && r->output_len > 1 ? sim_topk_mean(&q->topk) * 1e3 : -1;
    double slo_ttft = r->slo_ttft_ms > 0 ? r->slo_ttft_ms : c->cfg->slo_ttft_ms;
    double slo_tbt = r->slo_tbt_ms > 0 ? r->slo_tbt_ms : c->cfg->slo_tbt_ms;
    sim_request_row row = {
        .id = r->index, .line = r->line, .arrival_ms = sim_ns_to_ms(r->arrival_ns),
        .input_len = r->input_len, .output_len = r->output_len, .blocks = r->nblocks,
        .prefill_inst = q->prefill, .decode_inst = q->decode,
        .hit_blocks = q->hit_blocks, .hit_tokens = hit_tokens(c, r, q->hit_blocks), .remote_blocks = q->remote_blocks,
        .prefill_start_ms = started ? sim_ns_to_ms(q->prefill_start) : -1,
        .first_token_ms = started ? sim_ns_to_ms(q->first_token) : -1,
        .done_ms = done ? sim_ns_to_ms(q->last_token) : -1,
        .ttft_ms = ttft, .tbt_ms = tbt, .e2e_ms = done ? sim_ns_to_ms(q->last_token - r->arrival_ns) : -1,
        .prefill_gpu_s = q->prefill_gpu_s, .tokens = done ? q->tokens : 0, .retries = q->retries, .stage = stage,
        .effective = done && ttft <= slo_ttft && tbt <= slo_tbt,
    };
    if (sim_results_add_request(c->db, &row, c->err)) c->failed = true;
}

static void finish(cluster *c, req_state *q, sim_stage stage)
{
    write_row(c, q, stage);
    live_remove(c, q);
    c->inflight_reqs--;
    if (c->eng.now > c->last_done) c->last_done = c->eng.now;
    free_req(q);
}

/* Release q's KV reservation on its decode instance, unless that instance
 * failed since (a failure resets its reservations). */
static void release_decode(cluster *c, req_state *q)
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
    release_decode(c, q);
    live_remove(c, q);
    if (!c->cfg->retry_on_failure) return finish(c, q, SIM_STAGE_LOST);
    sim_topk_free(&q->topk);
    q->prefill = q->transfer_from = -1;
    q->prefill_start = q->first_token = q->kv_ready = q->last_token = -1;
    q->hit_blocks = q->remote_blocks = q->tokens = 0;
    q->prefill_gpu_s = 0;
    q->retries++;
    sim_engine_push(&c->eng, c->eng.now, EV_RETRY, -1, 0, q);
}

/* ---- trace feed ----------------------------------------------------------------- */

static void read_next(cluster *c)
{
    sim_request *r;
    int rc = sim_trace_next(c->trace, &r, c->err);
    if (rc < 0) c->failed = true;
    if (rc <= 0) {
        c->trace_done = rc == 0;
        return;
    }
    req_state *q = sim_xcalloc(1, sizeof *q);
    q->r = r;
    q->prefill = q->decode = q->transfer_from = -1;
    q->prefill_start = q->first_token = q->kv_ready = q->last_token = -1;
    q->need_kv = (int64_t)r->input_len + r->output_len;
    c->inflight_reqs++;
    sim_engine_push(&c->eng, r->arrival_ns, EV_ARRIVAL, -1, 0, q);
}

/* ---- the conductor's view ------------------------------------------------------- */

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
    int64_t now = c->eng.now;
    for (int k = 0; k < c->n_prefill; k++) {
        const instance *in = &c->inst[c->pidx[k]];
        int64_t busy = in->running ? in->running_est_end : now;
        if (in->blocked_until > busy) busy = in->blocked_until;
        double running = busy > now ? sim_ns_to_s(busy - now) : 0;
        c->pview[k] = (sched_prefill_view){
            .node = in->id, .active = in->state == ST_ACTIVE, .queue_len = in->queue.n + (in->running != NULL),
            .queue_s = running + in->queued_est_s,
            .nic_wait_s = in->nic_free > now ? sim_ns_to_s(in->nic_free - now) : 0,
        };
    }
    for (int k = 0; k < c->n_decode; k++) {
        const instance *in = &c->inst[c->didx[k]];
        c->dview[k] = (sched_decode_view){
            .node = in->id, .active = in->state == ST_ACTIVE, .batch = in->nbatch, .pending = in->pending,
            .kv_tokens = in->kv_reserved, .kv_resident = in->kv_batch + in->kv_waiting,
            .kv_capacity = c->kv_capacity, .ctx_tokens = in->ctx_tokens,
        };
    }
}

/* Admitted, unfinished requests as the conductor predicts their decode, and
 * the uniform decode time t_d it assumes (§4.3.4): the mean decode time of
 * finished requests, but at least twice the mean time so far of those still
 * decoding — early in a run only short decodes have finished, and a request
 * seen mid-decode has on average half of its decode behind it. */
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
        c->inflight[n++] = (sched_inflight){sim_ns_to_s(q->est_decode_start - c->eng.now), q->need_kv};
        if (q->first_token >= 0 && q->first_token <= c->eng.now)
            decoding++, elapsed += sim_ns_to_s(c->eng.now - q->first_token);
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
        .cfg = c->cfg, .est = &c->est, .shadow = c->store, .rng = c->rng_policy, .now_ns = c->eng.now,
        .n_prefill = c->n_prefill, .prefill = c->pview, .n_decode = c->n_decode, .decode = c->dview,
        .kv_bytes_per_token = c->cost.kv_bytes_per_token,
        .n_inflight = n_inflight, .inflight = c->inflight, .mean_decode_s = t_d,
    };
}

/* ---- prefill -------------------------------------------------------------------- */

/* Reserve a transfer of `bytes` on the NICs of nodes a and b, FIFO, starting
 * no earlier than `from`; returns its end time. */
static int64_t nic_transfer(cluster *c, int a, int b, int64_t from, double bytes)
{
    int64_t start = from;
    if (c->inst[a].nic_free > start) start = c->inst[a].nic_free;
    if (c->inst[b].nic_free > start) start = c->inst[b].nic_free;
    int64_t end = start + sim_s_to_ns(sim_cost_nic_s(&c->cost, bytes));
    c->inst[a].nic_free = c->inst[b].nic_free = end;
    return end;
}

/* Seconds until a prefix of `hit` blocks, as the store holds it now, is in
 * node's HBM. */
static double prefix_load_s(cluster *c, req_state *q, int node, int32_t hit)
{
    kv_fetch_plan plan = {.remote_from = c->remote_from};
    kv_store_plan(c->store, node, q->r->keys, hit, &plan);
    double bb = c->block_bytes;
    double local = sim_cost_h2d_s(&c->cost, (plan.local[KV_TIER_DRAM] + plan.local[KV_TIER_SSD]) * bb) +
                   sim_cost_ssd_read_s(&c->cost, plan.local[KV_TIER_SSD] * bb);
    int32_t remote = plan.remote[KV_TIER_HBM] + plan.remote[KV_TIER_DRAM] + plan.remote[KV_TIER_SSD];
    int64_t now = c->eng.now, remote_end = now;
    for (int h = 0; h < c->n_inst; h++) {
        if (!plan.remote_from[h]) continue;
        int64_t end = nic_transfer(c, h, node, now, plan.remote_from[h] * bb);
        if (end > remote_end) remote_end = end;
    }
    q->remote_blocks += remote;
    double remote_s = remote ? sim_ns_to_s(remote_end - now) + sim_cost_h2d_s(&c->cost, remote * bb) +
                                   sim_cost_ssd_read_s(&c->cost, plan.remote[KV_TIER_SSD] * bb)
                             : 0;
    return fmax(local, remote_s);
}

/* Algorithm 1 line 21: copy the holder's longer prefix into node's cache
 * over both NICs (a replica), then load it. Returns the load time and sets
 * *hit. When the holder lost the blocks meanwhile, the local prefix is used. */
static double fetch_prefix_s(cluster *c, req_state *q, int node, int32_t *hit)
{
    const sim_request *r = q->r;
    int32_t local = kv_store_prefix_local(c->store, node, r->keys, r->nblocks);
    int h = q->transfer_from;
    int32_t best = c->inst[h].state == ST_DOWN ? 0 : kv_store_prefix_local(c->store, h, r->keys, r->nblocks);
    double load = prefix_load_s(c, q, node, local);
    *hit = local;
    if (best <= local) return load;
    double bytes = (best - local) * c->block_bytes;
    int64_t end = nic_transfer(c, h, node, c->eng.now, bytes);
    kv_store_commit(c->store, node, r->keys, best, best, true, r->cache);
    q->remote_blocks += best - local;
    *hit = best;
    return fmax(load, sim_ns_to_s(end - c->eng.now) + sim_cost_h2d_s(&c->cost, bytes));
}

/* Reserve the KV stream from the prefill node to the decode node. */
static void stream_kv(cluster *c, req_state *q, int node)
{
    double bytes = (double)q->r->input_len * c->cost.kv_bytes_per_token;
    bool lw = c->cfg->layerwise;
    int64_t end = nic_transfer(c, node, q->decode, lw ? q->prefill_start : q->first_token, bytes);
    int64_t tail = q->first_token + sim_s_to_ns(sim_cost_nic_s(&c->cost, bytes / c->cfg->model.layers));
    q->kv_ready = lw && tail > end ? tail : end;
}

static void start_prefill(cluster *c, instance *in)
{
    req_state *q = queue_pop(&in->queue);
    const sim_request *r = q->r;
    in->queued_est_s = in->queue.n ? in->queued_est_s - q->route.service_s : 0;
    int32_t hit;
    double load;
    if (q->route.replicate && q->transfer_from >= 0) {
        load = fetch_prefix_s(c, q, in->id, &hit);
    } else {
        hit = q->route.fetch_remote ? kv_store_prefix_any(c->store, in->id, r->keys, r->nblocks)
                                    : kv_store_prefix_local(c->store, in->id, r->keys, r->nblocks);
        load = prefix_load_s(c, q, in->id, hit);
    }
    int32_t cached = hit_tokens(c, r, hit);
    double compute, dur;
    if (sim_cpp_applies(c, r, cached)) {
        dur = sim_cpp_prefill(c, in, r, cached, load, &compute);
    } else {
        compute = sim_cost_prefill_s(&c->cost, r->input_len, cached) * sim_cluster_noise(c);
        dur = c->cfg->layerwise ? fmax(load, compute) + fmin(load, compute) / c->cfg->model.layers : load + compute;
    }
    q->hit_blocks = hit;
    q->prefill_gpu_s = compute;
    q->prefill_start = c->eng.now;
    q->first_token = c->eng.now + sim_s_to_ns(dur);
    q->est_decode_start = c->eng.now + sim_s_to_ns(q->route.service_s);
    kv_store_pin(c->store, in->id, r->keys, hit);
    if (q->decode >= 0 && r->output_len > 1) stream_kv(c, q, in->id);
    in->running = q;
    in->running_est_end = q->est_decode_start;
    sim_engine_push(&c->eng, q->first_token, EV_PREFILL_DONE, in->id, in->gen, q);
}

/* Start the next queued request unless the instance is down or busy as a
 * pipeline stage of another member's request (then retry when that ends). */
static void next_prefill(cluster *c, instance *in)
{
    if (in->blocked_until > c->eng.now) {
        if (in->queue.head) sim_engine_push(&c->eng, in->blocked_until, EV_UNBLOCK, in->id, in->gen, NULL);
        return;
    }
    if (in->queue.head && in->state != ST_DOWN) start_prefill(c, in);
    else sim_cluster_check_drained(c, in);
}

static void on_unblock(cluster *c, const sim_event *ev)
{
    instance *in = &c->inst[ev->target];
    if (ev->gen == in->gen && !in->running) next_prefill(c, in);
}

/* Admission's second look, after prefill (the baseline's wasted prefill). */
static bool decode_accepts(cluster *c, req_state *q)
{
    if (!c->admission->after_prefill) return true;
    sched_ctx ctx = sim_cluster_ctx(c, false);
    return c->admission->after_prefill(c->admission_st, &ctx, q->r, c->inst[q->decode].view);
}

static void on_prefill_done(cluster *c, const sim_event *ev)
{
    instance *in = &c->inst[ev->target];
    req_state *q = ev->data;
    const sim_request *r = q->r;
    if (ev->gen != in->gen) return sim_cluster_lost_work(c, q); /* the instance failed meanwhile */
    kv_store_commit(c->store, in->id, r->keys, r->nblocks, q->hit_blocks, false, r->cache);
    kv_store_unpin(c->store, in->id, r->keys, q->hit_blocks);
    q->tokens = 1;
    q->last_token = c->eng.now;
    in->running = NULL;
    next_prefill(c, in);
    if (r->output_len <= 1 || q->decode < 0) return finish(c, q, SIM_STAGE_NONE);
    if (c->inst[q->decode].gen != q->decode_gen) return sim_cluster_lost_work(c, q);
    if (!decode_accepts(c, q)) {
        release_decode(c, q);
        return finish(c, q, SIM_STAGE_AFTER_PREFILL);
    }
    q->est_decode_start = c->eng.now;
    sim_engine_push(&c->eng, q->kv_ready, EV_KV_READY, q->decode, q->decode_gen, q);
}

/* ---- arrival -------------------------------------------------------------------- */

static sim_stage verdict_stage(sched_verdict v)
{
    return v == SCHED_REJECT_TTFT_SLO ? SIM_STAGE_TTFT_SLO : SIM_STAGE_AT_ARRIVAL;
}

static void admit(cluster *c, req_state *q)
{
    sched_ctx ctx = sim_cluster_ctx(c, c->admission->needs_inflight);
    sched_decode_choice dec = {.decode = -1};
    c->router->route(c->router_st, &ctx, q->r, &q->route);
    c->decoder->select(c->decoder_st, &ctx, q->r, &dec);
    sched_verdict v = c->admission->admit(c->admission_st, &ctx, q->r, &q->route, &dec);
    if (v != SCHED_ACCEPT) return finish(c, q, verdict_stage(v));
    instance *in = &c->inst[c->pidx[q->route.prefill]];
    q->prefill = in->id;
    q->transfer_from = q->route.transfer_from >= 0 ? c->pidx[q->route.transfer_from] : -1;
    if (dec.decode >= 0 && q->r->output_len > 1) {
        instance *d = &c->inst[c->didx[dec.decode]];
        q->decode = d->id;
        q->decode_gen = d->gen;
        d->kv_reserved += q->need_kv;
        d->pending++;
    }
    q->est_decode_start = c->eng.now + sim_s_to_ns(q->route.ttft_s);
    live_add(c, q);
    in->queued_est_s += q->route.service_s;
    queue_push(&in->queue, q);
    if (!in->running) next_prefill(c, in);
}

static void on_arrival(cluster *c, const sim_event *ev)
{
    read_next(c);
    admit(c, ev->data);
}

static void on_retry(cluster *c, const sim_event *ev) { admit(c, ev->data); }

/* ---- decode --------------------------------------------------------------------- */

static void start_iteration(cluster *c, instance *d)
{
    while (d->waiting.head && d->nbatch < c->cfg->decode_max_batch &&
           d->kv_batch + d->waiting.head->need_kv <= c->kv_capacity) {
        req_state *q = queue_pop(&d->waiting);
        d->kv_waiting -= q->need_kv;
        d->batch[d->nbatch++] = q;
        d->kv_batch += q->need_kv;
        d->ctx_tokens += q->r->input_len + q->tokens;
        d->pending--;
        sim_topk_init(&q->topk, q->r->output_len - 1);
    }
    d->iterating = d->nbatch > 0;
    if (!d->iterating) return sim_cluster_check_drained(c, d);
    double dt = sim_cost_decode_iter_s(&c->cost, d->nbatch, d->ctx_tokens) * sim_cluster_noise(c);
    sim_engine_push(&c->eng, c->eng.now + sim_s_to_ns(dt), EV_DECODE_STEP, d->id, d->gen, NULL);
}

static void on_kv_ready(cluster *c, const sim_event *ev)
{
    instance *d = &c->inst[ev->target];
    if (ev->gen != d->gen) return sim_cluster_lost_work(c, ev->data);
    queue_push(&d->waiting, ev->data);
    d->kv_waiting += ((req_state *)ev->data)->need_kv;
    if (!d->iterating) start_iteration(c, d);
}

static void complete_decode(cluster *c, instance *d, req_state *q)
{
    d->kv_batch -= q->need_kv;
    d->kv_reserved -= q->need_kv;
    d->ctx_tokens -= q->r->input_len + q->tokens;
    c->decode_s_sum += sim_ns_to_s(c->eng.now - q->first_token);
    c->decode_n++;
    finish(c, q, SIM_STAGE_NONE);
}

static void on_decode_step(cluster *c, const sim_event *ev)
{
    instance *d = &c->inst[ev->target];
    if (ev->gen != d->gen) return; /* the batch was handled when the instance failed */
    int kept = 0;
    for (int i = 0; i < d->nbatch; i++) {
        req_state *q = d->batch[i];
        sim_topk_add(&q->topk, sim_ns_to_s(c->eng.now - q->last_token));
        q->last_token = c->eng.now;
        q->tokens++;
        d->ctx_tokens++;
        if (q->tokens < q->r->output_len) d->batch[kept++] = q;
        else complete_decode(c, d, q);
    }
    d->nbatch = kept;
    start_iteration(c, d);
}

/* A draining instance with no work left starts its role switch. */
void sim_cluster_check_drained(cluster *c, instance *in)
{
    if (in->state != ST_DRAINING) return;
    bool idle = in->role == ROLE_PREFILL ? !in->running && !in->queue.head
                                         : !in->nbatch && !in->waiting.head && !in->pending;
    if (!idle) return;
    in->state = ST_SWITCHING;
    sim_engine_push(&c->eng, c->eng.now + sim_s_to_ns(c->cfg->switch_s), EV_SWITCH_DONE, in->id, in->gen, NULL);
}

typedef void (*handler_fn)(cluster *c, const sim_event *ev);

static const handler_fn handlers[EV_NKINDS] = {
    [EV_ARRIVAL] = on_arrival,
    [EV_RETRY] = on_retry,
    [EV_PREFILL_DONE] = on_prefill_done,
    [EV_KV_READY] = on_kv_ready,
    [EV_DECODE_STEP] = on_decode_step,
    [EV_SAMPLE] = sim_control_on_sample,
    [EV_REPLICAS] = sim_control_on_replicas,
    [EV_CONTROL] = sim_control_on_control,
    [EV_SWITCH_DONE] = sim_control_on_switch_done,
    [EV_FAULT] = sim_control_on_fault,
    [EV_RECOVER] = sim_control_on_recover,
    [EV_UNBLOCK] = on_unblock,
};

/* ---- set-up and the run loop ------------------------------------------------------ */

static gsl_rng *rng_new(uint64_t seed)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, (unsigned long)seed);
    return r;
}

int sim_cluster_check_policies(const sim_config *cfg, sim_err *err)
{
    const sched_evict_entry *ev;
    if (!sched_router_lookup(cfg->router))
        return sim_errf(err, "policy.router: unknown router '%s' (see kvsim policies)", cfg->router);
    if (!sched_decode_lookup(cfg->decode_policy))
        return sim_errf(err, "policy.decode: unknown decode selector '%s' (see kvsim policies)", cfg->decode_policy);
    if (!sched_admission_lookup(cfg->admission))
        return sim_errf(err, "policy.admission: unknown admission policy '%s' (see kvsim policies)", cfg->admission);
    if (!sched_pd_lookup(cfg->pd_controller))
        return sim_errf(err, "policy.pd_controller: unknown controller '%s' (see kvsim policies)", cfg->pd_controller);
    if (sched_evict_find(cfg->eviction, &ev, err))
        return sim_errf(err, "kvstore.eviction: unknown eviction policy '%s' (see kvsim policies)", cfg->eviction);
    return 0;
}

static int setup_policies(cluster *c, sim_err *err)
{
    const sim_config *cfg = c->cfg;
    if (sim_cluster_check_policies(cfg, err)) return -1;
    c->router = sched_router_lookup(cfg->router);
    c->decoder = sched_decode_lookup(cfg->decode_policy);
    c->admission = sched_admission_lookup(cfg->admission);
    c->pd = sched_pd_lookup(cfg->pd_controller);
    if ((c->router->create && c->router->create(&c->router_st, cfg->params, err)) ||
        (c->decoder->create && c->decoder->create(&c->decoder_st, cfg->params, err)) ||
        (c->admission->create && c->admission->create(&c->admission_st, cfg->params, err)) ||
        (c->pd->create && c->pd->create(&c->pd_st, cfg->params, err)))
        return -1;
    return 0;
}

static int setup_store(cluster *c, sim_err *err)
{
    const sim_config *cfg = c->cfg;
    kv_store_cfg sc = {
        .nodes = c->n_inst, .scope = cfg->scope, .params = cfg->params, .promote = cfg->promote,
        .tier_blocks = {sim_config_blocks(cfg, cfg->hbm_bytes), sim_config_blocks(cfg, cfg->dram_bytes),
                        sim_config_blocks(cfg, cfg->ssd_bytes)},
        .policy = {cfg->eviction, cfg->eviction, cfg->eviction},
    };
    return kv_store_new(&c->store, &sc, err);
}

static void setup_instances(cluster *c)
{
    const sim_config *cfg = c->cfg;
    c->n_inst = cfg->n_prefill + cfg->n_decode;
    c->inst = sim_xcalloc((size_t)c->n_inst, sizeof *c->inst);
    for (int i = 0; i < c->n_inst; i++) {
        c->inst[i].id = i;
        c->inst[i].role = i < cfg->n_prefill ? ROLE_PREFILL : ROLE_DECODE;
        c->inst[i].batch = sim_xcalloc((size_t)cfg->decode_max_batch, sizeof(req_state *));
    }
    c->pidx = sim_xcalloc((size_t)c->n_inst, sizeof *c->pidx);
    c->didx = sim_xcalloc((size_t)c->n_inst, sizeof *c->didx);
    c->pview = sim_xcalloc((size_t)c->n_inst, sizeof *c->pview);
    c->dview = sim_xcalloc((size_t)c->n_inst, sizeof *c->dview);
    c->remote_from = sim_xcalloc((size_t)c->n_inst, sizeof *c->remote_from);
    sim_cluster_refresh_views(c);
}

static int setup(cluster *c, const sim_config *cfg, sim_results *db, sim_err *err)
{
    c->cfg = cfg;
    c->db = db;
    c->err = err;
    setup_instances(c);
    c->rng_policy = rng_new(cfg->seed);
    c->rng_noise = rng_new(cfg->seed + 1);
    c->rng_fit = rng_new(cfg->seed + 2);
    sim_engine_init(&c->eng);
    if (sim_cost_init(&c->cost, cfg, err)) return -1;
    c->kv_capacity = sim_cost_decode_kv_tokens(&c->cost);
    c->block_bytes = c->cost.kv_bytes_per_token * cfg->block_tokens;
    if (sim_estimator_fit(&c->est, &c->cost, c->rng_fit, cfg->estimator_samples, cfg->estimator_noise, 131072, err))
        return -1;
    if (setup_policies(c, err) || setup_store(c, err)) return -1;
    return sim_trace_open(&c->trace, cfg->trace_path, &cfg->trace, err);
}

static void drain_queue(req_queue *q)
{
    for (req_state *s; (s = queue_pop(q)) != NULL;) free_req(s);
}

/* Free whatever a failed run left in flight, then every structure. Each
 * request lives in exactly one place: an ARRIVAL, RETRY, PREFILL_DONE or
 * KV_READY event, a prefill queue, a decode waiting queue or batch. */
static void teardown(cluster *c)
{
    sim_event ev;
    while (sim_engine_pop(&c->eng, &ev))
        if (ev.data) free_req(ev.data);
    for (int i = 0; c->inst && i < c->n_inst; i++) {
        instance *in = &c->inst[i];
        drain_queue(&in->queue);
        drain_queue(&in->waiting);
        for (int b = 0; b < in->nbatch; b++) free_req(in->batch[b]);
        free(in->batch);
    }
    if (c->router_st) c->router->destroy(c->router_st);
    if (c->decoder_st) c->decoder->destroy(c->decoder_st);
    if (c->admission_st) c->admission->destroy(c->admission_st);
    if (c->pd_st) c->pd->destroy(c->pd_st);
    sim_control_free(c);
    sim_engine_free(&c->eng);
    kv_store_free(c->store);
    if (c->trace) sim_trace_close(c->trace);
    gsl_rng_free(c->rng_policy);
    gsl_rng_free(c->rng_noise);
    gsl_rng_free(c->rng_fit);
    free(c->inst);
    free(c->pidx);
    free(c->didx);
    free(c->pview);
    free(c->dview);
    free(c->inflight);
    free(c->remote_from);
}

static int run_loop(cluster *c, sim_err *err)
{
    read_next(c);
    if (c->failed) return -1;
    if (c->trace_done) return sim_errf(err, "trace %s: no requests to replay", c->cfg->trace_path);
    c->first_arrival = c->eng.heap[0].time;
    sim_control_start(c);
    sim_event ev;
    while (!c->failed && sim_engine_pop(&c->eng, &ev)) handlers[ev.kind](c, &ev);
    return c->failed ? -1 : 0;
}

int sim_cluster_run(const sim_config *cfg, sim_results *db, json_t **summary, sim_err *err)
{
    cluster c = {0};
    int rc = setup(&c, cfg, db, err);
    if (rc == 0) rc = run_loop(&c, err);
    if (rc == 0) {
        double sim_s = sim_ns_to_s(c.last_done - c.first_arrival);
        rc = sim_results_summary(db, sim_s, c.eng.processed, summary, err);
    }
    teardown(&c);
    return rc;
}
