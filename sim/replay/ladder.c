/* sim/replay/ladder.c — the hit-rate ladder (see ladder.h): the engine view
 * of a loaded trace (block size, context cap, full-block hashing), the pool
 * rungs replayed at the tiers' nested capacities, the timed run of rung e
 * and the routing regret table. */
#include "sim/replay/ladder.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/config/config.h"
#include "sim/replay/check.h"
#include "sim/replay/hitrate.h"

const char *const kv_ladder_tier_names[KV_LADDER_NTIERS] = {"hbm", "dram", "ssd", "remote"};
const char *const kv_rung_names[KV_NRUNGS] = {"ceiling", "engine", "belady", "policy", "routed"};

/* ---- the engine view ----------------------------------------------------- */

/* Totals a rung's rates are taken over: every input token, and every block
 * of the engine's size the trace's ids cover (capped or not). */
typedef struct ladder_denom {
    int64_t blocks, tokens;
} ladder_denom;

/* Engine block k of a request whose trace ids (blocks of m tokens, dense
 * chained keys `fine`) cover `covered` tokens: coarsening by f = e / m, its
 * key is the chained key of its last fine block, as `kvsim trace rechunk`
 * numbers it; splitting by s = m / e, it is part k mod s of fine block k / s
 * (shared exactly when that fine block is: sharing inside a block the trace
 * does not record is not found). */
static uint64_t engine_key(const uint64_t *fine, int64_t nfine, int m, int e, int64_t k)
{
    if (e >= m) {
        int64_t last = (k + 1) * (e / m) - 1;
        return fine[last < nfine ? last : nfine - 1];
    }
    int64_t s = m / e;
    return fine[k / s] * (uint64_t)s + (uint64_t)(k % s);
}

static void engine_request(const kv_replay_trace *src, int64_t r, int e, const kv_ladder_opts *o, kv_replay_trace *dst,
                           ladder_denom *d)
{
    const uint64_t *fine = src->keys + src->off[r];
    int64_t nfine = src->off[r + 1] - src->off[r], input = src->input_len[r];
    int64_t covered = nfine * src->block_tokens < input ? nfine * src->block_tokens : input;
    int64_t len = o->max_model_len > 0 && input > o->max_model_len ? o->max_model_len : input;
    int64_t usable = covered < len ? covered : len;
    int64_t n = o->full_blocks ? usable / e : (usable + e - 1) / e;
    for (int64_t k = 0; k < n; k++) dst->keys[dst->nblocks++] = engine_key(fine, nfine, src->block_tokens, e, k);
    dst->input_len[r] = (int32_t)len;
    dst->cls[r] = src->cls[r];
    dst->off[r + 1] = dst->nblocks;
    d->blocks += (covered + e - 1) / e;
    d->tokens += input;
}

/* The trace as the engine sees it, in e-token blocks; *d gets the totals. */
static void engine_view(const kv_replay_trace *src, int e, const kv_ladder_opts *o, kv_replay_trace *dst,
                        ladder_denom *d)
{
    int64_t cap = src->block_tokens > e ? src->nblocks * (src->block_tokens / e) : src->nblocks;
    *dst = (kv_replay_trace){.block_tokens = e, .nreq = src->nreq, .path = sim_xstrdup(src->path)};
    dst->off = sim_xcalloc((size_t)src->nreq + 1, sizeof *dst->off);
    dst->keys = sim_xmalloc((size_t)(cap > 0 ? cap : 1) * sizeof *dst->keys);
    dst->input_len = sim_xmalloc((size_t)src->nreq * sizeof *dst->input_len);
    dst->cls = sim_xmalloc((size_t)src->nreq);
    *d = (ladder_denom){0};
    for (int64_t r = 0; r < src->nreq; r++) engine_request(src, r, e, o, dst, d);
    kv_replay_renumber(dst);
}

/* ---- rungs --------------------------------------------------------------- */

static void rung_from(kv_rung *g, const kv_replay_result *r, const ladder_denom *d)
{
    *g = (kv_rung){.done = true,
                   .hit_blocks = r->hit_blocks,
                   .blocks = d->blocks,
                   .hit_tokens = r->hit_tokens,
                   .tokens = d->tokens};
    g->rate_blocks = d->blocks ? (double)r->hit_blocks / (double)d->blocks : 0;
    g->rate_tokens = d->tokens ? (double)r->hit_tokens / (double)d->tokens : 0;
}

/* One pool rung: `policy` on a single node whose capacity grows tier by tier
 * (the nested capacities); the last, every tier, is the rung. */
