/* tests/test_cost.c — the cost model and estimators against numbers worked
 * out by hand or published in the Mooncake paper (§2.2, Table 1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <math.h>

#include "sim/config/config.h"
#include "sim/cost/cost.h"
#include "sim/cost/estimator.h"

static void load(sim_config *cfg, char **sets, int n)
{
    sim_err err = {{0}};
    int rc = sim_config_load(cfg, NULL, sets, n, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
}

/* 2 · 80 layers · 8 KV heads · 128 · 2 B = 327,680 B = 320 KiB (Mooncake §7.3.1);
 * LLaMA3.1-8B: 2 · 32 · 8 · 128 · 2 = 131,072 B = 128 KiB. */
static void test_kv_bytes_per_token(void **state)
{
    sim_model m;
    sim_err err;
    assert_int_equal(sim_model_load("llama3-70b", &m, &err), 0);
    assert_true(sim_model_kv_bytes_per_token(&m) == 320 * 1024);
    assert_int_equal(sim_model_load("llama3.1-8b", &m, &err), 0);
    assert_true(sim_model_kv_bytes_per_token(&m) == 128 * 1024);
}

/* Eq. 1 at n = 1000 for LLaMA3-70B:
 * 80 · (4 · 1000² · 8192 + 22 · 1000 · 8192²) = 80 · (3.2768e10 + 1.476395008e12)
 * = 80 · 1.509163008e12 = 1.2073304064e14 FLOPs. */
static void test_prefill_flops(void **state)
{
    sim_model m;
    sim_err err;
    assert_int_equal(sim_model_load("llama3-70b", &m, &err), 0);
    assert_double_equal(sim_prefill_flops(&m, 1000), 1.2073304064e14, 1e3);
}

/* Eq. 2 worked numbers of §2.2: an 8192-token prefix needs ≈ 6 GB/s on
 * 8×A800 (G = 8 · 312 TFLOPS) and ≈ 19 GB/s on 8×H800 (G = 8 · 989 TFLOPS).
 * By hand for A800: 2.496e15 · 2·8192·2 / (8 · (4·8192·8192 + 22·8192²))
 * = 2.496e15 · 32768 / 1.3959e10 = 5.86e9 B/s. Within 10% of the paper. */
static void test_eq2_thresholds(void **state)
{
    sim_config a800, h800;
    char *set_h800[] = {"hardware=h800x8"};
    load(&a800, NULL, 0);
    load(&h800, set_h800, 1);
    double b_a800 = sim_eq2_min_bandwidth(&a800.model, a800.hw.flops, 8192);
    double b_h800 = sim_eq2_min_bandwidth(&h800.model, h800.hw.flops, 8192);
    assert_double_equal(b_a800, 5.86e9, 0.01e9);
    assert_true(fabs(b_a800 / 6e9 - 1) < 0.10);
    assert_true(fabs(b_h800 / 19e9 - 1) < 0.10);
    sim_config_free(&a800);
    sim_config_free(&h800);
}

/* Prefill time: (flops(n) − flops(p)) / (G · mfu) plus 1 ms per chunk when
 * chunked. n = 1000, p = 0, one chunk: 1.2073304064e14 / (2.496e15 · 0.45)
 * = 0.107492 s. A cached prefix makes it strictly cheaper; a full hit still
 * computes the last token. */
static void test_prefill_time(void **state)
{
    sim_config cfg;
    sim_cost c;
    sim_err err;
    load(&cfg, NULL, 0);
    assert_int_equal(sim_cost_init(&c, &cfg, &err), 0);
    assert_double_equal(sim_cost_prefill_s(&c, 1000, 0), 0.107492, 1e-5);
    assert_true(sim_cost_prefill_s(&c, 1000, 512) < sim_cost_prefill_s(&c, 1000, 0));
    assert_true(sim_cost_prefill_s(&c, 1000, 1000) > 0);
    /* 20000 uncached tokens = 3 chunks of ≤ 8192: +3 ms of chunk overhead. */
    double no_overhead = (sim_prefill_flops(&cfg.model, 20000)) / (cfg.hw.flops * cfg.prefill_mfu);
    assert_double_equal(sim_cost_prefill_s(&c, 20000, 0), no_overhead + 0.003, 1e-9);
    sim_config_free(&cfg);
}

