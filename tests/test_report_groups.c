/* tests/test_report_groups.c — how `kvsim report` groups, styles and
 * aggregates runs (reports/groups.c), read back from the .dat and .gp files
 * it writes.
 *
 * Databases, all on an 80-request trace:
 *   seeds:  admission none / slo_reject × seed 1, 2, 3, replaying a 0.8
 *           sample (so seeds differ), TTFT SLO 800 ms, 6 prefill instances:
 *           two groups of three seeds;
 *   facets: router random / least_loaded × admission none / slo_reject /
 *           baseline, one seed: colour and panel keys;
 *   same:   kvstore.ssd_bytes 1 TB / 2 TB, where DRAM never fills so the
 *           SSD is never used: identical results.
 * Expected values are computed here from the database: means, Student t
 * intervals (t(0.975, 2) = 4.302652729911275 from the t table), rejected
 * shares. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"
#include "tests/sweep_testutil.h"

static char *dir, seeds_db[512], facets_db[512], same_db[512], seeds_rep[512];

static void sweep(const char *trace, const char *db, const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "sweep --trace %s --db %s --jobs 2 %s", trace, db, args);
    tu_expect_stdout(cmd, NULL);
}

static void report(const char *db, const char *out, const char *extra)
{
    char args[2048];
    snprintf(args, sizeof args, "report --db %s -o %s %s", db, out, extra);
    tu_expect_stdout(args, "kvsim report: ");
}

static int setup(void **state)
{
    char trace[600];
    dir = su_tempdir();
    snprintf(trace, sizeof trace, "%s/t.jsonl", dir);
    su_write_trace(trace, 80, 150);
    snprintf(seeds_db, sizeof seeds_db, "%s/seeds.db", dir);
    snprintf(facets_db, sizeof facets_db, "%s/facets.db", dir);
    snprintf(same_db, sizeof same_db, "%s/same.db", dir);
    snprintf(seeds_rep, sizeof seeds_rep, "%s/seeds", dir);
    sweep(trace, seeds_db,
          "--set trace.sample=0.8 --set slo.ttft_ms=800 --set cluster.prefill=6 "
          "--grid 'policy.admission=none,slo_reject;seed=1,2,3'");
    sweep(trace, facets_db,
          "--set slo.ttft_ms=800 --grid 'policy.router=random,least_loaded;policy.admission=none,slo_reject,baseline'");
    sweep(trace, same_db, "--grid 'kvstore.ssd_bytes=1TB,2TB'");
    report(seeds_db, seeds_rep, "");
    return 0;
}

static int teardown(void **state)
{
    su_rmrf(dir);
    free(dir);
    return 0;
}

/* The values of a summary path for runs lo..hi. */
static int summary_values(const char *db, const char *path, int lo, int hi, double *x)
{
    for (int id = lo; id <= hi; id++) {
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT json_extract(summary_json, '$.%s') FROM runs WHERE id=%d", path, id);
        x[id - lo] = su_num(db, sql);
    }
    return hi - lo + 1;
}

/* ---- seed groups ---------------------------------------------------------------------- */

static void test_seed_groups_in_cdf(void **state)
{
    char *dat = su_read_in(seeds_rep, "ttft_cdf.dat"), *gp = su_read_in(seeds_rep, "ttft_cdf.gp");
    assert_non_null(strstr(dat, "# group: admission=none (runs #1 #2 #3)\n"));
    assert_non_null(strstr(dat, "# group: admission=slo_reject (runs #4 #5 #6)\n"));
    /* Seeds differ (the sample), or there would be nothing to aggregate. */
    assert_true(su_num(seeds_db, "SELECT COUNT(DISTINCT json_extract(summary_json, '$.requests')) FROM runs") > 1);
    /* Two groups: a band and a mean line each, in Okabe-Ito's first two colours. */
    assert_int_equal(su_count(gp, "with filledcurves closed"), 2);
    assert_non_null(strstr(gp, "figure_title = 'TTFT distribution (mean of 3 seeds; band: 95% CI)'"));
    assert_non_null(strstr(gp, "linecolor rgb \"#0072B2\" dashtype 1 title 'admission=none"));
    /* The legend: the varying key only, and the share never served, over
     * all requests of the group's runs. */
    double never = su_num(seeds_db, "SELECT 100.0 * SUM(ttft_ms IS NULL) / COUNT(*) FROM requests WHERE run_id >= 4");
    char want[128];
    snprintf(want, sizeof want, "title 'admission=slo_reject: %.1f%% rejected'", never);
    assert_true(never > 0);
    if (!strstr(gp, want)) fail_msg("ttft_cdf.gp lacks '%s':\n%s", want, gp);
    assert_null(strstr(gp, "seed=")); /* seed is aggregated, never a label */
    free(dat);
    free(gp);
}

