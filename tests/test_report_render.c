/* tests/test_report_render.c — what a reviewer checks in `kvsim report`'s
 * figures, read mechanically from the .gp and .dat files it writes (issue
 * 44): a log axis where a metric spans more than 100x, legends outside the
 * frame past six entries, groups told apart by dash as well as colour,
 * titles that promise only what is drawn, units on the compare figure and
 * its baseline matching `kvsim compare`, long load series binned into an
 * envelope, and the SLO line not stretching ttft_qps's axis.
 *
 * Databases, on 80-request traces (tests/sweep_testutil.h):
 *   three: admission none / slo_reject x router random / least_loaded x
 *          speed 1 / 2 — three grouping keys: colour, facet and dash;
 *   seven: speed 1 .. 4 in seven steps — seven legend entries in a panel;
 *   long:  one run of 400 requests over 800 s, sampled every second.
 * Expected values are computed here from the databases (SQL), never read
 * back from the report's own numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "tests/testutil.h"
#include "tests/sweep_testutil.h"

static char *dir, three_db[512], seven_db[512], long_db[512], three_rep[512];

static void report(const char *db, const char *out, const char *extra)
{
    char args[2048];
    snprintf(args, sizeof args, "report --db %s -o %s %s", db, out, extra);
    tu_expect_stdout(args, "kvsim report: ");
}

static int setup(void **state)
{
    char trace[600], long_trace[600], cmd[2048];
    dir = su_tempdir();
    snprintf(trace, sizeof trace, "%s/t.jsonl", dir);
    snprintf(long_trace, sizeof long_trace, "%s/long.jsonl", dir);
    su_write_trace(trace, 80, 150);
    su_write_trace(long_trace, 400, 2000);
    snprintf(three_db, sizeof three_db, "%s/three.db", dir);
    snprintf(seven_db, sizeof seven_db, "%s/seven.db", dir);
    snprintf(long_db, sizeof long_db, "%s/long.db", dir);
    snprintf(three_rep, sizeof three_rep, "%s/three", dir);
    snprintf(cmd, sizeof cmd,
             "sweep --trace %s --db %s --jobs 2 --set slo.ttft_ms=800 --grid "
             "'policy.admission=none,slo_reject;policy.router=random,least_loaded;trace.speed=1,2'",
             trace, three_db);
    tu_expect_stdout(cmd, NULL);
    snprintf(cmd, sizeof cmd, "sweep --trace %s --db %s --jobs 2 --grid 'trace.speed=1,1.5,2,2.5,3,3.5,4'", trace,
             seven_db);
    tu_expect_stdout(cmd, NULL);
    snprintf(cmd, sizeof cmd, "run --trace %s --db %s", long_trace, long_db);
    tu_expect_stdout(cmd, NULL);
    report(three_db, three_rep, "");
    return 0;
}

static int teardown(void **state)
{
    su_rmrf(dir);
    free(dir);
    return 0;
}

/* The line of text that contains needle (a copy), or NULL. */
static char *line_with(const char *text, const char *needle)
{
    const char *hit = strstr(text, needle);
    if (!hit) return NULL;
    const char *a = hit, *b = hit;
    while (a > text && a[-1] != '\n') a--;
    while (*b && *b != '\n') b++;
    return strndup(a, (size_t)(b - a));
}

/* ---- groups: colour and dash ------------------------------------------------------ */

/* Colour by admission, a panel per router, and speed (the third key) as
 * the dash: the two speeds of one admission share a colour in a panel and
 * must differ in dash type. */
static void test_dash_tells_groups_apart(void **state)
{
    char *gp = su_read_in(three_rep, "ttft_cdf.gp");
    char *slow = line_with(gp, "title 'admission=none speed=1"), *fast = line_with(gp, "title 'admission=none speed=2");
    assert_non_null(slow);
    assert_non_null(fast);
    assert_non_null(strstr(slow, "linecolor rgb \"#0072B2\" dashtype 1 title"));
    assert_non_null(strstr(fast, "linecolor rgb \"#0072B2\" dashtype 2 title"));
    free(slow), free(fast), free(gp);
}

/* ---- legends -------------------------------------------------------------------------- */