/* Decode iteration on 8×A800 (docs/cost-model.md), batch 1, no context:
 *   memory   weights 70.6e9 · 2 B = 141.2 GB over 8 · 2039 GB/s · 0.9 =
 *            14.6808 TB/s → 9.61800 ms
 *   compute  2 · 70.6e9 / (8 · 312e12 · 0.45) = 0.12571 ms (< memory)
 *   all-red. 2 · 80 all-reduces · 10 µs = 1.6 ms, + 160 · 2·7/8 · 8192 · 2 B
 *            / (200 GB/s · 0.6) = 0.03823 ms → 1.63823 ms
 *   overhead 3 ms
 *   total    9.61800 + 1.63823 + 3 = 14.25623 ms.
 * 100k context tokens add 100000 · 327680 B / 14.6808e12 B/s = 2.23203 ms. */
static void test_decode_iteration(void **state)
{
    sim_config cfg;
    sim_cost c;
    sim_err err;
    load(&cfg, NULL, 0);
    assert_int_equal(sim_cost_init(&c, &cfg, &err), 0);
    sim_decode_terms t = sim_cost_decode_terms(&c, 1, 0);
    assert_double_equal(t.mem_s, 9.61800e-3, 1e-8);
    assert_double_equal(t.compute_s, 0.125712e-3, 1e-9);
    assert_double_equal(t.allreduce_s, 1.638229e-3, 1e-9);
    assert_double_equal(t.overhead_s, 3e-3, 1e-12);
    assert_double_equal(sim_cost_decode_iter_s(&c, 1, 0), 14.25623e-3, 1e-8);
    assert_double_equal(t.total_s, sim_cost_decode_iter_s(&c, 1, 0), 0);
    assert_double_equal(sim_cost_decode_iter_s(&c, 1, 100000) - sim_cost_decode_iter_s(&c, 1, 0), 2.23203e-3, 1e-8);
    /* HBM for KV: 640e9 · 0.9 − 141.2e9 = 434.8e9 B → 1,326,904 tokens. */
    assert_int_equal(sim_cost_decode_kv_tokens(&c), 1326904);
    sim_config_free(&cfg);
}

/* The all-reduce term by hand: 32 tokens of 8192 · 2 B = 524,288 B per
 * all-reduce; a ring moves 2·7/8 of it over each GPU's 120 GB/s (200 · 0.6):
 * 7.64587 µs, + 10 µs latency, × 160 = 2.823339 ms. On one GPU there is none. */
static void test_allreduce(void **state)
{
    sim_config a800, h100;
    sim_cost c, c1;
    sim_err err;
    char *set_h100[] = {"hardware=h100x1", "model=llama3.1-8b"};
    load(&a800, NULL, 0);
    load(&h100, set_h100, 2);
    assert_int_equal(sim_cost_init(&c, &a800, &err), 0);
    assert_int_equal(sim_cost_init(&c1, &h100, &err), 0);
    assert_double_equal(sim_cost_allreduce_s(&c, 32), 160 * (10e-6 + 2 * 7.0 / 8 * 524288 / 120e9), 1e-12);
    assert_double_equal(sim_cost_allreduce_s(&c, 32), 2.823339e-3, 1e-9);
    assert_double_equal(sim_cost_allreduce_s(&c, 0), 0, 0);
    assert_double_equal(sim_cost_allreduce_s(&c1, 32), 0, 0);
    assert_double_equal(sim_cost_decode_terms(&c1, 8, 8000).allreduce_s, 0, 0);
    sim_config_free(&a800);
    sim_config_free(&h100);
}

/* Tensor parallelism over 2, 4 and 8 H100s (NVLink 4: 450 GB/s each way,
 * · 0.6 = 270 GB/s; 10 µs per collective), Llama-2-70B, batch 32: each of
 * the 2 · 80 all-reduces carries 32 · 8192 · 2 = 524,288 B, of which a ring
 * moves 2 (g−1)/g over each GPU's link:
 *   g = 2: 160 · (10 µs + 1 · 524,288 / 270e9 = 1.941807 µs) = 1.910689 ms
 *   g = 4: 160 · (10 µs + 1.5 · 1.941807 µs)                = 2.066034 ms
 *   g = 8: 160 · (10 µs + 1.75 · 1.941807 µs)               = 2.143706 ms
 * The memory term sums the GPUs' HBM: 68,976,648,192 · 2 B of weights +
 * 32 · 1024 · 327,680 B of KV over g · 3,350 GB/s · 0.7234 (the H100's measured
 * streaming fraction, every H100 preset) = 30.678 ms at g = 2. */
