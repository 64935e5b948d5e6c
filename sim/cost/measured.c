/* sim/cost/measured.c — a forward pass as the sum of measured operations
 * (see sim/cost/measured.h for the decomposition and docs/measured.md for
 * each term's source). */
#include "sim/cost/measured.h"
#include "sim/cost/measured_int.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const sim_op_names[SIM_OP_N] = {
    "embed", "qkv_gemm",  "attn_context", "attn_generation", "o_gemm",        "mlp_gemm",
    "moe",   "allreduce", "elementwise",  "lm_head",         "logits_gather",
};

/* ---- the process's tables and pricings (loaded once, freed at exit) -------- */

typedef struct loaded_tables {
    char dir[PATH_MAX];
    double glitch_ratio;
    sim_optable *t;
    struct loaded_tables *next;
} loaded_tables;

static loaded_tables *all_tables;
static sim_measured *all_measured;
static json_t *fallbacks; /* why auto could not use tables, one string each */

static void free_all(void)
{
    while (all_measured) {
        sim_measured *m = all_measured;
        all_measured = m->next;
        free(m);
    }
    json_decref(fallbacks);
    fallbacks = NULL;
    while (all_tables) {
        loaded_tables *l = all_tables;
        all_tables = l->next;
        sim_optable_free(l->t);
        free(l);
    }
}

/* A tables folder as a preset writes it ("configs/optables/h100_sxm") is
 * relative to the project root: as given, else beside the config dir. */
static void tables_path(const char *name, char *buf, size_t n)
{
    snprintf(buf, n, "%s", name);
    if (name[0] == '/' || access(buf, R_OK) == 0) return;
    const char *dir = sim_config_dir(); /* .../configs */
    size_t len = strlen(dir);
    if (len >= 7 && !strcmp(dir + len - 7, "configs")) snprintf(buf, n, "%.*s%s", (int)(len - 7), dir, name);
}

sim_optable *sim_measured_tables_get(const char *name, double glitch_ratio, sim_err *err)
{
    char dir[PATH_MAX];
    tables_path(name, dir, sizeof dir);
    for (loaded_tables *l = all_tables; l; l = l->next)
        if (!strcmp(l->dir, dir) && l->glitch_ratio == glitch_ratio) return l->t;
    sim_optable *t;
    if (sim_optable_load(dir, glitch_ratio, &t, err)) return NULL;
    if (!all_tables && !all_measured) atexit(free_all);
    loaded_tables *l = calloc(1, sizeof *l);
    snprintf(l->dir, sizeof l->dir, "%s", dir);
    l->glitch_ratio = glitch_ratio;
    l->t = t, l->next = all_tables, all_tables = l;
    return t;
}

/* ---- another GPU's tables (hardware.optables_transfer) -------------------------- */

/* Tables measured on one GPU price another by keeping each operation's
 * measured fraction of its roofline (Williams, Waterman and Patterson,
 * "Roofline", CACM 2009): an operation that moves `bytes` and does
 * `flops` takes, at a GPU's roofline, a fixed latency and then the slower
 * of the two; its time on this hardware is the tables' time times the
 * ratio of that roofline time here to there. A memory-bound kernel thus
 * scales with HBM bandwidth, a compute-bound one with FLOP/s, and one
 * that turns compute-bound on a GPU of little compute (the H20) pays for
 * it. Each operation's bytes and FLOPs are per GPU; the fixed latency is
 * the tables' (gpu.mem_empirical_constant_latency) on both sides. How far
 * this is from a GPU's own tables, leave-one-out across the six that
 * have them: reports/roofline_check.py --transfer (docs/hardware.md §6). */
static double roof_s(const sim_gpu_roof *g, double lat, double bytes, double flops)
{
    return lat + fmax(bytes / g->mem_Bps, flops / g->flops);
}

static double xfer(const sim_measured *m, double bytes, double flops)
{
    if (!(m->key.to.mem_Bps > 0)) return 1;
    double lat = m->from.mem_lat_s;
    return roof_s(&m->key.to, lat, bytes, flops) / roof_s(&m->from, lat, bytes, flops);
}

/* A memory-bound op of the tables' analytic memory model, scaled. */
static double mem_s(const sim_measured *m, double bytes) { return sim_optable_mem_s(m->t, bytes) * xfer(m, bytes, 0); }

/* A collective that moves `wire` bytes over each GPU's link (a ring
 * all-reduce 2(g − 1)/g of its message, an all-gather (g − 1)/g of its
 * output) scales by the link's roofline (latency + wire / bandwidth) here
 * to there (`a`: the GPU whose rows priced it). Hardware without a link
 * figure keeps the tables' time. */
static double xfer_link(const sim_measured *m, const sim_gpu_roof *a, double wire)
{
    const sim_gpu_roof *b = &m->key.to;
    if (!(b->mem_Bps > 0) || !(b->link_Bps > 0) || !(a->link_Bps > 0)) return 1;
    return (b->link_lat_s + wire / b->link_Bps) / (a->link_lat_s + wire / a->link_Bps);
}

/* ---- one pass ----------------------------------------------------------------- */

/* A GEMM of tokens × n × k. One wider (n) or taller (m) than the tables
 * measure is priced as the sum of pieces they do measure: C = A·B splits
 * exactly into column blocks of B and row blocks of A, each its own GEMM
 * (docs/measured.md §2), at the cost of a launch each. */
