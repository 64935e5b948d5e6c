/* tests/test_compare.c — `kvsim compare` (issue 30 item 3) on hand-made
 * results databases whose differences and intervals were computed by hand
 * (t quantiles by numerical integration of Student's density, not GSL):
 * a paired interval over matching seeds, Welch's interval over unmatched
 * seeds, one seed a side (no interval), the order flipping on a three-load
 * grid, a second context kept apart, and the errors (unknown key, one value,
 * unknown baseline or metric, an empty or missing database) exit 2 naming
 * what is wrong. `kvsim report` on the three-load database draws the same
 * differences and intervals (compare.dat), tabulates them and says where
 * the order flips, a context at a time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"
#include "tests/sweep_testutil.h"

/* A results database with the runs table kvsim writes (its columns), in a
 * fresh temp file; the caller frees the path and unlinks it. */
static char *make_db(void)
{
    char *path = tu_write_temp("");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "CREATE TABLE runs(id INTEGER PRIMARY KEY, created TEXT, kvsim_version TEXT,"
                                  " config_json TEXT, config_hash TEXT, trace_path TEXT, trace_fingerprint TEXT,"
                                  " seed INTEGER, wall_seconds REAL, summary_json TEXT)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    return path;
}

/* One completed run: router, speed, seed, TTFT mean and SLO attainment;
 * scope "local" or "global". */
static void add_run(const char *path, const char *router, double speed, int seed, double ttft, double attain,
                    const char *scope)
{
    sqlite3 *db;
    char sql[1024];
    snprintf(sql, sizeof sql,
             "INSERT INTO runs(config_json, trace_fingerprint, seed, summary_json) VALUES("
             "'{\"seed\": %d, \"policy\": {\"router\": \"%s\"}, \"trace\": {\"speed\": %g},"
             " \"cluster\": {\"scope\": \"%s\"}}', 'abc', %d,"
             " '{\"ttft_ms\": {\"mean\": %.17g}, \"slo_attainment\": %.17g}')",
             seed, router, speed, scope, seed, ttft, attain);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* `kvsim compare --json` on path with extra args, parsed. */
static json_t *compare_json(const char *path, const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "compare --db %s --by policy.router %s --json", path, args);
    cli_result r = tu_kvsim(cmd);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    json_error_t je;
    json_t *j = json_loads(r.out, 0, &je);
    if (!j) fail_msg("not JSON: %s: %s", je.text, r.out);
    tu_free(&r);
    return j;
}

/* Row `row` of comparison `cm` of the first context. */
static const json_t *row_of(const json_t *j, int cm, int row)
{
    const json_t *ctx = json_array_get(json_object_get(j, "contexts"), 0);
    return json_array_get(json_object_get(json_array_get(json_object_get(ctx, "comparisons"), (size_t)cm), "rows"),
                          (size_t)row);
}

static double num(const json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }

/* Seeds 1-3 both sides, B − A = 1, 2, 3: mean 2, sd 1, t(0.975, 2) =
 * 4.302653 → ±4.302653/√3 = ±2.484138; baseline mean 20 → +10%. */
static void test_paired(void **state)
{
    (void)state;
    char *db = make_db();
    double a[] = {10, 20, 30}, d[] = {1, 2, 3};
    for (int s = 0; s < 3; s++) {
        add_run(db, "A", 1, s + 1, a[s], 0.9, "local");
        add_run(db, "B", 1, s + 1, a[s] + d[s], 0.9, "local");
    }
    json_t *j = compare_json(db, "--baseline A --metric ttft_ms.mean");
    const json_t *r = row_of(j, 0, 0);
    assert_string_equal(json_string_value(json_object_get(r, "method")), "paired");
    assert_int_equal(json_integer_value(json_object_get(r, "n")), 3);
    assert_double_equal(num(r, "diff"), 2, 1e-9);
    assert_double_equal(num(r, "lo"), 2 - 2.484138, 1e-5);
    assert_double_equal(num(r, "hi"), 2 + 2.484138, 1e-5);
    assert_double_equal(num(r, "rel_pct"), 10, 1e-9);
    assert_string_equal(json_string_value(json_object_get(r, "verdict")), "not distinguishable");
    json_decref(j);
    /* The default baseline is the first run's value: A − B = −1, −2, −3. */
    j = compare_json(db, "--metric ttft_ms.mean");
    assert_string_equal(json_string_value(json_object_get(j, "baseline")), "A");
    json_decref(j);
    j = compare_json(db, "--baseline B --metric ttft_ms.mean");
    assert_double_equal(num(row_of(j, 0, 0), "hi"), -2 + 2.484138, 1e-5);
    json_decref(j);
    unlink(db);
    free(db);
}

