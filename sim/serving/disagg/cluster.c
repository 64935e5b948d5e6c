/* sim/serving/disagg/cluster.c — the disaggregated serving model
 * (cluster.mode = "disaggregated"; Mooncake §3, §4, §5).
 *
 * N prefill + M decode instances (one instance = one node of g GPUs, Mooncake
 * §7.1): arrival → routing, decode selection and admission by the sched/
 * policies → prefill queue → prefix load (DRAM → HBM, SSD, remote over the
 * NIC) and prefill compute → new blocks stored into the node's cache → KV
 * streamed to the decode node → continuous batching until output_length
 * tokens. A control plane samples instance loads, moves instances between
 * roles (PD-ratio controller) and fails and recovers them on schedule.
 *
 * This file is the model's ops (sim/serving/serving.h), registered in
 * sim/serving/registry.c: set-up of instances, cost model, estimators,
 * policies and cache model from the config; the handler table that hands
 * each event to the request flow (flow.c) or the control plane (control.c);
 * teardown. The files and their call order: cluster_int.h. */
#include <stdlib.h>
#include <string.h>

#include "sched/registry.h"

#include "sim/serving/disagg/cluster_int.h"
#include "sim/store/evict/registry.h"

static gsl_rng *rng_new(uint64_t seed)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, (unsigned long)seed);
    return r;
}

/* Every name this model resolves from cfg exists (errors name the key). */
static int check(const sim_config *cfg, sim_err *err)
{
    const kv_evict_entry *ev;
    if (!sched_router_lookup(cfg->router))
        return sim_errf(err, "policy.router: unknown router '%s'%s (see kvsim policies)", cfg->router,
                        sched_suggest(SCHED_KIND_ROUTER, cfg->router));
    if (!sched_decode_lookup(cfg->decode_policy))
        return sim_errf(err, "policy.decode: unknown decode selector '%s'%s (see kvsim policies)", cfg->decode_policy,
                        sched_suggest(SCHED_KIND_DECODE, cfg->decode_policy));
    if (!sched_admission_lookup(cfg->admission))
        return sim_errf(err, "policy.admission: unknown admission policy '%s'%s (see kvsim policies)", cfg->admission,
                        sched_suggest(SCHED_KIND_ADMISSION, cfg->admission));
    if (!sched_pd_lookup(cfg->pd_controller))
        return sim_errf(err, "policy.pd_controller: unknown controller '%s'%s (see kvsim policies)", cfg->pd_controller,
                        sched_suggest(SCHED_KIND_PD, cfg->pd_controller));
    if (sched_params_check(cfg->params, err)) return -1;
    if (kv_evict_find(cfg->eviction, &ev, err)) {
        const char *names[32];
        size_t n = 0;
        for (; n < kv_evict_count() && n < 32; n++) names[n] = kv_evict_at(n)->name;
        return sim_errf(err, "kvstore.eviction: unknown eviction policy '%s'%s (see kvsim policies)", cfg->eviction,
                        sim_did_you_mean(cfg->eviction, names, n));
    }
    return sim_pic_check(cfg, err);
}

static int setup_policies(cluster *c, sim_err *err)
{
    const sim_config *cfg = c->cfg;
    if (check(cfg, err)) return -1;
    c->router = sched_router_lookup(cfg->router);
    c->decoder = sched_decode_lookup(cfg->decode_policy);
    c->admission = sched_admission_lookup(cfg->admission);
    c->pd = sched_pd_lookup(cfg->pd_controller);
    if ((c->router->create && c->router->create(&c->router_st, cfg->params, err)) ||
        (c->decoder->create && c->decoder->create(&c->decoder_st, cfg->params, err)) ||
        (c->admission->create && c->admission->create(&c->admission_st, cfg->params, err)) ||
        (c->pd->create && c->pd->create(&c->pd_st, cfg->params, c->n_inst, err)))
        return -1;
    if (c->admission->needs_inflight) c->outputs = sched_lengths_new(); /* the conductor's record of outputs */
    return 0;
}

