/* tests/test_measured.c — cost.compute = measured (sim/cost/measured.c):
 * one iteration's cost on the bundled H100 tables equals the sum of the
 * table rows it is made of, read here by a second, simpler reader (zlib
 * and sscanf over the CSV); interpolation and extrapolation checked by hand
 * on a small table; shapes outside the grid recorded as notes; errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "sim/config/config.h"
#include "sim/cost/cost.h"
#include "sim/cost/measured.h"
#include "sim/cost/measured_int.h"
#include "sim/cost/optable.h"
#include "tests/optable_testutil.h"
#include "tests/testutil.h"

#define H100 "configs/optables/h100_sxm"

/* ---- a second reader: the latency of the first row whose columns match ---- */

/* The latency (ms) of the first row of DIR/FILE whose named columns have
 * the given values ("col=value" pairs, NULL-ended); -1 when none. */
static double row_latency(const char *file, const char *const *match)
{
    double y;
    return ot_scan(H100, file, match, NULL, NULL, NULL, &y, 1) ? y : -1;
}

static double gemm_row(const char *m, const char *n, const char *k)
{
    char mm[32], nn[32], kk[32];
    snprintf(mm, sizeof mm, "m=%s", m), snprintf(nn, sizeof nn, "n=%s", n), snprintf(kk, sizeof kk, "k=%s", k);
    const char *match[] = {"gemm_dtype=bfloat16", mm, nn, kk, NULL};
    double v = row_latency("gemm.csv.gz", match);
    if (v < 0) fail_msg("no gemm row m=%s n=%s k=%s", m, n, k);
    return v;
}

/* A dense model whose every GEMM is on the H100 grid: d 4096, 32 heads and
 * 8 KV heads of 128 (qkv n = 6144), intermediate 8192 (gate+up n = 16384),
 * vocabulary 65536; two layers. */
#define GRID_MODEL                                                                                                     \
    "model={\"name\":\"grid\",\"layers\":2,\"hidden\":4096,\"heads\":32,\"kv_heads\":8,\"head_dim\":128,"              \
    "\"intermediate\":8192,\"vocab\":65536,\"tied_embeddings\":false,\"dtype_bytes\":2}"

/* A config of n --set lines over the defaults, and its cost model. */
static void setup(char **sets, int n, sim_config *cfg, sim_cost *c)
{
    sim_err err = {0};
    if (sim_config_load(cfg, NULL, sets, n, &err) || sim_cost_setup(c, cfg, &err)) fail_msg("%s", err.msg);
}

static void load_grid(sim_config *cfg, sim_cost *c)
{
    char *sets[] = {GRID_MODEL, "hardware=h100x1", "hardware.optables=" H100, "cost.compute=measured",
                    "cluster.mode=aggregated"};
    setup(sets, 5, cfg, c);
    assert_non_null(c->measured);
}

/* Memory ops as meta.json states them: bytes / (3.35e12 × 0.8) + 3 µs. */
static double mem_s(double bytes) { return 3e-6 + bytes / (3350e9 * 0.8); }

/* The generation-attention row of the grid model's decode step below. */
static const char *GEN_32x1023[] = {"attn_dtype=bfloat16",
                                    "kv_cache_dtype=bfloat16",
                                    "batch_size=32",
                                    "num_heads=32",
                                    "num_key_value_heads=8",
                                    "head_dim=128",
                                    "step=1023",
                                    NULL};

/* A decode step of 32 sequences holding 1023 tokens each (context 1024
 * with the new token: generation attention's isl 1 + step 1023). */
static void test_decode_is_the_sum_of_rows(void **state)
{
    sim_config cfg;
    sim_cost c;
    load_grid(&cfg, &c);
    double L = 2, m = 32, d = 4096, s = 2;
    double gen = row_latency("generation_attention.csv.gz", GEN_32x1023);
    assert_true(gen > 0);
    double gemms = gemm_row("32", "6144", "4096") + gemm_row("32", "4096", "4096") + gemm_row("32", "16384", "4096") +
                   gemm_row("32", "4096", "8192");
    double elem = 2 * mem_s(4 * m * d * s) + mem_s(2 * m * (32 + 8) * 128 * s) + mem_s(2 * m * 8 * 128 * (s + s)) +
                  mem_s(3 * m * 8192 * s);
    double want = L * (gemms + gen) * 1e-3 + L * elem + mem_s(2 * m * d * s) /* embedding */ + mem_s(3 * m * d * s) +
                  gemm_row("32", "65536", "4096") * 1e-3 /* final norm + LM head */;
    sim_op_times t;
    assert_true(sim_cost_decode_ops(&c, 32, 32 * 1023, &t));
    assert_double_equal(t.total_s, want, 1e-12);
    assert_double_equal(t.s[SIM_OP_ATTN_GEN], L * gen * 1e-3, 1e-15);
    assert_double_equal(t.s[SIM_OP_ALLREDUCE], 0, 0); /* one GPU */
    /* the iteration adds the CPU constants of engine.measured.* */
    sim_decode_terms d_terms = sim_cost_decode_terms(&c, 32, 32 * 1023);
    assert_double_equal(d_terms.total_s, want + cfg.m_iter_overhead_s + 32 * cfg.m_seq_overhead_s, 1e-12);
    sim_config_free(&cfg);
}

/* The all-reduce row of a tables folder: 8 GPUs, CUDA graphs, m elements. */
static double ar_row(const char *dir, const char *elements)
{
    char size[48];
    snprintf(size, sizeof size, "message_size=%s", elements);
    const char *match[] = {"num_gpus=8", "backend=vllm_graph", size, NULL};
    double y;
    if (!ot_scan(dir, "custom_allreduce.csv.gz", match, NULL, NULL, NULL, &y, 1)) fail_msg("no all-reduce %s", size);
    return y;
}

/* hardware.allreduce_optables: the grid model's decode step of 32 on eight
 * GPUs, whose two all-reduces a layer (32 x 4096 = 131,072 elements) are
 * the named folder's row, the rest of the step the H100's as before; the
 * h200 presets name the H100's rows (the same NVLink and NVSwitch), so
 * h200x8 and h100x8 price a Llama-3-70B step's all-reduces alike. */
static void test_allreduce_tables_by_hand(void **state)
{
    (void)state;
    sim_config cfg[2];
    sim_cost c[2];
    sim_op_times t[2];
    char *sets[] = {GRID_MODEL,
                    "hardware=h100x8",
                    "hardware.optables=" H100,
                    "cost.compute=measured",
                    "cluster.mode=aggregated",
                    "hardware.allreduce_optables=configs/optables/h200_sxm"};
    for (int i = 0; i < 2; i++) {
        setup(sets, 5 + i, &cfg[i], &c[i]);
        assert_int_equal(c[i].measured->key.tp, 8);
        assert_true(sim_cost_decode_ops(&c[i], 32, 32 * 1023, &t[i]));
    }
    double own = ar_row(H100, "131072"), other = ar_row("configs/optables/h200_sxm", "131072");
    assert_true(other > 1.2 * own); /* the rows differ: the test tells them apart */
    assert_double_equal(t[0].s[SIM_OP_ALLREDUCE], 2 * 2 * own * 1e-3, 1e-15);
    assert_double_equal(t[1].s[SIM_OP_ALLREDUCE], 2 * 2 * other * 1e-3, 1e-15);
    /* the embedding's one all-reduce too; nothing else moves */
    assert_double_equal(t[1].s[SIM_OP_EMBED] - t[0].s[SIM_OP_EMBED], (other - own) * 1e-3, 1e-15);
    assert_double_equal(t[1].total_s - t[0].total_s, 5 * (other - own) * 1e-3, 1e-14);
    for (int i = 0; i < 2; i++) sim_config_free(&cfg[i]);
    char *presets[2][2] = {{"model=llama3-70b", "hardware=h100x8"}, {"model=llama3-70b", "hardware=h200x8"}};
    for (int i = 0; i < 2; i++) {
        setup(presets[i], 2, &cfg[i], &c[i]);
        assert_true(sim_cost_decode_ops(&c[i], 64, 64 * 2000, &t[i]));
    }
    assert_double_equal(t[1].s[SIM_OP_ALLREDUCE], t[0].s[SIM_OP_ALLREDUCE], 0);
    assert_true(t[1].s[SIM_OP_ATTN_GEN] != t[0].s[SIM_OP_ATTN_GEN]); /* the rest is the H200's own */
    for (int i = 0; i < 2; i++) sim_config_free(&cfg[i]);
    tu_expect_exit("cost --set hardware=h800x8 --set hardware.allreduce_optables=configs/optables/h100_sxm", 2,
                   "config key 'hardware.allreduce_optables': needs hardware.optables");
    tu_expect_exit("cost --set hardware=h200x8 --set hardware.allreduce_optables=configs/optables/none --set "
                   "cost.compute=measured",
                   2, "configs/optables/none/meta.json");
}

/* An fp16 model on eight Hopper GPUs (model.torch_dtype): vLLM's symmetric
 * memory takes bf16 only, so the all-reduces from 256 KiB up that it would
 * serve go to NCCL (measured.c, fp16_to_nccl): the grid model's decode
 * step of 32 (131,072 elements, 256 KiB) prices them from the NCCL rows;
 * 16 sequences (128 KiB) stay on the custom kernel's rows, as does bf16,
 * and so does four GPUs' (whose custom kernel keeps 32 MiB). */
