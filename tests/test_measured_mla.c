/* tests/test_measured_mla.c — multi-head latent attention and block-quantized
 * FP8 under cost.compute = measured (sim/cost/measured.c, docs/measured-mla.md):
 * one DeepSeek-V3 decode step and one prefill chunk on h200x8 priced as the
 * sum of the bundled table rows, read here by a second, simpler reader (zlib,
 * strtok and a linear interpolation between the two rows that bracket a
 * size); b200x8's whole-module rows, and its mixed passes projecting
 * once; a shape beyond the tables said, not
 * silent; h100x8 refused for its HBM; gb200x4, whose tables lack MLA, told
 * which bundled tables hold it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "sim/config/config.h"
#include "sim/cost/cost.h"
#include "sim/cost/measured.h"
#include "tests/optable_testutil.h"
#include "tests/testutil.h"

#define H200 "configs/optables/h200_sxm"
#define B200 "configs/optables/b200_sxm"

enum { MAX_PTS = 512 };

/* ---- a second reader: the rows of one curve, then a line between two ------- */

/* The (x, latency) points of DIR/FILE's rows whose named columns have the
 * given values ("col=value", NULL-ended); x = column xcol, plus column
 * xplus when given. Returns the number of points. */
static int curve_points(const char *dir, const char *file, const char *const *match, const char *xcol,
                        const char *xplus, double *xs, double *ys)
{
    return ot_scan(dir, file, match, xcol, xplus, xs, ys, MAX_PTS);
}

/* The curve at x: a measured point, or the line between the two that
 * bracket it (x inside the measured range only). */
static double at(const double *xs, const double *ys, int n, double x)
{
    double lo = -INFINITY, hi = INFINITY, ylo = 0, yhi = 0;
    for (int i = 0; i < n; i++) {
        if (xs[i] == x) return ys[i];
        if (xs[i] < x && xs[i] > lo) lo = xs[i], ylo = ys[i];
        if (xs[i] > x && xs[i] < hi) hi = xs[i], yhi = ys[i];
    }
    if (!isfinite(lo) || !isfinite(hi)) fail_msg("%g is outside the %d measured points", x, n);
    return ylo + (yhi - ylo) * (x - lo) / (hi - lo);
}

static double lookup(const char *dir, const char *file, const char *const *match, const char *xcol, const char *xplus,
                     double x)
{
    double xs[MAX_PTS], ys[MAX_PTS];
    int n = curve_points(dir, file, match, xcol, xplus, xs, ys);
    if (n == 0) fail_msg("%s/%s: no rows of %s=...", dir, file, match[0]);
    return at(xs, ys, n, x);
}

/* A GEMM (ms) of m x n x k on the tables in dir, n and k measured. */
static double gemm_in(const char *dir, const char *file, const char *dtype, double m, int n, int k)
{
    char d[48], nn[32], kk[32];
    snprintf(d, sizeof d, "gemm_dtype=%s", dtype), snprintf(nn, sizeof nn, "n=%d", n),
        snprintf(kk, sizeof kk, "k=%d", k);
    const char *match[] = {d, nn, kk, NULL};
    return lookup(dir, file, match, "m", NULL, m);
}

static double gemm_row(const char *file, const char *dtype, double m, int n, int k)
{
    return gemm_in(H200, file, dtype, m, n, k);
}

/* A block-quantized GEMM whose n (or k) lies between two measured ones:
 * linear in that size between them (docs/measured.md §2). */
static double block(double m, double n, double k, int n_lo, int n_hi, int k_lo, int k_hi)
{
    double wn = n_hi > n_lo ? (n - n_lo) / (n_hi - n_lo) : 0, wk = k_hi > k_lo ? (k - k_lo) / (k_hi - k_lo) : 0;
    double g = (1 - wn) * (1 - wk) * gemm_row("gemm_fp8_block.csv.gz", "fp8_block", m, n_lo, k_lo);
    if (wn > 0) g += wn * (1 - wk) * gemm_row("gemm_fp8_block.csv.gz", "fp8_block", m, n_hi, k_lo);
    if (wk > 0) g += (1 - wn) * wk * gemm_row("gemm_fp8_block.csv.gz", "fp8_block", m, n_lo, k_hi);
    return g;
}

/* vLLM's all-reduce on 8 GPUs (ms) of `elements`: the H100's rows, which
 * the h200 presets name (hardware.allreduce_optables, docs/measured.md §1). */
