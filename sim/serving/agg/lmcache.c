/* sim/serving/agg/lmcache.c — the LMCache KV layer of aggregated instances
 * (kvstore.lmcache; docs/lmcache.md; LMCache §4, §7).
 *
 * KV is kept in chunks of kvstore.chunk_tokens (256) tokens, named by the
 * chunk's prefix identity: a Mooncake request's chunk is named by the
 * chained key of the 512-token block it lies in (or ends, for chunks
 * longer than a block) and its place there; a segment request's chunks by
 * their content (sim_segments_keys). A chunk hits only when every chunk
 * before it hit (LMCache's prefix mode). Tiers, fastest first: CPU DRAM
 * (kvstore.dram_bytes, per instance or shared by the instances of a node,
 * kvstore.cpu_scope), local disk (kvstore.ssd_bytes, per instance) and one
 * remote store for the cluster (kvstore.remote.bytes behind
 * kvstore.remote.Gbps and latency_us), each LRU over whole chunks.
 *
 * When a request is admitted, the chunks past what the GPU prefix cache
 * already holds are looked up tier by tier; kvstore.load decides whether
 * they are loaded: always, never, or adaptive — a chunk is loaded only when
 * moving it from the tier that holds it takes less time than recomputing
 * it at its position (LMCache §7.7). Recomputing grows with the position,
 * so the chunks not worth loading lead the run: they are computed, the rest
 * of the run loaded (the prompt's hole [hole_from, hole_to), sim/serving/agg/
 * iter.c skips it once the load is in). A load moves chunk_tokens × KV bytes per transfer
 * (kvstore.transfer = "chunk") or one 16-token page of one layer per
 * transfer ("page", vLLM's native CPU offload: a vLLM page is one layer's
 * KV of 16 tokens, 64 KiB for Llama-3.1-8B, LMCache §3), each transfer
 * paying the calibrated per-transfer cost, so page transfers reach far
 * less bandwidth. With
 * layer-wise pipelining (cluster.layerwise) the request waits
 * max(0, load − compute) plus one layer's load; without, the whole load.
 * Once its prompt is done, its full chunks are written through to every
 * tier, asynchronously (never blocking compute). With kvstore.prefetch, a
 * queued request's chunks on disk or remote are copied into CPU memory
 * while it waits, and count as CPU hits if the copy ended by admission. */
#include <math.h>
#include <stdlib.h>

#include "sim/serving/agg/agg_int.h"
#include "sim/store/evict/registry.h"

enum { T_CPU = 0, T_DISK, T_REMOTE, T_N };
static const char *const tier_names[T_N] = {"cpu", "disk", "remote"};

struct lmc {
    const struct sim_lmcache_cfg *cfg;
    int prefix_tokens;
    kv_cache **cpu, **disk, *remote;
    int ncpu;
    double chunk_bytes, page_bytes;
    int64_t hits[T_N], loads, recomputed;
    double bytes[T_N], load_s, saved_s;
    /* The remote store's one link, shared by every instance: busy until
     * remote_free (ns); remote_wait_s sums what fetches queued for it. */
    int64_t remote_free;
    double remote_wait_s;
    double remote_busy_s; /* the link's seconds held by fetches */
};

/* A tier of `bytes` in chunks, evicting by kvstore.eviction (LMCache's
 * own is LRU, the default; it once was LRU whatever the key said, and
 * `belady` passed unrefused). */
static int new_tier(kv_cache **out, double bytes, double chunk_bytes, const char *policy, sim_err *err)
{
    *out = NULL;
    int64_t chunks = sim_count_in(bytes, chunk_bytes);
    const kv_evict_entry *e = kv_evict_lookup(policy);
    if (chunks > 0 && e && e->offline) /* the store's own rule (sim/store/kvstore.c) */
        return sim_errf(err,
                        "kvstore.eviction: '%s' needs the future and only runs in an offline replay (kvsim hitrate "
                        "--policy %s)",
                        policy, policy);
    return chunks > 0 ? kv_cache_new(out, policy, chunks, NULL, err) : 0;
}

