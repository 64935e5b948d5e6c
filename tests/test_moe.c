/* tests/test_moe.c — mixture-of-experts models (issue 33 item 1): total and
 * active parameters of the Mixtral-8x7B, Mixtral-8x22B, Qwen3-30B-A3B and
 * DeepSeek-V3 presets worked out by hand from their published config.json,
 * the expected experts a batch touches, the weight bytes and FLOPs of a
 * decode step, expert parallelism's all-to-all and imbalance, and `kvsim
 * validate` expressing the Mixtral run (importing MoE configs:
 * tests/test_model.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <math.h>

#include "sim/config/model.h"

static sim_model load(const char *name)
{
    sim_model m;
    sim_err err = {{0}};
    if (sim_model_load(name, &m, &err)) fail_msg("%s", err.msg);
    return m;
}

/* One expert is a gated MLP, 3 · d · i_e; a MoE layer E of them, the router
 * d · E, and DeepSeek's shared expert.
 *   Mixtral-8x7B (d 4096, i 14336, E 8, k 2, 32 layers, V 32000):
 *     attention 4096·4096·2 + 2·4096·1024 = 41,943,040; expert 176,160,768;
 *     layer 41,943,040 + 8 · 176,160,768 + 32,768 + 8,192 = 1,451,270,144;
 *     · 32 + 32,000 · 4,096 · 2 + 4,096 = 46,702,792,704 (model card 46.7B);
 *     active: − 32 · 6 · 176,160,768 = 12,879,925,248 (12.9B).
 *   Mixtral-8x22B (d 6144, i 16384, 48 heads, 56 layers, V 32768):
 *     attention 88,080,384; expert 301,989,888; layer 2,504,114,176 (with
 *     router 49,152 and norms 12,288); · 56 + 402,653,184 + 6,144 =
 *     140,630,071,296 (141B); active − 56 · 6 · 301,989,888 =
 *     39,161,468,928 (39B).
 *   Qwen3-30B-A3B (d 2048, 32 heads, 4 KV heads of 128, E 128 of 768, k 8,
 *     48 layers, V 151936): attention 18,874,368; expert 4,718,592; layer
 *     18,874,368 + 603,979,776 + 262,144 + 4,096 = 623,120,384; · 48 +
 *     622,329,856 + 2,048 = 30,532,110,336 (30.5B); active − 48 · 120 ·
 *     4,718,592 = 3,353,020,416 (3.3B).
 *   Qwen3-235B-A22B (d 4096, 64 heads, 4 KV heads of 128, E 128 of 1536,
 *     k 8, 94 layers, V 151936, untied): attention 71,303,168; expert
 *     18,874,368; layer 71,303,168 + 2,415,919,104 + 524,288 + 8,192 =
 *     2,487,754,752; · 94 + 1,244,659,712 + 4,096 = 235,093,610,496 (235B);
 *     active − 94 · 120 · 18,874,368 = 22,190,739,456 (22B).
 *   DeepSeek-V3 (params 671e9 given; 58 MoE layers after 3 dense, expert
 *     3 · 7168 · 2048 = 44,040,192): active 671e9 − 58 · 248 · 44,040,192
 *     = 37,525,878,272 (37B). */
static void test_moe_params(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        double total, active;
        int moe_layers;
    } want[] = {
        {"mixtral-8x7b", 46702792704.0, 12879925248.0, 32}, {"mixtral-8x22b", 140630071296.0, 39161468928.0, 56},
        {"qwen3-30b-a3b", 30532110336.0, 3353020416.0, 48}, {"qwen3-235b-a22b", 235093610496.0, 22190739456.0, 94},
        {"deepseek-v3", 671e9, 37525878272.0, 58},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        sim_model m = load(want[i].name);
        assert_double_equal(m.params, want[i].total, 0);
        assert_double_equal(sim_model_active_params(&m), want[i].active, 0);
        assert_int_equal(sim_model_moe_layers(&m), want[i].moe_layers);
        assert_double_equal(sim_model_weight_bytes(&m), want[i].total * m.dtype_bytes, 0);
    }
    sim_model ds = load("deepseek-v3");
    assert_double_equal(sim_model_expert_params(&ds), 44040192, 0);
    assert_double_equal(sim_model_kv_bytes_per_token(&ds), 70272, 0);
    sim_model dense = load("llama3.1-8b"); /* dense: active = total, no MoE layer */
    assert_double_equal(sim_model_active_params(&dense), dense.params, 0);
    assert_int_equal(sim_model_moe_layers(&dense), 0);
    assert_double_equal(sim_model_experts_touched(&dense, 64), 0, 0);
}

