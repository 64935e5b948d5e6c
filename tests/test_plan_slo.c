/* tests/test_plan_slo.c — `kvsim plan slo` end to end.
 *
 * An impossible target is reported infeasible (exit 3) with the floor, and
 * the floor is what the cost model gives each request alone, computed here
 * from Mooncake Eq. 1 on a trace without prefix reuse, and checked against
 * a one-request `kvsim run` of the quantile prompt. A reachable target gives
 * a cheapest point whose printed `kvsim run` line, run here, meets the
 * targets, while the clusters one instance smaller, which the search ran,
 * do not; a second search on the same database runs nothing; the temporary
 * database is removed. By default a recommended point also meets the
 * config's SLOs (attainment >= 0.9, not overloaded): where the cheapest
 * point meeting a loose TTFT target misses them, the plan picks a bigger
 * one, which `kvsim run` replays meeting them, while --attainment 0 gives
 * the point the percentile target alone allows. An aggregated LMCache
 * cluster is sized too: on a trace that reads 4 documents of 20,480 tokens
 * in turn three times, where the GPU cache cannot hold them all, LMCache's
 * LRU CPU pool serves every reread when it holds all 4 × 80 chunks of
 * 256 tokens (4 × 80 × 32 MiB = 10,737,418,240 bytes) and none when it is
 * one chunk short: the plan's cliff is exactly that pair. Bad arguments
 * exit 2 naming the option and value. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"
#include "tests/sweep_testutil.h"

#include <dirent.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

static char *dir, gen_trace[512], flat_trace[512], cyclic_trace[512];

enum { FLAT_N = 20 };

/* FLAT_N requests of 1000, 2000, ... tokens far apart, no block shared:
 * each one's TTFT floor is its whole prefill. */
static void write_flat_trace(const char *path)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    long long id = 1;
    for (int i = 0; i < FLAT_N; i++) {
        int n = 1000 * (i + 1);
        fprintf(f, "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": 10, \"hash_ids\": [", i * 600000, n);
        for (int b = 0; b < (n + 511) / 512; b++) fprintf(f, "%s%lld", b ? ", " : "", id++);
        fputs("]}\n", f);
    }
    fclose(f);
}

enum { CYC_DOCS = 4, CYC_DOC_TOKENS = 20480, CYC_ROUNDS = 3 };

/* CYC_ROUNDS rounds over CYC_DOCS documents in the same order, 100 s
 * apart (no queue): each request is its document (40 blocks of 512
 * tokens) and a unique 100-token question (one block of its own). */
static void write_cyclic_trace(const char *path)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < CYC_ROUNDS * CYC_DOCS; i++) {
        fprintf(f, "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": 10, \"hash_ids\": [", i * 100000,
                CYC_DOC_TOKENS + 100);
        for (int b = 0; b < CYC_DOC_TOKENS / 512; b++) fprintf(f, "%d, ", 1 + (i % CYC_DOCS) * 1000 + b);
        fprintf(f, "%d]}\n", 100000 + i);
    }
    fclose(f);
}

static int setup(void **state)
{
    dir = su_tempdir();
    snprintf(gen_trace, sizeof gen_trace, "%s/gen.jsonl", dir);
    snprintf(flat_trace, sizeof flat_trace, "%s/flat.jsonl", dir);
    char *text = tu_gen_text("--requests 200 --seed 7");
    FILE *f = fopen(gen_trace, "w");
    fputs(text, f);
    fclose(f);
    free(text);
    write_flat_trace(flat_trace);
    snprintf(cyclic_trace, sizeof cyclic_trace, "%s/cyclic.jsonl", dir);
    write_cyclic_trace(cyclic_trace);
    return 0;
}

static int teardown(void **state)
{
    su_rmrf(dir);
    free(dir);
    return 0;
}

/* `kvsim ARGS` exits with status and prints JSON: tests/testutil.h. */
#define json_with_status(args, status) tu_kvsim_json_status(args, status)

/* ---- the floor ------------------------------------------------------------- */

/* LLaMA3-70B on a800x8 (the default config): Mooncake Eq. 1 over
 * G · mfu = 8 × 312 TFLOP/s × 0.45, plus 1 ms per 8192-token chunk when
 * there are two or more. */
static double prefill_ms(double n)
{
    double flops = 80 * (4 * n * n * 8192 + 22 * n * 8192.0 * 8192.0);
    int chunks = (int)((n + 8191) / 8192);
    return 1e3 * flops / (8 * 312e12 * 0.45) + (chunks > 1 ? chunks : 0);
}