int lmc_create(agg *a, sim_err *err)
{
    const sim_config *cfg = a->cfg;
    if (!cfg->lmc.on) return 0;
    lmc *l = a->lmc = sim_xcalloc(1, sizeof *l);
    l->cfg = &cfg->lmc;
    l->prefix_tokens = cfg->trace.block_tokens;
    l->chunk_bytes = cfg->lmc.chunk_tokens * a->cost.kv_bytes_per_token;
    l->page_bytes = cfg->pic_block_tokens * a->cost.kv_bytes_per_token;
    l->ncpu = cfg->lmc.cpu_per_node ? (a->n + cfg->instances_per_node - 1) / cfg->instances_per_node : a->n;
    l->cpu = sim_xcalloc((size_t)l->ncpu, sizeof *l->cpu);
    l->disk = sim_xcalloc((size_t)a->n, sizeof *l->disk);
    for (int i = 0; i < l->ncpu; i++)
        if (new_tier(&l->cpu[i], cfg->dram_bytes, l->chunk_bytes, cfg->eviction, err)) return -1;
    for (int i = 0; i < a->n; i++)
        if (new_tier(&l->disk[i], cfg->ssd_bytes, l->chunk_bytes, cfg->eviction, err)) return -1;
    return new_tier(&l->remote, cfg->lmc.remote_bytes, l->chunk_bytes, cfg->eviction, err);
}

void lmc_free(agg *a)
{
    lmc *l = a->lmc;
    if (!l) return;
    for (int i = 0; i < l->ncpu; i++) kv_cache_free(l->cpu[i]);
    for (int i = 0; i < a->n; i++) kv_cache_free(l->disk[i]);
    kv_cache_free(l->remote);
    free(l->cpu);
    free(l->disk);
    free(l);
}

/* ---- chunks ------------------------------------------------------------------ */

/* Keys of r's full chunks (at most n); returns how many. */
static int32_t chunk_keys(const lmc *l, const sim_request *r, uint64_t *keys, int32_t n)
{
    int C = l->cfg->chunk_tokens, P = l->prefix_tokens;
    if (r->nsegs) {
        sim_segments_keys(r, P, C, r->input_len, n, keys, NULL);
        return n;
    }
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        int64_t end = (int64_t)(i + 1) * C, b = C >= P ? end / P - 1 : (int64_t)i * C / P;
        if (b >= r->nblocks) break;
        keys[m++] = sim_block_key(r->keys[b], C >= P ? 0 : (int64_t)i * C % P / C);
    }
    return m;
}

static kv_cache *tier_of(const agg *a, int inst, int t)
{
    const lmc *l = a->lmc;
    if (t == T_CPU) return l->cpu[l->cfg->cpu_per_node ? inst / a->cfg->instances_per_node : inst];
    return t == T_DISK ? l->disk[inst] : l->remote;
}

/* The fastest tier holding key for inst, or -1. */
static int find(const agg *a, int inst, uint64_t key)
{
    for (int t = 0; t < T_N; t++) {
        kv_cache *c = tier_of(a, inst, t);
        if (c && kv_cache_contains(c, key)) return t;
    }
    return -1;
}

/* The part of moving `bytes` from tier t that comes before the CPU: the
 * disk read or the remote fetch (nothing from CPU memory). */
static double tier_s(const agg *a, int t, double bytes)
{
    if (t == T_DISK) return sim_cost_ssd_read_s(&a->cost, bytes);
    if (t == T_REMOTE) return a->cfg->lmc.remote_latency_s + bytes / a->cfg->lmc.remote_Bps;
    return 0;
}

/* The remote store is one store behind one link (kvstore.remote.Gbps) that
 * every instance of the cluster reads through: a fetch of `chunks` chunks
 * starts when the link is free of earlier fetches (first come, first
 * served) and holds it for their bytes; each chunk's latency is paid on the
 * way, not on the link. Returns the seconds the fetch waits for the link,
 * and books it from now. (LMCache's remote backends, e.g. its Redis or
 * Mooncake store connectors, serve every instance from one server: its
 * bandwidth is shared, not per reader.) */
static double remote_queue_s(agg *a, double chunks)
{
    lmc *l = a->lmc;
    if (chunks <= 0) return 0;
    int64_t now = a->eng->now, start = l->remote_free > now ? l->remote_free : now;
    double hold = chunks * l->chunk_bytes / a->cfg->lmc.remote_Bps;
    l->remote_free = start + sim_s_to_ns(hold);
    l->remote_busy_s += hold;
    double wait = sim_ns_to_s(start - now);
    l->remote_wait_s += wait;
    return wait;
}

