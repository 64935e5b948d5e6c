/* tests/test_conductor.c — the Mooncake conductor (issue 4) against the
 * orderings the paper reports, on the public synthetic trace and on traces
 * kvsim generates (the workload and load are documented at each test).
 *
 *  - Fig. 5: mean TTFT random > least_loaded > cache_aware_local > kvcentric
 *    on the §7.1 cluster (8P8D LLaMA3-70B/A800), per-instance prefix caches
 *    (local scope, §4.2: "each prefill instance has its own set of local
 *    prefix caches"); kvcentric moves KV between them (§4.2).
 *  - Hot-block replication under kvcentric; none with threshold = inf.
 *  - §7.4.2: a kvcentric fetch overlaps the queue (a hand-worked TTFT);
 *    mean TTFT does not grow with NIC bandwidth.
 *  - Table 4: under 2× overload the baseline wastes prefills, the early
 *    variants none, and the counts keep the paper's order.
 *  - §4.3.3: the anti-phase prefill/decode load fluctuation of early
 *    rejection, damped by prediction (§4.3.4).
 *  - §7.5: SLO attainment over P:D ratios peaks inside the sweep; the dynamic
 *    PD controller started at a bad ratio moves toward the better one and
 *    beats the static bad ratio.
 *  - §3.3: chunked pipeline parallelism shortens a long prefill within the
 *    pipeline's bounds.
 *  - Faults: a failed prefill node dips the hit rate, which recovers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <jansson.h>
#include <sqlite3.h>

#include "sim/config/config.h"
#include "sim/cost/cost.h"

#define PRESET "--config configs/clusters/mooncake-8p8d.json"

static json_t *run(const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "run --json %s", args);
    return tu_kvsim_json(cmd);
}

static double num(const json_t *j, const char *a, const char *b)
{
    const json_t *v = json_object_get(j, a);
    return json_number_value(b ? json_object_get(v, b) : v);
}

static double sql_num(const char *db_path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    double v = -1;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* docs/conductor.md's table of what these tests show quotes their output:
 * fail, naming the row to write, when the page says otherwise (issue 42
 * item 6: the page and the tests agree). */
static void expect_in_doc(const char *text)
{
    char *doc = tu_slurp_path("docs/conductor.md");
    if (!strstr(doc, text)) fail_msg("docs/conductor.md's test table lacks '%s': update its row", text);
    free(doc);
}

/* n with thousands separators, as the docs write counts ("2,891"). */
static const char *grouped(double v, char *buf, size_t size)
{
    long long n = llround(v);
    if (n >= 1000) snprintf(buf, size, "%lld,%03lld", n / 1000, n % 1000);
    else snprintf(buf, size, "%lld", n);
    return buf;
}

/* A trace from `kvsim trace gen` with the given options (caller frees). */
static char *gen_trace(const char *opts)
{
    char *path = tu_temp_path(), cmd[1024];
    snprintf(cmd, sizeof cmd, "trace gen %s -o %s", opts, path);
    tu_expect_exit(cmd, 0, NULL);
    return path;
}

/* ---- Fig. 5 ----------------------------------------------------------------- */

static void test_fig5_router_ordering(void **state)
{
    const char *routers[] = {"random", "least_loaded", "cache_aware_local", "kvcentric"};
    double prev = INFINITY;
    for (int i = 0; i < 4; i++) {
        char args[512];
        snprintf(args, sizeof args, "--trace %s %s --set cluster.scope=local --set policy.router=%s", MOONCAKE_TRACE,
                 PRESET, routers[i]);
        json_t *s = run(args);
        double ttft = num(s, "ttft_ms", "mean");
        printf("Fig. 5 (8P8D, local caches): %-18s mean TTFT %9.0f ms, hit rate %.3f\n", routers[i], ttft,
               num(s, "hit_rate_blocks", NULL));
        assert_true(ttft < prev);
        prev = ttft;
        json_decref(s);
    }
}

/* ---- Fig. 17 ------------------------------------------------------------------ */

/* §7.3.2: 10 prefill nodes of 3M tokens each (3e6 × 320 KiB = 983,040,000,000
 * bytes), requests routed to the longest prefix match under load: the global
 * pool's hit rate beats per-node caches and it saves prefill GPU time.
 * (Cache-only replay without load routes every request back to its prefix's
 * node, and the two scopes then tie on this trace — see tests/test_hitrate.c.) */