static void test_fp16_allreduce_by_hand(void **state)
{
    (void)state;
    const char *match[] = {"op_name=all_reduce", "nccl_dtype=half", "num_gpus=8", "message_size=131072", NULL};
    double nccl;
    if (!ot_scan(H100, "nccl.csv.gz", match, NULL, NULL, NULL, &nccl, 1)) fail_msg("no NCCL all-reduce row");
    double custom = ar_row(H100, "131072"), custom16 = ar_row(H100, "65536");
    assert_true(nccl > 1.2 * custom);
    struct {
        const char *hw, *dtype;
        int seqs;
        double want_ms;
    } cases[] = {{"hardware=h100x8", "model.torch_dtype=float16", 32, nccl},
                 {"hardware=h100x8", "model.torch_dtype=bfloat16", 32, custom},
                 {"hardware=h100x8", "model.torch_dtype=float16", 16, custom16}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *sets[] = {GRID_MODEL,
                        (char *)cases[i].hw,
                        "hardware.optables=" H100,
                        "cost.compute=measured",
                        "cluster.mode=aggregated",
                        (char *)cases[i].dtype};
        sim_config cfg;
        sim_cost c;
        sim_op_times t;
        setup(sets, 6, &cfg, &c);
        assert_true(sim_cost_decode_ops(&c, cases[i].seqs, cases[i].seqs * 1023, &t));
        assert_double_equal(t.s[SIM_OP_ALLREDUCE], 2 * 2 * cases[i].want_ms * 1e-3, 1e-15);
        sim_config_free(&cfg);
    }
    /* four GPUs: the custom kernel's 32 MiB covers what symmetric memory would */
    char *four[] = {GRID_MODEL,
                    "hardware=h100x4",
                    "hardware.optables=" H100,
                    "cost.compute=measured",
                    "cluster.mode=aggregated",
                    "model.torch_dtype=float16"};
    sim_config cfg;
    sim_cost c;
    sim_op_times t;
    setup(four, 6, &cfg, &c);
    assert_true(sim_cost_decode_ops(&c, 32, 32 * 1023, &t));
    const char *m4[] = {"num_gpus=4", "backend=vllm_graph", "message_size=131072", NULL};
    double row4;
    if (!ot_scan(H100, "custom_allreduce.csv.gz", m4, NULL, NULL, NULL, &row4, 1)) fail_msg("no 4-GPU row");
    assert_double_equal(t.s[SIM_OP_ALLREDUCE], 2 * 2 * row4 * 1e-3, 1e-15);
    sim_config_free(&cfg);
    tu_expect_exit("cost --set model.torch_dtype=fp32", 2,
                   "'model.torch_dtype': 'fp32' is not one of bfloat16, float16");
    /* kvsim cost says so where it applies (Llama 2's preset is fp16) */
    tu_expect_stdout("cost --set model=llama-2-70b --set hardware=h100x8",
                     "  fp16 (model.torch_dtype): all-reduces of 256 KiB to 64 MiB from NCCL's rows");
    tu_expect_ok_without("cost --set model=llama-2-70b --set hardware=h100x4", "fp16 (model.torch_dtype)", NULL);
    tu_expect_ok_without("cost --set model=llama3.1-70b --set hardware=h100x8", "fp16 (model.torch_dtype)", NULL);
}

/* hardware.optables_transfer, by hand: the H100's rows priced for a GPU
 * of twice its HBM bandwidth and half its FLOP/s. Each operation is its
 * row times the ratio of its roofline there to here (sim/cost/measured.c):
 * 3 µs (the tables' memory latency) plus the slower of its bytes over HBM
 * and its FLOPs over the tensor cores, the H100's as meta.json states
 * them (3.35e12 B/s, 989e12 FLOP/s). The same decode step as above. */
static double roof_ratio(double bytes, double flops)
{
    double here = 3e-6 + fmax(bytes / 3.35e12, flops / 989e12);
    return (3e-6 + fmax(bytes / 6.7e12, flops / 494.5e12)) / here;
}

/* A GEMM row of m × n × k in bf16, scaled: A and C move m·(k + n)
 * elements, B n·k, 2 bytes each; 2·m·n·k FLOPs. */
static double gemm_scaled(const char *m, const char *n, const char *k)
{
    double M = atof(m), N = atof(n), K = atof(k);
    return gemm_row(m, n, k) * roof_ratio(2 * (M * (K + N) + N * K), 2 * M * N * K);
}

static double mem_scaled(double bytes) { return mem_s(bytes) * roof_ratio(bytes, 0); }

static void test_transfer_by_hand(void **state)
{
    char *sets[] = {GRID_MODEL,
                    "hardware=h100x1",
                    "hardware.optables=" H100,
                    "cost.compute=measured",
                    "cluster.mode=aggregated",
                    "hardware.optables_transfer=true",
                    "hardware.hbm_GBps_per_gpu=6700",
                    "hardware.tflops_per_gpu=494.5"};
    sim_config cfg;
    sim_cost c;
    setup(sets, 8, &cfg, &c);
    /* generation attention over 1024 tokens of context: K and V of 8 heads
     * of 128 read, q and the output of 32 heads moved; 4 · 32 · 128 · 1024
     * FLOPs a sequence */
    double m = 32, d = 4096, s = 2, x = 1024;
    double gen = row_latency("generation_attention.csv.gz", GEN_32x1023) *
                 roof_ratio(m * (x * 2 * 8 * 128 * s + 2 * 32 * 128 * s), 4 * m * 32 * 128 * x);
    double gemms = gemm_scaled("32", "6144", "4096") + gemm_scaled("32", "4096", "4096") +
                   gemm_scaled("32", "16384", "4096") + gemm_scaled("32", "4096", "8192");
    double elem = 2 * mem_scaled(4 * m * d * s) + mem_scaled(2 * m * (32 + 8) * 128 * s) +
                  mem_scaled(2 * m * 8 * 128 * (s + s)) + mem_scaled(3 * m * 8192 * s);
    double want = 2 * (gemms + gen) * 1e-3 + 2 * elem + mem_scaled(2 * m * d * s) + mem_scaled(3 * m * d * s) +
                  gemm_scaled("32", "65536", "4096") * 1e-3;
    sim_op_times t;
    assert_true(sim_cost_decode_ops(&c, 32, 32 * 1023, &t));
    assert_double_equal(t.total_s, want, 1e-12);
    assert_double_equal(t.s[SIM_OP_ATTN_GEN], 2 * gen * 1e-3, 1e-15);
    sim_config_free(&cfg);
    /* onto the tables' own GPU, the transfer changes nothing (but the last
     * bit: the preset's 10 µs link latency is 10 × 1e-6, meta.json's 1e-05) */
    sim_config own, same;
    sim_cost co, cs;
    char *own_sets[] = {"model=llama3.1-8b", "hardware=h100x2", "cost.compute=measured", "cluster.mode=aggregated"};
    char *same_sets[] = {"model=llama3.1-8b", "hardware=h100x2", "cost.compute=measured", "cluster.mode=aggregated",
                         "hardware.optables_transfer=true"};
    setup(own_sets, 4, &own, &co);
    setup(same_sets, 5, &same, &cs);
    sim_op_times a, b;
    assert_true(sim_cost_decode_ops(&co, 48, 48 * 3000, &a) && sim_cost_decode_ops(&cs, 48, 48 * 3000, &b));
    for (int i = 0; i < SIM_OP_N; i++) assert_double_equal(a.s[i], b.s[i], 1e-12 * a.s[i]);
    assert_true(sim_cost_prefill_ops(&co, 5000, 1000, &a) && sim_cost_prefill_ops(&cs, 5000, 1000, &b));
    for (int i = 0; i < SIM_OP_N; i++) assert_double_equal(a.s[i], b.s[i], 1e-12 * a.s[i]);
    sim_config_free(&own);
    sim_config_free(&same);
}

/* Whether a caveat of this process's tables says `text`. */
static bool caveat_says(const char *text)
{
    json_t *notes = sim_measured_caveats();
    bool said = false;
    size_t i;
    json_t *v;
    json_array_foreach(notes, i, v) said |= strstr(json_string_value(json_object_get(v, "text")), text) != NULL;
    json_decref(notes);
    return said;
}

/* Attention of a shape the tables lack, folded by hand: the grid model
 * with a KV head per query head (32 and 32, as Llama-2-7B) has no
 * generation-attention rows; 32 sequences of it are the work of 128 of 8
 * heads and 8 KV heads, a row the tables hold (batch 128, step 1023). */
static void test_attention_fold_by_hand(void **state)
{
    char *sets[] = {GRID_MODEL,
                    "model.kv_heads=32",
                    "hardware=h100x1",
                    "hardware.optables=" H100,
                    "cost.compute=measured",
                    "cluster.mode=aggregated"};
    sim_config cfg;
    sim_cost c;
    setup(sets, 6, &cfg, &c);
    const char *row[] = {"attn_dtype=bfloat16",
                         "kv_cache_dtype=bfloat16",
                         "batch_size=128",
                         "num_heads=8",
                         "num_key_value_heads=8",
                         "head_dim=128",
                         "step=1023",
                         NULL};
    double folded = row_latency("generation_attention.csv.gz", row);
    assert_true(folded > 0);
    sim_op_times t;
    assert_true(sim_cost_decode_ops(&c, 32, 32 * 1023, &t));
    assert_double_equal(t.s[SIM_OP_ATTN_GEN], 2 * folded * 1e-3, 1e-15);
    assert_true(caveat_says("generation attention of 32 heads, 32 KV heads of 128 on h100_sxm: the tables hold no "
                            "such shape; priced as 4 times the batch of their 8 heads, 8 KV heads"));
    sim_config_free(&cfg);
}

/* A head_dim the tables lack, widened by hand: heads of 64 (Llama-3.2-1B's)
 * are in no table; 32 heads and 8 KV heads of 64 over 32 sequences are the
 * query work and KV bytes of 16 and 4 of 128 over the same 32 (fold 2,
 * widen 2). With 4 heads and 1 KV head of 64 no fold keeps the batch
 * whole: 64 sequences are priced as 32 of 4 heads and 1 KV head of 128. */