/* E · (1 − (1 − k/E)^B): Mixtral one token 2, two tokens 8 · (1 − 0.75²) =
 * 3.5, 62 tokens 8 · (1 − 0.75^62) = 7.99999... ; Qwen3-30B-A3B 16 tokens
 * 128 · (1 − (15/16)^16) = 82.4225...; DeepSeek-V3 one token 8. */
static void test_experts_touched(void **state)
{
    (void)state;
    sim_model mix = load("mixtral-8x7b"), q = load("qwen3-30b-a3b"), ds = load("deepseek-v3");
    assert_double_equal(sim_model_experts_touched(&mix, 1), 2, 1e-12);
    assert_double_equal(sim_model_experts_touched(&mix, 2), 3.5, 1e-12);
    assert_double_equal(sim_model_experts_touched(&mix, 62), 8 * (1 - pow(0.75, 62)), 1e-12);
    assert_true(sim_model_experts_touched(&mix, 62) > 7.99999);
    assert_double_equal(sim_model_experts_touched(&q, 16), 128 * (1 - pow(15.0 / 16, 16)), 1e-9);
    assert_double_equal(sim_model_experts_touched(&q, 16), 82.4225, 1e-4);
    assert_double_equal(sim_model_experts_touched(&ds, 1), 8, 1e-12);
    assert_double_equal(sim_model_experts_touched(&mix, 0), 0, 0);
}

static double num(const json_t *o, const char *key) { return json_number_value(json_object_get(o, key)); }

/* Mixtral-8x7B on h100x2 (analytic: every weight streams; 2 · 3,350 GB/s ·
 * 0.7234 = 4.84678e12 B/s; 2 · 989 TFLOPS · 0.45):
 *   batch 1 reads the shared 1,605,636,096 params (46,702,792,704 − 32 · 8 ·
 *     176,160,768) and 2 experts a layer: 12,879,925,248 · 2 B = 5.31484 ms;
 *   batch 2 reads 3.5 a layer: (1,605,636,096 + 32 · 3.5 · 176,160,768) · 2
 *     = 42,671,284,224 B = 8.80405 ms;
 *   compute at batch 1: 2 · 12,879,925,248 / 890.1e12 = 0.028940 ms.
 * The same step of a dense model holding every weight would read all
 * 93.4 GB. */
static void test_moe_decode_cost(void **state)
{
    (void)state;
    const char *base =
        "cost --set model=mixtral-8x7b --set hardware=h100x2 --set cost.compute=analytic --json --batch ";
    char args[256];
    snprintf(args, sizeof args, "%s1", base);
    json_t *o = tu_kvsim_json(args);
    assert_double_equal(num(o, "memory_ms"), 25759850496.0 / 4.84678e12 * 1e3, 1e-4);
    assert_double_equal(num(o, "compute_ms"), 2 * 12879925248.0 / (2 * 989e12 * 0.45) * 1e3, 1e-4);
    assert_true(json_is_true(json_object_get(o, "fits")));
    json_decref(o);
    snprintf(args, sizeof args, "%s2", base);
    o = tu_kvsim_json(args);
    assert_double_equal(num(o, "memory_ms"), 42671284224.0 / 4.84678e12 * 1e3, 1e-4);
    json_decref(o);
    tu_expect_stdout("cost --set model=mixtral-8x7b --set hardware=h100x2 --set cost.compute=analytic --batch 2",
                     "mixture of experts: 46.70e9 parameters in HBM, 12.88e9 active per token (2 of 8 experts); "
                     "batch 2 touches 3.50 experts per layer, 42.67 GB of weights a step");
}

