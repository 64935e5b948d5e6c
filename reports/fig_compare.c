/* reports/fig_compare.c — the A-vs-B comparison of `kvsim compare` in a
 * report: a figure of each metric's difference from the baseline with its
 * 95% interval against load, and the table of every difference, interval
 * and verdict with the sentence saying where the order flips.
 *
 * The key compared is the report's colour key (reports/groups.c) unless it
 * is the load itself (trace.speed), then the facet key, then the first
 * other grouping key; the baseline is `kvsim report --baseline VALUE`, else
 * the first run's value of it, and trace.speed is the load axis, as
 * `kvsim compare --by KEY [--baseline VALUE]` takes them
 * (sim/results/compare.c computes every number, over the report's runs
 * only). A series is one value against the baseline in one context (the
 * other keys that differ), drawn in the colour the value's group has in
 * every other figure when the key is the colour key. Drawn when the runs
 * have a key of two or more values besides the load and seed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_int.h"
#include "sim/results/compare.h"

/* The key to compare by, or NULL when there is none. */
static const char *compare_key(const rep *r)
{
    const char *pref[] = {r->color_by, r->facet_by};
    for (int i = 0; i < 2; i++)
        if (pref[i] && strcmp(pref[i], "trace.speed")) return pref[i];
    size_t k;
    json_t *key;
    json_array_foreach(r->group_keys, k, key)
    {
        const char *s = json_string_value(key);
        if (strcmp(s, "trace.speed") && strcmp(s, "trace.path")) return s;
    }
    return NULL;
}

/* The colour of value v of key `by`: its group's when `by` is the colour
 * key, else the series' own slot. */
static const char *series_color(const rep *r, const char *by, const char *v, int slot)
{
    for (int g = 0; r->color_by && !strcmp(r->color_by, by) && g < r->ngroups; g++) {
        char *t = rep_config_text(r->runs[r->groups[g].runs[0]].config, by, "");
        bool same = !strcmp(t, v);
        free(t);
        if (same) return rep_color(r->groups[g].color);
    }
    return rep_color(slot);
}

static double num(const json_t *o, const char *key) { return json_number_value(json_object_get(o, key)); }

/* Every series, one data block each, "speed diff lo hi" (no interval:
 * lo = hi = diff), metric by metric: metric m's blocks start at first[m]. */
static void write_data(FILE *dat, const json_t *cmp, int *first)
{
    size_t i, j, k, m;
    json_t *ctx, *cm, *row, *metric;
    int block = 0;
    fputs("# speed\tdiff\tlo\thi (value - baseline, 95% interval)\n", dat);
    json_array_foreach(json_object_get(cmp, "metrics"), m, metric)
    {
        first[m] = block;
        json_array_foreach(json_object_get(cmp, "contexts"), i, ctx)
            json_array_foreach(json_object_get(ctx, "comparisons"), j, cm)
        {
            if (strcmp(json_string_value(json_object_get(cm, "metric")), json_string_value(metric))) continue;
            fputs("# ", dat);
            rep_dat_text(dat, json_string_value(json_object_get(cm, "value")));
            fputc('\n', dat);
            json_array_foreach(json_object_get(cm, "rows"), k, row)
            {
                bool ci = json_is_number(json_object_get(row, "lo"));
                fprintf(dat, "%.9g\t%.9g\t%.9g\t%.9g\n", num(row, "speed"), num(row, "diff"),
                        ci ? num(row, "lo") : num(row, "diff"), ci ? num(row, "hi") : num(row, "diff"));
            }
            fputs("\n\n", dat);
            block++;
        }
    }
}

/* The legend of a series: "kvcentric − cache_aware_local", with its
 * context when there are several. */
static void series_title(const json_t *cmp, const json_t *ctx, const json_t *cm, char *buf, size_t n)
{
    int u = snprintf(buf, n, "%s - %s", json_string_value(json_object_get(cm, "value")),
                     json_string_value(json_object_get(cmp, "baseline")));
    if (json_array_size(json_object_get(cmp, "contexts")) > 1 && u > 0 && (size_t)u < n)
        snprintf(buf + u, n - (size_t)u, " (%s)", json_string_value(json_object_get(ctx, "label")));
}

