/* tests/test_report_layout.c — a report of many groups whose every text
 * stays inside its figure, with one colour per group across figures.
 *
 * The database: 4 routers × 2 admission policies × 2 loads × 2 seeds on an
 * 80-request trace (32 runs; 16 groups of two seeds, coloured by router,
 * a panel per admission policy). Checked on what gnuplot drew (the SVG of
 * every figure: each <text> at its translate(x, y), its extent estimated
 * from its characters at 0.6 em each, rotated labels along y) and on the
 * scripts: every text inside the canvas (the y label of the distributions
 * was cut, their log axis labelled only "100"); the TTFT-against-load
 * curves one per configuration, seeds averaged (not one per seed), with
 * legend entries for the solid mean and the dotted p90 lines and a label
 * on the SLO line, and no tic label in exponent form ("1e+06"); a
 * router's colour the same in the distributions and the load curves; each
 * load timeline titled by its run's config; table headers that break only
 * after a '.' or '_'. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>

#include "tests/testutil.h"
#include "tests/sweep_testutil.h"

static char *dir, rep[600];

static int setup(void **state)
{
    char trace[600], db[600], args[2048];
    dir = su_tempdir();
    snprintf(trace, sizeof trace, "%s/t.jsonl", dir);
    snprintf(db, sizeof db, "%s/r.db", dir);
    snprintf(rep, sizeof rep, "%s/rep", dir);
    su_write_trace(trace, 80, 150);
    snprintf(args, sizeof args,
             "sweep --trace %s --db %s --jobs 2 --set slo.ttft_ms=800 --set trace.sample=0.8 --grid "
             "'policy.router=random,least_loaded,cache_aware_local,kvcentric;policy.admission=none,slo_reject;"
             "trace.speed=1,4;seed=1,2'",
             trace, db);
    tu_expect_stdout(args, NULL);
    snprintf(args, sizeof args, "report --db %s -o %s --title 'many groups'", db, rep);
    tu_expect_stdout(args, "kvsim report: ");
    return 0;
}

static int teardown(void **state)
{
    su_rmrf(dir);
    free(dir);
    return 0;
}

static char *read_rep(const char *name)
{
    char path[800];
    snprintf(path, sizeof path, "%s/%s", rep, name);
    char *t = su_slurp_path(path);
    if (!t) fail_msg("%s: not written", path);
    return t;
}

/* Characters of a <text> element's content, tags left out, an entity one. */
static int text_chars(const char *p, const char *end)
{
    int n = 0;
    for (; p < end; p++)
        if (*p == '<') p = strchr(p, '>');
        else if (*p == '&') p = strchr(p, ';'), n++;
        else n++;
    return n;
}

/* Every <text> of an SVG inside its viewBox (1 px of slack); returns how
 * many texts were checked. */
static int texts_inside(const char *name)
{
    char *svg = read_rep(name);
    double W, H;
    const char *vb = strstr(svg, "viewBox=\"0 0 ");
    assert_non_null(vb);
    assert_int_equal(sscanf(vb, "viewBox=\"0 0 %lf %lf", &W, &H), 2);
    int checked = 0;
    for (const char *g = svg; (g = strstr(g, "<g transform=\"translate(")) != NULL; g++) {
        double x, y, size = 12;
        if (sscanf(g, "<g transform=\"translate(%lf,%lf)", &x, &y) != 2) continue;
        const char *close = strchr(g, '>'), *t = strstr(g, "<text>"), *te = t ? strstr(t, "</text>") : NULL;
        if (!t || !te || strstr(g + 1, "<g ") < t) continue; /* a group without its own text */
        const char *fs = strstr(g, "font-size=\"");
        if (fs && fs < close) sscanf(fs, "font-size=\"%lf", &size);
        bool rotated = strstr(g, "rotate(") && strstr(g, "rotate(") < close;
        const char *anchor = strstr(g, "text-anchor=\"");
        char a = anchor && anchor < close ? anchor[13] : 's'; /* start, middle, end */
        double w = 0.6 * size * text_chars(t + 6, te), lo = a == 's' ? 0 : a == 'm' ? w / 2 : w, hi = w - lo;
        double x0 = rotated ? x - size : x - lo, x1 = rotated ? x + 0.3 * size : x + hi;
        double y0 = rotated ? y - hi : y - size, y1 = rotated ? y + lo : y + 0.3 * size;
        if (x0 < -1 || x1 > W + 1 || y0 < -1 || y1 > H + 1)
            fail_msg("%s: text '%.*s' at (%g, %g) spans [%g, %g] x [%g, %g], outside %g x %g", name, (int)(te - t - 6),
                     t + 6, x, y, x0, x1, y0, y1, W, H);
        checked++;
    }
    free(svg);
    return checked;
}