static void test_attention_widen_by_hand(void **state)
{
    struct {
        const char *heads, *kv_heads, *row_heads, *row_kv;
        int seqs;
        const char *said;
    } cases[] = {
        {"model.heads=32", "model.kv_heads=8", "num_heads=16", "num_key_value_heads=4", 32,
         "generation attention of 32 heads, 8 KV heads of 64 on h100_sxm: the tables hold no such shape; priced as "
         "their 16 heads, 4 KV heads of 128 at the same batch (the same query work and KV bytes at 2 times the "
         "head_dim; where the tables measure both, b200_sxm's head_dim 128 priced so from its 256 is 14% under to "
         "27% over, 5th to 95th percentile"},
        {"model.heads=4", "model.kv_heads=1", "num_heads=4", "num_key_value_heads=1", 64,
         "generation attention of 4 heads, 1 KV heads of 64 on h100_sxm: the tables hold no such shape; priced as "
         "their 4 heads, 1 KV heads of 128 at 0.5 times the batch"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char *sets[] = {
            GRID_MODEL,        "model.head_dim=64",       (char *)cases[k].heads,  (char *)cases[k].kv_heads,
            "hardware=h100x1", "hardware.optables=" H100, "cost.compute=measured", "cluster.mode=aggregated"};
        sim_config cfg;
        sim_cost c;
        sim_measured_reset_notes();
        setup(sets, 8, &cfg, &c);
        assert_non_null(c.measured);
        const char *row[] = {"attn_dtype=bfloat16", "kv_cache_dtype=bfloat16",
                             "batch_size=32",       cases[k].row_heads,
                             cases[k].row_kv,       "head_dim=128",
                             "step=1023",           NULL};
        double want = row_latency("generation_attention.csv.gz", row);
        assert_true(want > 0);
        sim_op_times t;
        assert_true(sim_cost_decode_ops(&c, cases[k].seqs, cases[k].seqs * 1023.0, &t));
        assert_double_equal(t.s[SIM_OP_ATTN_GEN], 2 * want * 1e-3, 1e-15);
        assert_true(caveat_says(cases[k].said));
        sim_config_free(&cfg);
    }
}

/* The floor of the CPU constants' range in GPU time (sim_cost_fit_floor_s):
 * a decode step of one sequence at 512 tokens of Llama-3.1-8B on one H100,
 * repriced in each mode; a model whose step is shorter says so with its
 * own step's GPU time (Llama-3.2-1B), one whose step is not does not. */
static void test_fit_floor(void **state)
{
    const char *modes[] = {"cost.compute=measured", "cost.compute=engine"};
    for (int k = 0; k < 2; k++) {
        for (int small = 0; small < 2; small++) {
            char *sets[] = {small ? "model=llama3.2-1b" : "model=llama3.1-8b", "hardware=h100x1",
                            "cluster.mode=aggregated", (char *)modes[k]};
            sim_config cfg;
            sim_cost c;
            setup(sets, 4, &cfg, &c);
            sim_decode_terms t = sim_cost_decode_terms(&c, 1, 512);
            double gpu = t.total_s - t.overhead_s;
            if (small) assert_double_equal(sim_cost_short_step_s(&c), gpu, 1e-15);
            else {
                assert_double_equal(sim_cost_fit_floor_s(&c), gpu, 1e-3 * gpu);
                assert_double_equal(sim_cost_short_step_s(&c), 0, 0);
            }
            sim_config_free(&cfg);
        }
    }
    cli_result r = tu_kvsim("cost --set model=llama3.2-1b --set hardware=h100x1 --batch 4");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "kvsim cost: warning: not validated: a decode step of one sequence at 512 tokens of "
                                  "context takes 1.5 ms on the GPU here, shorter than the 6.7 ms of the same step on "
                                  "one H100 for Llama-3.1-8B"));
    tu_free(&r);
}

/* A prefill chunk of 1024 new tokens after none: context attention
 * (batch 1, isl 1024) and GEMMs at m = 1024; with 1024 cached before it,
 * the attention is T(2048) − T(1024) (measured.c's rule) where that is
 * more than T(1024). */
static void test_prefill_chunk_rule(void **state)
{
    sim_config cfg;
    sim_cost c;
    load_grid(&cfg, &c);
    const char *a1[] = {"attn_dtype=bfloat16",
                        "kv_cache_dtype=bfloat16",
                        "batch_size=1",
                        "num_heads=32",
                        "num_key_value_heads=8",
                        "head_dim=128",
                        "isl=1024",
                        NULL};
    const char *a2[] = {"attn_dtype=bfloat16",
                        "kv_cache_dtype=bfloat16",
                        "batch_size=1",
                        "num_heads=32",
                        "num_key_value_heads=8",
                        "head_dim=128",
                        "isl=2048",
                        NULL};
    double t1 = row_latency("context_attention.csv.gz", a1), t2 = row_latency("context_attention.csv.gz", a2);
    assert_true(t1 > 0 && t2 > t1);
    sim_op_times alone, after;
    assert_true(sim_cost_prefill_ops(&c, 1024, 0, &alone));
    assert_double_equal(alone.s[SIM_OP_ATTN_CTX], 2 * t1 * 1e-3, 1e-15);
    double gemms = gemm_row("1024", "6144", "4096") + gemm_row("1024", "4096", "4096") +
                   gemm_row("1024", "16384", "4096") + gemm_row("1024", "4096", "8192");
    assert_double_equal(alone.s[SIM_OP_QKV] + alone.s[SIM_OP_O] + alone.s[SIM_OP_MLP], 2 * gemms * 1e-3, 1e-12);
    assert_true(sim_cost_prefill_ops(&c, 2048, 1024, &after));
    assert_double_equal(after.s[SIM_OP_ATTN_CTX], 2 * fmax(t1, t2 - t1) * 1e-3, 1e-15);
    sim_config_free(&cfg);
}

/* Every model preset on every system the tables cover: a decode step does
 * not get cheaper with more sequences or more context, nor a prefill with
 * more tokens, beyond table noise (15%: repeats of one shape disagree by
 * up to 16% at the 99th percentile, docs/measured.md §2). Before the
 * glitch rule, DeepSeek-V3 on h200x8 cost 82.9 ms at 4 sequences of 128
 * tokens and 30.2 ms at 8. Every preset in configs/models/ is priced, so a
 * new one is checked the day it lands. Pairs the tables cannot price, or whose
 * weights do not fit, are left out, as `kvsim cost` refuses them. */
static void test_every_preset_monotone(void **state)
{
    struct dirent **ents = NULL;
    int nents = scandir("configs/models", &ents, NULL, alphasort), nmodels = 0;
    char models[64][64];
    for (int i = 0; i < nents; i++) {
        size_t len = strlen(ents[i]->d_name);
        if (len > 5 && len < 64 && !strcmp(ents[i]->d_name + len - 5, ".json") && nmodels < 64)
            snprintf(models[nmodels++], sizeof models[0], "%.*s", (int)(len - 5), ents[i]->d_name);
        free(ents[i]);
    }
    free(ents);
    assert_true(nmodels >= 19); /* every preset, read from the folder */
    static const char *const hws[] = {"a100x1", "a100x8", "b200x1", "b200x8", "gb200x1", "gb200x4", "h100x1",
                                      "h100x2", "h100x8", "h200x1", "h200x8", "l40sx1",  "l40sx4",  "l40sx8"};
    static const int batches[] = {1, 2, 4, 8, 16, 32, 64, 128, 256}, contexts[] = {128, 1000, 4000, 16000},
                     prompts[] = {16, 128, 512, 2048, 8192};
    int priced = 0;
    for (int mi = 0; mi < nmodels; mi++)
        for (size_t hi = 0; hi < sizeof hws / sizeof *hws; hi++) {
            char model[64], hw[64];
            snprintf(model, sizeof model, "model=%s", models[mi]), snprintf(hw, sizeof hw, "hardware=%s", hws[hi]);
            char *sets[] = {model, hw, "cost.compute=measured", "cluster.mode=aggregated"};
            sim_config cfg;
            sim_cost c;
            sim_err err = {0};
            if (sim_config_load(&cfg, NULL, sets, 4, &err)) fail_msg("%s", err.msg);
            if (sim_cost_setup(&c, &cfg, &err) || c.hbm_kv_bytes <= 0) {
                sim_config_free(&cfg);
                continue;
            }
            priced++;
            for (size_t ci = 0; ci < sizeof contexts / sizeof *contexts; ci++)
                for (size_t bi = 1; bi < sizeof batches / sizeof *batches; bi++) {
                    int b = batches[bi], a = batches[bi - 1];
                    double t = sim_cost_decode_iter_s(&c, b, (int64_t)b * contexts[ci]);
                    double fewer = sim_cost_decode_iter_s(&c, a, (int64_t)a * contexts[ci]);
                    double shorter = ci ? sim_cost_decode_iter_s(&c, b, (int64_t)b * contexts[ci - 1]) : 0;
                    if (t < fewer / 1.15 || t < shorter / 1.15)
                        fail_msg("%s on %s: decode of %d x %d: %.3f ms, under %d x %d (%.3f ms) or %d x %d (%.3f ms)",
                                 models[mi], hws[hi], b, contexts[ci], 1e3 * t, a, contexts[ci], 1e3 * fewer, b,
                                 ci ? contexts[ci - 1] : 0, 1e3 * shorter);
                }
            for (size_t pi = 1; pi < sizeof prompts / sizeof *prompts; pi++) {
                double t = sim_cost_prefill_s(&c, prompts[pi], 0), less = sim_cost_prefill_s(&c, prompts[pi - 1], 0);
                if (t < less / 1.15)
                    fail_msg("%s on %s: prefill of %d: %.3f ms, under %d's %.3f ms", models[mi], hws[hi], prompts[pi],
                             1e3 * t, prompts[pi - 1], 1e3 * less);
            }
            sim_config_free(&cfg);
        }
    assert_true(priced >= 180);
}

/* ---- interpolation and extrapolation on a small hand-made table ------------- */

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char tiny_dir[256];

