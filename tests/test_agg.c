/* tests/test_agg.c — the aggregated serving model (cluster.mode =
 * "aggregated", docs/lmcache.md) on a toy model and GPU whose times are
 * worked out here by hand from the cost model's formulas:
 *
 *   model: 1 layer, d = 100, 1 KV head of 100, 2-byte values, 1e8 params
 *          KV 2·1·1·100·2 = 400 bytes/token; weights 2e8 bytes
 *   GPU:   1e12 FLOP/s, MFU 0.5 (5e11 effective), 1e12 bytes/s of HBM
 *   flops(n) = l·(4·n²·d + 22·n·d²) = 4e2·n² + 2.2e5·n   (Mooncake Eq. 1)
 *   an iteration = max((2e8 + KV tokens read·400) / 1e12,
 *                      (prefill FLOPs + decodes·2e8) / 5e11)
 *   (decode and chunk overheads set to 0). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/testutil.h"

/* The toy's model and cost keys: what kvsim plan crossover reads of it
 * (it refuses a key it does not read, such as the run's keys below). */
#define TOY_COST                                                                                                       \
    "--set cluster.mode='\"aggregated\"' "                                                                             \
    "--set model='{\"name\":\"toy\",\"layers\":1,\"hidden\":100,\"heads\":1,\"kv_heads\":1,\"head_dim\":100,"          \
    "\"dtype_bytes\":2,\"params\":1e8}' "                                                                              \
    "--set cost.prefill_mfu=0.5 --set cost.compute=analytic "
#define TOY                                                                                                            \
    TOY_COST "--set cluster.instances=1 --set cost.decode_overhead_ms=0 --set cost.prefill_chunk_overhead_ms=0 "       \
             "--set engine.async_scheduling=false --set policy.router='\"round_robin\"' "

/* hardware with hbm bytes per GPU */
static void hw_arg(char *buf, size_t n, double hbm)
{
    snprintf(buf, n,
             "--set hardware='{\"name\":\"toy\",\"gpus_per_node\":1,\"tflops_per_gpu\":1,\"hbm_bytes_per_gpu\":%.0f,"
             "\"hbm_GBps_per_gpu\":1000,\"h2d_GBps\":50,\"nic_Gbps\":100,\"dram_bytes\":1e12,\"ssd_read_GBps\":5,"
             "\"ssd_write_GBps\":5,\"ssd_latency_us\":100}'",
             hbm);
}

static double flops(double n) { return 4e2 * n * n + 2.2e5 * n; }

/* An iteration of the toy, its KV kvb bytes a token (400 in the toy's bf16). */
static double iter_kv_s(double prefill_flops, int decodes, double kv_tokens, double kvb)
{
    double mem = (2e8 + kv_tokens * kvb) / 1e12, compute = (prefill_flops + decodes * 2e8) / 5e11;
    return mem > compute ? mem : compute;
}

static double iter_s(double prefill_flops, int decodes, double kv_tokens)
{
    return iter_kv_s(prefill_flops, decodes, kv_tokens, 400);
}

static json_t *run_toy(const char *trace, double hbm, const char *extra)
{
    char *path = tu_write_temp(trace), hw[512], args[4096];
    hw_arg(hw, sizeof hw, hbm);
    snprintf(args, sizeof args, "run --json " TOY "%s --set trace.path='\"%s\"' %s", hw, path, extra);
    json_t *j = tu_kvsim_json(args);
    tu_remove_temp(path);
    return j;
}

static double summary_num(const json_t *j, const char *a, const char *b)
{
    const json_t *v = json_object_get(j, a);
    return json_number_value(b ? json_object_get(v, b) : v);
}

/* One request of 1,000 tokens and 3 output tokens, alone: its prompt is
 * one chunk (budget 8,192): TTFT = max(2.004e-4, 6.2e8 / 5e11) = 1.24 ms;
 * each decode reads 1,001 (then 1,002) tokens of KV: max(~2.004e-4, 4e-4)
 * = 0.4 ms; TBT 0.4 ms. */
static void test_one_request_exact_ttft(void **state)
{
    json_t *j =
        run_toy("{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 3, \"hash_ids\": [1, 2]}\n", 1e10, "");
    double ttft = iter_s(flops(1000), 0, 1000) * 1e3;
    assert_double_equal(ttft, 1.24, 1e-12);
    assert_double_equal(summary_num(j, "ttft_ms", "mean"), ttft, 1e-6);
    assert_double_equal(summary_num(j, "tbt_ms", "mean"), iter_s(0, 1, 1001) * 1e3, 1e-6);
    assert_int_equal(json_integer_value(json_object_get(j, "completed")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "iterations")), 3);
    json_decref(j);
}

/* The same prompt under a budget of 256 tokens: 4 iterations of 256, 256,
 * 256 and 232 tokens, each reading the KV written so far. */
static void test_chunked_prefill_budget(void **state)
{
    json_t *j = run_toy("{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 1, \"hash_ids\": [1, 2]}\n",
                        1e10, "--set engine.max_num_batched_tokens=256");
    double t = 0, done = 0;
    for (int c = 0; c < 4; c++) {
        double len = c < 3 ? 256 : 232;
        t += iter_s(flops(done + len) - flops(done), 0, done + len);
        done += len;
    }
    assert_double_equal(summary_num(j, "ttft_ms", "mean"), t * 1e3, 1e-6);
    assert_int_equal(json_integer_value(json_object_get(j, "iterations")), 4);
    json_decref(j);
}

/* A prompt repeated after the first finished reuses its full pages from the
 * GPU prefix cache: 1,000 tokens = 62 full pages + 8 tokens; the second
 * computes 1000 − 992 = 8 tokens: flops(1000) − flops(992). */
static void test_prefix_cache_hit(void **state)
{
    json_t *j = run_toy("{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 1, \"hash_ids\": [1, 2]}\n"
                        "{\"timestamp\": 100, \"input_length\": 1000, \"output_length\": 1, \"hash_ids\": [1, 2]}\n",
                        1e10, "");
    double first = iter_s(flops(1000), 0, 1000), second = iter_s(flops(1000) - flops(992), 0, 1000);
    assert_double_equal(summary_num(j, "ttft_ms", "mean"), (first + second) / 2 * 1e3, 1e-6);
    assert_double_equal(summary_num(j, "recompute_fraction", NULL), (1000 + 8) / 2000.0, 1e-12);
    assert_double_equal(summary_num(j, "hit_rate_tokens", NULL), 992 / 2000.0, 1e-12);
    json_decref(j);
}

/* engine.prefix_caching = false: the same two requests share nothing, and
 * each computes its 1,000 tokens. */
static void test_prefix_caching_off(void **state)
{
    json_t *j = run_toy("{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 1, \"hash_ids\": [1, 2]}\n"
                        "{\"timestamp\": 100, \"input_length\": 1000, \"output_length\": 1, \"hash_ids\": [1, 2]}\n",
                        1e10, "--set engine.prefix_caching=false");
    assert_double_equal(summary_num(j, "ttft_ms", "mean"), iter_s(flops(1000), 0, 1000) * 1e3, 1e-6);
    assert_double_equal(summary_num(j, "recompute_fraction", NULL), 1, 1e-12);
    assert_double_equal(summary_num(j, "hit_rate_tokens", NULL), 0, 0);
    json_decref(j);
}

