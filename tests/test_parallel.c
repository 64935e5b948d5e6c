/* tests/test_parallel.c — parallelism per instance (issue 33 item 4):
 * cluster.gpus_per_instance splits a node into tensor-parallel instances or
 * joins nodes into pipeline-parallel ones, with the communication terms
 * worked by hand, and `kvsim plan slo --tp` searching it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#define COST                                                                                                           \
    "cost --set hardware=h100x8 --set model=llama3.1-8b --set cost.compute=analytic --json --batch 32 --context 1000"

static double num(const json_t *o, const char *key) { return json_number_value(json_object_get(o, key)); }

static json_t *cost_at(int gpus)
{
    char args[256];
    snprintf(args, sizeof args, COST " --set cluster.gpus_per_instance=%d", gpus);
    return tu_kvsim_json(args);
}

/* LLaMA-3.1-8B (8.03e9 params: 16.06e9 B; 32 layers, d 4096) on H100 nodes
 * of 8 (3,350 GB/s · 0.7234 a GPU, the H100's measured streaming fraction; NVLink 450 GB/s · 0.6 = 270e9 B/s a
 * direction; 10 µs a collective; NIC 3,200 Gbit/s a node), batch 32 of
 * 1,000 tokens (4.194304e9 B of KV):
 *   g = 1: memory (16.06e9 + 4.194304e9) / 2.42339e12 = 8.35784 ms, no all-reduce;
 *   g = 2: memory half that; 64 all-reduces of 32 · 8192 B, ring share 1:
 *          64 · (10 µs + 32 · 8192 / 270e9) = 0.702137 ms;
 *   g = 8: memory an eighth; 64 · (10 µs + 1.75 · 32 · 8192 / 270e9) = 0.748740 ms;
 *   g = 16: two nodes in a pipeline: one stage's bandwidth (memory as g = 8),
 *          the same all-reduces, and one hop of 32 · 8192 B over a node's
 *          400e9 B/s NIC after 20 µs (cost.transfer_latency_us):
 *          0.748740 + 0.020655 = 0.769395 ms; twice the HBM for KV:
 *          (1,280e9 · 0.9 − 16.06e9) / 131,072 = 8,666,534 tokens. */
static void test_gpus_per_instance_cost(void **state)
{
    (void)state;
    const double mem1 = (16.06e9 + 4.194304e9) / (3350e9 * 0.7234) * 1e3;
    json_t *g1 = cost_at(1), *g2 = cost_at(2), *g8 = cost_at(8), *g16 = cost_at(16), *whole = tu_kvsim_json(COST);
    assert_double_equal(num(g1, "memory_ms"), mem1, 1e-4);
    assert_double_equal(num(g1, "allreduce_ms"), 0, 0);
    assert_double_equal(num(g2, "memory_ms"), mem1 / 2, 1e-4);
    assert_double_equal(num(g2, "allreduce_ms"), 64 * (10e-6 + 32 * 8192 / 270e9) * 1e3, 1e-4);
    assert_double_equal(num(g8, "memory_ms"), mem1 / 8, 1e-4);
    assert_double_equal(num(g8, "allreduce_ms"), 64 * (10e-6 + 1.75 * 32 * 8192 / 270e9) * 1e3, 1e-4);
    assert_double_equal(num(g16, "memory_ms"), num(g8, "memory_ms"), 0);
    assert_double_equal(num(g16, "allreduce_ms"), num(g8, "allreduce_ms") + (20e-6 + 32 * 8192 / 400e9) * 1e3, 1e-4);
    assert_int_equal(tu_int_field(g16, "hbm_kv_tokens"), 8666534);
    assert_int_equal(tu_int_field(g8, "hbm_kv_tokens"), tu_int_field(whole, "hbm_kv_tokens")); /* 8 = the node */
    assert_double_equal(num(g8, "decode_ms"), num(whole, "decode_ms"), 0);
    json_t *all[] = {g1, g2, g8, g16, whole};
    for (size_t i = 0; i < 5; i++) json_decref(all[i]);
    tu_expect_exit(COST " --set cluster.gpus_per_instance=3", 2,
                   "config key 'cluster.gpus_per_instance': 3 GPUs on h100x8's nodes of 8: give a divisor of 8");
    tu_expect_exit(COST " --set cluster.gpus_per_instance=12", 2, "12 GPUs on h100x8's nodes of 8");
    tu_expect_stdout("cost --set hardware=h100x8 --set model=llama3.1-8b --set cluster.gpus_per_instance=16",
                     "model llama3.1-8b on h100x8 (16 GPUs: tensor parallel 8 within a node x pipeline parallel 2 "
                     "nodes)");
}