static int pool_rung(kv_replay_trace *t, const kv_ladder *l, const char *policy, const ladder_denom *d, kv_rung *g,
                     sim_err *err)
{
    kv_hitrate_spec s;
    kv_hitrate_spec_init(&s);
    s.block_tokens = t->block_tokens;
    int rc = kv_hitrate_set(&s, "policy", policy, err);
    int64_t cum = 0, prev_hits = 0;
    kv_replay_result r = {0};
    double added[KV_LADDER_NTIERS] = {0};
    bool any = false;
    for (int k = 0; rc == 0 && k < KV_LADDER_NTIERS; k++) {
        if (l->tier_blocks[k] <= 0) continue;
        cum = cum + l->tier_blocks[k] < SIM_COUNT_UNBOUNDED ? cum + l->tier_blocks[k] : SIM_COUNT_UNBOUNDED;
        double tokens = cum >= SIM_COUNT_UNBOUNDED ? INFINITY : (double)cum * t->block_tokens;
        rc = kv_hitrate_point(t, &s, tokens, &r, err);
        if (rc == 0) {
            added[k] = (double)(r.hit_tokens - prev_hits);
            prev_hits = r.hit_tokens;
            any = true;
        }
    }
    rung_from(g, any ? &r : &(kv_replay_result){0}, d); /* none: no cache at all */
    g->has_tiers = true;
    memcpy(g->tier_tokens, added, sizeof added);
    kv_hitrate_spec_free(&s);
    return rc;
}

/* ---- the config ------------------------------------------------------------ */

/* The config with the trace and any extra "key=value" (a router). */
static int load_config(const kv_ladder_opts *o, const char *extra, sim_config *cfg, sim_err *err)
{
    char **sets = sim_xcalloc((size_t)o->nsets + 2, sizeof *sets);
    int n = 0;
    for (int i = 0; i < o->nsets; i++) sets[n++] = sim_xstrdup(o->sets[i]);
    if (o->trace) { /* a JSON string, whatever the path looks like */
        json_t *path = json_string(o->trace);
        char *quoted = json_dumps(path, JSON_ENCODE_ANY);
        size_t len = strlen(quoted) + 16;
        sets[n] = sim_xmalloc(len);
        snprintf(sets[n++], len, "trace.path=%s", quoted);
        free(quoted);
        json_decref(path);
    }
    if (extra) sets[n++] = sim_xstrdup(extra);
    int rc = sim_config_load(cfg, o->config, sets, n, err);
    for (int i = 0; i < n; i++) free(sets[i]);
    free(sets);
    return rc;
}

/* Nodes whose caches make the pool, as the serving models build their
 * stores: every prefill and decode node (disaggregated: Mooncake's store
 * pools the DRAM of all of them) or every instance (aggregated). */
static int cache_nodes(const sim_config *c)
{
    return strcmp(c->mode, "aggregated") ? c->n_prefill + c->n_decode : c->n_instances;
}

static int64_t pool_blocks(double bytes_per_node, int nodes, double block_bytes)
{
    int64_t per = sim_count_in(bytes_per_node, block_bytes);
    if (per >= SIM_COUNT_UNBOUNDED || per > SIM_COUNT_UNBOUNDED / (nodes > 0 ? nodes : 1)) return SIM_COUNT_UNBOUNDED;
    return per * nodes;
}

static void setup_from_config(const sim_config *c, const kv_ladder_opts *o, kv_ladder *l)
{
    snprintf(l->trace, sizeof l->trace, "%s", c->trace_path);
    l->trace_block_tokens = c->trace.block_tokens;
    l->block_tokens = o->block_tokens > 0 ? o->block_tokens : c->block_tokens;
    l->full_blocks = o->full_blocks;
    l->max_model_len = o->max_model_len;
    l->nodes = cache_nodes(c);
    snprintf(l->policy, sizeof l->policy, "%s", c->eviction);
    snprintf(l->router, sizeof l->router, "%s", c->router);
    double block_bytes = sim_model_kv_bytes_per_token(&c->model) * l->block_tokens;
    l->tier_blocks[KV_LADDER_HBM] = pool_blocks(c->hbm_bytes, l->nodes, block_bytes);
    l->tier_blocks[KV_LADDER_DRAM] = pool_blocks(c->dram_bytes, l->nodes, block_bytes);
    l->tier_blocks[KV_LADDER_SSD] = pool_blocks(c->ssd_bytes, l->nodes, block_bytes);
    l->tier_blocks[KV_LADDER_REMOTE] = c->lmc.on ? pool_blocks(c->lmc.remote_bytes, 1, block_bytes) : 0;
}

static int check_sizes(const kv_ladder *l, sim_err *err)
{
    int m = l->trace_block_tokens, e = l->block_tokens;
    if (e < 1) return sim_errf(err, "--block-tokens: %d is not a block size (at least 1)", e);
    if (e % m && m % e)
        return sim_errf(err,
                        "--block-tokens %d: the trace's blocks are %d tokens (trace.block_tokens); the engine's "
                        "must divide them or be a multiple of them (try %d or %d)",
                        e, m, e / m > 0 ? e / m * m : m, (e / m + 1) * m);
    if (l->max_model_len > 0 && l->max_model_len < e)
        return sim_errf(err, "--max-model-len %" PRId64 " is below one %d-token block: nothing could hit",
                        l->max_model_len, e);
    return 0;
}

