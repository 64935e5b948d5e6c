/* reports/fig_qps.c — TTFT against offered load, one curve per
 * configuration (LMCache Fig. 5 and 7), and the highest load each keeps
 * under the TTFT target.
 *
 * A run's offered load is its requests over the span of their arrivals
 * (from its requests rows). Runs whose configs differ only in trace.speed,
 * trace.path and seed (a `kvsim sweep` over load, with seeds) form one
 * curve, named by the other keys that differ between runs; the seeds of
 * one load are one point, the mean of their loads and TTFTs. A curve is
 * drawn in its runs' group colour when the report colours by another key
 * than the load or the seed. The target is each curve's slo.ttft_ms,
 * labelled on its line; the legend says which line is the mean (solid) and
 * which the p90 (dotted); the log axis is labelled 1-2-5 (rep_log_tics).
 * The caption gives, per curve, the highest measured load with mean TTFT
 * under it, and with p90 TTFT under it. Drawn when some curve has two
 * loads or more. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_int.h"

typedef struct qps_point {
    double speed, qps, mean, p90;
    int seeds; /* runs averaged into it */
} qps_point;

typedef struct qps_curve {
    char *key;   /* config without trace.speed / trace.path / seed */
    char *label; /* the other differing keys */
    double target;
    const char *color; /* "#rrggbb" */
    qps_point *pt;
    int n;
} qps_curve;