static void test_seed_stats_in_bars_and_table(void **state)
{
    double x[3];
    summary_values(seeds_db, "slo_attainment", 1, 3, x);
    double mean = (x[0] + x[1] + x[2]) / 3, ss = 0;
    for (int i = 0; i < 3; i++) ss += (x[i] - mean) * (x[i] - mean);
    double half = 4.302652729911275 * sqrt(ss / 2) / sqrt(3);
    char *dat = su_read_in(seeds_rep, "slo.dat");
    const char *row = strstr(dat, "\n0\tadmission=none\t");
    assert_non_null(row);
    unsigned color;
    double m, lo, hi;
    assert_int_equal(sscanf(row + strlen("\n0\tadmission=none\t"), "%u\t%lf\t%lf\t%lf", &color, &m, &lo, &hi), 4);
    assert_int_equal(color, 0x0072B2u);
    assert_double_equal(m, mean, 1e-5);
    assert_double_equal(lo, mean - half, 1e-5);
    assert_double_equal(hi, mean + half, 1e-5);
    free(dat);
    /* The attainment axis is [0:1] exactly, never padded past 1. */
    char *gp = su_read_in(seeds_rep, "slo.gp");
    assert_non_null(strstr(gp, "set xlabel 'SLO attainment (effective / all requests)'\nset xrange [0:1]\n"));
    free(gp);
    /* The page's groups table: the same mean ± half-width, as printed. */
    char *html = su_read_in(seeds_rep, "index.html");
    char cell[96];
    snprintf(cell, sizeof cell, "<td>%.3f ± %.3f</td>", mean, half);
    if (!strstr(html, cell)) fail_msg("index.html lacks %s", cell);
    assert_non_null(strstr(html, "<td class=\"text\">#1 #2 #3</td>"));
    /* The runs table: the seed, a differing key, is one column, not also the last. */
    const char *t = strstr(html, "<table id=\"comparison\">"), *end = t ? strstr(t, "</table>") : NULL;
    assert_non_null(end);
    int seed_heads = 0;
    for (const char *p = t; (p = strstr(p, "<th>seed</th>")) != NULL && p < end; p++) seed_heads++;
    assert_int_equal(seed_heads, 1);
    free(html);
}

/* ---- load timelines: a band over many instances, ending with the data ---------- */

static void test_load_band(void **state)
{
    char *dat = su_read_in(seeds_rep, "load_run1.dat"), *gp = su_read_in(seeds_rep, "load_run1.gp");
    /* 6 prefill instances: one mean line and a min-max band; the decode
     * instances (4) keep a line each. */
    assert_non_null(strstr(dat, "# prefill load over its instances: t_ms\tmean\tmin\tmax\n"));
    assert_null(strstr(dat, "# prefill load of instance"));
    assert_non_null(strstr(dat, "# decode load of instance"));
    assert_non_null(strstr(gp, "title 'min-max over 6 instances'"));
    char want[64];
    snprintf(want, sizeof want, "set xrange [0:%g]",
             su_num(seeds_db, "SELECT CAST(MAX(t_ms) AS INTEGER) FROM samples WHERE run_id=1") / 1e3);
    assert_int_equal(su_count(gp, want), 2);
    /* Timelines only for a group's first run. */
    char *html = su_read_in(seeds_rep, "index.html");
    assert_null(strstr(html, "load_run2.svg"));
    free(html);
    free(dat);
    free(gp);
}

/* ---- colour and facet keys ----------------------------------------------------------------- */

