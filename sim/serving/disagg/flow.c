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
    q->pic_reused = c->pic ? cached : 0;
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
    /* The prefill's token is the user's first (Mooncake), or is dropped and
     * the decode instance makes all output_len tokens, its first shown
     * (metrics.first_token = decode: vLLM's P/D proxy sends the prefill
     * max_tokens = 1 and streams the decode instance's answer). */
    bool shown_by_decode = c->cfg->first_token_decode && r->output_len > 1 && q->decode >= 0;
    q->tokens = shown_by_decode ? 0 : 1;
    q->last_token = c->eng->now;
    q->shown_first = shown_by_decode ? -1 : c->eng->now;
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

/* A request whose KV (input + output tokens) exceeds what one decode
 * instance's HBM holds fits none, whatever the load: counted, for one
 * caveat of the run (sim_cluster_note_too_large; issue 40 item 6). */
static void count_too_large(cluster *c, const req_state *q)
{
    if (q->r->output_len <= 1 || q->need_kv <= c->kv_capacity) return;
    if (c->too_large.n++ == 0) c->too_large.first_line = q->r->line, c->too_large.first_need = q->need_kv;
}

void sim_cluster_note_too_large(const cluster *c, json_t *summary)
{
    if (!c->too_large.n) return;
    char text[512];
    snprintf(text, sizeof text,
             "%lld request%s need%s more KV than a decode instance's HBM holds (%lld tokens; the first: trace line "
             "%lld, %lld tokens of input and output): rejected at arrival, whatever the load; give the decode "
             "instances more HBM (hardware, cluster.decode_hbm_frac) or a smaller model",
             (long long)c->too_large.n, c->too_large.n == 1 ? "" : "s", c->too_large.n == 1 ? "s" : "",
             (long long)c->kv_capacity, (long long)c->too_large.first_line, (long long)c->too_large.first_need);
    json_object_set_new(sim_serving_add_finding(summary, "too_large", text), "rejected",
                        json_integer((json_int_t)c->too_large.n));
}

static void admit(cluster *c, req_state *q)
{
    sched_ctx ctx = sim_cluster_ctx(c, c->admission->needs_inflight);
    sched_decode_choice dec = {.decode = -1};
    c->router->route(c->router_st, &ctx, q->r, &q->route);
    c->decoder->select(c->decoder_st, &ctx, q->r, &dec);
    sched_verdict v = c->admission->admit(c->admission_st, &ctx, q->r, &q->route, &dec);
    if (v == SCHED_REJECT_AT_ARRIVAL) count_too_large(c, q);
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
    q->prefill_start = q->first_token = q->kv_ready = q->last_token = q->shown_first = q->decode_begin = -1;
    q->need_kv = (int64_t)r->input_len + r->output_len;
    q->output_len = r->output_len;
    admit(c, q);
}

void sim_flow_on_retry(cluster *c, const sim_event *ev) { admit(c, ev->data); }

/* ---- decode memory ---------------------------------------------------------------
 *
 * decode.kv_allocation = reserve: a request joins the running batch when its
 * whole KV, input + output, fits beside the batch's reservations, and holds
 * that much until it finishes (no preemption can happen).
 *
 * incremental (the default), as paged engines manage HBM (vLLM v1,
 * vllm/v1/core/sched/scheduler.py: slots are allocated for the tokens a step
 * computes; Mooncake §3 step 4: a request joins the next batch once its KV
 * has arrived): a request joins when the KV it has, input + tokens emitted,
 * fits; each step grows every member by the token it emits. When growth
 * does not fit, the newest member is preempted (the scheduler's
 * `self.running.pop()`, last admitted first; itself when it is the newest,
 * as the aggregated engine does, sim/serving/agg/iter.c), and no waiting
 * request joins in a step that preempted. A preempted request rejoins the
 * head of the waiting queue. decode.preemption = recompute drops its KV: on
 * rejoining, the step also prefills its kv_held tokens (vLLM's default
 * PreemptionMode.RECOMPUTE, vllm/core/scheduler.py); swap copies them to the
 * node's DRAM within the step that preempts (D2H) and back within the step
 * that resumes it (H2D), over the host link (vLLM v0's PreemptionMode.SWAP,
 * blocks swapped before the step runs). */

