/* sim/serving/agg/agg.c — cluster.mode = "aggregated" (docs/lmcache.md):
 * cluster.instances vLLM/SGLang-style instances, each prefilling and
 * decoding its own requests in one iteration loop (sim/serving/agg/iter.c),
 * with its KV in 16-token HBM pages (kvstore.pic_block_tokens) and a GPU
 * prefix cache of the unreferenced full pages, LRU (the PIC store of
 * sim/store/pic.h under "prefix", or the PIC policy kvstore.pic names).
 *
 * Requests are routed by the conductor's routers (policy.router), which see
 * an aggregated instance as they see a prefill instance: its queue, the
 * estimated prefill time of what waits there, and their belief of its cache
 * contents (a prefix-block store of the instance's HBM and, with LMCache,
 * its CPU memory, updated when a request is routed there); admission
 * policies apply (sim/serving/agg/conductor.c). Not modelled yet, and
 * refused with a message: PD-ratio control, faults, CPP. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "sched/registry.h"
#include "sim/serving/agg/agg_int.h"

static int check(const sim_config *cfg, sim_err *err)
{
    if (!sched_router_lookup(cfg->router))
        return sim_errf(err, "policy.router: unknown router '%s'%s (see kvsim policies)", cfg->router,
                        sched_suggest(SCHED_KIND_ROUTER, cfg->router));
    if (sched_params_check(cfg->params, err)) return -1;
    if (!sched_admission_lookup(cfg->admission))
        return sim_errf(err, "policy.admission: unknown admission policy '%s'%s (see kvsim policies)", cfg->admission,
                        sched_suggest(SCHED_KIND_ADMISSION, cfg->admission));
    if (strcmp(cfg->pd_controller, "static"))
        return sim_errf(err,
                        "policy.pd_controller: aggregated instances have no prefill/decode split (use \"static\")");
    if (cfg->n_faults > 0) return sim_errf(err, "faults: not modelled in aggregated mode yet");
    if (cfg->cpp_group > 1) return sim_errf(err, "cluster.cpp_group: not modelled in aggregated mode (use 1)");
    if (!kv_cache_model_lookup(cfg->pic) && !kv_pic_policy_lookup(cfg->pic))
        return sim_errf(err, "kvstore.pic: unknown cache model '%s'%s (see kvsim policies)", cfg->pic,
                        kv_pic_suggest(cfg->pic));
    if (cfg->max_num_batched_tokens < cfg->pic_block_tokens)
        return sim_errf(err,
                        "engine.max_num_batched_tokens: %d is smaller than one page (kvstore.pic_block_tokens = %d)",
                        cfg->max_num_batched_tokens, cfg->pic_block_tokens);
    kv_pic_params p = {.block_tokens = cfg->pic_block_tokens,
                       .prefix_tokens = cfg->trace.block_tokens,
                       .cacheblend_ratio = cfg->pic_cacheblend_ratio,
                       .epic_tokens = cfg->pic_epic_tokens};
    return kv_pic_params_check(&p, &kv_pic_config_names, err);
}

static gsl_rng *rng_new(uint64_t seed)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, (unsigned long)seed);
    return r;
}

static void setup_instances(agg *a)
{
    const sim_config *cfg = a->cfg;
    a->pic = kv_pic_policy_lookup(kv_pic_policy_lookup(cfg->pic) ? cfg->pic : "prefix");
    a->pp = (kv_pic_params){
        .block_tokens = cfg->pic_block_tokens,
        .prefix_tokens = cfg->trace.block_tokens,
        .cacheblend_ratio = cfg->pic_cacheblend_ratio,
        .epic_tokens = cfg->pic_epic_tokens,
        .capacity_blocks = sim_cost_decode_kv_tokens(&a->cost) / cfg->pic_block_tokens,
        .private_counts = true,
    };
    a->n = cfg->n_instances;
    a->inst = sim_xcalloc((size_t)a->n, sizeof *a->inst);
    a->pview = sim_xcalloc((size_t)a->n, sizeof *a->pview);
    a->dview = sim_xcalloc((size_t)a->n, sizeof *a->dview);
    for (int i = 0; i < a->n; i++) {
        a->inst[i].id = i;
        a->inst[i].pages = kv_pic_create(a->pic, &a->pp);
        a->inst[i].moe_jit = sim_cost_moe_jit_warm(&a->cost, cfg->max_num_batched_tokens);
    }
}

static int setup(agg *a, sim_err *err)
{
    const sim_config *cfg = a->cfg;
    a->rng_policy = rng_new(cfg->seed);
    a->rng_fit = rng_new(cfg->seed + 2);
    if (sim_cost_init(&a->cost, cfg, err)) return -1;
    if (sim_estimator_fit(&a->est, &a->cost, a->rng_fit, cfg->estimator_samples, cfg->estimator_noise, 131072, err))
        return -1;
    setup_instances(a);
    a->router = sched_router_lookup(cfg->router);
    a->admission = sched_admission_lookup(cfg->admission);
    if ((a->router->create && a->router->create(&a->router_st, cfg->params, err)) ||
        (a->admission->create && a->admission->create(&a->admission_st, cfg->params, err)))
        return -1;
    int64_t hbm_blocks = sim_cost_decode_kv_tokens(&a->cost) / cfg->block_tokens;
    kv_store_cfg sc = {.nodes = a->n,
                       .scope = KV_SCOPE_LOCAL,
                       .params = cfg->params,
                       .promote = false,
                       .tier_blocks = {hbm_blocks, cfg->lmc.on ? sim_config_blocks(cfg, cfg->dram_bytes) : 0, 0},
                       .policy = {"lru", "lru", "lru"},
                       .holder_index = a->router->holders};
    a->cache = kv_cache_model_lookup("none");
    return a->cache->create(&a->cache_st, &sc, err) || lmc_create(a, err) ? -1 : 0;
}

static int create(void **state, sim_serving_run *run, sim_err *err)
{
    agg *a = sim_xcalloc(1, sizeof *a);
    *state = a;
    a->run = run;
    a->cfg = run->cfg;
    a->eng = &run->eng;
    return setup(a, err);
}

static void start(void *state) {}

/* A request whose KV (input + output tokens) exceeds what an instance's HBM
 * pages hold fits no instance, whatever the load: counted, for one caveat of
 * the run (note_too_large; issue 40 item 6, as the disaggregated model). */