/* engine.chunked_prefill = false under a budget of 1,000: A's 900-token
 * prompt takes step 1; B (1,000 tokens, sent 0.5 ms in) does not fit
 * beside A's decodes (999 left) and waits through steps 2 and 3, then
 * goes whole in step 4; C's 1,200 tokens exceed the budget: rejected.
 * D's 50 tokens, queued behind B, would fit beside A's decode in step 3,
 * but vLLM stops scheduling the queue at the prompt that does not fit
 * (scheduler.py: "if not enable_chunked_prefill and num_new_tokens >
 * token_budget: break"): D waits for B, whose step 4 takes the whole
 * budget, and goes in step 5. */
static void test_chunked_prefill_off(void **state)
{
    json_t *j = run_toy("{\"timestamp\": 0, \"input_length\": 900, \"output_length\": 3, \"hash_ids\": [1]}\n"
                        "{\"timestamp\": 0.5, \"input_length\": 1000, \"output_length\": 1, \"hash_ids\": [2]}\n"
                        "{\"timestamp\": 0.6, \"input_length\": 1200, \"output_length\": 1, \"hash_ids\": [3]}\n",
                        1e10, "--set engine.chunked_prefill=false --set engine.max_num_batched_tokens=1000");
    double t1 = iter_s(flops(900), 0, 900), t2 = iter_s(0, 1, 901), t3 = iter_s(0, 1, 902),
           t4 = iter_s(flops(1000), 0, 1000);
    double ttft_b = t1 + t2 + t3 + t4 - 0.5e-3;
    assert_double_equal(summary_num(j, "ttft_ms", "mean"), (t1 + ttft_b) / 2 * 1e3, 1e-6);
    assert_int_equal(summary_num(j, "rejected", "at_arrival"), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "iterations")), 4);
    json_decref(j);
    /* the queue behind a prompt that waits for room waits too */
    j = run_toy("{\"timestamp\": 0, \"input_length\": 900, \"output_length\": 3, \"hash_ids\": [1]}\n"
                "{\"timestamp\": 0.5, \"input_length\": 1000, \"output_length\": 1, \"hash_ids\": [2]}\n"
                "{\"timestamp\": 0.7, \"input_length\": 50, \"output_length\": 1, \"hash_ids\": [4]}\n",
                1e10, "--set engine.chunked_prefill=false --set engine.max_num_batched_tokens=1000");
    double t5 = iter_s(flops(50), 0, 50), ttft_d = t1 + t2 + t3 + t4 + t5 - 0.7e-3;
    assert_double_equal(summary_num(j, "ttft_ms", "mean"), (t1 + ttft_b + ttft_d) / 3 * 1e3, 1e-6);
    assert_int_equal(json_integer_value(json_object_get(j, "iterations")), 5);
    json_decref(j);
    /* with chunking B starts in step 2, beside A's decode */
    j = run_toy("{\"timestamp\": 0, \"input_length\": 900, \"output_length\": 3, \"hash_ids\": [1]}\n"
                "{\"timestamp\": 0.5, \"input_length\": 1000, \"output_length\": 1, \"hash_ids\": [2]}\n",
                1e10, "--set engine.max_num_batched_tokens=1000");
    double c2 = iter_s(flops(999), 1, 901 + 999), c3 = iter_s(flops(1000) - flops(999), 1, 902 + 1000);
    assert_double_equal(summary_num(j, "ttft_ms", "mean"), (t1 + t1 + c2 + c3 - 0.5e-3) / 2 * 1e3, 1e-6);
    json_decref(j);
}

/* HBM for 80 pages (0.9·hbm − 2e8 = 1,280 tokens of KV): two 600-token
 * prompts (38 pages each) fit, but their decodes outgrow the rest and the
 * later one is preempted and recomputed; both finish. A 2,000-token prompt
 * (125 pages) could never fit and is rejected. */
static void test_preemption_and_reject(void **state)
{
    double hbm = (2e8 + 1280 * 400) / 0.9 + 1;
    json_t *j =
        run_toy("{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 100, \"hash_ids\": [1, 2]}\n"
                "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 100, \"hash_ids\": [3, 4]}\n"
                "{\"timestamp\": 0, \"input_length\": 2000, \"output_length\": 5, \"hash_ids\": [5, 6, 7, 8]}\n",
                hbm, "");
    assert_int_equal(json_integer_value(json_object_get(j, "hbm_pages")), 80);
    assert_true(json_integer_value(json_object_get(j, "preemptions")) >= 1);
    assert_int_equal(json_integer_value(json_object_get(j, "completed")), 2);
    assert_int_equal(summary_num(j, "rejected", "at_arrival"), 1);
    assert_true(json_integer_value(json_object_get(j, "peak_pages")) <= 80);
    json_decref(j);
}

/* LMCache CPU offload, by hand. HBM holds 80 pages (1,280 tokens). A (1,024
 * tokens, 64 pages) finishes; B (1,024 other tokens) needs 64 pages: 16 are
 * free and 48 of A's cached pages are evicted, tail first, so A's first 16
 * pages (256 tokens) stay. A again: 256 tokens from the GPU cache, chunks
 * 1–3 (256 tokens each) from CPU memory, where A's chunks were written after
 * its first prefill. A chunk is 256 · 400 = 102,400 bytes; a transfer costs
 * 20 µs + bytes / 50 GB/s: 2.2048e-5 s a chunk, or 16 page transfers of
 * 6,400 bytes, 3.22048e-4 s. Without layer-wise pipelining A waits for the
 * load, then computes its last token (memory-bound: 2.004096e-4 s). */
static const char *const offload_trace =
    "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [1, 2]}\n"
    "{\"timestamp\": 100, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [3, 4]}\n"
    "{\"timestamp\": 200, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [1, 2]}\n";

/* The toy's KV at kvb bytes a token (extra sets model.kv_dtype to match),
 * its HBM still holding 1,280 tokens. */
static double offload_ttft3_kv(double kvb, const char *extra)
{
    char args[1024];
    snprintf(args, sizeof args,
             "--set kvstore.lmcache=true --set kvstore.dram_bytes=1e9 --set cluster.layerwise=false "
             "--set metrics.request_rows=true %s",
             extra);
    json_t *j = run_toy(offload_trace, (2e8 + 1280 * kvb) / 0.9 + 1, args);
    /* mean of the three TTFTs; A's and B's first prefills are the same */
    double mean = summary_num(j, "ttft_ms", "mean") / 1e3;
    json_decref(j);
    return mean * 3 - 2 * iter_kv_s(flops(1024), 0, 1024, kvb);
}

static double offload_ttft3(const char *extra) { return offload_ttft3_kv(400, extra); }