static double gemm_of(sim_measured *m, const char *dtype, double tokens, double n, double k)
{
    if (tokens <= 0) return 0;
    double max_m, max_n;
    sim_optable_gemm_limits(m->t, dtype, &max_m, &max_n);
    if (max_n > 0 && n > max_n) {
        double pieces = ceil(n / max_n);
        return pieces * gemm_of(m, dtype, tokens, n / pieces, k);
    }
    if (max_m > 0 && tokens > max_m) {
        double pieces = ceil(tokens / max_m);
        return pieces * gemm_of(m, dtype, tokens / pieces, n, k);
    }
    double w = strcmp(dtype, "bfloat16") ? 1 : 2, a = m->act_bytes;
    return sim_optable_gemm_ms(m->t, dtype, tokens, n, k) * 1e-3 *
           xfer(m, tokens * (k + n) * a + n * k * w, 2 * tokens * n * k);
}

/* A GEMM of the model's weights (their dtype's rows). */
static double gemm_s(sim_measured *m, double tokens, double n, double k) { return gemm_of(m, m->wdtype, tokens, n, k); }

/* Whether vLLM sends an fp16 all-reduce of `bytes` on g Hopper GPUs to
 * NCCL. With its symmetric-memory all-reduce on (the default: the H100's
 * 0.14.0 rows run at its speed, docs/measured.md §1) vLLM cuts its custom
 * kernel to 512 KiB on 6 GPUs and 256 KiB on 8 (CUSTOM_ALL_REDUCE_MAX_SIZES
 * "9.0") and hands larger messages, up to 64 MiB, to symmetric memory,
 * which takes bf16 only (SymmMemCommunicator.should_use_symm_mem: "if
 * inp.dtype != self.dtype: return False"): an fp16 one falls through to
 * pynccl (vllm/distributed/device_communicators/cuda_communicator.py).
 * The tables' all-reduce rows were timed in bf16. */
bool sim_measured_fp16_nccl(const sim_measured *m, double *lo_bytes, double *hi_bytes)
{
    int g = m->key.tp;
    if (!m->key.model.fp16 || (g != 6 && g != 8)) return false;
    const char *dev = sim_optable_device(m->ar);
    if (!strstr(dev, "H100") && !strstr(dev, "H200")) return false;
    *lo_bytes = (g == 8 ? 256 : 512) * 1024.0, *hi_bytes = 64 * 1048576.0;
    return true;
}

static bool fp16_to_nccl(const sim_measured *m, double bytes)
{
    double lo, hi;
    return sim_measured_fp16_nccl(m, &lo, &hi) && bytes >= lo && bytes <= hi;
}

static double allreduce_s(sim_measured *m, double tokens, double count)
{
    if (m->key.tp < 2 || tokens <= 0) return 0;
    bool graph = tokens <= m->key.graph_max;
    double elements = tokens * m->key.model.hidden, bytes = elements * m->act_bytes;
    int g = m->key.tp;
    double ms = fp16_to_nccl(m, bytes) ? sim_optable_nccl_ms(m->ar, "all_reduce", g, elements)
                                       : sim_optable_allreduce_ms(m->ar, g, graph, elements);
    return count * ms * 1e-3 * xfer_link(m, &m->ar_from, 2.0 * (g - 1) / g * bytes);
}

/* The fused MoE's roofline per GPU: the experts the tokens touch (of
 * this GPU's 1/ep) read once, 3 · d · i_shard weights each, and the
 * tokens' k copies through them at 6 · d · i_shard FLOPs a copy. */
static double moe_xfer(const sim_measured *m, double tokens, double i_shard, int ep)
{
    const sim_model *md = &m->key.model;
    double w = md->dtype_bytes, d = md->hidden, k = md->experts_per_token;
    double bytes =
        sim_model_experts_touched(md, tokens) / ep * 3 * d * i_shard * w + tokens * (k + 1) * d * m->act_bytes;
    return xfer(m, bytes, 6 * tokens * k / ep * d * i_shard);
}

/* The MLP of one layer: dense, or routed (router GEMM + fused MoE) with its
 * shared experts as a dense MLP of shared · i_e. */
static void mlp_s(sim_measured *m, double tokens, bool routed, double *dense_s, double *moe_s)
{
    const sim_model *md = &m->key.model;
    int tp = m->key.tp;
    if (!routed) {
        *dense_s += gemm_s(m, tokens, 2.0 * md->intermediate / tp, md->hidden) +
                    gemm_s(m, tokens, md->hidden, (double)md->intermediate / tp);
        return;
    }
    int ie = md->moe_intermediate > 0 ? md->moe_intermediate : md->intermediate;
    int moe_tp = m->key.ep ? 1 : tp, moe_ep = m->key.ep ? tp : 1;
    /* the router: its GEMM, then the top-k softmax over E fp32 logits (a
     * memory op: read them, write k ids and weights); the fused-MoE table
     * times fused_experts alone (AIConfigurator's collect_moe.py) */
    *moe_s += mem_s(m, tokens * (4.0 * md->experts + 8.0 * md->experts_per_token));
    *moe_s += gemm_of(m, m->plain_dtype, tokens, md->experts, md->hidden) +
              sim_optable_moe_ms(m->t, m->wdtype, md->hidden, ie, md->experts_per_token, md->experts, moe_tp, moe_ep,
                                 m->key.dist, tokens) *
                  1e-3 * moe_xfer(m, tokens, (double)ie / moe_tp, moe_ep);
    if (md->shared_experts > 0)
        *dense_s += gemm_s(m, tokens, 2.0 * md->shared_experts * ie / tp, md->hidden) +
                    gemm_s(m, tokens, md->hidden, (double)md->shared_experts * ie / tp);
}

/* Elementwise memory ops of one layer over `tokens` tokens, per GPU: two
 * fused residual-add RMSNorms (read x and the residual, write both), RoPE
 * on q and k (read and write), the KV-cache write (read k and v, write the
 * cache) and, in a dense layer, SiLU-and-mul (read 2·i/tp, write i/tp). */