/* The y range of a panel: its rows' intervals and 0, with a margin. */
static void panel_range(FILE *f, const json_t *cmp, const char *metric)
{
    double lo = 0, hi = 0;
    size_t i, j, k;
    json_t *ctx, *cm, *row;
    json_array_foreach(json_object_get(cmp, "contexts"), i, ctx)
        json_array_foreach(json_object_get(ctx, "comparisons"), j, cm)
    {
        if (strcmp(json_string_value(json_object_get(cm, "metric")), metric)) continue;
        json_array_foreach(json_object_get(cm, "rows"), k, row)
        {
            bool ci = json_is_number(json_object_get(row, "lo"));
            lo = fmin(lo, ci ? num(row, "lo") : num(row, "diff"));
            hi = fmax(hi, ci ? num(row, "hi") : num(row, "diff"));
        }
    }
    double pad = hi > lo ? 0.08 * (hi - lo) : 1;
    fprintf(f, "set yrange [%.9g:%.9g]\n", lo - pad, hi + pad);
}

/* The style of a series: the value's colour, and per context a point
 * type and dash type (two contexts of one value are told apart). */
static void series_style(const rep *r, const json_t *cmp, int ctx, const char *value, const char *with, char *buf,
                         size_t n)
{
    static const int points[] = {7, 5, 9, 11, 13};
    size_t i, slot = 0;
    json_t *x;
    json_array_foreach(json_object_get(cmp, "values"), i, x) if (!strcmp(json_string_value(x), value)) slot = i;
    snprintf(buf, n, "%s linewidth 2 pointtype %d dashtype %d linecolor rgb \"%s\"", with, points[ctx % 5], ctx % 5 + 1,
             series_color(r, json_string_value(json_object_get(cmp, "by")), value, (int)slot));
}

/* One panel: the metric's series with error bars, no key (the figure has
 * one for all panels: legend()). */
/* The unit of a summary metric, from its name: rates, attainment and
 * fractions a fraction of 1 (hit_rate_blocks too: the first match wins),
 * *_ms.* milliseconds, *_rps requests per second, *_blocks and *_bytes as
 * named, rejections requests. */
static const char *metric_unit(const char *metric)
{
    static const struct {
        const char *part, *unit;
    } units[] = {{"rate", "fraction"},    {"attainment", "fraction"}, {"fraction", "fraction"}, {"_ms", "ms"},
                 {"_rps", "requests/s"},  {"_blocks", "blocks"},      {"_bytes", "bytes"},      {"_s_", "s"},
                 {"rejected", "requests"}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strstr(metric, units[i].part)) return units[i].unit;
    return "as the metric";
}

static void panel(FILE *f, const rep *r, const json_t *cmp, const char *metric, int block0)
{
    size_t i, j;
    json_t *ctx, *cm;
    int s = 0;
    json_array_foreach(json_object_get(cmp, "contexts"), i, ctx)
        json_array_foreach(json_object_get(ctx, "comparisons"), j, cm)
    {
        if (strcmp(json_string_value(json_object_get(cm, "metric")), metric)) continue;
        char title[512], style[160];
        if (s == 0) { /* the panel's title, before its plot command */
            const char *better = json_string_value(json_object_get(cm, "better"));
            snprintf(title, sizeof title, "%s%s%s%s", metric, better ? " (" : "", better ? better : "",
                     better ? " is better)" : "");
            fputs("set title ", f);
            rep_gp_string(f, title);
            snprintf(title, sizeof title, "value - baseline (%s)", metric_unit(metric));
            fputs("\nset ylabel ", f);
            rep_gp_string(f, title);
            fputc('\n', f);
            panel_range(f, cmp, metric);
        }
        series_style(r, cmp, (int)i, json_string_value(json_object_get(cm, "value")), "yerrorlines", style,
                     sizeof style);
        rep_plot_clause(f, s == 0, "compare.dat", block0 + s, "1:2:3:4", style, NULL);
        s++;
    }
    fputs(s ? "\n" : "plot NaN notitle\n", f);
}

