/* sim/cost/cost.h — the cost model: the "truth" the simulated hardware takes
 * (docs/architecture.md §5). The conductor never calls it directly; it sees only the
 * estimators of sim/cost/estimator.h.
 *
 *   KV bytes/token    2 · l · kv_heads · head_dim · s   (LLaMA3-70B: 320 KiB)
 *   prefill FLOPs     flops(n) = l · (a·n²·d + b·n·d²)  (Mooncake Eq. 1)
 *   prefill time      max((flops(n) − flops(p)) / (G · mfu), chunks · weights / B_hbm)
 *                     + per-chunk overhead (a forward pass reads every weight once)
 *   decode iteration  max((weights + Σ context KV) / B_hbm,
 *                         (batch · 2 · params + 4 · l · heads · head_dim · Σ context) / (G · mfu))
 *                     (a mixture of experts: the weights its tokens touch,
 *                     2 · active params; docs/hardware.md §1)
 *                     + 2 · l · (t_ar + 2 (g−1)/g · batch · d · s / B_link) + overhead
 *                     where B_hbm = node HBM bandwidth × hardware.hbm_efficiency and
 *                     the all-reduce term is the tensor-parallel one across the
 *                     node's g GPUs (docs/cost-model.md has every constant's source)
 *   transfers         latency + bytes / bandwidth (H2D, D2H, SSD, NIC); the
 *                     H2D, D2H and SSD curves t = alpha + bytes/beta come
 *                     from a calibration file when the hardware preset names
 *                     one ("calibration": path; sim/cost/calib.h).
 *   engine mode       cost.compute = "engine" (docs/validation.md): a
 *                     production engine under CUDA graphs. An iteration
 *                     takes max((W_pass + Σ KV) / B_hbm, FLOPs / (G · mfu))
 *                     + all-reduce + engine.iter_overhead_ms
 *                     + engine.seq_overhead_ms × sequences in it, where
 *                     W_pass = weights less the input embedding (a gather);
 *                     HBM for KV also leaves the activation peak of a
 *                     token-budget pass (sim_cost_activation_bytes).
 *   profile tables    when that calibration file also holds measured prefill
 *                     and decode times for the config's model on as many GPUs
 *                     as the hardware has (its "compute" section, written by
 *                     `kvsim calibrate --layers-json`), prefill passes and
 *                     decode steps take the interpolated measurement instead
 *                     of the two analytic lines above (sim/cost/profile.h);
 *                     overheads and all-reduce terms are added as before.
 */
#ifndef SIM_COST_H
#define SIM_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/config/config.h"
#include "sim/cost/measured.h"
#include "sim/cost/profile.h"

enum { SIM_DECODE_TABLE = 64 };

typedef struct sim_cost {
    const sim_model *model;
    const sim_hw *hw;
    double mfu;
    double decode_overhead_s, chunk_overhead_s, latency_s;
    double kv_bytes_per_token, weight_bytes;
    double hbm_Bps;        /* achievable node HBM bandwidth: peak × hardware.hbm_efficiency */
    double attn_flops;     /* decode attention FLOPs per context token: sim_cost_attn_flops */
    double ar_fixed_s;     /* the latency of a decode step's 2 · l all-reduces (0 on one GPU) */
    double ar_s_per_token; /* their bandwidth time per token in the step */
    /* Mixture of experts (docs/hardware.md §1): the routed experts' bytes
     * (all of them, and one expert across the MoE layers), the decode FLOPs
     * per token (2 · active params, the busiest GPU's share under expert
     * parallelism), and that GPU's expert load over the mean (1 without
     * expert parallelism). Dense: routed_bytes 0, 2 · params. */
    double routed_bytes, expert_bytes, flops_per_token, ep_imbalance, ep_extra_flops_per_token;
    int prefill_chunk;
    double hbm_kv_bytes; /* decode instance HBM left for KV after weights */
    struct sim_transfer_curves {
        double h2d_alpha, h2d_beta, d2h_alpha, d2h_beta;
        double ssd_read_alpha, ssd_read_beta, ssd_write_alpha, ssd_write_beta;
        bool pages; /* the calibration has a page-copy cost (sim_page_cost) */
        double h2d_copy_s, h2d_copy_Bps;
    } curves;
    bool calibrated; /* curves came from a calibration file */
    /* Profile-table mode: the calibration file's measured times for this
     * model are used (profiled), or it has them but for another GPU count
     * (profile_gpus_mismatch: analytic, and `kvsim cost` says why). */
    bool profiled, profile_gpus_mismatch;
    sim_profile profile;
    /* Engine mode (cost.compute = "engine"): a pass reads pass_weight_bytes
     * (the input embedding is a gather, not a stream) and each iteration
     * pays iter_overhead_s + seq_overhead_s per sequence in it. */
    bool engine;
    double pass_weight_bytes, iter_overhead_s, seq_overhead_s, activation_bytes, frontend_s;
    /* Measured mode (cost.compute = measured, or auto on hardware with
     * tables; sim/cost/measured.h): every pass is the sum of the tables'
     * operations, the engine.measured.* CPU constants on top (engine is
     * set too). measured_fallback: auto found tables but they cannot price
     * this model (why; the engine mode prices it instead). */
    sim_measured *measured;
    char measured_fallback[1100];
    /* engine.measured.*: the CUDA-graph limit, and the stall of one fused-MoE
     * kernel compile (sim_cost_moe_jit_s) */
    int graph_max;
    double moe_jit_s;
    /* The compute time of a decode step of b < SIM_DECODE_TABLE requests,
     * computed once by the same expression (no division per step). */
    double decode_compute_s[SIM_DECODE_TABLE];
} sim_cost;

