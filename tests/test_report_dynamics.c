/* tests/test_report_dynamics.c — the load-dynamics figure of `kvsim report`
 * (reports/fig_dynamics.c; issue 42 item 3).
 *
 * A long-prefill overload on 3P1D under early_reject and baseline, each run
 * written with --db: the report draws dynamics.png with one panel per
 * configuration. Its data file is checked against a second computation
 * made here from the samples table row by row (the mean load of each
 * role's active instances per time bin, the bin width the file names);
 * each panel's title carries the run's load_dynamics numbers as the
 * summary holds them; prefill and decode differ by colour and dash; and a
 * database of aggregated runs (no pools) gets no such figure. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/testutil.h"

#define GEN                                                                                                            \
    "--requests 400 --rate 1.2 --seed 5 --input-mean 12000 --input-sigma 0.3 --output-mean 600 "                       \
    "--output-sigma 0.3 --max-input 32768 --session-prob 0"
#define CLUSTER "--config configs/clusters/mooncake-overload.json --set cluster.prefill=3 --set cluster.decode=1"

typedef struct bin_sum {
    double sum[2];
    int n[2];
} bin_sum;

/* Every active sample of run 1 summed into bins of bin_ms, as the report
 * should (a second implementation: C over the raw rows, not SQL's GROUP BY). */
static bin_sum *bins_of(const char *db, double bin_ms, int *nbins)
{
    sqlite3 *h;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(
        sqlite3_prepare_v2(h, "SELECT t_ms, role, state, load FROM samples WHERE run_id = 1", -1, &st, NULL),
        SQLITE_OK);
    int cap = 4096;
    bin_sum *b = calloc((size_t)cap, sizeof *b);
    *nbins = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (strcmp((const char *)sqlite3_column_text(st, 2), "active")) continue;
        int k = (int)floor(sqlite3_column_double(st, 0) / bin_ms),
            role = !strcmp((const char *)sqlite3_column_text(st, 1), "decode");
        assert_true(k >= 0 && k < cap);
        b[k].sum[role] += sqlite3_column_double(st, 3), b[k].n[role]++;
        if (k + 1 > *nbins) *nbins = k + 1;
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return b;
}

/* The first block of dynamics.dat against bins_of. */
static void check_series(const char *db, const char *dat)
{
    char *text = tu_slurp_path(dat);
    double bin_ms = 0;
    const char *p = strstr(text, "(bins of ");
    assert_non_null(p);
    assert_int_equal(sscanf(p, "(bins of %lf ms)", &bin_ms), 1);
    int nbins, rows = 0;
    bin_sum *b = bins_of(db, bin_ms, &nbins);
    char *save = NULL;
    for (char *line = strtok_r(strchr(text, '\n') + 1, "\n", &save); line && line[0] != '#';
         line = strtok_r(NULL, "\n", &save), rows++) {
        double t, v[2];
        assert_int_equal(sscanf(line, "%lf %lf %lf", &t, &v[0], &v[1]), 3);
        int k = (int)floor(t * 1e3 / bin_ms);
        assert_true(k < nbins);
        for (int r = 0; r < 2; r++) {
            double want = b[k].n[r] ? b[k].sum[r] / b[k].n[r] : NAN;
            if (isnan(want) ? !isnan(v[r]) : fabs(v[r] - want) > 1e-5 * fmax(1, fabs(want)))
                fail_msg("dynamics.dat bin %d role %d: %g, the samples give %g", k, r, v[r], want);
        }
    }
    assert_true(rows > 50 && rows <= 400);
    free(b);
    free(text);
}

static void test_dynamics_figure(void **state)
{
    (void)state;
    char *dir = tu_temp_path(), args[4096];
    snprintf(args, sizeof args, "mkdir -p %s", dir);
    assert_int_equal(system(args), 0);
    snprintf(args, sizeof args, "trace gen " GEN " -o %s/t.jsonl", dir);
    cli_result g = tu_kvsim(args);
    assert_int_equal(g.status, 0);
    tu_free(&g);
    snprintf(args, sizeof args,
             "sweep --trace %s/t.jsonl " CLUSTER " --jobs 1 --db %s/d.db --grid policy.admission=early_reject,baseline",
             dir, dir);
    tu_expect_stdout(args, NULL);
    snprintf(args, sizeof args, "report --db %s/d.db -o %s/rep", dir, dir);
    tu_expect_stdout(args, "2 runs");

    char path[1024], db[1024];
    snprintf(db, sizeof db, "%s/d.db", dir);
    snprintf(path, sizeof path, "%s/rep/dynamics.dat", dir);
    check_series(db, path);
    snprintf(path, sizeof path, "%s/rep/dynamics.gp", dir);
    char *gp = tu_slurp_path(path);
    char *std =
        tu_sql_text(db, "SELECT printf('std P %.3f D %.3f', json_extract(summary_json, '$.load_dynamics.prefill_std'),"
                        " json_extract(summary_json, '$.load_dynamics.decode_std')) FROM runs WHERE id = 1");
    if (!strstr(gp, std)) fail_msg("dynamics.gp lacks '%s':\n%s", std, gp);
    assert_non_null(strstr(gp, "multiplot layout 2,1"));
    assert_non_null(strstr(gp, "title 'decode pool'"));
    assert_non_null(strstr(gp, "dashtype 2 linecolor rgb \"#e69f00\""));
    free(std);
    free(gp);

    /* aggregated runs have no pools: no dynamics figure */
    snprintf(args, sizeof args, "run --trace %s/t.jsonl --set cluster.mode=aggregated --db %s/a.db", dir, dir);
    tu_expect_stdout(args, NULL);
    snprintf(args, sizeof args, "report --db %s/a.db -o %s/rep2", dir, dir);
    tu_expect_stdout(args, NULL);
    snprintf(path, sizeof path, "%s/rep2/dynamics.gp", dir);
    assert_true(access(path, F_OK) != 0);
    snprintf(args, sizeof args, "rm -rf %s", dir);
    assert_int_equal(system(args), 0);
    free(dir);
}

int main(void)
{
    if (!tu_have_gnuplot()) {
        const struct CMUnitTest skipped[] = {cmocka_unit_test(tu_skipped)};
        return cmocka_run_group_tests(skipped, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_dynamics_figure)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