/* One transfer of `bytes` from tier t to the GPU (through the CPU). */
static double move_s(const agg *a, int t, double bytes)
{
    return sim_cost_h2d_s(&a->cost, bytes) + tier_s(a, t, bytes);
}

/* Time to bring one chunk from tier t into HBM, per kvstore.transfer. Page
 * by page, the tier's part is paid per page of one layer and the copies into
 * HBM cost sim_cost_h2d_pages_s (the calibration's page-copy cost when it
 * has one). */
static double chunk_load_s(const agg *a, int t)
{
    const lmc *l = a->lmc;
    if (!l->cfg->page_transfer) return move_s(a, t, l->chunk_bytes);
    int layers = a->cfg->model.layers;
    double pages = (double)(l->cfg->chunk_tokens / a->cfg->pic_block_tokens) * layers, page = l->page_bytes / layers;
    if (!a->cost.curves.pages) return pages * move_s(a, t, page);
    return sim_cost_h2d_pages_s(&a->cost, page, pages) + pages * tier_s(a, t, page);
}

/* Compute time of chunk i at its place in the prompt when it is recomputed
 * inside the request's prefill, which computes from token `from` in passes
 * of the token budget: what the chunk adds to its pass
 * (sim_cost_pass_recompute_s), under every cost mode — never a forward pass
 * of its own (issue 32 item 1). */
static double chunk_compute_s(const agg *a, int32_t i, int32_t from)
{
    double C = a->cfg->lmc.chunk_tokens;
    return sim_cost_pass_recompute_s(&a->cost, i * C, C, from, a->cfg->max_num_batched_tokens);
}

/* The same for prompt tokens [lo, hi) computed from lo on, pass by pass. */
static double recompute_span_s(const agg *a, double lo, double hi)
{
    double t = 0, budget = a->cfg->max_num_batched_tokens;
    for (double x = lo; x < hi; x += budget)
        t += sim_cost_pass_recompute_s(&a->cost, x, fmin(budget, hi - x), lo, (int)budget);
    return t;
}

/* q's chunk keys, computed on first use and kept with q (enqueue, load,
 * store and a re-admission after preemption all read them). */
static const uint64_t *request_chunks(const lmc *l, areq *q, int32_t *n)
{
    if (!q->chunk_keys) {
        int32_t most = q->r->input_len / l->cfg->chunk_tokens;
        q->chunk_keys = sim_xmalloc((size_t)(most > 0 ? most : 1) * sizeof *q->chunk_keys);
        q->nchunks = chunk_keys(l, q->r, q->chunk_keys, most);
    }
    *n = q->nchunks;
    return q->chunk_keys;
}

/* ---- prefetch, load, store ------------------------------------------------------ */

void lmc_enqueue(agg *a, areq *q)
{
    lmc *l = a->lmc;
    if (!l || !l->cfg->prefetch || l->cfg->load == SIM_LOAD_NEVER) return;
    int32_t n;
    const uint64_t *keys = request_chunks(l, q, &n);
    double s = 0, remote = 0;
    for (int32_t i = 0; i < n; i++) {
        int t = find(a, q->inst, keys[i]);
        if (t < 0) break;
        s += move_s(a, t, l->chunk_bytes) - sim_cost_h2d_s(&a->cost, l->chunk_bytes);
        remote += t == T_REMOTE;
    }
    s += remote_queue_s(a, remote);
    q->prefetch_at = s > 0 ? a->eng->now + sim_s_to_ns(s) : -1;
}

/* A prefetch that ended by now put q's slow-tier chunks in CPU memory. */
static void prefetch_settle(agg *a, areq *q, const uint64_t *keys, int32_t n)
{
    if (q->prefetch_at < 0 || q->prefetch_at > a->eng->now) return;
    kv_cache *cpu = tier_of(a, q->inst, T_CPU);
    for (int32_t i = 0; cpu && i < n; i++) {
        int t = find(a, q->inst, keys[i]);
        if (t < 0) break;
        if (t > T_CPU) kv_cache_access(cpu, keys[i], q->r->cache);
    }
    q->prefetch_at = -1;
}