static void test_infeasible_floor(void **state)
{
    char args[1024];
    snprintf(args, sizeof args, "plan slo --trace %s --ttft-p90-ms 1 --json", flat_trace);
    json_t *j = json_with_status(args, 3);
    assert_string_equal(json_string_value(json_object_get(j, "status")), "infeasible_floor");
    assert_int_equal(json_array_size(json_object_get(j, "points")), 0);
    double v[FLAT_N];
    for (int i = 0; i < FLAT_N; i++) v[i] = prefill_ms(1000.0 * (i + 1));
    gsl_sort(v, 1, FLAT_N);
    double want = gsl_stats_quantile_from_sorted_data(v, 1, FLAT_N, 0.9);
    const json_t *fl = json_object_get(j, "floor");
    const json_t *f0 = json_array_get(json_object_get(fl, "cpp"), 0);
    double got = tu_num_at(f0, "floor", "ttft_ms.p90");
    printf("floor: TTFT p90 >= %.3f ms (Eq. 1 here: %.3f ms)\n", got, want);
    assert_double_equal(got, want, 1e-6 * want);
    assert_non_null(strstr(json_string_value(json_object_get(j, "reason")), "TTFT p90 cannot go below"));
    /* the p90 prompt (nearest rank: 18000 tokens) alone in a real run, its
     * TTFT at the prefill's token (the floor is the prefill alone; with the
     * default first token, the decode instance's, TTFT also holds the KV's
     * transfer and load and a decode step: docs/definitions.md) */
    assert_int_equal(tu_num_at(fl, "prompt_tokens", NULL), 18000);
    char *one =
        tu_write_temp("{\"timestamp\": 0, \"input_length\": 18000, \"output_length\": 10, \"hash_ids\": [1]}\n");
    snprintf(args, sizeof args, "run --trace %s --json --set metrics.first_token=prefill", one);
    json_t *run = tu_kvsim_json(args);
    double ttft = tu_num_at(run, "ttft_ms", "p50");
    printf("p90 prompt alone: %.3f ms by the floor, %.3f ms by kvsim run\n", tu_num_at(fl, "prompt_alone_ms", NULL),
           ttft);
    assert_double_equal(tu_num_at(fl, "prompt_alone_ms", NULL), ttft, 1e-3);
    json_decref(run);
    tu_remove_temp(one);
    json_decref(j);
    /* the text names it too */
    snprintf(args, sizeof args, "plan slo --trace %s --ttft-p90-ms 1", flat_trace);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 3);
    assert_non_null(strstr(r.out, "infeasible: TTFT p90 cannot go below"));
    tu_free(&r);
    /* prompts too short to pipeline: the reason ends its sentence (it once
     * stopped at "would") */
    char *shorts =
        tu_write_temp("{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 10, \"hash_ids\": [1]}\n"
                      "{\"timestamp\": 1, \"input_length\": 100, \"output_length\": 10, \"hash_ids\": [2]}\n");
    snprintf(args, sizeof args, "plan slo --trace %s --ttft-p90-ms 0.001 --json", shorts);
    j = json_with_status(args, 3);
    const char *why = json_string_value(json_object_get(j, "reason"));
    assert_non_null(strstr(why, "Chunked pipeline parallelism would not lower it"));
    const char *end = "would reach it";
    size_t len = strlen(why), tail = strlen(end);
    assert_true(len > tail && !strcmp(why + len - tail, end));
    json_decref(j);
    tu_remove_temp(shorts);
}

/* ---- a reachable target ------------------------------------------------------ */

/* The points of the table at the cheapest point's DRAM level one instance
 * smaller: each ran and failed; returns how many there were. */
static int smaller_ones_fail(const json_t *j, const json_t *best)
{
    int P = (int)tu_num_at(best, "prefill", NULL), D = (int)tu_num_at(best, "decode", NULL), found = 0;
    double dram = tu_num_at(best, "dram_bytes", NULL);
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(j, "points"), i, p)
    {
        int p2 = (int)tu_num_at(p, "prefill", NULL), d2 = (int)tu_num_at(p, "decode", NULL);
        if (tu_num_at(p, "dram_bytes", NULL) != dram || !((p2 == P - 1 && d2 == D) || (p2 == P && d2 == D - 1)))
            continue;
        assert_true(json_is_true(json_object_get(p, "ran")));
        assert_false(json_is_true(json_object_get(p, "feasible")));
        found++;
    }
    return found;
}