static void test_allreduce_tp_presets(void **state)
{
    static const struct {
        const char *hw;
        double allreduce_ms, memory_ms;
    } want[] = {
        {"h100x2", 1.910689, (137953296384.0 + 10737418240.0) / (2 * 3350e9 * 0.7234) * 1e3},
        {"h100x4", 2.066034, (137953296384.0 + 10737418240.0) / (4 * 3350e9 * 0.7234) * 1e3},
        {"h100x8", 2.143706, (137953296384.0 + 10737418240.0) / (8 * 3350e9 * 0.7234) * 1e3},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char args[256];
        snprintf(args, sizeof args,
                 "cost --set model=llama-2-70b --set hardware=%s --set cost.compute=analytic --batch 32 --context 1024 "
                 "--json",
                 want[i].hw);
        json_t *o = tu_kvsim_json(args);
        assert_double_equal(json_number_value(json_object_get(o, "allreduce_ms")), want[i].allreduce_ms, 1e-4);
        assert_double_equal(json_number_value(json_object_get(o, "memory_ms")), want[i].memory_ms, 1e-4);
        assert_string_equal(json_string_value(json_object_get(o, "compute_model")), "analytic");
        json_decref(o);
    }
    /* Only the ring's share grows from 2 to 4 GPUs: 160 · 0.5 · 1.941807 µs. */
    assert_double_equal(want[1].allreduce_ms - want[0].allreduce_ms, 160 * 0.5 * 524288 / 270e9 * 1e3, 1e-6);
}

/* Invariants: the decode step grows with the batch and with the context;
 * small batches are memory-bound, large ones compute-bound. With ctx
 * tokens per request the compute term overtakes the memory term at
 * b ≈ (W / B_hbm) / (2·params/(G·mfu) + ctx·(attn/(G·mfu) − kv/B_hbm)):
 * at ctx 1000, 9.618 ms / (125.71 + 2.33 − 22.32 µs) ≈ 91 requests. */
static void test_decode_invariants(void **state)
{
    sim_config cfg;
    sim_cost c;
    sim_err err;
    load(&cfg, NULL, 0);
    assert_int_equal(sim_cost_init(&c, &cfg, &err), 0);
    double prev = 0;
    for (int b = 1; b <= 512; b++) {
        double t = sim_cost_decode_iter_s(&c, b, (int64_t)b * 1000);
        assert_true(t > prev);
        prev = t;
        for (int64_t ctx = 0; ctx < 400000; ctx += 50000)
            assert_true(sim_cost_decode_iter_s(&c, b, ctx + 50000) > sim_cost_decode_iter_s(&c, b, ctx));
    }
    sim_decode_terms small = sim_cost_decode_terms(&c, 4, 4000), large = sim_cost_decode_terms(&c, 256, 256000);
    assert_true(small.mem_s > small.compute_s);
    assert_true(large.compute_s > large.mem_s);
    assert_true(sim_cost_decode_terms(&c, 90, 90000).mem_s > sim_cost_decode_terms(&c, 90, 90000).compute_s);
    assert_true(sim_cost_decode_terms(&c, 92, 92000).compute_s > sim_cost_decode_terms(&c, 92, 92000).mem_s);
    sim_config_free(&cfg);
}

/* A hardware object without the decode-cost keys keeps the older model:
 * peak HBM bandwidth and no all-reduce (8.6562 ms + 3 ms = 11.6562 ms). */
static void test_decode_legacy_hardware(void **state)
{
    sim_config cfg;
    sim_cost c;
    sim_err err;
    char *sets[] = {"hardware={\"gpus_per_node\": 8, \"tflops_per_gpu\": 312, \"hbm_bytes_per_gpu\": 80e9, "
                    "\"hbm_GBps_per_gpu\": 2039, \"h2d_GBps\": 128, \"nic_Gbps\": 800, \"dram_bytes\": 1e12, "
                    "\"ssd_read_GBps\": 12, \"ssd_write_GBps\": 6, \"ssd_latency_us\": 80}"};
    load(&cfg, sets, 1);
    assert_int_equal(sim_cost_init(&c, &cfg, &err), 0);
    assert_double_equal(sim_cost_decode_iter_s(&c, 1, 0), 0.0116562, 1e-6);
    sim_config_free(&cfg);
}

/* A forward pass reads every weight: a prefill of 10 uncached tokens takes
 * the memory floor 141.2 GB / 14.6808 TB/s = 9.618 ms, not its ~1.05 ms of
 * FLOPs; from 92 tokens on the FLOPs dominate (`kvsim cost --prefill 92`:
 * 9.694 ms; Eq. 1 unchanged). */