static double elementwise_s(sim_measured *m, double tokens, bool routed)
{
    const sim_model *md = &m->key.model;
    double s = md->dtype_bytes, e = md->head_dim, tp = m->key.tp;
    double t = 2 * mem_s(m, 4 * tokens * md->hidden * s) + mem_s(m, 2 * tokens * (m->heads + m->kv_heads) * e * s) +
               mem_s(m, 2 * tokens * m->kv_heads * e * (s + md->kv_dtype_bytes));
    if (!routed) t += mem_s(m, 3 * tokens * md->intermediate / tp * s);
    return t;
}

/* An MLA layer's memory ops outside the tables, per GPU (vLLM's
 * DeepseekV2DecoderLayer and MultiHeadLatentAttentionWrapper): two fused
 * residual-add RMSNorms of bf16 activations, the SiLU-and-mul of the dense
 * MLP or of the shared experts; and, where the tables time the attention
 * backend alone, the q_a and kv_a RMSNorms and RoPE on the queries' and the
 * key's rope parts. The KV-cache write is in the backend's rows. */
static double mla_elementwise_s(sim_measured *m, double tokens, bool routed)
{
    const sim_model *md = &m->key.model;
    double s = m->act_bytes, tp = m->key.tp;
    double inter = routed ? (double)md->shared_experts * md->moe_intermediate : md->intermediate;
    double t = 2 * mem_s(m, 4 * tokens * md->hidden * s) + mem_s(m, 3 * tokens * inter / tp * s);
    if (m->mla == MLA_BACKEND)
        t += mem_s(m, 2 * tokens * md->q_lora_rank * s) + mem_s(m, 2 * tokens * md->kv_lora_rank * s) +
             mem_s(m, 2 * tokens * (m->heads + 1.0) * md->qk_rope_head_dim * s);
    return t;
}

/* MLA's projections of one layer over `tokens` tokens, from the GEMM
 * tables: the fused down-projection of the hidden state to the query
 * latent, the KV latent and the rope key (replicated on every GPU), the
 * query's up-projection to this GPU's heads (from the hidden state when
 * there is no query latent), and the output projection. */
static void mla_proj_s(sim_measured *m, double tokens, double *qkv, double *o)
{
    const sim_model *md = &m->key.model;
    double d = md->hidden, rope = md->qk_rope_head_dim, ql = md->q_lora_rank;
    *qkv = gemm_s(m, tokens, ql + md->kv_lora_rank + rope, d) +
           gemm_s(m, tokens, m->heads * (md->head_dim + rope), ql > 0 ? ql : d);
    *o = gemm_s(m, tokens, d, (double)m->heads * md->head_dim);
}

/* The attention projections of one layer: QKV and O GEMMs; MLA's from the
 * backend's tables (mla_proj_s; kv_b's up-projection is in the backend's
 * rows); none from the module's tables (they are in its rows). */
static void attn_proj_s(sim_measured *m, double tokens, double *qkv, double *o)
{
    const sim_model *md = &m->key.model;
    double q = (double)m->heads * md->head_dim, kv = (double)m->kv_heads * md->head_dim;
    *qkv = *o = 0;
    if (m->mla == MLA_NONE) *qkv = gemm_s(m, tokens, q + 2 * kv, md->hidden), *o = gemm_s(m, tokens, md->hidden, q);
    else if (m->mla == MLA_BACKEND) mla_proj_s(m, tokens, qkv, o);
}

static double layer_elementwise_s(sim_measured *m, double tokens, bool routed)
{
    return m->mla ? mla_elementwise_s(m, tokens, routed) : elementwise_s(m, tokens, routed);
}

/* Everything of a pass over `tokens` tokens but attention and the LM head. */
static void linear_parts(sim_measured *m, double tokens, double *op)
{
    const sim_model *md = &m->key.model;
    double d = md->hidden, qkv, o;
    int moe_layers = sim_model_moe_layers(md), dense_layers = md->layers - moe_layers;
    memset(op, 0, SIM_OP_N * sizeof *op);
    op[SIM_OP_EMBED] = mem_s(m, 2 * tokens * d * m->act_bytes) + allreduce_s(m, tokens, 1);
    attn_proj_s(m, tokens, &qkv, &o);
    op[SIM_OP_QKV] = md->layers * qkv;
    op[SIM_OP_O] = md->layers * o;
    op[SIM_OP_ALLREDUCE] = md->layers * allreduce_s(m, tokens, 2);
    double dense = 0, moe = 0;
    if (dense_layers > 0) {
        mlp_s(m, tokens, false, &dense, &moe);
        op[SIM_OP_MLP] += dense_layers * dense;
        op[SIM_OP_ELEMENTWISE] += dense_layers * layer_elementwise_s(m, tokens, false);
    }
    if (moe_layers > 0) {
        dense = 0, moe = 0;
        mlp_s(m, tokens, true, &dense, &moe);
        op[SIM_OP_MLP] += moe_layers * dense;
        op[SIM_OP_MOE] += moe_layers * moe;
        op[SIM_OP_ELEMENTWISE] += moe_layers * layer_elementwise_s(m, tokens, true);
    }
}

/* The cache slot of a count: a whole number in [0, n); −1 otherwise. A
 * cast, not lround: this runs on every pass. */
static long cache_slot(double x, long n) { return x >= 0 && x < (double)n && x == (double)(long)x ? (long)x : -1; }