/* The cheapest point's `kvsim run` line, run here, meets the targets and
 * gives the numbers the plan read. */
static void reproduce(const json_t *best, double ttft_target, double tbt_target)
{
    const char *cmd = json_string_value(json_object_get(best, "command"));
    assert_non_null(cmd);
    assert_int_equal(strncmp(cmd, "kvsim run ", 10), 0);
    char args[4096];
    snprintf(args, sizeof args, "%s --json", cmd + 6);
    json_t *run = tu_kvsim_json(args);
    double ttft = tu_num_at(run, "ttft_ms", "p90"), tbt = tu_num_at(run, "tbt_ms", "p99");
    printf("cheapest: %s\n  TTFT p90 %.1f <= %.1f ms, TBT p99 %.2f <= %g ms\n", cmd, ttft, ttft_target, tbt,
           tbt_target);
    assert_true(ttft <= ttft_target && tbt <= tbt_target);
    assert_double_equal(ttft, tu_num_at(best, "ttft_ms", "p90"), 1e-9);
    assert_double_equal(tbt, tu_num_at(best, "tbt_ms", "p99"), 1e-9);
    json_decref(run);
}

static void test_feasible(void **state)
{
    char args[2048], db[600];
    /* the target: half the TTFT p90 of 1P1D at twice the load */
    snprintf(args, sizeof args, "run --trace %s --speed 2 --set cluster.prefill=1 --set cluster.decode=1 --json",
             gen_trace);
    json_t *one = tu_kvsim_json(args);
    double target = tu_num_at(one, "ttft_ms", "p90") / 2;
    json_decref(one);
    snprintf(db, sizeof db, "%s/plan.db", dir);
    snprintf(args, sizeof args,
             "plan slo --trace %s --speed 2 --ttft-p90-ms %.3f --tbt-p99-ms 100 --max-instances 6 --dram 1TB,30GB "
             "--jobs 2 --db %s --json",
             gen_trace, target, db);
    json_t *j = json_with_status(args, 0);
    assert_string_equal(json_string_value(json_object_get(j, "status")), "feasible");
    const json_t *best = json_object_get(j, "cheapest");
    int P = (int)tu_num_at(best, "prefill", NULL), D = (int)tu_num_at(best, "decode", NULL);
    assert_int_equal(tu_num_at(best, "gpus", NULL), (P + D) * 8);
    assert_true(P + D >= 3);
    reproduce(best, target, 100);
    assert_true(smaller_ones_fail(j, best) >= 1);
    assert_true(json_is_object(json_array_get(json_object_get(j, "frontier"), 0)));
    /* the same search on the same database runs nothing */
    json_t *again = json_with_status(args, 0);
    const json_t *s = json_object_get(again, "search");
    printf("search: %g runs, then %g runs and %g recorded on the same database\n",
           tu_num_at(json_object_get(j, "search"), "runs", NULL), tu_num_at(s, "runs", NULL),
           tu_num_at(s, "recorded", NULL));
    assert_int_equal(tu_num_at(s, "runs", NULL), 0);
    assert_true(tu_num_at(s, "recorded", NULL) > 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(again, "cheapest"), "command")),
                        json_string_value(json_object_get(best, "command")));
    json_decref(again);
    json_decref(j);
}

/* A search that finds points none of which passes its confirmation exits 3
 * with "no recommendation"; its JSON says "unconfirmed" with the reason (it
 * once said "feasible", beside the rejected point's command). On the
 * bundled trace at twice its speed, TTFT p90 <= 450 ms and TBT p99 <= 20 ms:
 * more instances leave the worst TTFT p90 at 437.5 ms, above 427.5. */
static void test_unconfirmed(void **state)
{
    (void)state;
    json_t *j = json_with_status("plan slo --speed 2 --ttft-p90-ms 450 --tbt-p99-ms 20 --jobs 2 --json", 3);
    assert_string_equal(json_string_value(json_object_get(j, "status")), "unconfirmed");
    assert_non_null(strstr(json_string_value(json_object_get(j, "reason")), "more instances do not reach it"));
    assert_true(json_is_null(json_object_get(json_object_get(j, "confirmation"), "recommended")));
    json_decref(j);
}

/* What a recommendation's passes say: its 4 resampled confirmations (the
 * default --confirm-seeds 4, trace.resample=sessions) all pass, which rules
 * out a failure rate per fresh draw above 1 - 0.05^(1/4) = 52.7% at 95%
 * (one-sided Clopper-Pearson with no failure), and the attainment's margin
 * beside the targets' (the check that binds may be it). */
