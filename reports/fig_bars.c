/* reports/fig_bars.c — per-group bar charts: SLO attainment and goodput,
 * mean TTFT and TBT, hit rate and prefill GPU time, the PIC footprint and
 * end-to-end latency, and rejections.
 *
 * One horizontal bar per group (reports/groups.c), so labels stay readable
 * with many runs; rows are ordered by facet value, then colour value, so a
 * facet's groups sit together. A bar is the mean over the group's seeds
 * with an error bar (95% CI from 3 seeds, min-max below); its colour is the
 * group's colour in every figure. Each figure has two panels side by side.
 *
 * Axes: a fraction (attainment, hit rate, recompute fraction) runs exactly
 * 0 to 1, its value labels kept inside the frame; any other metric runs from
 * 0 to its largest value plus room for the label, at most five tics a
 * panel (1, 2 or 5 times a power of ten apart), so that labels never run
 * together. When a metric's values span more than 100x (a mean TTFT of
 * 100 ms beside one of 200 s), a linear axis would draw the small bars with
 * no width: the axis is then logarithmic, bars starting at the power of ten
 * below the smallest value. A key below the panels names the colours (the
 * colour key's values), since a bar's colour carries that key alone. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_int.h"

typedef struct bar_metric {
    const char *path; /* summary path, e.g. "ttft_ms.mean" */
    const char *axis; /* axis label */
    bool fraction;    /* a value in [0, 1]: the axis is [0:1] */
} bar_metric;

typedef struct bar_figure {
    const char *name, *title, *caption;
    bar_metric left, right;
    bool only_if_nonzero; /* drawn only when some run has a nonzero left value */
} bar_figure;

static const bar_figure bar_figures[] = {
    {"slo",
     "SLO attainment and goodput",
     "Left: effective request capacity (requests completed within both the TTFT and the TBT SLO, over all requests, "
     "rejected ones included). Right: goodput, effective requests per simulated second.",
     {"slo_attainment", "SLO attainment (effective / all requests)", true},
     {"goodput_rps", "goodput (effective requests/s)", false},
     false},
    {"latency",
     "Mean TTFT and TBT",
     "Mean time to first token and mean TBT (each request's mean of its longest 10% inter-token intervals) over the "
     "completed requests (Mooncake Fig. 5 and 23b).",
     {"ttft_ms.mean", "mean TTFT (ms)", false},
     {"tbt_ms.mean", "mean TBT (ms)", false},
     false},
    {"cache",
     "Prefix hit rate and prefill GPU time",
     "Block prefix hit rate of the prefilled requests and the mean compute time a prefill occupied (Mooncake Fig. 17).",
     {"hit_rate_blocks", "prefix hit rate (blocks)", true},
     {"prefill_gpu_s_mean", "prefill GPU time per request (s)", false},
     false},
    {"pic",
     "Peak HBM KV footprint and recompute fraction",
     "Position-independent caching (kvstore.pic; docs/pic.md). Left: the highest HBM KV footprint of a "
     "prefill instance, in blocks of kvstore.pic_block_tokens tokens (blocks of store objects held by requests in "
     "flight, each once, plus their private blocks; MEPIC Fig. 7). Right: tokens computed over input tokens.",
     {"peak_footprint_blocks", "peak HBM KV footprint (blocks)", false},
     {"recompute_fraction", "recompute fraction", true},
     true},
    {"rejections",
     "Rejected requests",
     "All rejected requests, and those rejected after their prefill ran: wasted prefill (Mooncake Table 4).",
     {"rejected.total", "rejected requests", false},
     {"rejected.after_prefill", "rejected after prefill (wasted)", false},
     true},
};

/* The cache figure of a report whose every run used a PIC cache model: a
 * prefix block never hits there, so the chunk hit rate takes the prefix
 * hit rate's panel (an all-zero panel said nothing). */
static const bar_figure pic_cache = {
    "cache",
    "Chunk hit rate and prefill GPU time",
    "Position-independent caching (kvstore.pic): the share of the requests' chunks found stored (no prefix block "
    "ever hits under PIC) and the mean compute time a prefill occupied.",
    {"chunk_hit_rate", "chunk hit rate", true},
    {"prefill_gpu_s_mean", "prefill GPU time per request (s)", false},
    false};

/* MEPIC's own latency metric beside TTFT, in a report with a PIC run
 * (MEPIC Fig. 7 and 8, Table 2 report end-to-end latency, not TTFT). */
