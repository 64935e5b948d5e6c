/* sim/cost/optable.h — measured per-operation latencies of a serving engine
 * on one GPU system (configs/optables/SYSTEM/, docs/measured.md): GEMMs,
 * context (prefill) and generation (decode) attention, fused MoE, MLA
 * (docs/measured-mla.md) and all-reduce, as NVIDIA's AIConfigurator
 * collector measured them for vLLM.
 *
 * A table is a set of 1-D curves: every measured row belongs to a curve
 * named by its non-interpolated columns (dtype, n and k of a GEMM; heads,
 * KV heads, head size and batch of an attention kernel; the MoE shape) and
 * gives one point (x, latency) along its interpolated column (m, the
 * sequence length, the token count, the message size).
 *
 * Interpolation rule (docs/measured.md §2): piecewise linear along each
 * axis between measured points — multilinear across the curves that
 * bracket the query in n and k (GEMM) or batch (attention). Each op's time
 * is close to linear in each of these sizes between neighbouring grid
 * points (a GEMM's work is m·n·k, its weight bytes n·k; an attention
 * kernel's work grows with the batch). Beyond the largest measured size the
 * last segment is extended (linear extrapolation); below the smallest, the
 * smallest measurement is taken (an op does not get faster than its
 * smallest measured launch). Both count as "not measured": each lookup
 * outside the grid is recorded (sim_optable_notes) so the run says so. */
#ifndef SIM_OPTABLE_H
#define SIM_OPTABLE_H

#include <stdbool.h>

#include "sim/util.h"

typedef struct sim_optable sim_optable;

/* Load the tables of one system from dir (meta.json and its CSVs, plain or
 * gzip), dropping each curve's isolated glitches: a point more than
 * glitch_ratio times above both of its neighbours, or below both by that
 * factor (sim/cost/optable_glitch.c; 0 keeps every point). Errors name the
 * file, line and column. */
int sim_optable_load(const char *dir, double glitch_ratio, sim_optable **out, sim_err *err);
/* The optional families of tables: sim_optable_load reads the GEMM,
 * attention and collective tables every model is priced with; a model with
 * fused MoE or MLA has those read by sim_optable_need before its first
 * lookup (a lookup in a family not loaded aborts: a caller's bug). Errors
 * as sim_optable_load's; a family already loaded is not read again. */
enum { SIM_OPT_MOE = 1, SIM_OPT_MLA = 2 };
int sim_optable_need(sim_optable *t, unsigned families, sim_err *err);
/* How many measured points the tables loaded so far hold, and how many of
 * them were dropped as glitches. */
void sim_optable_glitches(const sim_optable *t, long *dropped, long *points);
double sim_optable_glitch_ratio(const sim_optable *t);
void sim_optable_free(sim_optable *t);

/* meta.json's system name and engine ("vLLM 0.14.0"). */
const char *sim_optable_system(const sim_optable *t);
const char *sim_optable_engine(const sim_optable *t);
/* meta.json's device, as torch.cuda.get_device_name() names it ("NVIDIA
 * H100 80GB HBM3"); "" when the file has none. */
const char *sim_optable_device(const sim_optable *t);
/* How many of the loaded tables were read from the cache of parsed tables
 * ($KVSIM_CACHE_DIR, else $XDG_CACHE_HOME/kvsim or ~/.cache/kvsim; set
 * empty: off) rather than parsed from their CSVs: the same curves. */
int sim_optable_cached(const sim_optable *t);
/* Memory-bound elementwise ops, priced as AIConfigurator's system file
 * states them: bytes / (mem_bw × mem_bw_empirical_scaling_factor) +
 * mem_empirical_constant_latency (seconds). */
double sim_optable_mem_s(const sim_optable *t, double bytes);
/* The GPU the tables were measured on, per GPU as its system file states
 * it (meta.json): HBM bandwidth (gpu.mem_bw) and bf16 tensor FLOP/s
 * (gpu.bfloat16_tc_flops) at their datasheet peaks, the fixed latency of a
 * memory op (gpu.mem_empirical_constant_latency), the link to the other
 * GPUs of its node per direction (node.intra_node_bw) and its latency
 * (node.p2p_latency). What scales the tables to another GPU's roofline
 * (hardware.optables_transfer, sim/cost/measured.c). */