/* plan slo --tp: one search per GPU count, the fewest GPUs picked; a count
 * the model does not fit is out with the reason (LLaMA3-70B's 141 GB on
 * one 80 GB GPU), not an error of the whole plan. Each answer is confirmed
 * once, on the search's own seed and trace (a run it already has): the
 * eight default confirmations of a --tp search are docs/hardware.md's
 * transcript, and tests/test_plan_confirm.c checks what they decide. */
static void test_plan_slo_tp(void **state)
{
    (void)state;
    json_t *o =
        tu_kvsim_json("plan slo --set model=llama3.1-8b --set hardware=h100x8 --tp 1,2 --ttft-p90-ms 300 "
                      "--tbt-p99-ms 30 --max-instances 4 --dram 250GB --scopes global --cpp 1 " TU_ONE_CONFIRMATION
                      "--jobs 2 --json");
    json_t *tp = json_object_get(o, "tp");
    assert_int_equal(json_array_size(tp), 2);
    assert_int_equal(tu_int_field(json_array_get(tp, 0), "gpus"), 2);
    assert_int_equal(tu_int_field(json_array_get(tp, 1), "gpus"), 4);
    assert_int_equal(tu_int_field(o, "picked"), 1);
    const char *cmd =
        json_string_value(json_object_get(json_object_get(json_object_get(o, "plan"), "cheapest"), "command"));
    assert_non_null(strstr(cmd, "--set cluster.gpus_per_instance=1 --set cluster.prefill=1 --set cluster.decode=1"));
    json_decref(o);
    o = tu_kvsim_json("plan slo --set hardware=h100x8 --tp 1,8 --ttft-p90-ms 500 --max-instances 4 --dram 250GB "
                      "--scopes global --cpp 1 " TU_ONE_CONFIRMATION "--jobs 2 --json");
    tp = json_object_get(o, "tp");
    assert_non_null(strstr(json_string_value(json_object_get(json_array_get(tp, 0), "error")), "does not fit"));
    assert_int_equal(tu_int_field(o, "picked"), 8);
    json_decref(o);
    tu_expect_exit("plan slo --tp 1,1 --ttft-p90-ms 500", 2, "--tp: 1 given twice");
    tu_expect_exit("plan slo --tp 2 --set cluster.gpus_per_instance=4 --ttft-p90-ms 500", 2,
                   "--tp sets cluster.gpus_per_instance itself");
}

/* plan slo --hardware over a priced and an unpriced kind compares both by
 * GPUs: a800x8 has no price_per_hour, and its 2P2D (32 GPUs) once won
 * against h100x8's 1P2D ($147.72 an hour, 24 GPUs) on 32 < 147.72. Priced
 * alike (a copy of a800x8 at $40 an instance-hour, by path), dollars. One
 * confirmation each (the default eight choose h100x8's 1P2D; one, 1P1D). */
static void test_plan_slo_unpriced_kind(void **state)
{
    (void)state;
    const char *base =
        "plan slo --speed 2 --ttft-p90-ms 600 --tbt-p99-ms 20 --jobs 2 " TU_ONE_CONFIRMATION "--hardware h100x8,";
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%sa800x8", base);
    cli_result r = tu_kvsim(cmd);
    assert_int_equal(r.status, 0);
    assert_non_null(
        strstr(r.out, "1P1D = 16 GPUs ($98.48 an hour; $20.029 per million output tokens)  <- fewest GPUs"));
    assert_non_null(strstr(r.out, "compared  by GPUs, not price: no hardware.price_per_hour for a800x8;"));
    assert_non_null(strstr(r.out, "runner-up a800x8: 2P2D = 32 GPUs"));
    assert_null(strstr(r.out, "<- cheapest"));
    tu_free(&r);
    snprintf(cmd, sizeof cmd, "%sa800x8 --json", base);
    json_t *o = tu_kvsim_json(cmd);
    assert_string_equal(json_string_value(json_object_get(o, "picked")), "h100x8");
    assert_string_equal(json_string_value(json_object_get(o, "compared_by")), "gpus");
    json_decref(o);
    json_t *a800 = json_load_file("configs/hardware/a800x8.json", 0, NULL);
    assert_non_null(a800);
    json_object_set_new(a800, "price_per_hour", json_real(40));
    char *text = json_dumps(a800, 0), *priced = tu_write_temp(text);
    free(text);
    json_decref(a800);
    snprintf(cmd, sizeof cmd, "%s%s --json", base, priced);
    o = tu_kvsim_json(cmd);
    assert_string_equal(json_string_value(json_object_get(o, "compared_by")), "price");
    json_decref(o);
    tu_remove_temp(priced);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpus_per_instance_cost),
        cmocka_unit_test(test_plan_slo_tp),
        cmocka_unit_test(test_plan_slo_unpriced_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