static void make_tiny(void)
{
    char p[512];
    if (!tiny_dir[0]) {
        snprintf(tiny_dir, sizeof tiny_dir, "/tmp/kvsim-optable-XXXXXX");
        assert_non_null(mkdtemp(tiny_dir));
    }
    snprintf(p, sizeof p, "%s/meta.json", tiny_dir);
    write_file(p, "{\"system\":\"tiny\",\"engine\":\"vLLM 0\",\"gpu\":{\"mem_bw\":1e12,"
                  "\"mem_bw_empirical_scaling_factor\":0.5,\"mem_empirical_constant_latency\":1e-6},"
                  "\"files\":{\"gemm\":\"gemm.csv\",\"context_attention\":\"ctx.csv\","
                  "\"generation_attention\":\"gen.csv\"}}");
    snprintf(p, sizeof p, "%s/gemm.csv", tiny_dir);
    write_file(p, "framework,gemm_dtype,m,n,k,latency\n"
                  "VLLM,bfloat16,1,100,100,1.0\nVLLM,bfloat16,3,100,100,3.0\n"
                  "VLLM,bfloat16,1,200,100,2.0\nVLLM,bfloat16,3,200,100,6.0\n"
                  "VLLM,bfloat16,1,100,200,1.5\nVLLM,bfloat16,3,100,200,4.0\n"
                  "VLLM,bfloat16,1,200,200,3.0\nVLLM,bfloat16,3,200,200,8.0\n");
    snprintf(p, sizeof p, "%s/ctx.csv", tiny_dir);
    write_file(p, "attn_dtype,kv_cache_dtype,batch_size,isl,num_heads,num_key_value_heads,head_dim,latency\n"
                  "bfloat16,bfloat16,1,16,4,2,16,0.5\nbfloat16,bfloat16,1,32,4,2,16,1.5\n"
                  "bfloat16,bfloat16,3,16,4,2,16,1.0\nbfloat16,bfloat16,3,32,4,2,16,3.5\n"
                  "bfloat16,bfloat16,1,16,8,2,16,1.0\nbfloat16,bfloat16,1,32,8,2,16,3.0\n");
    snprintf(p, sizeof p, "%s/gen.csv", tiny_dir);
    write_file(p, "attn_dtype,kv_cache_dtype,batch_size,isl,step,num_heads,num_key_value_heads,head_dim,latency\n"
                  "bfloat16,bfloat16,1,1,15,4,2,16,0.25\nbfloat16,bfloat16,1,1,31,4,2,16,0.75\n"
                  "bfloat16,bfloat16,4,1,7,4,2,16,0.4\nbfloat16,bfloat16,4,1,15,4,2,16,0.41\n");
}

/* A chunk after a cached prefix reads the prefix's KV: one token after
 * 16,383 cached (Llama-3.1-8B, one H100) is attention over 16,384 tokens,
 * as a decode step at that context is, and costs what that step's
 * attention does; the difference of the two long prompt measurements,
 * T(16,384) - T(16,383), had priced it at 0.36 ms where the step costs
 * 1.2 ms. A long chunk keeps the difference (it is above the floor). */
static void test_chunk_reads_its_prefix(void **state)
{
    (void)state;
    json_t *j = tu_kvsim_json("cost --set model=llama3.1-8b --set hardware=h100x1 --prefill 16384 --cached 16383 "
                              "--batch 1 --context 16383 --json");
    double chunk = tu_num_at(json_object_get(j, "prefill_ops_ms"), "attn_context", NULL),
           step = tu_num_at(json_object_get(j, "decode_ops_ms"), "attn_generation", NULL);
    printf("one token after 16383 cached: %.4f ms of attention; a decode step there: %.4f ms\n", chunk, step);
    assert_double_equal(chunk, step, 1e-9);
    assert_true(step > 1.0);
    json_decref(j);
    j = tu_kvsim_json("cost --set model=llama3.1-8b --set hardware=h100x1 --prefill 16384 --cached 8192 --batch 1 "
                      "--context 16383 --json");
    chunk = tu_num_at(json_object_get(j, "prefill_ops_ms"), "attn_context", NULL);
    assert_true(chunk > 2 * step); /* 8,192 new tokens over 8,192 to 16,384 keys: compute, not the read */
    json_decref(j);
}

/* On the bundled tables: Llama-3.1-70B on eight H200s, 64 sequences. The
 * batch-32 curve ends at 32,768 tokens, so a step at 32,768 of context
 * (32,769 attended) was priced from batch 16 times 4, 76.9 ms against
 * 55.0 ms one token before; now the three steps are within 0.1%. */
static void test_generation_continuous_at_curve_ends(void **state)
{
    (void)state;
    double ms[3];
    for (int i = 0; i < 3; i++) {
        char args[256];
        snprintf(args, sizeof args,
                 "cost --set model=llama3.1-70b --set hardware=h200x8 --batch 64 --context %d --json", 32767 + i);
        json_t *j = tu_kvsim_json(args);
        ms[i] = tu_num_at(j, "decode_ms", NULL);
        json_decref(j);
    }
    printf("decode step at 32767, 32768, 32769 tokens: %.4f, %.4f, %.4f ms\n", ms[0], ms[1], ms[2]);
    assert_true(ms[1] >= ms[0] && ms[2] >= ms[1]);
    assert_true(ms[2] - ms[0] < 1e-3 * ms[0]);
}

/* Decode attention past a batch's measured contexts (docs/measured.md §2).
 * The tiny table's batch-4 curve stops at context 16, nearly flat (a
 * launch's fixed cost, as the real tables' large batches are); batch 1
 * reaches 32. Extending batch 4's last segment once priced large batches
 * below smaller ones, and past the grid negative. By hand: */
static void test_generation_beyond_curves(void **state)
{
    (void)state;
    sim_optable *t;
    sim_err err = {0};
    make_tiny();
    if (sim_optable_load(tiny_dir, 1.5, &t, &err)) fail_msg("%s", err.msg);
    double b1_24 = 0.25 + 0.5 * (0.75 - 0.25); /* batch 1 at context 24 */
    /* inside batch 4's curve: its own points */
    assert_double_equal(sim_optable_gen_attn_ms(t, "bfloat16", 4, 2, 16, 4, 12), 0.405, 1e-12);
    int n;
    sim_optable_notes(t, &n);
    assert_int_equal(n, 0);
    /* past it: its last point (0.41 at 16) plus what batch 1 (the largest
     * batch measured at 24) adds from 16 to 24, times 4 / 1 */
    double b4_24 = 0.41 + (b1_24 - 0.25) * 4;
    assert_double_equal(sim_optable_gen_attn_ms(t, "bfloat16", 4, 2, 16, 4, 24), b4_24, 1e-12);
    const char *const *notes = sim_optable_notes(t, &n);
    assert_int_equal(n, 1);
    assert_non_null(strstr(notes[0], "its largest measured plus what the largest batch measured there adds, scaled "
                                     "by the batch"));
    /* batch 2: a third of the way from batch 1's curve to batch 4's */
    assert_double_equal(sim_optable_gen_attn_ms(t, "bfloat16", 4, 2, 16, 2, 24), (2.0 / 3) * b1_24 + (1.0 / 3) * b4_24,
                        1e-12);
    /* past the largest batch: batch 4's price times 8 / 4 */
    assert_double_equal(sim_optable_gen_attn_ms(t, "bfloat16", 4, 2, 16, 8, 24), 2 * b4_24, 1e-12);
    notes = sim_optable_notes(t, &n);
    assert_non_null(strstr(notes[n - 1], "batch=8 beyond the largest measured 4 on tiny, the largest measured scaled "
                                         "in proportion"));
    /* at the end of batch 1's curve (32) and one past it: batch 4's last
     * point plus what batch 1 adds up to its end, times 4, then in
     * proportion to the context. One past a smaller batch's end once fell
     * back to batch 4's own last point in proportion, 0.41 x 33 / 16 =
     * 0.85 against 2.41 at 32 (and on the real tables a step rose by 40%
     * from 32,767 tokens of context to 32,768, Llama-3.1-70B on h200x8) */
    double b4_32 = 0.41 + (0.75 - 0.25) * 4;
    assert_double_equal(sim_optable_gen_attn_ms(t, "bfloat16", 4, 2, 16, 4, 32), b4_32, 1e-12);
    assert_double_equal(sim_optable_gen_attn_ms(t, "bfloat16", 4, 2, 16, 4, 33), b4_32 * 33 / 32, 1e-12);
    /* past every curve's contexts: that in proportion, 64 / 32 */
    assert_double_equal(sim_optable_gen_attn_ms(t, "bfloat16", 4, 2, 16, 4, 64), b4_32 * 64 / 32, 1e-12);
    notes = sim_optable_notes(t, &n);
    assert_non_null(strstr(notes[n - 1], "the largest measured scaled in proportion to the context"));
    /* and so the price never falls as the batch grows */
    double last = 0;
    for (int b = 1; b <= 16; b++) {
        double v = sim_optable_gen_attn_ms(t, "bfloat16", 4, 2, 16, b, 24);
        assert_true(v >= last);
        last = v;
    }
    sim_optable_free(t);
}

