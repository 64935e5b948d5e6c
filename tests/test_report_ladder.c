/* tests/test_report_ladder.c — the hit-rate ladder in a results database
 * (`kvsim hitrate --ladder --db`) and its figure in `kvsim report`.
 *
 * The bundled trace on the default cluster with HBM, DRAM and SSD sized so
 * that the pool rungs split across all three tiers: the ladder table holds
 * one row per rung, the report draws ladder_id1 from a database with no run,
 * its data file holds the numbers the ladder's JSON says (read back here
 * column by column), each split rung's tiers add up to its tokens saved,
 * the plot stacks exactly the tiers that have capacity, only the newest
 * ladder of a setup is drawn, and a trace path with a quote and a command
 * substitution reaches gnuplot as text. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/testutil.h"
#include "tests/sweep_testutil.h"

#define TIERS "--set kvstore.hbm_bytes=2GB --set kvstore.dram_bytes=4GB --set kvstore.ssd_bytes=100GB"

/* A tier's saved tokens in the JSON rung, NAN when the rung has no split
 * or no such tier. */
static double json_tier(const json_t *rung, const char *tier)
{
    const json_t *v = json_object_get(json_object_get(rung, "saved_by_tier"), tier);
    return v ? json_number_value(v) : NAN;
}

static void expect_close(double got, double want, const char *what, int row)
{
    if (isnan(want) ? !isnan(got) : fabs(got - want) > 1e-9 * fmax(1, fabs(want)))
        fail_msg("ladder .dat row %d, %s: %.17g, the JSON says %.17g", row, what, got, want);
}

/* One data row against rung i of the JSON. */
static void check_row(const char *line, const json_t *rung, int i)
{
    static const char *const tiers[] = {"hbm", "dram", "ssd", "remote"};
    int x;
    char label[64];
    double v[9];
    char nums[4][32];
    int got = sscanf(line, "%d\t\"%63[^\"]\"\t%lf\t%lf\t%lf\t%lf\t%lf\t%31s\t%31s\t%31s\t%31s", &x, label, &v[0], &v[1],
                     &v[2], &v[3], &v[4], nums[0], nums[1], nums[2], nums[3]);
    assert_int_equal(got, 11);
    assert_int_equal(x, i);
    char want_label[64];
    snprintf(want_label, sizeof want_label, "%c %s", 'a' + i, json_string_value(json_object_get(rung, "rung")));
    assert_string_equal(label, want_label);
    expect_close(v[0], json_number_value(json_object_get(rung, "hit_rate_tokens")), "hit_rate_tokens", i);
    expect_close(v[1], json_number_value(json_object_get(rung, "hit_rate_blocks")), "hit_rate_blocks", i);
    expect_close(v[2], json_number_value(json_object_get(rung, "prefill_tokens_saved")), "prefill_tokens_saved", i);
    expect_close(v[3], json_number_value(json_object_get(rung, "tokens")), "tokens", i);
    expect_close(v[4], json_number_value(json_object_get(rung, "loss_tokens")), "loss_tokens", i);
    double sum = 0;
    bool split = false;
    for (int k = 0; k < 4; k++) {
        double t = strcmp(nums[k], "NaN") ? strtod(nums[k], NULL) : NAN;
        expect_close(t, json_tier(rung, tiers[k]), tiers[k], i);
        if (!isnan(t)) sum += t, split = true;
    }
    if (split) expect_close(sum, v[2], "the tiers' sum", i); /* the stack's top is the bar */
}