static void test_lmcache_cpu_offload(void **state)
{
    double last = iter_s(flops(1024) - flops(1023), 0, 1024);
    assert_double_equal(offload_ttft3(""), 3 * 2.2048e-5 + last, 1e-9);
    assert_double_equal(offload_ttft3("--set kvstore.transfer='\"page\"'"), 3 * 3.22048e-4 + last, 1e-9);
    /* never: the 768 tokens past the GPU hit are recomputed */
    double recompute = iter_s(flops(1024) - flops(256), 0, 1024);
    assert_double_equal(offload_ttft3("--set kvstore.load='\"never\"'"), recompute, 1e-9);
    /* adaptive: chunk i computes in (2.62144e7·(2i + 1) + 5.632e7) / 5e11 s:
     * chunk 1 in 2.699264e-4, chunk 2 in 3.747840e-4. A chunk transfer
     * (2.2048e-5) beats both: all three load. 16 page transfers (3.22048e-4)
     * lose to chunk 1 and beat chunk 2: chunk 1 is recomputed (one iteration
     * of 2.699264e-4, while chunks 2-3 load, 6.44096e-4), then the last token. */
    assert_double_equal((flops(512) - flops(256)) / 5e11, 2.699264e-4, 1e-12);
    assert_double_equal((flops(768) - flops(512)) / 5e11, 3.74784e-4, 1e-12);
    assert_double_equal(offload_ttft3("--set kvstore.load='\"adaptive\"'"), 3 * 2.2048e-5 + last, 1e-9);
    assert_double_equal(offload_ttft3("--set kvstore.load='\"adaptive\"' --set kvstore.transfer='\"page\"'"),
                        2 * 3.22048e-4 + last, 1e-9);
}

/* The same from the other tiers, CPU memory off. Disk: 100 µs + 102,400
 * bytes at 5 GB/s, then the host copy: 1.42528e-4 s a chunk. Remote store
 * (15 Gbps, 1 ms): 1e-3 + 102,400 / 1.875e9 + 2.2048e-5 = 1.07666133e-3 s. */
static void test_lmcache_disk_and_remote(void **state)
{
    double last = iter_s(flops(1024) - flops(1023), 0, 1024);
    assert_double_equal(offload_ttft3("--set kvstore.dram_bytes=0 --set kvstore.ssd_bytes=1e9"), 3 * 1.42528e-4 + last,
                        1e-9);
    assert_double_equal(offload_ttft3("--set kvstore.dram_bytes=0 --set kvstore.remote.bytes=1e9"),
                        3 * (1e-3 + 102400 / 1.875e9 + 2.2048e-5) + last, 1e-9);
}

/* The remote store is one link for the cluster (issue 41 item 4): two
 * instances (HBM of 1,280 tokens each) prefill A and B, then C and D, which
 * push A's and B's tails out of HBM (the remote store keeps every chunk:
 * CPU memory off); then A and B return at the same moment, each to the
 * instance holding its first 256 tokens, and each loads chunks 1-3 from the
 * remote store. Alone, a fetch holds the link for 3 × 102,400 bytes at
 * 15 Gbit/s: 163,840 ns; the second of the two waits that long for the
 * link, the first not at all (lmcache.remote_queue_s), and the mean TTFT
 * of the six requests is that wait / 6 above the same run with every
 * fetch on a link of its own (A and B a second apart). */
static const char *const shared_trace =
    "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [1, 2]}\n"
    "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [3, 4]}\n"
    "{\"timestamp\": 100, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [5, 6]}\n"
    "{\"timestamp\": 100, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [7, 8]}\n"
    "{\"timestamp\": 200, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [1, 2]}\n"
    "{\"timestamp\": %d, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [3, 4]}\n";

static json_t *shared_run(int b_at_ms)
{
    char trace[1024];
    snprintf(trace, sizeof trace, shared_trace, b_at_ms);
    return run_toy(trace, (2e8 + 1280 * 400) / 0.9 + 1,
                   "--set cluster.instances=2 --set kvstore.lmcache=true --set kvstore.dram_bytes=0 "
                   "--set kvstore.remote.bytes=1e9 --set cluster.layerwise=false");
}

static void test_lmcache_remote_link_is_shared(void **state)
{
    json_t *together = shared_run(200), *apart = shared_run(1200);
    const json_t *lt = json_object_get(together, "lmcache"), *la = json_object_get(apart, "lmcache");
    double link = 3 * 102400 / 1.875e9;
    printf("remote chunks %lld and %lld; queued %.9f s and %.9f s (hand: %.9f and 0); mean TTFT %.9f vs %.9f ms\n",
           (long long)json_integer_value(json_object_get(json_object_get(lt, "chunk_hits"), "remote")),
           (long long)json_integer_value(json_object_get(json_object_get(la, "chunk_hits"), "remote")),
           summary_num(lt, "remote_queue_s", NULL), summary_num(la, "remote_queue_s", NULL), link,
           summary_num(together, "ttft_ms", "mean"), summary_num(apart, "ttft_ms", "mean"));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(lt, "chunk_hits"), "remote")), 6);
    assert_double_equal(summary_num(lt, "remote_queue_s", NULL), link, 1e-9);
    assert_double_equal(summary_num(la, "remote_queue_s", NULL), 0, 0);
    assert_double_equal(summary_num(together, "ttft_ms", "mean") - summary_num(apart, "ttft_ms", "mean"),
                        link / 6 * 1e3, 1e-6);
    /* the link's busy share: its 6 chunks' seconds over the run's, the
     * same whether the fetches queued or not */
    for (int i = 0; i < 2; i++) {
        json_t *run = i ? apart : together;
        assert_double_equal(summary_num(json_object_get(run, "utilisation"), "remote_link", NULL),
                            2 * link / summary_num(run, "sim_seconds", NULL), 1e-9);
    }
    json_decref(together);
    json_decref(apart);
}

/* FP8 KV (model.kv_dtype, issue 33 item 2) halves every KV byte of the run:
 * a chunk is 256 · 200 = 51,200 bytes, from CPU memory 20 µs + 51,200 /
 * 50 GB/s = 2.1024e-5 s, from disk 100 µs + 51,200 / 5 GB/s first,
 * 1.31264e-4 s in all; A's last token reads 1,024 tokens of KV at 200
 * bytes: (2e8 + 204,800) / 1e12 = 2.002048e-4 s. */
static void test_lmcache_fp8_kv(void **state)
{
    double last = iter_kv_s(flops(1024) - flops(1023), 0, 1024, 200);
    assert_double_equal(last, 2.002048e-4, 1e-12);
    assert_double_equal(offload_ttft3_kv(200, "--set model.kv_dtype=fp8"), 3 * 2.1024e-5 + last, 1e-9);
    assert_double_equal(offload_ttft3_kv(200, "--set model.kv_dtype=fp8_e5m2 --set kvstore.dram_bytes=0 "
                                              "--set kvstore.ssd_bytes=1e9"),
                        3 * 1.31264e-4 + last, 1e-9);
    /* bf16 named is the toy's own 2-byte dtype: the bf16 numbers above. */
    assert_double_equal(offload_ttft3("--set model.kv_dtype=bf16"),
                        3 * 2.2048e-5 + iter_s(flops(1024) - flops(1023), 0, 1024), 1e-9);
}

/* "inf" is an unbounded tier, never an absent one (issue 27 item 5: the
 * chunk count of inf overflowed an int64 cast and the tier vanished). By
 * hand: each tier alone serves A's three chunks as a bounded one does.
 * On the LMCache CPU offload preset (1,500 requests of the bundled trace)
 * every tier alone gives the same chunk hits at inf as at 1e18 bytes, an
 * exabyte that no run fills, and some: the 202 it also gives at 500 GB. */