/* The key of every series (a value in a context), once, in the band at
 * the bottom of the figure: a plot of nothing but its entries. Returns how
 * many (only counted when f is NULL). */
static int legend(FILE *f, const rep *r, const json_t *cmp)
{
    size_t i, j;
    json_t *ctx, *cm, *seen = json_object();
    int n = 0;
    json_array_foreach(json_object_get(cmp, "contexts"), i, ctx)
        json_array_foreach(json_object_get(ctx, "comparisons"), j, cm)
    {
        char key[600], title[512], style[160];
        const char *value = json_string_value(json_object_get(cm, "value"));
        snprintf(key, sizeof key, "%zu %s", i, value);
        if (json_object_get(seen, key)) continue;
        json_object_set_new(seen, key, json_true());
        if (f) {
            series_title(cmp, ctx, cm, title, sizeof title);
            series_style(r, cmp, (int)i, value, "linespoints", style, sizeof style); /* a function has no bars */
            fprintf(f, "%sNaN with %s title ", n ? ", \\\n     " : "plot ", style);
            rep_gp_string(f, title);
        }
        n++;
    }
    json_decref(seen);
    if (f) fputc('\n', f);
    return n;
}

/* The figure's layout: panels of PANEL_H pixels in rows of three, under
 * the title band, over the legend band (LEGEND_ROW pixels a row of two
 * entries). */
enum { PANEL_H = 330, TITLE_H = 40, LEGEND_ROW = 22 };

static int figure_height(int nm, int nseries)
{
    int cols = nm < 3 ? nm : 3, rows = (nm + cols - 1) / cols;
    return TITLE_H + rows * PANEL_H + 30 + LEGEND_ROW * ((nseries + 1) / 2);
}

#define COMPARE_LOG_SPAN 4.0 /* highest / lowest load past which the load axis is logarithmic */

/* The figure: a panel per metric, each placed (origin, size) so that every
 * panel has the same frame, and one legend below them. */
static char *plot_body(const rep *r, const json_t *cmp, const int *first)
{
    const json_t *metrics = json_object_get(cmp, "metrics"), *speeds = json_object_get(cmp, "speeds");
    int nm = (int)json_array_size(metrics), cols = nm < 3 ? nm : 3, rows = (nm + cols - 1) / cols,
        height = figure_height(nm, legend(NULL, r, cmp));
    double top = (double)TITLE_H / height, ph = (double)PANEL_H / height, key = 1 - top - rows * ph;
    rep_body b;
    rep_body_open(&b);
    fputs("set border\nset tics\nset autoscale\nset multiplot title figure_title\nunset key\nset grid\nset xlabel "
          "\"load (trace.speed)\"\n"
          "set offsets graph 0.05, graph 0.05, 0, 0\nset format y \"%g\"\n"
          "set arrow 1 from graph 0, first 0 to graph 1, first 0 nohead dashtype 2 linecolor rgb \"#606060\"\n"
          "set xtics (",
          b.f);
    size_t k;
    json_t *sp;
    json_array_foreach(speeds, k, sp) fprintf(b.f, "%s%g", k ? ", " : "", json_number_value(sp));
    fputs(")\n", b.f);
    double s0 = json_number_value(json_array_get(speeds, 0)), lo = s0, hi = s0;
    json_array_foreach(speeds, k, sp) lo = fmin(lo, json_number_value(sp)), hi = fmax(hi, json_number_value(sp));
    if (json_array_size(speeds) == 1) fprintf(b.f, "set xrange [%g:%g]\n", s0 * 0.5, s0 * 1.5);
    /* Loads a factor of 4 or more apart (0.25 ... 4) crowd the low ones on a
     * linear axis until their labels run together: a log axis spaces each
     * doubling alike. */
    if (lo > 0 && hi / lo >= COMPARE_LOG_SPAN) fputs("set logscale x 2\n", b.f);
    for (int m = 0; m < nm; m++) {
        fprintf(b.f, "set origin %.4f, %.4f\nset size %.4f, %.4f\n", (double)(m % cols) / cols,
                key + (rows - 1 - m / cols) * ph, 1.0 / cols, ph);
        panel(b.f, r, cmp, json_string_value(json_array_get(metrics, m)), first[m]);
    }
    fprintf(b.f,
            "set origin 0, 0\nset size 1, %.4f\nunset title\nunset xlabel\nunset ylabel\nunset tics\nunset "
            "border\nunset grid\nunset arrow 1\nset xrange [0:1]\nset yrange [0:1]\nset lmargin at screen 0.02\n"
            "set rmargin at screen 0.98\nset tmargin 0\nset bmargin 0\n"
            "set key center center maxcolumns 2 Left reverse font \",10\" samplen 3\n",
            key);
    legend(b.f, r, cmp);
    fputs("unset multiplot\nunset lmargin\nunset rmargin\nunset tmargin\nunset bmargin\nset origin 0, 0\n"
          "set size 1, 1\nunset logscale x\n",
          b.f); /* the next terminal's pass starts from the same state */
    fclose(b.f);
    return b.text;
}

