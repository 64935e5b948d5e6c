/* reports/fig_cdf.c — the TTFT and TBT distributions.
 *
 * A CDF is over all requests, not only the completed ones: a rejected or
 * lost request never gets a first token, so it sits at +infinity and the
 * curve stops below 1 at the completed fraction (the legend says how much
 * was rejected). Comparing admission policies on completed requests alone
 * would reward rejecting the slow ones. For TBT the requests are those with
 * a TBT (two output tokens or more) plus the rejected and lost ones.
 *
 * One curve per group (reports/groups.c). A group of one run plots its
 * order statistics (at most CDF_MAX_POINTS of them, evenly spaced). A group
 * of several seeds plots, at each level y = j/M, the mean over seeds of the
 * value at that level, with a band from the interval of rep_stat_of (95% CI
 * from 3 seeds, min-max below); the curve stops at the first level some seed
 * never reaches. With a facet key, one panel per facet value.
 *
 * The x axis (log) spans the data and the SLOs with a quarter of margin,
 * its tics 1-2-5 per decade (rep_log_tics); each SLO is a dashed line whose
 * label sits inside the frame. The key sits at the bottom right, where a
 * CDF has no curve (at large x every curve is high), with up to
 * KEY_INSIDE_MAX entries a panel; with more it goes below the plot, outside
 * the frame, where it cannot hide a curve. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_int.h"

#define CDF_MAX_POINTS 2000
#define CDF_LEVELS     400 /* levels of a seed-aggregated curve */
#define MAX_PANELS     9
#define KEY_INSIDE_MAX 6 /* legend entries a panel keeps inside its frame */

typedef struct cdf_spec {
    const char *name, *col, *slo_key, *what, *title;
    const char *denominator; /* SQL: COUNT of the requests in scope of run ?1 */
    const char *scope;       /* those requests, in words */
} cdf_spec;

/* One run's sorted values and its denominator (requests in scope). */
typedef struct cdf_run {
    double *v;
    int64_t n, total;
} cdf_run;

static int load_cdf_run(rep *r, const cdf_spec *c, const rep_run *run, cdf_run *out, sim_err *err)
{
    char sql[320];
    snprintf(sql, sizeof sql, "SELECT %s FROM requests WHERE run_id=?1 AND %s IS NOT NULL ORDER BY %s", c->col, c->col,
             c->col);
    sqlite3_stmt *st = rep_prepare(r, sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, run->id);
    int64_t cap = 256;
    *out = (cdf_run){.v = sim_xmalloc((size_t)cap * sizeof(double))};
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (out->n == cap) out->v = sim_xrealloc(out->v, (size_t)(cap *= 2) * sizeof(double));
        out->v[out->n++] = sqlite3_column_double(st, 0);
    }
    sqlite3_finalize(st);
    out->total = rep_count(r, c->denominator, run->id, NULL);
    return 0;
}

typedef struct cdf_range {
    double lo, hi;
} cdf_range;

static void widen(cdf_range *x, double v)
{
    if (v > 0 && v < x->lo) x->lo = v;
    if (v > x->hi) x->hi = v;
}

/* A single run: its order statistics, y = rank / total. */
static void write_single(FILE *dat, const cdf_run *c, cdf_range *x)
{
    int64_t step = c->n > CDF_MAX_POINTS ? (c->n + CDF_MAX_POINTS - 1) / CDF_MAX_POINTS : 1;
    for (int64_t k = 1; k <= c->n; k++) {
        if (k == 1 || k == c->n || k % step == 0)
            fprintf(dat, "%.6g\t%.6g\n", c->v[k - 1], (double)k / (double)c->total);
        widen(x, c->v[k - 1]);
    }
}

/* The value a seed reaches at level y, +inf when it never does. */
static double value_at(const cdf_run *c, double y)
{
    int64_t k = (int64_t)ceil(y * (double)c->total - 1e-9);
    if (k < 1) k = 1;
    return k <= c->n ? c->v[k - 1] : INFINITY;
}

/* Seeds: the band block (lower edge up, upper edge down: a closed polygon)
 * then the mean block. Returns the levels drawn. */
