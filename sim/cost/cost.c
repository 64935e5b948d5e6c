/* sim/cost/cost.c — the analytic cost model of docs/architecture.md §5 (see sim/cost/cost.h). */
#include "sim/cost/cost.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sim/cost/calib.h"

/* A calibration path as written in a preset ("configs/calibration/X.json") is
 * relative to the project root: try it as given, then beside configs/. */
static void calib_path(const char *name, char *buf, size_t n)
{
    snprintf(buf, n, "%s", name);
    if (name[0] == '/' || access(buf, R_OK) == 0) return;
    const char *dir = sim_config_dir(); /* .../configs */
    size_t len = strlen(dir);
    if (len >= 7 && !strcmp(dir + len - 7, "configs")) snprintf(buf, n, "%.*s%s", (int)(len - 7), dir, name);
}

/* DRAM→HBM, HBM→DRAM and SSD transfer curves from the hardware preset's
 * calibration file (docs/architecture.md §7), replacing the analytic bandwidths. */
static int load_calibration(sim_cost *c, const char *name, sim_err *err)
{
    char path[PATH_MAX + 64];
    sim_calib cal = {0};
    calib_path(name, path, sizeof path);
    json_t *root = sim_calib_read(path, err);
    if (!root) return -1;
    int found = -1;
    if (!sim_calib_from_json(path, root, &cal, err))
        found = sim_profile_from_json(path, root, c->model->name, &c->profile, err);
    json_decref(root);
    if (found < 0) return -1;
    c->profiled = found && c->profile.gpus == c->hw->gpus;
    c->profile_gpus_mismatch = found && !c->profiled;
    c->curves = (struct sim_transfer_curves){
        cal.load_dram.alpha_s, cal.load_dram.beta_Bps,    cal.store_dram.alpha_s,  cal.store_dram.beta_Bps,
        cal.load_ssd.alpha_s,  cal.load_ssd.beta_Bps,     cal.store_ssd.alpha_s,   cal.store_ssd.beta_Bps,
        cal.has_pages,         cal.load_pages.per_copy_s, cal.load_pages.beta_Bps,
    };
    c->calibrated = true;
    return 0;
}

static double decode_compute_s(const sim_cost *c, int batch)
{
    return batch * c->flops_per_token / (c->hw->flops * c->mfu);
}

/* Megatron-style tensor parallelism over the node's g GPUs: two all-reduces
 * per layer (after attention and after the MLP) of tokens · d · s bytes; a
 * ring all-reduce moves 2 (g−1)/g of them over each GPU's link.
 *
 * Expert parallelism (DeepSpeed-MoE, Rajbhandari et al., ICML 2022, §5:
 * tensor-slicing for the non-expert part, expert-slicing with all-to-all
 * for the experts; Megatron-Core's alltoall token dispatcher; DeepEP's
 * dispatch and combine kernels): a MoE layer's MLP all-reduce becomes a
 * dispatch and a combine all-to-all. Each GPU sends its 1/g share of the
 * tokens' k expert copies, (g−1)/g of them to other GPUs, so each moves
 * tokens · k · d · s · (g−1)/g² bytes a direction, and the busiest GPU
 * receives `imbalance` times that; an all-to-all's latency is taken as an
 * all-reduce's (hardware.allreduce_latency_us). */
static int tp_of(const sim_hw *hw) { return hw->tp > 0 ? hw->tp : hw->gpus; }

/* Pipeline parallelism over pp nodes (cluster.gpus_per_instance, a
 * multiple of the node): a pass hands its tokens' hidden states, tokens ·
 * d · s bytes, from stage to stage pp − 1 times over one node's NIC, each
 * hop a transfer (cost.transfer_latency_us + bytes / bandwidth; Megatron-LM,
 * Narayanan et al., SC'21, §2.2: point-to-point sends between stages). */
static void pipeline_init(sim_cost *c, double latency_s)
{
    const sim_hw *hw = c->hw;
    if (hw->pp < 2) return;
    double hops = hw->pp - 1, node_nic = hw->nic_Bps / hw->pp;
    c->ar_fixed_s += hops * latency_s;
    c->ar_s_per_token += hops * c->model->hidden * c->model->dtype_bytes / node_nic;
}