/* A cache slot's state: empty, filled by a lookup that noted what it
 * priced, or filled while quiet (sim_measured_quiet), which a lookup that
 * is not quiet fills again, so that its shapes outside the tables are
 * noted: a probe (the conductor's estimator, the short-step check) once
 * kept a later replay or `kvsim cost` of the same count from saying so. */
enum { FILLED = 1, FILLED_QUIET = 2 };

static bool slot_ok(const sim_measured *m, unsigned char state) { return state == FILLED || (state && m->quiet); }

static const double *linear_cached(sim_measured *m, double tokens, double *scratch)
{
    long i = cache_slot(tokens, LIN_CACHE);
    if (i < 0) {
        linear_parts(m, tokens, scratch);
        return scratch;
    }
    if (!slot_ok(m, m->lin_set[i]))
        linear_parts(m, tokens, m->lin[i]), m->lin_set[i] = m->quiet ? FILLED_QUIET : FILLED;
    return m->lin[i];
}

/* Under TP each GPU holds the logits of V/tp of the vocabulary; vLLM V1
 * gathers them to every GPU, as each runs the sampler
 * (LogitsProcessor._gather_logits: an all-gather where the platform's
 * use_all_gather() holds, as it does under V1; vllm-project/vllm PR 9856),
 * outside the CUDA graph, by NCCL into a (tp, seqs, V/tp) buffer that
 * GroupCoordinator.all_gather then copies into (seqs, V): the collective
 * of seqs · V bf16 elements from the NCCL table, and that copy's read and
 * write as a memory op. */
static double logits_gather_s(sim_measured *m, double seqs)
{
    int g = m->key.tp;
    double elements = seqs * m->key.model.vocab, bytes = 2 * elements;
    if (g < 2 || seqs <= 0) return 0;
    double ms = sim_optable_nccl_ms(m->t, "all_gather", g, elements);
    return (ms > 0 ? ms * 1e-3 * xfer_link(m, &m->from, (g - 1.0) / g * bytes) : 0) + mem_s(m, 2 * bytes);
}

/* The LM head of `seqs` sampling sequences (head[0]) and, under TP, the
 * gather of their logits (head[1]), cached by seqs. */
static const double *lm_head_s(sim_measured *m, double seqs, double *scratch)
{
    const sim_model *md = &m->key.model;
    long i = cache_slot(seqs, HEAD_CACHE);
    bool cache = i >= 0;
    if (cache && slot_ok(m, m->head_set[i])) return m->head[i];
    if (cache) m->head_set[i] = m->quiet ? FILLED_QUIET : FILLED;
    double *t = cache ? m->head[i] : scratch;
    t[0] = seqs > 0 ? mem_s(m, 3 * seqs * md->hidden * m->act_bytes) +
                          gemm_of(m, m->plain_dtype, seqs, (double)md->vocab / m->key.tp, md->hidden)
                    : 0;
    t[1] = logits_gather_s(m, seqs);
    return t;
}

/* One layer's attention roofline per GPU (FlashAttention's work: Dao et
 * al. 2022, §3): a prompt of x tokens, causal, does 2 · h · e · x² FLOPs
 * (QKᵀ and PV over half the square) and moves q, k, v and the output
 * once; a decode step over x tokens of context reads their K and V and
 * does 4 · h · e · x. Under MLA, e is the latent (kv_lora_rank) plus the
 * rope part, the cache one latent a token. */
static double attn_xfer(const sim_measured *m, bool context, double batch, double x)
{
    if (!(m->key.to.mem_Bps > 0)) return 1; /* the tables' own GPU: no work per lookup */
    const sim_model *md = &m->key.model;
    double h = m->heads, s = m->act_bytes, kv = md->kv_dtype_bytes;
    double e = m->mla ? md->kv_lora_rank + md->qk_rope_head_dim : md->head_dim;
    double hk = m->mla ? 0.5 : m->kv_heads; /* MLA: K and V are one latent */
    if (context) return xfer(m, batch * x * e * (2 * h * s + 2 * hk * kv), 2 * batch * h * e * x * x);
    return xfer(m, batch * (x * 2 * hk * e * kv + 2 * h * e * s), 4 * batch * h * e * x);
}

/* One layer's attention lookup, context (prefill, x = isl) or generation
 * (decode, x = context length): MLA's tables where the model has MLA. */
static double attn_ms(sim_measured *m, bool context, double batch, double x)
{
    if (m->mla) {
        sim_mla_query q = m->mla_q;
        q.context = context;
        return sim_optable_mla_ms(m->t, &q, batch, x) * attn_xfer(m, context, batch, x);
    }
    int f = m->fold[context], w = m->widen[context];
    int hd = m->key.model.head_dim * w, h = m->heads / f, hk = m->kv_heads / f;
    double b = batch * f / w;
    return (context ? sim_optable_ctx_attn_ms(m->t, m->kvdtype, h, hk, hd, b, x)
                    : sim_optable_gen_attn_ms(m->t, m->kvdtype, h, hk, hd, b, x)) *
           attn_xfer(m, context, batch, x);
}

static double ctx_ms(sim_measured *m, double batch, double isl) { return attn_ms(m, true, batch, isl); }
static double gen_ms(sim_measured *m, double batch, double ctx);

/* Context attention of `chunks` chunks of n new tokens after p cached
 * (docs/measured.md §2): the tables measure a prompt from nothing, T(b, s);
 * a chunk after p costs the difference of the whole prompt and its prefix,
 * T(b, n + p) − T(b, p) (the work of causal attention over n + p tokens
 * less that over p: the n·p cross terms and the chunk's own n²/2), never
 * less than the chunk alone, T(b, n), nor than decode attention over the
 * n + p tokens, G(b, n + p): the chunk reads the whole prefix's KV, as a
 * decode step at that context does (without it a token after 16,383
 * cached cost 0.36 ms of attention where a decode step there costs 1.2). */