static void test_lmcache_inf_is_an_unbounded_tier(void **state)
{
    double last = iter_s(flops(1024) - flops(1023), 0, 1024);
    assert_double_equal(offload_ttft3("--set kvstore.dram_bytes=inf"), 3 * 2.2048e-5 + last, 1e-9);
    assert_double_equal(offload_ttft3("--set kvstore.dram_bytes=0 --set kvstore.ssd_bytes=inf"), 3 * 1.42528e-4 + last,
                        1e-9);
    assert_double_equal(offload_ttft3("--set kvstore.dram_bytes=0 --set kvstore.remote.bytes=inf"),
                        3 * (1e-3 + 102400 / 1.875e9 + 2.2048e-5) + last, 1e-9);
    static const struct {
        const char *set, *tier;
    } tiers[] = {{"kvstore.dram_bytes", "cpu"}, {"kvstore.ssd_bytes", "disk"}, {"kvstore.remote.bytes", "remote"}};
    for (size_t t = 0; t < sizeof tiers / sizeof tiers[0]; t++) {
        int64_t hits[2];
        for (int inf = 0; inf < 2; inf++) {
            char args[512];
            snprintf(args, sizeof args,
                     "run --json --config configs/clusters/lmcache-cpu-offload.json --set kvstore.dram_bytes=0 "
                     "--set %s=%s",
                     tiers[t].set, inf ? "inf" : "1e18");
            json_t *j = tu_kvsim_json(args);
            hits[inf] = tu_int_field(json_object_get(json_object_get(j, "lmcache"), "chunk_hits"), tiers[t].tier);
            json_decref(j);
        }
        assert_int_equal(hits[1], hits[0]);
        assert_int_equal(hits[0], 202);
    }
}

/* Prefetch: one request at a time (decode_max_batch 1). CPU memory holds 4
 * chunks, so B's chunks push A's out of it (the remote store keeps them),
 * and X's 4 pages evict 4 more of A's GPU pages: A keeps 12 (192 tokens)
 * and needs chunks 0-3. X (20 output tokens, ~8 ms of decoding) holds the
 * instance while A waits, long enough for A's 4 remote chunks (4.2 ms) to
 * reach CPU memory: A then loads them from there. Without prefetch they
 * come from the remote store. */
static void test_lmcache_prefetch(void **state)
{
    const char *trace =
        "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [1, 2]}\n"
        "{\"timestamp\": 100, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [3, 4]}\n"
        "{\"timestamp\": 200, \"input_length\": 64, \"output_length\": 20, \"hash_ids\": [9]}\n"
        "{\"timestamp\": 200.0001, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [1, 2]}\n";
    double hbm = (2e8 + 1280 * 400) / 0.9 + 1;
    const char *common = "--set kvstore.lmcache=true --set kvstore.dram_bytes=409600 --set kvstore.remote.bytes=1e9 "
                         "--set cluster.decode_max_batch=1 ";
    for (int pf = 0; pf < 2; pf++) {
        char extra[512];
        snprintf(extra, sizeof extra, "%s--set kvstore.prefetch=%s", common, pf ? "true" : "false");
        json_t *j = run_toy(trace, hbm, extra);
        const json_t *hits = json_object_get(json_object_get(j, "lmcache"), "chunk_hits");
        assert_int_equal(json_integer_value(json_object_get(hits, "cpu")), pf ? 4 : 0);
        assert_int_equal(json_integer_value(json_object_get(hits, "remote")), pf ? 0 : 4);
        json_decref(j);
    }
}

/* kvstore.cpu_scope: two instances on one node, A twice, routed round-robin
 * to instance 0 then 1. A node's shared CPU pool serves instance 1 A's 4
 * chunks; per-instance pools do not. */
static void test_lmcache_cpu_scope(void **state)
{
    const char *trace = "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [1, 2]}\n"
                        "{\"timestamp\": 100, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [1, 2]}\n";
    for (int node = 0; node < 2; node++) {
        char extra[512];
        snprintf(extra, sizeof extra,
                 "--set cluster.instances=2 --set cluster.instances_per_node=2 --set kvstore.lmcache=true "
                 "--set kvstore.dram_bytes=1e9 --set kvstore.cpu_scope='\"%s\"'",
                 node ? "node" : "instance");
        json_t *j = run_toy(trace, 1e10, extra);
        const json_t *hits = json_object_get(json_object_get(j, "lmcache"), "chunk_hits");
        assert_int_equal(json_integer_value(json_object_get(hits, "cpu")), node ? 4 : 0);
        json_decref(j);
    }
}

/* Load or recompute, one request alone (issue 32 item 2). HBM holds 272
 * pages (4,352 tokens); A (4,096 tokens) finishes and its 16 chunks go to
 * the remote store (15 Gbps, 1 ms: a chunk loads in
 * l = 1e-3 + 102,400 / 1.875e9 + 2.2048e-5 = 1.07666133e-3 s); B (4,096
 * other tokens) evicts all of A's pages but the first 16; A again: 256
 * tokens from the GPU cache, chunks 1–15 in the store, alone (no decoder,
 * nothing queued: w = 0). Recomputing chunk i inside A's prefill from
 * token 256 costs what it adds to the pass of iC tokens after 256:
 *   m_1 = max(flops(512) − flops(256), 1e8) / 5e11 − 2e-4 = 6.99264e-5
 *        (that pass is memory-bound: the weight read is paid anyway),
 *   m_i = (flops((i + 1)·256) − flops(i·256)) / 5e11, i ≥ 2.
 * balanced: with chunks [1, k) recomputed (R_k = m_1 + … + m_{k−1}) while
 * [k, 16) load (L_k = (16 − k)·l), TTFT(k) = max(L_k, R_k) + 0 (the last
 * token, after the run, adds nothing in a memory-bound pass):
 *   k = 9: L 7.536629e-3, R 4.895424e-3;  k = 10: L 6.459968e-3,
 *   R 6.004211e-3;  k = 11: L 5.383307e-3, R 7.217856e-3,
 * so k = 10: 9 chunks recomputed in one iteration of tokens [256, 2,560)
 * (6.2042112e-3 s) while 6 load (6.459968e-3 s), then the last token
 * (2.016384e-4 s): TTFT 6.6616064e-3 s, against 15 · l + 2.016384e-4 =
 * 1.63515584e-2 s when every chunk loads.
 * adaptive walks the run: chunk i is recomputed while l ≥ m_i (to i = 8:
 * m_8 = 1.0039296e-3, m_9 = 1.1087872e-3) and the recompute so far ends
 * before the loads from chunk i on would (R_9 = 4.895424e-3 < 8 · l): 8 chunks, one
 * iteration of [256, 2,304) (5.095424e-3 s) while 7 load (7.536629e-3 s),
 * then the last token. */
static json_t *remote_alone(const char *load)
{
    static const char *const trace =
        "{\"timestamp\": 0, \"input_length\": 4096, \"output_length\": 1, \"hash_ids\": [1, 2, 3, 4, 5, 6, 7, 8]}\n"
        "{\"timestamp\": 100, \"input_length\": 4096, \"output_length\": 1, \"hash_ids\": [9, 10, 11, 12, 13, 14, "
        "15, 16]}\n"
        "{\"timestamp\": 200, \"input_length\": 4096, \"output_length\": 1, \"hash_ids\": [1, 2, 3, 4, 5, 6, 7, 8]}\n";
    char args[512];
    snprintf(args, sizeof args,
             "--set kvstore.lmcache=true --set kvstore.dram_bytes=0 --set kvstore.remote.bytes=1e9 "
             "--set cluster.layerwise=false --set kvstore.load='\"%s\"'",
             load);
    return run_toy(trace, (2e8 + 4352 * 400) / 0.9 + 1, args);
}