static double allreduce_row(bool graph, double elements)
{
    const char *match[] = {"num_gpus=8", graph ? "backend=vllm_graph" : "backend=vllm_eager", NULL};
    return lookup("configs/optables/h100_sxm", "custom_allreduce.csv.gz", match, "message_size", NULL, elements);
}

/* NCCL's all-gather on 8 GPUs (ms) of `elements` gathered half elements. */
static double all_gather_row(double elements)
{
    const char *match[] = {"op_name=all_gather", "nccl_dtype=half", "num_gpus=8", NULL};
    return lookup(H200, "nccl.csv.gz", match, "message_size", NULL, elements);
}

static double moe_row(double tokens)
{
    const char *match[] = {"moe_dtype=fp8_block",
                           "hidden_size=7168",
                           "inter_size=2048",
                           "topk=8",
                           "num_experts=256",
                           "moe_tp_size=8",
                           "moe_ep_size=1",
                           "distribution=power_law_1.2",
                           NULL};
    return lookup(H200, "moe_fp8_block.csv.gz", match, "num_tokens", NULL, tokens);
}

/* Memory ops as h200_sxm's meta.json states them: bytes / (4.8e12 × 0.8) + 3 µs. */
static double mem_s(double bytes) { return 3e-6 + bytes / (4800e9 * 0.8); }

static void load(sim_config *cfg, sim_cost *c, const char *hardware)
{
    char hw[64];
    snprintf(hw, sizeof hw, "hardware=%s", hardware);
    char *sets[] = {"model=deepseek-v3", hw, "cost.compute=measured", "cluster.mode=aggregated"};
    sim_err err = {0};
    if (sim_config_load(cfg, NULL, sets, 4, &err)) fail_msg("%s", err.msg);
    if (sim_cost_setup(c, cfg, &err)) fail_msg("%s", err.msg);
    assert_non_null(c->measured);
}

/* The GEMMs of one pass of m tokens, by operation, as DeepSeek-V3 runs them
 * on 8 GPUs (16 heads each): q_a + kv_a fused, n = 1536 + 512 + 64 = 2112
 * (between the measured 2048 and 2560); q_b, n = 16 · (128 + 64) = 3072
 * from k = 1536; o, n = 7168 from k = 16 · 128 = 2048; the 3 dense layers'
 * MLP, n = 2 · 18432 / 8 = 4608 and back from k = 2304 (both halfway); the
 * 58 MoE layers' shared expert, n = 2 · 2048 / 8 = 512 and back from 256. */
static void gemms(double m, double *qkv, double *o, double *mlp)
{
    *qkv = 61 * (block(m, 2112, 7168, 2048, 2560, 7168, 7168) + block(m, 3072, 1536, 3072, 3072, 1536, 1536));
    *o = 61 * block(m, 7168, 2048, 7168, 7168, 2048, 2048);
    *mlp = 3 * (block(m, 4608, 7168, 4096, 5120, 7168, 7168) + block(m, 7168, 2304, 7168, 7168, 2048, 2560)) +
           58 * (block(m, 512, 7168, 512, 512, 7168, 7168) + block(m, 7168, 256, 7168, 7168, 256, 256));
}

/* One layer's memory ops in bf16 (s = 2): two add-RMSNorms, SiLU-and-mul
 * of the dense MLP (i / 8 = 2304) or of the shared expert (256), the q_a
 * (1536) and kv_a (512) RMSNorms and RoPE on 16 query heads and the key
 * (64 each). */
static double elementwise(double m)
{
    double common =
        2 * mem_s(4 * m * 7168 * 2) + mem_s(2 * m * 1536 * 2) + mem_s(2 * m * 512 * 2) + mem_s(2 * m * 17 * 64 * 2);
    return 3 * (common + mem_s(3 * m * 2304 * 2)) + 58 * (common + mem_s(3 * m * 256 * 2));
}

/* Everything of a pass but attention: the router (a bf16 GEMM of 256
 * experts and its top-8 softmax) and the fused MoE in the 58 MoE layers,
 * two all-reduces a layer and the embedding's, the LM head (bf16, n =
 * 129280 / 8 = 16160, between 12288 and 16384) for `seqs` sequences, then
 * the all-gather of their seqs · 129280 bf16 logits and its copy (a read
 * and a write of them). */