static void allreduce_init(sim_cost *c)
{
    const sim_hw *hw = c->hw;
    if (tp_of(hw) < 2 || hw->link_Bps <= 0) return;
    const sim_model *m = c->model;
    double g = tp_of(hw), ar_token = 2 * (g - 1) / g * m->hidden * m->dtype_bytes / hw->link_Bps;
    if (c->ep_imbalance > 0) {
        double moe = sim_model_moe_layers(m), allreduces = 2.0 * m->layers - moe, alltoalls = 2 * moe;
        double a2a_token =
            c->ep_imbalance * m->experts_per_token * m->hidden * m->dtype_bytes * (g - 1) / (g * g) / hw->link_Bps;
        c->ar_fixed_s = (allreduces + alltoalls) * hw->allreduce_latency_s;
        c->ar_s_per_token = allreduces * ar_token + alltoalls * a2a_token;
        return;
    }
    double per_layer = 2.0 * m->layers;
    c->ar_fixed_s = per_layer * hw->allreduce_latency_s;
    c->ar_s_per_token = per_layer * 2 * (g - 1) / g * m->hidden * m->dtype_bytes / hw->link_Bps;
}

/* Mixture of experts (cost.h): the routed experts' bytes, and the decode
 * FLOPs per token, 2 · active params, where under expert parallelism the
 * busiest GPU does `imbalance` times the mean routed work (so the node
 * takes as long as if every GPU did: the routed part × imbalance). On one
 * GPU or without expert parallelism the load is not split: imbalance 1. */
static void moe_init(sim_cost *c, const sim_config *cfg)
{
    const sim_model *m = &cfg->model;
    c->flops_per_token = 2.0 * m->params; /* dense: as it always was */
    if (sim_model_moe_layers(m) == 0) return;
    bool split = cfg->expert_parallel && tp_of(c->hw) > 1;
    double ep = split ? cfg->expert_imbalance : 1;
    c->expert_bytes = sim_model_moe_layers(m) * sim_model_expert_params(m) * m->dtype_bytes;
    c->routed_bytes = m->experts * c->expert_bytes;
    double routed_active = (double)sim_model_moe_layers(m) * m->experts_per_token * sim_model_expert_params(m);
    c->flops_per_token = 2.0 * (sim_model_active_params(m) + (ep - 1) * routed_active);
    c->ep_extra_flops_per_token = 2.0 * (ep - 1) * routed_active; /* prefill's share of the imbalance */
    c->ep_imbalance = split ? ep : 0;                             /* 0: no all-to-all */
}

double sim_cost_pass_bytes(const sim_cost *c, double tokens)
{
    if (c->routed_bytes <= 0) return c->pass_weight_bytes;
    double imbalance = c->ep_imbalance > 0 ? c->ep_imbalance : 1;
    double touched = sim_model_experts_touched(c->model, tokens) * c->expert_bytes * imbalance;
    return c->pass_weight_bytes - c->routed_bytes + fmin(touched, c->routed_bytes);
}

/* Decode attention FLOPs per context token. Per layer and query head the
 * score q·kᵀ and the weighted sum of v are 2 FLOPs per dimension each:
 * 4 · head_dim with K and V per KV head. Under multi-head latent attention
 * the decode kernels absorb the K and V up-projections into the query and
 * output ones (DeepSeek-V2 §2.1.2; FlashMLA, vLLM, SGLang), so each head
 * scores over the cached latent and RoPE key (c + r dims) and sums the
 * latent (c dims): 2 · (2c + r). */
double sim_cost_attn_flops(const sim_model *m)
{
    if (m->kv_lora_rank > 0) return 2.0 * m->layers * m->heads * (2.0 * m->kv_lora_rank + m->qk_rope_head_dim);
    return 4.0 * m->layers * m->heads * m->head_dim;
}

/* A mixture of experts' MLP activations per token: its k routed and its
 * shared experts' gate and up outputs (or a dense layer's, if wider). */
static double activation_intermediate(const sim_model *m)
{
    double i = m->intermediate > 0 ? m->intermediate : 4.0 * m->hidden;
    if (sim_model_moe_layers(m) == 0) return i;
    double moe = (double)(m->experts_per_token + m->shared_experts) * sim_model_expert_params(m) / (3.0 * m->hidden);
    return m->dense_layers > 0 && i > moe ? i : moe;
}

double sim_cost_activation_bytes(const sim_model *m, int tokens, int seqs)
{
    double i = activation_intermediate(m);
    return (double)tokens * (2 * i + 4.0 * m->hidden) * m->dtype_bytes + (double)seqs * m->vocab * 4.0;
}