static int write_aggregate(FILE *dat, const cdf_run *c, int n, cdf_range *x)
{
    double *mean = sim_xcalloc(CDF_LEVELS + 1, sizeof *mean), *lo = sim_xcalloc(CDF_LEVELS + 1, sizeof *lo),
           *hi = sim_xcalloc(CDF_LEVELS + 1, sizeof *hi), *xs = sim_xcalloc((size_t)n, sizeof *xs);
    int levels = 0;
    for (int j = 1; j <= CDF_LEVELS; j++, levels++) {
        bool finite = true;
        for (int s = 0; s < n && finite; s++) finite = isfinite(xs[s] = value_at(&c[s], (double)j / CDF_LEVELS));
        if (!finite) break;
        rep_stat st = rep_stat_of(xs, n);
        mean[j] = st.mean, lo[j] = fmax(st.lo, 0), hi[j] = st.hi;
        widen(x, lo[j] > 0 ? lo[j] : st.mean);
        widen(x, hi[j]);
    }
    for (int j = 1; j <= levels; j++) fprintf(dat, "%.6g\t%.6g\n", lo[j], (double)j / CDF_LEVELS);
    for (int j = levels; j >= 1; j--) fprintf(dat, "%.6g\t%.6g\n", hi[j], (double)j / CDF_LEVELS);
    fputs("\n\n", dat);
    for (int j = 1; j <= levels; j++) fprintf(dat, "%.6g\t%.6g\n", mean[j], (double)j / CDF_LEVELS);
    free(mean), free(lo), free(hi), free(xs);
    return levels;
}

/* The legend entry: short label, the share never served, identity. */
static void cdf_title(const rep *r, const rep_group *g, const cdf_run *c, char *buf, size_t size)
{
    int64_t missing = 0, total = 0;
    for (int s = 0; s < g->n; s++) missing += c[s].total - c[s].n, total += c[s].total;
    int n = snprintf(buf, size, "%s", g->short_label);
    if (missing > 0 && n < (int)size)
        n += snprintf(buf + n, size - (size_t)n, ": %.1f%% rejected", 100.0 * (double)missing / (double)total);
    if (g->same_as >= 0 && n < (int)size) snprintf(buf + n, size - (size_t)n, " (identical to %s)", g->same_as_diff);
}

/* Write group g's blocks and its plot clauses into its panel's body. */
static int cdf_group(rep *r, const cdf_spec *c, const rep_group *g, FILE *dat, rep_body *panel, int *index,
                     cdf_range *x, sim_err *err)
{
    char file[64];
    snprintf(file, sizeof file, "%s.dat", c->name);
    cdf_run *runs = sim_xcalloc((size_t)g->n, sizeof *runs);
    int rc = 0;
    int64_t points = 0;
    for (int s = 0; s < g->n && rc == 0; s++) rc = load_cdf_run(r, c, &r->runs[g->runs[s]], &runs[s], err);
    for (int s = 0; s < g->n && rc == 0; s++) points += runs[s].n;
    if (rc == 0 && points > 0) {
        char title[600], style[160];
        cdf_title(r, g, runs, title, sizeof title);
        rep_line_style(g, style, sizeof style);
        fputs("# group: ", dat);
        rep_dat_text(dat, g->label);
        fputs(" (runs", dat);
        for (int s = 0; s < g->n; s++) fprintf(dat, " #%lld", (long long)r->runs[g->runs[s]].id);
        fputs(")\n", dat);
        if (g->n == 1) {
            write_single(dat, &runs[0], x);
        } else if (write_aggregate(dat, runs, g->n, x) > 0) {
            rep_band_clause(panel, file, (*index)++, g);
        }
        fputs("\n\n", dat);
        rep_body_clause(panel, file, (*index)++, "1:2", style, title);
    }
    for (int s = 0; s < g->n; s++) free(runs[s].v);
    free(runs);
    return rc;
}

/* Dashed vertical lines at each distinct SLO, labels inside the frame:
 * left of the line in the right half of the axis, right of it otherwise. */
static void slo_lines(FILE *b, const rep *r, const cdf_spec *c, cdf_range x, double base)
{
    double seen[64];
    int nseen = 0;
    for (int i = 0; i < r->nruns && nseen < 64; i++) {
        double slo = rep_config_num(&r->runs[i], c->slo_key);
        bool dup = isnan(slo);
        for (int k = 0; k < nseen && !dup; k++) dup = seen[k] == slo;
        if (dup) continue;
        seen[nseen++] = slo;
        bool right_half = log(slo / x.lo) > 0.5 * log(x.hi / x.lo);
        fprintf(b,
                "set arrow from %g, graph 0 to %g, graph 1 nohead dashtype 2 linewidth 2 linecolor rgb \"#c00000\"\n",
                slo, slo);
        char text[96];
        snprintf(text, sizeof text, "%s SLO %g ms", c->what, slo);
        fputs("set label ", b);
        rep_gp_string(b, text);
        fprintf(b, " at %g, graph %.2f %s offset %s, 0 textcolor rgb \"#c00000\"\n", slo, base + 0.06 * (nseen - 1),
                right_half ? "right" : "left", right_half ? "-0.5" : "0.5");
    }
}

static const char cdf_settings[] = "set yrange [0:1]\n"
                                   "set grid\n"
                                   "set logscale x 10\n"
                                   "set xrange [%g:%g]\n";