static void test_prefill_floor(void **state)
{
    sim_config cfg;
    sim_cost c;
    sim_err err;
    load(&cfg, NULL, 0);
    assert_int_equal(sim_cost_init(&c, &cfg, &err), 0);
    assert_double_equal(sim_cost_prefill_s(&c, 10, 0), 9.61800e-3, 1e-8);
    assert_double_equal(sim_cost_prefill_s(&c, 5000, 4999), 9.61800e-3, 1e-8);
    double flops = sim_prefill_flops(&cfg.model, 100);
    assert_double_equal(sim_cost_prefill_s(&c, 100, 0), flops / (cfg.hw.flops * cfg.prefill_mfu), 1e-12);
    sim_config_free(&cfg);
}

/* Transfers: latency + bytes / bandwidth. 1 GB over the 800 Gbps NIC
 * (100 GB/s) with 20 µs latency = 10.02 ms; over 128 GB/s H2D = 7.8325 ms. */
static void test_transfers(void **state)
{
    sim_config cfg;
    sim_cost c;
    sim_err err;
    load(&cfg, NULL, 0);
    assert_int_equal(sim_cost_init(&c, &cfg, &err), 0);
    assert_double_equal(sim_cost_nic_s(&c, 1e9), 0.01002, 1e-9);
    assert_double_equal(sim_cost_h2d_s(&c, 1e9), 20e-6 + 1e9 / 128e9, 1e-9);
    assert_double_equal(sim_cost_nic_s(&c, 0), 0, 0);
    sim_config_free(&cfg);
}

/* The conductor's estimator is fitted, not copied: with no profiling noise
 * it matches the truth within 2% (chunk overheads are the only misfit);
 * with 5% noise it is still within 10% on large prefills, and not exact. */
static void test_estimator_fit(void **state)
{
    sim_config cfg;
    sim_cost c;
    sim_estimator e;
    sim_err err;
    load(&cfg, NULL, 0);
    assert_int_equal(sim_cost_init(&c, &cfg, &err), 0);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    assert_int_equal(sim_estimator_fit(&e, &c, rng, 400, 0.0, 131072, &err), 0);
    for (int32_t n = 2048; n <= 131072; n *= 2)
        for (int32_t p = 0; p < n; p += n / 4) {
            double truth = sim_cost_prefill_s(&c, n, p), est = sim_est_prefill_s(&e, n, p);
            assert_true(fabs(est / truth - 1) < 0.02);
        }
    assert_int_equal(sim_estimator_fit(&e, &c, rng, 400, 0.05, 131072, &err), 0);
    double truth = sim_cost_prefill_s(&c, 65536, 0), est = sim_est_prefill_s(&e, 65536, 0);
    assert_true(fabs(est / truth - 1) < 0.10);
    assert_true(est != truth);
    gsl_rng_free(rng);
    sim_config_free(&cfg);
}

/* `kvsim cost` prints the terms the library computes (the command quoted
 * in docs/cost-model.md beside published measurements). */