/* Engine mode (cost.h): what a pass streams and what an iteration costs the CPU. */
static void engine_init(sim_cost *c, const sim_config *cfg)
{
    const sim_model *m = c->model;
    double embed = m->tied_embeddings ? 0 : (double)m->vocab * m->hidden * m->dtype_bytes;
    c->engine = true;
    c->pass_weight_bytes = c->weight_bytes - embed;
    c->iter_overhead_s = c->measured ? cfg->m_iter_overhead_s : cfg->iter_overhead_s;
    c->seq_overhead_s = c->measured ? cfg->m_seq_overhead_s : cfg->seq_overhead_s;
    c->frontend_s = c->measured ? cfg->m_frontend_s : cfg->frontend_s;
    c->activation_bytes = sim_cost_activation_bytes(m, cfg->max_num_batched_tokens, cfg->decode_max_batch);
}

/* The measured mode (sim/cost/measured.h): asked for, its tables must price
 * the model; under auto, hardware with tables gets it when they can, and
 * otherwise the reason is kept (measured_fallback) and the engine mode
 * prices the run. */
static int measured_init(sim_cost *c, const sim_config *cfg, const sim_hw *hw, int compute, sim_err *err)
{
    /* auto: any instance on hardware with tables takes them (vLLM's
     * kernels, fused and CUDA-graphed as a serving engine runs them); the
     * calibration's eager per-layer profile is asked for by name */
    bool agg = !strcmp(cfg->mode, "aggregated");
    bool want = compute == SIM_COMPUTE_MEASURED || (compute == SIM_COMPUTE_AUTO && hw->optables[0]);
    if (!want) return 0;
    sim_err why;
    c->measured = sim_measured_get(cfg, hw, &why);
    c->graph_max = cfg->cuda_graph_max_tokens;
    c->moe_jit_s = cfg->moe_jit_compile_s;
    if (c->measured) return 0;
    sim_measured_suggest(cfg, hw, &why);
    if (compute == SIM_COMPUTE_MEASURED) return sim_errf(err, "cost.compute: \"measured\": %s", why.msg);
    /* under auto the fallback is the choice already made: drop the advice
     * to make it ("…: use cost.compute=engine; or …" keeps the "or"s) */
    char *advice = strstr(why.msg, ": use cost.compute=engine");
    if (advice) {
        const char *rest = advice + strlen(": use cost.compute=engine");
        memmove(advice, rest, strlen(rest) + 1);
    }
    snprintf(c->measured_fallback, sizeof c->measured_fallback, "%s", why.msg);
    char text[sizeof why.msg + 160];
    snprintf(text, sizeof text,
             "the hardware names measured tables but they cannot price this run (%s): the %s model prices it instead",
             why.msg,
             agg           ? "engine"
             : c->profiled ? "profile-table"
                           : "analytic");
    sim_measured_fallback(text);
    return 0;
}

/* cost.compute with `auto` resolved as far as the config alone says: an
 * aggregated instance is a vLLM-style engine (docs/validation.md); anywhere
 * else auto stays auto (the profile tables when the calibration has them). */
static int compute_mode(const sim_config *cfg)
{
    return cfg->compute == SIM_COMPUTE_AUTO && !strcmp(cfg->mode, "aggregated") && !cfg->hw.optables[0]
               ? SIM_COMPUTE_ENGINE
               : cfg->compute;
}

int sim_cost_setup(sim_cost *c, const sim_config *cfg, sim_err *err)
{
    return sim_cost_setup_on(c, cfg, &cfg->hw, err);
}

/* vLLM splits the attention heads evenly over the tensor-parallel GPUs and
 * refuses a degree that does not divide them; KV heads are split the same
 * way, or replicated when there are fewer of them than GPUs, whose count
 * they must then divide (vllm/model_executor/models/llama.py,
 * LlamaAttention; Qwen2 and Mixtral alike). MLA keeps one latent per token
 * whatever the split. */
static int check_tp(const sim_model *m, const sim_hw *hw, sim_err *err)
{
    int tp = tp_of(hw);
    if (tp <= 1 || m->heads <= 0 || m->kv_heads <= 0) return 0;
    bool kv = m->kv_lora_rank > 0 || (m->kv_heads >= tp ? m->kv_heads % tp == 0 : tp % m->kv_heads == 0);
    if (m->heads % tp == 0 && kv) return 0;
    return sim_errf(err,
                    "model '%s' has %d attention heads and %d KV heads, which %d-way tensor parallelism (hardware "
                    "'%s') cannot split evenly: vLLM refuses it; choose hardware or cluster.gpus_per_instance with a "
                    "GPU count that divides %d",
                    m->name, m->heads, m->kv_heads, tp, hw->name, m->heads);
}

