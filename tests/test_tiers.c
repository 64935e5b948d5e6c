/* tests/test_tiers.c — what reaches DRAM and disk, and when (issue 41
 * item 4; docs/planning-tiers.md "Tier semantics").
 *
 * The Mooncake store (sim/store/kvstore.c; the disaggregated presets):
 * a request's computed blocks are written into the node's DRAM when its
 * prefill commits them (write-through on store), and the disk gets a
 * block only when DRAM evicts it (eviction-driven; DRAM and disk are
 * exclusive, an SSD hit moves the block back up). On a hand-made sequence
 * with DRAM for 2 blocks and disk for 4 (LRU), the tier of every block
 * after each request, worked out by hand:
 *   r1 [1 2]  DRAM {1 2}        disk {}       (computed: stored in DRAM)
 *   r2 [3]    DRAM {2 3}        disk {1}      (1 evicted: demoted)
 *   r3 [1]    DRAM {3 1}        disk {2}      (1 read from disk, promoted;
 *                                              2 evicted to make room)
 *   r4 [4 5]  DRAM {4 5}        disk {2 3 1}  (3, then 1 demoted)
 * An LMCache-style write-through disk would have held 1 and 2 after r1.
 *
 * LMCache (sim/serving/agg/lmcache.c; the lmcache-* presets): every full
 * chunk is written through to every tier once its prompt is done, as
 * LMCache's StorageManager.batched_put hands each chunk to every backend
 * in turn (lmcache/v1/storage_backend/storage_manager.py). So a disk with
 * no CPU tier above it at all still gets every chunk: 4 documents of
 * 20,480 tokens (80 chunks of 256 each) read twice in turn, a GPU cache
 * too small to keep them, 0 bytes of CPU memory and 100 GB of disk: the
 * second round loads all 4 × 80 = 320 chunks from disk — an
 * eviction-driven disk would be empty, since nothing is ever evicted from
 * a CPU tier that does not exist. With 100 GB of CPU memory the same 320
 * chunks come from CPU memory instead. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <unistd.h>

#include "sim/store/kvstore.h"
#include "tests/testutil.h"

/* The tier of key on node 0: DRAM, SSD, or -1 (not held). */
static int tier_of(const kv_store *s, uint64_t key)
{
    int32_t from[1];
    kv_fetch_plan p = {.remote_from = from};
    if (kv_store_prefix_local(s, 0, &key, 1) != 1) return -1;
    kv_store_plan(s, 0, &key, 1, &p);
    return p.local[KV_TIER_DRAM] ? KV_TIER_DRAM : p.local[KV_TIER_SSD] ? KV_TIER_SSD : -1;
}

/* Serve one request: its leading hit, then commit (as the disaggregated model does). */
static void request(kv_store *s, const uint64_t *keys, int32_t n)
{
    int32_t hit = kv_store_prefix_local(s, 0, keys, n);
    kv_store_commit(s, 0, keys, n, hit, false, SIM_CACHE_DEFAULT);
}

/* want[k] is the tier of key k + 1 after the request (-1: not held). */
static void expect(const kv_store *s, const char *after, const int *want, int nkeys)
{
    for (int k = 0; k < nkeys; k++)
        if (tier_of(s, (uint64_t)k + 1) != want[k])
            fail_msg("after %s: block %d is in tier %d, want %d", after, k + 1, tier_of(s, (uint64_t)k + 1), want[k]);
}

static void test_store_population(void **state)
{
    (void)state;
    kv_store_cfg cfg = {.nodes = 1,
                        .scope = KV_SCOPE_LOCAL,
                        .tier_blocks = {0, 2, 4},
                        .policy = {"lru", "lru", "lru"},
                        .promote = true};
    kv_store *s;
    sim_err err = {{0}};
    assert_int_equal(kv_store_new(&s, &cfg, &err), 0);
    enum { D = KV_TIER_DRAM, S = KV_TIER_SSD, N = -1 };
    request(s, (uint64_t[]){1, 2}, 2);
    expect(s, "r1", (int[]){D, D, N, N, N}, 5);
    request(s, (uint64_t[]){3}, 1);
    expect(s, "r2", (int[]){S, D, D, N, N}, 5);
    request(s, (uint64_t[]){1}, 1);
    expect(s, "r3", (int[]){D, S, D, N, N}, 5);
    request(s, (uint64_t[]){4, 5}, 2);
    expect(s, "r4", (int[]){S, S, S, D, D}, 5);
    assert_int_equal(kv_store_blocks(s, 0, KV_TIER_DRAM), 2);
    assert_int_equal(kv_store_blocks(s, 0, KV_TIER_SSD), 3);
    kv_store_free(s);
}

/* 4 documents of 40 blocks (20,480 tokens) and a 100-token question each,
 * read in turn twice, 100 s apart. */