static void test_facets(void **state)
{
    char out[600];
    snprintf(out, sizeof out, "%s/facets", dir);
    report(facets_db, out, "");
    /* Admission has 3 values, router 2: colour by admission, a panel per router. */
    char *gp = su_read_in(out, "ttft_cdf.gp");
    assert_non_null(strstr(gp, "set multiplot layout 1,2 title figure_title\n"));
    assert_non_null(strstr(gp, "set title 'router=random'\n"));
    assert_non_null(strstr(gp, "set title 'router=least_loaded'\n"));
    assert_non_null(strstr(gp, "linecolor rgb \"#009E73\" dashtype 1 title 'admission=baseline")); /* 3rd colour */
    free(gp);
    /* Swapped by the options: 3 panels of 2 colours. */
    report(facets_db, out, "--color-by policy.router --facet-by policy.admission");
    gp = su_read_in(out, "ttft_cdf.gp");
    assert_non_null(strstr(gp, "set multiplot layout 1,3 title figure_title\n"));
    assert_non_null(strstr(gp, "set title 'admission=slo_reject'\n"));
    assert_non_null(strstr(gp, "linecolor rgb \"#D55E00\" dashtype 1 title 'router=least_loaded"));
    free(gp);
    /* Bars: rows by facet then colour. */
    char *bars = su_read_in(out, "latency.dat");
    const char *a = strstr(bars, "admission=none router=random"), *b = strstr(bars, "admission=none router=least");
    const char *c = strstr(bars, "admission=slo_reject router=random");
    assert_true(a && b && c && a < b && b < c);
    free(bars);
    char args[2400];
    snprintf(args, sizeof args, "report --db %s -o %s --color-by policy.bogus", facets_db, out);
    tu_expect_exit(args, 2,
                   "--color-by policy.bogus: not a config key that differs between the selected runs (those are: "
                   "[\"policy.admission\",\"policy.router\"])");
    snprintf(args, sizeof args, "report --db %s -o %s --color-by policy.router --facet-by policy.router", facets_db,
             out);
    tu_expect_exit(args, 2, "--color-by and --facet-by name the same key (policy.router)");
}

/* ---- identical results -------------------------------------------------------------------- */

static void test_identical_results(void **state)
{
    char out[600];
    snprintf(out, sizeof out, "%s/same", dir);
    report(same_db, out, "");
    /* The SSD size does not change what runs; the later group says so. */
    assert_double_equal(su_num(same_db, "SELECT COUNT(DISTINCT json_remove(summary_json, '$.wall_seconds', "
                                        "'$.run_id')) FROM runs"),
                        1, 0);
    char *gp = su_read_in(out, "ttft_cdf.gp");
    assert_non_null(strstr(gp, "title 'ssd_bytes=2TB (identical to ssd_bytes=1TB)'"));
    assert_non_null(strstr(gp, "dashtype 2 title 'ssd_bytes=2TB")); /* drawn dashed, on top */
    assert_non_null(strstr(gp, "dashtype 1 title 'ssd_bytes=1TB"));
    free(gp);
    char *bars = su_read_in(out, "slo.dat");
    assert_non_null(strstr(bars, "\tssd_bytes=2TB (= ssd_bytes=1TB)\t"));
    free(bars);
    /* One run whose bars all end past 80% of their axis (attainment 1):
     * every after-the-bar label is off the axis, which must still render
     * (gnuplot 5.4.4 crashed when those labels were NaN). */
    report(same_db, out, "--runs 1");
}

/* ---- reproducing a run ---------------------------------------------------------------------- */

static void test_reproduce(void **state)
{
    char *html = su_read_in(seeds_rep, "index.html");
    char want[1024], db[600], args[2400];
    snprintf(want, sizeof want, "<li id=\"reproduce-5\">#5: <code>kvsim run --config <a href=\"configs/run5.json\">%s",
             seeds_rep);
    if (!strstr(html, want)) fail_msg("index.html lacks %s", want);
    assert_non_null(strstr(html, "<a href=\"#reproduce-5\">#5</a>"));
    free(html);
    /* The command gives the same config hash and the same results. */
    snprintf(db, sizeof db, "%s/again.db", dir);
    snprintf(args, sizeof args, "run --config %s/configs/run5.json --db %s", seeds_rep, db);
    tu_expect_stdout(args, NULL);
    char *hash = tu_sql_text(db, "SELECT config_hash FROM runs");
    char *orig = tu_sql_text(seeds_db, "SELECT config_hash FROM runs WHERE id=5");
    assert_string_equal(hash, orig);
    double x[1], y[1];
    summary_values(seeds_db, "ttft_ms.mean", 5, 5, x);
    summary_values(db, "ttft_ms.mean", 1, 1, y);
    assert_double_equal(y[0], x[0], 0);
    free(hash);
    free(orig);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_groups_in_cdf), cmocka_unit_test(test_seed_stats_in_bars_and_table),
        cmocka_unit_test(test_load_band),          cmocka_unit_test(test_facets),
        cmocka_unit_test(test_identical_results),  cmocka_unit_test(test_reproduce),
    };
    if (!tu_have_gnuplot()) {
        const struct CMUnitTest none[] = {cmocka_unit_test(tu_skipped)};
        return cmocka_run_group_tests(none, NULL, NULL);
    }
    return cmocka_run_group_tests(tests, setup, teardown);
}