int sim_cost_setup_on(sim_cost *c, const sim_config *cfg, const sim_hw *hw, sim_err *err)
{
    *c = (sim_cost){
        .model = &cfg->model,
        .hw = hw,
        .mfu = cfg->prefill_mfu,
        .decode_overhead_s = cfg->decode_overhead_s,
        .chunk_overhead_s = cfg->chunk_overhead_s,
        .latency_s = cfg->transfer_latency_s,
        .kv_bytes_per_token = sim_model_kv_bytes_per_token(&cfg->model),
        .weight_bytes = sim_model_weight_bytes(&cfg->model),
        .hbm_Bps = hw->hbm_Bps * hw->hbm_efficiency,
        .attn_flops = sim_cost_attn_flops(&cfg->model),
        .prefill_chunk = cfg->prefill_chunk,
        .curves = {cfg->transfer_latency_s, hw->h2d_Bps, cfg->transfer_latency_s, hw->h2d_Bps, hw->ssd_latency_s,
                   hw->ssd_read_Bps, hw->ssd_latency_s, hw->ssd_write_Bps, false, 0, 0},
    };
    c->pass_weight_bytes = c->weight_bytes;
    if (check_tp(&cfg->model, hw, err)) return -1;
    if (hw->calibration[0] && load_calibration(c, hw->calibration, err)) return -1;
    int compute = compute_mode(cfg);
    if (compute == SIM_COMPUTE_PROFILE && !c->profiled)
        return sim_errf(err,
                        "cost.compute: \"profile\" needs measured tables for model '%s' on %d GPU(s) in hardware "
                        "'%s''s calibration file (%s); use \"analytic\" or \"engine\"",
                        cfg->model.name, hw->gpus, hw->name, hw->calibration[0] ? hw->calibration : "none");
    if (measured_init(c, cfg, hw, compute, err)) return -1;
    if (compute == SIM_COMPUTE_ANALYTIC || compute == SIM_COMPUTE_ENGINE || c->measured) c->profiled = false;
    if (compute == SIM_COMPUTE_ENGINE || c->measured ||
        (compute == SIM_COMPUTE_AUTO && c->measured_fallback[0] && !strcmp(cfg->mode, "aggregated")))
        engine_init(c, cfg);
    moe_init(c, cfg);
    allreduce_init(c);
    pipeline_init(c, cfg->transfer_latency_s);
    for (int b = 0; b < SIM_DECODE_TABLE; b++) c->decode_compute_s[b] = decode_compute_s(c, b);
    c->hbm_kv_bytes = hw->hbm_bytes * cfg->decode_hbm_frac - c->weight_bytes - c->activation_bytes;
    /* NCCL's buffers are not in it: vLLM initializes the distributed
     * environment "BEFORE taking memory snapshot" and charges the KV budget
     * only what grows after (vllm/v1/worker/gpu_worker.py, init_device and
     * determine_available_memory), so they sit in the 1 − utilization
     * headroom, as do the CUDA graphs it captures after allocating the
     * cache. */
    return 0;
}

const sim_idle_key *sim_cost_idle_keys(const sim_config *cfg)
{
#define NOT_ENGINE(key)                                                                                                \
    {                                                                                                                  \
        key, "cost.compute is not the engine mode (an aggregated instance's default, or --set cost.compute=engine): "  \
             "the engine.*_ms constants apply to it alone"                                                             \
    }
    static const sim_idle_key profiled[] = {
        {"cost.prefill_mfu", "the hardware's calibration file gives this model's prefill and decode times measured "
                             "on its GPUs (profile tables), not FLOPs at an MFU"},
        {"hardware.hbm_efficiency", "the hardware's calibration file gives this model's decode step times measured "
                                    "on its GPUs (profile tables), not HBM bandwidth times an efficiency"},
        NOT_ENGINE("engine.iter_overhead_ms"),
        NOT_ENGINE("engine.seq_overhead_ms"),
        NOT_ENGINE("engine.frontend_ms"),
        {NULL, NULL},
    };
    static const sim_idle_key engine[] = {
        {"cost.decode_overhead_ms", "cost.compute is the engine mode (an aggregated instance's default): a step's "
                                    "overheads are engine.iter_overhead_ms and engine.seq_overhead_ms"},
        {"cost.prefill_chunk_overhead_ms", "cost.compute is the engine mode (an aggregated instance's default): a "
                                           "chunk's overheads are engine.iter_overhead_ms and engine.seq_overhead_ms"},
        {NULL, NULL},
    };
#undef NOT_ENGINE
    const sim_idle_key *analytic = profiled + 2; /* the engine.* keys alone */
    int mode = compute_mode(cfg);
    if (mode == SIM_COMPUTE_ENGINE) return engine;
    if (mode == SIM_COMPUTE_ANALYTIC || !cfg->hw.calibration[0]) return analytic;
    /* auto or profile with a calibration file: whether its tables cover this
     * model and GPU count decides (the file is read once more here) */
    sim_cost c;
    sim_err err;
    return sim_cost_setup(&c, cfg, &err) == 0 && c.profiled ? profiled : analytic;
}