static void test_fig17_global_beats_local(void **state)
{
    double hit[2], gpu[2];
    const char *scopes[] = {"local", "global"};
    for (int i = 0; i < 2; i++) {
        char args[1024];
        snprintf(args, sizeof args,
                 "--trace %s %s --set cluster.prefill=10 --set cluster.decode=6 --set cluster.scope=%s "
                 "--set kvstore.dram_bytes=983040000000",
                 MOONCAKE_TRACE, PRESET, scopes[i]);
        json_t *s = run(args);
        hit[i] = num(s, "hit_rate_blocks", NULL);
        gpu[i] = num(s, "prefill_gpu_s_mean", NULL);
        json_decref(s);
    }
    printf("Fig. 17 (10 x 3M tokens): hit rate local %.4f, global %.4f (x%.3f); prefill GPU %.3f vs %.3f s\n", hit[0],
           hit[1], hit[1] / hit[0], gpu[0], gpu[1]);
    assert_true(hit[1] / hit[0] > 1);
    assert_true(gpu[1] < gpu[0]);
}

/* ---- replication (Fig. 18) -------------------------------------------------- */

/* Under kvcentric (global pool, threshold 1) the top-ranked key — ranked by
 * its replica counts summed over every sample, as Fig. 18 ranks them — ends
 * the run with replicas on several prefill nodes. With threshold = inf no
 * fetch happens and, the pool deduplicating puts, no key ever has two. */
static void test_kvcentric_replicates_hot_blocks(void **state)
{
    char *db = tu_temp_path(), args[1024];
    const char *sampled = "--set metrics.replica_period_ms=30000";
    snprintf(args, sizeof args, "--trace %s %s --set policy.router=kvcentric %s --db %s", MOONCAKE_TRACE, PRESET,
             sampled, db);
    json_decref(run(args));
    double top = sql_num(db, "WITH ranked AS (SELECT key, SUM(count) c FROM replicas GROUP BY key ORDER BY c DESC, key"
                             " LIMIT 1) SELECT r.count FROM replicas r JOIN ranked USING(key)"
                             " ORDER BY r.t_ms DESC LIMIT 1");
    double keys = sql_num(db, "SELECT COUNT(DISTINCT key) FROM replicas");
    printf("kvcentric: %.0f keys replicated; the top-ranked key ends with %.0f replicas\n", keys, top);
    assert_true(top >= 2);
    unlink(db);
    snprintf(args, sizeof args,
             "--trace %s %s --set policy.router=kvcentric --set policy.params.kvcache_balancing_threshold=\\\"inf\\\" "
             "%s --db %s",
             MOONCAKE_TRACE, PRESET, sampled, db);
    json_t *s = run(args);
    assert_true(sql_num(db, "SELECT COUNT(*) FROM replicas") == 0);
    assert_true(num(s, "remote_blocks", NULL) == 0);
    json_decref(s);
    unlink(db);
    free(db);
}

/* ---- §7.4.2: NIC bandwidth ----------------------------------------------------- */

/* A kvcentric fetch (Algorithm 1 line 21) starts at routing and overlaps the
 * queue. Two prefill nodes, per-node caches, no layer-wise overlap (load +
 * compute), outputs of 1 token (no KV stream to decode):
 *   A   t = 0      8,192 tokens, blocks 1..16    → node 0 (both idle, lowest index)
 *   B   t = 1 ms   32,768 fresh tokens           → node 1 (node 0 busy with A)
 *   D   t = 1.2 s  49,152 fresh tokens           → node 0 (node 1 has B's ~6 s)
 *   C   t = 1.3 s  8,704 tokens, blocks 1..16 + 1 new: node 0 holds the prefix
 *       but is busy with D for ~11 s; node 1 fetches the 16 blocks (2.7 GB,
 *       0.9 s at 24 Gbit/s) while B still runs, so C starts when B ends with
 *       its prefix in DRAM: TTFT(C) = t_B_end − 1.3 s + H2D(16 blocks) +
 *       prefill(8,704 | 8,192 cached), with t_B_end = 1 ms + prefill(32,768),
 *       at any NIC bandwidth that lands the copy before B ends. (Fetching when
 *       C's prefill starts, as kvsim did, added the 0.9 s at 24 Gbit/s.) */