static void test_legend_placement(void **state)
{
    /* Two entries a panel: inside, at the bottom right (a CDF's empty corner). */
    char *gp = su_read_in(three_rep, "ttft_cdf.gp");
    assert_non_null(strstr(gp, "set key bottom right"));
    assert_null(strstr(gp, "set key outside"));
    free(gp);
    /* Seven entries: below the plot, outside the frame, one column. */
    char out[600];
    snprintf(out, sizeof out, "%s/seven", dir);
    report(seven_db, out, "");
    gp = su_read_in(out, "ttft_cdf.gp");
    assert_int_equal(su_count(gp, "title 'speed="), 7);
    assert_non_null(strstr(gp, "set key outside below left Left reverse font \",9\" maxcols 1"));
    assert_null(strstr(gp, "opaque"));
    free(gp);
    /* Bars name their colours in a key of their own below the panels. */
    gp = su_read_in(out, "latency.gp");
    assert_int_equal(su_count(gp, "NaN with boxes fillstyle solid 0.85 border -1 linecolor rgb"), 7);
    free(gp);
}

/* ---- axes ------------------------------------------------------------------------------ */

/* A bar metric spanning more than 100x gets a log axis from the power of
 * ten below its smallest mean; one spanning less keeps a linear axis from
 * 0 with at most five tics. */