/* Set trace.resample of the runs of router in the database at path. */
static void set_resample(const char *path, const char *router, const char *resample)
{
    sqlite3 *db;
    char sql[512];
    snprintf(sql, sizeof sql,
             "UPDATE runs SET config_json = json_set(config_json, '$.trace.resample', '%s')"
             " WHERE json_extract(config_json, '$.policy.router') = '%s'",
             resample, router);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* What the interval covers follows the runs' trace.resample: the noise
 * alone when no run resamples, the workload too when every run does, and a
 * warning when the groups differ. */
static void test_interval_coverage(void **state)
{
    (void)state;
    char *db = make_db();
    for (int s = 1; s <= 2; s++) {
        add_run(db, "A", 1, s, 10 + s, 0.9, "local");
        add_run(db, "B", 1, s, 12 + s, 0.9, "local");
    }
    const char *want[] = {"seeds vary only what the seed drives (estimator noise, random policies), so it covers "
                          "that variability only, not the workload's (set trace.resample to cover it)",
                          "seeds also redraw the workload (trace.resample = poisson), so it covers workload "
                          "variability as well as estimator noise and random policies",
                          "trace.resample differs between runs: where it is none the seeds vary only what the seed "
                          "drives (estimator noise, random policies), elsewhere the workload too"};
    for (int k = 0; k < 3; k++) {
        if (k == 1) set_resample(db, "A", "poisson"), set_resample(db, "B", "poisson");
        if (k == 2) set_resample(db, "A", "none");
        json_t *j = compare_json(db, "--baseline A --metric ttft_ms.mean");
        const char *cover = json_string_value(json_object_get(j, "interval"));
        if (!strstr(cover, want[k])) fail_msg("case %d: interval says '%s'", k, cover);
        json_decref(j);
    }
    unlink(db);
    free(db);
}

/* A: seeds 1-3 = 10, 12, 14 (mean 12, var 4); B: seeds 4-5 = 20, 24 (mean
 * 22, var 8): no seed in common, so Welch: se = √(4/3 + 8/2) = 2.309401,
 * ν = (16/3)² / ((4/3)²/2 + 4²/1) = 1.684211, t(0.975, ν) = 5.176232 →
 * 10 ± 11.953995. */
static void test_welch(void **state)
{
    (void)state;
    char *db = make_db();
    add_run(db, "A", 1, 1, 10, 1, "local");
    add_run(db, "A", 1, 2, 12, 1, "local");
    add_run(db, "A", 1, 3, 14, 1, "local");
    add_run(db, "B", 1, 4, 20, 1, "local");
    add_run(db, "B", 1, 5, 24, 1, "local");
    json_t *j = compare_json(db, "--metric ttft_ms.mean");
    const json_t *r = row_of(j, 0, 0);
    assert_string_equal(json_string_value(json_object_get(r, "method")), "welch");
    assert_double_equal(num(r, "diff"), 10, 1e-9);
    assert_double_equal(num(r, "lo"), 10 - 11.953995, 1e-4);
    assert_double_equal(num(r, "hi"), 10 + 11.953995, 1e-4);
    json_decref(j);
    unlink(db);
    free(db);
}

/* One seed a side: the difference, no interval, said in the table. */
static void test_one_seed(void **state)
{
    (void)state;
    char *db = make_db();
    add_run(db, "A", 1, 1, 10, 0.5, "local");
    add_run(db, "B", 1, 1, 15, 0.75, "local");
    json_t *j = compare_json(db, "");
    const json_t *r = row_of(j, 0, 0), *att = row_of(j, 1, 0);
    assert_string_equal(json_string_value(json_object_get(r, "method")), "none");
    assert_double_equal(num(r, "diff"), 5, 1e-12);
    assert_true(json_is_null(json_object_get(r, "lo")));
    /* one run a side is no evidence: no better/worse verdict (issue 40 item 1), only the direction */
    assert_string_equal(json_string_value(json_object_get(r, "verdict")), "higher (one seed: no verdict)");
    /* default metrics that are absent (tbt_ms...) are left out */
    assert_double_equal(num(att, "diff"), 0.25, 1e-12);
    assert_string_equal(json_string_value(json_object_get(att, "verdict")), "higher (one seed: no verdict)");
    json_decref(j);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "compare --db %s --by policy.router --metric ttft_ms.mean", db);
    cli_result t = tu_kvsim(cmd);
    assert_int_equal(t.status, 0);
    assert_non_null(strstr(t.out, "no interval (one seed)"));
    assert_non_null(strstr(t.out, "+50.0%"));
    if (strstr(t.out, "worse") || strstr(t.out, "better  ")) fail_msg("a verdict from one seed:\n%s", t.out);
    tu_free(&t);
    unlink(db);
    free(db);
}