static void test_fetch_overlaps_queue(void **state)
{
    char *trace = tu_write_temp("");
    FILE *f = fopen(trace, "w");
    const struct {
        int t_ms, input, first, blocks;
    } reqs[] = {{0, 8192, 1, 16}, {1, 32768, 101, 64}, {1200, 49152, 201, 96}, {1300, 8704, 1, 16}};
    for (int i = 0; i < 4; i++) {
        fprintf(f, "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": 1, \"hash_ids\": [", reqs[i].t_ms,
                reqs[i].input);
        for (int b = 0; b < reqs[i].blocks; b++) fprintf(f, "%s%d", b ? ", " : "", reqs[i].first + b);
        fprintf(f, "%s]}\n", i == 3 ? ", 999" : "");
    }
    fclose(f);
    sim_config cfg;
    sim_cost cost;
    sim_err err;
    assert_int_equal(sim_config_load(&cfg, NULL, NULL, 0, &err), 0);
    assert_int_equal(sim_cost_init(&cost, &cfg, &err), 0);
    double b_end = 0.001 + sim_cost_prefill_s(&cost, 32768, 0);
    double want =
        b_end - 1.3 + sim_cost_h2d_s(&cost, 16 * 512 * cost.kv_bytes_per_token) + sim_cost_prefill_s(&cost, 8704, 8192);
    const char *nics[] = {"24", "800"};
    for (int i = 0; i < 2; i++) {
        char *db = tu_temp_path(), args[1024];
        snprintf(args, sizeof args,
                 "--trace %s --set cluster.prefill=2 --set cluster.decode=1 --set cluster.scope=local "
                 "--set cluster.layerwise=false --set policy.router=kvcentric --set hardware.nic_Gbps=%s --db %s",
                 trace, nics[i], db);
        json_decref(run(args));
        double ttft = sql_num(db, "SELECT ttft_ms FROM requests WHERE id=3") / 1e3;
        printf("fetch during the queue, NIC %s Gbit/s: TTFT(C) %.6f s, expected %.6f s\n", nics[i], ttft, want);
        assert_double_equal(ttft, want, 1e-6);
        assert_true(sql_num(db, "SELECT prefill_inst FROM requests WHERE id=3") == 1);
        assert_true(sql_num(db, "SELECT remote_blocks FROM requests WHERE id=3") == 16);
        assert_true(sql_num(db, "SELECT hit_blocks FROM requests WHERE id=3") == 16);
        unlink(db);
        free(db);
    }
    sim_config_free(&cfg);
    unlink(trace);
    free(trace);
}

/* §7.4.2 (Fig. 21a): kvcentric's mean TTFT does not grow with the NIC's
 * bandwidth. The first 1,500 requests of the synthetic trace on the §7.1
 * cluster; before the fetch estimate counted the receiving side's backlog,
 * the NIC was full duplex and the fetch started at routing, 50 Gbit/s gave a
 * longer mean TTFT than 24 (2,869 vs 2,792 ms; 124 s vs 2.3 s on the whole
 * trace). */
static void test_nic_bandwidth_monotone(void **state)
{
    const char *nics[] = {"24", "50", "100", "200", "400", "800"};
    double prev = INFINITY;
    for (int i = 0; i < 6; i++) {
        char args[1024];
        snprintf(args, sizeof args,
                 "--trace %s %s --set policy.router=kvcentric --set trace.limit=1500 --set hardware.nic_Gbps=%s",
                 MOONCAKE_TRACE, PRESET, nics[i]);
        json_t *s = run(args);
        double ttft = num(s, "ttft_ms", "mean");
        printf("§7.4.2: NIC %4s Gbit/s: kvcentric mean TTFT %7.0f ms, %6.0f blocks fetched\n", nics[i], ttft,
               num(s, "remote_blocks", NULL));
        assert_true(ttft <= prev);
        prev = ttft;
        json_decref(s);
    }
}

/* ---- Table 4 ----------------------------------------------------------------- */