static void add_warning(kv_ladder *l, const char *text)
{
    if (l->nwarnings < (int)(sizeof l->warning / sizeof l->warning[0]))
        snprintf(l->warning[l->nwarnings++], sizeof l->warning[0], "%s", text);
}

/* The trace's block size differs from the engine's: say what rung b does. */
static void note_block_sizes(kv_ladder *l)
{
    if (l->block_tokens == l->trace_block_tokens) return;
    char text[5120];
    snprintf(text, sizeof text,
             "%s: the trace's blocks are %d tokens and the engine's %d: rung b %s (rungs b to d are then in "
             "%d-token blocks)",
             l->trace, l->trace_block_tokens, l->block_tokens,
             l->block_tokens > l->trace_block_tokens
                 ? "coarsens them as kvsim trace rechunk does"
                 : "splits each into parts shared only when the whole trace block is (finer sharing is not in "
                   "the trace)",
             l->block_tokens);
    add_warning(l, text);
}

/* ---- the ladder ---------------------------------------------------------- */

/* A timed run of the config (with `router` when not NULL): its hit rates and
 * TTFT p90; tokens saved over `input_tokens`, the trace's input (the run's
 * token hit rate is over the same). */
static int routed_rung(const kv_ladder_opts *o, const char *router, int64_t input_tokens, kv_rung *g, sim_err *err)
{
    sim_config cfg;
    char extra[64] = "";
    if (router) snprintf(extra, sizeof extra, "policy.router=%s", router); /* no %s of NULL */
    if (load_config(o, router ? extra : NULL, &cfg, err)) return -1;
    json_t *s = NULL;
    int rc = sim_check_run_config(&cfg, &s, err);
    sim_config_free(&cfg);
    if (rc) return -1;
    double tokens = (double)input_tokens;
    *g = (kv_rung){.done = true,
                   .rate_blocks = json_number_value(json_object_get(s, "hit_rate_blocks")),
                   .rate_tokens = json_number_value(json_object_get(s, "hit_rate_tokens")),
                   .tokens = (int64_t)tokens,
                   .ttft_p90_ms = json_number_value(json_object_get(json_object_get(s, "ttft_ms"), "p90"))};
    g->hit_tokens = (int64_t)llround(g->rate_tokens * tokens);
    json_decref(s);
    return 0;
}

static int replay_rungs(kv_replay_trace *src, const kv_ladder_opts *o, kv_ladder *l, sim_err *err)
{
    kv_replay_result r;
    ladder_denom d = {src->nblocks, 0};
    for (int64_t i = 0; i < src->nreq; i++) d.tokens += src->input_len[i];
    if (kv_hitrate_max(src, &r, err)) return -1;
    rung_from(&l->rung[KV_RUNG_CEILING], &r, &d);
    kv_replay_trace eng;
    engine_view(src, l->block_tokens, o, &eng, &d);
    int rc = kv_hitrate_max(&eng, &r, err);
    if (rc == 0) rung_from(&l->rung[KV_RUNG_ENGINE], &r, &d);
    if (rc == 0) rc = pool_rung(&eng, l, "belady", &d, &l->rung[KV_RUNG_BELADY], err);
    if (rc == 0) rc = pool_rung(&eng, l, l->policy, &d, &l->rung[KV_RUNG_POLICY], err);
    kv_replay_free(&eng);
    return rc;
}

int kv_ladder_build(const kv_ladder_opts *o, kv_ladder *l, sim_err *err)
{
    *l = (kv_ladder){0};
    sim_config cfg;
    if (load_config(o, NULL, &cfg, err)) return -1;
    setup_from_config(&cfg, o, l);
    char cfg_mode[32];
    snprintf(cfg_mode, sizeof cfg_mode, "%s", cfg.mode);
    sim_config_free(&cfg);
    if (check_sizes(l, err)) return -1;
    kv_replay_trace src;
    if (kv_replay_load_advice(&src, l->trace, l->trace_block_tokens,
                              "--set trace.block_tokens=N --set kvstore.block_tokens=N with N = ", err))
        return -1;
    if (src.block_warning) add_warning(l, src.block_warning);
    if (!strcmp(cfg_mode, "aggregated"))
        add_warning(l, "cluster.mode aggregated: each instance's HBM prefix cache is its engine's free KV memory "
                       "(the cost model's), which rungs c and d do not count unless kvstore.hbm_bytes gives it; "
                       "the instances evict by LRU whatever kvstore.eviction says");
    note_block_sizes(l);
    int rc = replay_rungs(&src, o, l, err);
    kv_replay_free(&src);
    if (rc == 0 && o->run) rc = routed_rung(o, NULL, l->rung[KV_RUNG_CEILING].tokens, &l->rung[KV_RUNG_ROUTED], err);
    return rc;
}