static double ctx_attn_s(sim_measured *m, double chunks, double n, double p)
{
    const sim_model *md = &m->key.model;
    if (chunks <= 0 || n <= 0) return 0;
    double alone = ctx_ms(m, chunks, n);
    if (p >= 1) {
        double whole = ctx_ms(m, chunks, n + p), prefix = ctx_ms(m, chunks, p), read = gen_ms(m, chunks, n + p);
        if (whole - prefix > alone) alone = whole - prefix;
        if (read > alone) alone = read;
    }
    return md->layers * alone * 1e-3;
}

static double gen_ms(sim_measured *m, double batch, double ctx) { return attn_ms(m, false, batch, ctx); }

static double gen_attn_s(sim_measured *m, double seqs, double ctx)
{
    const sim_model *md = &m->key.model;
    if (seqs <= 0) return 0;
    return md->layers * 1e-3 * gen_ms(m, seqs, ctx < 1 ? 1 : ctx);
}

/* A pass that prefills and decodes runs each MLA projection once over all
 * its tokens (vLLM's MultiHeadLatentAttentionWrapper projects the whole
 * batch; the attention backend then splits its prefill and decode tokens:
 * vllm/model_executor/layers/mla.py, vllm/v1/attention/backends/mla/
 * common.py), where the module rows, each measured alone, hold one launch
 * each: the decodes' projections leave their module and the prefill's
 * grow to the pass's tokens, from the GEMM tables (docs/measured-mla.md). */
static void module_one_launch(sim_measured *m, const sim_pass_shape *p, double *op)
{
    double all_qkv, all_o, pre_qkv, pre_o, dec_qkv, dec_o, layers = m->key.model.layers;
    mla_proj_s(m, p->decodes + p->chunk_tokens, &all_qkv, &all_o);
    mla_proj_s(m, p->chunk_tokens, &pre_qkv, &pre_o);
    mla_proj_s(m, p->decodes, &dec_qkv, &dec_o);
    op[SIM_OP_ATTN_CTX] += layers * (all_qkv + all_o - pre_qkv - pre_o);
    op[SIM_OP_ATTN_GEN] = fmax(0, op[SIM_OP_ATTN_GEN] - layers * (dec_qkv + dec_o));
}

void sim_measured_pass(sim_measured *m, const sim_pass_shape *p, sim_op_times *out)
{
    m->used = true;
    double tokens = p->decodes + p->chunk_tokens, scratch[SIM_OP_N];
    const double *lin = linear_cached(m, tokens, scratch);
    memcpy(out->s, lin, sizeof out->s);
    double n = p->chunks > 0 ? p->chunk_tokens / p->chunks : 0;
    out->s[SIM_OP_ATTN_CTX] = ctx_attn_s(m, p->chunks, n, p->chunk_cached);
    out->s[SIM_OP_ATTN_GEN] = gen_attn_s(m, p->decodes, p->decode_ctx + 1);
    double hs[2];
    const double *head = lm_head_s(m, p->decodes + p->chunks, hs);
    out->s[SIM_OP_LM_HEAD] = head[0], out->s[SIM_OP_LOGITS_GATHER] = head[1];
    if (m->mla == MLA_MODULE && p->chunks > 0 && p->decodes > 0) module_one_launch(m, p, out->s);
    out->total_s = 0;
    for (int i = 0; i < SIM_OP_N; i++) out->total_s += out->s[i];
}

double sim_measured_pass_s(sim_measured *m, const sim_pass_shape *p)
{
    sim_op_times t;
    sim_measured_pass(m, p, &t);
    return t.total_s;
}

/* How Triton specializes the kernel's two token-count arguments for a pass
 * of t tokens: num_valid_tokens = k·t and EM = k·t + E·(BLOCK_SIZE_M − 1),
 * the length moe_align_block_size pads the sorted ids to
 * (vllm/model_executor/layers/fused_moe/moe_align_block_size.py), each
 * divisible by 16 or not. Every BLOCK_SIZE_M the configs use is a multiple
 * of 16, so EM ≡ k·t − E (mod 16) whatever the config: class 0 when k·t is
 * divisible by 16, 1 when EM is instead, 2 when neither. Mixtral (top-2 of
 * 8) has all three (t ≡ 0, ≡ 4, otherwise mod 8); a top-8 router over a
 * multiple of 16 experts (Qwen3-30B-A3B, DeepSeek-V3) has two, as both
 * arguments divide by 16 together (t even) or not at all. */
static int moe_alignment(const sim_model *md, long t)
{
    long kt = (long)md->experts_per_token * t;
    return kt % 16 == 0 ? 0 : ((kt - md->experts) % 16 + 16) % 16 == 0 ? 1 : 2;
}

uint64_t sim_measured_moe_variant(const sim_measured *m, double tokens)
{
    if (sim_model_moe_layers(&m->key.model) == 0 || tokens < 1) return 0;
    return (uint64_t)1 << (moe_cfgmap_config(&m->moe_cfg, tokens) * 3 + moe_alignment(&m->key.model, lround(tokens)));
}

uint64_t sim_measured_moe_warm(const sim_measured *m, int graph_max, int budget)
{
    uint64_t seen = sim_measured_moe_variant(m, budget);
    for (int s = 1; s <= graph_max; s = s < 4 ? 2 * s : s < 8 ? 8 : s + 8) seen |= sim_measured_moe_variant(m, s);
    return seen;
}

const sim_optable *sim_measured_tables(const sim_measured *m) { return m->t; }

int sim_measured_load_all(sim_measured *m, sim_err *err)
{
    return sim_optable_need(m->t, SIM_OPT_MOE | SIM_OPT_MLA, err);
}