static char *write_cycle(void)
{
    char *path = tu_temp_path();
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 8; i++) {
        fprintf(f, "{\"timestamp\": %d, \"input_length\": 20580, \"output_length\": 10, \"hash_ids\": [", i * 100000);
        for (int b = 0; b < 40; b++) fprintf(f, "%d, ", 1 + (i % 4) * 1000 + b);
        fprintf(f, "%d]}\n", 100000 + i);
    }
    fclose(f);
    return path;
}

static void test_lmcache_write_through(void **state)
{
    (void)state;
    char *trace = write_cycle();
    const char *dram[2] = {"0", "100GB"};
    for (int i = 0; i < 2; i++) {
        json_t *s =
            tu_kvsim_jsonf("run --config configs/clusters/lmcache-cpu-offload.json --trace %s --set "
                           "cluster.decode_hbm_frac=0.3 --set kvstore.dram_bytes=%s --set kvstore.ssd_bytes=100GB "
                           "--json",
                           trace, dram[i]);
        const json_t *hits = json_object_get(json_object_get(s, "lmcache"), "chunk_hits");
        printf("CPU memory %s: chunk hits cpu %lld, disk %lld\n", dram[i],
               (long long)json_integer_value(json_object_get(hits, "cpu")),
               (long long)json_integer_value(json_object_get(hits, "disk")));
        assert_int_equal(json_integer_value(json_object_get(hits, i ? "cpu" : "disk")), 4 * 80);
        assert_int_equal(json_integer_value(json_object_get(hits, i ? "disk" : "cpu")), 0);
        json_decref(s);
    }
    tu_remove_temp(trace);
}

/* kvsim plan tiers on the same cycle: the sizes are the halvings of --max
 * and 0, and the knee is the smallest size whose hit rate is within 0.95
 * of the best, found here again from the printed points; the figure is
 * drawn when gnuplot is there; --max over the node's memory exits 2. */
static void test_plan_tiers(void **state)
{
    char *trace = write_cycle(), png[600];
    snprintf(png, sizeof png, "%s.png", trace);
    json_t *j = tu_kvsim_jsonf("plan tiers --config configs/clusters/lmcache-cpu-offload.json --trace %s --set "
                               "cluster.decode_hbm_frac=0.3 --max 16GB --points 4 --jobs 2 --json%s%s",
                               trace, tu_have_gnuplot() ? " --plot " : "", tu_have_gnuplot() ? png : "");
    const json_t *pts = json_object_get(j, "points");
    const double want[5] = {0, 2e9, 4e9, 8e9, 16e9};
    assert_int_equal(json_array_size(pts), 5);
    double best = 0;
    for (size_t i = 0; i < 5; i++) {
        const json_t *p = json_array_get(pts, i);
        assert_double_equal(json_number_value(json_object_get(p, "bytes")), want[i], 0);
        double h = json_number_value(json_object_get(p, "hit_rate_tokens"));
        if (h > best) best = h;
    }
    double knee = -1;
    for (size_t i = 0; i < 5 && knee < 0; i++)
        if (json_number_value(json_object_get(json_array_get(pts, i), "hit_rate_tokens")) >= 0.95 * best)
            knee = want[i];
    printf("best hit rate %.4f, knee %g bytes\n", best, knee);
    assert_true(best > 0);
    assert_double_equal(json_number_value(json_object_get(j, "knee")), knee, 0);
    if (tu_have_gnuplot()) assert_int_equal(access(png, R_OK), 0);
    json_decref(j);
    const char *ext[] = {"", ".dat", ".gp"};
    for (int i = 0; i < 3; i++) {
        char f[620];
        snprintf(f, sizeof f, "%s%s", png, ext[i]);
        unlink(f);
    }
    char args[1024];
    snprintf(args, sizeof args, "plan tiers --config configs/clusters/lmcache-cpu-offload.json --trace %s --max 1TB",
             trace);
    tu_expect_exit(args, 2,
                   "--max: 1000 GB of DRAM is more than the 500 GB an instance of 1 GPU on 'h100x1' has "
                   "(hardware.dram_bytes, in proportion to its GPUs)");
    /* a800x8 has no price: no price, not $0.00 an hour (it once read free) */
    snprintf(args, sizeof args, "plan tiers --trace %s --max 1GB --points 1 --jobs 1 --json", trace);
    j = tu_kvsim_json(args);
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(j, "points"), i, p) assert_null(json_object_get(p, "price_per_hour"));
    json_decref(j);
    snprintf(args, sizeof args, "plan tiers --trace %s --max 1GB --points 1 --jobs 1", trace);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "      \u2014          \u2014"));
    assert_null(strstr(r.out, " 0.00 "));
    tu_free(&r);
    tu_remove_temp(trace);
}

/* Two plan tiers answers that said more than the runs showed: a knee at
 * the grid's largest size read "more buys at most the remaining 5%", of
 * sizes never run (the Mooncake conversation trace on four h100x1 P and D
 * instances: 7.8, 15.6 and 31.25 GB give hit rates 0.0432, 0.0450 and
 * 0.0538, and 0.0450 < 0.95 x 0.0538); and --ssd fixed the config's 1 TB
 * of DRAM on a node of 500 GB. */
