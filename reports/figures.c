/* reports/figures.c — the figures of `kvsim report` (see reports/report_int.h).
 *
 * Each figure queries the results database with prepared statements, writes
 * its data file (tab-separated; one gnuplot index block per series, blocks
 * separated by two blank lines, a "#" line naming each block) and the gnuplot
 * body that plots it, and adds its section to the page. A figure whose data
 * is absent from the database (no hitrate table rows, no role changes, no
 * replica samples) is left out. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_int.h"

static const char *col_text(sqlite3_stmt *st, int i);

/* ---- hit rate vs capacity (Mooncake Fig. 16) ---------------------------------------- */

/* Curves: the newest hitrate id of each (trace, policy, setup). */
static const char hitrate_curves_sql[] =
    "SELECT MAX(id), trace_fingerprint, trace_path, policy, setup FROM hitrate WHERE capacity_tokens IS NOT NULL"
    " GROUP BY trace_fingerprint, policy, setup ORDER BY trace_fingerprint, policy, setup";
static const char hitrate_points_sql[] =
    "SELECT capacity_tokens, hit_rate_blocks, hit_rate_tokens FROM hitrate WHERE id=?1 AND policy=?2 AND setup=?3"
    " AND capacity_tokens IS NOT NULL ORDER BY capacity_tokens";
static const char hitrate_max_sql[] =
    "SELECT trace_fingerprint, trace_path, MAX(hit_rate_blocks), MAX(hit_rate_tokens) FROM hitrate"
    " WHERE capacity_tokens IS NULL GROUP BY trace_fingerprint ORDER BY trace_fingerprint";

static const char *col_text(sqlite3_stmt *st, int i)
{
    const char *s = (const char *)sqlite3_column_text(st, i);
    return s ? s : "";
}

typedef struct hr_curve {
    int64_t id;
    char *fp, *path, *policy, *setup;
} hr_curve;

static int load_curves(rep *r, hr_curve **out, int *n, sim_err *err)
{
    sqlite3_stmt *st = rep_prepare(r, hitrate_curves_sql, err);
    if (!st) return -1;
    int cap = 8;
    *out = sim_xcalloc((size_t)cap, sizeof **out);
    for (*n = 0; sqlite3_step(st) == SQLITE_ROW; (*n)++) {
        if (*n == cap) *out = sim_xrealloc(*out, (size_t)(cap *= 2) * sizeof **out);
        (*out)[*n] = (hr_curve){.id = sqlite3_column_int64(st, 0),
                                .fp = sim_xstrdup(col_text(st, 1)),
                                .path = sim_xstrdup(col_text(st, 2)),
                                .policy = sim_xstrdup(col_text(st, 3)),
                                .setup = sim_xstrdup(col_text(st, 4))};
    }
    sqlite3_finalize(st);
    return 0;
}

static void free_curves(hr_curve *c, int n)
{
    for (int i = 0; i < n; i++) free(c[i].fp), free(c[i].path), free(c[i].policy), free(c[i].setup);
    free(c);
}

/* Whether the ", "-separated setup has the part p[0..len). */
static bool has_part(const char *setup, const char *p, size_t len)
{
    for (const char *s = setup; *s;) {
        size_t n = strcspn(s, ",");
        if (n == len && !strncmp(s, p, len)) return true;
        s += n;
        while (*s == ',' || *s == ' ') s++;
    }
    return false;
}

/* The parts of curve i's setup that some other curve lacks (common parts
 * when `common`), joined by ", ". */
static void setup_parts(const hr_curve *c, int n, int i, bool common, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = 0;
    for (const char *s = c[i].setup; *s;) {
        size_t len = strcspn(s, ",");
        bool shared = true;
        for (int k = 0; k < n && shared; k++) shared = has_part(c[k].setup, s, len);
        if (shared == common && used < size)
            used += (size_t)snprintf(buf + used, size - used, "%s%.*s", used ? ", " : "", (int)len, s);
        s += len;
        while (*s == ',' || *s == ' ') s++;
    }
}

/* The data's extent: capacities (x) and the highest hit rate (y). */
typedef struct hr_extent {
    double lo, hi, ymax;
} hr_extent;