static const bar_figure pic_latency = {
    "pic_latency",
    "Mean end-to-end latency and TTFT",
    "Position-independent caching (kvstore.pic; docs/pic.md). Left: mean end-to-end latency, from arrival to the "
    "last token (queueing, prefill and decode: MEPIC's latency metric). Right: mean time to first token.",
    {"e2e_ms.mean", "mean end-to-end latency (ms)", false},
    {"ttft_ms.mean", "mean TTFT (ms)", false},
    false};

/* Data columns: 1 group, 2 label, 3 colour (0xRRGGBB), then per metric
 * mean, low, high: 4-6 left, 7-9 right. The row labels on the axis are
 * written into the script (set ytics), quoted by rep_gp_quote: a data
 * column cannot hold every text (gnuplot's quoted field has no escape for
 * "), so the label column is for the reader (rep_dat_text). */
static const char bars_settings[] = "set multiplot title figure_title\n"
                                    "set style fill solid 0.85 border -1\n"
                                    "set grid xtics\n"
                                    "set tmargin 3\n"
                                    "set yrange [%d - 0.4:-0.6]\n"
                                    "set ytics nomirror scale 0\n";

/* Bars (from the axis' start to the value; barclip keeps a value below a
 * log axis' start at the start), error bars and value labels inside the
 * frame: a label after its error bar, or, for a bar past 80% of the axis,
 * in white inside the bar's end. The label not drawn is put far off the
 * axis (-1e30, or 1e-30 on a log axis), not at NaN: gnuplot 5.4.4 crashes
 * on a `with labels` plot whose points are all undefined. */
static const char bars_panel[] =
    "set lmargin at screen %.3f\n"
    "set rmargin at screen %.3f\n"
    "set xlabel %s\n"
    "set xrange [%g:%g]\n"
    "set format x %s\n"
    "bar_label(v) = v >= 1000 ? sprintf(\" %%.0f \", v) : sprintf(\" %%.3g \", v)\n"
    "barclip(v) = v > %g ? v : %g\n"
    "plot %s using (barclip($%d)):0:(%g):(barclip($%d)):($0-0.3):($0+0.3):3 with boxxyerror linecolor rgb variable "
    "notitle, \\\n"
    "     \"\" using (barclip($%d)):0:(barclip($%d)):(barclip($%d)) with xerrorbars pointtype -1 linecolor rgb "
    "\"#333333\" "
    "notitle, \\\n"
    "     \"\" using ($%d > %g ? %g : barclip($%d)):0:(bar_label($%d)) with labels left notitle, \\\n"
    "     \"\" using ($%d > %g ? barclip($%d) : %g):0:(bar_label($%d)) with labels right textcolor rgb \"white\" "
    "notitle";

/* A panel's x axis: [lo, end], logarithmic or not, and the value past
 * which a bar's label goes inside it (80% of the axis' length). */
typedef struct bar_axis {
    double lo, end, inside;
    bool log;
} bar_axis;

#define BAR_LOG_SPAN 100 /* largest / smallest positive value past which the axis is logarithmic */
#define BAR_MAX_TICS 5
#define BAR_KEY_PX   22 /* a row of the colour key below the panels */
#define BAR_KEY_COLS 6  /* entries a row */

/* The axis of metric m: [0, 1] for a fraction; else from 0 (or, past
 * BAR_LOG_SPAN, the power of ten below the smallest positive mean) to the
 * largest high end plus room for the labels (a quarter; on a log axis a
 * factor of 4, the same share of the panel for a label). */
static bar_axis axis_of(const rep *r, const bar_metric *m)
{
    if (m->fraction) return (bar_axis){0, 1, 0.8, false};
    double top = 0, low = INFINITY;
    for (int g = 0; g < r->ngroups; g++) {
        rep_stat s = rep_group_stat(r, &r->groups[g], m->path);
        if (!s.n) continue;
        top = fmax(top, s.hi);
        if (s.mean > 0) low = fmin(low, s.mean);
    }
    if (top > 0 && isfinite(low) && top / low > BAR_LOG_SPAN) {
        double lo = pow(10, floor(log10(low))), end = top * 4;
        return (bar_axis){lo, end, lo * pow(end / lo, 0.8), true};
    }
    double end = top > 0 ? top * 1.25 : 1;
    return (bar_axis){0, end, 0.8 * end, false};
}

/* Tics of a linear axis [0, end]: a step of 1, 2 or 5 times a power of
 * ten, the smallest giving at most BAR_MAX_TICS tics past 0. */