/* KV tokens q needs in HBM to be in the batch now. */
static int64_t batch_kv(const cluster *c, const req_state *q)
{
    return c->cfg->decode_incremental ? (int64_t)q->r->input_len + q->tokens : q->need_kv;
}

/* q waits on d for room in its batch (at the head when preempted). */
static void wait_for_batch(cluster *c, instance *d, req_state *q, bool head)
{
    if (head) queue_push_head(&d->waiting, q);
    else queue_push(&d->waiting, q);
    d->kv_waiting += batch_kv(c, q);
}

/* The newest batch member gives its KV back and waits again; returns the
 * seconds its swap-out adds to the step. */
static double preempt_newest(cluster *c, instance *d)
{
    req_state *v = d->batch[--d->nbatch];
    d->kv_batch -= v->kv_held;
    d->ctx_tokens -= v->r->input_len + v->tokens;
    d->pending++;
    v->preempted = true;
    v->preemptions++;
    d->preemptions++;
    c->preempt.preemptions++;
    wait_for_batch(c, d, v, true);
    if (!c->cfg->decode_swap) return 0;
    double bytes = (double)v->kv_held * c->cost.kv_bytes_per_token;
    c->preempt.swapped_bytes += bytes;
    return sim_cost_d2h_s(&c->dcost, bytes);
}

/* Grow every member to its KV for this step, preempting from the back;
 * returns the seconds swap-outs add, *preempted whether any happened. */
static double grow_batch(cluster *c, instance *d, bool *preempted)
{
    double extra = 0;
    for (int i = 0; i < d->nbatch; i++) {
        req_state *q = d->batch[i];
        int64_t need = batch_kv(c, q) - q->kv_held;
        while (d->kv_batch + need > c->kv_capacity) {
            bool self = i == d->nbatch - 1;
            extra += preempt_newest(c, d);
            *preempted = true;
            if (self) return extra;
        }
        q->kv_held += need;
        d->kv_batch += need;
    }
    return extra;
}

/* q, its KV in HBM, is in d's batch from the next step on. */
static void enter_batch(cluster *c, instance *d, req_state *q)
{
    d->batch[d->nbatch++] = q;
    d->ctx_tokens += q->r->input_len + q->tokens;
    if (q->decode_begin < 0) q->decode_begin = c->eng->now;
    d->pending--;
}

/* A request's KV received into the decode node's DRAM (decode.kv_receive =
 * dram; Mooncake §3.1 steps 3–4: streamed "to the destination decoding
 * node's CPU memory"; §7.4.3: the decoding node loads it from DRAM to HBM,
 * asynchronously with inference) is copied into the HBM room it now holds
 * over the node's host link, one copy after another, while the batch
 * steps on; it joins the batch when the copy ends (KV_LOADED). */
static void load_kv(cluster *c, instance *d, req_state *q)
{
    int64_t start = d->h2d_free > c->eng->now ? d->h2d_free : c->eng->now;
    double bytes = (double)q->r->input_len * c->cost.kv_bytes_per_token;
    d->h2d_free = start + sim_s_to_ns(sim_cost_h2d_s(&c->dcost, bytes));
    d->nloading++;
    sim_engine_push(c->eng, d->h2d_free, EV_KV_LOADED, d->id, d->gen, q);
}

/* The head of d's waiting queue takes its room in HBM and joins the batch
 * (after its KV's load from DRAM, when it lands there); returns the
 * seconds its resumption (recompute or swap-in) adds to the step. */