bool sim_cost_spec_sheet_only(const sim_config *cfg, const sim_hw *hw)
{
    if (hw->optables[0] || cfg->compute == SIM_COMPUTE_MEASURED || cfg->compute == SIM_COMPUTE_PROFILE) return false;
    sim_cost c;
    sim_err err;
    return sim_cost_setup_on(&c, cfg, hw, &err) == 0 && !c.profiled;
}

int sim_cost_init(sim_cost *c, const sim_config *cfg, sim_err *err) { return sim_cost_init_on(c, cfg, &cfg->hw, err); }

/* A hardware preset whose node's HBM, at the run's share, holds `need`
 * bytes (the model's weights and activation reserve). */
static bool preset_holds(const json_t *preset, void *need)
{
    const double *n = need;
    double per_gpu = 0, gpus = 0;
    sim_err err;
    if (sim_json_size(preset, "hbm_bytes_per_gpu", &per_gpu, &err) ||
        sim_json_size(preset, "gpus_per_node", &gpus, &err))
        return false;
    return per_gpu * gpus * n[1] > n[0];
}

int sim_cost_init_on(sim_cost *c, const sim_config *cfg, const sim_hw *hw, sim_err *err)
{
    if (sim_cost_setup_on(c, cfg, hw, err)) return -1;
    char names[1024];
    if (c->hbm_kv_bytes <= 0) {
        double need[2] = {c->weight_bytes + c->activation_bytes, cfg->decode_hbm_frac};
        sim_preset_names_where("hardware", preset_holds, need, names, sizeof names);
        return sim_errf(err,
                        "model '%s' (%.0f GB of weights) does not fit in hardware '%s' (%.0f GB HBM × %g): %s%s%s "
                        "or a smaller model",
                        cfg->model.name, c->weight_bytes / 1e9, hw->name, hw->hbm_bytes / 1e9, cfg->decode_hbm_frac,
                        names[0] ? "choose a preset with room for it at that share (--set hardware=NAME: "
                                 : "no hardware preset has room for it at that share: raise "
                                   "cluster.decode_hbm_frac, give a hardware file with more HBM,",
                        names, names[0] ? ")" : "");
    }
    return 0;
}

double sim_prefill_flops(const sim_model *m, double n)
{
    double d = m->hidden;
    return m->layers * (m->flops_a * n * n * d + m->flops_b * n * d * d);
}

/* Compute time of `flops` in `passes` forward passes: at least the time to
 * read every weight once per pass (short prompts are memory-bound: MFU falls
 * with the sequence length below about G · mfu · weights / (2 · params · B_hbm)
 * tokens, docs/cost-model.md). */
static double prefill_compute_s(const sim_cost *c, double flops, int32_t passes, double tokens)
{
    double compute = flops / (c->hw->flops * c->mfu);
    double floor = passes * sim_cost_pass_bytes(c, tokens / passes) / c->hbm_Bps;
    return compute > floor ? compute : floor;
}

double sim_cost_prefill_flops(const sim_cost *c, double cached, double new_tokens)
{
    return sim_prefill_flops(c->model, cached + new_tokens) - sim_prefill_flops(c->model, cached) +
           c->ep_extra_flops_per_token * new_tokens;
}

/* A measured pass of one prefill chunk. */
static double measured_chunk_s(const sim_cost *c, double new_tokens, double cached)
{
    sim_pass_shape p = {.chunks = 1, .chunk_tokens = new_tokens, .chunk_cached = cached};
    return sim_measured_pass_s(c->measured, &p);
}

double sim_cost_prefill_pass_s(const sim_cost *c, double new_tokens, double cached)
{
    if (c->measured) return new_tokens > 0 ? measured_chunk_s(c, new_tokens, cached) : 0;
    if (c->profiled) return sim_profile_prefill_s(&c->profile, new_tokens, cached);
    double flops = sim_cost_prefill_flops(c, cached, new_tokens);
    return prefill_compute_s(c, flops, 1, new_tokens);
}

/* Profile mode: each chunk of a chunked prefill is its own measured pass
 * after everything before it. */
static double profiled_prefill_s(const sim_cost *c, int32_t n, int32_t p)
{
    double t = 0;
    for (int32_t off = p; off < n; off += c->prefill_chunk) {
        int32_t len = n - off < c->prefill_chunk ? n - off : c->prefill_chunk;
        t += c->measured ? measured_chunk_s(c, len, off) : sim_profile_prefill_s(&c->profile, len, off);
    }
    return t;
}