static void test_interpolation_by_hand(void **state)
{
    sim_optable *t;
    sim_err err = {0};
    make_tiny();
    if (sim_optable_load(tiny_dir, 1.5, &t, &err)) fail_msg("%s", err.msg);
    assert_double_equal(sim_optable_gemm_ms(t, "bfloat16", 1, 100, 100), 1.0, 1e-12);
    assert_double_equal(sim_optable_gemm_ms(t, "bfloat16", 2, 100, 100), 2.0, 1e-12); /* along m */
    assert_double_equal(sim_optable_gemm_ms(t, "bfloat16", 1, 150, 100), 1.5, 1e-12); /* along n */
    /* m 2, n 150, k 150: the four corners at m 2 are 2, 4, 2.75, 5.5 */
    assert_double_equal(sim_optable_gemm_ms(t, "bfloat16", 2, 150, 150), (2 + 4 + 2.75 + 5.5) / 4, 1e-12);
    int n;
    sim_optable_notes(t, &n);
    assert_int_equal(n, 0);
    /* past m 3: the last segment extended (slope 1 per token at n = k = 100) */
    assert_double_equal(sim_optable_gemm_ms(t, "bfloat16", 5, 100, 100), 5.0, 1e-12);
    const char *const *notes = sim_optable_notes(t, &n);
    assert_int_equal(n, 1);
    assert_non_null(strstr(notes[0], "extrapolated linearly"));
    assert_non_null(strstr(notes[0], "on tiny"));
    /* attention: batch 2 halfway between 1 and 3; isl 24 halfway */
    assert_double_equal(sim_optable_ctx_attn_ms(t, "bfloat16", 4, 2, 16, 2, 24), (1.0 + 2.25) / 2, 1e-12);
    /* generation: context = isl + step: 16 and 32 */
    assert_double_equal(sim_optable_gen_attn_ms(t, "bfloat16", 4, 2, 16, 1, 24), 0.5, 1e-12);
    /* 6 query heads: between the measured 4 and 8 (same 2 KV heads) */
    assert_double_equal(sim_optable_ctx_attn_ms(t, "bfloat16", 6, 2, 16, 1, 16), (0.5 + 1.0) / 2, 1e-12);
    /* 16: past them, the nearest (8) scaled by 16/8, and said */
    assert_double_equal(sim_optable_ctx_attn_ms(t, "bfloat16", 16, 2, 16, 1, 32), 2 * 3.0, 1e-12);
    notes = sim_optable_notes(t, &n);
    assert_non_null(strstr(notes[n - 1], "past the measured head counts on tiny, the nearest (8) scaled by 16/8"));
    /* a shape the tables lack: negative, the caller decides */
    assert_true(sim_optable_ctx_attn_ms(t, "bfloat16", 8, 3, 16, 1, 16) < 0);
    assert_true(sim_optable_gemm_ms(t, "fp8", 1, 100, 100) < 0);
    assert_double_equal(sim_optable_mem_s(t, 5e5), 1e-6 + 1e-6, 1e-15);
    sim_optable_free(t);
}

/* A run asks for a model's few GEMM shapes again and again, so each
 * shape's corners are kept (16 shapes, the oldest replaced). Twenty shapes
 * asked in turn, twice, so that every one is replaced before it comes
 * back, each against the bilinear blend by hand at m = 1 (corners 1, 2,
 * 1.5 and 3); and a lookup past the grid is said again once the notes are
 * cleared, though its shape is kept. */
static void test_gemm_shapes_kept(void **state)
{
    sim_optable *t;
    sim_err err = {0};
    make_tiny();
    if (sim_optable_load(tiny_dir, 1.5, &t, &err)) fail_msg("%s", err.msg);
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < 20; i++) {
            double n = 100 + 5 * i, k = 200 - 5 * i, u = (n - 100) / 100, v = (k - 100) / 100;
            double want = (1 - u) * (1 - v) * 1 + u * (1 - v) * 2 + (1 - u) * v * 1.5 + u * v * 3;
            assert_double_equal(sim_optable_gemm_ms(t, "bfloat16", 1, n, k), want, 1e-12);
        }
    int n;
    for (int round = 0; round < 2; round++) {
        sim_optable_clear_notes(t);
        assert_double_equal(sim_optable_gemm_ms(t, "bfloat16", 1, 300, 100), 3.0, 1e-12); /* n past 200: extended */
        const char *const *notes = sim_optable_notes(t, &n);
        assert_int_equal(n, 1);
        assert_non_null(strstr(notes[0], "gemm m=1 n=300 k=100 (bfloat16): n=300 beyond the largest measured 200"));
    }
    sim_optable_free(t);
}

/* A collective the tables have no NCCL rows for (gb200's) is priced by a
 * ring's roofline over the node's link, as gb200's meta.json states it
 * (p2p_latency 10 µs, intra_node_bw 900 GB/s): an all-gather of 1e6 bf16
 * elements over 2 GPUs moves half of its 2 MB, an all-reduce twice that;
 * said once per collective, not silent. h100_sxm has the rows. */
static void test_nccl_roofline_by_hand(void **state)
{
    sim_optable *t;
    sim_err err = {0};
    if (sim_optable_load("configs/optables/gb200", 0, &t, &err)) fail_msg("%s", err.msg);
    assert_double_equal(sim_optable_nccl_ms(t, "all_gather", 2, 1e6), (1e-5 + 0.5 * 2e6 / 900e9) * 1e3, 1e-12);
    assert_double_equal(sim_optable_nccl_ms(t, "all_gather", 2, 2e6), (1e-5 + 0.5 * 4e6 / 900e9) * 1e3, 1e-12);
    assert_double_equal(sim_optable_nccl_ms(t, "all_reduce", 4, 1e6), (1e-5 + 1.5 * 2e6 / 900e9) * 1e3, 1e-12);
    int n;
    const char *const *notes = sim_optable_notes(t, &n);
    assert_int_equal(n, 2);
    assert_string_equal(notes[0], "all_gather over 2 GPUs: no NCCL rows on gb200, priced by the link's roofline");
    sim_optable_free(t);
    if (sim_optable_load("configs/optables/h100_sxm", 0, &t, &err)) fail_msg("%s", err.msg);
    const char *match[] = {"op_name=all_gather", "nccl_dtype=half", "num_gpus=2", "message_size=1048576", NULL};
    assert_double_equal(sim_optable_nccl_ms(t, "all_gather", 2, 1048576), row_latency("nccl.csv.gz", match), 1e-12);
    sim_optable_notes(t, &n);
    assert_int_equal(n, 0);
    sim_optable_free(t);
}

/* An attention curve remembers the pair of points its last lookup fell
 * between and tries it first (bracket_hint in sim/cost/optable.c): what a
 * lookup returns must not depend on the lookups before it. Two copies of
 * the H100 tables, asked the same (batch, context) points of Llama-3.1-8B's
 * generation attention — one in ascending order, where the remembered pair
 * mostly holds, one alternating between the two ends of the sweep, where
 * it never does — give the same bits, at measured points, between them,
 * below the first and past the last. */
static void test_attn_lookup_order(void **state)
{
    sim_optable *up, *alt;
    sim_err err = {0};
    if (sim_optable_load("configs/optables/h100_sxm", 0, &up, &err)) fail_msg("%s", err.msg);
    if (sim_optable_load("configs/optables/h100_sxm", 0, &alt, &err)) fail_msg("%s", err.msg);
    sim_optable_quiet(up, true), sim_optable_quiet(alt, true);
    enum { N = 400 };
    static const double batches[] = {1, 7, 16, 64, 300};
    for (size_t b = 0; b < sizeof batches / sizeof *batches; b++) {
        double ctx[N], a[N], c[N];
        for (int i = 0; i < N; i++) ctx[i] = i < 2 ? i : 1.0 + (i - 1) * (i - 1) * 0.83; /* 0 to ~132k */
        for (int i = 0; i < N; i++) a[i] = sim_optable_gen_attn_ms(up, "bfloat16", 32, 8, 128, batches[b], ctx[i]);
        for (int i = 0; i < N; i++) {
            int j = i % 2 ? N - 1 - i / 2 : i / 2;
            c[j] = sim_optable_gen_attn_ms(alt, "bfloat16", 32, 8, 128, batches[b], ctx[j]);
        }
        for (int i = 0; i < N; i++)
            if (memcmp(&a[i], &c[i], sizeof a[i]))
                fail_msg("batch %g context %g: %.17g ascending, %.17g alternating", batches[b], ctx[i], a[i], c[i]);
        assert_true(a[N - 1] > a[N / 2] && a[N / 2] > 0);
    }
    sim_optable_free(up), sim_optable_free(alt);
}

/* Glitches (sim/cost/optable_glitch.c), by hand on two GEMM curves:
 * n = 100: 1 2 [9] 4 5 [2] 7 [20 20] 10 11 over m = 1..11 — a spike (9 is
 *   2.25 times 4), a dip (2 is 2.5 times under 5), a pair (20 and 20 are
 *   twice the 10 after them); the curve left is y = m.
 * n = 200: 0.2 0.61 [4.41] 1.21 2.06 3.0 — the spike makes 1.21 look like
 *   a dip (4.41 and 2.06 are 1.7 times it) until it is gone. */
static void write_glitchy(void)
{
    char p[512];
    make_tiny();
    snprintf(p, sizeof p, "%s/gemm.csv", tiny_dir);
    write_file(p, "gemm_dtype,m,n,k,latency\n"
                  "bfloat16,1,100,100,1\nbfloat16,2,100,100,2\nbfloat16,3,100,100,9\nbfloat16,4,100,100,4\n"
                  "bfloat16,5,100,100,5\nbfloat16,6,100,100,2\nbfloat16,7,100,100,7\nbfloat16,8,100,100,20\n"
                  "bfloat16,9,100,100,20\nbfloat16,10,100,100,10\nbfloat16,11,100,100,11\n"
                  "bfloat16,1,200,100,0.2\nbfloat16,2,200,100,0.61\nbfloat16,3,200,100,4.41\n"
                  "bfloat16,4,200,100,1.21\nbfloat16,5,200,100,2.06\nbfloat16,6,200,100,3.0\n");
}

/* The glitchy tables loaded at ratio, having dropped want points of the
 * *points they hold. */
static sim_optable *load_glitchy(double ratio, long want, long *points)
{
    sim_optable *t;
    sim_err err = {0};
    long dropped;
    if (sim_optable_load(tiny_dir, ratio, &t, &err)) fail_msg("%s", err.msg);
    sim_optable_glitches(t, &dropped, points);
    assert_int_equal(dropped, want);
    return t;
}