static int write_hitrate_curve(rep *r, FILE *dat, const hr_curve *c, hr_extent *x, sim_err *err)
{
    sqlite3_stmt *pts = rep_prepare(r, hitrate_points_sql, err);
    if (!pts) return -1;
    sqlite3_bind_int64(pts, 1, c->id);
    sqlite3_bind_text(pts, 2, c->policy, -1, SQLITE_STATIC);
    sqlite3_bind_text(pts, 3, c->setup, -1, SQLITE_STATIC);
    fprintf(dat, "# hitrate id %lld: trace ", (long long)c->id);
    rep_dat_text(dat, c->path);
    fputs(" (", dat);
    rep_dat_text(dat, c->fp);
    fputs("), ", dat);
    rep_dat_text(dat, *c->setup ? c->setup : c->policy);
    fputs("\n# capacity_tokens\thit_rate_blocks\thit_rate_tokens\n", dat);
    while (sqlite3_step(pts) == SQLITE_ROW) {
        double cap = sqlite3_column_double(pts, 0);
        if (cap > 0 && cap < x->lo) x->lo = cap;
        if (cap > x->hi) x->hi = cap;
        x->ymax = fmax(x->ymax, sqlite3_column_double(pts, 1));
        fprintf(dat, "%.6g\t%.6g\t%.6g\n", cap, sqlite3_column_double(pts, 1), sqlite3_column_double(pts, 2));
    }
    fputs("\n\n", dat);
    sqlite3_finalize(pts);
    return 0;
}

/* The infinite-cache maxima as flat two-point lines across the capacity range. */
static int write_hitrate_max(rep *r, FILE *dat, FILE *b, FILE *caption, int *index, hr_extent *x, sim_err *err)
{
    double lo = x->lo, hi = x->hi;
    sqlite3_stmt *st = rep_prepare(r, hitrate_max_sql, err);
    if (!st) return -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        double m = sqlite3_column_double(st, 2);
        x->ymax = fmax(x->ymax, m);
        fputs("# infinite cache: trace ", dat);
        rep_dat_text(dat, col_text(st, 1));
        fputs(" (", dat);
        rep_dat_text(dat, col_text(st, 0));
        fprintf(dat, ")\n%.6g\t%.6g\n%.6g\t%.6g\n\n\n", lo, m, hi, m);
        char title[128];
        snprintf(title, sizeof title, "infinite cache (%.3f), trace %.8s", m, col_text(st, 0));
        rep_plot_clause(b, *index == 0, "hitrate.dat", *index, "1:2",
                        "lines dashtype 2 linewidth 2 linecolor rgb \"black\"", title);
        fprintf(caption, " Infinite cache of trace %s (fingerprint %s): %.4f.", col_text(st, 1), col_text(st, 0), m);
        (*index)++;
    }
    sqlite3_finalize(st);
    return 0;
}

/* Legends name only what differs between the curves; the caption says the
 * rest and where each curve comes from. */
static int hitrate_plots(rep *r, FILE *dat, FILE *plot, FILE *caption, int *index, hr_extent *x, sim_err *err)
{
    hr_curve *c = NULL;
    int n = 0, rc = load_curves(r, &c, &n, err);
    char title[256];
    if (rc == 0 && n) {
        setup_parts(c, n, 0, true, title, sizeof title);
        if (*title) fprintf(caption, " Every curve: %s.", title);
    }
    for (int i = 0; rc == 0 && i < n; i++) {
        rc = write_hitrate_curve(r, dat, &c[i], x, err);
        setup_parts(c, n, i, false, title, sizeof title);
        if (!*title) snprintf(title, sizeof title, "%s", c[i].policy);
        if (strcmp(c[i].fp, c[0].fp))
            snprintf(title + strlen(title), sizeof title - strlen(title), ", trace %.8s", c[i].fp);
        char style[96];
        snprintf(style, sizeof style, "linespoints linewidth 2 pointtype 7 linecolor rgb \"%s\"", rep_color(i));
        rep_plot_clause(plot, *index == 0, "hitrate.dat", *index, "1:2", style, title);
        fprintf(caption, " Curve \"%s\": hitrate id %lld, trace %s (fingerprint %s).", title, (long long)c[i].id,
                c[i].path, c[i].fp);
        (*index)++;
    }
    if (rc == 0 && *index > 0) rc = write_hitrate_max(r, dat, plot, caption, index, x, err);
    free_curves(c, n);
    return rc;
}

static const char hitrate_settings[] = "set title figure_title\n"
                                       "set xlabel \"cache capacity per node (tokens of KV)\"\n"
                                       "set ylabel \"prefix hit rate (blocks)\"\n"
                                       "set logscale x 10\n"
                                       "set format x \"%%.0s%%c\"\n"
                                       "set xrange [%g:%g]\n"
                                       "set yrange [0:%g]\n"
                                       "set grid\n"
                                       "set key top left\n";