/* Overload as in §7.6: the §7.1 8P8D cluster at 2× replay speed. The public
 * synthetic trace's 149-token answers never load decode (an A800 decode node
 * holds 1.3M KV tokens), so this uses an agent-like trace with long answers:
 * 6,000 requests at 20/s, inputs of a few thousand tokens, ~2,500-token
 * outputs (seed 3).
 *
 * The paper's ordering of rejected counts (baseline 4183 > early rejection
 * 3771 > prediction 3589) held under the older decode cost (2905 > 2736 >
 * 2708) but not under the first-principles one (docs/cost-model.md). The
 * baseline checks the decode load at the moment its prefill ends (the KV
 * of the requests that reached the decode instance, sched_decode_load_now,
 * as early rejection does at arrival; it used to count the reservations of
 * requests still in prefill queues too: 3312, 3325, 3396 at 2x): 2868
 * (2242 after prefill), 3325, 3396 at 2x; 2313, 2777, 2829 at 1.5x; 3527,
 * 3032, 3316 at 3x. What holds is the mechanism: the baseline wastes
 * prefills, early rejection wastes none. The ordering was left open
 * (issue 19), not tuned back. With decode KV allocated as it arrives and
 * grown a token a step, preempting when HBM runs out (issue 29,
 * decode.kv_allocation = incremental) and the prediction counting that
 * growth, the paper's order appears (the counts: docs/conductor.md's
 * Table 4 row, which this test checks). */
static void test_table4_rejections(void **state)
{
    char *trace = gen_trace("--requests 6000 --rate 20 --output-mean 2500 --output-sigma 0.4 --input-mean 3000 "
                            "--seed 3");
    const char *policies[] = {"baseline", "early_reject", "early_reject_predict"};
    double rejected[3], wasted[3];
    for (int i = 0; i < 3; i++) {
        char args[1024];
        snprintf(args, sizeof args,
                 "--trace %s %s --speed 2 --set cluster.scope=local --set policy.router=kvcentric "
                 "--set policy.admission=%s",
                 trace, PRESET, policies[i]);
        json_t *s = run(args);
        rejected[i] = num(s, "rejected", "total");
        wasted[i] = num(s, "rejected", "after_prefill");
        printf("Table 4: %-22s rejected %5.0f (after prefill %4.0f), SLO attainment %.3f\n", policies[i], rejected[i],
               wasted[i], num(s, "slo_attainment", NULL));
        json_decref(s);
    }
    assert_true(rejected[0] > 0 && rejected[1] > 0 && rejected[2] > 0);
    assert_true(rejected[0] > rejected[1] && rejected[1] >= rejected[2]); /* Table 4's order (issue 29) */
    assert_true(wasted[0] > 0);
    assert_true(wasted[1] == 0 && wasted[2] == 0);
    char row[256], g[3][32], w0[32];
    snprintf(row, sizeof row, "| %s (%s after prefill), %s (0), %s (0) |", grouped(rejected[0], g[0], 32),
             grouped(wasted[0], w0, 32), grouped(rejected[1], g[1], 32), grouped(rejected[2], g[2], 32));
    expect_in_doc(row);
    unlink(trace);
    free(trace);
}

/* ---- §4.3.3 load fluctuation ------------------------------------------------------ */

/* "More pronounced in clusters with fewer prefill machines and where the
 * prefill stage takes longer": 4P4D, ~33k-token inputs (seconds of prefill
 * each), ~4,000-token answers so decode is the bottleneck, 3,000 requests at
 * 3/s (seed 9). Early rejection admits on decode load as it is now, so the
 * prefill side alternately fills and starves against the lagging decode
 * side; predicting the decode load at prefill completion damps it. The
 * measure: variance over time of (mean prefill load − mean decode load) in
 * the samples table, between 200 s and 900 s (after the warm-up).
 * Under decode.kv_allocation = reserve and decode.kv_receive = hbm (the
 * model this claim was shown in) the variance drops from 0.0751 under
 * early_reject to 0.0252 with prediction (printed below). Rejections are
 * not asserted: they are within 3% of each other (1,899 vs 1,945 with the
 * first token shown by the decode instance, metrics.first_token = decode;
 * 1,921 vs 1,886 when it was the prefill's), so Table 4's order between
 * the two is not a property of this load (docs/conductor.md's test table). */
static double load_gap_variance(const char *db)
{
    return sql_num(db, "WITH t AS (SELECT t_ms, AVG(CASE WHEN role='prefill' THEN load END) p,"
                       " AVG(CASE WHEN role='decode' THEN load END) d FROM samples"
                       " WHERE t_ms > 200000 AND t_ms < 900000 GROUP BY t_ms)"
                       " SELECT AVG((p-d)*(p-d)) - AVG(p-d)*AVG(p-d) FROM t");
}