int kv_ladder_regret_add(const kv_ladder_opts *o, kv_ladder *l, const char *const *routers, int n, sim_err *err)
{
    l->regret = sim_xcalloc((size_t)n, sizeof *l->regret);
    for (int i = 0; i < n; i++) {
        kv_rung g;
        if (routed_rung(o, routers[i], l->rung[KV_RUNG_CEILING].tokens, &g, err)) return -1;
        kv_ladder_regret *x = &l->regret[l->nregret++];
        snprintf(x->router, sizeof x->router, "%s", routers[i]);
        x->rate_blocks = g.rate_blocks;
        x->rate_tokens = g.rate_tokens;
        x->ttft_p90_ms = g.ttft_p90_ms;
        x->regret_tokens = l->rung[KV_RUNG_POLICY].rate_tokens - g.rate_tokens;
    }
    return 0;
}

void kv_ladder_free(kv_ladder *l)
{
    free(l->regret);
    l->regret = NULL;
    l->nregret = 0;
}

double kv_ladder_loss(const kv_ladder *l, int i)
{
    if (i <= 0 || !l->rung[i].done || !l->rung[i - 1].done) return 0;
    return l->rung[i - 1].rate_tokens - l->rung[i].rate_tokens;
}

/* ---- JSON ------------------------------------------------------------------ */

static json_t *rung_json(const kv_ladder *l, int i)
{
    const kv_rung *g = &l->rung[i];
    json_t *o = json_pack("{s:s, s:f, s:f, s:I, s:I, s:f}", "rung", kv_rung_names[i], "hit_rate_blocks", g->rate_blocks,
                          "hit_rate_tokens", g->rate_tokens, "prefill_tokens_saved", (json_int_t)g->hit_tokens,
                          "tokens", (json_int_t)g->tokens, "loss_tokens", kv_ladder_loss(l, i));
    if (i != KV_RUNG_ROUTED) json_object_set_new(o, "blocks", json_integer(g->blocks));
    if (g->has_tiers) {
        json_t *t = json_object();
        for (int k = 0; k < KV_LADDER_NTIERS; k++)
            if (l->tier_blocks[k] > 0)
                json_object_set_new(t, kv_ladder_tier_names[k], json_integer((json_int_t)g->tier_tokens[k]));
        json_object_set_new(o, "saved_by_tier", t);
    }
    if (i == KV_RUNG_ROUTED) json_object_set_new(o, "ttft_p90_ms", json_real(g->ttft_p90_ms));
    return o;
}

static json_t *regret_json(const kv_ladder *l)
{
    json_t *a = json_array();
    for (int i = 0; i < l->nregret; i++) {
        const kv_ladder_regret *x = &l->regret[i];
        json_array_append_new(a, json_pack("{s:s, s:f, s:f, s:f, s:f}", "router", x->router, "hit_rate_blocks",
                                           x->rate_blocks, "hit_rate_tokens", x->rate_tokens, "ttft_p90_ms",
                                           x->ttft_p90_ms, "regret_tokens", x->regret_tokens));
    }
    return a;
}

json_t *kv_ladder_json(const kv_ladder *l)
{
    json_t *rungs = json_array(), *caps = json_object(), *warn = json_array();
    for (int i = 0; i < KV_NRUNGS; i++)
        if (l->rung[i].done) json_array_append_new(rungs, rung_json(l, i));
    for (int k = 0; k < KV_LADDER_NTIERS; k++)
        if (l->tier_blocks[k] > 0)
            json_object_set_new(caps, kv_ladder_tier_names[k],
                                l->tier_blocks[k] >= SIM_COUNT_UNBOUNDED ? json_string("inf")
                                                                         : json_integer(l->tier_blocks[k]));
    for (int i = 0; i < l->nwarnings; i++) json_array_append_new(warn, json_string(l->warning[i]));
    json_t *o = json_pack("{s:s, s:i, s:i, s:b, s:I, s:i, s:s, s:s, s:o, s:o, s:o}", "trace", l->trace,
                          "trace_block_tokens", l->trace_block_tokens, "block_tokens", l->block_tokens, "full_blocks",
                          l->full_blocks, "max_model_len", (json_int_t)l->max_model_len, "nodes", l->nodes, "policy",
                          l->policy, "router", l->router, "pool_blocks", caps, "rungs", rungs, "warnings", warn);
    if (l->nregret) json_object_set_new(o, "regret", regret_json(l));
    return o;
}