static void linear_tics(FILE *b, double end)
{
    double p = pow(10, floor(log10(end / BAR_MAX_TICS))), step = p;
    const double mult[] = {1, 2, 5, 10};
    for (int i = 0; i < 4 && end / (step = mult[i] * p) > BAR_MAX_TICS; i++) {
    }
    fprintf(b, "unset logscale x\nset xtics %g\n", step);
}

static bool has_colour_key(const rep *r) { return r->color_by && r->ncolors > 1; }

/* The height of the colour key: rows of BAR_KEY_COLS entries. */
static int key_px(const rep *r)
{
    return has_colour_key(r) ? BAR_KEY_PX * ((r->ncolors + BAR_KEY_COLS - 1) / BAR_KEY_COLS) : 0;
}

/* The key naming each colour: a plot of its own across the figure's
 * bottom (no axes; one empty bar per colour value), below both panels. */
static void colour_key(FILE *b, const rep *r, int height)
{
    fprintf(b,
            "set origin 0, 0\nset size 1, %.4f\nunset title\nunset xlabel\nunset ylabel\nunset tics\nunset border\n"
            "unset grid\nunset logscale x\nset xrange [0:1]\nset yrange [0:1]\nset lmargin at screen 0.02\n"
            "set rmargin at screen 0.98\nset tmargin 0\nset bmargin 0\n"
            "set key center center horizontal maxcols %d samplen 2\nplot NaN notitle",
            (double)key_px(r) / height, BAR_KEY_COLS);
    for (int c = 0; c < r->ncolors; c++)
        for (int g = 0; g < r->ngroups; g++) {
            if (r->groups[g].color != c) continue;
            const char *dot = strrchr(r->color_by, '.');
            char *v = rep_config_text(r->runs[r->groups[g].runs[0]].config, r->color_by, "-"), label[300];
            snprintf(label, sizeof label, "%s=%s", dot ? dot + 1 : r->color_by, v);
            fprintf(b, ", \\\n     NaN with boxes fillstyle solid 0.85 border -1 linecolor rgb \"%s\" title ",
                    rep_color(c));
            rep_gp_string(b, label);
            free(v);
            break;
        }
    fputc('\n', b);
}

static void bars_panel_write(FILE *b, const rep *r, const bar_figure *f, const bar_metric *m, int col, double left,
                             double right)
{
    bar_axis x = axis_of(r, m);
    char file[64];
    snprintf(file, sizeof file, "%s.dat", f->name);
    char label[160];
    size_t n = strlen(m->axis);
    if (x.log && n && m->axis[n - 1] == ')') snprintf(label, sizeof label, "%.*s, log scale)", (int)(n - 1), m->axis);
    else snprintf(label, sizeof label, "%s%s", m->axis, x.log ? " (log scale)" : "");
    char *axis = rep_gp_quote(label), *format = rep_gp_quote(x.end >= 1e4 ? "%.0s%c" : "%g"),
         *data = rep_gp_quote(file);
    if (x.log) {
        fputs("set logscale x 10\n", b);
        rep_log_tics(b, "x", x.lo, x.end);
    } else linear_tics(b, x.end);
    /* A label not drawn goes far off the axis, not to NaN (see bars_panel). */
    double off = x.log ? 1e-30 : -1e30;
    int mean = col, high = col + 2;
    fprintf(b, bars_panel, left, right, axis, x.lo, x.end, format, x.lo, x.lo, /* axis, clip */
            data, mean, x.lo, mean,                                            /* bars */
            mean, col + 1, high,                                               /* error bars */
            high, x.inside, off, high, mean,                                   /* labels after the error bar */
            high, x.inside, mean, off, mean);                                  /* labels inside the bar */
    fputc('\n', b);
    free(axis), free(format), free(data);
}

/* The labels get the left margin they need (about 7 px a character); the
 * two panels share 640 px; `ytics` is the set ytics command naming the
 * rows. Returns the figure's width. */
static int bars_body(FILE *b, const rep *r, const bar_figure *f, size_t longest, const char *ytics, int height)
{
    double label_px = 40 + 7.5 * (double)longest, width = fmax(REP_WIDTH, label_px + 640);
    double left = label_px / width, mid = left + (0.97 - left - 0.06) / 2;
    fprintf(b, bars_settings, r->ngroups);
    fputs("unset key\n", b);
    if (has_colour_key(r)) fprintf(b, "set bmargin at screen %.4f\n", (double)(key_px(r) + 56) / height);
    fprintf(b, "%s)\n", ytics);
    bars_panel_write(b, r, f, &f->left, 4, left, mid);
    fputs("unset ytics\n", b);
    bars_panel_write(b, r, f, &f->right, 7, mid + 0.06, 0.97);
    if (has_colour_key(r)) colour_key(b, r, height);
    fputs("unset multiplot\n", b);
    if (has_colour_key(r)) /* the next terminal's pass starts from the same state */
        fputs("set origin 0, 0\nset size 1, 1\nset border\nset tics\nunset lmargin\nunset rmargin\nunset tmargin\n"
              "unset bmargin\n",
              b);
    return (int)width;
}