/* The plotted curves' model, when they all share one: its KV bytes per
 * token gives a second capacity axis in bytes (top), over the same span. */
static const char hitrate_bytes_sql[] =
    "SELECT MIN(kv_bytes_per_token), MAX(kv_bytes_per_token), MIN(model), COUNT(*) - COUNT(kv_bytes_per_token)"
    " FROM hitrate WHERE id IN (SELECT MAX(id) FROM hitrate WHERE capacity_tokens IS NOT NULL"
    " GROUP BY trace_fingerprint, policy, setup)";

static void hitrate_bytes_axis(rep *r, FILE *b, double lo, double hi)
{
    sqlite3_stmt *st = rep_prepare(r, hitrate_bytes_sql, NULL);
    if (st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL &&
        sqlite3_column_double(st, 0) == sqlite3_column_double(st, 1) && sqlite3_column_int64(st, 3) == 0) {
        double bpt = sqlite3_column_double(st, 0);
        char label[512];
        snprintf(label, sizeof label, "cache capacity per node (bytes of KV: %s, %.0f KiB/token)", col_text(st, 2),
                 bpt / 1024);
        fprintf(b,
                "set logscale x2 10\nset x2range [%.17g:%.17g]\nset x2tics\nset format x2 \"%%.0s%%cB\"\nset x2label ",
                lo * bpt, hi * bpt);
        rep_gp_string(b, label);
        fputs("\nset xtics nomirror\n", b);
    }
    sqlite3_finalize(st);
}

/* Axes fitted to the data: capacities with a fifth of a decade's margin,
 * hit rate from 0 to 15% above the highest point (1 at most). */
static void hitrate_settings_write(rep *r, FILE *b, hr_extent x)
{
    double top = fmin(1, ceil(x.ymax * 1.15 * 20) / 20);
    fprintf(b, hitrate_settings, x.lo / 1.6, x.hi * 1.6, top > 0 ? top : 1);
    hitrate_bytes_axis(r, b, x.lo / 1.6, x.hi * 1.6); /* the same span: log axes align */
}

int rep_fig_hitrate(rep *r, sim_err *err)
{
    if (!rep_table_exists(r, "hitrate")) return 0;
    FILE *dat = rep_open(r, "hitrate.dat", err);
    if (!dat) return -1;
    rep_body plot, caption;
    rep_body_open(&plot);
    rep_body_open(&caption);
    fputs("Prefix hit rate of a cache-only replay (kvsim hitrate --db) against the cache capacity per node; dashed: "
          "the trace's infinite-cache maximum.",
          caption.f);
    hr_extent x = {INFINITY, 0, 0};
    int index = 0, rc = hitrate_plots(r, dat, plot.f, caption.f, &index, &x, err);
    if (rep_close(r, dat, "hitrate.dat", rc == 0 && index > 0, err)) rc = -1; /* nothing to plot: no file */
    fclose(caption.f);
    fclose(plot.f);
    if (rc == 0 && index > 0) {
        rep_body b;
        rep_body_open(&b);
        hitrate_settings_write(r, b.f, x);
        fprintf(b.f, "%s\n", plot.text);
        rc = rep_body_finish(r, &b, "hitrate", "Hit rate vs cache capacity", REP_WIDTH, REP_HEIGHT, err);
        if (rc == 0) rep_section(r, "hitrate", "Hit rate vs cache capacity", caption.text, NULL);
    }
    free(plot.text);
    free(caption.text);
    return rc ? -1 : index > 0;
}

/* ---- per-run timelines: load (Fig. 6/7), roles (Fig. 8), replicas (Fig. 18) --------- */

#define MAX_INSTANCE_LINES 4 /* more instances of a role: mean and min-max band */
/* A run with more sample times than LOAD_BINS * 2 (an hour sampled every
 * second) is drawn over LOAD_BINS time bins: a line per sample would be
 * thousands of spikes no reader can follow. Each bin shows the mean load of
 * the role's instances over the bin and, as an envelope, the least and the
 * most any instance had in it, so a short overload still shows. */
#define LOAD_BINS          300

/* More than MAX_INSTANCE_LINES instances, or a long run (bin_ms > 0): per
 * sample time (or per bin of bin_ms) the mean load of the role's instances,
 * with a band from their minimum to their maximum. Returns the number of
 * instances. */