/* Expert parallelism on h100x2 (270 GB/s a direction, 10 µs a collective),
 * Mixtral-8x7B, imbalance 1.5, batch 64: 32 attention all-reduces of
 * 2 · (1/2) · 4096 · 2 / 270e9 = 30.341 ns a token and 64 all-to-alls
 * (dispatch and combine per MoE layer) of 1.5 · 2 · 4096 · 2 · 1/4 / 270e9
 * = 22.756 ns a token: 96 · 10 µs + 64 · (32 · 30.341 + 64 · 22.756) ns =
 * 0.96 + 0.155350 ms. Tensor-parallel experts instead: 64 all-reduces,
 * 0.64 + 64 · 64 · 30.341 ns = 0.764276 ms. At batch 1 the busiest GPU
 * reads 1.5 × the 2 experts: (1,605,636,096 + 3 · 32 · 176,160,768) · 2 B. */
static void test_expert_parallel(void **state)
{
    (void)state;
    const char *ep = "cost --set model=mixtral-8x7b --set hardware=h100x2 --set cost.compute=analytic --json --set "
                     "cost.expert_parallel=true "
                     "--set cost.expert_imbalance=1.5";
    char args[384];
    double ar = 8192 / 270e9, a2a = 1.5 * 2 * 8192 * 0.25 / 270e9;
    snprintf(args, sizeof args, "%s --batch 64", ep);
    json_t *o = tu_kvsim_json(args);
    assert_double_equal(num(o, "allreduce_ms"), (96 * 10e-6 + 64 * (32 * ar + 64 * a2a)) * 1e3, 1e-4);
    json_decref(o);
    o = tu_kvsim_json(
        "cost --set model=mixtral-8x7b --set hardware=h100x2 --set cost.compute=analytic --json --batch 64");
    assert_double_equal(num(o, "allreduce_ms"), (64 * 10e-6 + 64 * 64 * ar) * 1e3, 1e-4);
    json_decref(o);
    snprintf(args, sizeof args, "%s --batch 1", ep);
    o = tu_kvsim_json(args);
    assert_double_equal(num(o, "memory_ms"), (1605636096.0 + 96 * 176160768.0) * 2 / 4.84678e12 * 1e3, 1e-4);
    json_decref(o);
    /* A prefill pays the imbalance too: the busiest GPU's extra routed work,
     * (1.5 − 1) · 2 · (32 layers · 2 experts · 176,160,768) FLOPs a token,
     * 4,000 tokens at 2 · 989 TFLOP/s · mfu 0.45 = 50.665 ms more. */
    double pf[2];
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "%s --prefill 4000 --set cost.expert_imbalance=%s", ep, i ? "1.5" : "1");
        o = tu_kvsim_json(args);
        pf[i] = num(o, "prefill_ms");
        json_decref(o);
    }
    assert_double_equal(pf[1] - pf[0], 0.5 * 2 * 32 * 2 * 176160768.0 * 4000 / (2 * 989e12 * 0.45) * 1e3, 1e-3);
    tu_expect_exit("cost --set model=mixtral-8x7b --set cost.expert_imbalance=0.5", 2, "cost.expert_imbalance");
}

/* `kvsim cost` on a model larger than the hardware: its KV bytes and times,
 * and that a run would refuse (the DeepSeek-V3 line). */
static void test_cost_too_large(void **state)
{
    (void)state;
    json_t *o = tu_kvsim_json("cost --set model=deepseek-v3 --json");
    assert_int_equal(tu_int_field(o, "kv_bytes_per_token"), 70272);
    assert_true(json_is_false(json_object_get(o, "fits")));
    json_decref(o);
    tu_expect_stdout("cost --set model=deepseek-v3", "weights (671 GB) do not fit in a800x8's HBM");
}