/* ---- which chunks to load ---------------------------------------------------- */

/* What a recompute for q meets on its instance (load rules adaptive and
 * balanced): w, the requests it delays (those running, whose iterations
 * it lengthens, and those waiting behind q); the GPU work ahead of q's
 * prefill (what the running requests still have to compute of their
 * prompts: their chunks take the budget first); and the slack of the
 * running requests that can still meet their SLOs, the smallest of which
 * bounds the recompute:
 *   a decoder of n output tokens keeps its TBT (the mean of its
 *   k = max(1, (n − 1)/10) longest gaps) within the SLO while the delays
 *   added to its gaps stay within k · (slo − step), step being the current
 *   decode step, less what earlier recomputes were believed to add
 *   (stalled_s);
 *   a request still prefilling or loading comes first in each iteration,
 *   but waits for the one in flight when its load ends: its TTFT slack is
 *   the SLO less the time from its arrival to its load's end and its
 *   compute left.
 * A request still to load whose slack is already negative is lost
 * whatever q does; a decoder's is only believed (the delays are
 * estimates), and it holds q to no recompute until it ends. */
typedef struct corun {
    double w, ahead_s, slack_s;
} corun;

static double remaining_s(const agg *a, const areq *r)
{
    double t = r->done < r->hole_from ? recompute_span_s(a, r->done, r->hole_from) : 0;
    return t + recompute_span_s(a, r->done > r->hole_to ? r->done : r->hole_to, r->target);
}

static double slo_s(double own_ms, double cfg_ms) { return (own_ms > 0 ? own_ms : cfg_ms) / 1e3; }

/* r's slack (above), given the current decode step. */
static double slack_of(const agg *a, const areq *r, double step)
{
    if (r->tokens == 0) {
        int64_t ready = r->ready_at > a->eng->now ? r->ready_at : a->eng->now;
        return slo_s(r->r->slo_ttft_ms, a->cfg->slo_ttft_ms) - sim_ns_to_s(ready - r->r->arrival_ns) -
               remaining_s(a, r);
    }
    int32_t k = (r->r->output_len - 1) / 10 > 1 ? (r->r->output_len - 1) / 10 : 1;
    return k * (slo_s(r->r->slo_tbt_ms, a->cfg->slo_tbt_ms) - step) - r->stalled_s;
}

static corun corun_view(const agg *a, const areq *q)
{
    const ainst *in = &a->inst[q->inst];
    corun v = {in->nwait + in->nrun, 0, INFINITY};
    int decodes = 0;
    int64_t ctx = 0;
    for (int i = 0; i < in->nrun; i++) {
        const areq *r = in->run[i];
        if (r->tokens > 0) decodes++, ctx += r->r->input_len + r->tokens;
        else v.ahead_s += remaining_s(a, r);
    }
    double step = decodes ? sim_cost_decode_iter_s(&a->cost, decodes, ctx) : 0;
    for (int i = 0; i < in->nrun; i++) {
        double slack = slack_of(a, in->run[i], step);
        if (slack >= 0 || in->run[i]->tokens > 0) v.slack_s = fmin(v.slack_s, fmax(0, slack));
    }
    return v;
}

/* Each running request on q's instance is believed delayed by q's prefill
 * compute r_s (what it recomputes and the prompt past the run), as its
 * stalled_s (adaptive and balanced: corun_view). */
static void stall_decoders(const agg *a, const areq *q, double r_s)
{
    const ainst *in = &a->inst[q->inst];
    for (int i = 0; r_s > 0 && i < in->nrun; i++) in->run[i]->stalled_s += r_s;
}

/* How long a request waits for a load of load_s while its prefill computes
 * compute_s: the whole load, or with layer-wise pipelining
 * (cluster.layerwise) what the compute does not hide plus one layer's load. */
static double load_wait_s(const agg *a, double load_s, double compute_s)
{
    if (!a->cfg->layerwise) return load_s;
    return fmax(0, load_s - compute_s) + load_s / a->cfg->model.layers;
}

