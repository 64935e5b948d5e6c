/* sim/cluster.c — the PD-disaggregated cluster model on the event engine.
 *
 * Instances 0..P-1 serve prefill, P..P+D-1 decode; every instance is a node
 * of the KV store and owns a NIC. Handlers, one per event kind:
 *
 *   ARRIVAL      the conductor routes (sched/ router), picks a decode instance
 *                and admits or rejects; admitted requests join the prefill
 *                instance's FIFO queue and reserve KV room on the decode one.
 *   PREFILL_DONE the prefix hit is committed (hits refreshed, new blocks put
 *                into the node's cache), the next queued request starts, and
 *                the first token is out (TTFT).
 *   KV_READY     the request's KV has reached its decode node: it waits there
 *                for room in the running batch.
 *   DECODE_STEP  one continuous-batching iteration ends: every batch member
 *                emits a token; finished requests leave; waiting ones join.
 *   SAMPLE       periodic per-instance loads into the samples table.
 *
 * Timing of a prefill started at t (Mooncake §3.1 steps 1–3):
 *   load     = local DRAM→HBM (+ SSD reads) in parallel with remote blocks
 *              over the holders' NICs (queued FIFO per NIC) then →HBM;
 *   compute  = truth prefill time of the uncached part (sim/cost);
 *   duration = max(load, compute) + min(load, compute)/layers with layer-wise
 *              overlap, else load + compute;
 *   KV stream to the decode node starts at t (layer-wise) or at the end, on
 *   both NICs, and finishes no earlier than one layer after the prefill. */
#include "sim/cluster.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "sched/registry.h"
#include "sched/sched.h"
#include "sim/cost.h"
#include "sim/engine.h"
#include "sim/estimator.h"
#include "sim/kvstore.h"
#include "sim/trace.h"

/* ---- TBT top-k --------------------------------------------------------------- */

void sim_topk_init(sim_topk *t, int32_t intervals)
{
    t->k = intervals / 10 > 1 ? intervals / 10 : 1;
    t->n = 0;
    t->v = sim_xmalloc((size_t)t->k * sizeof *t->v);
}

/* Keep the k largest values seen: a min-heap whose root is the smallest kept. */
void sim_topk_add(sim_topk *t, double x)
{
    int32_t i;
    if (t->n < t->k) {
        for (i = t->n++; i > 0 && t->v[(i - 1) / 2] > x; i = (i - 1) / 2) t->v[i] = t->v[(i - 1) / 2];
        t->v[i] = x;
        return;
    }
    if (x <= t->v[0]) return;
    for (i = 0;;) {
        int32_t c = 2 * i + 1;
        if (c >= t->n) break;
        if (c + 1 < t->n && t->v[c + 1] < t->v[c]) c++;
        if (t->v[c] >= x) break;
        t->v[i] = t->v[c];
        i = c;
    }
    t->v[i] = x;
}

double sim_topk_mean(const sim_topk *t)
{
    double s = 0;
    for (int32_t i = 0; i < t->n; i++) s += t->v[i];
    return t->n ? s / t->n : 0;
}

void sim_topk_free(sim_topk *t)
{
    free(t->v);
    t->v = NULL;
}

/* ---- state -------------------------------------------------------------------- */

enum { EV_ARRIVAL, EV_PREFILL_DONE, EV_KV_READY, EV_DECODE_STEP, EV_SAMPLE, EV_NKINDS };

typedef struct req_state {
    sim_request *r;
    struct req_state *next;
    sched_route route;
    int prefill, decode; /* instance ids; -1 = none */
    int64_t prefill_start, first_token, kv_ready, last_token;
    int32_t hit_blocks, remote_blocks;
    double prefill_gpu_s;
    int32_t tokens;
    int64_t need_kv;
    sim_topk topk;
} req_state;

typedef struct req_queue {
    req_state *head, *tail;
    int n;
} req_queue;

typedef struct instance {
    int id;
    int64_t nic_free;
    /* prefill role */
    req_queue queue;
    req_state *running;
    int64_t running_est_end;
    double queued_est_s;
    /* decode role */
    req_queue waiting;
    req_state **batch;
    int nbatch, pending;
    int64_t kv_reserved, kv_batch, ctx_tokens;
    bool iterating;
} instance;