void sim_measured_fallback(const char *why)
{
    size_t i;
    const json_t *v;
    json_array_foreach(fallbacks, i, v) if (!strcmp(json_string_value(v), why)) return;
    if (!fallbacks) {
        if (!all_tables && !all_measured) atexit(free_all);
        fallbacks = json_array();
    }
    json_array_append_new(fallbacks, json_string(why));
}

/* The widening's error where the tables measure both head_dims, by kind
 * (generation, context): `python3 reports/attention_fold_check.py
 * --head-dim`, quoted in docs/measured.md §2 under a check. */
static const char *const widen_error[2] = {"14% under to 27% over", "44% under to 12% over"};

/* What a folded or widened lookup (attn_fold) priced attention as. */
static void fold_text(const sim_measured *m, int c, char *text, size_t size)
{
    int f = m->fold[c], w = m->widen[c], e = m->key.model.head_dim;
    const char *kind = c ? "context" : "generation", *sys = sim_optable_system(m->t);
    int n = snprintf(text, size, "%s attention of %d heads, %d KV heads of %d on %s: the tables hold no such shape; ",
                     kind, m->heads, m->kv_heads, e, sys);
    char times[40] = "the same batch";
    if (f != w) snprintf(times, sizeof times, "%g times the batch", (double)f / w);
    if (w == 1)
        snprintf(text + n, size - (size_t)n,
                 "priced as %d times the batch of their %d heads, %d KV heads (the same work; docs/measured.md §2)", f,
                 m->heads / f, m->kv_heads / f);
    else
        snprintf(text + n, size - (size_t)n,
                 "priced as their %d heads, %d KV heads of %d at %s (the same query work and KV bytes "
                 "at %d times the head_dim; where the tables measure both, b200_sxm's head_dim 128 priced so from "
                 "its 256 is %s, 5th to 95th percentile; docs/measured.md §2)",
                 m->heads / f, m->kv_heads / f, w * e, times, w, widen_error[c]);
}

/* A pricing that looked attention up folded or widened (attn_fold) says
 * so, once per shape, when it priced a pass since the notes were last
 * reset. */
static void fold_notes(json_t *a)
{
    for (const sim_measured *m = all_measured; m; m = m->next) {
        if (!m->used || m->mla) continue;
        for (int c = 0; c < 2; c++) {
            if (m->fold[c] <= 1 && m->widen[c] <= 1) continue;
            char text[512];
            fold_text(m, c, text, sizeof text);
            json_t *n = json_pack("{s:s, s:s}", "name", "not_measured", "text", text);
            size_t i;
            const json_t *v;
            bool seen = false;
            json_array_foreach(a, i, v) seen |= json_equal(v, n);
            if (seen) json_decref(n);
            else json_array_append_new(a, n);
        }
    }
}

json_t *sim_measured_caveats(void)
{
    json_t *a = json_array();
    fold_notes(a);
    size_t i;
    const json_t *v;
    json_array_foreach(fallbacks, i, v)
        json_array_append_new(a, json_pack("{s:s, s:s}", "name", "not_measured", "text", json_string_value(v)));
    for (loaded_tables *l = all_tables; l; l = l->next) {
        int n;
        const char *const *notes = sim_optable_notes(l->t, &n);
        for (int k = 0; k < n; k++)
            json_array_append_new(a, json_pack("{s:s, s:s}", "name",
                                               sim_optable_note_is_glitch(l->t, k) ? "measured_glitch" : "not_measured",
                                               "text", notes[k]));
    }
    return a;
}

/* The per-count caches go too: a cached price skips the lookups that
 * note a shape outside the tables, so a later replay of the same system
 * in this process (a second experiment of kvsim validate) lost its
 * not_measured caveats. Refilled on use, with the same doubles. */
void sim_measured_reset_notes(void)
{
    for (sim_measured *m = all_measured; m; m = m->next) {
        m->used = false;
        memset(m->lin_set, 0, sizeof m->lin_set);
        memset(m->head_set, 0, sizeof m->head_set);
    }
    if (fallbacks) json_array_clear(fallbacks);
    for (loaded_tables *l = all_tables; l; l = l->next) sim_optable_clear_notes(l->t);
}

const char *const *sim_measured_notes(const sim_measured *m, int *n) { return sim_optable_notes(m->t, n); }

/* ---- set-up -------------------------------------------------------------------- */

/* Whether the tables hold attention of h heads, hk KV heads of hd: a first
 * lookup (one sequence) tells. */
static bool attn_held(sim_measured *m, bool context, int h, int hk, int hd)
{
    double t = context ? sim_optable_ctx_attn_ms(m->t, m->kvdtype, h, hk, hd, 1, 16)
                       : sim_optable_gen_attn_ms(m->t, m->kvdtype, h, hk, hd, 1, 1);
    return t >= 0;
}

/* Attention of a head shape the tables lack, as the same work in one they
 * hold: FlashAttention runs every (sequence, KV head) of a batch as its own
 * blocks of one grid (Dao, "FlashAttention-2", 2023, §3.2), so h heads and
 * h_kv KV heads over b sequences are the work of h/f and h_kv/f heads over
 * f·b sequences. The smallest f > 1 dividing both whose shape the tables
 * hold; 1 when they hold the model's own, 0 when none. Checked where both
 * shapes are measured: reports/attention_fold_check.py (docs/measured.md §2).
 *
 * A head_dim e the tables lack (Llama-3.2-1B's 64; they hold 128, and 256
 * on b200_sxm) is looked up at w·e, w = 2 then 4, over b·f/w sequences:
 * the same query work (sequences × heads × head_dim) and the same KV bytes
 * (sequences × KV heads × head_dim), preferring an f ≥ w, which keeps the
 * batch whole. *widen is w (1 at the model's own head_dim). Checked on
 * b200_sxm's two head_dims by reports/attention_fold_check.py --head-dim. */