static void count_too_large(agg *a, const sim_request *req)
{
    int64_t cap = a->pp.capacity_blocks * a->pp.block_tokens, need = (int64_t)req->input_len + req->output_len;
    if (need <= cap) return;
    if (a->too_large.n++ == 0) a->too_large.first_line = req->line, a->too_large.first_need = need;
    a->too_large.prompt += req->input_len > cap;
}

static void note_too_large(const agg *a, json_t *summary)
{
    if (!a->too_large.n) return;
    char text[640];
    snprintf(
        text, sizeof text,
        "%lld request%s need%s more KV than an aggregated instance's HBM holds (%lld tokens; the first: trace "
        "line %lld, %lld tokens of input and output), whatever the load: of them, %lld whose prompt alone does not "
        "fit rejected (stage at_arrival), the others preempted and recomputed while they decode; give the "
        "instances more HBM (hardware, cluster.decode_hbm_frac) or a smaller model",
        (long long)a->too_large.n, a->too_large.n == 1 ? "" : "s", a->too_large.n == 1 ? "s" : "",
        (long long)(a->pp.capacity_blocks * a->pp.block_tokens), (long long)a->too_large.first_line,
        (long long)a->too_large.first_need, (long long)a->too_large.prompt);
    json_object_set_new(sim_serving_add_finding(summary, "too_large", text), "rejected",
                        json_integer((json_int_t)a->too_large.prompt));
}

/* Fused-MoE compiles on first use (docs/measured.md §4) stall an instance
 * for a time no table measures. A fused-MoE-shaped Triton kernel took
 * SIM_MOE_COMPILE_PROBE_LO_MS to _HI_MS to compile on one lent H200 host;
 * the public figures put it anywhere in 0.2–2 s a kernel
 * (docs/validation.md §1). Said, with how much of the run they took, so the
 * early latencies are read with that uncertainty. */
#define MOE_COMPILE_LO_S (SIM_MOE_COMPILE_PROBE_LO_MS / 1e3)
#define MOE_COMPILE_HI_S (SIM_MOE_COMPILE_PROBE_HI_MS / 1e3)
static void note_moe_compiles(const agg *a, json_t *summary)
{
    if (!a->moe_compiles.n) return;
    char text[640];
    double t0 = sim_ns_to_s(a->moe_compiles.first_ns - a->run->first_arrival),
           t1 = sim_ns_to_s(a->moe_compiles.last_ns - a->run->first_arrival);
    snprintf(text, sizeof text,
             "%lld first use%s of a fused-MoE kernel variant (over all instances) stalled an instance while "
             "Triton compiled it: %.1f s in all, %.1f to %.1f s into the run, at engine.measured.moe_jit_compile_ms "
             "= %g a kernel (two a variant); such a kernel compiled in %g to %g s on one H200 host (%.2g to "
             "%.2g times these stalls) and public figures span 0.2 to 2 s (%.2g to %.2g times), so latencies "
             "while they last are that uncertain (docs/validation.md, section 1); 0 = a warm Triton cache",
             (long long)a->moe_compiles.n, a->moe_compiles.n == 1 ? "" : "s", a->moe_compiles.s, t0, t1,
             a->cost.moe_jit_s * 1e3, MOE_COMPILE_LO_S, MOE_COMPILE_HI_S, MOE_COMPILE_LO_S / a->cost.moe_jit_s,
             MOE_COMPILE_HI_S / a->cost.moe_jit_s, 0.2 / a->cost.moe_jit_s, 2 / a->cost.moe_jit_s);
    sim_serving_add_finding(summary, "moe_compiles", text);
    json_object_set_new(
        summary, "moe_compiles",
        json_pack("{s:I, s:f}", "variants", (json_int_t)a->moe_compiles.n, "stall_s", a->moe_compiles.s));
}