static int write_role_band(rep *r, FILE *dat, const rep_run *run, const char *role, int ninst, double bin_ms,
                           int *next_index, FILE *plot, const char *file, sim_err *err)
{
    sqlite3_stmt *st =
        rep_prepare(r,
                    bin_ms > 0 ? "SELECT (CAST(t_ms / ?3 AS INTEGER) + 0.5) * ?3, AVG(load), MIN(load), MAX(load) FROM"
                                 " samples WHERE run_id=?1 AND role=?2 GROUP BY CAST(t_ms / ?3 AS INTEGER) ORDER BY 1"
                               : "SELECT t_ms, AVG(load), MIN(load), MAX(load) FROM samples WHERE run_id=?1 AND"
                                 " role=?2 GROUP BY t_ms ORDER BY t_ms",
                    err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, run->id);
    sqlite3_bind_text(st, 2, role, -1, SQLITE_STATIC);
    if (bin_ms > 0) sqlite3_bind_double(st, 3, bin_ms);
    fputs("# ", dat);
    rep_dat_text(dat, role);
    fputs(" load over its instances", dat);
    if (bin_ms > 0) fprintf(dat, " and bins of %g ms", bin_ms);
    fputs(": t_ms\tmean\tmin\tmax\n", dat);
    while (sqlite3_step(st) == SQLITE_ROW)
        fprintf(dat, "%.6g\t%.6g\t%.6g\t%.6g\n", sqlite3_column_double(st, 0), sqlite3_column_double(st, 1),
                sqlite3_column_double(st, 2), sqlite3_column_double(st, 3));
    fputs("\n\n", dat);
    sqlite3_finalize(st);
    char title[96], style[128];
    if (bin_ms > 0)
        snprintf(title, sizeof title, "min-max over %d instance%s, %.3g s bins", ninst, ninst > 1 ? "s" : "",
                 bin_ms / 1e3);
    else snprintf(title, sizeof title, "min-max over %d instances", ninst);
    snprintf(style, sizeof style, "filledcurves fillstyle transparent solid 0.25 noborder linecolor rgb \"%s\"",
             rep_color(0));
    rep_plot_clause(plot, false, file, *next_index, "($1/1000):3:4", style, title);
    snprintf(style, sizeof style, "lines linewidth 2 linecolor rgb \"%s\"", rep_color(0));
    rep_plot_clause(plot, false, file, (*next_index)++, "($1/1000):2", style,
                    bin_ms > 0 ? "mean over instances and bin" : "mean over instances");
    return ninst;
}

/* One block per instance that ever had `role`: its load samples while in
 * that role, a blank line (a gap in the line) where it had another role;
 * for many instances the band of write_role_band instead. Returns the
 * number of instances. */
static int write_role_loads(rep *r, FILE *dat, const rep_run *run, const char *role, int *next_index, FILE *plot,
                            const char *file, sim_err *err)
{
    int ninst =
        (int)rep_count(r, "SELECT COUNT(DISTINCT instance) FROM samples WHERE run_id=?1 AND role=?2", run->id, role);
    int64_t times = rep_count(r, "SELECT COUNT(DISTINCT t_ms) FROM samples WHERE run_id=?1", run->id, NULL);
    double bin_ms = 0;
    if (times > 2 * LOAD_BINS)
        bin_ms = ceil(
            (double)rep_count(r, "SELECT CAST(MAX(t_ms) AS INTEGER) + 1 FROM samples WHERE run_id=?1", run->id, NULL) /
            LOAD_BINS);
    if (ninst > MAX_INSTANCE_LINES || bin_ms > 0)
        return write_role_band(r, dat, run, role, ninst, bin_ms, next_index, plot, file, err);
    sqlite3_stmt *st =
        rep_prepare(r,
                    "SELECT instance, t_ms, role = ?2, load FROM samples WHERE run_id=?1 AND instance IN"
                    " (SELECT DISTINCT instance FROM samples WHERE run_id=?1 AND role=?2) ORDER BY instance, t_ms",
                    err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, run->id);
    sqlite3_bind_text(st, 2, role, -1, SQLITE_STATIC);
    int inst = -1, count = 0;
    bool in_segment = false;
    char title[64], style[96];
    while (sqlite3_step(st) == SQLITE_ROW) {
        int i = sqlite3_column_int(st, 0);
        if (i != inst) {
            if (inst >= 0) fputs("\n\n", dat);
            fputs("# ", dat);
            rep_dat_text(dat, role);
            fprintf(dat, " load of instance %d\n", i);
            snprintf(title, sizeof title, "instance %d", i);
            snprintf(style, sizeof style, "lines linewidth 1.5 linecolor rgb \"%s\"", rep_color(count));
            rep_plot_clause(plot, false, file, (*next_index)++, "($1/1000):2", style, title);
            inst = i;
            count++;
            in_segment = false;
        }
        bool here = sqlite3_column_int(st, 2);
        if (here) fprintf(dat, "%.6g\t%.6g\n", sqlite3_column_double(st, 1), sqlite3_column_double(st, 3));
        else if (in_segment) fputc('\n', dat);
        in_segment = here;
    }
    if (inst >= 0) fputs("\n\n", dat);
    sqlite3_finalize(st);
    return count;
}