static void test_prediction_damps_oscillation(void **state)
{
    char *trace = gen_trace("--requests 3000 --rate 3 --input-mean 20000 --input-sigma 0.5 --output-mean 4000 "
                            "--output-sigma 0.3 --max-input 65536 --max-output 8192 --seed 9");
    const char *policies[] = {"early_reject", "early_reject_predict"};
    double var[2], rejected[2];
    for (int i = 0; i < 2; i++) {
        char *db = tu_temp_path(), args[1024];
        snprintf(args, sizeof args,
                 "--trace %s --set cluster.prefill=4 --set cluster.decode=4 --set cluster.scope=local "
                 "--set policy.router=kvcentric --set policy.admission=%s --set decode.kv_allocation=reserve "
                 "--set decode.kv_receive=hbm --db %s",
                 trace, policies[i], db);
        json_t *s = run(args);
        rejected[i] = num(s, "rejected", "total");
        var[i] = load_gap_variance(db);
        printf("%-22s variance of the prefill-decode load gap %.4f, rejected %.0f, goodput %.3f req/s\n", policies[i],
               var[i], rejected[i], num(s, "goodput_rps", NULL));
        json_decref(s);
        unlink(db);
        free(db);
    }
    assert_true(var[1] < var[0]);
    char row[256], g[2][32];
    snprintf(row, sizeof row, "variance of the prefill−decode load gap %.4f → %.4f; rejected %s → %s", var[0], var[1],
             grouped(rejected[0], g[0], 32), grouped(rejected[1], g[1], 32));
    expect_in_doc(row);
    unlink(trace);
    free(trace);
}

/* ---- §7.5 P:D ratio ------------------------------------------------------------ */

/* 16 nodes, SLOs TTFT 10 s / TBT 100 ms (§7.5). Like Table 4 this needs a
 * workload that loads both stages: 4,000 requests at 6/s, ~8k-token inputs,
 * ~3,000-token outputs (seed 5). */
#define PD_TRACE "--requests 4000 --rate 6 --output-mean 3000 --output-sigma 0.4 --input-mean 8000 --seed 5"
#define PD_SLO   "--set slo.ttft_ms=10000 --set slo.tbt_ms=100"

static double pd_attainment(const char *trace, int p, const char *extra)
{
    char args[1024];
    snprintf(args, sizeof args, "--trace %s %s %s --set cluster.prefill=%d --set cluster.decode=%d %s", trace, PRESET,
             PD_SLO, p, 16 - p, extra);
    json_t *s = run(args);
    double a = num(s, "slo_attainment", NULL);
    json_decref(s);
    return a;
}

static void test_pd_ratio_sweep_peaks_inside(void **state)
{
    char *trace = gen_trace(PD_TRACE);
    int ratios[] = {4, 6, 8, 10, 12}, best = 0;
    double att[5];
    for (int i = 0; i < 5; i++) {
        att[i] = pd_attainment(trace, ratios[i], "");
        printf("P:D %2d:%-2d SLO attainment %.3f\n", ratios[i], 16 - ratios[i], att[i]);
        if (att[i] > att[best]) best = i;
    }
    assert_true(best > 0 && best < 4);
    char row[256];
    snprintf(row, sizeof row, "| 4:12 %.3f, 6:10 %.3f, 8:8 %.3f, 10:6 %.3f, 12:4 %.3f |", att[0], att[1], att[2],
             att[3], att[4]);
    expect_in_doc(row);
    unlink(trace);
    free(trace);
}

/* Started at 12:4 (decode-starved), the dynamic controller moves instances
 * to decode and beats the static 12:4 split. */
static void test_dynamic_pd_controller(void **state)
{
    char *trace = gen_trace(PD_TRACE), *db = tu_temp_path(), extra[512];
    double fixed = pd_attainment(trace, 12, "");
    snprintf(extra, sizeof extra, "--set policy.pd_controller=dynamic --db %s", db);
    double dynamic = pd_attainment(trace, 12, extra);
    double decode_end = sql_num(db, "SELECT COUNT(*) FROM samples WHERE role='decode' AND state='active'"
                                    " AND t_ms=(SELECT MAX(t_ms) FROM samples)");
    printf("12:4 static %.3f, dynamic %.3f; decode instances at the end: %.0f\n", fixed, dynamic, decode_end);
    assert_true(dynamic > fixed);
    assert_true(decode_end > 4);
    char row[256];
    snprintf(row, sizeof row, "attainment %.3f vs %.3f static; %.0f decode instances at the end", dynamic, fixed,
             decode_end);
    expect_in_doc(row);
    unlink(trace), unlink(db);
    free(trace), free(db);
}

