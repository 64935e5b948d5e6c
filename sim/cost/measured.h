/* sim/cost/measured.h — an iteration priced from measured per-operation
 * latencies (cost.compute = measured; docs/measured.md §1).
 *
 * One forward pass of a vLLM-style engine over m tokens (decode tokens and
 * prefill chunks together, as vLLM's scheduler batches them), on one
 * tensor-parallel instance of tp GPUs, is the sum of:
 *
 *   embed    the input embedding gather (a memory op) and, under TP, the
 *            vocab-parallel embedding's all-reduce of m·d
 *   per layer, × l:
 *     qkv      GEMM m × (h + 2·h_kv)·e/tp × d
 *     attn     context attention of the prefill chunks given their prefix,
 *              generation attention of the decode sequences given their
 *              context (heads per GPU h/tp, KV heads max(1, h_kv/tp))
 *     o        GEMM m × d × h·e/tp
 *     mlp      dense: GEMM m × 2·i/tp × d and m × d × i/tp; MoE layers:
 *              the router GEMM m × E × d and its top-k softmax (a memory
 *              op), vLLM's fused MoE over m tokens
 *              (top-k of E experts, TP or EP), and shared experts as dense
 *     allreduce  two per layer of m·d elements (custom all-reduce; inside a
 *              CUDA graph when m ≤ the capture limit)
 *     elementwise  two fused add-RMSNorms, RoPE, the KV-cache write and
 *              (dense) SiLU-and-mul, each a memory op: bytes over the
 *              system's effective bandwidth plus its constant latency
 *   lm_head  the final norm and GEMM seqs × V/tp × d, seqs = the sequences
 *            that sample a token this pass
 *   logits_gather  under TP, NCCL's all-gather of their seqs · V logits to
 *            every GPU and its reshaping copy
 *
 * A model with multi-head latent attention (DeepSeek-V3) takes MLA's
 * tables for attn, and for qkv and o its projections (q_a + kv_a, q_b; o)
 * or nothing where the tables time the whole attention module; weights
 * quantized in FP8 blocks take the fp8_block rows, the router and LM head
 * bf16 ones (docs/measured-mla.md).
 *
 * The CPU's share (scheduling, input preparation, sampling, detokenizing)
 * is not in the tables: engine.measured.* constants fitted on real runs. */
#ifndef SIM_MEASURED_H
#define SIM_MEASURED_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "sim/config/config.h"
#include "sim/cost/optable.h"

enum {
    SIM_OP_EMBED,
    SIM_OP_QKV,
    SIM_OP_ATTN_CTX,
    SIM_OP_ATTN_GEN,
    SIM_OP_O,
    SIM_OP_MLP,
    SIM_OP_MOE,
    SIM_OP_ALLREDUCE,
    SIM_OP_ELEMENTWISE,
    SIM_OP_LM_HEAD,
    SIM_OP_LOGITS_GATHER,
    SIM_OP_N
};
/* The operations' names in output, by SIM_OP_*. */
extern const char *const sim_op_names[SIM_OP_N];

/* What one forward pass computes. */
typedef struct sim_pass_shape {
    double decodes;      /* decode sequences (one token each) */
    double decode_ctx;   /* their mean context, tokens */
    double chunks;       /* prefill chunks */
    double chunk_tokens; /* new tokens of all chunks */
    double chunk_cached; /* the tokens before a chunk, token-weighted mean */
} sim_pass_shape;

typedef struct sim_op_times {
    double s[SIM_OP_N]; /* seconds per operation, summed over layers */
    double total_s;
} sim_op_times;

typedef struct sim_measured sim_measured;

/* The measured pricing of cfg's model on hw (tp = hw->tp GPUs), its tables
 * loaded from hw->optables once per process and shared. NULL with err set
 * when the tables cannot price the model (a shape they lack entirely, an
 * MLA shape other than DeepSeek-V3's, pipeline parallelism). MLA and
 * fp8_block weights: docs/measured-mla.md. */
sim_measured *sim_measured_get(const sim_config *cfg, const sim_hw *hw, sim_err *err);
/* After sim_measured_get failed: when hw's own tables load but lack a
 * shape of the model, append to err the nearest other bundled tables
 * that hold them all and the --set that price the run from them scaled
 * (measured_donor.c); nothing otherwise. Loads the candidates' tables. */
void sim_measured_suggest(const sim_config *cfg, const sim_hw *hw, sim_err *err);
/* One pass's GPU time by operation. */
void sim_measured_pass(sim_measured *m, const sim_pass_shape *p, sim_op_times *out);
double sim_measured_pass_s(sim_measured *m, const sim_pass_shape *p);
const sim_optable *sim_measured_tables(const sim_measured *m);
/* Whether this pricing sends an fp16 model's all-reduces of [lo, hi] bytes
 * to NCCL's rows, as vLLM's dispatch does on 6 or 8 Hopper GPUs (its
 * symmetric-memory path takes bf16 only; docs/measured.md §1). */
bool sim_measured_fp16_nccl(const sim_measured *m, double *lo_bytes, double *hi_bytes);
/* Every family of m's tables loaded, the model's or not (kvsim cost
 * counts the points of them all). */
int sim_measured_load_all(sim_measured *m, sim_err *err);
/* While quiet, shapes outside the tables are priced as always but not
 * noted: a probe of the cost model that prices no request of the run (the
 * conductor's prefill estimator, sim/cost/estimator.c) leaves no caveat. */
void sim_measured_quiet(sim_measured *m, bool quiet);
/* vLLM's fused-MoE Triton kernel (docs/measured.md §4): the variant a pass
 * of `tokens` tokens compiles, as a bit of a 64-bit set — the tuned
 * config vLLM picks (that of the key of its config file nearest to the
 * token count, one config for keys whose configs are identical, or its
 * default config where it has no file: sim/cost/moe_configs.c) times the
 * ways Triton specializes the kernel's
 * integer arguments EM and num_valid_tokens on divisibility by 16 (three
 * for top-2 of 8 experts: tokens ≡ 0, ≡ 4, or otherwise mod 8; two for
 * top-8 of a multiple of 16: tokens even or odd). 0 for a dense model. */
uint64_t sim_measured_moe_variant(const sim_measured *m, double tokens);
/* The variants vLLM compiles before serving: every CUDA-graph capture size
 * up to graph_max (1, 2, 4, then multiples of 8) and the profiling pass of
 * budget tokens. */
uint64_t sim_measured_moe_warm(const sim_measured *m, int graph_max, int budget);
/* Every note of the tables this process has loaded (shapes looked up
 * outside their grid) and every reason auto could not use them
 * (sim_measured_fallback), as the summary's caveats: [{"name":
 * "not_measured", "text"}]; an empty array when there are none. */
json_t *sim_measured_caveats(void);
/* Forget them: a replay begins, and its caveats are its own (the tables
 * stay loaded across the runs of one process: kvsim validate, check);
 * the per-count price caches are emptied, so that its lookups note again. */
void sim_measured_reset_notes(void);
/* Record why auto fell back from the tables, as the caveat's sentence
 * (once per distinct text). */
void sim_measured_fallback(const char *why);
/* The tables' notes (shapes outside the grid) so far. */
const char *const *sim_measured_notes(const sim_measured *m, int *n);

#endif