int sim_cost_init(sim_cost *c, const sim_config *cfg, sim_err *err);
/* sim_cost_init without its last check (the weights fit in HBM): for tools
 * that compare times of models the hardware could not serve. */
int sim_cost_setup(sim_cost *c, const sim_config *cfg, sim_err *err);
/* The same on one side's hardware (cfg->prefill_hw or cfg->decode_hw, which
 * must outlive c) instead of cfg->hw: a disaggregated cluster's two sides
 * (docs/hardware.md §2). */
int sim_cost_init_on(sim_cost *c, const sim_config *cfg, const sim_hw *hw, sim_err *err);
int sim_cost_setup_on(sim_cost *c, const sim_config *cfg, const sim_hw *hw, sim_err *err);
/* The keys the cost model does not read for cfg, with why ({NULL}-ended):
 * under profile tables (the hardware's calibration measures the model's
 * prefill and decode on as many GPUs) cost.prefill_mfu and
 * hardware.hbm_efficiency; in the engine mode cost.decode_overhead_ms and
 * cost.prefill_chunk_overhead_ms; outside it engine.*_ms. */
const sim_idle_key *sim_cost_idle_keys(const sim_config *cfg);
/* Whether an instance on hw has its kernels priced by the roofline of its
 * spec sheet alone: the hardware names no measured tables, its calibration
 * (if any) has no profile of this model on its GPUs, and cost.compute
 * does not insist on a measurement (set-up would refuse that). */
bool sim_cost_spec_sheet_only(const sim_config *cfg, const sim_hw *hw);
/* The GPU time of one forward pass of new_tokens after `cached` cached
 * ones, unchunked and without overheads: the profile's when profiled, else
 * max(Eq. 1 FLOPs at G · mfu, weights over HBM bandwidth). */
double sim_cost_prefill_pass_s(const sim_cost *c, double new_tokens, double cached);

/* Mooncake Eq. 1. */
double sim_prefill_flops(const sim_model *m, double n);
/* The FLOPs a prefill pass of new_tokens after `cached` ones costs the
 * instance: Eq. 1's difference, and under expert parallelism the busiest
 * GPU's extra routed work, (imbalance − 1) · 2 · routed active params a
 * token (the decode step's rule, moe_init). */
double sim_cost_prefill_flops(const sim_cost *c, double cached, double new_tokens);
/* Compute time of a prefill of n tokens whose first p are cached. */
double sim_cost_prefill_s(const sim_cost *c, int32_t n, int32_t p);
/* Of it, the chunks' own cost: cost.prefill_chunk_overhead_ms for each
 * chunk when there are two or more (Mooncake's chunked prefill). */
double sim_cost_prefill_overhead_s(const sim_cost *c, int32_t n, int32_t p);
/* One prefill chunk of len tokens after the first o on one node:
 * (flops(o + len) − flops(o)) / (G · mfu) + the per-chunk overhead. */
double sim_cost_chunk_s(const sim_cost *c, int32_t o, int32_t len);
/* One iteration of an aggregated instance (docs/lmcache.md): prefill chunks
 * and a decode step of `decodes` requests, reading kv_tokens of KV in all.
 * Analytic: max(memory floor (weights + KV over HBM bandwidth), compute
 * (the chunks' Eq. 1 FLOPs + 2 · params per decode, at G · mfu)).
 * Profiled: max(the measured decode step of the batch (one request at
 * least: a pass reads the weights), the measured pass of chunk_tokens new
 * tokens after chunk_cached cached ones — the chunks taken as one pass at
 * their token-weighted mean offset). Then + the decode overhead + one chunk
 * overhead when there are chunks. */