/* A's second TTFT: the mean of three less the two first prefills. */
static double third_ttft_s(const json_t *j)
{
    return summary_num(j, "ttft_ms", "mean") / 1e3 * 3 - 2 * iter_s(flops(4096), 0, 4096);
}

static void test_balanced_split_by_hand(void **state)
{
    double l = 1e-3 + 102400 / 1.875e9 + 2.2048e-5, last = iter_s(flops(4096) - flops(4095), 0, 4096);
    assert_double_equal(last, 2.016384e-4, 1e-12);
    assert_double_equal(iter_s(flops(2560) - flops(256), 0, 2560), 6.2042112e-3, 1e-12);
    json_t *j = remote_alone("balanced");
    const json_t *m = json_object_get(j, "lmcache");
    assert_int_equal(json_integer_value(json_object_get(m, "chunks_recomputed")), 9);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "chunk_hits"), "remote")), 6);
    assert_double_equal(third_ttft_s(j), 6 * l + last, 1e-9);
    assert_double_equal(6 * l + last, 6.6616064e-3, 1e-12);
    json_decref(j);
    j = remote_alone("always");
    assert_double_equal(third_ttft_s(j), 15 * l + last, 1e-9);
    json_decref(j);
    j = remote_alone("adaptive");
    m = json_object_get(j, "lmcache");
    assert_int_equal(json_integer_value(json_object_get(m, "chunks_recomputed")), 8);
    assert_double_equal(third_ttft_s(j), 7 * l + last, 1e-9);
    json_decref(j);
}

/* The same choice with a request decoding beside it (w = 1). Two instances,
 * round robin: A (4,096 tokens) on instance 0 writes its 16 chunks to the
 * remote store; D (16 tokens) on instance 1; a 16-token request on
 * instance 0; A again on instance 1, where no page of A is cached: chunks
 * 0–15 in the store, nothing from the GPU. D decodes 1,000 tokens (0.4 ms
 * each, until after A arrives) or 1 (gone). Chunk i's recompute inside A's
 * prefill from token 0: m_0 = max(1.6499e-4, 2e-4) − 2e-4 = 0, m_1 =
 * flops(512) / 5e11 − 2e-4 = 2.35e-4, m_i = (flops((i + 1)·256) −
 * flops(i·256)) / 5e11 after; l = 1.07666133e-3 as above. balanced takes the
 * k minimising max(L_k, R_k) + w · R_k: alone (w = 0) k = 10 (max(6.459968e-3,
 * 6.16928e-3)); beside D (w = 1) k = 9 (7.536629e-3 + 5.060493e-3 =
 * 1.2597e-2, where k = 10 costs 6.459968e-3 + 6.16928e-3 = 1.2629e-2).
 * adaptive recomputes chunk k while l ≥ (1 + w) · m_k: alone chunks 0–8
 * (m_9 = 1.1088e-3 > l), beside D chunks 0–3 (2 · m_4 = 1.169e-3 > l). D's
 * TBT slack, 99 · (0.1 s − a step), binds neither. */
static json_t *remote_beside(const char *load, int decoder_tokens)
{
    char trace[1024], args[512];
    snprintf(trace, sizeof trace,
             "{\"timestamp\": 0, \"input_length\": 4096, \"output_length\": 1, \"hash_ids\": [1, 2, 3, 4, 5, 6, 7, "
             "8]}\n{\"timestamp\": 199900, \"input_length\": 16, \"output_length\": %d, \"hash_ids\": [20]}\n"
             "{\"timestamp\": 199950, \"input_length\": 16, \"output_length\": 1, \"hash_ids\": [21]}\n"
             "{\"timestamp\": 200000, \"input_length\": 4096, \"output_length\": 1, \"hash_ids\": [1, 2, 3, 4, 5, 6, "
             "7, 8]}\n",
             decoder_tokens);
    snprintf(args, sizeof args,
             "--set cluster.instances=2 --set kvstore.lmcache=true --set kvstore.dram_bytes=0 "
             "--set kvstore.remote.bytes=1e9 --set cluster.layerwise=false --set kvstore.load='\"%s\"'",
             load);
    return run_toy(trace, 1e10, args);
}

static int64_t recomputed_chunks(const char *load, int decoder_tokens)
{
    json_t *j = remote_beside(load, decoder_tokens);
    int64_t n = json_integer_value(json_object_get(json_object_get(j, "lmcache"), "chunks_recomputed"));
    assert_int_equal(json_integer_value(json_object_get(j, "completed")), 4);
    json_decref(j);
    return n;
}

/* Alone on its instance, with a link slower than any chunk's recompute,
 * adaptive recomputes every chunk: it prices as never (no chunk loaded).
 * Its rule once asked the recompute to hide under the loads after the
 * chunk, which no last chunk can, and every request loaded one: a mean
 * TTFT of 22 s against 0.59 s at 0.01 Gbps. */
static void test_adaptive_alone_on_a_slow_link(void **state)
{
    (void)state;
    char *trace = tu_gen_trace("--workload multiround-qa --users 1 --rounds 1 --documents 30 --doc-tokens 20000 "
                               "--requests 90 --rate 0.01"),
         args[1024];
    double ttft[2];
    const char *loads[2] = {"adaptive", "never"};
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args,
                 "run --json --trace %s --config configs/clusters/lmcache-central-storage.json "
                 "--set kvstore.remote.Gbps=0.01 --set kvstore.load=%s",
                 trace, loads[i]);
        json_t *j = tu_kvsim_json(args);
        ttft[i] = summary_num(j, "ttft_ms", "mean");
        if (i == 0)
            assert_int_equal(json_integer_value(json_object_get(
                                 json_object_get(json_object_get(j, "lmcache"), "chunk_hits"), "remote")),
                             0);
        json_decref(j);
    }
    assert_double_equal(ttft[0], ttft[1], 1e-9);
    tu_remove_temp(trace);
}

/* A remote store's link too slow for its fetches binds the first token:
 * the diagnosis names it (it named the instances, busy 0.11), with the
 * bandwidth that would bring it to 0.8 busy when it saturates. */
static void test_lmcache_link_binds(void **state)
{
    (void)state;
    char *trace = tu_gen_trace("--workload multiround-qa --users 4 --rounds 3 --documents 30 --doc-tokens 20000 "
                               "--requests 90 --rate 1"),
         args[1024];
    snprintf(args, sizeof args,
             "run --trace %s --config configs/clusters/lmcache-central-storage.json --set kvstore.remote.Gbps=0.5 "
             "--set kvstore.load=always",
             trace);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    if (!strstr(r.out, "binding: the remote store's link (kvstore.remote.Gbps) (utilisation 0.4"))
        fail_msg("the diagnosis does not name the link: %s", r.out);
    assert_non_null(strstr(r.err, "busiest: the remote store's link (kvstore.remote.Gbps) 0.4"));
    tu_free(&r);
    tu_remove_temp(trace);
}

/* The LMCache tiers evict by kvstore.eviction (they were LRU whatever it
 * said, and belady passed): on a CPU pool that thrashes under LRU, s3fifo
 * keeps some of it; belady is refused, as in the disaggregated store. */