static void test_texts_inside_every_figure(void **state)
{
    DIR *d = opendir(rep);
    assert_non_null(d);
    int figures = 0, texts = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".svg")) continue;
        texts += texts_inside(e->d_name);
        figures++;
    }
    closedir(d);
    printf("%d figures, %d texts inside their frames\n", figures, texts);
    assert_true(figures >= 10 && texts > 200);
}

/* Blocks of a .dat file: data runs separated by two blank lines. */
static int blocks(const char *dat)
{
    int n = 0;
    for (const char *p = dat; (p = strstr(p, "\n\n\n")) != NULL; p += 3) n++;
    return n;
}

/* The colour of the plot clause titled `title` in a script, or "". */
static void color_of(const char *gp, const char *title, char *out)
{
    char want[256];
    snprintf(want, sizeof want, "title '%s'", title);
    const char *t = strstr(gp, want), *c = NULL;
    for (const char *p = gp; t && (p = strstr(p, "linecolor rgb \"#")) != NULL && p < t; p++) c = p;
    out[0] = 0;
    if (c) snprintf(out, 8, "%s", c + 15);
}

static void test_load_curves_and_colours(void **state)
{
    char *dat = read_rep("ttft_qps.dat"), *qps = read_rep("ttft_qps.gp"), *cdf = read_rep("ttft_cdf.gp");
    assert_int_equal(blocks(dat), 8); /* router x admission, the seeds averaged */
    assert_null(strstr(qps, "seed="));
    assert_non_null(strstr(qps, "title 'mean TTFT (solid)'"));
    assert_non_null(strstr(qps, "title 'p90 TTFT (dotted)'"));
    assert_non_null(strstr(qps, "set label 'TTFT SLO 800 ms'"));
    assert_null(strstr(qps, "e+0"));
    assert_non_null(strstr(cdf, "set xtics (\""));
    /* The key: at the bottom right of the frame (a CDF's empty corner), or
     * below the plot past six entries a panel. */
    assert_true(strstr(cdf, "set key bottom right Left reverse font \",9\" opaque box") ||
                strstr(cdf, "set key outside below left Left reverse font \",9\" maxcols 1"));
    static const char *const routers[] = {"random", "least_loaded", "cache_aware_local", "kvcentric"};
    for (int i = 0; i < 4; i++) {
        char t1[128], t2[128], c1[8], c2[8];
        snprintf(t1, sizeof t1, "admission=none router=%s", routers[i]);
        snprintf(t2, sizeof t2, "router=%s speed=1", routers[i]);
        color_of(qps, t1, c1);
        color_of(cdf, t2, c2);
        printf("%s: %s in ttft_qps, %s in ttft_cdf\n", routers[i], c1, c2);
        assert_true(c1[0] == '#' && !strcmp(c1, c2));
    }
    free(dat), free(qps), free(cdf);
}

static void test_titles_and_headers(void **state)
{
    char *gp = read_rep("load_run1.gp"), *html = read_rep("index.html");
    assert_non_null(
        strstr(gp, "figure_title = 'Instance load over time, run #1: admission=none router=random speed=1'"));
    assert_non_null(strstr(html, "<th>policy.<wbr>admission</th>"));
    assert_null(strstr(html, "th { background: #f0f0f0; overflow-wrap: anywhere"));
    free(gp), free(html);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_texts_inside_every_figure),
        cmocka_unit_test(test_load_curves_and_colours),
        cmocka_unit_test(test_titles_and_headers),
    };
    if (!tu_have_gnuplot()) {
        const struct CMUnitTest none[] = {cmocka_unit_test(tu_skipped)};
        return cmocka_run_group_tests(none, NULL, NULL);
    }
    return cmocka_run_group_tests(tests, setup, teardown);
}