/* Rejected requests by stage, one block each, as marks at load 0 at their
 * arrival time on every panel. */
static int write_rejections(rep *r, FILE *dat, const rep_run *run, int *next_index, FILE **panels, int npanels,
                            const char *file, sim_err *err)
{
    static const char *const stages[] = {"at_arrival", "after_prefill", "ttft_slo"};
    static const char *const marks[] = {"pointtype 2 linecolor rgb \"#c00000\"",
                                        "pointtype 6 linecolor rgb \"#ff8c00\"",
                                        "pointtype 8 linecolor rgb \"#7030a0\""};
    sqlite3_stmt *st =
        rep_prepare(r, "SELECT arrival_ms FROM requests WHERE run_id=?1 AND stage=?2 ORDER BY arrival_ms", err);
    if (!st) return -1;
    for (size_t s = 0; s < sizeof stages / sizeof stages[0]; s++) {
        sqlite3_bind_int64(st, 1, run->id);
        sqlite3_bind_text(st, 2, stages[s], -1, SQLITE_STATIC);
        int64_t n = 0;
        for (; sqlite3_step(st) == SQLITE_ROW; n++) {
            if (n == 0) fprintf(dat, "# rejected %s: arrival_ms\n", stages[s]);
            fprintf(dat, "%.6g\t0\n", sqlite3_column_double(st, 0));
        }
        sqlite3_reset(st);
        if (!n) continue;
        fputs("\n\n", dat);
        char title[64], style[96];
        snprintf(title, sizeof title, "rejected %s (%lld)", stages[s], (long long)n);
        snprintf(style, sizeof style, "points pointsize 0.6 %s", marks[s]);
        for (int p = 0; p < npanels; p++)
            rep_plot_clause(panels[p], false, file, *next_index, "($1/1000):2", style, title);
        (*next_index)++;
    }
    sqlite3_finalize(st);
    return 0;
}

/* Decode-memory preemptions (docs/definitions.md), as marks at load 0 on
 * the decode panel at the sample times where an instance's count of
 * preempted batch members grew; nothing for a run without any (or a
 * results database from before the column). */