static void test_glitches_by_hand(void **state)
{
    long points;
    int n;
    write_glitchy();
    sim_optable *t = load_glitchy(1.5, 5, &points); /* 3, 6, 8, 9 at n 100; 3 at n 200 */
    assert_int_equal(points, 11 + 6 + 6 + 4);       /* gemm, context and generation attention */
    for (int m = 1; m <= 11; m++) assert_double_equal(sim_optable_gemm_ms(t, "bfloat16", m, 100, 100), m, 1e-12);
    assert_double_equal(sim_optable_gemm_ms(t, "bfloat16", 8.5, 100, 100), 8.5, 1e-12);
    assert_double_equal(sim_optable_gemm_ms(t, "bfloat16", 4, 200, 100), 1.21, 1e-12); /* kept */
    assert_double_equal(sim_optable_gemm_ms(t, "bfloat16", 3, 200, 100), (0.61 + 1.21) / 2, 1e-12);
    /* each dropped point a lookup was priced across is said once, as a glitch */
    const char *const *notes = sim_optable_notes(t, &n);
    assert_int_equal(n, 4); /* a pair is said by its first point */
    for (int i = 0; i < n; i++) assert_true(sim_optable_note_is_glitch(t, i));
    assert_non_null(strstr(notes[0], "gemm m=3 n=100 k=100 (bfloat16) on tiny: the measurement at m=3 (9 ms)"));
    assert_non_null(strstr(notes[0], "engine.measured.glitch_ratio = 1.5"));
    assert_double_equal(sim_optable_gemm_ms(t, "bfloat16", 3, 100, 100), 3, 1e-12); /* said already */
    sim_optable_notes(t, &n);
    assert_int_equal(n, 4);
    sim_optable_free(t);
    /* 0 keeps every point as measured */
    t = load_glitchy(0, 0, &points);
    assert_double_equal(sim_optable_gemm_ms(t, "bfloat16", 3, 100, 100), 9, 1e-12);
    assert_double_equal(sim_optable_gemm_ms(t, "bfloat16", 4, 200, 100), 1.21, 1e-12);
    sim_optable_notes(t, &n);
    assert_int_equal(n, 0);
    sim_optable_free(t);
    /* a larger ratio keeps the spike of 2.25 and the pair of 2, drops the dip of 2.5 and the spike of 3.6 */
    t = load_glitchy(2.4, 2, &points);
    assert_double_equal(sim_optable_gemm_ms(t, "bfloat16", 3, 100, 100), 9, 1e-12);
    assert_double_equal(sim_optable_gemm_ms(t, "bfloat16", 6, 100, 100), 6, 1e-12);
    sim_optable_free(t);
    make_tiny();
}

/* On the bundled tables: DeepSeek-V3's decode of 4 sequences at 128 tokens
 * on eight H200s crosses one MLA row (batch 4, TP 8, context 128: 1.083 ms
 * where its neighbours measure 0.133 and 0.165). With the default factor 2
 * it is dropped, said, and counted among the 209 points h200_sxm loses —
 * the count reports/optable_glitches.py, a second implementation of the
 * rule, prints for that system. */
static void test_glitch_on_bundled_tables(void **state)
{
    const char *q = "cost --set model=deepseek-v3 --set hardware=h200x8 --set cost.compute=measured --batch 4 "
                    "--context 128 --json";
    char args[512];
    cli_result r = tu_kvsim(q);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "warning: measured glitch: generation MLA batch=4 context=129 heads=16 on h200_sxm: "
                                  "the measurement at context=128 (1.083 ms) lies 6.5 times outside both its "
                                  "neighbours"));
    json_t *o = json_loads(r.out, 0, NULL);
    assert_non_null(o);
    assert_int_equal(tu_int_field(o, "glitches_dropped"), 209);
    double dropped_ms = json_number_value(json_object_get(o, "decode_ms"));
    json_decref(o);
    tu_free(&r);
    snprintf(args, sizeof args, "%s --set engine.measured.glitch_ratio=0", q);
    r = tu_kvsim(args);
    assert_null(strstr(r.err, "measured glitch"));
    o = json_loads(r.out, 0, NULL);
    assert_int_equal(tu_int_field(o, "glitches_dropped"), 0);
    /* 61 layers of the row as measured, against the line between 0.133 at context 64 and 0.165 at 256 */
    double kept_ms = json_number_value(json_object_get(o, "decode_ms"));
    assert_true(kept_ms > 3 * dropped_ms);
    json_decref(o);
    tu_free(&r);
}

/* A gemm table of these rows fails to load, naming what is wrong. */
static void expect_bad_gemm(const char *csv, const char *want)
{
    sim_optable *t = NULL;
    sim_err err = {0};
    char p[512];
    make_tiny();
    snprintf(p, sizeof p, "%s/gemm.csv", tiny_dir);
    write_file(p, csv);
    assert_int_equal(sim_optable_load(tiny_dir, 1.5, &t, &err), -1);
    if (!strstr(err.msg, want)) fail_msg("'%s' lacks '%s'", err.msg, want);
}

/* A number is one key however the row spells it ("100", "100.0",
 * "0100"), and an x or latency reads the same as an integer or not ("3",
 * "3.0", "3e0"): the loader reads whole numbers digit by digit and the
 * rest by strtod, and spells integer keys without formatting them. */
static void test_numbers_as_written(void **state)
{
    sim_optable *t = NULL;
    sim_err err = {0};
    char p[512];
    make_tiny();
    snprintf(p, sizeof p, "%s/gemm.csv", tiny_dir);
    write_file(p, "framework,gemm_dtype,m,n,k,latency\n"
                  "VLLM,bfloat16,1,100,100,1\nVLLM,bfloat16,3.0,100.0,100,3e0\n"
                  "VLLM,bfloat16,1,200,0100,2.0\nVLLM,bfloat16,3,200,100.00,6\n");
    if (sim_optable_load(tiny_dir, 1.5, &t, &err)) fail_msg("%s", err.msg);
    assert_double_equal(sim_optable_gemm_ms(t, "bfloat16", 2, 100, 100), 2.0, 1e-12); /* (1 + 3) / 2: one curve */
    assert_double_equal(sim_optable_gemm_ms(t, "bfloat16", 2, 200, 100), 4.0, 1e-12); /* (2 + 6) / 2 */
    assert_double_equal(sim_optable_gemm_ms(t, "bfloat16", 2, 150, 100), 3.0, 1e-12); /* between the two */
    sim_optable_free(t);
    expect_bad_gemm("framework,gemm_dtype,m,n,k,latency\nVLLM,bfloat16,12a,100,100,1\n",
                    "gemm.csv:2: '12a' or its latency '1' is not a number");
    expect_bad_gemm("framework,gemm_dtype,m,n,k,latency\nVLLM,bfloat16,1,100,100,-1\n", "(milliseconds, >= 0)");
    expect_bad_gemm("framework,gemm_dtype,m,n,k,latency\nVLLM,bfloat16,1,100\n",
                    "gemm.csv:2: 4 fields, fewer than the header's");
}

/* The fused-MoE and MLA tables are read only when a model needs them
 * (sim_optable_need): the tiny tables' 16 core rows load alone (gemm 8,
 * context 6, generation 2; glitch ratio 0 keeps every point), the 5 MoE
 * rows (3 bf16, 2 fp8_block) join when asked for, once however often
 * asked. A broken fp8_block MoE row does not stop the core tables loading,
 * fails the need that reads it, naming file and line, and leaves nothing
 * of the family behind (the bf16 MoE table read before it included):
 * mended, the next need reads the family whole. */