static void test_lmcache_eviction_policy(void **state)
{
    (void)state;
    char *trace = tu_gen_trace("--workload multiround-qa --requests 300 --doc-tokens 20000 --rate 2"), args[1024];
    int64_t hits[2];
    const char *policy[2] = {"lru", "s3fifo"};
    for (int i = 0; i < 2; i++) {
        snprintf(
            args, sizeof args,
            "run --json --trace %s --config configs/clusters/lmcache-cpu-offload.json --set kvstore.dram_bytes=20GB "
            "--set kvstore.eviction=%s",
            trace, policy[i]);
        json_t *j = tu_kvsim_json(args);
        hits[i] =
            json_integer_value(json_object_get(json_object_get(json_object_get(j, "lmcache"), "chunk_hits"), "cpu"));
        json_decref(j);
    }
    assert_true(hits[1] > hits[0]);
    snprintf(args, sizeof args,
             "run --trace %s --config configs/clusters/lmcache-cpu-offload.json --set kvstore.eviction=belady", trace);
    tu_expect_exit(args, 2, "kvstore.eviction: 'belady' needs the future and only runs in an offline replay");
    tu_remove_temp(trace);
}

static void test_split_beside_a_decoder(void **state)
{
    assert_int_equal(recomputed_chunks("balanced", 1), 10);
    assert_int_equal(recomputed_chunks("balanced", 1000), 9);
    assert_int_equal(recomputed_chunks("adaptive", 1), 9);
    assert_int_equal(recomputed_chunks("adaptive", 1000), 4);
}

/* Admission policies see an instance as both prefill and decode instance:
 * slo_reject answers 429 when the predicted TTFT exceeds an SLO of 1 µs;
 * baseline admits (its prefill load is fine) but, the first token out,
 * finds a TBT SLO of 1 µs broken and drops the request: wasted prefill. */
static void test_admission(void **state)
{
    const char *one = "{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 3, \"hash_ids\": [1, 2]}\n";
    json_t *j = run_toy(one, 1e10, "--set policy.admission='\"slo_reject\"' --set slo.ttft_ms=0.001");
    assert_int_equal(summary_num(j, "rejected", "ttft_slo"), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "completed")), 0);
    json_decref(j);
    j = run_toy(one, 1e10, "--set policy.admission='\"baseline\"' --set slo.tbt_ms=0.001");
    assert_int_equal(summary_num(j, "rejected", "after_prefill"), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "iterations")), 1);
    json_decref(j);
}

/* kvsim plan crossover on the toy: chunk i is priced by what it adds to
 * the prefill pass that computes it from token 0, (i + 1) · 256 tokens:
 * chunk 0 ends a pass of 256 tokens, max(flops(256) / 5e11 = 1.65e-4,
 * one weight read 2e-4) − 2e-4 = 0 (the pass is memory-bound: recomputing
 * it is free); chunk 1 adds flops(512) / 5e11 − 2e-4 = 2.34995e-4, and
 * chunk i ≥ 1 (2.62144e7·(2i + 1) + 5.632e7) / 5e11 s. From CPU memory
 * (2.2048e-5 s a chunk) loading wins from chunk 1, 256 tokens; from the
 * remote store (1 ms + 102,400 bytes at 15 Gbps + the host copy =
 * 1.07666e-3 s) only once 2i + 1 ≥ 19: from chunk 9, 2,304 tokens. */
static void test_plan_crossover(void **state)
{
    char hw[512], args[2048];
    hw_arg(hw, sizeof hw, 1e10);
    snprintf(args, sizeof args, "plan crossover --json " TOY_COST "%s", hw);
    json_t *j = tu_kvsim_json(args), *tiers = json_object_get(j, "tiers");
    for (size_t i = 0; i < json_array_size(tiers); i++) {
        json_t *t = json_array_get(tiers, i);
        const char *name = json_string_value(json_object_get(t, "tier"));
        int64_t x = json_integer_value(json_object_get(t, "crossover_tokens"));
        if (!strcmp(name, "cpu")) {
            assert_int_equal(x, 256);
            assert_double_equal(json_real_value(json_object_get(t, "chunk_load_s")), 2.2048e-5, 1e-15);
        }
        if (!strcmp(name, "remote")) assert_int_equal(x, 2304);
    }
    json_decref(j);
}

/* kvsim plan crossover --whole-context (LMCache Fig. 12's form) on the toy
 * (400 bytes of KV a token): a context of L tokens loads in L · 3,200 bits
 * / B and prefills alone in flops(L) / 5e11 (one pass, compute-bound):
 *   L = 1,024: prefill (4.194304e8 + 2.2528e8) / 5e11 = 1.2894208e-3 s;
 *     load 3.2768e-3 s at 1 Gbps (prefill wins), 3.2768e-4 s at 10 (load
 *     wins); both take as long at 3,276,800 / 1.2894208e-3 = 2.5413 Gbps.
 *   L = 4,096: prefill (6.7108864e9 + 9.0112e8) / 5e11 = 1.52240128e-2 s;
 *     load 1.31072e-2 s at 1 Gbps: loading already wins; 0.86096 Gbps.
 * In passes of 1,024 tokens with 1 ms of overhead each, L = 4,096 takes 4
 * passes whose FLOPs add up to the same, + 4 ms. */
static void test_plan_whole_context(void **state)
{
    char hw[512], args[2048];
    hw_arg(hw, sizeof hw, 1e10);
    snprintf(args, sizeof args,
             "plan crossover --whole-context --context 1024,4096 --gbps 1,10 --json " TOY_COST
             "--set cost.prefill_chunk_overhead_ms=0 %s",
             hw);
    json_t *j = tu_kvsim_json(args), *rows = json_object_get(j, "contexts");
    assert_int_equal(json_array_size(rows), 2);
    const double prefill[] = {1.2894208e-3, 1.52240128e-2}, even[] = {2.5413e9, 8.6096e8}, L[] = {1024, 4096};
    const char *faster[2][2] = {{"prefill", "load"}, {"load", "load"}};
    for (size_t i = 0; i < 2; i++) {
        const json_t *r = json_array_get(rows, i), *loads = json_object_get(r, "loads");
        assert_int_equal(json_integer_value(json_object_get(r, "tokens")), L[i]);
        assert_double_equal(json_number_value(json_object_get(r, "prefill_s")), prefill[i], 1e-12);
        assert_double_equal(json_number_value(json_object_get(r, "break_even_Gbps")) * 1e9, even[i], 1e5);
        for (size_t k = 0; k < 2; k++) {
            const json_t *p = json_array_get(loads, k);
            assert_double_equal(json_number_value(json_object_get(p, "load_s")), L[i] * 3200 / (k ? 1e10 : 1e9), 1e-15);
            assert_string_equal(json_string_value(json_object_get(p, "faster")), faster[i][k]);
        }
    }
    json_decref(j);
    snprintf(args, sizeof args,
             "plan crossover --whole-context --context 4096 --gbps 1 --json " TOY_COST
             "%s --set engine.max_num_batched_tokens=1024 --set cost.prefill_chunk_overhead_ms=1",
             hw);
    j = tu_kvsim_json(args);
    const json_t *r = json_array_get(json_object_get(j, "contexts"), 0);
    assert_double_equal(json_number_value(json_object_get(r, "prefill_s")), 1.52240128e-2 + 4e-3, 1e-12);
    json_decref(j);
    tu_expect_exit("plan crossover --whole-context --context 1K,0", 2, "--context: '0' is out of range");
    tu_expect_exit("plan crossover --whole-context --gbps 1,x", 2, "--gbps: 'x' is not a number");
    /* named, as every command names it (it said getopt's "crossover: unrecognized option" and "bad option") */
    tu_expect_exit("plan crossover --bogus", 2,
                   "kvsim plan crossover: unknown option or missing value '--bogus' (see kvsim plan crossover --help)");
}