/* The most legend entries of any panel. */
static int most_entries(const rep *r, int npanels)
{
    int most = 0;
    for (int p = 0; p < npanels; p++) {
        int n = rep_panel_groups(r, p, npanels);
        most = n > most ? n : most;
    }
    return most;
}

/* Axis labels (quoted by rep_gp_quote), ranges, grid and key. */
static void cdf_axes(FILE *b, const cdf_spec *c, cdf_range x, int entries)
{
    if (entries > KEY_INSIDE_MAX) /* one column, so that every panel keeps the same height; an
                                   * empty key title keeps the entries clear of the axis label */
        fputs("set key outside below left Left reverse font \",9\" maxcols 1 spacing 1.1 title \" \"\n", b);
    else fputs("set key bottom right Left reverse font \",9\" opaque box\n", b);
    char label[256];
    snprintf(label, sizeof label, "%s (ms, log scale)", c->what);
    fputs("set xlabel ", b);
    rep_gp_string(b, label);
    fputs("\nset ylabel \"fraction of requests\"\n", b); /* which requests: the caption */
    fprintf(b, cdf_settings, x.lo, x.hi);
    rep_log_tics(b, "x", x.lo, x.hi);
}

static int cdf_figure(rep *r, const cdf_spec *c, sim_err *err)
{
    char file[64];
    snprintf(file, sizeof file, "%s.dat", c->name);
    FILE *dat = rep_open(r, file, err);
    if (!dat) return -1;
    int npanels = r->nfacets > 1 && r->nfacets <= MAX_PANELS ? r->nfacets : 1;
    rep_body panel[MAX_PANELS];
    cdf_range x = {INFINITY, 0};
    int index = 0, rc = 0;
    for (int p = 0; p < npanels; p++) rep_body_open(&panel[p]);
    for (int g = 0; g < r->ngroups && rc == 0; g++) {
        rep_body *pb = &panel[npanels > 1 ? r->groups[g].facet : 0];
        rc = cdf_group(r, c, &r->groups[g], dat, pb, &index, &x, err);
    }
    if (rep_close(r, dat, file, rc == 0 && index > 0, err)) rc = -1; /* nothing to plot: no file */
    if (rc < 0 || index == 0) {
        for (int p = 0; p < npanels; p++) rep_body_discard(&panel[p]);
        return rc < 0 ? -1 : 0;
    }
    for (int i = 0; i < r->nruns; i++) widen(&x, rep_config_num(&r->runs[i], c->slo_key));
    x.lo /= 1.25, x.hi *= 1.25;
    char title[160];
    rep_figure_title(r, c->title, "band", title, sizeof title);
    rep_body b;
    rep_body_open(&b);
    int entries = most_entries(r, npanels);
    cdf_axes(b.f, c, x, entries);
    /* SLO labels above a key inside the frame (about 16 px an entry of a ~400 px plot) */
    slo_lines(b.f, r, c, x, entries > KEY_INSIDE_MAX ? 0.06 : 0.06 + (16.0 * entries + 12) / 400);
    rep_panels(&b, r, panel, npanels);
    int cols = npanels < 3 ? npanels : 3, rows = (npanels + cols - 1) / cols;
    int key_px = entries > KEY_INSIDE_MAX ? 16 * entries + 16 : 0; /* one column below */
    if (rep_body_finish(r, &b, c->name, title, cols > 1 ? 560 * cols : REP_WIDTH, 80 + (460 + key_px) * rows, err))
        return -1;
    char caption[600];
    snprintf(caption, sizeof caption,
             "Cumulative distribution of %s over %s (log scale): a rejected or lost request never gets one, so a "
             "curve ends below 1 at its completed fraction. Groups of seeds: the mean over seeds at each level, "
             "with a band (95%% CI from 3 seeds, min-max below). Dashed red: the %s SLO.",
             c->what, c->scope, c->what);
    rep_section(r, c->name, title, caption, NULL);
    return 1;
}

int rep_fig_ttft(rep *r, sim_err *err)
{
    const cdf_spec c = {"ttft_cdf",    "ttft_ms",           "slo.ttft_ms",
                        "TTFT",        "TTFT distribution", "SELECT COUNT(*) FROM requests WHERE run_id=?1",
                        "all requests"};
    return cdf_figure(r, &c, err);
}

int rep_fig_tbt(rep *r, sim_err *err)
{
    const cdf_spec c = {
        "tbt_cdf",
        "tbt_ms",
        "slo.tbt_ms",
        "TBT",
        "TBT distribution",
        "SELECT COUNT(*) FROM requests WHERE run_id=?1 AND (tbt_ms IS NOT NULL OR status != 'completed')",
        "requests with a TBT (two output tokens or more) and rejected or lost requests"};
    return cdf_figure(r, &c, err);
}
