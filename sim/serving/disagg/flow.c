/* sim/serving/disagg/flow.c — the life of a request in the disaggregated
 * cluster (the model is described in sim/serving/disagg/cluster.c):
 *
 *   arrival       the conductor routes (sched/ router), picks a decode
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
 *              nodes over the NICs (each direction of a NIC a FIFO resource)
 *              then →HBM; a kvcentric fetch, started at routing, must have
 *              arrived before its blocks go →HBM;
 *   compute  = truth prefill time of the uncached part (sim/cost), or the
 *              group's pipeline (cpp.c) for a long one;
 *   duration = max(load, compute) + min(load, compute)/layers with layer-wise
 *              overlap, else load + compute;
 *   the KV streams to the decode node from t (layer-wise) or from the end, on
 *   both NICs, arriving no earlier than one layer after the prefill.
 *
 * Events of a failed instance carry a stale generation: the request's work
 * is lost (core.c) when such an event fires. */
#include "sim/serving/disagg/cluster_int.h"

#include <math.h>

/* ---- prefill -------------------------------------------------------------------- */

/* Reserve a transfer of `bytes` from node src to node dst, starting no
 * earlier than `from`, on src's sending and dst's receiving side; returns
 * its end time. A NIC is full duplex (RDMA): each direction is its own FIFO,
 * so a node receiving a prefix does not wait behind the KV it sends. */
static int64_t nic_transfer(cluster *c, int src, int dst, int64_t from, double bytes)
{
    int64_t start = from;
    if (c->inst[src].nic_tx_free > start) start = c->inst[src].nic_tx_free;
    if (c->inst[dst].nic_rx_free > start) start = c->inst[dst].nic_rx_free;
    int64_t end = start + sim_s_to_ns(sim_cluster_nic_s(c, src, dst, bytes));
    c->inst[src].nic_tx_free = c->inst[dst].nic_rx_free = end;
    return end;
}

double sim_cluster_nic_s(const cluster *c, int src, int dst, double bytes)
{
    const sim_cost *a = c->inst[src].role == ROLE_DECODE ? &c->dcost : &c->cost;
    const sim_cost *b = c->inst[dst].role == ROLE_DECODE ? &c->dcost : &c->cost;
    double ta = sim_cost_nic_s(a, bytes), tb = sim_cost_nic_s(b, bytes);
    return ta > tb ? ta : tb;
}

/* Seconds until a prefix of `hit` blocks, as the store holds it now, is in
 * node's HBM. */