/* An event that brings a request to a scheduler: a trace arrival or the
 * API server's hand-over. */
static bool brings_request(const sim_event *ev) { return ev->kind == SIM_EV_ARRIVAL || ev->kind == EV_FRONT; }

/* Start in's next iteration, after every request that reaches the
 * scheduler at this same instant: vLLM's engine core drains its whole input
 * queue before it schedules (vllm/v1/engine/core.py,
 * EngineCoreProc._process_input_queue), so requests that come together (an
 * offline batch, a trace's equal timestamps) share the first step. An idle
 * instance with such a request still due waits for it behind an EV_WAKE at
 * the same time, and again behind the next (the replay reads one arrival
 * ahead); the heap is scanned only when its earliest event is due now. */
static void kick(agg *a, ainst *in)
{
    sim_engine *e = a->eng;
    if (in->iterating || sim_engine_next_time(e) != e->now || sim_engine_next_time_of(e, brings_request) != e->now) {
        agg_iterate(a, in);
        return;
    }
    if (in->wake_pending) return;
    in->wake_pending = true;
    sim_engine_push(e, e->now, EV_WAKE, in->id, 0, NULL);
}

static void conduct(agg *a, sim_request *req)
{
    count_too_large(a, req);
    int inst;
    sim_stage verdict = agg_conduct(a, req, &inst);
    areq *q = sim_xcalloc(1, sizeof *q);
    *q = (areq){.r = req,
                .inst = inst,
                .target = req->input_len,
                .input_len = req->input_len,
                .output_len = req->output_len,
                .prompt_pages = (int32_t)((req->input_len + a->pp.block_tokens - 1) / a->pp.block_tokens),
                .prefill_start = -1,
                .first_token = -1,
                .prefetch_at = -1,
                .last_token = -1};
    if (verdict == SIM_STAGE_NONE && !a->cfg->chunked_prefill && req->input_len > a->cfg->max_num_batched_tokens)
        verdict = SIM_STAGE_AT_ARRIVAL; /* vLLM requires max_model_len <= max_num_batched_tokens without chunking */
    if (verdict != SIM_STAGE_NONE) {
        a->tot.rejected++;
        agg_reject(a, q, verdict);
        return;
    }
    ainst *in = &a->inst[inst];
    agg_enqueue(a, in, q);
    a->cache->admit(a->cache_st, in->id, req, req->nblocks, 0, false);
    kick(a, in);
}

/* Without engine.prefix_caching no block is shared: each of the request's
 * chained keys is mixed with its index, so no other request's match and
 * the store holds its pages as its own (vLLM without
 * --enable-prefix-caching computes every prompt in full). */
static void own_blocks(sim_request *req)
{
    for (int32_t i = 0; i < req->nblocks; i++)
        req->keys[i] = XXH3_64bits_withSeed(&req->keys[i], sizeof req->keys[i], (uint64_t)req->index + 1);
}

/* A request reaches the scheduler engine.frontend_ms after it was sent
 * (cost.compute = "engine"): the API server's share of TTFT and end-to-end
 * latency, which the client measures from its send. Without prefix
 * caching its blocks are made its own first (own_blocks). */
static void arrive(void *state, sim_request *req)
{
    agg *a = state;
    if (!a->cfg->prefix_caching) own_blocks(req);
    if (a->cost.engine && a->cost.frontend_s > 0)
        sim_engine_push(a->eng, a->eng->now + sim_s_to_ns(a->cost.frontend_s), EV_FRONT, 0, 0, req);
    else conduct(a, req);
}

static void handle(void *state, const sim_event *ev)
{
    agg *a = state;
    if (ev->kind == EV_ITER) agg_on_iter(a, ev);
    else if (ev->kind == EV_WAKE) {
        a->inst[ev->target].wake_pending = false;
        kick(a, &a->inst[ev->target]); /* the trace's next request may be due now too: after it */
    } else if (ev->kind == EV_FRONT) conduct(a, ev->data);
}