static void test_what_passes_say(void **state)
{
    (void)state;
    const char *args = "plan slo --speed 2 --ttft-p90-ms 600 --tbt-p99-ms 20 --jobs 2";
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "SLO attainment 1.0000 (margin 0.1000 over the 0.9 asked)"));
    assert_non_null(strstr(r.out, "draws     4 resampled workloads (trace.resample=sessions), all passed: at 95% "
                                  "confidence a fresh draw fails at most 52.7% of the time (1 - 0.05^(1/4))"));
    char json[256];
    snprintf(json, sizeof json, "%s --json", args);
    json_t *j = tu_kvsim_json(json);
    const json_t *c = json_object_get(j, "confirmation");
    assert_int_equal(tu_num_at(c, "resampled_draws", NULL), 4);
    assert_double_equal(tu_num_at(c, "fail_rate_bound_95", NULL), 1 - pow(0.05, 0.25), 1e-9);
    /* distinct confirmations, counted here from the runs' own numbers */
    const json_t *runs = json_object_get(json_object_get(c, "recommended"), "runs");
    size_t n = json_array_size(runs);
    int distinct = 0;
    for (size_t k = 0; k < n; k++) {
        bool seen = false;
        for (size_t i = 0; i < k && !seen; i++) {
            json_t *a = json_deep_copy(json_array_get(runs, i)), *b = json_deep_copy(json_array_get(runs, k));
            const char *drop[] = {"seed", "run_id", "probe", "feasible", "feasible_without_headroom"};
            for (size_t d = 0; d < sizeof drop / sizeof *drop; d++)
                json_object_del(a, drop[d]), json_object_del(b, drop[d]);
            seen = json_equal(a, b);
            json_decref(a), json_decref(b);
        }
        distinct += !seen;
    }
    assert_int_equal(n, 8);
    assert_true(distinct < 8); /* seeds 1, 3 and 4 on the trace as recorded measure alike */
    assert_int_equal(tu_num_at(c, "distinct_runs", NULL), distinct);
    json_decref(j);
    char line[160];
    snprintf(line, sizeof line, "%d of the 8 distinct: %d gave another's numbers exactly", distinct, 8 - distinct);
    assert_non_null(strstr(r.out, line));
    tu_free(&r);
}

/* More than --max-instances: infeasible (exit 3) naming the side; the
 * temporary database is gone afterwards. */
static void test_infeasible_max_and_temp_db(void **state)
{
    char tmp[600], cmd[2048];
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    assert_int_equal(mkdir(tmp, 0700), 0);
    snprintf(cmd, sizeof cmd,
             "TMPDIR=%s %s plan slo --trace %s --speed 2 --ttft-p90-ms 400 --max-instances 2 --scopes global --jobs 1",
             tmp, tu_kvsim_bin(), gen_trace);
    cli_result r = tu_shell(cmd);
    assert_int_equal(r.status, 3);
    assert_non_null(strstr(r.out, "infeasible: no cluster of up to 2 instances (--max-instances) meets the targets"));
    tu_free(&r);
    DIR *d = opendir(tmp);
    int left = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) left += e->d_name[0] != '.';
    closedir(d);
    assert_int_equal(left, 0);
}

/* ---- SLO-safe by default ------------------------------------------------------ */

/* `kvsim run` of split P, D (1 TB, global, CPP off) on the generated trace
 * at speed 2 with slo.ttft_ms 500: its summary (caller decrefs). */
static json_t *run_split(int P, int D)
{
    char args[1024];
    snprintf(args, sizeof args,
             "run --trace %s --speed 2 --set slo.ttft_ms=500 --set cluster.prefill=%d --set cluster.decode=%d "
             "--set kvstore.dram_bytes=1TB --set cluster.scope=global --set cluster.cpp_group=1 --json",
             gen_trace, P, D);
    return tu_kvsim_json(args);
}

static bool overloaded(const json_t *summary)
{
    return json_is_true(json_object_get(json_object_get(summary, "diagnosis"), "overloaded"));
}

/* TTFT p90 <= 3000 ms is met by 1P1D, whose SLO attainment against
 * slo.ttft_ms 500 is under 0.9 (the plan's text must print the run's) and which is overloaded
 * (queues grew). 2P1D stays under 0.9, 3P1D reaches it: the plan must answer 3P1D,
 * not 1P1D; --attainment 0 gives 1P1D (the old answer) with a warning;
 * --attainment 0.92, which no split up to 6 instances reaches, is
 * infeasible (exit 3). */