typedef struct sim_mixed_batch {
    double prefill_flops; /* Eq. 1 FLOPs of the chunks */
    int nchunks, decodes;
    double chunk_tokens, chunk_cached; /* the chunks' new tokens; token-weighted mean of the tokens before them */
    int64_t kv_tokens;
    int64_t decode_ctx_tokens; /* the decodes' context alone (measured mode's generation attention) */
} sim_mixed_batch;
double sim_cost_mixed_iter_s(const sim_cost *c, const sim_mixed_batch *b);
/* One decode iteration of `batch` requests holding ctx_tokens of KV in total. */
double sim_cost_decode_iter_s(const sim_cost *c, int batch, int64_t ctx_tokens);
/* Measured mode only (false otherwise): the GPU time by operation of one
 * decode iteration of `batch` requests holding ctx_tokens in all, and of a
 * prefill of n tokens whose first p are cached, summed over its passes of
 * at most cluster.prefill_chunk tokens (`kvsim cost`). */
bool sim_cost_decode_ops(const sim_cost *c, int batch, int64_t ctx_tokens, sim_op_times *out);
bool sim_cost_prefill_ops(const sim_cost *c, int32_t n, int32_t p, sim_op_times *out);
/* Its terms, for `kvsim cost` and the tests: memory-bound and compute-bound
 * times, the all-reduce time, the fixed overhead; total = max(mem, compute)
 * + allreduce + overhead = sim_cost_decode_iter_s. */
typedef struct sim_decode_terms {
    double mem_s, compute_s, allreduce_s, overhead_s, total_s;
    bool profiled; /* mem_s = compute_s = the measured step (profile tables, or the measured mode's
                      sum of operations, all-reduces included: allreduce_s 0) */
} sim_decode_terms;
sim_decode_terms sim_cost_decode_terms(const sim_cost *c, int batch, int64_t ctx_tokens);
/* The tensor-parallel all-reduce time of one forward pass over `tokens`
 * tokens: 2 · l · (t_ar + 2 (g−1)/g · tokens · d · s / B_link); 0 on one GPU.
 * Under expert parallelism each MoE layer's second all-reduce is a dispatch
 * and a combine all-to-all instead (sim_cost_setup, docs/hardware.md §1). */
double sim_cost_allreduce_s(const sim_cost *c, double tokens);
double sim_cost_h2d_s(const sim_cost *c, double bytes);
double sim_cost_d2h_s(const sim_cost *c, double bytes);
/* The CPU constants' share of an iteration of `seqs` sequences:
 * engine.iter_overhead_ms + engine.seq_overhead_ms × seqs (the measured
 * mode's engine.measured.* ones), 0 outside the engine and measured modes.
 * sim_cost_fit_seqs: the most sequences in flight at once in the training
 * replays those constants were fitted on (docs/validation.md §4), 0 for a
 * mode without them; an iteration of more extrapolates the per-sequence
 * term, which a run says (sim/serving/agg/agg.c). */
double sim_cost_iter_overhead_s(const sim_cost *c, int seqs);
/* Probes of the cost model that price no request of the run leave no
 * not_measured caveat while quiet (sim_measured_quiet); a no-op outside the
 * measured mode. */
void sim_cost_quiet(const sim_cost *c, bool quiet);
int sim_cost_fit_seqs(const sim_cost *c);
/* The other axis of the constants' range: the GPU time of a decode step of
 * one sequence at 512 tokens of context (its time less the constants),
 * when it is shorter than the same step of Llama-3.1-8B on one H100, the
 * shortest of the training runs the constants were fitted on
 * (sim_cost_fit_floor_s; docs/validation.md §4); 0 when it is not, and
 * outside the engine and measured modes. vLLM prepares a step while the
 * one before runs, so its CPU work may bound steps that short rather than
 * add to them as kvsim adds the constants. */
double sim_cost_short_step_s(const sim_cost *c);
double sim_cost_fit_floor_s(const sim_cost *c);
/* Measured mode, a mixture of experts: the time a pass of `tokens` tokens
 * waits while Triton compiles the fused-MoE variants it needs for the
 * first time on this instance (two kernels, gate-up and down, per variant:
 * 2 × engine.measured.moe_jit_compile_ms), adding them to *seen; 0 for a
 * pass inside a CUDA graph (compiled at capture), a dense model or another
 * mode. sim_cost_moe_jit_warm is what an instance has compiled when it
 * starts serving (docs/measured.md §4). */