/* Groups by facet, then colour, then first appearance. */
static int *row_order(const rep *r)
{
    int *order = sim_xcalloc((size_t)r->ngroups + 1, sizeof *order);
    for (int g = 0; g < r->ngroups; g++) order[g] = g;
    for (int i = 1; i < r->ngroups; i++) /* insertion sort: stable */
        for (int k = i; k > 0; k--) {
            const rep_group *a = &r->groups[order[k - 1]], *b = &r->groups[order[k]];
            if (a->facet < b->facet || (a->facet == b->facet && a->color <= b->color)) break;
            int t = order[k];
            order[k] = order[k - 1], order[k - 1] = t;
        }
    return order;
}

/* Group g's data row (the row-th) and its label in the ytics list. */
static void bar_row(FILE *dat, FILE *ytics, const rep *r, int row, int g, const bar_figure *f, size_t *longest)
{
    const rep_group *grp = &r->groups[g];
    char label[600];
    int n = snprintf(label, sizeof label, "%s", grp->label);
    if (grp->same_as >= 0) snprintf(label + n, sizeof label - (size_t)n, " (= %s)", grp->same_as_diff);
    if (strlen(label) > *longest) *longest = strlen(label);
    unsigned color = (unsigned)strtoul(rep_color(grp->color) + 1, NULL, 16);
    rep_stat a = rep_group_stat(r, grp, f->left.path), b = rep_group_stat(r, grp, f->right.path);
    fprintf(dat, "%d\t", g);
    rep_dat_text(dat, label);
    fprintf(dat, "\t%u\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\n", color, a.mean, a.lo, a.hi, b.mean, b.lo, b.hi);
    fputs(row ? ", " : "set ytics (", ytics);
    rep_gp_string(ytics, label);
    fprintf(ytics, " %d", row);
}

static int bar_figure_write(rep *r, const bar_figure *f, sim_err *err)
{
    bool any = false;
    for (int i = 0; i < r->nruns; i++) any = any || json_number_value(rep_json_at(r->runs[i].summary, f->left.path));
    if (!r->nruns || (f->only_if_nonzero && !any)) return 0;
    char file[64], title[160];
    snprintf(file, sizeof file, "%s.dat", f->name);
    FILE *dat = rep_open(r, file, err);
    if (!dat) return -1;
    fprintf(dat, "# group\tlabel\tcolor\t%s\tlow\thigh\t%s\tlow\thigh\n", f->left.path, f->right.path);
    int *order = row_order(r);
    size_t longest = 0;
    rep_body ytics;
    rep_body_open(&ytics);
    for (int i = 0; i < r->ngroups; i++) bar_row(dat, ytics.f, r, i, order[i], f, &longest);
    free(order);
    fclose(ytics.f);
    if (rep_close(r, dat, file, true, err)) {
        free(ytics.text);
        return -1;
    }
    rep_body b;
    rep_body_open(&b);
    int height = 140 + 36 * r->ngroups + key_px(r);
    height = height < 320 ? 320 : height;
    int width = bars_body(b.f, r, f, longest, ytics.text, height);
    free(ytics.text);
    rep_figure_title(r, f->title, "error bars", title, sizeof title);
    if (rep_body_finish(r, &b, f->name, title, width, height, err)) return -1;
    rep_section(r, f->name, title, f->caption, NULL);
    return 1;
}

int rep_fig_bars(rep *r, sim_err *err)
{
    int made = 0;
    bool pic = rep_every_run_pic(r);
    for (size_t i = 0; i < sizeof bar_figures / sizeof bar_figures[0]; i++) {
        const bar_figure *f = pic && !strcmp(bar_figures[i].name, "cache") ? &pic_cache : &bar_figures[i];
        int rc = bar_figure_write(r, f, err);
        if (rc < 0) return -1;
        made += rc;
        if (rep_any_run_pic(r) && !strcmp(bar_figures[i].name, "pic")) {
            if ((rc = bar_figure_write(r, &pic_latency, err)) < 0) return -1;
            made += rc;
        }
    }
    return made > 0;
}