static void test_slo_safe(void **state)
{
    char base[2048], args[2400], db[600];
    snprintf(db, sizeof db, "%s/slo.db", dir);
    snprintf(base, sizeof base,
             "plan slo --trace %s --speed 2 --set slo.ttft_ms=500 --ttft-p90-ms 3000 --max-instances 6 --dram 1TB "
             "--scopes global --cpp 1 --jobs 2 --db %s",
             gen_trace, db);
    /* what the runs say, each split on its own */
    json_t *s11 = run_split(1, 1), *s21 = run_split(2, 1), *s31 = run_split(3, 1);
    assert_true(tu_num_at(s11, "ttft_ms", "p90") <= 3000);
    assert_true(tu_num_at(s11, "slo_attainment", NULL) < 0.9 && overloaded(s11));
    assert_true(tu_num_at(s21, "slo_attainment", NULL) < 0.9);
    assert_true(tu_num_at(s31, "slo_attainment", NULL) >= 0.9 && !overloaded(s31));
    /* the default: SLO attainment >= 0.9, not overloaded */
    snprintf(args, sizeof args, "%s --json", base);
    json_t *j = json_with_status(args, 0);
    const json_t *best = json_object_get(j, "cheapest");
    assert_int_equal(tu_num_at(best, "prefill", NULL), 3);
    assert_int_equal(tu_num_at(best, "decode", NULL), 1);
    assert_false(json_is_true(json_object_get(best, "overloaded")));
    snprintf(args, sizeof args, "%s --json", json_string_value(json_object_get(best, "command")) + 6);
    json_t *run = tu_kvsim_json(args);
    printf("default: %s\n  attainment %.4f (0.9 at least), overloaded %d\n",
           json_string_value(json_object_get(best, "command")), tu_num_at(run, "slo_attainment", NULL),
           overloaded(run));
    assert_double_equal(tu_num_at(run, "slo_attainment", NULL), tu_num_at(s31, "slo_attainment", NULL), 1e-12);
    assert_true(tu_num_at(run, "slo_attainment", NULL) >= 0.9 && !overloaded(run));
    json_decref(run);
    json_decref(j);
    /* --attainment 0: the percentile target alone, and a warning */
    snprintf(args, sizeof args, "%s --attainment 0", base);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "cheapest  1P1D = 16 GPUs, 1 TB (3.05M tokens) of DRAM per node"));
    char want[160];
    snprintf(want, sizeof want, "SLO attainment %.4f", tu_num_at(s11, "slo_attainment", NULL));
    assert_non_null(strstr(r.out, want));
    snprintf(want, sizeof want, "warning: the cheapest point misses the SLOs (attainment %.4f, overloaded)",
             tu_num_at(s11, "slo_attainment", NULL));
    assert_non_null(strstr(r.err, want));
    tu_free(&r);
    /* the default's text: the full row, human units */
    r = tu_kvsim(base);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "targets   TTFT p90 <= 3000 ms, SLO attainment >= 0.9, not overloaded, no request"));
    assert_non_null(strstr(r.out, "cheapest  3P1D = 32 GPUs, 1 TB (3.05M tokens) of DRAM per node, global scope"));
    assert_non_null(strstr(r.out, "          TTFT mean "));
    assert_non_null(strstr(r.out, "          TBT  mean "));
    snprintf(want, sizeof want, "SLO attainment %.4f (slo.ttft_ms 500, slo.tbt_ms 100",
             tu_num_at(s31, "slo_attainment", NULL));
    assert_non_null(strstr(r.out, want));
    assert_non_null(strstr(r.out, "not overloaded; busiest: prefill compute"));
    char *table = strstr(r.out, "\nprobe "), *run_line = strstr(r.out, "\nrun ");
    assert_non_null(table);
    *run_line = 0; /* the `kvsim run` line names bytes as the config takes them */
    assert_null(strstr(table, "1000000000000"));
    assert_non_null(strstr(table, "   1 TB   3.05M global"));
    tu_free(&r);
    /* nothing up to 6 instances reaches 0.92: infeasible */
    snprintf(args, sizeof args, "%s --attainment 0.92", base);
    r = tu_kvsim(args);
    assert_int_equal(r.status, 3);
    assert_non_null(strstr(r.out, "infeasible: no cluster of up to 6 instances (--max-instances) meets the targets"));
    snprintf(want, sizeof want, "SLO attainment %.4f < 0.92", tu_num_at(s31, "slo_attainment", NULL));
    assert_non_null(strstr(r.out, want));
    tu_free(&r);
    json_decref(s11);
    json_decref(s21);
    json_decref(s31);
}