/* The capacity tide (§5.1): 16 instances on until 150 s, 10 wanted from
 * 150 s, 16 again from 450 s. The controller powers instances off one per
 * period (each after draining) and back on; no request is lost, and every
 * instance is on at the end. */
static double powered_on_at(const char *db, const char *when)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT SUM(state != 'off') FROM samples WHERE t_ms = (SELECT %s)", when);
    return sql_num(db, sql);
}

static void test_capacity_tide(void **state)
{
    char *trace = gen_trace(PD_TRACE), *db = tu_temp_path(), args[1024];
    snprintf(args, sizeof args,
             "--trace %s %s %s --set policy.pd_controller=dynamic --set 'policy.params.tide=[[0,16],[150,10],[450,16]]'"
             " --db %s",
             trace, PRESET, PD_SLO, db);
    json_t *s = run(args);
    double low = sql_num(db, "SELECT MIN(n) FROM (SELECT SUM(state != 'off') n FROM samples GROUP BY t_ms)");
    double at_400 = powered_on_at(db, "MIN(t_ms) FROM samples WHERE t_ms >= 400000");
    double end = powered_on_at(db, "MAX(t_ms) FROM samples");
    printf("tide 16 -> 10 -> 16: fewest on %.0f, on at 400 s %.0f, on at the end %.0f\n", low, at_400, end);
    assert_true(at_400 < 16);
    assert_true(low >= 10);
    assert_true(end == 16);
    assert_int_equal((int)num(s, "completed", NULL), 4000);
    json_decref(s);
    unlink(trace), unlink(db);
    free(trace), free(db);
}

/* ---- chunked pipeline parallelism (§3.3) ------------------------------------------ */

/* One 131,072-token request on an idle 8P cluster, chunks of 8,192: alone it
 * costs S = Σ c_j of compute on one node; pipelined over a group of X = 4
 * its TTFT T must lie between the perfect split S/X and S/X plus the
 * pipeline's fill and drain, (X − 1)·max c_j / X (TTFT at the prefill's
 * token, metrics.first_token = prefill: no transfer or decode step in it). Total GPU time is S
 * either way. A short request arriving meanwhile is served outside the busy
 * group. */
static void test_cpp_pipeline(void **state)
{
    char *trace = tu_write_temp("");
    FILE *f = fopen(trace, "w");
    fprintf(f, "{\"timestamp\": 0, \"input_length\": 131072, \"output_length\": 2, \"hash_ids\": [");
    for (int i = 0; i < 256; i++) fprintf(f, "%s%d", i ? ", " : "", i);
    fprintf(f, "]}\n{\"timestamp\": 1000, \"input_length\": 4096, \"output_length\": 2, \"hash_ids\": "
               "[1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007]}\n");
    fclose(f);
    sim_config cfg;
    sim_cost cost;
    sim_err err;
    assert_int_equal(sim_config_load(&cfg, NULL, NULL, 0, &err), 0);
    assert_int_equal(sim_cost_init(&cost, &cfg, &err), 0);
    double serial = 0, biggest = 0;
    for (int32_t o = 0; o < 131072; o += 8192) {
        double cj = sim_cost_chunk_s(&cost, o, 8192);
        serial += cj;
        biggest = cj > biggest ? cj : biggest;
    }
    char *db = tu_temp_path(), args[1024];
    snprintf(args, sizeof args,
             "--trace %s --set cluster.prefill=8 --set cluster.cpp_group=4 --set cluster.cpp_threshold=32768 "
             "--set metrics.first_token=prefill --db %s",
             trace, db);
    json_decref(run(args));
    double ttft = sql_num(db, "SELECT ttft_ms FROM requests WHERE id=0") / 1e3;
    double gpu = sql_num(db, "SELECT prefill_gpu_s FROM requests WHERE id=0");
    double other = sql_num(db, "SELECT prefill_inst FROM requests WHERE id=1");
    printf("CPP x4: TTFT %.2f s (serial %.2f s, bounds [%.2f, %.2f]); GPU %.2f s; short request on instance %.0f\n",
           ttft, serial, serial / 4, serial / 4 + 3 * biggest / 4, gpu, other);
    assert_true(ttft >= serial / 4 && ttft <= serial / 4 + 3 * biggest / 4 + 1e-6);
    assert_double_equal(gpu, serial, 1e-6);
    assert_true(other >= 4);
    sim_config_free(&cfg);
    unlink(db), unlink(trace);
    free(db), free(trace);
}

