/* tests/test_hetero.c — heterogeneous disaggregation (issue 33 item 3):
 * cluster.prefill_hardware and cluster.decode_hardware give each side of a
 * disaggregated cluster its own compute, HBM and NIC. Changing only the
 * decode preset moves only decode-side numbers; the H20 and H800 decode
 * terms by hand from the presets' bandwidths; the errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#define RUN   "run --json --set hardware=h800x8"
#define RUN_P RUN " --set metrics.first_token=prefill"

static double stat(const json_t *o, const char *metric, const char *s)
{
    return json_number_value(json_object_get(json_object_get(o, metric), s));
}

/* The bundled trace on 4 H800 prefill and 4 decode nodes, then with H20
 * decode nodes: every TTFT statistic and the prefill GPU time per request
 * stay to the bit (the prefill side is the same hardware and sees the same
 * arrivals); the decode steps are shorter (4.0 vs 3.35 TB/s of HBM, 450
 * vs 200 GB/s of NVLink: test_side_bandwidths). Naming the hardware's own
 * preset for both sides is the homogeneous run exactly. TTFT is taken at
 * the prefill's token (metrics.first_token = prefill): with the default,
 * the decode instance's first step, on the decode side's hardware, is in
 * it (docs/definitions.md, "First token"). */
static void test_decode_side_only(void **state)
{
    (void)state;
    static const char *const stats[] = {"mean", "p50", "p90", "p99"};
    json_t *homo = tu_kvsim_json(RUN_P);
    json_t *hetero = tu_kvsim_json(RUN_P " --set cluster.decode_hardware=h20x8");
    json_t *named = tu_kvsim_json(RUN_P " --set cluster.prefill_hardware=h800x8 --set cluster.decode_hardware=h800x8");
    for (size_t i = 0; i < 4; i++) {
        assert_double_equal(stat(hetero, "ttft_ms", stats[i]), stat(homo, "ttft_ms", stats[i]), 0);
        assert_double_equal(stat(named, "ttft_ms", stats[i]), stat(homo, "ttft_ms", stats[i]), 0);
        assert_double_equal(stat(named, "tbt_ms", stats[i]), stat(homo, "tbt_ms", stats[i]), 0);
        assert_true(stat(hetero, "tbt_ms", stats[i]) < stat(homo, "tbt_ms", stats[i]));
    }
    assert_double_equal(json_number_value(json_object_get(hetero, "prefill_gpu_s_mean")),
                        json_number_value(json_object_get(homo, "prefill_gpu_s_mean")), 0);
    assert_int_equal(tu_int_field(hetero, "completed"), tu_int_field(homo, "completed"));
    json_decref(homo);
    json_decref(hetero);
    json_decref(named);
}

/* The other way round: H20 prefill nodes (148 vs 989 TFLOPS) lengthen
 * TTFT; the prefill GPU time per request grows by about 989 / 148. */
static void test_prefill_side(void **state)
{
    (void)state;
    json_t *homo = tu_kvsim_json(RUN);
    json_t *slow = tu_kvsim_json(RUN " --set cluster.prefill_hardware=h20x8");
    assert_true(stat(slow, "ttft_ms", "mean") > 5 * stat(homo, "ttft_ms", "mean"));
    double ratio = json_number_value(json_object_get(slow, "prefill_gpu_s_mean")) /
                   json_number_value(json_object_get(homo, "prefill_gpu_s_mean"));
    assert_true(ratio > 0.9 * 989 / 148 && ratio < 989.0 / 148 * 1.01);
    json_decref(homo);
    json_decref(slow);
}

/* LLaMA3-70B (70.6e9 params, 141.2e9 B), batch 1, no context, analytic:
 *   memory     141.2e9 / (8 · 3,350e9 · 0.9) = 5.85406 ms (H800)
 *              141.2e9 / (8 · 4,000e9 · 0.9) = 4.90278 ms (H20): × 3350/4000
 *   all-reduce 160 · (10 µs + 1.75 · 16,384 / (200e9 · 0.6)) = 1.638227 ms (H800)
 *              160 · (10 µs + 1.75 · 16,384 / (450e9 · 0.6)) = 1.616991 ms (H20)
 *   compute    2 · 70.6e9 / (8 · 148e12 · 0.45) = 0.265015 ms on the H20. */
static void test_side_bandwidths(void **state)
{
    (void)state;
    json_t *h800 = tu_kvsim_json("cost --set hardware=h800x8 --json");
    json_t *h20 = tu_kvsim_json("cost --set hardware=h20x8 --json");
    double m800 = json_number_value(json_object_get(h800, "memory_ms"));
    double m20 = json_number_value(json_object_get(h20, "memory_ms"));
    assert_double_equal(m800, 141.2e9 / (8 * 3350e9 * 0.9) * 1e3, 1e-4);
    assert_double_equal(m20, 141.2e9 / (8 * 4000e9 * 0.9) * 1e3, 1e-4);
    assert_double_equal(m20 / m800, 3350.0 / 4000, 1e-5);
    assert_double_equal(json_number_value(json_object_get(h800, "allreduce_ms")),
                        160 * (10e-6 + 1.75 * 16384 / 120e9) * 1e3, 1e-4);
    assert_double_equal(json_number_value(json_object_get(h20, "allreduce_ms")),
                        160 * (10e-6 + 1.75 * 16384 / 270e9) * 1e3, 1e-4);
    assert_double_equal(json_number_value(json_object_get(h20, "compute_ms")), 2 * 70.6e9 / (8 * 148e12 * 0.45) * 1e3,
                        1e-4);
    json_decref(h800);
    json_decref(h20);
}