/* Offered load of a run: requests / arrival span (s); 0 when unknown. */
static double offered_qps(rep *r, int64_t run)
{
    sqlite3_stmt *st;
    double q = 0;
    if (sqlite3_prepare_v2(r->db, "SELECT COUNT(*), MIN(arrival_ms), MAX(arrival_ms) FROM requests WHERE run_id=?1", -1,
                           &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int64(st, 1, run);
    if (sqlite3_step(st) == SQLITE_ROW) {
        double n = sqlite3_column_double(st, 0), span = sqlite3_column_double(st, 2) - sqlite3_column_double(st, 1);
        q = n > 1 && span > 0 ? (n - 1) / (span / 1e3) : 0;
    }
    sqlite3_finalize(st);
    return q;
}

static char *curve_key(const json_t *config)
{
    json_t *c = json_deep_copy(config), *t = json_object_get(c, "trace");
    json_object_del(t, "speed");
    json_object_del(t, "path");
    json_object_del(c, "seed");
    char *s = json_dumps(c, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(c);
    return s;
}

static char *curve_label(const rep *r, const rep_run *run)
{
    char label[256] = "";
    size_t k, n = 0;
    json_t *key;
    json_array_foreach(r->diff_keys, k, key)
    {
        const char *path = json_string_value(key), *dot = strrchr(path, '.');
        if (!strcmp(path, "trace.speed") || !strcmp(path, "trace.path") || !strcmp(path, "seed")) continue;
        char *text = rep_config_text(run->config, path, "-");
        n += (size_t)snprintf(label + n, n < sizeof label ? sizeof label - n : 0, "%s%s=%s", n ? " " : "",
                              dot ? dot + 1 : path, text);
        free(text);
    }
    return sim_xstrdup(n ? label : "all runs");
}

static qps_curve *curve_for(const rep *r, const rep_run *run, qps_curve **cs, int *nc)
{
    char *key = curve_key(run->config);
    for (int i = 0; i < *nc; i++)
        if (!strcmp((*cs)[i].key, key)) {
            free(key);
            return &(*cs)[i];
        }
    *cs = sim_xrealloc(*cs, (size_t)(*nc + 1) * sizeof **cs);
    qps_curve *c = &(*cs)[(*nc)++];
    bool by_group = r->color_by && strcmp(r->color_by, "trace.speed") && strcmp(r->color_by, "seed");
    *c = (qps_curve){.key = key,
                     .label = curve_label(r, run),
                     .target = rep_config_num(run, "slo.ttft_ms"),
                     .color = rep_color(by_group ? r->groups[run->group].color : *nc - 1)};
    return c;
}

static int cmp_point(const void *a, const void *b)
{
    double x = ((const qps_point *)a)->qps, y = ((const qps_point *)b)->qps;
    return (x > y) - (x < y);
}

/* A run's point into its curve: a new load, or one more seed of a load
 * the curve has (the running means of load and TTFTs). */
static void add_point(qps_curve *c, qps_point p)
{
    for (int k = 0; k < c->n; k++) {
        qps_point *q = &c->pt[k];
        if (q->speed != p.speed) continue;
        double w = 1.0 / ++q->seeds;
        q->qps += (p.qps - q->qps) * w, q->mean += (p.mean - q->mean) * w, q->p90 += (p.p90 - q->p90) * w;
        return;
    }
    c->pt = sim_xrealloc(c->pt, (size_t)(c->n + 1) * sizeof *c->pt);
    p.seeds = 1;
    c->pt[c->n++] = p;
}

static void free_curves(qps_curve *cs, int n)
{
    for (int i = 0; i < n; i++) free(cs[i].key), free(cs[i].label), free(cs[i].pt);
    free(cs);
}

/* Group the runs into curves; returns how many curves have two loads or more. */
static int gather(rep *r, qps_curve **cs, int *nc)
{
    int drawable = 0;
    for (int i = 0; i < r->nruns; i++) {
        double q = offered_qps(r, r->runs[i].id);
        if (q <= 0) continue;
        qps_curve *c = curve_for(r, &r->runs[i], cs, nc);
        add_point(c, (qps_point){.speed = rep_config_num(&r->runs[i], "trace.speed"),
                                 .qps = q,
                                 .mean = rep_summary_num(&r->runs[i], "ttft_ms.mean"),
                                 .p90 = rep_summary_num(&r->runs[i], "ttft_ms.p90")});
    }
    for (int i = 0; i < *nc; i++) {
        qsort((*cs)[i].pt, (size_t)(*cs)[i].n, sizeof *(*cs)[i].pt, cmp_point);
        drawable += (*cs)[i].n >= 2;
    }
    return drawable;
}

/* The highest load up to which every point keeps `which` (0 mean, 1 p90)
 * under the target; 0 when the lightest does not. */
static double highest_under(const qps_curve *c, int which)
{
    double best = 0;
    for (int i = 0; i < c->n; i++) {
        double v = which ? c->pt[i].p90 : c->pt[i].mean;
        if (!(v <= c->target)) break;
        best = c->pt[i].qps;
    }
    return best;
}

static void write_data(FILE *dat, const qps_curve *cs, int nc)
{
    fputs("# offered_rps\tttft_mean_ms\tttft_p90_ms\n", dat);
    for (int i = 0; i < nc; i++) {
        fputs("# ", dat);
        rep_dat_text(dat, cs[i].label);
        fputc('\n', dat);
        for (int k = 0; k < cs[i].n; k++)
            fprintf(dat, "%.6g\t%.6g\t%.6g\n", cs[i].pt[k].qps, cs[i].pt[k].mean, cs[i].pt[k].p90);
        fputs("\n\n", dat);
    }
}

/* A target more than TARGET_REACH times above every plotted value is not
 * drawn: stretching the axis to it would squeeze the curves into a strip
 * (a 30 s SLO over TTFTs of 1-3 s); the figure says where it is instead. */
#define TARGET_REACH 3.0

/* The highest plotted TTFT. */
static double data_top(const qps_curve *cs, int nc)
{
    double top = 0;
    for (int i = 0; i < nc; i++)
        for (int k = 0; k < cs[i].n; k++) top = fmax(top, fmax(cs[i].pt[k].mean, cs[i].pt[k].p90));
    return top;
}

static bool target_shown(const qps_curve *c, double top) { return c->target > 0 && c->target <= TARGET_REACH * top; }

/* The y range the curves and the targets within reach span (for the log
 * axis' tics). */
static void y_span(const qps_curve *cs, int nc, double *lo, double *hi)
{
    double top = data_top(cs, nc);
    *lo = INFINITY, *hi = 0;
    for (int i = 0; i < nc; i++) {
        if (target_shown(&cs[i], top)) *lo = fmin(*lo, cs[i].target), *hi = fmax(*hi, cs[i].target);
        for (int k = 0; k < cs[i].n; k++)
            for (int m = 0; m < 2; m++) {
                double y = m ? cs[i].pt[k].p90 : cs[i].pt[k].mean;
                if (y > 0) *lo = fmin(*lo, y), *hi = fmax(*hi, y);
            }
    }
    *lo /= 1.25, *hi *= 1.25;
}

static char *plot_body(const qps_curve *cs, int nc)
{
    char *text;
    size_t len;
    double lo, hi;
    y_span(cs, nc, &lo, &hi);
    FILE *b = open_memstream(&text, &len);
    fputs("set title figure_title\nset xlabel \"offered load (requests/s)\"\nset ylabel \"TTFT (ms, log scale)\"\n"
          "set logscale y 10\nset grid\nset key outside right top vertical Left reverse font \",9\"\n",
          b);
    if (hi > lo) fprintf(b, "set yrange [%g:%g]\n", lo, hi);
    rep_log_tics(b, "y", lo, hi);
    double top = data_top(cs, nc);
    for (int i = 0; i < nc; i++)
        if (i == 0 || cs[i].target != cs[0].target) {
            char label[96];
            if (!target_shown(&cs[i], top)) {
                snprintf(label, sizeof label, "TTFT SLO %g ms: above the range shown", cs[i].target);
                fputs("set label ", b);
                rep_gp_string(b, label);
                fprintf(b, " at graph 0.01, graph %.2f textcolor rgb \"#c00000\"\n", 0.96 - 0.05 * i);
                continue;
            }
            fprintf(b,
                    "set arrow from graph 0, first %g to graph 1, first %g nohead dashtype 2 linecolor rgb "
                    "\"#c00000\"\n",
                    cs[i].target, cs[i].target);
            snprintf(label, sizeof label, "TTFT SLO %g ms", cs[i].target);
            fputs("set label ", b);
            rep_gp_string(b, label);
            fprintf(b, " at graph 0.01, first %g offset 0, 0.6 textcolor rgb \"#c00000\"\n", cs[i].target);
        }
    for (int i = 0; i < nc; i++) {
        char style[96];
        snprintf(style, sizeof style, "linespoints linewidth 2 pointtype 7 linecolor rgb \"%s\"", cs[i].color);
        rep_plot_clause(b, i == 0, "ttft_qps.dat", i, "1:2", style, cs[i].label);
        snprintf(style, sizeof style, "lines dashtype 3 linewidth 2 linecolor rgb \"%s\"", cs[i].color);
        rep_plot_clause(b, false, "ttft_qps.dat", i, "1:3", style, NULL);
    }
    fputs(", \\\n     NaN with lines linewidth 2 linecolor rgb \"#404040\" title 'mean TTFT (solid)', \\\n"
          "     NaN with lines dashtype 3 linewidth 2 linecolor rgb \"#404040\" title 'p90 TTFT (dotted)'\n",
          b);
    fclose(b);
    return text;
}

static char *caption_text(const qps_curve *cs, int nc)
{
    char *text;
    size_t len;
    FILE *c = open_memstream(&text, &len);
    fputs("Mean TTFT (solid; p90 dotted) against offered load (requests over the span of their arrivals), one "
          "curve per configuration; dashed red: the TTFT target (slo.ttft_ms). Highest measured load keeping "
          "TTFT under the target:",
          c);
    for (int i = 0; i < nc; i++)
        fprintf(c, " %s%s: mean %.3g req/s, p90 %.3g req/s (target %g ms).", i ? "" : "", cs[i].label,
                highest_under(&cs[i], 0), highest_under(&cs[i], 1), cs[i].target);
    fclose(c);
    return text;
}

int rep_fig_ttft_qps(rep *r, sim_err *err)
{
    qps_curve *cs = NULL;
    int nc = 0;
    if (gather(r, &cs, &nc) == 0) {
        free_curves(cs, nc);
        return 0;
    }
    FILE *dat = rep_open(r, "ttft_qps.dat", err);
    if (dat) write_data(dat, cs, nc);
    if (!dat || rep_close(r, dat, "ttft_qps.dat", true, err)) {
        free_curves(cs, nc);
        return -1;
    }
    char *body = plot_body(cs, nc), *caption = caption_text(cs, nc);
    const char *title = "TTFT against offered load per configuration";
    int rc = rep_write_script(r, "ttft_qps", title, body, REP_WIDTH, 540, err);
    if (rc == 0) rep_section(r, "ttft_qps", title, caption, NULL);
    free(body);
    free(caption);
    free_curves(cs, nc);
    return rc < 0 ? -1 : 1;
}