static double prefix_load_s(cluster *c, req_state *q, int node, int32_t hit)
{
    kv_fetch_plan plan = {.remote_from = c->remote_from};
    c->cache->plan(c->cache_st, node, q->r, hit, &plan);
    double bb = c->block_bytes;
    double local = sim_cost_h2d_s(&c->cost, (plan.local[KV_TIER_DRAM] + plan.local[KV_TIER_SSD]) * bb) +
                   sim_cost_ssd_read_s(&c->cost, plan.local[KV_TIER_SSD] * bb);
    int32_t remote = plan.remote[KV_TIER_HBM] + plan.remote[KV_TIER_DRAM] + plan.remote[KV_TIER_SSD];
    int64_t now = c->eng->now, remote_end = now;
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

/* Algorithm 1 line 21 (TransferKVCache), at routing: the chosen node starts
 * copying the holder's longer prefix into its cache now (a replica), while
 * the request waits in its queue (§4.2: the instance proactively retrieves
 * it; §7.4.3: the transfer proceeds asynchronously with inference). The
 * prefix stays pinned on the node until the prefill is done. */
static void fetch_prefix(cluster *c, req_state *q)
{
    const sim_request *r = q->r;
    int node = q->prefill, h = q->transfer_from;
    if (c->pic || h < 0 || !q->route.replicate) return;
    int32_t local = c->cache->lookup(c->cache_st, node, r, false);
    int32_t best = c->cache->lookup(c->cache_st, h, r, false);
    if (best <= local) return;
    q->fetch_end = nic_transfer(c, h, node, c->eng->now, (best - local) * c->block_bytes);
    c->cache->admit(c->cache_st, node, r, best, best, true);
    c->cache->pin(c->cache_st, node, r, best);
    q->fetched = best;
    q->fetch_blocks = best - local;
    q->remote_blocks += best - local;
}

/* Reserve the KV stream from the prefill node to the decode node. */
static void stream_kv(cluster *c, req_state *q, int node)
{
    double bytes = (double)q->r->input_len * c->cost.kv_bytes_per_token;
    bool lw = c->cfg->layerwise;
    int64_t end = nic_transfer(c, node, q->decode, lw ? q->prefill_start : q->first_token, bytes);
    int64_t tail = q->first_token + sim_s_to_ns(sim_cluster_nic_s(c, node, q->decode, bytes / c->cfg->model.layers));
    q->kv_ready = lw && tail > end ? tail : end;
}

/* The reused prefix of q on node: its blocks (*hit), tokens (*cached) and
 * the time to load them into HBM. Under a PIC policy the reuse was settled
 * by the instance's HBM store (sim_pic_admit_head): nothing to load. */
static double reuse_s(cluster *c, req_state *q, int node, int32_t *hit, int32_t *cached)
{
    if (c->pic) {
        *hit = 0;
        return 0;
    }
    *hit = c->cache->lookup(c->cache_st, node, q->r, q->route.fetch_remote);
    double load = prefix_load_s(c, q, node, *hit);
    if (q->fetched) { /* the fetched blocks load into HBM once they have arrived */
        double wait = q->fetch_end > c->eng->now ? sim_ns_to_s(q->fetch_end - c->eng->now) : 0;
        load = fmax(load, wait + sim_cost_h2d_s(&c->cost, q->fetch_blocks * c->block_bytes));
    }
    *cached = sim_cluster_hit_tokens(c, q->r, *hit);
    return load;
}

static void start_prefill(cluster *c, instance *in)
{
    int32_t hit, cached = 0;
    if (c->pic && !sim_pic_admit_head(c, in, &cached)) return;
    req_state *q = queue_pop(&in->queue);
    const sim_request *r = q->r;
    in->queued_est_s = in->queue.n ? in->queued_est_s - q->route.service_s : 0;
    double load = reuse_s(c, q, in->id, &hit, &cached);
    double compute, dur;
    if (sim_cpp_applies(c, r, cached)) {
        dur = sim_cpp_prefill(c, in, r, cached, load, &compute);
    } else {
        compute = sim_cost_prefill_s(&c->cost, r->input_len, cached) * sim_cluster_noise(c);
        dur = c->cfg->layerwise ? fmax(load, compute) + fmin(load, compute) / c->cfg->model.layers : load + compute;
    }
    q->hit_blocks = hit;
    q->prefill_gpu_s = compute;
    q->prefill_start = c->eng->now;
    q->first_token = c->eng->now + sim_s_to_ns(dur);
    c->busy_prefill_s += dur;
    q->est_decode_start = c->eng->now + sim_s_to_ns(q->route.service_s);
    c->cache->pin(c->cache_st, in->id, r, hit);
    if (q->decode >= 0 && r->output_len > 1) stream_kv(c, q, in->id);
    in->running = q;
    in->running_est_end = q->est_decode_start;
    sim_engine_push(c->eng, q->first_token, EV_PREFILL_DONE, in->id, in->gen, q);
}

/* Start the next queued request unless the instance is down or busy as a
 * pipeline stage of another member's request (then retry when that ends). */
static void next_prefill(cluster *c, instance *in)
{
    if (in->blocked_until > c->eng->now) {
        if (in->queue.head) sim_engine_push(c->eng, in->blocked_until, EV_UNBLOCK, in->id, in->gen, NULL);
        return;
    }
    if (in->queue.head && in->state != ST_DOWN) start_prefill(c, in);
    else sim_cluster_check_drained(c, in);
}

void sim_flow_on_unblock(cluster *c, const sim_event *ev)
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

void sim_flow_on_prefill_done(cluster *c, const sim_event *ev)
{
    instance *in = &c->inst[ev->target];
    req_state *q = ev->data;
    const sim_request *r = q->r;
    if (ev->gen != in->gen) return sim_cluster_lost_work(c, q); /* the instance failed meanwhile */
    c->cache->admit(c->cache_st, in->id, r, r->nblocks, q->hit_blocks, false);
    c->cache->unpin(c->cache_st, in->id, r, q->hit_blocks);
    c->cache->unpin(c->cache_st, in->id, r, q->fetched);
    q->fetched = q->fetch_blocks = 0;
    q->tokens = 1;
    q->last_token = c->eng->now;
    in->running = NULL;
    next_prefill(c, in);
    if (r->output_len <= 1 || q->decode < 0) return sim_cluster_finish(c, q, SIM_STAGE_NONE);
    if (c->inst[q->decode].gen != q->decode_gen) return sim_cluster_lost_work(c, q);
    if (!decode_accepts(c, q)) {
        sim_cluster_release_decode(c, q);
        return sim_cluster_finish(c, q, SIM_STAGE_AFTER_PREFILL);
    }
    q->est_decode_start = c->eng->now;
    sim_engine_push(c->eng, q->kv_ready, EV_KV_READY, q->decode, q->decode_gen, q);
}

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
    if (v != SCHED_ACCEPT) return sim_cluster_finish(c, q, verdict_stage(v));
    instance *in = &c->inst[c->pidx[q->route.prefill]];
    q->prefill = in->id;
    q->transfer_from = q->route.transfer_from >= 0 ? c->pidx[q->route.transfer_from] : -1;
    fetch_prefix(c, q);
    if (dec.decode >= 0 && q->r->output_len > 1) {
        instance *d = &c->inst[c->didx[dec.decode]];
        q->decode = d->id;
        q->decode_gen = d->gen;
        d->kv_reserved += q->need_kv;
        d->pending++;
    }
    q->est_decode_start = c->eng->now + sim_s_to_ns(q->route.ttft_s);
    sim_cluster_live_add(c, q);
    in->queued_est_s += q->route.service_s;
    queue_push(&in->queue, q);
    if (!in->running) next_prefill(c, in);
}