static void test_hetero_errors(void **state)
{
    (void)state;
    tu_expect_exit(RUN " --set cluster.decode_hardware=h21x8", 2,
                   "config key 'cluster.decode_hardware': unknown hardware preset 'h21x8'");
    tu_expect_exit(RUN " --set cluster.decode_hardware=h20x8 --set cluster.mode=aggregated", 2,
                   "cluster.mode 'aggregated' runs both phases on `hardware`");
    tu_expect_exit(RUN " --set cluster.decode_hardware=h20x8 --set policy.pd_controller=dynamic", 2,
                   "policy.pd_controller 'dynamic' moves nodes between prefill and decode");
    char *path = tu_write_temp("{\"name\": \"bad\", \"gpus_per_node\": 0, \"tflops_per_gpu\": 1}");
    char args[512];
    snprintf(args, sizeof args, RUN " --set cluster.prefill_hardware=%s", path);
    tu_expect_exit(args, 2, "config key 'cluster.prefill_hardware': config key 'hardware.gpus_per_node': 0");
    tu_remove_temp(path);
    path = tu_write_temp("{\"name\": \"bad\", \"gpus\": 8}");
    snprintf(args, sizeof args, RUN " --set cluster.prefill_hardware=%s", path);
    tu_expect_exit(args, 2, "config key 'hardware.gpus': unknown");
    tu_remove_temp(path);
}

/* A plan slo answer that the floor makes infeasible (exit 3). */
static json_t *infeasible_json(const char *args)
{
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 3);
    json_t *o = json_loads(r.out, 0, NULL);
    assert_non_null(o);
    tu_free(&r);
    return o;
}

/* plan slo: the TTFT floor from the prefill side, the TBT floor from the
 * decode side (each request alone: H20's 4.0 TB/s shortens the step), the
 * hardware named per side; with both sides' price_per_hour (inputs, here
 * made up: 2 and 1 a node-hour) the cheapest point's price is P · 2 + D · 1. */
static void test_plan_slo_sides(void **state)
{
    (void)state;
    const char *floor = "plan slo --set hardware=h800x8 --tbt-p99-ms 1 --ttft-p90-ms 1 --json";
    char args[1024];
    json_t *homo = infeasible_json(floor);
    snprintf(args, sizeof args, "%s --set cluster.decode_hardware=h20x8", floor);
    json_t *het = infeasible_json(args);
    const json_t *fh =
        json_object_get(json_array_get(json_object_get(json_object_get(homo, "floor"), "cpp"), 0), "floor");
    const json_t *fx =
        json_object_get(json_array_get(json_object_get(json_object_get(het, "floor"), "cpp"), 0), "floor");
    assert_double_equal(json_number_value(json_object_get(fx, "ttft_ms.p90")),
                        json_number_value(json_object_get(fh, "ttft_ms.p90")), 0);
    assert_true(json_number_value(json_object_get(fx, "tbt_ms.p99")) <
                json_number_value(json_object_get(fh, "tbt_ms.p99")));
    json_decref(homo);
    json_decref(het);
    char *p800 = tu_write_temp("{\"name\": \"p800\", \"gpus_per_node\": 8, \"tflops_per_gpu\": 989, "
                               "\"hbm_bytes_per_gpu\": 80e9, \"hbm_GBps_per_gpu\": 3350, \"h2d_GBps\": 256, "
                               "\"nic_Gbps\": 3200, \"dram_bytes\": 2e12, \"ssd_read_GBps\": 24, \"ssd_write_GBps\": "
                               "12, \"ssd_latency_us\": 80, \"price_per_hour\": 2}");
    char *p20 = tu_write_temp("{\"name\": \"p20\", \"gpus_per_node\": 8, \"tflops_per_gpu\": 148, "
                              "\"hbm_bytes_per_gpu\": 96e9, \"hbm_GBps_per_gpu\": 4000, \"h2d_GBps\": 256, "
                              "\"nic_Gbps\": 3200, \"dram_bytes\": 2e12, \"ssd_read_GBps\": 24, \"ssd_write_GBps\": "
                              "12, \"ssd_latency_us\": 80, \"price_per_hour\": 1}");
    snprintf(args, sizeof args,
             "plan slo --set hardware=h800x8 --set cluster.prefill_hardware=%s --set cluster.decode_hardware=%s "
             "--ttft-p90-ms 5000 --max-instances 4 --dram 250GB --scopes global --cpp 1 --jobs 2 --json",
             p800, p20);
    json_t *o = tu_kvsim_json(args);
    const json_t *c = json_object_get(o, "cheapest");
    assert_string_equal(json_string_value(json_object_get(o, "hardware")), "p800 prefill + p20 decode");
    double price = 2.0 * tu_int_field(c, "prefill") + tu_int_field(c, "decode");
    assert_double_equal(json_number_value(json_object_get(c, "price_per_hour")), price, 0);
    json_decref(o);
    /* priced on both sides, the frontier is the lowest price's, with it */
    args[strlen(args) - strlen(" --json")] = 0;
    cli_result r = tu_kvsim(args);
    char want[128];
    snprintf(want, sizeof want, "  $%.2f an hour\n", price);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "frontier: lowest price an hour for each DRAM level"));
    assert_non_null(strstr(r.out, want));
    tu_free(&r);
    tu_remove_temp(p800);
    tu_remove_temp(p20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_side_only), cmocka_unit_test(test_prefill_side),
        cmocka_unit_test(test_side_bandwidths),  cmocka_unit_test(test_hetero_errors),
        cmocka_unit_test(test_plan_slo_sides),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