static void rest(double m, double seqs, bool graph, sim_op_times *want)
{
    double qkv, o, mlp;
    gemms(m, &qkv, &o, &mlp);
    want->s[SIM_OP_QKV] = qkv * 1e-3, want->s[SIM_OP_O] = o * 1e-3, want->s[SIM_OP_MLP] = mlp * 1e-3;
    double router = gemm_row("gemm.csv.gz", "bfloat16", m, 256, 7168);
    want->s[SIM_OP_MOE] = 58 * (mem_s(m * (4.0 * 256 + 8.0 * 8)) + (router + moe_row(m)) * 1e-3);
    double ar = allreduce_row(graph, m * 7168) * 1e-3;
    want->s[SIM_OP_ALLREDUCE] = 61 * 2 * ar;
    want->s[SIM_OP_EMBED] = mem_s(2 * m * 7168 * 2) + ar;
    want->s[SIM_OP_ELEMENTWISE] = elementwise(m);
    double w = (16160.0 - 12288) / (16384 - 12288);
    double head = (1 - w) * gemm_row("gemm.csv.gz", "bfloat16", seqs, 12288, 7168) +
                  w * gemm_row("gemm.csv.gz", "bfloat16", seqs, 16384, 7168);
    double logits = seqs * 129280;
    want->s[SIM_OP_LM_HEAD] = mem_s(3 * seqs * 7168 * 2) + head * 1e-3;
    want->s[SIM_OP_LOGITS_GATHER] = all_gather_row(logits) * 1e-3 + mem_s(2 * logits * 2);
}

static void expect_ops(const sim_op_times *got, const sim_op_times *want)
{
    double total = 0;
    for (int i = 0; i < SIM_OP_N; i++) {
        if (fabs(got->s[i] - want->s[i]) > 1e-12 * fmax(1, want->s[i]))
            fail_msg("%s: %.9g s, want %.9g s", sim_op_names[i], got->s[i], want->s[i]);
        total += want->s[i];
    }
    assert_double_equal(got->total_s, total, 1e-12);
}

/* A decode step of 32 sequences of 1023 cached tokens on h200x8: the
 * generation MLA row of 16 heads at TP 8, batch 32, isl 1 + step 1023,
 * per layer; a pass of 32 tokens runs inside a CUDA graph. */
static void test_decode_is_the_sum_of_rows(void **state)
{
    sim_config cfg;
    sim_cost c;
    load(&cfg, &c, "h200x8");
    const char *mla[] = {"mla_dtype=bfloat16", "kv_cache_dtype=bfloat16", "num_heads=16",
                         "tp_size=8",          "batch_size=32",           NULL};
    sim_op_times want, got;
    memset(&want, 0, sizeof want);
    rest(32, 32, true, &want);
    want.s[SIM_OP_ATTN_GEN] = 61 * lookup(H200, "generation_mla.csv.gz", mla, "isl", "step", 1024) * 1e-3;
    assert_true(sim_cost_decode_ops(&c, 32, 32 * 1023, &got));
    expect_ops(&got, &want);
    sim_config_free(&cfg);
}

/* A prefill chunk of 1024 tokens after none: the context MLA row (batch 1,
 * isl 1024), GEMMs and the MoE at m = 1024, eager all-reduces (above the
 * CUDA-graph limit), the LM head for the one sequence. After 1024 cached
 * tokens the attention is T(2048) − T(1024), the rule of docs/measured.md
 * §2, where that is more than T(1024). */
static void test_prefill_chunk_is_the_sum_of_rows(void **state)
{
    sim_config cfg;
    sim_cost c;
    load(&cfg, &c, "h200x8");
    const char *mla[] = {
        "mla_dtype=bfloat16", "kv_cache_dtype=bfloat16", "num_heads=16", "tp_size=8", "batch_size=1", NULL};
    double t1 = lookup(H200, "context_mla.csv.gz", mla, "isl", NULL, 1024);
    double t2 = lookup(H200, "context_mla.csv.gz", mla, "isl", NULL, 2048);
    sim_op_times want, got;
    memset(&want, 0, sizeof want);
    rest(1024, 1, false, &want);
    want.s[SIM_OP_ATTN_CTX] = 61 * t1 * 1e-3;
    assert_true(sim_cost_prefill_ops(&c, 1024, 0, &got));
    expect_ops(&got, &want);
    assert_true(sim_cost_prefill_ops(&c, 2048, 1024, &got));
    assert_double_equal(got.s[SIM_OP_ATTN_CTX], 61 * fmax(t1, t2 - t1) * 1e-3, 1e-15);
    sim_config_free(&cfg);
}

/* On b200x8 the MLA rows are the whole module (projections included, the
 * fp8_block GEMMs'): attention is the module's row, and no projection is
 * priced beside it. Generation: isl 1 + step 1024. */