static void test_cost_command(void **state)
{
    json_t *o = tu_kvsim_json("cost --batch 1 --context 0 --prefill 1000 --json");
    assert_non_null(o);
    assert_double_equal(json_number_value(json_object_get(o, "decode_ms")), 14.2562, 1e-4);
    assert_double_equal(json_number_value(json_object_get(o, "allreduce_ms")), 1.6382, 1e-4);
    assert_double_equal(json_number_value(json_object_get(o, "prefill_ms")), 107.4902, 1e-3);
    /* 2 · 80 layers · 8 KV heads · 128 dims · 2 bytes; no --cached, no Eq. 2. */
    assert_double_equal(json_number_value(json_object_get(o, "kv_bytes_per_token")), 327680, 0);
    assert_double_equal(json_number_value(json_object_get(o, "eq2_min_GBps")), 0, 0);
    json_decref(o);
    /* Eq. 2 for the cached prefix, the hand value of test_eq2_thresholds. */
    o = tu_kvsim_json("cost --prefill 8192 --cached 8192 --json");
    assert_non_null(o);
    assert_double_equal(json_number_value(json_object_get(o, "eq2_min_GBps")), 5.86, 0.01);
    json_decref(o);
    tu_expect_stdout("cost --prefill 8192 --cached 8192",
                     "Mooncake Eq. 2: loading the 8192-token prefix beats recomputing it above 5.859 GB/s");
    /* At the breakdown's own prices (Eq. 2 takes peak FLOP/s; the audit found
     * it 3.4 times the measured prefills' 18.8 GB/s on h100x8): the prefix's
     * KV bytes over the prefill time it saves, from two prefills priced apart */
    const char *m = "cost --set model=llama3.1-8b --set hardware=h100x8 --prefill 8192";
    char args[256];
    snprintf(args, sizeof args, "%s --json", m);
    o = tu_kvsim_json(args);
    double whole = tu_num_at(o, "prefill_ms", NULL);
    json_decref(o);
    snprintf(args, sizeof args, "%s --cached 8191 --json", m);
    o = tu_kvsim_json(args);
    double saved_s = (whole - tu_num_at(o, "prefill_ms", NULL)) / 1e3;
    assert_double_equal(tu_num_at(o, "breakeven_GBps", NULL), 8191 * 131072.0 / saved_s / 1e9, 1e-3);
    printf("break-even at the breakdown's prices: %.3f GB/s; Eq. 2: %.3f GB/s\n", tu_num_at(o, "breakeven_GBps", NULL),
           tu_num_at(o, "eq2_min_GBps", NULL));
    json_decref(o);
    tu_expect_stdout("cost --batch 256 --context 1000", "(compute-bound)");
    tu_expect_exit("cost --batch 0", 2, "--batch");
    tu_expect_exit("cost --prefill 10 --cached 20", 2, "--cached exceeds --prefill");
    /* each count names itself and its range (all four once shared one line) */
    tu_expect_exit("cost --batch 100000001", 2, "kvsim cost: --batch: 100000001 is not in [1, 100000000]");
    tu_expect_exit("cost --context abc", 2, "kvsim cost: --context: 'abc' is not an integer");
    tu_expect_exit("cost --cached 100", 2, "--cached exceeds --prefill (0 when not given: give the prompt's tokens");
    /* one hardware a command: a split cluster's sides were once ignored and
     * the step priced on `hardware`, the sides unnamed */
    tu_expect_exit("cost --set cluster.prefill_hardware=h800x8 --set cluster.decode_hardware=h20x8", 2,
                   "kvsim cost: prices one hardware, and cluster.prefill_hardware (h800x8) and "
                   "cluster.decode_hardware (h20x8) split this cluster");
}

/* `kvsim cost HW REST --json`, whose first caveat must be `name`; the
 * caller reads the figures and frees the object. */
static json_t *cost_with_caveat(const char *hw, const char *rest, const char *name)
{
    char args[256];
    snprintf(args, sizeof args, "%s %s --json", hw, rest);
    json_t *o = tu_kvsim_json(args);
    json_t *cav = json_object_get(o, "caveats");
    assert_string_equal(json_string_value(json_object_get(json_array_get(cav, 0), "name")), name);
    return o;
}

/* A batch whose KV the HBM cannot hold is priced but said (`kv_overflow`):
 * 1,024 requests of 100,000 tokens are 102,400,000 KV tokens; the HBM's
 * count is the command's own `hbm_kv_tokens` (more than one such request,
 * far fewer than all), so floor(kv / 100,000) of them fit. A batch that
 * fits says nothing; a prompt longer than the HBM holds is said too. */
static void test_cost_kv_overflow(void **state)
{
    const char *hw = "cost --set model=llama3.1-8b --set hardware=h100x1 --set cluster.mode=aggregated";
    char args[256], want[256];
    json_t *o = cost_with_caveat(hw, "--batch 1024 --context 100000", "kv_overflow");
    long long kv = json_integer_value(json_object_get(o, "hbm_kv_tokens"));
    assert_true(kv > 100000 && kv < 102400000);
    json_decref(o);
    snprintf(args, sizeof args, "%s --batch 1024 --context 100000", hw);
    snprintf(want, sizeof want,
             "warning: does not fit: 1024 requests of 100000 tokens of context are 102400000 KV tokens, more than "
             "the %lld the HBM holds (%lld such requests)",
             kv, kv / 100000);
    tu_expect_exit(args, 0, want);
    snprintf(args, sizeof args, "%s --batch 4 --context 1000", hw);
    tu_expect_ok_without(args, NULL, "does not fit");
    snprintf(args, sizeof args, "%s --prefill 5000000", hw);
    tu_expect_exit(args, 0, "warning: does not fit: a prompt of 5000000 tokens needs more KV than the");
    /* both at once, both said (the prompt's was once dropped) */
    snprintf(args, sizeof args, "%s --batch 1024 --context 100000 --prefill 5000000", hw);
    tu_expect_exit(args, 0,
                   "such requests): the decode step is priced as if they fit; a run would queue or preempt "
                   "the rest; a prompt of 5000000 tokens needs more KV than the");
}