/* kvstore.load = "adaptive", the per-chunk rule (LMCache §7.7) with the
 * same account as "balanced" below: walking the run from its first chunk,
 * chunk k is recomputed while (1) its transfer takes no less than its
 * recompute charged once for q and once for each of the w co-running
 * requests it delays, (1 + w) · compute_k; (2) the recompute so far, k's
 * included, ends before the loads from k on would (the chunks after k
 * stream in meanwhile, so the first token waits for the longer side:
 * recomputing k shortens it while the GPU's side stays the shorter); and
 * (3) it stays within the running requests' slack. Compute grows with the
 * position, so the recomputed chunks lead the run. Rule (2) once asked the
 * recompute to hide under the loads after k alone, which no last chunk
 * can: every request loaded one chunk, however slow its link. */
static int32_t adaptive_split(const agg *a, const areq *q, const int *tier, int32_t first, int32_t end)
{
    corun v = corun_view(a, q);
    double L = 0, r_s = 0;
    for (int32_t i = first; i < end; i++) L += chunk_load_s(a, tier[i]);
    int32_t k = first;
    for (; k < end; k++) {
        double c = chunk_compute_s(a, k, q->cached), load = chunk_load_s(a, tier[k]);
        if (load < (1 + v.w) * c || r_s + c >= L || r_s + c > v.slack_s) break;
        r_s += c;
        L -= load;
    }
    return k;
}

/* kvstore.load = "balanced" (the idea of Cake, "Compute Or Load KV Cache?
 * Why Not Both?", 2024): the run of cached chunks [first, end) splits at k;
 * chunks [first, k) are recomputed on the GPU while [k, end) stream in over
 * the link, then the prompt past the run (tail) is computed. With L_k the
 * load of [k, end), R_k the recompute of [first, k) (chunk_compute_s) and
 * corun_view's w, GPU work ahead A and slack, the first token comes
 * after
 *   TTFT(k) = max(wait(L_k, R_k + tail), A + R_k) + tail
 * (wait: load_wait_s) and the recompute delays each of the w co-running
 * requests by R_k; k minimises TTFT(k) + w · R_k among the splits whose R_k
 * and the tail fit the slack, the first (most loaded) k on ties. The
 * truth's link has no queue (concurrent loads each get its bandwidth), so
 * neither has this estimate. */
static int32_t balanced_split(const agg *a, const areq *q, const int *tier, int32_t first, int32_t end)
{
    int C = a->cfg->lmc.chunk_tokens;
    corun v = corun_view(a, q);
    double L = 0, R = 0, best_j = INFINITY;
    double run_end = (double)end * C < q->target - 1 ? (double)end * C : q->target - 1;
    double tail = recompute_span_s(a, run_end, q->target);
    for (int32_t i = first; i < end; i++) L += chunk_load_s(a, tier[i]);
    int32_t best = first;
    for (int32_t k = first; k == first || R + tail <= v.slack_s; k++) {
        double j = fmax(load_wait_s(a, L, R + tail), v.ahead_s + R) + tail + v.w * R;
        if (j < best_j) best_j = j, best = k;
        if (k == end) break;
        L -= chunk_load_s(a, tier[k]);
        R += chunk_compute_s(a, k, q->cached);
    }
    return best;
}

/* The chunks to load, [*from, end): the run of chunks from `first` that
 * some tier holds ends at `end`; "adaptive" and "balanced" recompute a
 * leading part of it (adaptive_split, balanced_split). Counts, refreshes
 * and times the loaded ones. */
static int32_t pick_chunks(agg *a, const areq *q, const uint64_t *keys, int32_t first, int32_t n, int32_t *from,
                           double *load, double *saved, double *remote)
{
    lmc *l = a->lmc;
    int tier[n > 0 ? n : 1];
    int32_t end = first, k = first;
    while (end < n && (tier[end] = find(a, q->inst, keys[end])) >= 0) end++;
    if (l->cfg->load == SIM_LOAD_ADAPTIVE) k = adaptive_split(a, q, tier, first, end);
    if (l->cfg->load == SIM_LOAD_BALANCED) k = balanced_split(a, q, tier, first, end);
    l->recomputed += k - first;
    for (int32_t i = k; i < end; i++) {
        *load += chunk_load_s(a, tier[i]);
        *saved += chunk_compute_s(a, i, q->cached);
        l->hits[tier[i]]++;
        l->bytes[tier[i]] += l->chunk_bytes;
        *remote += tier[i] == T_REMOTE;
        kv_cache_access(tier_of(a, q->inst, tier[i]), keys[i], q->r->cache);
    }
    *from = k;
    return end;
}