static void test_log_axis_past_100x(void **state)
{
    char db[600], out[600], cmd[1400];
    snprintf(db, sizeof db, "%s/span.db", dir);
    snprintf(out, sizeof out, "%s/span", dir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", seven_db, db);
    assert_int_equal(system(cmd), 0);
    /* Run 1's mean TTFT 1000x the others' largest. */
    double top = su_num(db, "SELECT MAX(json_extract(summary_json, '$.ttft_ms.mean')) FROM runs");
    snprintf(cmd, sizeof cmd,
             "UPDATE runs SET summary_json = json_set(summary_json, '$.ttft_ms.mean', %.17g) WHERE id=1", top * 1000);
    su_exec(db, cmd);
    report(db, out, "");
    char *gp = su_read_in(out, "latency.gp");
    /* The left panel (TTFT) is logarithmic, the right (TBT) linear. */
    assert_int_equal(su_count(gp, "set logscale x 10\n"), 1);
    assert_non_null(strstr(gp, "set xlabel 'mean TTFT (ms, log scale)'"));
    double least = su_num(db, "SELECT MIN(json_extract(summary_json, '$.ttft_ms.mean')) FROM runs");
    char want[96];
    snprintf(want, sizeof want, "set xrange [%g:", pow(10, floor(log10(least))));
    if (!strstr(gp, want)) fail_msg("latency.gp lacks '%s':\n%.2000s", want, gp);
    /* The TBT panel: within 100x here, so linear from 0, with at most five
     * tics (the step times five reaches the range's end). */
    double tbt_span = su_num(db, "SELECT MAX(json_extract(summary_json, '$.tbt_ms.mean')) / "
                                 "MIN(json_extract(summary_json, '$.tbt_ms.mean')) FROM runs");
    assert_true(tbt_span <= 100);
    const char *t = strstr(gp, "unset logscale x\nset xtics ");
    assert_non_null(t);
    const char *x = strstr(t, "set xrange [0:");
    assert_non_null(x);
    double step = atof(t + strlen("unset logscale x\nset xtics ")), end = atof(x + strlen("set xrange [0:"));
    assert_true(step > 0 && end / step <= 5 + 1e-9);
    free(gp);
}

/* ---- titles --------------------------------------------------------------------------- */

/* No figure promises a band it does not draw: bars have error bars. */
static void test_titles_promise_what_is_drawn(void **state)
{
    char db[600], out[600], cmd[1400];
    snprintf(db, sizeof db, "%s/seeds.db", dir);
    snprintf(out, sizeof out, "%s/seeds", dir);
    snprintf(cmd, sizeof cmd,
             "sweep --trace %s/t.jsonl --db %s --jobs 2 --set trace.sample=0.8 --grid 'policy.router=random,"
             "least_loaded;seed=1,2,3'",
             dir, db);
    tu_expect_stdout(cmd, NULL);
    report(db, out, "");
    char *bars = su_read_in(out, "latency.gp"), *cdf = su_read_in(out, "ttft_cdf.gp");
    assert_non_null(strstr(bars, "figure_title = 'Mean TTFT and TBT (mean of 3 seeds; error bars: 95% CI)'"));
    assert_null(strstr(bars, "band"));
    assert_non_null(strstr(cdf, "(mean of 3 seeds; band: 95% CI)"));
    assert_int_equal(su_count(cdf, "with filledcurves closed"), 2); /* the band is drawn */
    free(bars), free(cdf);
}

/* ---- compare: baseline and units ------------------------------------------------------- */

static void test_compare_baseline_and_units(void **state)
{
    char out[600], args[1400];
    snprintf(out, sizeof out, "%s/base", dir);
    report(three_db, out, "--baseline slo_reject");
    char *gp = su_read_in(out, "compare.gp");
    assert_non_null(strstr(gp, "Difference from policy.admission=slo_reject"));
    assert_non_null(strstr(gp, "set ylabel 'value - baseline (ms)'"));
    assert_non_null(strstr(gp, "set ylabel 'value - baseline (fraction)'")); /* slo_attainment, hit rate */
    free(gp);
    /* The same baseline as kvsim compare's with the same option. */
    snprintf(args, sizeof args, "compare --db %s --by policy.admission --baseline slo_reject --json", three_db);
    json_t *cmp = tu_kvsim_json(args);
    assert_string_equal(json_string_value(json_object_get(cmp, "baseline")), "slo_reject");
    json_decref(cmp);
    /* Without the option both take the first run's value. */
    gp = su_read_in(three_rep, "compare.gp");
    char *first = tu_sql_text(three_db, "SELECT json_extract(config_json, '$.policy.admission') FROM runs WHERE id=1");
    char want[128];
    snprintf(want, sizeof want, "Difference from policy.admission=%s", first);
    assert_non_null(strstr(gp, want));
    free(first), free(gp);
    snprintf(args, sizeof args, "report --db %s -o %s --baseline bogus", three_db, out);
    tu_expect_exit(args, 2, "--baseline bogus: no run of");
    snprintf(args, sizeof args, "report --db %s -o %s --baseline bogus", long_db, out);
    tu_expect_exit(args, 2, "--baseline bogus: the runs have no key to compare by");
}

/* ---- long load series ------------------------------------------------------------------ */

/* 400 requests over 800 s, sampled every second: drawn over at most 300 bins, the envelope keeping the
 * highest load any prefill instance had. */
static void test_long_load_binned(void **state)
{
    char out[600];
    snprintf(out, sizeof out, "%s/long", dir);
    report(long_db, out, "");
    assert_true(su_num(long_db, "SELECT COUNT(DISTINCT t_ms) FROM samples") > 600);
    char *dat = su_read_in(out, "load_run1.dat");
    const char *block = strstr(dat, "# prefill load over its instances and bins of ");
    assert_non_null(block);
    const char *p = strchr(block, '\n') + 1;
    int rows = 0;
    double most = 0;
    while (*p && *p != '\n' && *p != '#') {
        double t, mean, lo, hi;
        assert_int_equal(sscanf(p, "%lf\t%lf\t%lf\t%lf", &t, &mean, &lo, &hi), 4);
        assert_true(lo <= mean + 1e-9 && mean <= hi + 1e-9);
        most = hi > most ? hi : most;
        rows++;
        p = strchr(p, '\n') + 1;
    }
    assert_true(rows > 0 && rows <= 300);
    assert_double_equal(most, su_num(long_db, "SELECT MAX(load) FROM samples WHERE role='prefill'"), 1e-5);
    free(dat);
}

/* ---- ttft_qps: a far SLO does not stretch the axis ---------------------------------------- */

static void test_qps_axis_not_stretched(void **state)
{
    char out[600];
    snprintf(out, sizeof out, "%s/seven", dir);
    report(seven_db, out, "");
    char path[700];
    snprintf(path, sizeof path, "%s/ttft_qps.gp", out);
    char *gp = su_slurp_path(path);
    assert_non_null(gp); /* a sweep over trace.speed: the figure is drawn */
    double slo = su_num(seven_db, "SELECT json_extract(config_json, '$.slo.ttft_ms') FROM runs WHERE id=1");
    double top = su_num(seven_db, "SELECT MAX(MAX(json_extract(summary_json, '$.ttft_ms.mean')), "
                                  "MAX(json_extract(summary_json, '$.ttft_ms.p90'))) FROM runs");
    const char *y = strstr(gp, "set yrange [");
    assert_non_null(y);
    double lo, hi;
    assert_int_equal(sscanf(y, "set yrange [%lf:%lf]", &lo, &hi), 2);
    if (slo > 3 * top) {
        assert_true(hi < slo);
        assert_non_null(strstr(gp, "above the range shown"));
    } else assert_true(hi >= slo);
    free(gp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dash_tells_groups_apart),    cmocka_unit_test(test_legend_placement),
        cmocka_unit_test(test_log_axis_past_100x),         cmocka_unit_test(test_titles_promise_what_is_drawn),
        cmocka_unit_test(test_compare_baseline_and_units), cmocka_unit_test(test_long_load_binned),
        cmocka_unit_test(test_qps_axis_not_stretched),
    };
    if (!tu_have_gnuplot()) {
        const struct CMUnitTest none[] = {cmocka_unit_test(tu_skipped)};
        return cmocka_run_group_tests(none, NULL, NULL);
    }
    return cmocka_run_group_tests(tests, setup, teardown);
}