/* The Mixtral-8x7B run of the training measurements is expressed now; two
 * draws of its workload (seeds 1 and 2) keep the test short. */
#define MIXTRAL_RUN                                                                                                    \
    "validate --measurements validation/vllm-h100-train.json --only mixtral-8x7b-tp2-general-mnbt2048-run56 "          \
    "--draws 2"
static void test_validate_mixtral(void **state)
{
    (void)state;
    json_t *o = tu_kvsim_json(MIXTRAL_RUN " --json");
    json_t *x = json_array_get(json_object_get(o, "experiments"), 0);
    assert_string_equal(json_string_value(json_object_get(x, "status")), "ok");
    double itl = json_number_value(json_object_get(json_object_get(json_object_get(x, "predicted"), "itl_ms"), "mean"));
    assert_true(itl > 15 && itl < 30); /* the step reads all 8 experts: ~93 GB over 2 H100s, plus overheads */
    /* its fused-MoE compiles, two kernels of 0.686 s each a variant, in each
     * draw; the means over the draws; and the draws differ (which variants
     * a draw's passes meet depends on its prompt order and arrivals) */
    const json_t *jit = json_object_get(x, "moe_compiles"), *by = json_object_get(jit, "by_draw");
    assert_int_equal(json_array_size(by), 2);
    json_int_t n[2];
    for (size_t k = 0; k < 2; k++) {
        n[k] = json_integer_value(json_object_get(json_array_get(by, k), "variants"));
        assert_true(n[k] > 0);
        assert_double_equal(json_number_value(json_object_get(json_array_get(by, k), "stall_s")), 1.372 * (double)n[k],
                            1e-9);
    }
    assert_int_not_equal(n[0], n[1]);
    assert_double_equal(json_number_value(json_object_get(jit, "variants")), (double)(n[0] + n[1]) / 2, 1e-12);
    assert_double_equal(json_number_value(json_object_get(jit, "stall_s")), 1.372 * (double)(n[0] + n[1]) / 2, 1e-9);
    /* and its errors at the probe's fastest and slowest compile: each the
     * same as a replay with that compile time set, run on its own (which
     * replays no band of its own) */
    const json_t *band = json_object_get(x, "compile_band");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(band, "kernel_ms"), 0)), 460);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(band, "kernel_ms"), 1)), 980);
    for (int end = 0; end < 2; end++) {
        json_t *alone =
            tu_kvsim_jsonf(MIXTRAL_RUN " --json --set engine.measured.moe_jit_compile_ms=%d", end ? 980 : 460);
        const json_t *ax = json_array_get(json_object_get(alone, "experiments"), 0), *mpe = json_object_get(ax, "mpe");
        assert_null(json_object_get(ax, "compile_band")); /* a set compile time is the user's: no band */
        static const char *const means[] = {"e2e_ms", "ttft_ms", "itl_ms"};
        for (int k = 0; k < 3; k++)
            assert_double_equal(
                json_number_value(json_array_get(
                    json_object_get(json_object_get(json_object_get(band, "mpe"), means[k]), "mean"), (size_t)end)),
                json_number_value(json_object_get(json_object_get(mpe, means[k]), "mean")), 1e-9);
        json_decref(alone);
    }
    json_decref(o);
    /* a dense run compiles nothing: no band */
    o = tu_kvsim_json("validate --measurements validation/vllm-h100-train.json --only "
                      "llama3.1-8b-tp1-general-mnbt2048-run16 --draws 2 --json");
    assert_null(json_object_get(json_array_get(json_object_get(o, "experiments"), 0), "compile_band"));
    json_decref(o);
    char line[200];
    snprintf(line, sizeof line,
             "  kvsim stalled %.1f s a draw for %.1f fused-MoE compile variants (%lld to %lld; "
             "engine.measured.moe_jit_compile_ms)",
             1.372 * (double)(n[0] + n[1]) / 2, (double)(n[0] + n[1]) / 2, (long long)(n[0] < n[1] ? n[0] : n[1]),
             (long long)(n[0] < n[1] ? n[1] : n[0]));
    tu_expect_stdout(MIXTRAL_RUN, line);
}