/* The runs of test_flip (below) into db. */
static void add_flip_runs(const char *db)
{
    double speed[] = {1, 2, 3, 4}, d[4][2] = {{-2, -2}, {-3, -3}, {3, 5}, {4, 4.1}};
    for (int k = 0; k < 4; k++)
        for (int s = 0; s < 2; s++) {
            add_run(db, "A", speed[k], s + 1, 100, 1, "local");
            add_run(db, "B", speed[k], s + 1, 100 + d[k][s], 1, "local");
            add_run(db, "A", speed[k], s + 1, 100, 1, "global");
            add_run(db, "B", speed[k], s + 1, 90, 1, "global");
        }
}

/* Four loads, seeds 1-2: B − A = −2, −2 at speed 1 and −3, −3 at 2 (the
 * seeds change neither side: no verdict, issue 40 item 10), +3, +5 at 3
 * (mean 4, sd √2, t(0.975,1) = 12.706205 → ±12.706205 · √2/√2 =
 * ±12.706205: not distinguishable), +4, +4.1 at 4 (mean 4.05, sd 0.1/√2:
 * ±0.635, worse). The order is told over the loads that have one: the
 * flip is between 2 and 4, and 3 is named apart. A second scope is a
 * second context, compared apart. */
static void test_flip(void **state)
{
    (void)state;
    char *db = make_db();
    add_flip_runs(db);
    json_t *j = compare_json(db, "--metric ttft_ms.mean");
    const json_t *cm =
        json_array_get(json_object_get(json_array_get(json_object_get(j, "contexts"), 0), "comparisons"), 0);
    assert_string_equal(
        json_string_value(json_object_get(cm, "flips")),
        "B better than A up to speed 2, worse from speed 4: the order flips between speed 2 and 4; "
        "not distinguishable (interval includes 0) at speed 3; the seeds vary neither side of this metric "
        "at speed 1, 2");
    assert_double_equal(num(row_of(j, 0, 0), "lo"), -2, 1e-12);
    assert_string_equal(json_string_value(json_object_get(row_of(j, 0, 1), "verdict")),
                        "the seeds vary neither side of this metric");
    const json_t *r3 = row_of(j, 0, 2);
    assert_double_equal(num(r3, "diff"), 4, 1e-12);
    assert_double_equal(num(r3, "hi"), 4 + 12.706205, 1e-5);
    const json_t *ctx2 = json_array_get(json_object_get(j, "contexts"), 1);
    assert_string_equal(json_string_value(json_object_get(ctx2, "label")), "cluster.scope=global");
    const json_t *cm2 = json_array_get(json_object_get(ctx2, "comparisons"), 0);
    assert_string_equal(
        json_string_value(json_object_get(cm2, "flips")),
        "B better than A at every load (speed 1–4); the seeds vary neither side of this metric at speed 1, "
        "2, 3, 4");
    json_decref(j);
    /* --speed keeps the loads named: no flip left. */
    j = compare_json(db, "--metric ttft_ms.mean --speed 1,2");
    cm = json_array_get(json_object_get(json_array_get(json_object_get(j, "contexts"), 0), "comparisons"), 0);
    assert_int_equal(json_array_size(json_object_get(cm, "rows")), 2);
    assert_string_equal(
        json_string_value(json_object_get(cm, "flips")),
        "B better than A at every load (speed 1–2); the seeds vary neither side of this metric at speed 1, 2");
    json_decref(j);
    /* a load without an order is no part of one: better at the two that
     * have it, not "at every load" */
    j = compare_json(db, "--metric ttft_ms.mean --speed 1,2,3");
    cm = json_array_get(json_object_get(json_array_get(json_object_get(j, "contexts"), 0), "comparisons"), 0);
    assert_string_equal(json_string_value(json_object_get(cm, "flips")),
                        "B better than A at speed 1, 2; not distinguishable (interval includes 0) at speed 3; the "
                        "seeds vary neither side of this metric at speed 1, 2");
    json_decref(j);
    /* no load with an order: said so, no order at all */
    char *db2 = make_db();
    for (int k = 1; k <= 2; k++)
        for (int seed = 1; seed <= 2; seed++)
            add_run(db2, "A", k, seed, 100, 1, "local"), add_run(db2, "B", k, seed, seed == 1 ? 103 : 95, 1, "local");
    j = compare_json(db2, "--metric ttft_ms.mean");
    cm = json_array_get(json_object_get(json_array_get(json_object_get(j, "contexts"), 0), "comparisons"), 0);
    assert_string_equal(json_string_value(json_object_get(cm, "flips")),
                        "B not distinguishable from A at any load (interval includes 0 at speed 1–2)");
    json_decref(j);
    unlink(db2);
    free(db2);
    unlink(db);
    free(db);
}