static void write_moe(const char *dir, const char *name, const char *rows)
{
    char p[512], csv[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    snprintf(csv, sizeof csv,
             "moe_dtype,num_tokens,hidden_size,inter_size,topk,num_experts,moe_tp_size,moe_ep_size,distribution,"
             "latency\n%s",
             rows);
    write_file(p, csv);
}

static void expect_points(const sim_optable *t, long want)
{
    long dropped, points;
    sim_optable_glitches(t, &dropped, &points);
    assert_int_equal(points, want);
}

static void test_families_loaded_when_needed(void **state)
{
    char dir[] = "/tmp/kvsim-optable-fam-XXXXXX", p[512], src[512];
    const char *bf16 = "bfloat16,1,64,32,2,8,1,1,uniform,1.0\nbfloat16,4,64,32,2,8,1,1,uniform,2.5\n"
                       "bfloat16,8,64,32,2,8,1,1,uniform,4.0\n",
               *fp8 = "fp8_block,1,64,32,2,8,1,1,uniform,0.5\nfp8_block,4,64,32,2,8,1,1,uniform,2.0\n";
    sim_optable *t = NULL;
    sim_err err = {0};
    make_tiny();
    assert_non_null(mkdtemp(dir));
    const char *core[] = {"gemm.csv", "ctx.csv", "gen.csv"};
    for (int i = 0; i < 3; i++) {
        snprintf(src, sizeof src, "%s/%s", tiny_dir, core[i]);
        snprintf(p, sizeof p, "%s/%s", dir, core[i]);
        assert_int_equal(symlink(src, p), 0);
    }
    snprintf(p, sizeof p, "%s/meta.json", dir);
    write_file(p, "{\"system\":\"tiny\",\"engine\":\"vLLM 0\",\"gpu\":{\"mem_bw\":1e12,"
                  "\"mem_bw_empirical_scaling_factor\":0.5},\"files\":{\"gemm\":\"gemm.csv\","
                  "\"context_attention\":\"ctx.csv\",\"generation_attention\":\"gen.csv\",\"moe\":\"moe.csv\","
                  "\"moe_fp8_block\":\"moeb.csv\"}}");
    write_moe(dir, "moe.csv", bf16);
    write_moe(dir, "moeb.csv", fp8);
    if (sim_optable_load(dir, 0, &t, &err)) fail_msg("%s", err.msg);
    expect_points(t, 18);
    assert_int_equal(sim_optable_need(t, SIM_OPT_MOE, &err), 0);
    expect_points(t, 23);
    assert_int_equal(sim_optable_need(t, SIM_OPT_MOE | SIM_OPT_MLA, &err), 0); /* MoE not read again; no MLA file */
    expect_points(t, 23);
    /* tokens 2: a third of the way from 1 to 4 on each */
    assert_double_equal(sim_optable_moe_ms(t, "bfloat16", 64, 32, 2, 8, 1, 1, "uniform", 2), 1.5, 1e-12);
    assert_double_equal(sim_optable_moe_ms(t, "fp8_block", 64, 32, 2, 8, 1, 1, "uniform", 2), 1.0, 1e-12);
    sim_optable_free(t);
    write_moe(dir, "moeb.csv", "fp8_block,1,64,32,2,8,1,1,uniform,0.5\nfp8_block,4,64,32,2,8,1,1,uniform,slow\n");
    if (sim_optable_load(dir, 0, &t, &err)) fail_msg("a broken MoE table stopped the core ones: %s", err.msg);
    assert_int_equal(sim_optable_need(t, SIM_OPT_MOE, &err), -1);
    if (!strstr(err.msg, "moeb.csv:3: '4' or its latency 'slow' is not a number")) fail_msg("%s", err.msg);
    expect_points(t, 18);
    write_moe(dir, "moeb.csv", fp8);
    assert_int_equal(sim_optable_need(t, SIM_OPT_MOE, &err), 0);
    expect_points(t, 23);
    assert_double_equal(sim_optable_moe_ms(t, "bfloat16", 64, 32, 2, 8, 1, 1, "uniform", 2), 1.5, 1e-12);
    sim_optable_free(t);
    snprintf(src, sizeof src, "rm -rf '%s'", dir);
    assert_int_equal(system(src), 0);
}

static void test_bad_tables(void **state)
{
    sim_optable *t = NULL;
    sim_err err = {0};
    expect_bad_gemm("framework,gemm_dtype,m,n,k,latency\nVLLM,bfloat16,1,100,100,fast\n", "gemm.csv:2:");
    expect_bad_gemm("framework,gemm_dtype,m,n,latency\n", "no column 'k'");
    assert_int_equal(sim_optable_load("/nonexistent-optables", 1.5, &t, &err), -1);
    assert_non_null(strstr(err.msg, "meta.json"));
}

/* cost.compute = measured on hardware without tables, and on a model the
 * tables cannot price (DeepSeek-V3 on h100_sxm, whose fp8_block rows are
 * not bundled), is refused naming what to do; auto falls back. */
static void test_refusals(void **state)
{
    sim_config cfg;
    sim_cost c;
    sim_err err = {0};
    char *sets[] = {"model=llama3-70b", "hardware=a800x8", "cost.compute=measured"};
    assert_int_equal(sim_config_load(&cfg, NULL, sets, 3, &err), 0);
    assert_int_equal(sim_cost_setup(&c, &cfg, &err), -1);
    assert_non_null(strstr(err.msg, "names no measured tables"));
    sim_config_free(&cfg);
    char *mla[] = {"model=deepseek-v3", "hardware=h100x8", "hardware.optables=" H100, "cost.compute=measured"};
    assert_int_equal(sim_config_load(&cfg, NULL, mla, 4, &err), 0);
    assert_int_equal(sim_cost_setup(&c, &cfg, &err), -1);
    assert_non_null(strstr(err.msg, "have no fp8_block GEMMs")); /* DeepSeek-V3's block-quantized FP8 */
    sim_config_free(&cfg);
    char *autos[] = {"model=deepseek-v3", "hardware=h100x8", "hardware.optables=" H100, "cluster.mode=aggregated"};
    assert_int_equal(sim_config_load(&cfg, NULL, autos, 4, &err), 0);
    assert_int_equal(sim_cost_setup(&c, &cfg, &err), 0);
    assert_null(c.measured);
    assert_true(c.engine);
    assert_non_null(strstr(c.measured_fallback, "fp8_block"));
    assert_null(strstr(c.measured_fallback, "use cost.compute=engine")); /* auto made that choice already */
    sim_config_free(&cfg);
    /* a routing the tables lack, pointed at one they hold: the a100 tables
     * measure Mixtral's experts under the power laws only */
    char *routing[] = {"model=mixtral-8x7b", "hardware=a100x2", "engine.measured.moe_distribution=balanced",
                       "cost.compute=measured"};
    assert_int_equal(sim_config_load(&cfg, NULL, routing, 4, &err), 0);
    assert_int_equal(sim_cost_setup(&c, &cfg, &err), -1);
    assert_non_null(strstr(err.msg, "balanced routing (model 'mixtral-8x7b'): use cost.compute=engine; or a routing "
                                    "these tables measure: --set engine.measured.moe_distribution=power_law_1.2"));
    sim_config_free(&cfg);
}

/* Which of vLLM's tuned configs a pass runs with, by hand from vLLM's
 * files. Mixtral on 4 H100s reads E=8,N=3584,device_name=NVIDIA_H100_80GB_HBM3.json
 * (configs/vllm/fused_moe_configs.json), where key 256's config is key
 * 4096's and keys 1536, 2048 and 3072 share one. With an 8192-token budget
 * (CUDA graphs still up to 256 tokens) the profiling pass of 8192 tokens
 * takes key 4096, ≡ 0 mod 8: the config and alignment of the capture
 * sizes near 256. So 4000 tokens (key 4096, ≡ 0) compile nothing; 300
 * (key 256, ≡ 4) a variant whose kernels 4004 (key 4096, ≡ 4) reuses; 1600
 * (≡ 0) one that 2048 and 3000 reuse; 1000 (key 1024) its own. On two B200s
 * vLLM has no E=8 file and takes get_default_config's: one config up to
 * 8 tokens (the experts), another above, so every pass above the graphs
 * shares the profiling pass's config: 1000 (≡ 0) is warm, 300 (≡ 4) and
 * 1001 (odd) compile, 3004 and 3001 reuse them. */
static void test_moe_configs_by_hand(void **state)
{
    sim_config cfg;
    sim_cost c;
    char *sets[] = {"model=mixtral-8x7b",
                    "hardware=h100x4",
                    "cluster.mode=aggregated",
                    "cluster.decode_max_batch=128",
                    "engine.max_num_batched_tokens=8192",
                    "engine.measured.moe_jit_compile_ms=300"};
    setup(sets, 6, &cfg, &c);
    assert_int_equal(c.graph_max, 256);
    uint64_t seen = sim_cost_moe_jit_warm(&c, 8192);
    static const struct {
        double tokens, s;
    } h100[] = {{4000, 0}, {300, 0.6}, {4004, 0}, {1600, 0.6}, {2048, 0}, {3000, 0}, {1000, 0.6}, {1000, 0}};
    for (size_t i = 0; i < sizeof h100 / sizeof h100[0]; i++)
        assert_double_equal(sim_cost_moe_jit_s(&c, h100[i].tokens, &seen), h100[i].s, 1e-12);
    sim_config_free(&cfg);
    sets[1] = "hardware=b200x2";
    sets[4] = "engine.max_num_batched_tokens=2048";
    setup(sets, 6, &cfg, &c);
    seen = sim_cost_moe_jit_warm(&c, 2048);
    static const struct {
        double tokens, s;
    } b200[] = {{1000, 0}, {300, 0.6}, {1001, 0.6}, {3004, 0}, {3001, 0}};
    for (size_t i = 0; i < sizeof b200 / sizeof b200[0]; i++)
        assert_double_equal(sim_cost_moe_jit_s(&c, b200[i].tokens, &seen), b200[i].s, 1e-12);
    sim_config_free(&cfg);
}

/* The bundled map's reader: a missing file and a malformed entry are
 * errors naming the file; a (device, E, N) it lacks is vLLM's default rule
 * (n = 0); quantized weights count every key as a config of its own. */
static void test_moe_configs_file(void **state)
{
    moe_cfgmap m;
    sim_err err = {{0}};
    assert_int_equal(moe_cfgmap_find("no/such/file.json", "NVIDIA H100 80GB HBM3", 8, 7168, false, &m, &err), -1);
    assert_non_null(strstr(err.msg, "no/such/file.json"));
    char path[] = "/tmp/kvsim-moecfg-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("{\"files\": [{\"device\": \"D\", \"E\": 8, \"N\": 64, \"keys\": [1, 4, 2], \"config\": [0, 1, 2]},"
          " {\"device\": \"D\", \"E\": 8, \"N\": 32, \"keys\": [1, 4, 16], \"config\": [0, 0, 2]}]}",
          f);
    fclose(f);
    err.msg[0] = 0;
    assert_int_equal(moe_cfgmap_find(path, "D", 8, 64, false, &m, &err), -1);
    assert_non_null(strstr(err.msg, "entry D E=8 N=64: keys must ascend"));
    assert_int_equal(moe_cfgmap_find(path, "D", 8, 32, false, &m, &err), 0);
    assert_int_equal(m.n, 3);
    assert_int_equal(moe_cfgmap_config(&m, 3), 0);  /* nearest 4, which shares key 1's config */
    assert_int_equal(moe_cfgmap_config(&m, 10), 0); /* 4 and 16 tie: the lower key */
    assert_int_equal(moe_cfgmap_config(&m, 11), 2);
    assert_int_equal(moe_cfgmap_find(path, "D", 8, 16, false, &m, &err), 0);
    assert_int_equal(m.n, 0);
    assert_int_equal(moe_cfgmap_config(&m, 8), 0);
    assert_int_equal(moe_cfgmap_config(&m, 9), 1);
    assert_int_equal(moe_cfgmap_find(path, "D", 8, 32, true, &m, &err), 0);
    assert_int_equal(m.n, 18);
    assert_int_equal(moe_cfgmap_config(&m, 4096), 17);
    unlink(path);
}

/* Fused-MoE compiles (sim_cost_moe_jit_s), by hand: Mixtral on 2 H100s, an
 * aggregated vLLM instance with max_num_seqs 128 and a 2048-token budget:
 * CUDA graphs up to min(2 · 128, 512, 2048) = 256 tokens. A pass of 600
 * tokens takes config key 512 (nearest of 512 and 1024), 600 ≡ 0 mod 8:
 * a cold variant, two kernels of 0.3 s each; again, nothing. 604 ≡ 4 and
 * 601 (odd) are two more variants, 602 is 601's. 2048 ≡ 0 was compiled by
 * the profiling pass; 2047 was not. 200 runs in a graph. Then a router of
 * another top-k and expert count. */
static void test_moe_jit_by_hand(void **state)
{
    sim_config cfg;
    sim_cost c;
    char *sets[] = {"model=mixtral-8x7b",
                    "hardware=h100x2",
                    "cluster.mode=aggregated",
                    "cluster.decode_max_batch=128",
                    "engine.max_num_batched_tokens=2048",
                    "engine.measured.moe_jit_compile_ms=300"};
    setup(sets, 6, &cfg, &c);
    assert_non_null(c.measured);
    assert_int_equal(c.graph_max, 256);
    /* KV as vLLM sizes it: NCCL's buffers (the h100_sxm system file's
     * 358,612,992 bytes a GPU of a 2-GPU group) are not charged to it, as
     * vLLM snapshots memory after initializing them (gpu_worker.py); the
     * measured and the engine modes size it alike */
    sim_cost e;
    char *engine_sets[] = {"model=mixtral-8x7b",
                           "hardware=h100x2",
                           "cluster.mode=aggregated",
                           "cluster.decode_max_batch=128",
                           "engine.max_num_batched_tokens=2048",
                           "cost.compute=engine"};
    sim_config ecfg;
    setup(engine_sets, 6, &ecfg, &e);
    assert_double_equal(e.hbm_kv_bytes, c.hbm_kv_bytes, 1e-3);
    sim_config_free(&ecfg);
    uint64_t seen = sim_cost_moe_jit_warm(&c, 2048);
    assert_double_equal(sim_cost_moe_jit_s(&c, 200, &seen), 0, 0);
    assert_double_equal(sim_cost_moe_jit_s(&c, 600, &seen), 0.6, 1e-12);
    assert_double_equal(sim_cost_moe_jit_s(&c, 600, &seen), 0, 0);
    assert_double_equal(sim_cost_moe_jit_s(&c, 640, &seen), 0, 0); /* key 512, ≡ 0: the same variant */
    assert_double_equal(sim_cost_moe_jit_s(&c, 604, &seen), 0.6, 1e-12);
    assert_double_equal(sim_cost_moe_jit_s(&c, 601, &seen), 0.6, 1e-12);
    assert_double_equal(sim_cost_moe_jit_s(&c, 602, &seen), 0, 0);
    assert_double_equal(sim_cost_moe_jit_s(&c, 2048, &seen), 0, 0);
    assert_double_equal(sim_cost_moe_jit_s(&c, 2047, &seen), 0.6, 1e-12);
    assert_double_equal(sim_cost_moe_jit_s(&c, 1000, &seen), 0.6, 1e-12); /* key 1024 */
    sim_config_free(&cfg);
    /* top-8 of 128 experts (Qwen3-30B-A3B): num_valid_tokens = 8t and
     * EM = 8t + 128 (BLOCK_SIZE_M − 1) divide by 16 together, when t is
     * even: 600 and 604 are one variant, 601 and 603 the other */
    char *qwen[] = {"model=qwen3-30b-a3b",
                    "hardware=h100x1",
                    "cluster.mode=aggregated",
                    "cluster.decode_max_batch=128",
                    "engine.max_num_batched_tokens=2048",
                    "engine.measured.moe_jit_compile_ms=300"};
    setup(qwen, 6, &cfg, &c);
    seen = sim_cost_moe_jit_warm(&c, 2048);
    assert_double_equal(sim_cost_moe_jit_s(&c, 600, &seen), 0.6, 1e-12);
    assert_double_equal(sim_cost_moe_jit_s(&c, 604, &seen), 0, 0);
    assert_double_equal(sim_cost_moe_jit_s(&c, 601, &seen), 0.6, 1e-12);
    assert_double_equal(sim_cost_moe_jit_s(&c, 603, &seen), 0, 0);
    assert_double_equal(sim_cost_moe_jit_s(&c, 2046, &seen), 0, 0); /* the profiling pass's, 2048 */
    sim_config_free(&cfg);
    /* a dense model compiles nothing at run time (its GEMMs are cuBLAS) */
    char *dense[] = {"model=llama3.1-8b", "hardware=h100x1", "cluster.mode=aggregated"};
    setup(dense, 3, &cfg, &c);
    seen = 0;
    assert_double_equal(sim_cost_moe_jit_s(&c, 1000, &seen), 0, 0);
    sim_config_free(&cfg);
}

/* A run says what the compiles cost (agg.c, note_moe_compiles): one
 * Mixtral instance, three prompts 100 s apart with nothing in common. The
 * first's prefill, 1,600 tokens (key 1536, ≡ 0 mod 8; the default budget's
 * profiling pass of 8,192 tokens took key 4096, whose config is key 1024's
 * on two H100s), compiles a variant (2 × 0.686 s, the default); the
 * second's, 1,600 again, finds it; the third's, 1,604 (≡ 4), compiles
 * another; their decodes (one token) run in CUDA graphs. Two first uses, 2.744 s; the bands as multiples of a
 * kernel's 0.686 s: 0.46 / 0.686 = 0.67, 0.98 / 0.686 = 1.4, 0.2 / 0.686 =
 * 0.29, 2 / 0.686 = 2.9. None at a compile time of 0, none for a dense
 * model. */
static void test_moe_compiles_said(void **state)
{
    char *trace =
        tu_write_temp("{\"timestamp\": 0, \"input_length\": 1600, \"output_length\": 2, \"hash_ids\": [1, 2]}\n"
                      "{\"timestamp\": 100000, \"input_length\": 1600, \"output_length\": 2, \"hash_ids\": [3, 4]}\n"
                      "{\"timestamp\": 200000, \"input_length\": 1604, \"output_length\": 2, \"hash_ids\": [5, 6]}\n");
    const char *want = "\"2 first uses of a fused-MoE kernel variant (over all instances) stalled an instance while "
                       "Triton compiled it: 2.7 s in all, 0.0 to 200.0 s into the run, at "
                       "engine.measured.moe_jit_compile_ms = 686 a kernel (two a variant); such a kernel compiled in "
                       "0.46 to 0.98 s on one H200 host (0.67 to 1.4 times these stalls) and public figures span 0.2 "
                       "to 2 s (0.29 to 2.9 times)";
    const char *runs[][2] = {{"mixtral-8x7b --set hardware=h100x2", ""},
                             {"mixtral-8x7b --set hardware=h100x2", " --set engine.measured.moe_jit_compile_ms=0"},
                             {"llama3.1-8b --set hardware=h100x1", ""}};
    for (int i = 0; i < 3; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd,
                 "run --json --trace %s --set model=%s --set cluster.mode=aggregated --set cluster.instances=1%s",
                 trace, runs[i][0], runs[i][1]);
        cli_result r = tu_kvsim(cmd);
        if (r.status != 0) fail_msg("%s: exit %d: %s", cmd, r.status, r.err);
        bool said = strstr(r.out, want) != NULL;
        if (said != (i == 0)) fail_msg("%s: moe_compiles %s:\n%s", cmd, said ? "said" : "not said", r.out);
        if (i > 0 && strstr(r.out, "\"moe_compiles\"")) fail_msg("%s: a moe_compiles caveat", cmd);
        if (i == 0) { /* and the summary's numbers */
            json_t *o = json_loads(r.out, 0, NULL), *jit = json_object_get(o, "moe_compiles");
            assert_int_equal(json_integer_value(json_object_get(jit, "variants")), 2);
            assert_double_equal(json_number_value(json_object_get(jit, "stall_s")), 2.744, 1e-12);
            json_decref(o);
        }
        tu_free(&r);
    }
    unlink(trace);
    free(trace);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_is_the_sum_of_rows),
        cmocka_unit_test(test_prefill_chunk_rule),
        cmocka_unit_test(test_transfer_by_hand),
        cmocka_unit_test(test_allreduce_tables_by_hand),
        cmocka_unit_test(test_fp16_allreduce_by_hand),
        cmocka_unit_test(test_attention_fold_by_hand),
        cmocka_unit_test(test_attention_widen_by_hand),
        cmocka_unit_test(test_fit_floor),
        cmocka_unit_test(test_interpolation_by_hand),
        cmocka_unit_test(test_gemm_shapes_kept),
        cmocka_unit_test(test_generation_beyond_curves),
        cmocka_unit_test(test_generation_continuous_at_curve_ends),
        cmocka_unit_test(test_chunk_reads_its_prefix),
        cmocka_unit_test(test_families_loaded_when_needed),
        cmocka_unit_test(test_nccl_roofline_by_hand),
        cmocka_unit_test(test_glitches_by_hand),
        cmocka_unit_test(test_glitch_on_bundled_tables),
        cmocka_unit_test(test_every_preset_monotone),
        cmocka_unit_test(test_numbers_as_written),
        cmocka_unit_test(test_bad_tables),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_attn_lookup_order),
        cmocka_unit_test(test_moe_jit_by_hand),
        cmocka_unit_test(test_moe_configs_by_hand),
        cmocka_unit_test(test_moe_configs_file),
        cmocka_unit_test(test_moe_compiles_said),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (tiny_dir[0]) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tiny_dir);
        if (system(cmd) != 0) rc = rc ? rc : 1;
    }
    return rc;
}