/* ---- aggregated (LMCache) clusters ----------------------------------------------- */

#define LMC "--config configs/clusters/lmcache-cpu-offload.json --set cluster.decode_hbm_frac=0.3"

/* A `kvsim run` of the cyclic trace on n instances with dram bytes of CPU DRAM each (caller decrefs). */
static json_t *run_cyclic(int n, double dram)
{
    char args[1024];
    snprintf(args, sizeof args,
             "run " LMC " --trace %s --set cluster.instances=%d --set kvstore.dram_bytes=%.17g --json", cyclic_trace, n,
             dram);
    return tu_kvsim_json(args);
}

/* Llama-3.1-8B's KV is 2 × 32 layers × 8 heads × 128 × 2 bytes = 131,072
 * bytes per token, a 256-token chunk 33,554,432 bytes. The GPU cache of
 * one instance (hbm_pages × 16 tokens) holds fewer than the 4 documents
 * but at least 2: read in turn, LRU keeps none of them for the next
 * round on one instance; two instances (round robin) read 2 each and
 * keep them. The CPU pool needs all 4 × 80 chunks (a request's full
 * chunks, its 100-token question filling none): with them rounds 2 and 3
 * (8 of 12 requests) load their document, p50 TTFT about 70 ms; one chunk
 * fewer and LRU over the cycle keeps no document whole, every request
 * computes its prompt (about 1 s). With --ttft-p50-ms 500, --dram 16GB,8GB
 * and a step of one chunk: 1 instance at 16 GB, 2 at 8 GB, and the cliff
 * 320 chunks passing, 319 failing. (Up to 2 instances: 3 would each read
 * all 4 documents in turn, round robin, and fail again.) */
static void test_aggregated_cliff(void **state)
{
    const double chunk = 256.0 * 2 * 32 * 8 * 128 * 2, need = CYC_DOCS * (CYC_DOC_TOKENS / 256) * chunk;
    assert_double_equal(need, 10737418240.0, 0);
    json_t *one = run_cyclic(1, need);
    double gpu_tokens = tu_num_at(one, "hbm_pages", NULL) * tu_num_at(one, "page_tokens", NULL);
    assert_true(gpu_tokens < CYC_DOCS * CYC_DOC_TOKENS && gpu_tokens >= 2 * (CYC_DOC_TOKENS + 100));
    assert_int_equal(tu_num_at(json_object_get(one, "lmcache"), "chunk_hits", "cpu"), 8 * CYC_DOC_TOKENS / 256);
    json_decref(one);
    char args[2048];
    snprintf(args, sizeof args,
             "plan slo " LMC " --trace %s --ttft-p50-ms 500 --max-instances 2 --dram 16GB,8GB --dram-step %.17g "
             "--jobs 2 --json",
             cyclic_trace, chunk);
    json_t *j = json_with_status(args, 0);
    assert_string_equal(json_string_value(json_object_get(j, "mode")), "aggregated");
    const json_t *cliff = json_object_get(j, "cliff"), *f = json_object_get(j, "frontier");
    printf("cliff: %.17g bytes pass, %.17g fail\n", tu_num_at(json_object_get(cliff, "pass"), "dram_bytes", NULL),
           tu_num_at(json_object_get(cliff, "fail"), "dram_bytes", NULL));
    assert_double_equal(tu_num_at(json_object_get(cliff, "pass"), "dram_bytes", NULL), need, 0);
    assert_double_equal(tu_num_at(json_object_get(cliff, "fail"), "dram_bytes", NULL), need - chunk, 0);
    assert_int_equal(tu_num_at(json_object_get(cliff, "pass"), "instances", NULL), 1);
    assert_int_equal(tu_num_at(json_array_get(f, 0), "instances", NULL), 1);
    assert_int_equal(tu_num_at(json_array_get(f, 1), "instances", NULL), 2);
    const json_t *best = json_object_get(j, "cheapest");
    assert_double_equal(tu_num_at(best, "dram_bytes", NULL), need, 0);
    /* its command, run here, meets the target; one chunk less does not */
    snprintf(args, sizeof args, "%s --json", json_string_value(json_object_get(best, "command")) + 6);
    json_t *run = tu_kvsim_json(args), *less = run_cyclic(1, need - chunk);
    assert_true(tu_num_at(run, "ttft_ms", "p50") <= 500);
    assert_true(tu_num_at(less, "ttft_ms", "p50") > 500);
    json_decref(run);
    json_decref(less);
    json_decref(j);
}