/* A chunked prefill's total is its passes' operations plus
 * cost.prefill_chunk_overhead_ms a chunk (1 ms, two 8,192-token chunks
 * here), and both say so (the total once exceeded the breakdown unsaid);
 * the JSON names its model and hardware. */
static void test_cost_prefill_parts(void **state)
{
    (void)state;
    json_t *o = tu_kvsim_json("cost --set model=llama3.1-8b --set hardware=h100x1 --prefill 16384 --json");
    double ops = 0;
    const char *k;
    const json_t *v;
    json_object_foreach(json_object_get(o, "prefill_ops_ms"), k, v) ops += json_number_value(v);
    assert_double_equal(tu_num_at(o, "prefill_overhead_ms", NULL), 2 * 1.0, 1e-9);
    assert_double_equal(tu_num_at(o, "prefill_ms", NULL), ops + 2.0, 1e-3); /* 4-decimal printing */
    assert_string_equal(json_string_value(json_object_get(o, "model")), "llama3.1-8b");
    assert_string_equal(json_string_value(json_object_get(o, "hardware")), "h100x1");
    json_decref(o);
    cli_result r = tu_kvsim("cost --set model=llama3.1-8b --set hardware=h100x1 --prefill 16384");
    assert_int_equal(r.status, 0);
    assert_non_null(
        strstr(r.out, "  chunks         2.000 ms  (cost.prefill_chunk_overhead_ms for each of its 8192-token chunks)"));
    tu_free(&r);
}

/* Without --context the decode line holds one token of context: a request
 * holds at least its prompt (vLLM refuses an empty one), and the measured
 * tables' generation attention starts there, so the plain command says
 * nothing of shapes outside them. Context 0, the roofline's weight floor,
 * was the default and warned `not measured` on every GPU with tables. */
static void test_cost_default_context(void **state)
{
    (void)state;
    const char *hw = "cost --set model=llama3.1-8b --set hardware=h100x1";
    char args[256];
    snprintf(args, sizeof args, "%s --json", hw);
    json_t *plain = tu_kvsim_json(args);
    snprintf(args, sizeof args, "%s --context 1 --json", hw);
    json_t *one = tu_kvsim_json(args);
    assert_double_equal(tu_num_at(plain, "context", NULL), 1, 0);
    assert_double_equal(tu_num_at(plain, "decode_ms", NULL), tu_num_at(one, "decode_ms", NULL), 0);
    assert_null(json_object_get(plain, "caveats"));
    json_decref(plain);
    json_decref(one);
    tu_expect_ok_without(hw, "requests of", "not measured");
    snprintf(args, sizeof args, "%s --context 0", hw);
    tu_expect_exit(args, 0,
                   "not measured: generation attention batch=1 context=1 heads=32/8/128: context outside "
                   "the measured on h100_sxm, taken at the smallest");
    snprintf(args, sizeof args, "%s --context 4096", hw);
    tu_expect_stdout(args, "HBM holds 420154 KV tokens (102 requests of 4096 context)");
}

/* A decode batch beyond the sequences the CPU constants were fitted on
 * (121 at once in the measured mode: docs/validation.md §4) is said
 * (`fit_range`), with the constants' share of the step, recomputed here
 * from the command's own overhead_ms / decode_ms; 121 itself is not. */
static void test_cost_fit_range(void **state)
{
    const char *hw = "cost --set model=llama3.1-8b --set hardware=h100x1 --set cluster.mode=aggregated";
    char args[256], want[256];
    json_t *o = cost_with_caveat(hw, "--batch 128 --context 1000", "fit_range");
    double share =
        100 * json_number_value(json_object_get(o, "overhead_ms")) / json_number_value(json_object_get(o, "decode_ms"));
    json_decref(o);
    snprintf(args, sizeof args, "%s --batch 128 --context 1000", hw);
    snprintf(want, sizeof want,
             "warning: not validated: a batch of 128 sequences is beyond the 121 at once of the training runs the CPU "
             "constants (engine.measured.iter_overhead_ms, seq_overhead_ms) were fitted on: their per-sequence term "
             "is extrapolated, %.0f%% of this step",
             share);
    tu_expect_exit(args, 0, want);
    snprintf(args, sizeof args, "%s --batch 121 --context 1000", hw);
    tu_expect_ok_without(args, NULL, "sequences is beyond the");
}

/* A disaggregated run says it too (sim_serving_note_fit_range, from the
 * decode instances' largest batch): the bundled trace at 8x on 2P1D
 * h200x1, whose measured decode steps carry the fitted constants. With at
 * most 64 sequences a step nothing is said; with 256 the peak lies in
 * (121, 256], and its step, recovered from the share as the constants by
 * hand (0.169 + 0.070 · peak ms) over that share, lies between the same
 * batch's step at no context and at 32,768 tokens each (`kvsim cost`).
 * The profile prices without the constants: nothing said. */