static void test_plan_tiers_claims(void **state)
{
    (void)state;
    const char *conv = "--set hardware=h100x1 --set model=llama3.1-8b --trace "
                       "traces/mooncake/conversation_trace.jsonl.gz";
    char args[1024];
    snprintf(args, sizeof args, "plan tiers %s --max 31.25GB --points 3 --jobs 2", conv);
    tu_expect_stdout(args, "knee      none within the grid: its largest size, 31.25 GB of DRAM, is the first within "
                           "0.95 of the best (hit rate 0.0538); the curve had not flattened, so a larger tier may "
                           "still gain: raise --max");
    snprintf(args, sizeof args, "plan tiers %s --max 31.25GB --points 3 --jobs 2 --json", conv);
    json_t *j = tu_kvsim_json(args);
    assert_true(json_is_true(json_object_get(j, "knee_at_grid_top")));
    json_decref(j);
    snprintf(args, sizeof args, "plan tiers --ssd %s --points 3", conv);
    tu_expect_exit(args, 2,
                   "kvstore.dram_bytes: 1000 GB of DRAM is more than the 500 GB an instance of 1 GPU on 'h100x1' "
                   "has (hardware.dram_bytes, in proportion to its GPUs); give at most that (--set "
                   "kvstore.dram_bytes=SIZE), or a hardware preset with more");
}

/* Sizes whose run overloaded the cluster were listed like the others, a
 * TTFT of 145 s beside 0.1 s: each is marked, as its own `kvsim run` of
 * that size diagnoses it, and counted under the table. */
static void test_plan_tiers_overloaded(void **state)
{
    (void)state;
    char *trace = tu_write_temp(""), args[1024];
    snprintf(args, sizeof args, "trace gen --workload multiround-qa --doc-tokens 20000 -o %s", trace);
    cli_result g = tu_kvsim(args);
    assert_int_equal(g.status, 0);
    tu_free(&g);
    const char *cfg = "--config configs/clusters/lmcache-cpu-offload.json --speed 2";
    snprintf(args, sizeof args, "plan tiers %s --trace %s --points 2 --max 125GB --json", cfg, trace);
    json_t *j = tu_kvsim_json(args), *p;
    size_t i;
    int over = 0;
    json_array_foreach(json_object_get(j, "points"), i, p)
    {
        snprintf(args, sizeof args, "run %s --trace %s --set kvstore.dram_bytes=%.0f --json", cfg, trace,
                 json_number_value(json_object_get(p, "bytes")));
        json_t *run = tu_kvsim_json(args);
        bool want = json_is_true(json_object_get(json_object_get(run, "diagnosis"), "overloaded"));
        assert_int_equal(json_is_true(json_object_get(p, "overloaded")), want);
        over += want;
        json_decref(run);
    }
    assert_int_equal(json_array_size(json_object_get(j, "points")), 3);
    assert_int_equal(over, 2); /* 0 and 62.5 GB keep none of the 105 GB of documents whole */
    json_decref(j);
    snprintf(args, sizeof args, "plan tiers %s --trace %s --points 2 --max 125GB", cfg, trace);
    tu_expect_stdout(args, "over      2 sizes overloaded the cluster (its queue grew with the trace): their TTFT and "
                           "goodput are those of a run with no steady state");
    unlink(trace), free(trace);
}

/* Options that were read with atoi or let through: --points abc was "0 is
 * not in [1, 31]", --points 3x and --jobs 2x ran as 3 and 2, and --max 0
 * ran the node's default grid as if no --max were given. */
static void test_plan_tiers_options(void **state)
{
    tu_expect_exit("plan tiers --points abc", 2, "kvsim plan tiers: --points: 'abc' is not an integer");
    tu_expect_exit("plan tiers --points 3x", 2, "kvsim plan tiers: --points: '3x' is not an integer");
    tu_expect_exit("plan tiers --points 0", 2, "kvsim plan tiers: --points: 0 is not in [1, 31]");
    tu_expect_exit("plan tiers --jobs 2x", 2, "kvsim plan tiers: --jobs: '2x' is not an integer");
    tu_expect_exit("plan tiers --speed 0", 2, "kvsim plan tiers: --speed: 0 is not a number > 0");
    tu_expect_exit("plan tiers --max 0GB", 2,
                   "kvsim plan tiers: --max: '0GB' is no size (the grid has 0 already: give its largest)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_population),  cmocka_unit_test(test_lmcache_write_through),
        cmocka_unit_test(test_plan_tiers),        cmocka_unit_test(test_plan_tiers_options),
        cmocka_unit_test(test_plan_tiers_claims), cmocka_unit_test(test_plan_tiers_overloaded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