static int setup_store(cluster *c, sim_err *err)
{
    const sim_config *cfg = c->cfg;
    kv_store_cfg sc = {
        .nodes = c->n_inst,
        .scope = cfg->scope,
        .params = cfg->params,
        .promote = cfg->promote,
        .tier_blocks = {sim_config_blocks(cfg, cfg->hbm_bytes), sim_config_blocks(cfg, cfg->dram_bytes),
                        sim_config_blocks(cfg, cfg->ssd_bytes)},
        .policy = {cfg->eviction, cfg->eviction, cfg->eviction},
        .holder_index = c->router->holders,
    };
    /* Under a PIC policy the prefix-block model stays for the conductor's
     * cache-aware routing; the cost of a prefill comes from the PIC store. */
    c->cache = kv_cache_model_lookup(kv_cache_model_lookup(cfg->pic) ? cfg->pic : "none");
    sim_pic_setup(c);
    return c->cache->create(&c->cache_st, &sc, err);
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

static int setup(cluster *c, sim_serving_run *run, sim_err *err)
{
    const sim_config *cfg = run->cfg;
    c->run = run;
    c->cfg = cfg;
    c->eng = &run->eng;
    setup_instances(c);
    c->rng_policy = rng_new(cfg->seed);
    c->rng_noise = rng_new(cfg->seed + 1);
    c->rng_fit = rng_new(cfg->seed + 2);
    if (sim_cost_init_on(&c->cost, cfg, &cfg->prefill_hw, err) ||
        sim_cost_init_on(&c->dcost, cfg, &cfg->decode_hw, err))
        return -1;
    if (cfg->hetero && strcmp(cfg->pd_controller, "static"))
        return sim_errf(err,
                        "policy.pd_controller '%s' moves nodes between prefill and decode; with "
                        "cluster.prefill_hardware and cluster.decode_hardware different hardware the roles are fixed: "
                        "use policy.pd_controller=static",
                        cfg->pd_controller);
    c->kv_capacity = sim_cost_decode_kv_tokens(&c->dcost);
    c->slo_tbt_s = cfg->slo_tbt_ms / 1e3;
    c->block_bytes = c->cost.kv_bytes_per_token * cfg->block_tokens;
    if (sim_estimator_fit(&c->est, &c->cost, c->rng_fit, cfg->estimator_samples, cfg->estimator_noise, 131072, err))
        return -1;
    c->est.decode_cost = &c->dcost;
    return setup_policies(c, err) || setup_store(c, err) ? -1 : 0;
}

static void drain_queue(req_queue *q)
{
    for (req_state *s; (s = queue_pop(q)) != NULL;) sim_cluster_free_req(s);
}

/* Free whatever a failed run left in flight, then every structure. Each
 * request lives in exactly one place: a RETRY, PREFILL_DONE or KV_READY
 * event (freed by discard before this), a prefill queue, a decode waiting
 * queue or batch. */
static void destroy(void *state)
{
    cluster *c = state;
    for (int i = 0; c->inst && i < c->n_inst; i++) {
        instance *in = &c->inst[i];
        drain_queue(&in->queue);
        drain_queue(&in->waiting);
        for (int b = 0; b < in->nbatch; b++) sim_cluster_free_req(in->batch[b]);
        free(in->batch);
    }
    if (c->router_st) c->router->destroy(c->router_st);
    if (c->decoder_st) c->decoder->destroy(c->decoder_st);
    if (c->admission_st) c->admission->destroy(c->admission_st);
    if (c->pd_st) c->pd->destroy(c->pd_st);
    sim_control_free(c);
    if (c->cache_st) c->cache->destroy(c->cache_st);
    sim_pic_free(c);
    gsl_rng_free(c->rng_policy);
    gsl_rng_free(c->rng_noise);
    gsl_rng_free(c->rng_fit);
    sched_lengths_free(c->outputs);
    free(c->inst);
    free(c->pidx);
    free(c->didx);
    free(c->pview);
    free(c->dview);
    free(c->inflight);
    free(c->remote_from);
    free(c);
}

static int create(void **state, sim_serving_run *run, sim_err *err)
{
    cluster *c = sim_xcalloc(1, sizeof *c);
    *state = c;
    return setup(c, run, err);
}

static void start(void *state) { sim_control_start(state); }

static void arrive(void *state, sim_request *req) { sim_flow_arrive(state, req); }

typedef void (*handler_fn)(cluster *c, const sim_event *ev);

static const handler_fn handlers[EV_NKINDS] = {
    [EV_RETRY] = sim_flow_on_retry,        [EV_PREFILL_DONE] = sim_flow_on_prefill_done,
    [EV_KV_READY] = sim_flow_on_kv_ready,  [EV_DECODE_STEP] = sim_flow_on_decode_step,
    [EV_SAMPLE] = sim_control_on_sample,   [EV_REPLICAS] = sim_control_on_replicas,
    [EV_CONTROL] = sim_control_on_control, [EV_SWITCH_DONE] = sim_control_on_switch_done,
    [EV_FAULT] = sim_control_on_fault,     [EV_RECOVER] = sim_control_on_recover,
    [EV_UNBLOCK] = sim_flow_on_unblock,    [EV_KV_LOADED] = sim_flow_on_kv_loaded,
};

static void handle(void *state, const sim_event *ev) { handlers[ev->kind](state, ev); }

/* RETRY, PREFILL_DONE, KV_READY and KV_LOADED carry a request; the others nothing. */
static void discard(void *state, const sim_event *ev)
{
    if (ev->data) sim_cluster_free_req(ev->data);
}

/* For the overload diagnosis (sim/serving/diagnose.c), docs/definitions.md:
 * utilisation.prefill, the busy fraction of the prefill instances over the
 * configured count (role switches aside); utilisation.decode, the share of
 * decode capacity held by running batches — Σ over iterations of duration
 * × the batch's KV / HBM capacity, over the instance-seconds spent in the
 * decode role — in [0, 1]. And decode_load, the time-weighted decode load
 * (Mooncake §4.3.1, reservations included) while iterating, over the
 * configured count: what utilisation.decode was before. And the PIC
 * metrics. */
static void summarize(void *state, json_t *summary)
{
    cluster *c = state;
    double s = json_number_value(json_object_get(summary, "sim_seconds"));
    double p = s > 0 ? c->busy_prefill_s / (c->cfg->n_prefill * s) : 0,
           d = s > 0 ? c->busy_decode_s / (c->cfg->n_decode * s) : 0;
    int64_t role_ns = c->decode_role_ns;
    for (int i = 0; i < c->n_inst; i++) role_ns += sim_cluster_decode_span_ns(c, &c->inst[i], c->run->last_done);
    double held = role_ns > 0 ? c->held_decode_s / sim_ns_to_s(role_ns) : 0;
    json_object_set_new(summary, "utilisation", json_pack("{s:f, s:f}", "prefill", p, "decode", held));
    json_object_set_new(summary, "decode_load", json_real(d));
    if (c->cfg->decode_incremental) { /* decode.kv_allocation = reserve never preempts */
        json_object_set_new(summary, "preemptions", json_integer((json_int_t)c->preempt.preemptions));
        json_object_set_new(summary, "swapped_bytes", json_real(c->preempt.swapped_bytes));
        json_object_set_new(summary, "recomputed_tokens", json_integer((json_int_t)c->preempt.recomputed_tokens));
    }
    sim_pic_summarize(c, summary);
    sim_control_summarize(c, summary);
    sim_cluster_note_too_large(c, summary);
    sim_serving_note_fit_range(summary, &c->dcost, "decode iterations", c->peak_decode.seqs, c->peak_decode.share);
    sim_serving_note_short_steps(summary, &c->dcost, "decode instances");
}

/* Keys of an aggregated engine that the disaggregated model never reads
 * (kvsim run warns when set). */
static const sim_idle_key idle_keys[] = {
    {"engine.frontend_ms", "the API server's latency is an aggregated instance's (cluster.mode = \"aggregated\")"},
    {"engine.async_scheduling", "async scheduling is an aggregated instance's (cluster.mode = \"aggregated\")"},
    {"engine.chunked_prefill", "chunked prefill is an aggregated instance's (cluster.mode = \"aggregated\"); a "
                               "prefill instance chunks above cluster.prefill_chunk"},
    {"engine.prefix_caching", "prefix caching is an aggregated instance's (cluster.mode = \"aggregated\"); here "
                              "the KV store's pages are shared by kvstore.* and cluster.scope"},
    {"engine.max_num_batched_tokens", "the token budget is an aggregated instance's; prefill chunks are "
                                      "cluster.prefill_chunk here"},
    /* an aggregated cluster's, and its LMCache layer's (kvstore.lmcache is
     * refused here): a run once took them without a word (cluster.instances
     * = 3 ran 4P4D) */
    {"cluster.instances", "it counts an aggregated cluster's instances; here cluster.prefill and cluster.decode do"},
    {"cluster.instances_per_node", "it groups aggregated instances round one LMCache CPU pool (kvstore.cpu_scope)"},
    {"kvstore.cpu_scope", "LMCache's CPU pool is an aggregated instance's (kvstore.lmcache); here the store's "
                          "sharing is cluster.scope"},
    {"kvstore.chunk_tokens", "LMCache's chunk is an aggregated instance's (kvstore.lmcache); here the store moves "
                             "kvstore.block_tokens blocks"},
    {"kvstore.transfer", "how LMCache's chunks reach HBM is an aggregated instance's (kvstore.lmcache)"},
    {"kvstore.load", "LMCache's load rule is an aggregated instance's (kvstore.lmcache)"},
    {"kvstore.prefetch", "LMCache's prefetch is an aggregated instance's (kvstore.lmcache)"},
    {"kvstore.remote.bytes", "LMCache's remote store is an aggregated instance's (kvstore.lmcache)"},
    {"kvstore.remote.Gbps", "LMCache's remote store is an aggregated instance's (kvstore.lmcache)"},
    {"kvstore.remote.latency_us", "LMCache's remote store is an aggregated instance's (kvstore.lmcache)"},
    {NULL, NULL},
};

const sim_serving_ops sim_serving_disagg = {
    .name = "disaggregated",
    .help = "Mooncake: prefill and decode instances, KV streamed between them (Sec. 3-5)",
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