double sim_cost_prefill_overhead_s(const sim_cost *c, int32_t n, int32_t p)
{
    if (p >= n) p = n > 0 ? n - 1 : 0; /* the last token is always computed */
    int32_t chunks = (n - p + c->prefill_chunk - 1) / c->prefill_chunk;
    return (chunks > 1 ? chunks : 0) * c->chunk_overhead_s;
}

double sim_cost_prefill_s(const sim_cost *c, int32_t n, int32_t p)
{
    double overhead = sim_cost_prefill_overhead_s(c, n, p);
    if (p >= n) p = n > 0 ? n - 1 : 0; /* the last token is always computed */
    int32_t chunks = (n - p + c->prefill_chunk - 1) / c->prefill_chunk;
    if (c->profiled || c->measured) return profiled_prefill_s(c, n, p) + overhead;
    double flops = sim_cost_prefill_flops(c, p, n - p);
    return prefill_compute_s(c, flops, chunks > 1 ? chunks : 1, n - p) + overhead;
}

double sim_cost_chunk_s(const sim_cost *c, int32_t o, int32_t len)
{
    if (c->engine) return sim_cost_prefill_pass_s(c, len, o) + c->iter_overhead_s + c->seq_overhead_s;
    return sim_cost_prefill_pass_s(c, len, o) + c->chunk_overhead_s;
}

double sim_cost_allreduce_s(const sim_cost *c, double tokens)
{
    return tokens > 0 ? c->ar_fixed_s + tokens * c->ar_s_per_token : 0;
}

/* Prefill chunks' compute (at mfu, their communication included as in
 * Eq. 1's end-to-end utilisation) and a decode step share one pass.
 * kv_tokens counts the chunks' KV as well as the decodes' context, so the
 * decodes' attention FLOPs are not split out here (Eq. 1 has the chunks');
 * the KV read is in the memory term. */
static sim_pass_shape mixed_shape(const sim_mixed_batch *b)
{
    return (sim_pass_shape){
        .decodes = b->decodes,
        .decode_ctx = b->decodes > 0 ? (double)b->decode_ctx_tokens / b->decodes : 0,
        .chunks = b->nchunks,
        .chunk_tokens = b->chunk_tokens,
        .chunk_cached = b->chunk_cached,
    };
}

double sim_cost_mixed_iter_s(const sim_cost *c, const sim_mixed_batch *b)
{
    double mem, compute;
    if (c->measured) {
        sim_pass_shape p = mixed_shape(b);
        return sim_measured_pass_s(c->measured, &p) + c->iter_overhead_s +
               c->seq_overhead_s * (b->decodes + b->nchunks);
    }
    if (c->profiled) {
        mem = sim_profile_decode_s(&c->profile, b->decodes > 0 ? b->decodes : 1, (double)b->kv_tokens);
        compute = b->chunk_tokens > 0 ? sim_profile_prefill_s(&c->profile, b->chunk_tokens, b->chunk_cached) : 0;
    } else {
        mem = (sim_cost_pass_bytes(c, b->decodes + b->chunk_tokens) + (double)b->kv_tokens * c->kv_bytes_per_token) /
              c->hbm_Bps;
        compute = (b->prefill_flops + b->decodes * c->flops_per_token) / (c->hw->flops * c->mfu);
    }
    if (c->engine)
        return fmax(mem, compute) + sim_cost_allreduce_s(c, b->decodes + b->chunk_tokens) + c->iter_overhead_s +
               c->seq_overhead_s * (b->decodes + b->nchunks);
    return fmax(mem, compute) + sim_cost_allreduce_s(c, b->decodes) + c->decode_overhead_s +
           (b->nchunks > 0 ? c->chunk_overhead_s : 0);
}

sim_decode_terms sim_cost_decode_terms(const sim_cost *c, int batch, int64_t ctx_tokens)
{
    if (c->measured) {
        sim_pass_shape p = {.decodes = batch, .decode_ctx = batch > 0 ? (double)ctx_tokens / batch : 0};
        double t = sim_measured_pass_s(c->measured, &p);
        sim_decode_terms d = {t, t, 0, c->iter_overhead_s + c->seq_overhead_s * batch, 0, true};
        d.total_s = t + d.overhead_s;
        return d;
    }
    if (c->profiled) {
        double t = sim_profile_decode_s(&c->profile, batch, (double)ctx_tokens);
        sim_decode_terms p = {t, t, sim_cost_allreduce_s(c, batch), c->decode_overhead_s, 0, true};
        p.total_s = t + p.allreduce_s + p.overhead_s;
        return p;
    }
    sim_decode_terms t = {
        .mem_s = (sim_cost_pass_bytes(c, batch) + (double)ctx_tokens * c->kv_bytes_per_token) / c->hbm_Bps,
        .compute_s = (batch < SIM_DECODE_TABLE ? c->decode_compute_s[batch] : decode_compute_s(c, batch)) +
                     (double)ctx_tokens * c->attn_flops / (c->hw->flops * c->mfu),
        .allreduce_s = sim_cost_allreduce_s(c, batch),
        .overhead_s = c->engine ? c->iter_overhead_s + c->seq_overhead_s * batch : c->decode_overhead_s,
    };
    t.total_s = fmax(t.mem_s, t.compute_s) + t.allreduce_s + t.overhead_s;
    return t;
}