/* Compute time of prompt tokens [lo, hi) (likewise). */
static double span_s(const agg *a, double lo, double hi)
{
    if (a->cost.profiled || a->cost.measured) return sim_cost_prefill_pass_s(&a->cost, hi - lo, lo);
    return sim_cost_prefill_flops(&a->cost, lo, hi - lo) / (a->cost.hw->flops * a->cost.mfu);
}

double lmc_load(agg *a, areq *q)
{
    lmc *l = a->lmc;
    if (!l || l->cfg->load == SIM_LOAD_NEVER) return 0;
    int C = l->cfg->chunk_tokens;
    int32_t n, from;
    const uint64_t *keys = request_chunks(l, q, &n);
    prefetch_settle(a, q, keys, n);
    double load = 0, saved = 0, remote = 0;
    int32_t end = pick_chunks(a, q, keys, q->cached / C, n, &from, &load, &saved, &remote);
    int32_t lo = from * C > q->cached ? from * C : q->cached, hi = end * C < q->target - 1 ? end * C : q->target - 1;
    if (l->cfg->load == SIM_LOAD_ADAPTIVE || l->cfg->load == SIM_LOAD_BALANCED)
        stall_decoders(a, q,
                       hi <= lo ? recompute_span_s(a, q->done, q->target)
                                : recompute_span_s(a, q->done, lo) + recompute_span_s(a, hi, q->target));
    if (hi <= lo) return 0;
    load += remote_queue_s(a, remote);
    q->hole_from = lo;
    q->hole_to = hi;
    a->tot.computed -= hi - lo;
    q->cached += hi - lo;
    l->loads++;
    l->load_s += load;
    l->saved_s += saved;
    if (!a->cfg->layerwise) return load;
    return load_wait_s(a, load, span_s(a, q->done, lo) + span_s(a, hi, q->target));
}

void lmc_store(agg *a, areq *q)
{
    lmc *l = a->lmc;
    if (!l) return;
    int32_t n;
    const uint64_t *keys = request_chunks(l, q, &n);
    for (int t = 0; t < T_N; t++) {
        kv_cache *c = tier_of(a, q->inst, t);
        for (int32_t i = 0; c && i < n; i++) kv_cache_access(c, keys[i], q->r->cache);
    }
}

void lmc_summarize(const agg *a, json_t *summary)
{
    const lmc *l = a->lmc;
    if (!l) return;
    const char *const *loads = sim_load_names;
    json_t *hits = json_object(), *bytes = json_object();
    for (int t = 0; t < T_N; t++) {
        json_object_set_new(hits, tier_names[t], json_integer(l->hits[t]));
        json_object_set_new(bytes, tier_names[t], json_real(l->bytes[t]));
    }
    json_object_set_new(summary, "lmcache",
                        json_pack("{s:i, s:s, s:s, s:b, s:o, s:o, s:I, s:I, s:f, s:f}", "chunk_tokens",
                                  l->cfg->chunk_tokens, "load", loads[l->cfg->load], "transfer",
                                  l->cfg->page_transfer ? "page" : "chunk", "prefetch", l->cfg->prefetch, "chunk_hits",
                                  hits, "bytes_loaded", bytes, "loads", (json_int_t)l->loads, "chunks_recomputed",
                                  (json_int_t)l->recomputed, "load_s", l->load_s, "recompute_saved_s", l->saved_s));
    if (!l->remote) return;
    json_object_set_new(json_object_get(summary, "lmcache"), "remote_queue_s", json_real(l->remote_wait_s));
    /* the link is a resource the instances share: its busy share beside
     * theirs, for the diagnosis to weigh (docs/lmcache.md) */
    double s = json_number_value(json_object_get(summary, "sim_seconds"));
    json_t *util = json_object_get(summary, "utilisation");
    if (util && s > 0) json_object_set_new(util, "remote_link", json_real(l->remote_busy_s / s));
}