typedef struct cluster {
    const sim_config *cfg;
    sim_cost cost;
    sim_estimator est;
    kv_store *store;
    sim_engine eng;
    gsl_rng *rng_policy, *rng_noise, *rng_fit;
    sim_trace *trace;
    bool trace_done;
    instance *inst;
    int n_inst, n_prefill, n_decode;
    sched_prefill_view *pview;
    sched_decode_view *dview;
    const sched_router_ops *router;
    const sched_decode_ops *decoder;
    const sched_admission_ops *admission;
    void *router_st, *decoder_st, *admission_st;
    int32_t *remote_from;
    sim_results *db;
    int64_t inflight, first_arrival, last_done;
    int64_t kv_capacity;
    double block_bytes;
    bool failed;
    sim_err *err;
} cluster;

typedef void (*handler_fn)(cluster *c, const sim_event *ev);

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

static void fail(cluster *c)
{
    c->failed = true;
}

static double noise(cluster *c)
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

static void free_req(req_state *s);

/* ---- finishing a request -------------------------------------------------------- */

static void write_row(cluster *c, req_state *q, sim_stage stage)
{
    const sim_request *r = q->r;
    double arrival = sim_ns_to_ms(r->arrival_ns);
    bool done = stage == SIM_STAGE_NONE, started = q->prefill_start >= 0;
    double ttft = done ? sim_ns_to_ms(q->first_token - r->arrival_ns) : -1;
    double tbt = done && r->output_len > 1 ? sim_topk_mean(&q->topk) * 1e3 : -1;
    double slo_ttft = r->slo_ttft_ms > 0 ? r->slo_ttft_ms : c->cfg->slo_ttft_ms;
    double slo_tbt = r->slo_tbt_ms > 0 ? r->slo_tbt_ms : c->cfg->slo_tbt_ms;
    sim_request_row row = {
        .id = r->index, .line = r->line, .arrival_ms = arrival,
        .input_len = r->input_len, .output_len = r->output_len, .blocks = r->nblocks,
        .prefill_inst = q->prefill, .decode_inst = q->decode >= 0 ? q->decode - c->n_prefill : -1,
        .hit_blocks = q->hit_blocks, .hit_tokens = hit_tokens(c, r, q->hit_blocks), .remote_blocks = q->remote_blocks,
        .prefill_start_ms = started ? sim_ns_to_ms(q->prefill_start) : -1,
        .first_token_ms = started ? sim_ns_to_ms(q->first_token) : -1,
        .done_ms = done ? sim_ns_to_ms(q->last_token) : -1,
        .ttft_ms = ttft, .tbt_ms = tbt, .e2e_ms = done ? sim_ns_to_ms(q->last_token - r->arrival_ns) : -1,
        .prefill_gpu_s = q->prefill_gpu_s, .tokens = q->tokens, .stage = stage,
        .effective = done && ttft <= slo_ttft && tbt <= slo_tbt,
    };
    if (sim_results_add_request(c->db, &row, c->err)) fail(c);
}

static void finish(cluster *c, req_state *q, sim_stage stage)
{
    write_row(c, q, stage);
    c->inflight--;
    if (c->eng.now > c->last_done) c->last_done = c->eng.now;
    free_req(q);
}

/* ---- trace feed ----------------------------------------------------------------- */

static void read_next(cluster *c)
{
    sim_request *r;
    int rc = sim_trace_next(c->trace, &r, c->err);
    if (rc < 0) return fail(c);
    if (rc == 0) {
        c->trace_done = true;
        return;
    }
    req_state *q = sim_xcalloc(1, sizeof *q);
    q->r = r;
    q->prefill = q->decode = -1;
    q->prefill_start = q->first_token = q->kv_ready = q->last_token = -1;
    q->need_kv = (int64_t)r->input_len + r->output_len;
    c->inflight++;
    sim_engine_push(&c->eng, r->arrival_ns, EV_ARRIVAL, -1, q);
}

/* ---- the conductor's view ------------------------------------------------------- */