/* One row of the table: a comparison's row at one load. */
static void table_row(FILE *h, const json_t *cm, const json_t *row)
{
    fputs("<tr><td class=\"text\">", h);
    sim_fput_xml(h, json_string_value(json_object_get(cm, "metric")));
    fputs("</td><td class=\"text\">", h);
    sim_fput_xml(h, json_string_value(json_object_get(cm, "value")));
    fprintf(h, "</td><td>%g</td><td>%.6g</td><td>%.6g</td><td>%+.5g</td>", num(row, "speed"), num(row, "baseline"),
            num(row, "value"), num(row, "diff"));
    if (json_is_false(json_object_get(row, "seeds_vary"))) fputs("<td>none (zero width)</td>", h);
    else if (json_is_number(json_object_get(row, "lo")))
        fprintf(h, "<td>[%+.5g, %+.5g]</td>", num(row, "lo"), num(row, "hi"));
    else fputs("<td>none (one seed)</td>", h);
    if (json_is_number(json_object_get(row, "rel_pct"))) fprintf(h, "<td>%+.1f%%</td>", num(row, "rel_pct"));
    else fputs("<td>-</td>", h);
    fprintf(h, "<td>%d %s</td><td class=\"text\">", (int)json_integer_value(json_object_get(row, "n")),
            json_string_value(json_object_get(row, "method")));
    sim_fput_xml(h, json_string_value(json_object_get(row, "verdict")));
    fputs("</td></tr>\n", h);
}

/* The table of every difference, a context at a time, and the sentences
 * saying where the order flips with load. */
static void write_table(FILE *h, const json_t *cmp)
{
    const json_t *contexts = json_object_get(cmp, "contexts");
    size_t i, j, k;
    json_t *ctx, *cm, *row;
    json_array_foreach(contexts, i, ctx)
    {
        if (json_array_size(contexts) > 1) {
            fputs("<h3>", h);
            sim_fput_xml(h, json_string_value(json_object_get(ctx, "label")));
            fputs("</h3>\n", h);
        }
        if (json_is_string(json_object_get(ctx, "unpaired"))) {
            fputs("<p>", h);
            sim_fput_xml(h, json_string_value(json_object_get(ctx, "unpaired")));
            fputs("</p>\n", h);
        }
        fputs("<div class=\"scroll\"><table>\n<tr><th>metric</th><th>value</th><th>load</th><th>baseline "
              "mean</th><th>value mean</th><th>diff</th><th>95% interval</th><th>relative</th><th>seeds</th>"
              "<th>verdict</th></tr>\n",
              h);
        json_array_foreach(json_object_get(ctx, "comparisons"), j, cm)
            json_array_foreach(json_object_get(cm, "rows"), k, row) table_row(h, cm, row);
        fputs("</table></div>\n<ul>\n", h);
        json_array_foreach(json_object_get(ctx, "comparisons"), j, cm)
        {
            const json_t *fl = json_object_get(cm, "flips");
            if (!json_is_string(fl)) continue;
            fputs("<li><b>", h);
            sim_fput_xml(h, json_string_value(json_object_get(cm, "metric")));
            fputs("</b>: ", h);
            sim_fput_xml(h, json_string_value(fl));
            fputs("</li>\n", h);
        }
        fputs("</ul>\n", h);
    }
}