static int attn_fold(sim_measured *m, bool context, int *widen)
{
    int hd = m->key.model.head_dim;
    for (int w = 1; w <= 4; w *= 2) {
        int first = 0;
        for (int f = 1; f <= m->kv_heads; f++) {
            if (m->heads % f || m->kv_heads % f || !attn_held(m, context, m->heads / f, m->kv_heads / f, w * hd))
                continue;
            if (f >= w) return *widen = w, f;
            if (!first) first = f;
        }
        if (first) return *widen = w, first;
    }
    return 0;
}

/* The tables must hold every shape family the model needs at this TP: a
 * first lookup of each (one token) tells. */
static int check_shapes(sim_measured *m, const sim_hw *hw, sim_err *err)
{
    const sim_model *md = &m->key.model;
    const char *sys = sim_optable_system(m->t);
    /* a GEMM every such model runs: MLA's down-projection, else a d x d one */
    double n = md->kv_lora_rank > 0 ? md->q_lora_rank + md->kv_lora_rank + md->qk_rope_head_dim : md->hidden;
    if (sim_optable_gemm_ms(m->t, m->wdtype, 1, n, md->hidden) < 0)
        return sim_errf(err, "hardware '%s': the measured tables (%s) have no %s GEMMs: use cost.compute=engine",
                        hw->name, sys, m->wdtype);
    m->fold[0] = m->fold[1] = m->widen[0] = m->widen[1] = 1;
    if (!m->mla &&
        (!(m->fold[0] = attn_fold(m, false, &m->widen[0])) || !(m->fold[1] = attn_fold(m, true, &m->widen[1]))))
        return sim_errf(err,
                        "hardware '%s': the measured tables (%s) have no attention of %d heads, %d KV heads of %d "
                        "(model '%s' on %d GPU%s, KV %s): use cost.compute=engine",
                        hw->name, sys, m->heads, m->kv_heads, md->head_dim, md->name, m->key.tp,
                        m->key.tp == 1 ? "" : "s", m->kvdtype);
    if (m->key.tp > 1 && sim_optable_allreduce_ms(m->ar, m->key.tp, true, md->hidden) < 0)
        return sim_errf(err,
                        "hardware '%s': the measured tables (%s) have no all-reduce on %d GPUs: use "
                        "cost.compute=engine",
                        hw->name, sim_optable_system(m->ar), m->key.tp);
    return 0;
}

/* vLLM's fused-MoE configs for this model on the tables' GPU: E and N as
 * one GPU holds them (all experts of a TP shard, or E / tp whole experts
 * under expert parallelism). The bundled file is relative to the project
 * root, as a tables folder is. */
static int moe_configs(sim_measured *m, sim_err *err)
{
    const sim_model *md = &m->key.model;
    int ie = md->moe_intermediate > 0 ? md->moe_intermediate : md->intermediate;
    int e = m->key.ep ? md->experts / m->key.tp : md->experts, n = m->key.ep ? ie : ie / m->key.tp;
    char path[PATH_MAX];
    tables_path("configs/vllm/fused_moe_configs.json", path, sizeof path);
    return moe_cfgmap_find(path, sim_optable_device(m->t), e, n, md->fp8_block || md->dtype_bytes == 1, &m->moe_cfg,
                           err);
}

static int check_moe(sim_measured *m, const sim_hw *hw, sim_err *err)
{
    const sim_model *md = &m->key.model;
    if (sim_model_moe_layers(md) == 0) return 0;
    if (moe_configs(m, err)) return -1;
    int ie = md->moe_intermediate > 0 ? md->moe_intermediate : md->intermediate;
    int moe_tp = m->key.ep ? 1 : m->key.tp, moe_ep = m->key.ep ? m->key.tp : 1;
    if (sim_optable_moe_ms(m->t, m->wdtype, md->hidden, ie, md->experts_per_token, md->experts, moe_tp, moe_ep,
                           m->key.dist, 1) < 0)
        return sim_errf(err,
                        "hardware '%s': the measured tables (%s) have no fused MoE of hidden %d, intermediate %d, "
                        "top-%d of %d experts, TP %d, EP %d, %s routing (model '%s'): use cost.compute=engine",
                        hw->name, sim_optable_system(m->t), md->hidden, ie, md->experts_per_token, md->experts, moe_tp,
                        moe_ep, m->key.dist, md->name);
    return 0;
}

/* Both MLA phases exist in this kind of table for the model's shape. */
static bool mla_found(sim_measured *m)
{
    sim_mla_query q = m->mla_q;
    q.context = true;
    bool ctx = sim_optable_mla_ms(m->t, &q, 1, 16) >= 0;
    q.context = false;
    return ctx && sim_optable_mla_ms(m->t, &q, 1, 16) >= 0;
}

/* Multi-head latent attention (docs/measured-mla.md): the whole module's
 * tables where the system has them for the model's GEMM quantization, else
 * the attention backend's. Both were measured on DeepSeek-V3's latent
 * sizes (KV latent 512, rope key 64, heads of 128; the module also on its
 * hidden size 7168 and query latent 1536: AIConfigurator's
 * collector/vllm/collect_mla.py and collect_mla_module.py), so another
 * shape has none. */