/* The text answer names the cliff in GB, and no raw byte count. (One
 * confirmation: test_aggregated_cliff runs the default eight on this
 * search, and the text does not depend on them.) */
static void test_aggregated_text(void **state)
{
    char args[2048];
    snprintf(args, sizeof args,
             "plan slo " LMC " --trace %s --ttft-p50-ms 500 --max-instances 2 --dram 16GB,8GB " TU_ONE_CONFIRMATION
             "--jobs 2",
             cyclic_trace);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    printf("%s", r.out);
    assert_non_null(strstr(r.out, "cliff     with 1 instance: 11 GB of CPU DRAM per instance passes"));
    assert_non_null(strstr(r.out, "10 GB fails"));
    assert_non_null(strstr(r.out, "--set kvstore.dram_bytes=11GB"));
    assert_null(strstr(r.out, "000000000"));
    /* the frontier prices each level, as a split's does: h100x1's $6.155 an instance */
    assert_non_null(strstr(r.out, "    16 GB    122k     1    1  $6.16 an hour\n"));
    assert_non_null(strstr(r.out, "     8 GB     61k     2    2  $12.31 an hour\n"));
    tu_free(&r);
}

/* An aggregated cluster without LMCache has no CPU tier: no DRAM is
 * searched, priced or set on its run lines, and a --dram given says so
 * (it once ran and printed the config's 1 TB, priced at the DRAM price,
 * and dropped --dram without a word). At $0.01 a GB-hour of DRAM the
 * price is the GPUs' alone, h100x1's $6.155 an instance. */
static void test_aggregated_without_lmcache(void **state)
{
    char args[2048];
    snprintf(args, sizeof args,
             "plan slo --trace %s --set cluster.mode=aggregated --set model=llama3.1-8b --set hardware=h100x1 --set "
             "hardware.dram_price_per_GB_hour=0.01 --ttft-p90-ms 5000 --max-instances 2 --dram 250GB "
             "--confirm-seeds 0 --json",
             gen_trace);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "warning: --dram: the aggregated cluster has no CPU tier (kvstore.lmcache off"));
    json_t *j = json_loads(r.out, 0, NULL);
    assert_non_null(j);
    const json_t *pt = json_object_get(j, "cheapest");
    assert_non_null(pt);
    int inst = (int)tu_num_at(pt, "instances", NULL);
    assert_double_equal(tu_num_at(pt, "dram_bytes", NULL), 0, 0);
    assert_double_equal(tu_num_at(pt, "price_per_hour", NULL), inst * 6.155, 1e-9);
    assert_null(strstr(r.out, "kvstore.dram_bytes="));
    json_decref(j);
    tu_free(&r);
    snprintf(args, sizeof args,
             "plan slo --trace %s --set cluster.mode=aggregated --set model=llama3.1-8b --set hardware=h100x1 "
             "--ttft-p90-ms 5000 "
             "--max-instances 2 --confirm-seeds 0",
             gen_trace);
    r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "no CPU tier (kvstore.lmcache off: prefixes cached in HBM)"));
    assert_null(strstr(r.err, "warning: --dram"));
    tu_free(&r);
}

/* --loads never,always: each probe runs both; with never the CPU pool's
 * chunks are not loaded and every request computes its prompt (p50 about
 * 1 s, failing), with always the rereads load theirs (passing): the
 * answer is load always, and the table has both points (one
 * confirmation, as in test_aggregated_text). */
static void test_aggregated_loads(void **state)
{
    char args[2048];
    snprintf(args, sizeof args,
             "plan slo " LMC
             " --trace %s --ttft-p50-ms 500 --max-instances 2 --dram 16GB --loads never,always " TU_ONE_CONFIRMATION
             "--jobs 2 --json",
             cyclic_trace);
    json_t *j = json_with_status(args, 0);
    const json_t *best = json_object_get(j, "cheapest"), *p;
    assert_string_equal(json_string_value(json_object_get(best, "load")), "always");
    assert_int_equal(tu_num_at(best, "instances", NULL), 1);
    size_t i;
    int never = 0;
    json_array_foreach(json_object_get(j, "points"), i, p)
    {
        if (strcmp(json_string_value(json_object_get(p, "load")), "never") || tu_num_at(p, "instances", NULL) != 1)
            continue;
        never++;
        assert_false(json_is_true(json_object_get(p, "feasible")));
        assert_true(tu_num_at(p, "ttft_ms", "p50") > 500);
    }
    assert_true(never >= 1);
    assert_non_null(strstr(json_string_value(json_object_get(best, "command")), "--set kvstore.load=always"));
    json_decref(j);
}

