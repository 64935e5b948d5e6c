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

/* Decode iteration, memory bound: weights 70.6e9 · 2 B = 141.2 GB over
 * 8 · 2039 GB/s = 16.312 TB/s → 8.6562 ms, + 3 ms overhead = 11.6562 ms for
 * batch 1 with no context. 100k context tokens add 100000 · 327680 B /
 * 16.312e12 B/s = 2.0088 ms. */
static void test_decode_iteration(void **state)
{
    sim_config cfg;
    sim_cost c;
    sim_err err;
    load(&cfg, NULL, 0);
    assert_int_equal(sim_cost_init(&c, &cfg, &err), 0);
    assert_double_equal(sim_cost_decode_iter_s(&c, 1, 0), 0.0116562, 1e-6);
    assert_double_equal(sim_cost_decode_iter_s(&c, 1, 100000) - sim_cost_decode_iter_s(&c, 1, 0), 0.0020088, 1e-6);
    /* HBM for KV: 640e9 · 0.9 − 141.2e9 = 434.8e9 B → 1,326,904 tokens. */
    assert_int_equal(sim_cost_decode_kv_tokens(&c), 1326904);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kv_bytes_per_token), cmocka_unit_test(test_prefill_flops),
        cmocka_unit_test(test_eq2_thresholds),     cmocka_unit_test(test_prefill_time),
        cmocka_unit_test(test_decode_iteration),   cmocka_unit_test(test_transfers),
        cmocka_unit_test(test_estimator_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