static void build_views(cluster *c)
{
    int64_t now = c->eng.now;
    for (int i = 0; i < c->n_prefill; i++) {
        const instance *in = &c->inst[i];
        double running = in->running && in->running_est_end > now ? sim_ns_to_s(in->running_est_end - now) : 0;
        c->pview[i] = (sched_prefill_view){
            .node = in->id, .active = true, .queue_len = in->queue.n + (in->running != NULL),
            .queue_s = running + in->queued_est_s,
            .nic_wait_s = in->nic_free > now ? sim_ns_to_s(in->nic_free - now) : 0,
        };
    }
    for (int j = 0; j < c->n_decode; j++) {
        const instance *in = &c->inst[c->n_prefill + j];
        c->dview[j] = (sched_decode_view){
            .node = in->id, .active = true, .batch = in->nbatch, .pending = in->pending,
            .kv_tokens = in->kv_reserved, .kv_capacity = c->kv_capacity, .ctx_tokens = in->ctx_tokens,
        };
    }
}

static sched_ctx make_ctx(cluster *c)
{
    build_views(c);
    return (sched_ctx){
        .cfg = c->cfg, .est = &c->est, .shadow = c->store, .rng = c->rng_policy, .now_ns = c->eng.now,
        .n_prefill = c->n_prefill, .prefill = c->pview, .n_decode = c->n_decode, .decode = c->dview,
        .kv_bytes_per_token = c->cost.kv_bytes_per_token,
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

/* Seconds until a prefix of `hit` blocks is in node's HBM. */
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
    q->remote_blocks = remote;
    double remote_s = remote ? sim_ns_to_s(remote_end - now) + sim_cost_h2d_s(&c->cost, remote * bb) +
                                   sim_cost_ssd_read_s(&c->cost, plan.remote[KV_TIER_SSD] * bb)
                             : 0;
    return fmax(local, remote_s);
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
    in->queued_est_s -= q->route.service_s;
    if (in->queue.n == 0) in->queued_est_s = 0; /* no drift from float sums */
    int32_t hit = q->route.fetch_remote ? kv_store_prefix_any(c->store, in->id, r->keys, r->nblocks)
                                        : kv_store_prefix_local(c->store, in->id, r->keys, r->nblocks);
    double load = prefix_load_s(c, q, in->id, hit);
    double compute = sim_cost_prefill_s(&c->cost, r->input_len, hit_tokens(c, r, hit)) * noise(c);
    double dur = c->cfg->layerwise ? fmax(load, compute) + fmin(load, compute) / c->cfg->model.layers
                                   : load + compute;
    q->hit_blocks = hit;
    q->prefill_gpu_s = compute;
    q->prefill_start = c->eng.now;
    q->first_token = c->eng.now + sim_s_to_ns(dur);
    kv_store_pin(c->store, in->id, r->keys, hit);
    if (q->decode >= 0 && r->output_len > 1) stream_kv(c, q, in->id);
    in->running = q;
    in->running_est_end = c->eng.now + sim_s_to_ns(q->route.service_s);
    sim_engine_push(&c->eng, q->first_token, EV_PREFILL_DONE, in->id, q);
}

static void on_prefill_done(cluster *c, const sim_event *ev)
{
    instance *in = &c->inst[ev->target];
    req_state *q = ev->data;
    const sim_request *r = q->r;
    kv_store_commit(c->store, in->id, r->keys, r->nblocks, q->hit_blocks, q->route.replicate, r->cache);
    kv_store_unpin(c->store, in->id, r->keys, q->hit_blocks);
    q->tokens = 1;
    q->last_token = c->eng.now;
    in->running = NULL;
    if (in->queue.head) start_prefill(c, in);
    if (r->output_len <= 1 || q->decode < 0) finish(c, q, SIM_STAGE_NONE);
    else sim_engine_push(&c->eng, q->kv_ready, EV_KV_READY, q->decode, q);
}

/* ---- arrival -------------------------------------------------------------------- */

static sim_stage verdict_stage(sched_verdict v)
{
    return v == SCHED_REJECT_TTFT_SLO ? SIM_STAGE_TTFT_SLO : SIM_STAGE_AT_ARRIVAL;
}

static void on_arrival(cluster *c, const sim_event *ev)
{
    req_state *q = ev->data;
    sched_ctx ctx = make_ctx(c);
    sched_decode_choice dec = {.decode = -1};
    c->router->route(c->router_st, &ctx, q->r, &q->route);
    c->decoder->select(c->decoder_st, &ctx, q->r, &dec);
    sched_verdict v = c->admission->admit(c->admission_st, &ctx, q->r, &q->route, &dec);
    read_next(c);
    if (v != SCHED_ACCEPT) return finish(c, q, verdict_stage(v));
    instance *in = &c->inst[q->route.prefill];
    q->prefill = in->id;
    if (dec.decode >= 0 && q->r->output_len > 1) {
        instance *d = &c->inst[c->n_prefill + dec.decode];
        q->decode = d->id;
        d->kv_reserved += q->need_kv;
        d->pending++;
    }
    in->queued_est_s += q->route.service_s;
    queue_push(&in->queue, q);
    if (!in->running) start_prefill(c, in);
}

/* ---- decode --------------------------------------------------------------------- */

static void start_iteration(cluster *c, instance *d)
{
    while (d->waiting.head && d->nbatch < c->cfg->decode_max_batch &&
           d->kv_batch + d->waiting.head->need_kv <= c->kv_capacity) {
        req_state *q = queue_pop(&d->waiting);
        d->batch[d->nbatch++] = q;
        d->kv_batch += q->need_kv;
        d->ctx_tokens += q->r->input_len + q->tokens;
        d->pending--;
        sim_topk_init(&q->topk, q->r->output_len - 1);
    }
    d->iterating = d->nbatch > 0;
    if (!d->iterating) return;
    double dt = sim_cost_decode_iter_s(&c->cost, d->nbatch, d->ctx_tokens) * noise(c);
    sim_engine_push(&c->eng, c->eng.now + sim_s_to_ns(dt), EV_DECODE_STEP, d->id, NULL);
}

static void on_kv_ready(cluster *c, const sim_event *ev)
{
    instance *d = &c->inst[ev->target];
    queue_push(&d->waiting, ev->data);
    if (!d->iterating) start_iteration(c, d);
}

static void on_decode_step(cluster *c, const sim_event *ev)
{
    instance *d = &c->inst[ev->target];
    int kept = 0;
    for (int i = 0; i < d->nbatch; i++) {
        req_state *q = d->batch[i];
        sim_topk_add(&q->topk, sim_ns_to_s(c->eng.now - q->last_token));
        q->last_token = c->eng.now;
        q->tokens++;
        d->ctx_tokens++;
        if (q->tokens < q->r->output_len) {
            d->batch[kept++] = q;
            continue;
        }
        d->kv_batch -= q->need_kv;
        d->kv_reserved -= q->need_kv;
        d->ctx_tokens -= q->r->input_len + q->tokens;
        finish(c, q, SIM_STAGE_NONE);
    }
    d->nbatch = kept;
    start_iteration(c, d);
}

/* ---- samples -------------------------------------------------------------------- */

static void sample_instance(cluster *c, const sched_ctx *ctx, int i, double t_ms)
{
    bool prefill = i < c->n_prefill;
    const instance *in = &c->inst[i];
    sim_sample_row row = {.t_ms = t_ms, .instance = i, .role = prefill ? "prefill" : "decode"};
    if (prefill) {
        row.queue_len = ctx->prefill[i].queue_len;
        row.load = ctx->prefill[i].queue_s / (c->cfg->slo_ttft_ms / 1e3);
        int64_t cap = sim_config_blocks(c->cfg, c->cfg->dram_bytes);
        row.kv_used = cap > 0 ? (double)kv_store_blocks(c->store, i, KV_TIER_DRAM) / (double)cap : 0;
    } else {
        row.queue_len = in->waiting.n;
        row.batch = in->nbatch;
        row.load = in->nbatch ? sim_est_decode_iter_s(&c->est, in->nbatch, in->ctx_tokens) /
                                    (c->cfg->slo_tbt_ms / 1e3)
                              : 0;
        row.kv_used = (double)in->kv_batch / (double)c->kv_capacity;
    }
    if (sim_results_add_sample(c->db, &row, c->err)) fail(c);
}

static void on_sample(cluster *c, const sim_event *ev)
{
    sched_ctx ctx = make_ctx(c);
    double t_ms = sim_ns_to_ms(c->eng.now);
    for (int i = 0; i < c->n_inst && !c->failed; i++) sample_instance(c, &ctx, i, t_ms);
    if (!(c->trace_done && c->inflight == 0))
        sim_engine_push(&c->eng, c->eng.now + sim_s_to_ns(c->cfg->sample_period_s), EV_SAMPLE, -1, NULL);
}

static const handler_fn handlers[EV_NKINDS] = {
    [EV_ARRIVAL] = on_arrival,
    [EV_PREFILL_DONE] = on_prefill_done,
    [EV_KV_READY] = on_kv_ready,
    [EV_DECODE_STEP] = on_decode_step,
    [EV_SAMPLE] = on_sample,
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
    if ((c->router->create && c->router->create(&c->router_st, cfg->params, err)) ||
        (c->decoder->create && c->decoder->create(&c->decoder_st, cfg->params, err)) ||
        (c->admission->create && c->admission->create(&c->admission_st, cfg->params, err)))
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

static int setup(cluster *c, const sim_config *cfg, sim_results *db, sim_err *err)
{
    c->cfg = cfg;
    c->db = db;
    c->err = err;
    c->n_prefill = cfg->n_prefill;
    c->n_decode = cfg->n_decode;
    c->n_inst = c->n_prefill + c->n_decode;
    c->inst = sim_xcalloc((size_t)c->n_inst, sizeof *c->inst);
    for (int i = 0; i < c->n_inst; i++) {
        c->inst[i].id = i;
        c->inst[i].batch = sim_xcalloc((size_t)cfg->decode_max_batch, sizeof(req_state *));
    }
    c->pview = sim_xcalloc((size_t)c->n_prefill, sizeof *c->pview);
    c->dview = sim_xcalloc((size_t)c->n_decode, sizeof *c->dview);
    c->remote_from = sim_xcalloc((size_t)c->n_inst, sizeof *c->remote_from);
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

static void free_req(req_state *s)
{
    sim_topk_free(&s->topk);
    sim_request_free(s->r);
    free(s);
}

static void drain_queue(req_queue *q)
{
    for (req_state *s; (s = queue_pop(q)) != NULL;) free_req(s);
}

/* Free whatever a failed run left in flight, then every structure. Each
 * request lives in exactly one place: an ARRIVAL or KV_READY event, a
 * prefill queue or slot, a decode waiting queue or batch. */
static void teardown(cluster *c)
{
    sim_event ev;
    while (sim_engine_pop(&c->eng, &ev))
        if (ev.kind == EV_ARRIVAL || ev.kind == EV_KV_READY) free_req(ev.data);
    for (int i = 0; c->inst && i < c->n_inst; i++) {
        instance *in = &c->inst[i];
        drain_queue(&in->queue);
        drain_queue(&in->waiting);
        if (in->running) free_req(in->running);
        for (int b = 0; b < in->nbatch; b++) free_req(in->batch[b]);
        free(in->batch);
    }
    if (c->router_st) c->router->destroy(c->router_st);
    if (c->decoder_st) c->decoder->destroy(c->decoder_st);
    if (c->admission_st) c->admission->destroy(c->admission_st);
    sim_engine_free(&c->eng);
    kv_store_free(c->store);
    if (c->trace) sim_trace_close(c->trace);
    gsl_rng_free(c->rng_policy);
    gsl_rng_free(c->rng_noise);
    gsl_rng_free(c->rng_fit);
    free(c->inst);
    free(c->pview);
    free(c->dview);
    free(c->remote_from);
}

static int run_loop(cluster *c, sim_err *err)
{
    read_next(c);
    if (c->failed) return -1;
    if (c->trace_done) return sim_errf(err, "trace %s: no requests to replay", c->cfg->trace_path);
    c->first_arrival = c->eng.heap[0].time;
    sim_engine_push(&c->eng, c->first_arrival, EV_SAMPLE, -1, NULL);
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