static void test_b200_module_rows(void **state)
{
    sim_config cfg;
    sim_cost c;
    load(&cfg, &c, "b200x8");
    const char *mod[] = {"mla_dtype=bfloat16", "kv_cache_dtype=bfloat16", "gemm_type=fp8_block",
                         "num_heads=16",       "batch_size=32",           NULL};
    double row = lookup(B200, "mla_generation_module.csv.gz", mod, "isl", "step", 1025);
    sim_op_times got;
    assert_true(sim_cost_decode_ops(&c, 32, 32 * 1024, &got));
    assert_double_equal(got.s[SIM_OP_ATTN_GEN], 61 * row * 1e-3, 1e-15);
    assert_double_equal(got.s[SIM_OP_QKV], 0, 0);
    assert_double_equal(got.s[SIM_OP_O], 0, 0);
    sim_config_free(&cfg);
}

/* MLA's projections of one layer at m tokens on b200_sxm (ms): q_a + kv_a,
 * n = 2112 between the measured 2048 and 2560; q_b, n = 3072 from k =
 * 1536; o, n = 7168 from k = 2048. */
static double b200_proj(double m)
{
    const char *f = "gemm_fp8_block.csv.gz", *t = "fp8_block";
    double w = (2112.0 - 2048) / (2560 - 2048);
    return (1 - w) * gemm_in(B200, f, t, m, 2048, 7168) + w * gemm_in(B200, f, t, m, 2560, 7168) +
           gemm_in(B200, f, t, m, 3072, 1536) + gemm_in(B200, f, t, m, 7168, 2048);
}

/* A pass that prefills 1024 new tokens and decodes 32 sequences of 1024
 * tokens on b200x8: vLLM projects all 1056 tokens at once, where the two
 * module rows each hold their own projections. The prefill's module grows
 * by the projections of 1056 tokens less those of 1024, and the decodes'
 * loses those of 32 (the GEMM rows; m = 1056 between 1024 and 1280). */
static void test_b200_mixed_pass_projects_once(void **state)
{
    sim_config cfg;
    sim_cost c;
    load(&cfg, &c, "b200x8");
    const char *gen[] = {"mla_dtype=bfloat16", "kv_cache_dtype=bfloat16", "gemm_type=fp8_block",
                         "num_heads=16",       "batch_size=32",           NULL};
    const char *ctx[] = {
        "mla_dtype=bfloat16", "kv_cache_dtype=bfloat16", "gemm_type=fp8_block", "num_heads=16", "batch_size=1", NULL};
    double gen_row = lookup(B200, "mla_generation_module.csv.gz", gen, "isl", "step", 1025);
    double ctx_row = lookup(B200, "mla_context_module.csv.gz", ctx, "isl", NULL, 1024);
    sim_pass_shape p = {.chunks = 1, .chunk_tokens = 1024, .decodes = 32, .decode_ctx = 1024};
    sim_op_times got;
    sim_measured_pass(c.measured, &p, &got);
    assert_double_equal(got.s[SIM_OP_ATTN_CTX], 61 * (ctx_row + b200_proj(1056) - b200_proj(1024)) * 1e-3, 1e-12);
    assert_double_equal(got.s[SIM_OP_ATTN_GEN], 61 * (gen_row - b200_proj(32)) * 1e-3, 1e-12);
    assert_true(got.s[SIM_OP_ATTN_GEN] > 0);
    /* a decode step alone keeps its module row whole (test_b200_module_rows) */
    sim_config_free(&cfg);
}

/* A context beyond the tables' 131,072 tokens is the largest measured in
 * proportion to the context (no batch reaches it) and said: on stderr as
 * `warning: not measured` and in the run's caveats. */
static void test_out_of_grid_said(void **state)
{
    cli_result r = tu_kvsim("cost --set model=deepseek-v3 --set hardware=h200x8 --set cluster.mode=aggregated "
                            "--batch 4 --context 200000");
    if (r.status != 0 ||
        !strstr(r.err, "warning: not measured: generation MLA batch=4 context=200001 heads=16: context outside "
                       "the measured on h200_sxm, the largest measured scaled in proportion to the context"))
        fail_msg("exit %d, stderr '%s'", r.status, r.err);
    tu_free(&r);
    sim_config cfg;
    sim_cost c;
    load(&cfg, &c, "h200x8");
    sim_op_times got;
    assert_true(sim_cost_decode_ops(&c, 4, 4 * 200000, &got));
    json_t *caveats = sim_measured_caveats();
    size_t i;
    json_t *v;
    bool found = false;
    json_array_foreach(caveats, i, v) found |=
        strstr(json_string_value(json_object_get(v, "text")), "generation MLA batch=4 context=200001") != NULL;
    assert_true(found);
    json_decref(caveats);
    sim_config_free(&cfg);
}