typedef struct sim_gpu_roof {
    double mem_Bps, flops, mem_lat_s, link_Bps, link_lat_s;
} sim_gpu_roof;
void sim_optable_roof(const sim_optable *t, sim_gpu_roof *out);

/* Lookups, in milliseconds. dtype is the tables' name ("bfloat16", "fp8").
 * Each returns a negative value when the table has no curve of that shape
 * at all (the caller decides: another dtype, or an error naming it). */
double sim_optable_gemm_ms(sim_optable *t, const char *dtype, double m, double n, double k);
/* The largest m every GEMM curve of dtype's table (fp8_block rows are a
 * table of their own) measures and the largest n measured (0 when there is
 * no such table): a GEMM beyond them is priced as measured
 * pieces (sim/cost/measured.c). */
void sim_optable_gemm_limits(const sim_optable *t, const char *dtype, double *max_m, double *max_n);
/* Prefill attention of `batch` sequences of `isl` new tokens each, after
 * none cached, per GPU: heads and kv_heads already divided by the TP. */
double sim_optable_ctx_attn_ms(sim_optable *t, const char *kv_dtype, int heads, int kv_heads, int head_dim,
                               double batch, double isl);
/* Decode attention of `batch` sequences of kv_len context tokens each. */
double sim_optable_gen_attn_ms(sim_optable *t, const char *kv_dtype, int heads, int kv_heads, int head_dim,
                               double batch, double kv_len);
/* vLLM's fused MoE over `tokens` tokens: hidden, the expert intermediate
 * (whole, not divided by TP), top-k, experts, MoE TP and EP sizes, and the
 * token distribution ("balanced", "power_law_1.01", "power_law_1.2"). */
double sim_optable_moe_ms(sim_optable *t, const char *dtype, int hidden, int inter, int topk, int experts, int tp,
                          int ep, const char *dist, double tokens);
/* Multi-head latent attention, per GPU, one layer (docs/measured-mla.md):
 * prefill of `batch` sequences of x new tokens after none cached
 * (context), or decode of `batch` sequences at x tokens of context
 * (generation). module = the whole attention module as vLLM 0.19.0's
 * tables measure it (projections, norms, RoPE, attention, output
 * projection; gemm names their quantization: "fp8_block", "bfloat16"),
 * else the attention backend alone (vLLM 0.14.0: the KV-cache write, the
 * prefill's kv_b up-projection or the decode's absorbed W_UK / W_UV
 * products, and the attention kernel). heads per GPU; tp = the TP degree
 * the backend table was measured at. */
typedef struct sim_mla_query {
    bool context, module;
    const char *kv_dtype, *gemm;
    int heads, tp;
} sim_mla_query;
double sim_optable_mla_ms(sim_optable *t, const sim_mla_query *q, double batch, double x);
/* vLLM's custom all-reduce of `elements` bf16 elements across gpus GPUs;
 * graph = captured in a CUDA graph (decode) or eager. */
double sim_optable_allreduce_ms(sim_optable *t, int gpus, bool graph, double elements);
/* NCCL collectives ("all_reduce", "all_gather", "reduce_scatter",
 * "alltoall") of `elements` half elements across gpus GPUs (for
 * all_gather, the gathered output's: AIConfigurator's message_size); a
 * system without NCCL rows is priced by its link's roofline, noted; <0
 * when it states no link either. */
double sim_optable_nccl_ms(sim_optable *t, const char *op, int gpus, double elements);

/* What was looked up outside the measured grid, one line per kind of
 * shape ("gemm m=12000 n=6144 k=4096 (bfloat16): m beyond the largest
 * measured 8192, extrapolated linearly"), in first-seen order; *n set. */
const char *const *sim_optable_notes(const sim_optable *t, int *n);
/* Forget the notes (a new run begins: it says what it priced itself). */
void sim_optable_clear_notes(sim_optable *t);
/* Whether note i says a lookup was priced across a dropped glitch (else it
 * left the grid). */
bool sim_optable_note_is_glitch(const sim_optable *t, int i);
/* While quiet, lookups outside the grid are not recorded (a caller's probe
 * of whether a shape family exists at all). */
void sim_optable_quiet(sim_optable *t, bool quiet);

#endif