static int mla_setup(sim_measured *m, const sim_hw *hw, sim_err *err)
{
    const sim_model *md = &m->key.model;
    bool dims = md->kv_lora_rank == 512 && md->qk_rope_head_dim == 64 && md->head_dim == 128;
    bool module_dims = dims && md->hidden == 7168 && md->q_lora_rank == 1536;
    const char *gemm = md->fp8_block ? "fp8_block" : md->dtype_bytes == 2 ? "bfloat16" : "fp8";
    m->mla_q =
        (sim_mla_query){.module = true, .kv_dtype = m->kvdtype, .gemm = gemm, .heads = m->heads, .tp = m->key.tp};
    m->mla = MLA_MODULE;
    if (module_dims && mla_found(m)) return 0;
    m->mla_q.module = false, m->mla = MLA_BACKEND;
    if (dims && mla_found(m)) return 0;
    return sim_errf(err,
                    "hardware '%s': the measured tables (%s) have no MLA of %d heads per GPU at TP %d with a %s KV "
                    "cache for model '%s' (they measure DeepSeek-V3's latent: kv_lora_rank 512, qk_rope_head_dim "
                    "64, head_dim 128; docs/measured-mla.md): use cost.compute=engine",
                    hw->name, sim_optable_system(m->t), m->heads, m->key.tp, m->kvdtype, md->name);
}

int sim_measured_fill(sim_measured *m, const sim_hw *hw, sim_err *err)
{
    const sim_model *md = &m->key.model;
    if (hw->pp > 1)
        return sim_errf(err, "the measured mode prices one node's tensor parallelism, not pipeline stages "
                             "(cluster.gpus_per_instance spans nodes): use cost.compute=engine");
    m->wdtype = md->fp8_block ? "fp8_block" : md->dtype_bytes == 1 ? "fp8" : "bfloat16";
    /* a block-quantized checkpoint keeps its router and LM head unquantized
     * and its activations bf16 (vLLM's Fp8Config quantizes the linear
     * layers it is given: AIConfigurator prices both GEMMs in bf16) */
    m->plain_dtype = md->fp8_block ? "bfloat16" : m->wdtype;
    m->act_bytes = md->fp8_block ? 2 : md->dtype_bytes;
    m->kvdtype = md->kv_dtype_bytes == 1 ? "fp8" : "bfloat16";
    m->heads = md->heads / m->key.tp;
    m->kv_heads = md->kv_heads / m->key.tp > 0 ? md->kv_heads / m->key.tp : 1;
    memset(m->lin_set, 0, sizeof m->lin_set);
    memset(m->head_set, 0, sizeof m->head_set);
    unsigned families = (md->kv_lora_rank > 0 ? SIM_OPT_MLA : 0) | (sim_model_moe_layers(md) > 0 ? SIM_OPT_MOE : 0);
    if (sim_optable_need(m->t, families, err)) return -1;
    sim_measured_quiet(m, true);
    int rc =
        (md->kv_lora_rank > 0 && mla_setup(m, hw, err)) || check_shapes(m, hw, err) || check_moe(m, hw, err) ? -1 : 0;
    sim_measured_quiet(m, false);
    return rc;
}

void sim_measured_quiet(sim_measured *m, bool quiet)
{
    m->quiet = quiet;
    sim_optable_quiet(m->t, quiet);
    sim_optable_quiet(m->ar, quiet);
}

void sim_measured_key_of(const sim_config *cfg, const sim_hw *hw, measured_key *key)
{
    memset(key, 0, sizeof *key);
    tables_path(hw->optables, key->tables, sizeof key->tables);
    if (hw->allreduce_optables[0]) tables_path(hw->allreduce_optables, key->ar_tables, sizeof key->ar_tables);
    key->model = cfg->model;
    key->tp = hw->tp > 0 ? hw->tp : hw->gpus;
    key->graph_max = cfg->cuda_graph_max_tokens;
    key->ep = cfg->expert_parallel && key->tp > 1;
    snprintf(key->dist, sizeof key->dist, "%s", cfg->moe_distribution);
    key->glitch_ratio = cfg->glitch_ratio;
    if (hw->optables_transfer) sim_measured_roof_of(hw, key->tp, &key->to);
}

/* This hardware's roofline per GPU, as a transfer scales to it. */
void sim_measured_roof_of(const sim_hw *hw, int tp, sim_gpu_roof *out)
{
    *out = (sim_gpu_roof){hw->hbm_Bps / tp, hw->flops / tp, 0, hw->link_peak_Bps, hw->allreduce_latency_s};
}

sim_measured *sim_measured_get(const sim_config *cfg, const sim_hw *hw, sim_err *err)
{
    if (!hw->optables[0]) {
        sim_errf(err,
                 "hardware '%s' names no measured tables (hardware.optables): use cost.compute=engine, or a "
                 "preset that has them (docs/measured.md)",
                 hw->name);
        return NULL;
    }
    measured_key key;
    sim_measured_key_of(cfg, hw, &key);
    for (sim_measured *m = all_measured; m; m = m->next)
        if (!memcmp(&m->key, &key, sizeof key)) return m;
    sim_optable *t = sim_measured_tables_get(hw->optables, key.glitch_ratio, err);
    sim_optable *ar = t && key.ar_tables[0] ? sim_measured_tables_get(key.ar_tables, key.glitch_ratio, err) : t;
    if (!t || !ar) return NULL;
    sim_measured *m = malloc(sizeof *m);
    memset(m, 0, offsetof(sim_measured, lin));
    m->key = key, m->t = t, m->ar = ar;
    sim_optable_roof(t, &m->from);
    sim_optable_roof(ar, &m->ar_from);
    if (sim_measured_fill(m, hw, err)) {
        free(m);
        return NULL;
    }
    m->next = all_measured, all_measured = m;
    return m;
}
