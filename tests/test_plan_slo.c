/* tests/test_plan_slo.c — `kvsim plan slo` end to end.
 *
 * An impossible target is reported infeasible (exit 3) with the floor, and
 * the floor is what the cost model gives each request alone, computed here
 * from Mooncake Eq. 1 on a trace without prefix reuse, and checked against
 * a one-request `kvsim run` of the quantile prompt. A reachable target gives
 * a cheapest point whose printed `kvsim run` line, run here, meets the
 * targets, while the clusters one instance smaller, which the search ran,
 * do not; a second search on the same database runs nothing; the temporary
 * database is removed. Bad arguments exit 2 naming the option and value. */
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

static char *dir, gen_trace[512], flat_trace[512];

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
    return 0;
}

static int teardown(void **state)
{
    su_rmrf(dir);
    free(dir);
    return 0;
}

/* `kvsim ARGS` exits with status and prints a JSON object (caller decrefs). */
static json_t *json_with_status(const char *args, int status)
{
    cli_result r = tu_kvsim(args);
    if (r.status != status) fail_msg("kvsim %s: exit %d (want %d): %s", args, r.status, status, r.err);
    json_t *j = json_loads(r.out, 0, NULL);
    if (!j) fail_msg("kvsim %s: not JSON: %s", args, r.out);
    tu_free(&r);
    return j;
}

static double num_at(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    if (b) v = json_object_get(v, b);
    if (!json_is_number(v)) fail_msg("%s.%s: not a number", a, b ? b : "");
    return json_number_value(v);
}

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
    double got = num_at(f0, "floor", "ttft_ms.p90");
    printf("floor: TTFT p90 >= %.3f ms (Eq. 1 here: %.3f ms)\n", got, want);
    assert_double_equal(got, want, 1e-6 * want);
    assert_non_null(strstr(json_string_value(json_object_get(j, "reason")), "TTFT p90 cannot go below"));
    /* the p90 prompt (nearest rank: 18000 tokens) alone in a real run */
    assert_int_equal(num_at(fl, "prompt_tokens", NULL), 18000);
    char *one =
        tu_write_temp("{\"timestamp\": 0, \"input_length\": 18000, \"output_length\": 10, \"hash_ids\": [1]}\n");
    snprintf(args, sizeof args, "run --trace %s --json", one);
    json_t *run = tu_kvsim_json(args);
    double ttft = num_at(run, "ttft_ms", "p50");
    printf("p90 prompt alone: %.3f ms by the floor, %.3f ms by kvsim run\n", num_at(fl, "prompt_alone_ms", NULL), ttft);
    assert_double_equal(num_at(fl, "prompt_alone_ms", NULL), ttft, 1e-3);
    json_decref(run);
    tu_remove_temp(one);
    json_decref(j);
    /* the text names it too */
    snprintf(args, sizeof args, "plan slo --trace %s --ttft-p90-ms 1", flat_trace);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 3);
    assert_non_null(strstr(r.out, "infeasible: TTFT p90 cannot go below"));
    tu_free(&r);
}

/* ---- a reachable target ------------------------------------------------------ */

/* The points of the table at the cheapest point's DRAM level one instance
 * smaller: each ran and failed; returns how many there were. */
static int smaller_ones_fail(const json_t *j, const json_t *best)
{
    int P = (int)num_at(best, "prefill", NULL), D = (int)num_at(best, "decode", NULL), found = 0;
    double dram = num_at(best, "dram_bytes", NULL);
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(j, "points"), i, p)
    {
        int p2 = (int)num_at(p, "prefill", NULL), d2 = (int)num_at(p, "decode", NULL);
        if (num_at(p, "dram_bytes", NULL) != dram || !((p2 == P - 1 && d2 == D) || (p2 == P && d2 == D - 1))) continue;
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
    double ttft = num_at(run, "ttft_ms", "p90"), tbt = num_at(run, "tbt_ms", "p99");
    printf("cheapest: %s\n  TTFT p90 %.1f <= %.1f ms, TBT p99 %.2f <= %g ms\n", cmd, ttft, ttft_target, tbt,
           tbt_target);
    assert_true(ttft <= ttft_target && tbt <= tbt_target);
    assert_double_equal(ttft, num_at(best, "ttft_ms", "p90"), 1e-9);
    assert_double_equal(tbt, num_at(best, "tbt_ms", "p99"), 1e-9);
    json_decref(run);
}

static void test_feasible(void **state)
{
    char args[2048], db[600];
    /* the target: half the TTFT p90 of 1P1D at twice the load */
    snprintf(args, sizeof args, "run --trace %s --speed 2 --set cluster.prefill=1 --set cluster.decode=1 --json",
             gen_trace);
    json_t *one = tu_kvsim_json(args);
    double target = num_at(one, "ttft_ms", "p90") / 2;
    json_decref(one);
    snprintf(db, sizeof db, "%s/plan.db", dir);
    snprintf(args, sizeof args,
             "plan slo --trace %s --speed 2 --ttft-p90-ms %.3f --tbt-p99-ms 100 --max-instances 6 --dram 1TB,30GB "
             "--jobs 2 --db %s --json",
             gen_trace, target, db);
    json_t *j = json_with_status(args, 0);
    assert_string_equal(json_string_value(json_object_get(j, "status")), "feasible");
    const json_t *best = json_object_get(j, "cheapest");
    int P = (int)num_at(best, "prefill", NULL), D = (int)num_at(best, "decode", NULL);
    assert_int_equal(num_at(best, "gpus", NULL), (P + D) * 8);
    assert_true(P + D >= 3);
    reproduce(best, target, 100);
    assert_true(smaller_ones_fail(j, best) >= 1);
    assert_true(json_is_object(json_array_get(json_object_get(j, "frontier"), 0)));
    /* the same search on the same database runs nothing */
    json_t *again = json_with_status(args, 0);
    const json_t *s = json_object_get(again, "search");
    printf("search: %g runs, then %g runs and %g recorded on the same database\n",
           num_at(json_object_get(j, "search"), "runs", NULL), num_at(s, "runs", NULL), num_at(s, "recorded", NULL));
    assert_int_equal(num_at(s, "runs", NULL), 0);
    assert_true(num_at(s, "recorded", NULL) > 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(again, "cheapest"), "command")),
                        json_string_value(json_object_get(best, "command")));
    json_decref(again);
    json_decref(j);
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

/* ---- bad arguments ------------------------------------------------------------ */

static void test_bad_arguments(void **state)
{
    static const char *const cases[][2] = {
        {"", "no target"},
        {"--ttft-p90-ms 0", "--ttft-p90-ms: 0 is not a number > 0"},
        {"--tbt-p99-ms -5", "--tbt-p99-ms: -5 is not a number > 0"},
        {"--ttft-p99-ms abc", "--ttft-p99-ms"},
        {"--ttft-p90-ms 1000 --attainment 1.5", "--attainment: 1.5 is not in (0, 1]"},
        {"--attainment 0", "--attainment: 0 is not a number > 0"},
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
        {"--ttft-p90-ms 1000 --set cluster.mode=aggregated", "plan slo sizes disaggregated clusters"},
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
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