static void discard(void *state, const sim_event *ev)
{
    if (ev->kind == EV_FRONT) sim_request_free(ev->data);
}

static void free_queue(areq *q)
{
    while (q) {
        areq *next = q->next;
        agg_req_free(q);
        q = next;
    }
}

static void destroy(void *state)
{
    agg *a = state;
    for (int i = 0; a->inst && i < a->n; i++) {
        ainst *in = &a->inst[i];
        free_queue(in->wait_head);
        for (int j = 0; j < in->nrun; j++) agg_req_free(in->run[j]);
        free(in->run);
        kv_pic_destroy(in->pages);
    }
    if (a->router_st) a->router->destroy(a->router_st);
    if (a->admission_st) a->admission->destroy(a->admission_st);
    free(a->dview);
    free(a->inflight);
    if (a->cache_st) a->cache->destroy(a->cache_st);
    lmc_free(a);
    if (a->rng_policy) gsl_rng_free(a->rng_policy);
    if (a->rng_fit) gsl_rng_free(a->rng_fit);
    free(a->inst);
    free(a->pview);
    free(a);
}

static void summarize(void *state, json_t *summary)
{
    agg *a = state;
    kv_pic_peak at = {0};
    for (int i = 0; i < a->n; i++)
        if (kv_pic_peak_footprint(a->inst[i].pages) > at.footprint) at = kv_pic_peak_state(a->inst[i].pages);
    int64_t peak = at.footprint;
    double in = (double)a->tot.input;
    json_t *o = json_pack(
        "{s:i, s:s, s:i, s:I, s:I, s:I, s:f, s:I, s:f, s:f}", "instances", a->n, "gpu_cache",
        kv_pic_policy_name(a->pic), "page_tokens", a->pp.block_tokens, "hbm_pages", (json_int_t)a->pp.capacity_blocks,
        "peak_pages", (json_int_t)peak, "preemptions", (json_int_t)a->tot.preemptions, "recompute_fraction",
        in > 0 ? (double)a->tot.computed / in : 0, "iterations", (json_int_t)a->tot.iterations, "gpu_busy_s",
        a->tot.busy_s, "peak_footprint_bytes", (double)peak * a->pp.block_tokens * a->cost.kv_bytes_per_token);
    kv_pic_peak_json(&at, o);
    json_object_update(summary, o);
    json_decref(o);
    double s = json_number_value(json_object_get(summary, "sim_seconds"));
    json_object_set_new(summary, "utilisation",
                        json_pack("{s:f, s:f}", "gpu", s > 0 ? a->tot.load_s / (a->n * s) : 0, "gpu_busy",
                                  s > 0 ? a->tot.busy_s / (a->n * s) : 0));
    lmc_summarize(a, summary);
    note_too_large(a, summary);
    note_moe_compiles(a, summary);
    sim_serving_note_fit_range(summary, &a->cost, "iterations", a->peak.seqs, a->peak.share);
    sim_serving_note_short_steps(summary, &a->cost, "aggregated instances");
}

/* Keys the aggregated model accepts but never reads (kvsim run warns when set). */
static const sim_idle_key idle_keys[] = {
    {"cost.noise", "the aggregated model times every iteration at the cost model's value (truth noise is the "
                   "disaggregated model's; cost.estimator_noise still applies)"},
    {"decode.kv_allocation", "an aggregated instance allocates 16-token pages as it goes (kvstore.pic_block_tokens)"},
    {"decode.preemption", "an aggregated instance preempts by recompute, as vLLM v1 does"},
    /* a disaggregated cluster's (a run once took them without a word) */
    {"cluster.scope", "an aggregated instance keeps its own GPU prefix cache; what instances share is the LMCache "
                      "layer's (kvstore.cpu_scope, kvstore.remote)"},
    {"metrics.first_token", "an aggregated instance's first token is its prefill's: there is no decode instance to "
                            "send it"},
    {"decode.kv_receive", "an aggregated instance receives no KV: it decodes what it prefilled"},
    {NULL, NULL},
};

const sim_serving_ops sim_serving_agg = {
    .name = "aggregated",
    .help = "vLLM/SGLang-style instances that prefill and decode: continuous batching, chunked prefill, "
            "16-token pages, GPU prefix cache, recompute preemption (docs/lmcache.md)",
    .check = check,
    .create = create,
    .start = start,
    .arrive = arrive,
    .handle = handle,
    .discard = discard,
    .destroy = destroy,
    .summarize = summarize,
    .idle_keys = idle_keys,
};