/* Eight H100s hold 640 GB: DeepSeek-V3's 671 GB of FP8 weights do not fit,
 * and a run says so and exits 2; explicitly measured, the h100_sxm tables
 * (no fp8_block rows bundled) are refused naming them. */
static void test_h100_refused(void **state)
{
    tu_expect_exit("run --trace traces/default.jsonl --set model=deepseek-v3 --set hardware=h100x8 "
                   "--set cluster.mode=aggregated",
                   2, "model 'deepseek-v3' (671 GB of weights) does not fit in hardware 'h100x8' (640 GB HBM");
    tu_expect_exit("cost --set model=deepseek-v3 --set hardware=h100x8 --set cost.compute=measured", 2,
                   "the measured tables (h100_sxm) have no fp8_block GEMMs");
}

/* Tables that lack a shape the model needs name the nearest bundled ones
 * (by HBM and link) that hold it, and how to price from them scaled: gb200
 * has no MLA rows, b200_sxm (Blackwell, same NVLink) has; the line it
 * gives prices the model, saying it is transferred. */
static void test_donor_suggested(void **state)
{
    const char *hint = "; or price it from the nearest tables that hold it, scaled to this GPU (docs/hardware.md "
                       "§6): --set hardware.optables='\"configs/optables/b200_sxm\"' --set "
                       "hardware.optables_transfer=true";
    tu_expect_exit("cost --set model=deepseek-v3 --set hardware=gb200x4 --set cost.compute=measured", 2, hint);
    sim_config cfg;
    sim_cost c;
    char *sets[] = {"model=deepseek-v3",
                    "hardware=gb200x4",
                    "cost.compute=measured",
                    "cluster.mode=aggregated",
                    "hardware.optables=\"configs/optables/b200_sxm\"",
                    "hardware.optables_transfer=true"};
    sim_err err = {0};
    if (sim_config_load(&cfg, NULL, sets, 6, &err)) fail_msg("%s", err.msg);
    if (sim_cost_setup(&c, &cfg, &err)) fail_msg("%s", err.msg);
    assert_non_null(c.measured);
    sim_config_free(&cfg);
    tu_expect_exit(
        "cost --set model=deepseek-v3 --set hardware=gb200x4 --set hardware.optables="
        "'\"configs/optables/b200_sxm\"' --set hardware.optables_transfer=true --set cluster.mode=aggregated",
        0, "priced from another GPU's measured tables (configs/optables/b200_sxm)");
}

/* Qwen3-30B-A3B's experts at TP 8 are in no table (AIConfigurator
 * measures them at TP 1 to 4 and EP 2 to 128): the refusal names the
 * expert-parallel deployment those tables do measure, and that --set
 * prices it from them; DeepSeek-V3 on gb200 lacks MLA, which no expert
 * split mends, so its refusal does not say it. */
static void test_expert_parallel_suggested(void **state)
{
    const char *hint = "; or split the experts across the 8 GPUs, as these tables measure them (vLLM's "
                       "--enable-expert-parallel): --set cost.expert_parallel=true";
    tu_expect_exit("cost --set model=qwen3-30b-a3b --set hardware=h100x8 --set cost.compute=measured", 2, hint);
    tu_expect_ok_without("cost --set model=qwen3-30b-a3b --set hardware=h100x8 --set cost.compute=measured --set "
                         "cost.expert_parallel=true --batch 32 --context 1000",
                         NULL, "not measured");
    cli_result r = tu_kvsim("cost --set model=deepseek-v3 --set hardware=gb200x4 --set cost.compute=measured");
    assert_int_equal(r.status, 2);
    assert_null(strstr(r.err, "split the experts"));
    tu_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_is_the_sum_of_rows), cmocka_unit_test(test_prefill_chunk_is_the_sum_of_rows),
        cmocka_unit_test(test_b200_module_rows),          cmocka_unit_test(test_b200_mixed_pass_projects_once),
        cmocka_unit_test(test_out_of_grid_said),          cmocka_unit_test(test_h100_refused),
        cmocka_unit_test(test_donor_suggested),           cmocka_unit_test(test_expert_parallel_suggested),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