static void test_run_fit_range_disaggregated(void **state)
{
    const char *run = "run --set model=llama3.1-8b --set hardware=h200x1 --set cluster.prefill=2 --set "
                      "cluster.decode=1 --speed 8 --json";
    json_t *o = tu_kvsim_jsonf("%s --set cluster.decode_max_batch=64", run);
    assert_null(json_object_get(o, "fit_range"));
    json_decref(o);
    o = tu_kvsim_jsonf("%s --set cluster.decode_max_batch=256 --set cost.compute=profile", run);
    assert_null(json_object_get(o, "fit_range"));
    json_decref(o);
    o = tu_kvsim_jsonf("%s --set cluster.decode_max_batch=256", run);
    const json_t *fit = json_object_get(o, "fit_range");
    assert_non_null(fit);
    int peak = (int)json_integer_value(json_object_get(fit, "peak_seqs"));
    double share = json_number_value(json_object_get(fit, "overhead_share"));
    assert_true(peak > 121 && peak <= 256);
    assert_int_equal(json_integer_value(json_object_get(fit, "fitted_seqs")), 121);
    double step_ms = (0.169 + 0.070 * peak) / share;
    json_decref(o);
    o = tu_kvsim_jsonf("cost --set model=llama3.1-8b --set hardware=h200x1 --batch %d --context 0 --json", peak);
    assert_true(step_ms > tu_num_at(o, "decode_ms", NULL));
    json_decref(o);
    o = tu_kvsim_jsonf("cost --set model=llama3.1-8b --set hardware=h200x1 --batch %d --context 32768 --json", peak);
    assert_true(step_ms < tu_num_at(o, "decode_ms", NULL));
    json_decref(o);
}

/* A recomputed chunk costs what it adds to the prefill pass that computes
 * it (issue 32 item 1), pass(P, s) − pass(P − C, s). The toy (1 layer,
 * d = 100, 1e8 params, 1e12 FLOP/s at MFU 0.5, 1e12 B/s of HBM):
 * flops(n) = 400·n² + 2.2e5·n, a pass at least one weight read, 2e-4 s.
 * Chunk C ending a 4,096-token pass from token 0 (both passes compute-bound):
 * (flops(4096) − flops(4096 − C)) / 5e11 =
 *   C = 16: (400 · 16 · 8176 + 3.52e6) / 5e11 = 1.116928e-4 s
 *   C = 64: (400 · 64 · 8128 + 1.408e7) / 5e11 = 4.443136e-4 s
 *   C = 256: (400 · 256 · 7936 + 5.632e7) / 5e11 = 1.7379328e-3 s
 *   C = 1024: (400 · 1024 · 7168 + 2.2528e8) / 5e11 = 6.3225856e-3 s.
 * A 16-token chunk alone in its pass adds nothing: the pass is the weight
 * read either way (priced as a pass of its own, it cost 2e-4 s). Measured
 * tables (h100x1, LLaMA3.1-8B, configs/calibration/h100.json): the row of
 * 2,048 cached tokens is linear between 2,048 and 4,096 new ones (0.07030583
 * and 0.14612791 s), so a chunk ending a 4,096-token pass after 2,048 costs
 * C · 0.07582208 / 2048 s (16: 5.923e-4 s, where a pass of its own costs
 * 11.7 ms — what made plan crossover report 0 tokens at 16-token chunks). */