/* A trace request arrives: its state, then the conductor's decision. */
void sim_flow_arrive(cluster *c, sim_request *r)
{
    req_state *q = sim_xcalloc(1, sizeof *q);
    q->r = r;
    q->prefill = q->decode = q->transfer_from = -1;
    q->prefill_start = q->first_token = q->kv_ready = q->last_token = -1;
    q->need_kv = (int64_t)r->input_len + r->output_len;
    q->output_len = r->output_len;
    admit(c, q);
}

void sim_flow_on_retry(cluster *c, const sim_event *ev) { admit(c, ev->data); }

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
    double dt = sim_cost_decode_iter_s(&c->dcost, d->nbatch, d->ctx_tokens) * sim_cluster_noise(c);
    d->iter_start = c->eng->now;
    sim_engine_push(c->eng, c->eng->now + sim_s_to_ns(dt), EV_DECODE_STEP, d->id, d->gen, NULL);
    /* decode load while iterating: the iteration against the TBT SLO, or the
     * HBM reserved against its capacity (the decode load of Mooncake §4.3.1);
     * after the push, so its divisions overlap the heap's work */
    double kv = (double)d->kv_reserved / (double)c->kv_capacity, tbt = dt / c->slo_tbt_s;
    c->busy_decode_s += dt * (kv > tbt ? kv : tbt);
}

void sim_flow_on_kv_ready(cluster *c, const sim_event *ev)
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
    c->decode_s_sum += sim_ns_to_s(c->eng->now - q->first_token);
    c->decode_n++;
    sim_cluster_finish(c, q, SIM_STAGE_NONE);
}

void sim_flow_on_decode_step(cluster *c, const sim_event *ev)
{
    instance *d = &c->inst[ev->target];
    if (ev->gen != d->gen) return; /* the batch was handled when the instance failed */
    sim_cluster_decode_held(c, d);
    int kept = 0;
    int64_t now = c->eng->now;
    for (int i = 0; i < d->nbatch; i++) {
        req_state *q = d->batch[i];
        sim_topk_add(&q->topk, now - q->last_token);
        q->last_token = now;
        q->tokens++;
        d->ctx_tokens++;
        if (q->tokens < q->output_len) d->batch[kept++] = q;
        else complete_decode(c, d, q);
    }
    d->nbatch = kept;
    start_iteration(c, d);
}