double sim_cost_moe_jit_s(const sim_cost *c, double tokens, uint64_t *seen);
uint64_t sim_cost_moe_jit_warm(const sim_cost *c, int budget);
/* Moving `pages` vLLM pages (one layer's K and V of 16 tokens, page_bytes
 * each) to HBM one by one: with the calibration's page-copy cost (a GPU
 * probe) two copies a page (K and V are separate tensors), 2 · pages ·
 * per_copy_s + pages · page_bytes / beta; else pages · sim_cost_h2d_s(page_bytes). */
double sim_cost_h2d_pages_s(const sim_cost *c, double page_bytes, double pages);
double sim_cost_ssd_read_s(const sim_cost *c, double bytes);
double sim_cost_ssd_write_s(const sim_cost *c, double bytes);
double sim_cost_nic_s(const sim_cost *c, double bytes);
/* Engine mode's activation reserve, as vLLM's profiling pass finds it: the
 * peak of a forward pass over `tokens` tokens (the MLP's gate and up
 * outputs and the residual stream, tokens · (2 · i + 4 · d) · s) plus the
 * logits of `seqs` sequences in fp32 (seqs · V · 4). */
double sim_cost_activation_bytes(const sim_model *m, int tokens, int seqs);
/* Decode attention FLOPs per context token: 4 · l · heads · head_dim, or
 * under MLA (absorbed up-projections) 2 · l · heads · (2 · kv_lora_rank +
 * qk_rope_head_dim) (docs/cost-model.md §1). */
double sim_cost_attn_flops(const sim_model *m);
/* The weight bytes one forward pass over `tokens` tokens streams: every
 * weight less the input embedding (engine mode) for a dense model; for a
 * mixture of experts the shared part and only the routed experts the
 * tokens touch (sim_model_experts_touched), the busiest GPU's share under
 * expert parallelism. */
double sim_cost_pass_bytes(const sim_cost *c, double tokens);
/* Tokens of KV a decode instance can hold in HBM. */
int64_t sim_cost_decode_kv_tokens(const sim_cost *c);

/* The marginal GPU time of recomputing prompt tokens [pos, pos + len) as
 * the last len tokens of a prefill pass of pass_tokens new tokens (clamped
 * to [len, pos + len]): pass(P, s) − pass(P − len, s), s = pos + len − P,
 * pass being sim_cost_prefill_pass_s (measured table or analytic), never
 * below 0. Every cost mode prices a recomputed chunk so: as part of the
 * pass that computes it, not as a pass of its own (issue 32 item 1). */
double sim_cost_recompute_s(const sim_cost *c, double pos, double len, double pass_tokens);
/* The same inside a prefill that computes from token `from` in passes of
 * at most `budget` tokens (engine.max_num_batched_tokens): the pass is
 * min(budget, pos + len − from) tokens. */
double sim_cost_pass_recompute_s(const sim_cost *c, double pos, double len, double from, int budget);

/* LMCache §7.7: the context position from which loading a chunk of
 * chunk_tokens tokens (chunk_load_s, from its tier) beats recomputing it:
 * the smallest multiple p of chunk_tokens whose recompute inside a prefill
 * from token 0 in passes of `budget` tokens,
 * sim_cost_pass_recompute_s(p, chunk_tokens, 0, budget), exceeds
 * chunk_load_s; -1 when none below max_tokens. (The adaptive loader's
 * per-chunk rule alone, without co-running requests.) */
int64_t sim_cost_crossover_tokens(const sim_cost *c, int chunk_tokens, int budget, double chunk_load_s,
                                  int64_t max_tokens);

/* A whole prompt of `tokens` prefilled from nothing, alone, in passes of
 * at most `budget` tokens (the aggregated engine's token budget), each
 * pass sim_cost_chunk_s (its overheads included): what loading an entire
 * cached context of that length competes with (LMCache Fig. 12, `kvsim
 * plan crossover --whole-context`). */
double sim_cost_context_prefill_s(const sim_cost *c, int64_t tokens, int budget);

/* Mooncake Eq. 2: the smallest KV loading bandwidth B (bytes/s) at which
 * reusing a prefix of p tokens beats recomputing it on a node of G FLOP/s:
 *   B > G · 2ds / (gqa · (a·p·d + b·d²)),
 * 2ds / gqa being one layer's KV bytes per token: here
 * sim_model_kv_bytes_per_token / l, so that MLA and kv_dtype count. */
double sim_eq2_min_bandwidth(const sim_model *m, double G, double p);

#endif