/* ---- bad arguments ------------------------------------------------------------ */

static void test_bad_arguments(void **state)
{
    static const char *const cases[][2] = {
        {"--attainment 0", "no target"},
        {"--ttft-p90-ms 0", "--ttft-p90-ms: 0 is not a number > 0"},
        {"--tbt-p99-ms -5", "--tbt-p99-ms: -5 is not a number > 0"},
        {"--ttft-p99-ms abc", "--ttft-p99-ms"},
        {"--ttft-p90-ms 1000 --attainment 1.5", "--attainment: 1.5 is not in [0, 1]"},
        {"--attainment -0.1", "--attainment: -0.1 is not in [0, 1]"},
        {"--attainment x", "--attainment"},
        {"--ttft-p90-ms 1000 --max-instances 1", "--max-instances: '1' is not an integer in [2, 4096]"},
        {"--ttft-p90-ms 1000 --scopes moon", "--scopes: 'moon' is not global or local"},
        {"--ttft-p90-ms 1000 --cpp 0", "--cpp: '0' is not an integer in [1, 64]"},
        {"--ttft-p90-ms 1000 --cpp 1,1", "--cpp: 1 given twice"},
        {"--ttft-p90-ms 1000 --dram 1TB,-3", "--dram"},
        {"--ttft-p90-ms 1000 --jobs 0", "--jobs: '0' is not an integer in [1, 1024]"},
        {"--ttft-p90-ms 1000 --speed 0", "--speed: 0 is not a number > 0"},
        {"--ttft-p90-ms 1000 --bogus", "unknown option '--bogus'"},
        {"--ttft-p90-ms", "option '--ttft-p90-ms' needs a value"},
        {"--ttft-p90-ms 1000 extra", "unexpected argument 'extra'"},
        {"--ttft-p90-ms 1000 --set cluster.prefill=3", "plan slo sets cluster.prefill itself"},
        {"--ttft-p90-ms 1000 --set cluster.mode=aggregated --cpp 1",
         "--cpp: cluster.mode is 'aggregated'; --cpp searches disaggregated clusters"},
        {"--ttft-p90-ms 1000 --ssd 1TB", "--ssd: cluster.mode is 'disaggregated'; --ssd searches aggregated (LMCache)"},
        {"--ttft-p90-ms 1000 --set cluster.mode=aggregated --loads sometimes",
         "--loads: 'sometimes' is not always, never, adaptive or balanced"},
        {"--ttft-p90-ms 1000 --set cluster.mode=aggregated --set cluster.instances=2",
         "plan slo sets cluster.instances itself"},
        {"--ttft-p90-ms 1000 --set cluster.mode=aggregated --dram-step 0", "--dram-step: 0 is not a size > 0"},
        {"--ttft-p90-ms 1000 --set cluster.prefil=3", "cluster.prefil"},
        {"--ttft-p90-ms 1000 --trace /nonexistent/t.jsonl", "/nonexistent/t.jsonl"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[512];
        snprintf(args, sizeof args, "plan slo %s", cases[i][0]);
        tu_expect_exit(args, 2, cases[i][1]);
    }
    cli_result r = tu_kvsim("plan slo --ttft-p90-ms 1000 --bogus");
    assert_non_null(strstr(r.err, "usage: kvsim plan slo"));
    tu_free(&r);
    tu_expect_stdout("plan slo --help", "usage: kvsim plan slo");
    tu_expect_stdout("plan --help", "kvsim plan slo --help");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_infeasible_floor),
        cmocka_unit_test(test_feasible),
        cmocka_unit_test(test_infeasible_max_and_temp_db),
        cmocka_unit_test(test_slo_safe),
        cmocka_unit_test(test_aggregated_cliff),
        cmocka_unit_test(test_aggregated_text),
        cmocka_unit_test(test_aggregated_without_lmcache),
        cmocka_unit_test(test_aggregated_loads),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_unconfirmed),
        cmocka_unit_test(test_what_passes_say),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