/* The file dir/name, read whole (caller frees). */
static char *read_whole(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("%s: not written", path);
    char *text = tu_slurp(f);
    fclose(f);
    return text;
}

/* The database of test_flip with every table kvsim writes: one `kvsim
 * run` makes them, its rows are dropped, the hand-made runs go in. */
static char *flip_db_with_tables(const char *dir)
{
    char trace[600], cmd[1400], *db = malloc(600);
    snprintf(trace, sizeof trace, "%s/t.jsonl", dir);
    snprintf(db, 600, "%s/r.db", dir);
    su_write_trace(trace, 5, 100);
    snprintf(cmd, sizeof cmd, "run --trace %s --db %s", trace, db);
    tu_expect_stdout(cmd, NULL);
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "DELETE FROM requests; DELETE FROM samples; DELETE FROM runs", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(h);
    add_flip_runs(db);
    return db;
}

/* kvsim report: the figure's data are test_flip's differences and
 * intervals (local: −2 [−2, −2] at 1, −3 at 2, 4 ± 12.706205 at 3;
 * global: −10 everywhere), the table has a row per load and the sentence
 * of the flip, each context under its own heading. */
static void test_report(void **state)
{
    (void)state;
    char *dir = su_tempdir(), *db = flip_db_with_tables(dir), out[700], cmd[1600];
    snprintf(out, sizeof out, "%s/rep", dir);
    snprintf(cmd, sizeof cmd, "report --db %s -o %s --color-by policy.router", db, out);
    tu_expect_stdout(cmd, "kvsim report: ");
    char *dat = read_whole(out, "compare.dat"), *html = read_whole(out, "index.html"),
         *gp = read_whole(out, "compare.gp");
    double lo, hi, x, diff;
    assert_non_null(strstr(dat, "# B\n1\t-2\t-2\t-2\n2\t-3\t-3\t-3\n3\t4\t"));
    assert_int_equal(sscanf(strstr(dat, "\n3\t4\t"), "\n%lf\t%lf\t%lf\t%lf", &x, &diff, &lo, &hi), 4);
    assert_double_equal(lo, 4 - 12.706205, 1e-5);
    assert_double_equal(hi, 4 + 12.706205, 1e-5);
    assert_non_null(strstr(dat, "# B\n1\t-10\t-10\t-10\n2\t-10\t-10\t-10\n3\t-10\t-10\t-10\n"));
    assert_non_null(strstr(html, "<h3>cluster.scope=global</h3>"));
    assert_non_null(strstr(html, "<td>3</td><td>100</td><td>104</td><td>+4</td>"));
    assert_non_null(strstr(html, "B better than A up to speed 2, worse from speed 4: the order flips between speed 2 "
                                 "and 4; not distinguishable (interval includes 0) at speed 3"));
    assert_non_null(strstr(gp, "set xtics (1, 2, 3, 4)"));
    assert_non_null(strstr(gp, "title 'B - A (cluster.scope=local)'"));
    free(dat);
    free(html);
    free(gp);
    su_rmrf(dir);
    free(dir);
    free(db);
}