static void test_ladder_figure(void **state)
{
    (void)state;
    char *dir = su_tempdir(), args[2048], path[1024];
    snprintf(args, sizeof args, "hitrate --ladder --json " TIERS " --db %s/l.db", dir);
    json_t *j = tu_kvsim_json(args);
    const json_t *rungs = json_object_get(j, "rungs");
    assert_int_equal(json_array_size(rungs), 5);
    snprintf(path, sizeof path, "%s/l.db", dir);
    char *n = tu_sql_text(path, "SELECT COUNT(*) || ' ' || COUNT(DISTINCT id) || ' ' || COUNT(hbm_tokens) FROM ladder");
    assert_string_equal(n, "5 1 2"); /* 5 rungs, one ladder, 2 split rungs (c, d) */
    free(n);
    snprintf(args, sizeof args, "report --db %s/l.db -o %s/rep", dir, dir);
    tu_expect_stdout(args, "0 runs, 1 figure (");
    snprintf(path, sizeof path, "%s/rep/ladder_id1.dat", dir);
    char *dat = tu_slurp_path(path), *save = NULL;
    int row = 0;
    for (char *line = strtok_r(dat, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        if (line[0] != '#') check_row(line, json_array_get(rungs, (size_t)row), row), row++;
    assert_int_equal(row, 5);
    free(dat);
    snprintf(path, sizeof path, "%s/rep/ladder_id1.gp", dir);
    char *gp = tu_slurp_path(path);
    assert_non_null(strstr(gp, "title 'HBM'"));
    assert_non_null(strstr(gp, "title 'DRAM'"));
    assert_non_null(strstr(gp, "title 'SSD'"));
    assert_null(strstr(gp, "remote"));                         /* no LMCache pool: no such tier */
    assert_non_null(strstr(gp, "using 1:((0+$8+$9+$10)/$6)")); /* SSD stacked on DRAM on HBM */
    assert_non_null(strstr(gp, "prefix hit rate (input tokens from cache / all input tokens)"));
    free(gp);
    snprintf(path, sizeof path, "%s/rep/index.html", dir);
    char *html = tu_slurp_path(path);
    assert_non_null(strstr(html, "id=\"ladder_id1\""));
    assert_non_null(strstr(html, "Hit-rate ladder #1: token hit rate per rung"));
    free(html);
    snprintf(path, sizeof path, "%s/rep/ladder_id1.svg", dir);
    free(tu_slurp_path(path));
    json_decref(j);
    su_rmrf(dir);
    free(dir);
}

/* Recorded twice with one setup and once with another: the newest of the
 * first and the other are drawn. */
static void test_newest_per_setup(void **state)
{
    (void)state;
    char *dir = su_tempdir(), args[2048], path[1024];
    for (int i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "hitrate --ladder --no-run %s --db %s/l.db", i == 2 ? "--full-blocks" : "", dir);
        tu_expect_stdout(args, "a ceiling");
    }
    snprintf(args, sizeof args, "report --db %s/l.db -o %s/rep", dir, dir);
    tu_expect_stdout(args, "2 figures");
    static const char *const files[] = {"ladder_id1.dat", "ladder_id2.dat", "ladder_id3.dat"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/rep/%s", dir, files[i]);
        assert_int_equal(access(path, F_OK) == 0, i > 0);
    }
    su_rmrf(dir);
    free(dir);
}

/* A trace path gnuplot must not run (a backquote is its command
 * substitution): the title stays a quoted literal, nothing is run. */
static void test_trace_path_quoted(void **state)
{
    (void)state;
    char *dir = su_tempdir(), args[4096], path[1024];
    snprintf(args, sizeof args, "cp traces/default.jsonl '%s/it'\\''s `touch pwned`.jsonl'", dir);
    assert_int_equal(system(args), 0);
    snprintf(args, sizeof args, "hitrate --ladder --no-run --trace '%s/it'\\''s `touch pwned`.jsonl' --db %s/l.db", dir,
             dir);
    tu_expect_stdout(args, "a ceiling");
    snprintf(args, sizeof args, "report --db %s/l.db -o %s/rep", dir, dir);
    tu_expect_stdout(args, "1 figure (");
    snprintf(path, sizeof path, "%s/rep/pwned", dir);
    assert_int_not_equal(access(path, F_OK), 0);
    assert_int_not_equal(access("pwned", F_OK), 0);
    snprintf(path, sizeof path, "%s/rep/ladder_id1.gp", dir);
    char *gp = tu_slurp_path(path);
    assert_non_null(strstr(gp, "it''s `touch pwned`.jsonl'"));
    free(gp);
    su_rmrf(dir);
    free(dir);
}

int main(void)
{
    if (!tu_have_gnuplot()) {
        const struct CMUnitTest skipped[] = {cmocka_unit_test(tu_skipped)};
        return cmocka_run_group_tests(skipped, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ladder_figure),
        cmocka_unit_test(test_newest_per_setup),
        cmocka_unit_test(test_trace_path_quoted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