/* ---- faults ------------------------------------------------------------------- */

/* Prefill instance 2 fails at 300 s for 120 s: its cache vanishes. The hit
 * rate of prefills started in [300 s, 600 s) drops below the fault-free run's
 * and comes back within 0.02 of it from 660 s on. Retry mode completes every
 * request; lose mode counts the in-flight ones lost. */
static double window_hit(const char *db, double from_ms, double to_ms)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT SUM(hit_blocks)*1.0/SUM(blocks) FROM requests WHERE prefill_start_ms >= %g AND"
             " prefill_start_ms < %g",
             from_ms, to_ms);
    return sql_num(db, sql);
}

static void test_fault_dip_and_recovery(void **state)
{
    char *db_ok = tu_temp_path(), *db_fault = tu_temp_path(), args[1024];
    const char *base = "--set cluster.scope=local --set policy.router=kvcentric";
    const char *fault = "--set 'faults=[{\"at_ms\":300000,\"instance\":2,\"down_ms\":120000}]'";
    snprintf(args, sizeof args, "--trace %s %s %s --db %s", MOONCAKE_TRACE, PRESET, base, db_ok);
    json_decref(run(args));
    snprintf(args, sizeof args, "--trace %s %s %s %s --db %s", MOONCAKE_TRACE, PRESET, base, fault, db_fault);
    json_t *s = run(args);
    double dip_ok = window_hit(db_ok, 300000, 600000), dip = window_hit(db_fault, 300000, 600000);
    double rec_ok = window_hit(db_ok, 660000, 1e12), rec = window_hit(db_fault, 660000, 1e12);
    printf("hit rate [300,600) s: %.3f with the fault vs %.3f; from 660 s: %.3f vs %.3f\n", dip, dip_ok, rec, rec_ok);
    assert_true(dip < dip_ok);
    assert_true(rec > rec_ok - 0.02);
    assert_int_equal((int)num(s, "completed", NULL), 3993);
    json_decref(s);
    snprintf(args, sizeof args, "--trace %s %s %s %s --set cluster.on_failure=lose", MOONCAKE_TRACE, PRESET, base,
             fault);
    s = run(args);
    assert_true(num(s, "lost", NULL) > 0);
    assert_int_equal((int)(num(s, "completed", NULL) + num(s, "lost", NULL) + num(s, "rejected", "total")), 3993);
    json_decref(s);
    unlink(db_ok), unlink(db_fault);
    free(db_ok), free(db_fault);
}

/* Bad policy parameters and fault specs are usage errors naming the key. */
static void test_bad_conductor_config(void **state)
{
    struct {
        const char *args, *message;
    } cases[] = {
        {"run --set policy.router=kvcentric --set policy.params.kvcache_balancing_threshold=-1",
         "policy.params.kvcache_balancing_threshold"},
        {"run --set policy.pd_controller=dynamic --set policy.params.pd_band=0.5", "policy.params.pd_band"},
        {"run --set 'faults=[{\"at_ms\":1,\"instance\":99,\"down_ms\":5}]'", "faults[0].instance"},
        {"run --set 'faults=[{\"at_ms\":1}]'", "faults[0]"},
        {"run --set cluster.on_failure=\\\"ignore\\\"", "cluster.on_failure"},
        {"run --set policy.pd_controller=dynamic --set 'policy.params.tide=[[0,6],[10]]'", "policy.params.tide[1]"},
        {"run --set cluster.cpp_group=0", "cluster.cpp_group"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) tu_expect_exit(cases[i].args, 2, cases[i].message);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fig5_router_ordering),
        cmocka_unit_test(test_fig17_global_beats_local),
        cmocka_unit_test(test_kvcentric_replicates_hot_blocks),
        cmocka_unit_test(test_fetch_overlaps_queue),
        cmocka_unit_test(test_nic_bandwidth_monotone),
        cmocka_unit_test(test_table4_rejections),
        cmocka_unit_test(test_prediction_damps_oscillation),
        cmocka_unit_test(test_pd_ratio_sweep_peaks_inside),
        cmocka_unit_test(test_dynamic_pd_controller),
        cmocka_unit_test(test_capacity_tide),
        cmocka_unit_test(test_cpp_pipeline),
        cmocka_unit_test(test_fault_dip_and_recovery),
        cmocka_unit_test(test_bad_conductor_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