static void test_errors(void **state)
{
    (void)state;
    char *db = make_db(), cmd[1024];
    snprintf(cmd, sizeof cmd, "compare --db %s --by policy.router", db);
    tu_expect_exit(cmd, 2, "holds no completed run");
    add_run(db, "A", 1, 1, 10, 1, "local");
    tu_expect_exit(cmd, 2, "every run of");
    add_run(db, "B", 1, 1, 12, 1, "local");
    snprintf(cmd, sizeof cmd, "compare --db %s --by policy.routr", db);
    tu_expect_exit(cmd, 2, "--by policy.routr: no run of");
    snprintf(cmd, sizeof cmd, "compare --db %s --by policy.router --baseline C", db);
    tu_expect_exit(cmd, 2, "--baseline C: no run of");
    snprintf(cmd, sizeof cmd, "compare --db %s --by policy.router --metric ttft_ms.p42", db);
    tu_expect_exit(cmd, 2, "--metric ttft_ms.p42");
    snprintf(cmd, sizeof cmd, "compare --db %s --by policy.router --speed 7", db);
    tu_expect_exit(cmd, 2, "--speed 7: no run of");
    /* one load of two missing is refused too, naming it (it was dropped) */
    snprintf(cmd, sizeof cmd, "compare --db %s --by policy.router --speed 1,7", db);
    tu_expect_exit(cmd, 2, "--speed 7: no run of");
    snprintf(cmd, sizeof cmd, "compare --db %s --by policy.router --speed 1", db);
    cli_result ok = tu_kvsim(cmd);
    assert_int_equal(ok.status, 0);
    assert_non_null(strstr(ok.out, "B − A"));
    tu_free(&ok);
    /* what a comparison is made over is no key to group by, and a run's
     * number is no result */
    snprintf(cmd, sizeof cmd, "compare --db %s --by seed", db);
    tu_expect_exit(cmd, 2, "--by seed: the seeds are what each interval is taken over");
    snprintf(cmd, sizeof cmd, "compare --db %s --by trace.speed", db);
    tu_expect_exit(cmd, 2, "--by trace.speed: the loads are compare's rows");
    snprintf(cmd, sizeof cmd, "compare --db %s --by policy.router --metric ttft_ms.mean,run_id", db);
    tu_expect_exit(cmd, 2, "--metric run_id: the run's number");
    snprintf(cmd, sizeof cmd, "compare --db %s --by policy.router --speed fast", db);
    tu_expect_exit(cmd, 2, "--speed: 'fast' is not a positive number");
    tu_expect_exit("compare --db /nonexistent/x.db --by policy.router", 2, "cannot read /nonexistent/x.db");
    tu_expect_exit("compare --by policy.router", 2, "--db FILE and --by KEY are required");
    unlink(db);
    free(db);
}

/* Issue 40 item 1: seeds 1-2 of A and B, then B's seed 2 again (the same
 * config and seed, so the same answer): one sample, not two. Without the
 * repeat, B − A = 1, 3: n 2, mean 2, ±12.706205·√2/√2. The repeat is
 * named, in the JSON and the text. */