bool sim_cost_decode_ops(const sim_cost *c, int batch, int64_t ctx_tokens, sim_op_times *out)
{
    if (!c->measured) return false;
    sim_pass_shape p = {.decodes = batch, .decode_ctx = batch > 0 ? (double)ctx_tokens / batch : 0};
    sim_measured_pass(c->measured, &p, out);
    return true;
}

bool sim_cost_prefill_ops(const sim_cost *c, int32_t n, int32_t p, sim_op_times *out)
{
    if (!c->measured) return false;
    memset(out, 0, sizeof *out);
    if (p >= n) p = n > 0 ? n - 1 : 0;
    for (int32_t off = p; off < n; off += c->prefill_chunk) {
        sim_op_times one;
        sim_pass_shape ps = {
            .chunks = 1, .chunk_tokens = n - off < c->prefill_chunk ? n - off : c->prefill_chunk, .chunk_cached = off};
        sim_measured_pass(c->measured, &ps, &one);
        for (int i = 0; i < SIM_OP_N; i++) out->s[i] += one.s[i];
        out->total_s += one.total_s;
    }
    return true;
}

double sim_cost_decode_iter_s(const sim_cost *c, int batch, int64_t ctx_tokens)
{
    return sim_cost_decode_terms(c, batch, ctx_tokens).total_s;
}

void sim_cost_quiet(const sim_cost *c, bool quiet)
{
    if (c->measured) sim_measured_quiet(c->measured, quiet);
}

double sim_cost_iter_overhead_s(const sim_cost *c, int seqs)
{
    return c->engine ? c->iter_overhead_s + c->seq_overhead_s * seqs : 0;
}

/* The engine mode's constants were fitted on the three dense training runs
 * of validation/vllm-h100-train.json, the measured mode's on all four, each
 * prediction the mean over kvsim validate's 8 draws of the workload. The
 * most requests between prefill start and last token at once in those
 * replays: 37, 37 and 51 (dense, engine mode); 37, 37, 50 and 121
 * (measured mode, Mixtral-8x7B's the most); tests/test_validate.c
 * (test_fit_seqs) recomputes them from `kvsim validate --db`. */
enum { FIT_SEQS_ENGINE = 51, FIT_SEQS_MEASURED = 121 };

int sim_cost_fit_seqs(const sim_cost *c)
{
    if (!c->engine) return 0;
    return c->measured ? FIT_SEQS_MEASURED : FIT_SEQS_ENGINE;
}

/* The same step of Llama-3.1-8B on one H100 (the training runs' GPU) in
 * each mode, the shortest step those runs took; test_fit_floor
 * (tests/test_validate.c) reprices it with `kvsim cost`. */
#define FIT_FLOOR_ENGINE_S   6.2212e-3
#define FIT_FLOOR_MEASURED_S 6.7384e-3

double sim_cost_fit_floor_s(const sim_cost *c)
{
    if (!c->engine) return 0;
    return c->measured ? FIT_FLOOR_MEASURED_S : FIT_FLOOR_ENGINE_S;
}

double sim_cost_short_step_s(const sim_cost *c)
{
    double floor_s = sim_cost_fit_floor_s(c);
    if (!(floor_s > 0)) return 0;
    sim_cost_quiet(c, true); /* a probe: it prices no request of the run */
    sim_decode_terms t = sim_cost_decode_terms(c, 1, 512);
    sim_cost_quiet(c, false);
    double gpu_s = t.total_s - t.overhead_s;
    return gpu_s < floor_s * 0.999 ? gpu_s : 0; /* the floor is stated to five digits */
}

double sim_cost_moe_jit_s(const sim_cost *c, double tokens, uint64_t *seen)
{
    if (!c->measured || c->moe_jit_s <= 0 || tokens <= c->graph_max) return 0;
    uint64_t v = sim_measured_moe_variant(c->measured, tokens);
    if (!v || (*seen & v)) return 0;
    *seen |= v;
    return 2 * c->moe_jit_s;
}