static int write_preemptions(rep *r, FILE *dat, const rep_run *run, int *next_index, FILE *panel, const char *file,
                             sim_err *err)
{
    if (rep_count(r, "SELECT COUNT(*) FROM pragma_table_info('samples') WHERE name = 'preemptions'", 0, NULL) == 0)
        return 0;
    sqlite3_stmt *st = rep_prepare(r,
                                   "SELECT t_ms, grew FROM (SELECT t_ms, preemptions - LAG(preemptions, 1, 0)"
                                   " OVER (PARTITION BY instance ORDER BY t_ms) AS grew FROM samples WHERE run_id=?1"
                                   " AND role = 'decode') WHERE grew > 0 ORDER BY t_ms",
                                   err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, run->id);
    int64_t n = 0, total = 0;
    for (; sqlite3_step(st) == SQLITE_ROW; n++) {
        if (n == 0) fputs("# decode preemptions: t_ms (a sample where an instance's count grew)\tgrew by\n", dat);
        fprintf(dat, "%.6g\t0\t%lld\n", sqlite3_column_double(st, 0), (long long)sqlite3_column_int64(st, 1));
        total += sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    if (!n) return 0;
    fputs("\n\n", dat);
    char title[64];
    snprintf(title, sizeof title, "preempted (%lld)", (long long)total);
    rep_plot_clause(panel, false, file, (*next_index)++, "($1/1000):2",
                    "points pointsize 0.8 pointtype 12 linecolor rgb \"#1f4e79\"", title);
    return 0;
}

static const char load_panel[] =
    "set xlabel \"time (s)\"\n"
    "set ylabel %s\n"
    "set title %s\n"
    "set grid\n"
    "set key outside right top\n"
    "set yrange [0:*]\n"
    "set xrange [0:%g]\n"
    "plot 1 with lines dashtype 2 linewidth 2 linecolor rgb \"#c00000\" title \"SLO (load 1)\"";

/* Two panels, prefill and decode instances, each with the SLO (load 1); a
 * panel with no instance of its role gets no rejection marks either. */
static int write_load(rep *r, const rep_run *run, FILE *dat, FILE *script, const char *file, sim_err *err)
{
    static const char *const roles[] = {"prefill", "decode"};
    rep_body panel[2];
    FILE *with_lines[2];
    int index = 0, rc = 0, nlines = 0;
    bool decode_lines = false;
    double end_s =
        (double)rep_count(r, "SELECT CAST(MAX(t_ms) AS INTEGER) FROM samples WHERE run_id=?1", run->id, NULL) /
        1e3; /* the data's end: no empty tail */
    for (int k = 0; k < 2; k++) {
        rep_body_open(&panel[k]);
        char ylabel[64], title[64];
        snprintf(ylabel, sizeof ylabel, "%s load (1 = at the SLO)", roles[k]);
        snprintf(title, sizeof title, "%s instances", roles[k]);
        char *qy = rep_gp_quote(ylabel), *qt = rep_gp_quote(title);
        fprintf(panel[k].f, load_panel, qy, qt, end_s);
        free(qy), free(qt);
        int n = rc < 0 ? 0 : write_role_loads(r, dat, run, roles[k], &index, panel[k].f, file, err);
        if (n < 0) rc = -1;
        if (n > 0) with_lines[nlines++] = panel[k].f;
        decode_lines = k == 1 && n > 0;
    }
    if (rc == 0) rc = write_rejections(r, dat, run, &index, with_lines, nlines, file, err);
    if (rc == 0 && decode_lines) rc = write_preemptions(r, dat, run, &index, panel[1].f, file, err);
    fputs("set multiplot layout 2,1 title figure_title\n", script);
    for (int k = 0; k < 2; k++) {
        fclose(panel[k].f);
        fprintf(script, "%s\n", panel[k].text);
        free(panel[k].text);
    }
    fputs("unset multiplot\n", script);
    return rc;
}

/* One block per role: the number of instances in it at every sample time
 * (0 included, so a role that empties shows as 0). */
static int write_role_counts(rep *r, const rep_run *run, FILE *dat, FILE *plot, const char *file, sim_err *err)
{
    sqlite3_stmt *roles = rep_prepare(r, "SELECT DISTINCT role FROM samples WHERE run_id=?1 ORDER BY role", err);
    sqlite3_stmt *counts =
        rep_prepare(r, "SELECT t_ms, SUM(role = ?2) FROM samples WHERE run_id=?1 GROUP BY t_ms ORDER BY t_ms", err);
    int index = 0;
    if (roles && counts) {
        sqlite3_bind_int64(roles, 1, run->id);
        sqlite3_bind_int64(counts, 1, run->id);
        for (; sqlite3_step(roles) == SQLITE_ROW; index++) {
            const char *role = col_text(roles, 0);
            fprintf(dat, "%s# instances in role ", index ? "\n\n" : "");
            rep_dat_text(dat, role);
            fputc('\n', dat);
            rep_plot_clause(plot, index == 0, file, index, "($1/1000):2", "steps linewidth 2", role);
            sqlite3_bind_text(counts, 2, role, -1, SQLITE_TRANSIENT);
            while (sqlite3_step(counts) == SQLITE_ROW)
                fprintf(dat, "%.6g\t%d\n", sqlite3_column_double(counts, 0), sqlite3_column_int(counts, 1));
            sqlite3_reset(counts);
        }
        fputc('\n', plot);
    }
    int ok = roles && counts;
    sqlite3_finalize(roles);
    sqlite3_finalize(counts);
    return ok ? 0 : -1;
}

/* ---- replicas (Mooncake Fig. 18) ---- */

/* Keys ranked by their cumulative count over all samples, as the paper
 * ranks them; the figure follows the keys at these ranks. */
static const char replica_ranks_sql[] =
    "SELECT key, rank FROM (SELECT key, ROW_NUMBER() OVER (ORDER BY SUM(count) DESC, key) AS rank"
    " FROM replicas WHERE run_id=?1 GROUP BY key) WHERE rank IN (1, 10, 100, 1000, 10000) ORDER BY rank";

/* The sample times of the run's replica table. */
static int replica_times(rep *r, const rep_run *run, double **times, int *n, sim_err *err)
{
    sqlite3_stmt *st = rep_prepare(r, "SELECT DISTINCT t_ms FROM replicas WHERE run_id=?1 ORDER BY t_ms", err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, run->id);
    int cap = 64;
    *times = sim_xmalloc((size_t)cap * sizeof **times);
    for (*n = 0; sqlite3_step(st) == SQLITE_ROW; (*n)++) {
        if (*n == cap) *times = sim_xrealloc(*times, (size_t)(cap *= 2) * sizeof **times);
        (*times)[*n] = sqlite3_column_double(st, 0);
    }
    sqlite3_finalize(st);
    return 0;
}

/* One key's counts at every sample time, from `rows` (key, t_ms, count,
 * ordered by key then time) positioned on the key's first row; leaves it on
 * the next key's first row. A sample without the key (fewer than two copies
 * then) is a gap in its line. Returns whether rows remain. */
static bool write_replica_series(FILE *dat, sqlite3_stmt *rows, const double *times, int ntimes)
{
    char *key = sim_xstrdup(col_text(rows, 0));
    bool has = true, in_segment = false;
    for (int i = 0; i < ntimes; i++) {
        bool here = has && !strcmp(col_text(rows, 0), key) && sqlite3_column_double(rows, 1) == times[i];
        if (here) {
            fprintf(dat, "%.6g\t%d\n", times[i], sqlite3_column_int(rows, 2));
            has = sqlite3_step(rows) == SQLITE_ROW;
        } else if (in_segment) {
            fputc('\n', dat);
        }
        in_segment = here;
    }
    free(key);
    return has;
}

#define REPLICA_RANKS 5 /* 1st, 10th, 100th, 1,000th, 10,000th */

/* The ranked keys, then one query for all their samples (key order). */
static int write_replicas(rep *r, const rep_run *run, FILE *dat, FILE *plot, const char *file, sim_err *err)
{
    double *times = NULL;
    int ntimes = 0, nkeys = 0, rc = -1;
    char *keys[REPLICA_RANKS] = {0};
    int ranks[REPLICA_RANKS];
    sqlite3_stmt *ranked = rep_prepare(r, replica_ranks_sql, err), *rows = NULL;
    if (ranked && replica_times(r, run, &times, &ntimes, err) == 0) {
        sqlite3_bind_int64(ranked, 1, run->id);
        for (; nkeys < REPLICA_RANKS && sqlite3_step(ranked) == SQLITE_ROW; nkeys++) {
            keys[nkeys] = sim_xstrdup(col_text(ranked, 0));
            ranks[nkeys] = sqlite3_column_int(ranked, 1);
        }
        rows = rep_prepare(r,
                           "SELECT key, t_ms, count FROM replicas WHERE run_id=?1 AND key IN (?2, ?3, ?4, ?5, ?6)"
                           " ORDER BY key, t_ms",
                           err);
    }
    if (rows) {
        rc = 0;
        sqlite3_bind_int64(rows, 1, run->id);
        for (int k = 0; k < nkeys; k++) sqlite3_bind_text(rows, k + 2, keys[k], -1, SQLITE_STATIC);
        int block[REPLICA_RANKS], nblocks = 0;
        bool more = sqlite3_step(rows) == SQLITE_ROW;
        for (; more; nblocks++) {
            int k = 0;
            while (k < nkeys - 1 && strcmp(keys[k], col_text(rows, 0))) k++;
            block[k] = nblocks;
            fprintf(dat, "%s# key ranked %d: ", nblocks ? "\n\n" : "", ranks[k]);
            rep_dat_text(dat, keys[k]);
            fputc('\n', dat);
            more = write_replica_series(dat, rows, times, ntimes);
        }
        for (int k = 0; k < nkeys; k++) { /* the legend in rank order */
            char title[64];
            snprintf(title, sizeof title, "key ranked %d", ranks[k]);
            rep_plot_clause(plot, k == 0, file, block[k], "($1/1000):2", "linespoints linewidth 2 pointtype 7", title);
        }
        fputc('\n', plot);
    }
    for (int k = 0; k < nkeys; k++) free(keys[k]);
    free(times);
    sqlite3_finalize(ranked);
    sqlite3_finalize(rows);
    return rc;
}

/* ---- the per-run timeline figures ------------------------------------------------ */

typedef struct timeline_fig {
    const char *prefix, *title, *settings, *caption; /* title: printf format of the run id */
    int height;
    bool (*has_data)(rep *r, const rep_run *run);
    int (*write)(rep *r, const rep_run *run, FILE *dat, FILE *plot, const char *file, sim_err *err);
} timeline_fig;

static bool has_samples(rep *r, const rep_run *run)
{
    return rep_count(r, "SELECT COUNT(*) FROM samples WHERE run_id=?1", run->id, NULL) > 0;
}

/* Only when some instance changed role (a PD-ratio controller at work). */
static bool has_role_changes(rep *r, const rep_run *run)
{
    return rep_count(r,
                     "SELECT COUNT(*) FROM (SELECT instance FROM samples WHERE run_id=?1 GROUP BY instance"
                     " HAVING COUNT(DISTINCT role) > 1)",
                     run->id, NULL) > 0;
}

static bool has_replicas(rep *r, const rep_run *run)
{
    return rep_table_exists(r, "replicas") &&
           rep_count(r, "SELECT COUNT(*) FROM replicas WHERE run_id=?1", run->id, NULL) > 0;
}

static const timeline_fig timeline_figs[] = {
    {"load", "Instance load over time, run #%lld", "",
     "Load of each prefill instance (estimated queue time / TTFT SLO) and decode instance (estimated iteration time "
     "/ TBT SLO) per sample period (Mooncake Fig. 6/7); marks at 0: rejected requests at their arrival, by "
     "rejection stage.",
     REP_HEIGHT_TALL, has_samples, write_load},
    {"roles", "Instance roles over time, run #%lld",
     "set title figure_title\nset xlabel \"time (s)\"\nset ylabel \"instances\"\nset grid\n"
     "set key outside right top\nset yrange [0:*]\n",
     "Number of instances in each role per sample period, as the PD-ratio controller moves instances between "
     "prefill and decode (Mooncake Fig. 8).",
     REP_HEIGHT, has_role_changes, write_role_counts},
    {"replicas", "Replicas of hot keys over time, run #%lld",
     "set title figure_title\nset xlabel \"time (s)\"\nset ylabel \"replicas\"\nset grid\n"
     "set key outside right top\nset yrange [0:*]\n",
     "Copies across the KV pool of the block keys ranked 1st, 10th, 100th, 1,000th and 10,000th by their "
     "cumulative count over all samples (Mooncake Fig. 18); only keys with two or more copies are sampled, so a "
     "gap is a sample with fewer.",
     REP_HEIGHT, has_replicas, write_replicas},
};

/* PREFIX_runID.dat and .gp and the section, when the run has the data. */
static int timeline_figure(rep *r, const rep_run *run, const timeline_fig *f, sim_err *err)
{
    if (!f->has_data(r, run)) return 0;
    char name[64], file[80], title[512];
    snprintf(name, sizeof name, "%s_run%lld", f->prefix, (long long)run->id);
    snprintf(file, sizeof file, "%s.dat", name);
    int n = snprintf(title, sizeof title, f->title, (long long)run->id);
    const char *label = r->groups[run->group].label; /* the run's config, as its group is named everywhere */
    if (strcmp(label, "all runs") && n > 0 && (size_t)n < sizeof title)
        snprintf(title + n, sizeof title - (size_t)n, ": %s", label);
    FILE *dat = rep_open(r, file, err);
    if (!dat) return -1;
    rep_body b;
    rep_body_open(&b);
    fputs(f->settings, b.f);
    int rc = f->write(r, run, dat, b.f, file, err);
    if (rep_close(r, dat, file, rc == 0, err)) rc = -1;
    if (rc) {
        fclose(b.f);
        free(b.text);
        return -1;
    }
    if (rep_body_finish(r, &b, name, title, REP_WIDTH, f->height, err)) return -1;
    rep_section(r, name, title, f->caption, run);
    return 1;
}

/* For each group, its first run (the seeds of a group tell the same story
 * over time; their spread is in the distributions and bars). */
int rep_fig_run_timelines(rep *r, sim_err *err)
{
    int made = 0;
    for (int g = 0; g < r->ngroups; g++)
        for (size_t k = 0; k < sizeof timeline_figs / sizeof timeline_figs[0]; k++) {
            int rc = timeline_figure(r, &r->runs[r->groups[g].runs[0]], &timeline_figs[k], err);
            if (rc < 0) return -1;
            made += rc;
        }
    return made > 0;
}