static void test_duplicate_counted_once(void **state)
{
    (void)state;
    char *db = make_db(), cmd[512];
    add_run(db, "A", 1, 1, 10, 1, "local");
    add_run(db, "A", 1, 2, 20, 1, "local");
    add_run(db, "B", 1, 1, 11, 1, "local");
    add_run(db, "B", 1, 2, 23, 1, "local");
    add_run(db, "B", 1, 2, 23, 1, "local");
    json_t *j = compare_json(db, "--metric ttft_ms.mean");
    const json_t *r = row_of(j, 0, 0);
    assert_int_equal(json_integer_value(json_object_get(r, "n")), 2);
    assert_double_equal(num(r, "hi"), 2 + 12.706205, 1e-5);
    const json_t *dup = json_array_get(json_object_get(j, "duplicates"), 0);
    assert_int_equal(json_integer_value(json_object_get(dup, "run")), 5);
    assert_int_equal(json_integer_value(json_object_get(dup, "same_as")), 4);
    json_decref(j);
    snprintf(cmd, sizeof cmd, "compare --db %s --by policy.router --metric ttft_ms.mean", db);
    tu_expect_stdout(cmd, "run 5 repeats run 4 (the same config and seed): counted once");
    unlink(db);
    free(db);
}

/* Issue 40 item 1: A ran only in scope local and B only in global: no run
 * can be paired; each context says so instead of an empty section. */
static void test_unpaired_group(void **state)
{
    (void)state;
    char *db = make_db(), cmd[512];
    add_run(db, "A", 1, 1, 10, 1, "local");
    add_run(db, "B", 1, 1, 11, 1, "global");
    json_t *j = compare_json(db, "--metric ttft_ms.mean");
    const json_t *ctx = json_array_get(json_object_get(j, "contexts"), 0);
    assert_string_equal(json_string_value(json_object_get(ctx, "unpaired")),
                        "cannot be paired: B has no run here with the same config as the baseline A");
    ctx = json_array_get(json_object_get(j, "contexts"), 1);
    assert_string_equal(json_string_value(json_object_get(ctx, "unpaired")),
                        "cannot be paired: the baseline A has no run here");
    json_decref(j);
    snprintf(cmd, sizeof cmd, "compare --db %s --by policy.router --metric ttft_ms.mean", db);
    tu_expect_stdout(cmd, "== cluster.scope=global ==\n  cannot be paired: the baseline A has no run here");
    unlink(db);
    free(db);
}

/* Issue 40 item 10: seeds that change neither side give an interval of
 * zero width, which is no evidence: the verdict and the table say so. */
static void test_seeds_do_not_vary(void **state)
{
    (void)state;
    char *db = make_db(), cmd[512];
    for (int s = 1; s <= 3; s++) add_run(db, "A", 1, s, 10, 1, "local"), add_run(db, "B", 1, s, 6.4, 1, "local");
    json_t *j = compare_json(db, "--metric ttft_ms.mean");
    assert_string_equal(json_string_value(json_object_get(row_of(j, 0, 0), "verdict")),
                        "the seeds vary neither side of this metric");
    json_decref(j);
    snprintf(cmd, sizeof cmd, "compare --db %s --by policy.router --metric ttft_ms.mean", db);
    cli_result t = tu_kvsim(cmd);
    assert_int_equal(t.status, 0);
    if (strstr(t.out, "[-3.6, -3.6]") || strstr(t.out, "paired  better") || !strstr(t.out, "none (zero width)"))
        fail_msg("a zero-width interval as evidence:\n%s", t.out);
    tu_free(&t);
    unlink(db);
    free(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paired),         cmocka_unit_test(test_interval_coverage),
        cmocka_unit_test(test_welch),          cmocka_unit_test(test_one_seed),
        cmocka_unit_test(test_flip),           cmocka_unit_test(test_errors),
        cmocka_unit_test(test_report),         cmocka_unit_test(test_duplicate_counted_once),
        cmocka_unit_test(test_unpaired_group), cmocka_unit_test(test_seeds_do_not_vary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