/* The comparison over the report's runs, or NULL when there is none to
 * draw (no key besides the load, one value, no common context). */
static json_t *comparison(rep *r, sim_err *err)
{
    const char *by = compare_key(r);
    if (!by) {
        if (r->baseline) sim_errf(err, "--baseline %s: the runs have no key to compare by", r->baseline);
        r->bad_option = r->baseline != NULL;
        return NULL;
    }
    int64_t *ids = sim_xmalloc((size_t)r->nruns * sizeof *ids);
    for (int i = 0; i < r->nruns; i++) ids[i] = r->runs[i].id;
    static const char *pic_metrics[] = {"ttft_ms.mean", "ttft_ms.p90",    "e2e_ms.mean",    "tbt_ms.p90",
                                        "tbt_ms.p99",   "slo_attainment", "chunk_hit_rate", "peak_footprint_blocks"};
    sim_compare_opts o = {.db = r->db_path, .by = by, .baseline = r->baseline, .ids = ids, .nids = r->nruns};
    if (rep_every_run_pic(r)) /* a prefix block never hits under PIC: its chunk hit rate instead */
        o.metrics = pic_metrics, o.nmetrics = 8;
    json_t *cmp = NULL;
    sim_err ignored = {{0}};
    if (sim_compare(&o, &cmp, r->baseline ? err : &ignored)) { /* a chosen baseline must exist */
        cmp = NULL;
        r->bad_option = r->baseline != NULL;
    }
    free(ids);
    size_t i, rows = 0;
    json_t *ctx;
    json_array_foreach(json_object_get(cmp, "contexts"), i, ctx) rows +=
        json_array_size(json_object_get(ctx, "comparisons"));
    if (rows == 0) json_decref(cmp), cmp = NULL;
    return cmp;
}

int rep_fig_compare(rep *r, sim_err *err)
{
    json_t *cmp = comparison(r, err);
    if (!cmp) return err->msg[0] ? -1 : 0;
    int nm = (int)json_array_size(json_object_get(cmp, "metrics")), *first = sim_xcalloc((size_t)nm, sizeof *first);
    FILE *dat = rep_open(r, "compare.dat", err);
    if (dat) write_data(dat, cmp, first);
    int rc = !dat || rep_close(r, dat, "compare.dat", true, err) ? -1 : 0;
    char title[512], *caption = NULL, *body = rc ? NULL : plot_body(r, cmp, first);
    const char *by = json_string_value(json_object_get(cmp, "by")),
               *baseline = json_string_value(json_object_get(cmp, "baseline"));
    snprintf(title, sizeof title, "Difference from %s=%s with its 95%% interval, against load", by, baseline);
    if (rc == 0)
        rc = rep_write_script(r, "compare", title, body, nm > 2 ? 1200 : REP_WIDTH,
                              figure_height(nm, legend(NULL, r, cmp)), err);
    if (rc == 0 && asprintf(&caption,
                            "Each metric's difference value - baseline (%s=%s) per load (trace.speed), as kvsim "
                            "compare --by %s gives it, with the %s; dashed: no difference. The table gives every "
                            "number; below it, where the order flips with load.",
                            by, baseline, by, json_string_value(json_object_get(cmp, "interval"))) < 0)
        caption = NULL;
    if (rc == 0) rep_section(r, "compare", title, caption ? caption : "", NULL);
    if (rc == 0) write_table(r->html, cmp);
    free(caption);
    free(body);
    free(first);
    json_decref(cmp);
    return rc < 0 ? -1 : 1;
}