/* A number kvsim knows to be unvalidated carries a warning: a MoE run's
 * summary names the caveat and stderr says it, as do `cost` and `plan slo`
 * on the same config; a pipeline-parallel instance gets its own; a dense
 * single-node run gets no "caveats" key at all (sim/serving/caveats.c). */
static void test_caveats(void **state)
{
    (void)state;
    const char *moe = "--set model=mixtral-8x7b --set hardware=h100x2";
    const char *said = "warning: not validated: mixtral-8x7b is a mixture of experts";
    char args[512];
    snprintf(args, sizeof args, "run %s --set cluster.mode=aggregated --json", moe);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    json_t *o = json_loads(r.out, 0, NULL), *c = json_object_get(o, "caveats"), *v;
    size_t i;
    /* the MoE caveat, what the run found (its fused-MoE compiles), then
     * what the measured tables did not hold: the router's GEMM of n = 8
     * experts, below the smallest measured n */
    /* (and the first of the bundled trace's prompts past the longest
     * measured prefill attention: 18,069 tokens, 158 of them a prefix hit,
     * priced as 17,911 of context. The conductor's prefill estimator, which
     * samples prompts of up to 131,072 tokens and prices no request, used
     * to be noted first, at 21,490: it is quiet now) */
    assert_int_equal(json_array_size(c), 4);
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 0), "name")), "moe");
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 1), "name")), "moe_compiles");
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 2), "name")), "not_measured");
    assert_non_null(strstr(json_string_value(json_object_get(json_array_get(c, 2), "text")),
                           "n=8 below the smallest measured 32 on h100_sxm"));
    assert_non_null(strstr(json_string_value(json_object_get(json_array_get(c, 3), "text")),
                           "isl=17911 heads=16/4/128: isl outside the measured on h100_sxm"));
    assert_non_null(strstr(r.err, "warning: not measured: gemm m="));
    assert_non_null(strstr(r.err, said));
    json_decref(o);
    tu_free(&r);
    snprintf(args, sizeof args, "cost %s", moe);
    r = tu_kvsim(args);
    assert_non_null(strstr(r.err, said));
    tu_free(&r);
    snprintf(args, sizeof args, "plan slo %s --ttft-p90-ms 0.001", moe); /* below the floor: runs nothing */
    r = tu_kvsim(args);
    assert_int_equal(r.status, 3);
    assert_non_null(strstr(r.err, said));
    tu_free(&r);
    /* a search that runs points (four probes here) says it once, not once
     * per worker run */
    r = tu_kvsim("plan slo --set model=mixtral-8x7b --set hardware=h100x8 --ttft-p90-ms 2000 --max-instances 4 "
                 "--dram 250GB --scopes global --cpp 1 " TU_ONE_CONFIRMATION "--jobs 2");
    assert_int_equal(r.status, 0);
    const char *first = strstr(r.err, "not validated");
    assert_non_null(first);
    assert_null(strstr(first + 1, "not validated"));
    assert_non_null(strstr(r.err, "kvsim plan slo: warning: not validated: mixtral-8x7b"));
    tu_free(&r);
    o = tu_kvsim_json("run --set hardware=h100x8 --set model=llama3.1-8b --set cluster.gpus_per_instance=16 "
                      "--set cluster.prefill=1 --set cluster.decode=1 --json");
    c = json_object_get(o, "caveats");
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 0), "name")), "pipeline");
    assert_non_null(strstr(json_string_value(json_object_get(json_array_get(c, 0), "text")), "spans 2 nodes"));
    json_decref(o);
    /* the default a800x8 has no measurement of its kernels: the roofline
     * caveat, said as "not measured"; and its dense model runs on 8 GPUs
     * a side (disaggregated): the tensor-parallel one, first; then what
     * the run found (its requests longer than llama3-70b's window) */
    r = tu_kvsim("run --json");
    o = json_loads(r.out, 0, NULL);
    c = json_object_get(o, "caveats");
    assert_int_equal(json_array_size(c), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 2), "name")), "over_context");
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 0), "name")), "tensor_parallel");
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 1), "name")), "roofline");
    assert_non_null(strstr(r.err, "kvsim run: warning: not measured: hardware 'a800x8' has no measured tables or "
                                  "profile of llama3-70b"));
    assert_non_null(strstr(r.err, "kvsim run: warning: not validated: llama3-70b runs on 8 GPUs with tensor "
                                  "parallelism"));
    json_decref(o);
    tu_free(&r);
    /* one GPU a side: no tensor-parallel caveat, disaggregated or not */
    o = tu_kvsim_json("run --set trace.limit=50 --set hardware=h100x8 --set model=llama3.1-8b "
                      "--set cluster.gpus_per_instance=1 --json");
    json_array_foreach(json_object_get(o, "caveats"), i, v)
        assert_string_not_equal(json_string_value(json_object_get(v, "name")), "tensor_parallel");
    json_decref(o);
    /* with the calibration's profile of the model (asked for by name), no
     * caveat; with tables, none about the roofline (the bundled trace's
     * longest prompt is outside them: not_measured; the default 1 TB of
     * DRAM is more than an h100x1 node's 500 GB: the over_node finding) */
    o = tu_kvsim_json("run --set hardware=h100x1 --set model=llama3.1-8b --set cost.compute=profile "
                      "--set kvstore.dram_bytes=500GB --json");
    assert_null(json_object_get(o, "caveats"));
    json_decref(o);
    o = tu_kvsim_json("run --set hardware=h100x8 --set model=llama3.1-8b --set cluster.gpus_per_instance=1 --json");
    json_array_foreach(json_object_get(o, "caveats"), i, v)
        assert_string_not_equal(json_string_value(json_object_get(v, "name")), "roofline");
    json_decref(o);
    /* kvsim cost --json carries them too, and none where there is none */
    o = tu_kvsim_json("cost --set hardware=h20x8 --json");
    c = json_object_get(o, "caveats");
    assert_int_equal(json_array_size(c), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 0), "name")), "tensor_parallel");
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 1), "name")), "roofline");
    json_decref(o);
    o = tu_kvsim_json("cost --set model=llama3.1-8b --set hardware=h100x1 --batch 16 --context 1000 --json");
    assert_null(json_object_get(o, "caveats"));
    json_decref(o);
    /* another GPU's tables, scaled: said as transferred, not roofline */
    o = tu_kvsim_json(
        "run --set trace.limit=50 --set hardware=h800x8 --set hardware.optables=configs/optables/h100_sxm "
        "--set hardware.optables_transfer=true --json");
    c = json_object_get(o, "caveats"); /* tensor_parallel, transferred, over_context (llama3-70b's 8,192 tokens) */
    assert_int_equal(json_array_size(c), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 1), "name")), "transferred");
    assert_non_null(
        strstr(json_string_value(json_object_get(json_array_get(c, 1), "text")),
               "hardware 'h800x8' is priced from another GPU's measured tables (configs/optables/h100_sxm)"));
    json_decref(o);
    /* one side without tables is named: the prefill side here */
    o = tu_kvsim_json("run --set hardware=h100x8 --set model=llama3.1-8b --set cluster.gpus_per_instance=1 "
                      "--set cluster.prefill_hardware=h800x8 --set kvstore.dram_bytes=250GB --json");
    c = json_object_get(o, "caveats");
    assert_int_equal(json_array_size(c), 1);
    assert_non_null(strstr(json_string_value(json_object_get(json_array_get(c, 0), "text")), "hardware 'h800x8'"));
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moe_params),      cmocka_unit_test(test_experts_touched),
        cmocka_unit_test(test_moe_decode_cost), cmocka_unit_test(test_expert_parallel),
        cmocka_unit_test(test_cost_too_large),  cmocka_unit_test(test_validate_mixtral),
        cmocka_unit_test(test_caveats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