uint64_t sim_cost_moe_jit_warm(const sim_cost *c, int budget)
{
    return c->measured ? sim_measured_moe_warm(c->measured, c->graph_max, budget) : 0;
}

static double transfer_s(double alpha, double beta, double bytes) { return bytes > 0 ? alpha + bytes / beta : 0; }

double sim_cost_h2d_s(const sim_cost *c, double bytes)
{
    return transfer_s(c->curves.h2d_alpha, c->curves.h2d_beta, bytes);
}
double sim_cost_d2h_s(const sim_cost *c, double bytes)
{
    return transfer_s(c->curves.d2h_alpha, c->curves.d2h_beta, bytes);
}

double sim_cost_h2d_pages_s(const sim_cost *c, double page_bytes, double pages)
{
    if (!c->curves.pages) return pages * sim_cost_h2d_s(c, page_bytes);
    return page_bytes > 0 ? 2 * pages * c->curves.h2d_copy_s + pages * page_bytes / c->curves.h2d_copy_Bps : 0;
}

double sim_cost_ssd_read_s(const sim_cost *c, double bytes)
{
    return transfer_s(c->curves.ssd_read_alpha, c->curves.ssd_read_beta, bytes);
}

double sim_cost_ssd_write_s(const sim_cost *c, double bytes)
{
    return transfer_s(c->curves.ssd_write_alpha, c->curves.ssd_write_beta, bytes);
}

double sim_cost_nic_s(const sim_cost *c, double bytes) { return transfer_s(c->latency_s, c->hw->nic_Bps, bytes); }

int64_t sim_cost_decode_kv_tokens(const sim_cost *c) { return (int64_t)(c->hbm_kv_bytes / c->kv_bytes_per_token); }

/* The marginal cost of recomputing tokens inside a prefill (issue 32 item
 * 1). A prefill pass of P new tokens after s cached ones takes pass(P, s)
 * (the measured table when profiled, else max(Eq. 1 FLOPs at G · mfu, one
 * weight read)); the len tokens [pos, pos + len) that end such a pass cost
 * what they add to it, pass(P, s) − pass(P − len, s) with s = pos + len − P.
 * A chunk is thus never priced as a forward pass of its own: the weight read
 * and the fixed cost of a pass are paid once whatever it computes, and what
 * is left is the chunk's FLOPs at its position (the slope of the table). */
double sim_cost_recompute_s(const sim_cost *c, double pos, double len, double pass_tokens)
{
    if (len <= 0) return 0;
    double P = pass_tokens < len ? len : pass_tokens;
    if (P > pos + len) P = pos + len;
    double s = pos + len - P, t = sim_cost_prefill_pass_s(c, P, s) - sim_cost_prefill_pass_s(c, P - len, s);
    return t > 0 ? t : 0;
}

double sim_cost_pass_recompute_s(const sim_cost *c, double pos, double len, double from, int budget)
{
    double pass = pos + len - from;
    return sim_cost_recompute_s(c, pos, len, pass < budget ? pass : budget);
}

/* Chunk i's recompute in a prefill from token 0 (the crossover's price). */
static double crossover_chunk_s(const sim_cost *c, int64_t i, int chunk_tokens, int budget)
{
    return sim_cost_pass_recompute_s(c, (double)i * chunk_tokens, chunk_tokens, 0, budget);
}

int64_t sim_cost_crossover_tokens(const sim_cost *c, int chunk_tokens, int budget, double chunk_load_s,
                                  int64_t max_tokens)
{
    int64_t lo = 0, hi = max_tokens / chunk_tokens; /* chunk indices; compute grows with the index */
    if (crossover_chunk_s(c, hi, chunk_tokens, budget) <= chunk_load_s) return -1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (crossover_chunk_s(c, mid, chunk_tokens, budget) > chunk_load_s) hi = mid;
        else lo = mid + 1;
    }
    return lo * chunk_tokens;
}

double sim_cost_context_prefill_s(const sim_cost *c, int64_t tokens, int budget)
{
    double t = 0;
    for (int64_t off = 0; off < tokens; off += budget)
        t += sim_cost_chunk_s(c, (int32_t)off, (int32_t)(tokens - off < budget ? tokens - off : budget));
    return t;
}

double sim_eq2_min_bandwidth(const sim_model *m, double G, double p)
{
    double d = m->hidden;
    return G * (sim_model_kv_bytes_per_token(m) / m->layers) / (m->flops_a * p * d + m->flops_b * d * d);
}