/* kvsim plan crossover refuses an option it would ignore (it accepted and
 * ignored them): --context and --gbps without --whole-context, a --set of
 * a key it never reads, in either mode or in the one given, and the cost
 * model's idle keys; each exits 2 saying what to use instead. The options
 * it reads still move its numbers, and a run's --config is read as is. */
static void test_plan_crossover_ignored_options(void **state)
{
    const char *cases[][2] = {
        {"plan crossover --context 1024",
         "kvsim plan crossover: --context has no effect without --whole-context: the per-tier crossover searches "
         "every context position and loads at each tier's own bandwidth (the remote store's is kvstore.remote.Gbps); "
         "add --whole-context for the table at these context lengths\n"},
        {"plan crossover --gbps 1,10",
         "kvsim plan crossover: --gbps has no effect without --whole-context: the per-tier crossover searches every "
         "context position and loads at each tier's own bandwidth (the remote store's is kvstore.remote.Gbps); add "
         "--whole-context for the table at these bandwidths\n"},
        {"plan crossover --set trace.speed=2",
         "kvsim plan crossover: --set trace.speed has no effect on the crossover: it reads no trace (it prices a "
         "chunk from the model, hardware and cost keys); drop it (kvsim run reads it)\n"},
        {"plan crossover --set cluster.prefill_hardware='\"h100x8\"'",
         "kvsim plan crossover: --set cluster.prefill_hardware has no effect on the crossover: it prices one "
         "aggregated instance on `hardware`; use --set hardware=NAME\n"},
        {"plan crossover --set cluster.prefill_chunk=4096",
         "kvsim plan crossover: --set cluster.prefill_chunk has no effect on the crossover: it prefills in passes of "
         "engine.max_num_batched_tokens; set that instead\n"},
        {"plan crossover --set cost.prefill_chunk_overhead_ms=1",
         "kvsim plan crossover: --set cost.prefill_chunk_overhead_ms has no effect on the crossover without "
         "--whole-context: a chunk's recompute is what it adds to a prefill pass, so a pass's fixed overheads cancel "
         "out; they price the prefill of --whole-context\n"},
        {"plan crossover --whole-context --set kvstore.chunk_tokens=128",
         "kvsim plan crossover: --set kvstore.chunk_tokens has no effect on the crossover with --whole-context: it "
         "loads the entire context at each --gbps bandwidth, with no chunks, pages, host link, disk or store; give "
         "the bandwidths with --gbps, or drop --whole-context for the per-tier chunk crossover, which reads it\n"},
        {"plan crossover --whole-context --set hardware.h2d_GBps=10",
         "kvsim plan crossover: --set hardware.h2d_GBps has no effect on the crossover with --whole-context: it "
         "loads the entire context at each --gbps bandwidth, with no chunks, pages, host link, disk or store; give "
         "the bandwidths with --gbps, or drop --whole-context for the per-tier chunk crossover, which reads it\n"},
        {"plan crossover --set kvstore.eviction='\"lfu\"'",
         "kvsim plan crossover: --set kvstore.eviction has no effect on the crossover: it prices loads and "
         "recomputes, whatever the store holds, keeps or evicts; drop it (kvsim run reads it)\n"},
        {"plan crossover --set cost.expert_parallel=true",
         "kvsim plan crossover: --set cost.expert_parallel has no effect on the crossover: the model is dense (no "
         "model.experts): there are no experts to split\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) tu_expect_exit(cases[i][0], 2, cases[i][1]);
    /* what it reads moves it: the remote tier's load, the whole context's prefill */
    const char *chunk = "plan crossover --json --set kvstore.remote.Gbps=30 --set kvstore.chunk_tokens=512 "
                        "--set hardware.h2d_GBps=64 --set engine.max_num_batched_tokens=4096";
    json_t *a = tu_kvsim_json("plan crossover --json"), *b = tu_kvsim_json(chunk);
    assert_int_equal(json_integer_value(json_object_get(b, "chunk_tokens")), 512);
    assert_true(json_real_value(json_object_get(json_array_get(json_object_get(b, "tiers"), 3), "chunk_load_s")) !=
                json_real_value(json_object_get(json_array_get(json_object_get(a, "tiers"), 3), "chunk_load_s")));
    json_decref(a);
    json_decref(b);
    a = tu_kvsim_json("plan crossover --json --whole-context --context 8192 --gbps 10");
    b = tu_kvsim_json("plan crossover --json --whole-context --context 8192 --gbps 10 --set "
                      "engine.max_num_batched_tokens=2048 --set cost.prefill_chunk_overhead_ms=5");
    const json_t *ra = json_array_get(json_object_get(a, "contexts"), 0),
                 *rb = json_array_get(json_object_get(b, "contexts"), 0);
    /* four passes of 5 ms overhead against one of 1 ms (the default) */
    assert_true(json_number_value(json_object_get(rb, "prefill_s")) >=
                json_number_value(json_object_get(ra, "prefill_s")) + 19e-3 - 1e-9);
    json_decref(a);
    json_decref(b);
    tu_expect_stdout("plan crossover --config configs/clusters/lmcache-central-storage.json", "crossover tokens");
}

/* The measured tables price a recomputed 16-token chunk by what it adds to
 * its pass, no longer as an 11.7 ms pass of its own, which made every load
 * win: plan crossover said 0 tokens. By hand, on the central-storage preset
 * (LLaMA3.1-8B, H100 table): a chunk loads in 1 ms + 2,097,152 B at
 * 1.875 GB/s + the host copy (17.8 µs + 2,097,152 B / 52.6 GB/s) = 2.176 ms;
 * its recompute at any position up to 32,768 tokens (a pass of 8,192 after
 * at most 24,592 cached) costs at most 16 × the steepest slope of the
 * table's 32,768-cached row, (0.70630711 − 0.34565015) / 4096 · 16 = 1.409
 * ms: loading cannot win before 32,768 tokens. */
static void test_plan_crossover_profile_small_chunks(void **state)
{
    json_t *j = tu_kvsim_json("plan crossover --json --config configs/clusters/lmcache-central-storage.json "
                              "--set kvstore.chunk_tokens=16 --set cost.compute=profile"),
           *tiers = json_object_get(j, "tiers");
    assert_double_equal((0.70630711 - 0.34565015) / 4096 * 16, 1.40881e-3, 1e-8);
    for (size_t i = 0; i < json_array_size(tiers); i++) {
        const json_t *t = json_array_get(tiers, i);
        if (strcmp(json_string_value(json_object_get(t, "tier")), "remote")) continue;
        assert_double_equal(json_number_value(json_object_get(t, "chunk_load_s")), 2.176e-3, 1e-6);
        assert_true(json_integer_value(json_object_get(t, "crossover_tokens")) >= 32768);
    }
    json_decref(j);
}

static void test_aggregated_config_errors(void **state)
{
    tu_expect_exit("run --set cluster.mode='\"aggregated\"' --set engine.max_num_batched_tokens=8", 2,
                   "engine.max_num_batched_tokens: 8 is smaller than one page");
    tu_expect_exit("run --set cluster.mode='\"aggregated\"' --set policy.admission='\"early\"'", 2,
                   "policy.admission: unknown admission policy 'early'");
    tu_expect_exit("run --set cluster.mode='\"aggregated\"' --set kvstore.pic_block_tokens=24", 2,
                   "kvstore.pic_block_tokens: 24 does not divide trace.block_tokens (512): a block of the trace "
                   "must be whole HBM blocks; use a divisor of 512 such as 16");
    tu_expect_exit("run --set cluster.mode='\"aggregated\"' --set kvstore.lmcache=true --set kvstore.chunk_tokens=200",
                   2, "kvstore.chunk_tokens': 200 is not a multiple of the page size");
    tu_expect_exit("run --set kvstore.remote.Gbps=0", 2,
                   "kvstore.remote.Gbps': 0 is out of range [0.001, 1000000] Gbit/s");
}

/* max_num_seqs (cluster.decode_max_batch) = 2, three 100-token prompts A,
 * B, C at t = 0 with 3 output tokens each. A and B, arriving together, are
 * prefilled together in iteration 1 (agg.c kick); C waits for a free slot
 * until A and B finish after iteration 3 (both decode, KV 101 + 101, then
 * 102 + 102), is prefilled in iteration 4 and decodes alone. Utilisation:
 * iterations hold 2, 2, 2, 1, 1, 1 of the 2 slots; the busy fraction is 1. */
static void test_max_num_seqs(void **state)
{
    json_t *j = run_toy("{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 3, \"hash_ids\": [1]}\n"
                        "{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 3, \"hash_ids\": [2]}\n"
                        "{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 3, \"hash_ids\": [3]}\n",
                        1e10, "--set cluster.decode_max_batch=2");
    double t1 = iter_s(2 * flops(100), 0, 200), t2 = iter_s(0, 2, 101 + 101), t3 = iter_s(0, 2, 102 + 102);
    double t4 = iter_s(flops(100), 0, 100), t5 = iter_s(0, 1, 101), t6 = iter_s(0, 1, 102);
    double total = t1 + t2 + t3 + t4 + t5 + t6;
    assert_double_equal(summary_num(j, "ttft_ms", "mean"), (t1 + t1 + (t1 + t2 + t3 + t4)) / 3 * 1e3, 1e-6);
    assert_double_equal(summary_num(j, "e2e_ms", "p50"), (t1 + t2 + t3) * 1e3, 1e-6); /* A and B */
    assert_double_equal(summary_num(j, "itl_ms", "mean"), ((t2 + t3) + (t2 + t3) + (t5 + t6)) / 2 / 3 * 1e3, 1e-6);
    assert_int_equal(json_integer_value(json_object_get(j, "iterations")), 6);
    const json_t *u = json_object_get(j, "utilisation");
    assert_double_equal(json_number_value(json_object_get(u, "gpu")), (t1 + t2 + t3 + 0.5 * (t4 + t5 + t6)) / total,
                        1e-6);
    assert_double_equal(json_number_value(json_object_get(u, "gpu_busy")), 1, 1e-6);
    json_decref(j);
}

/* engine.async_scheduling: A arrives at t = 0 and starts iteration 1 at
 * once; B arrives 0.1 ms later, during it (iteration 1 takes 0.2 ms: its
 * 200 µs of weights and KV against 52 µs of compute). Without async
 * scheduling B is prefilled in iteration 2 beside A's first decode; with
 * it iteration 2 was already scheduled, A decodes alone, and B joins
 * iteration 3. B's TTFT counts from its own arrival. */
static void test_async_scheduling(void **state)
{
    const char *trace = "{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 5, \"hash_ids\": [1]}\n"
                        "{\"timestamp\": 0.1, \"input_length\": 100, \"output_length\": 2, \"hash_ids\": [2]}\n";
    double t1 = iter_s(flops(100), 0, 100);
    assert_true(t1 > 1e-4); /* B arrives during iteration 1 */
    json_t *sync = run_toy(trace, 1e10, ""), *async = run_toy(trace, 1e10, "--set engine.async_scheduling=true");
    double ttft_sync = t1 + iter_s(flops(100), 1, 101 + 100) - 1e-4;
    double ttft_async = t1 + iter_s(0, 1, 101) + iter_s(flops(100), 1, 102 + 100) - 1e-4;
    assert_double_equal(summary_num(sync, "ttft_ms", "mean"), (t1 + ttft_sync) / 2 * 1e3, 1e-6);
    assert_double_equal(summary_num(async, "ttft_ms", "mean"), (t1 + ttft_async) / 2 * 1e3, 1e-6);
    json_decref(sync);
    json_decref(async);
}

/* Requests that reach an idle instance at the same instant share its first
 * step, as vLLM's engine core drains its input queue before it schedules:
 * three 100-token prompts at t = 0 (the replay reads one arrival ahead, so
 * the third is read only when the second arrives) are prefilled together
 * in iteration 1, with or without async scheduling. */
static void test_simultaneous_arrivals_share_a_step(void **state)
{
    const char *trace = "{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 2, \"hash_ids\": [1]}\n"
                        "{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 2, \"hash_ids\": [2]}\n"
                        "{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 2, \"hash_ids\": [3]}\n";
    double t1 = iter_s(3 * flops(100), 0, 300), t2 = iter_s(0, 3, 3 * 101);
    const char *const extra[] = {"", "--set engine.async_scheduling=true"};
    for (int k = 0; k < 2; k++) {
        json_t *j = run_toy(trace, 1e10, extra[k]);
        assert_double_equal(summary_num(j, "ttft_ms", "p99"), t1 * 1e3, 1e-6);
        assert_double_equal(summary_num(j, "ttft_ms", "mean"), t1 * 1e3, 1e-6);
        assert_double_equal(summary_num(j, "e2e_ms", "p99"), (t1 + t2) * 1e3, 1e-6);
        assert_int_equal(json_integer_value(json_object_get(j, "iterations")), 2);
        json_decref(j);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_request_exact_ttft),
        cmocka_unit_test(test_chunked_prefill_budget),
        cmocka_unit_test(test_prefix_cache_hit),
        cmocka_unit_test(test_prefix_caching_off),
        cmocka_unit_test(test_chunked_prefill_off),
        cmocka_unit_test(test_preemption_and_reject),
        cmocka_unit_test(test_aggregated_config_errors),
        cmocka_unit_test(test_lmcache_cpu_offload),
        cmocka_unit_test(test_plan_crossover),
        cmocka_unit_test(test_plan_whole_context),
        cmocka_unit_test(test_plan_crossover_ignored_options),
        cmocka_unit_test(test_plan_crossover_profile_small_chunks),
        cmocka_unit_test(test_lmcache_disk_and_remote),
        cmocka_unit_test(test_lmcache_remote_link_is_shared),
        cmocka_unit_test(test_lmcache_link_binds),
        cmocka_unit_test(test_lmcache_fp8_kv),
        cmocka_unit_test(test_lmcache_inf_is_an_unbounded_tier),
        cmocka_unit_test(test_lmcache_prefetch),
        cmocka_unit_test(test_lmcache_cpu_scope),
        cmocka_unit_test(test_balanced_split_by_hand),
        cmocka_unit_test(test_split_beside_a_decoder),
        cmocka_unit_test(test_adaptive_alone_on_a_slow_link),
        cmocka_unit_test(test_lmcache_eviction_policy),
        cmocka_unit_test(test_admission),
        cmocka_unit_test(test_max_num_seqs),
        cmocka_unit_test(test_async_scheduling),
        cmocka_unit_test(test_simultaneous_arrivals_share_a_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