static double join_batch(cluster *c, instance *d)
{
    req_state *q = queue_pop(&d->waiting);
    int64_t kv = batch_kv(c, q), held = q->kv_held;
    d->kv_waiting -= kv;
    d->kv_batch += kv;
    q->kv_held = kv;
    if (!q->preempted) {
        sim_topk_init(&q->topk, q->r->output_len - 1);
        if (c->cfg->decode_kv_dram) load_kv(c, d, q);
        else enter_batch(c, d, q);
        return 0;
    }
    enter_batch(c, d, q);
    q->preempted = false;
    if (c->cfg->decode_swap) return sim_cost_h2d_s(&c->dcost, (double)held * c->cost.kv_bytes_per_token);
    c->preempt.recomputed_tokens += held;
    return sim_cost_prefill_s(&c->dcost, (int32_t)held, 0);
}

static void start_iteration(cluster *c, instance *d)
{
    bool preempted = false;
    double extra = c->cfg->decode_incremental ? grow_batch(c, d, &preempted) : 0;
    while (!preempted && d->waiting.head && d->nbatch + d->nloading < c->cfg->decode_max_batch &&
           d->kv_batch + batch_kv(c, d->waiting.head) <= c->kv_capacity)
        extra += join_batch(c, d);
    d->iterating = d->nbatch > 0;
    if (!d->iterating) return sim_cluster_check_drained(c, d);
    double step = sim_cost_decode_iter_s(&c->dcost, d->nbatch, d->ctx_tokens);
    double dt = step * sim_cluster_noise(c) + extra;
    if (d->nbatch > c->peak_decode.seqs) /* the fit-range finding (cluster.c) */
        c->peak_decode.seqs = d->nbatch, c->peak_decode.share = sim_cost_iter_overhead_s(&c->dcost, d->nbatch) / step;
    d->iter_start = c->eng->now;
    sim_engine_push(c->eng, c->eng->now + sim_s_to_ns(dt), EV_DECODE_STEP, d->id, d->gen, NULL);
    /* decode load while iterating: the iteration against the TBT SLO, or the
     * HBM reserved (reserve) or held and awaited (incremental) against its
     * capacity (the decode load of Mooncake §4.3.1); after the push, so its
     * divisions overlap the heap's work */
    double kv = sim_cluster_decode_mem(c, d), tbt = dt / c->slo_tbt_s;
    c->busy_decode_s += dt * (kv > tbt ? kv : tbt);
}

void sim_flow_on_kv_loaded(cluster *c, const sim_event *ev)
{
    instance *d = &c->inst[ev->target];
    if (ev->gen != d->gen) return sim_cluster_lost_work(c, ev->data);
    d->nloading--;
    enter_batch(c, d, ev->data);
    if (!d->iterating) start_iteration(c, d);
}

void sim_flow_on_kv_ready(cluster *c, const sim_event *ev)
{
    instance *d = &c->inst[ev->target];
    if (ev->gen != d->gen) return sim_cluster_lost_work(c, ev->data);
    wait_for_batch(c, d, ev->data, false);
    if (!d->iterating) start_iteration(c, d);
}

static void complete_decode(cluster *c, instance *d, req_state *q)
{
    d->kv_batch -= q->kv_held;
    d->kv_reserved -= q->need_kv;
    d->ctx_tokens -= q->r->input_len + q->tokens;
    c->decode_s_sum += sim_ns_to_s(c->eng->now - q->decode_begin);
    c->decode_n++;
    sched_lengths_add(c->outputs, q->output_len);
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
        if (q->shown_first >= 0) sim_topk_add(&q->topk, now - q->last_token);
        else q->shown_first = now; /* the decode instance's first token is the user's first */
        q->last_token = now;
        q->tokens++;
        d->ctx_tokens++;
        if (q->tokens < q->output_len) d->batch[kept++] = q;
        else complete_decode(c, d, q);
    }
    d->nbatch = kept;
    start_iteration(c, d);
}