static void test_recompute_pricing(void **state)
{
    sim_config toy, h100;
    sim_cost c;
    sim_err err;
    char *set_toy[] = {"model={\"name\":\"toy\",\"layers\":1,\"hidden\":100,\"heads\":1,\"kv_heads\":1,"
                       "\"head_dim\":100,\"dtype_bytes\":2,\"params\":1e8}",
                       "hardware={\"name\":\"toy\",\"gpus_per_node\":1,\"tflops_per_gpu\":1,\"hbm_bytes_per_gpu\":1e10,"
                       "\"hbm_GBps_per_gpu\":1000,\"h2d_GBps\":50,\"nic_Gbps\":100,\"dram_bytes\":1e12,"
                       "\"ssd_read_GBps\":5,\"ssd_write_GBps\":5,\"ssd_latency_us\":100}",
                       "cost.prefill_mfu=0.5", "cost.compute=\"analytic\""};
    load(&toy, set_toy, 4);
    assert_int_equal(sim_cost_init(&c, &toy, &err), 0);
    const double sizes[] = {16, 64, 256, 1024}, toy_s[] = {1.116928e-4, 4.443136e-4, 1.7379328e-3, 6.3225856e-3};
    for (int i = 0; i < 4; i++)
        assert_double_equal(sim_cost_recompute_s(&c, 4096 - sizes[i], sizes[i], 4096), toy_s[i], 1e-15);
    assert_double_equal(sim_cost_recompute_s(&c, 0, 16, 16), 0, 0);
    assert_double_equal(sim_cost_prefill_pass_s(&c, 16, 0), 2e-4, 1e-15);
    /* the pass is never longer than the prompt so far, nor shorter than the chunk */
    assert_double_equal(sim_cost_pass_recompute_s(&c, 4096 - 256, 256, 0, 8192), toy_s[2], 1e-15);
    assert_double_equal(sim_cost_recompute_s(&c, 4096 - 256, 256, 1), sim_cost_recompute_s(&c, 3840, 256, 256), 0);
    char *set_h100[] = {"hardware=h100x1", "model=llama3.1-8b", "cost.compute=\"profile\""};
    load(&h100, set_h100, 3);
    assert_int_equal(sim_cost_init(&c, &h100, &err), 0);
    for (int i = 0; i < 4; i++)
        assert_double_equal(sim_cost_recompute_s(&c, 6144 - sizes[i], sizes[i], 4096),
                            sizes[i] * (0.14612791 - 0.07030583) / 2048, 1e-12);
    assert_true(sim_cost_prefill_pass_s(&c, 16, 6128) > 0.0116);
    sim_config_free(&toy);
    sim_config_free(&h100);
}

/* The engine mode (analytic roofline at cost.prefill_mfu) and the measured
 * tables price the same recomputed chunk alike: within the analytic
 * prefill's calibration error on LLaMA3.1-8B, at most 49.6% off a measured
 * point (docs/gpu-calibration.md, H100 compute table), for chunks of 16 to
 * 1,024 tokens anywhere in a 32K-token prompt prefilled in passes of the
 * token budget (8,192). Priced as passes of their own, a 16-token chunk
 * after 8,192 tokens was 13.2 ms measured against 0.3 ms of FLOPs. */
static void test_recompute_models_agree(void **state)
{
    sim_config eng, prof;
    sim_cost ce, cp;
    sim_err err;
    char *set_eng[] = {"hardware=h100x1", "model=llama3.1-8b", "cost.compute=\"engine\""};
    char *set_prof[] = {"hardware=h100x1", "model=llama3.1-8b", "cost.compute=\"profile\""};
    load(&eng, set_eng, 3);
    load(&prof, set_prof, 3);
    assert_int_equal(sim_cost_init(&ce, &eng, &err), 0);
    assert_int_equal(sim_cost_init(&cp, &prof, &err), 0);
    for (double C = 16; C <= 1024; C *= 4)
        for (double pos = 4096; pos < 32768; pos += 4096) {
            double e = sim_cost_pass_recompute_s(&ce, pos, C, 0, 8192);
            double p = sim_cost_pass_recompute_s(&cp, pos, C, 0, 8192);
            if (fabs(e / p - 1) > 0.496) fprintf(stderr, "chunk %.0f at %.0f: engine %g profile %g\n", C, pos, e, p);
            assert_true(fabs(e / p - 1) <= 0.496);
        }
    sim_config_free(&eng);
    sim_config_free(&prof);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recompute_pricing),      cmocka_unit_test(test_recompute_models_agree),
        cmocka_unit_test(test_kv_bytes_per_token),     cmocka_unit_test(test_prefill_flops),
        cmocka_unit_test(test_eq2_thresholds),         cmocka_unit_test(test_prefill_time),
        cmocka_unit_test(test_decode_iteration),       cmocka_unit_test(test_transfers),
        cmocka_unit_test(test_estimator_fit),          cmocka_unit_test(test_allreduce),
        cmocka_unit_test(test_allreduce_tp_presets),   cmocka_unit_test(test_decode_invariants),
        cmocka_unit_test(test_decode_legacy_hardware), cmocka_unit_test(test_prefill_floor),
        cmocka_unit_test(test_cost_command),           cmocka_unit_test(test_cost_kv_overflow),
        cmocka_unit_test(test_cost_fit_range),         cmocka_unit_test(test_cost_prefill_parts),
        cmocka_unit_test(test_cost_default_context),   cmocka_unit_test(test_run_fit_range_disaggregated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
