/* reports/fig_dynamics.c — load dynamics per policy (Mooncake Fig. 9/10;
 * issue 42 item 3): the prefill and decode pools' loads over time, one
 * panel per configuration, with the oscillation metrics of the run's
 * summary (`load_dynamics`, docs/definitions.md "Load oscillation") in the
 * panel's title and the steady-state window (`steady_state`) marked.
 *
 * A pool's load at a sample time is the mean load of its active instances
 * (the series the summary's metrics are computed over, sim/serving/
 * disagg/control.c). A long run has tens of thousands of samples, more
 * than a figure's pixels: the series is drawn as the mean over time bins,
 * at most DYN_BINS of them, so a 3,500 s run is a readable curve rather
 * than spikes. The metrics come from the summary, computed on the full
 * series, never from the binned one. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_int.h"

#define DYN_BINS   400 /* time bins a panel draws at most */
#define DYN_PANELS 6   /* configurations a figure shows at most (the first ones) */

/* Mean load of the active instances of each role per time bin of bin_ms,
 * one row per bin: t_s, prefill, decode (NaN where a role has none). */
static const char pool_sql[] =
    "SELECT CAST(t_ms / ?2 AS INTEGER) AS b, AVG(CASE WHEN role = 'prefill' THEN load END),"
    " AVG(CASE WHEN role = 'decode' THEN load END) FROM samples WHERE run_id = ?1 AND state = 'active'"
    " GROUP BY b ORDER BY b";

/* The run of group g the figure draws: its first run, when it has samples
 * and a load_dynamics summary (a disaggregated run written with --db). */
static const rep_run *dynamics_run(rep *r, int g)
{
    const rep_run *run = &r->runs[r->groups[g].runs[0]];
    if (!rep_json_at(run->summary, "load_dynamics.samples")) return NULL;
    if (rep_count(r, "SELECT COUNT(*) FROM samples WHERE run_id=?1 AND state='active'", run->id, NULL) == 0)
        return NULL;
    return run;
}

static void metric_text(char *buf, size_t size, const char *name, double v, const char *fmt)
{
    size_t n = strlen(buf);
    if (n >= size) return;
    if (isnan(v)) snprintf(buf + n, size - n, "%s n/a", name);
    else {
        snprintf(buf + n, size - n, "%s ", name);
        n = strlen(buf);
        snprintf(buf + n, size - n, fmt, v);
    }
}

/* "std P 0.111 D 0.099, peak-to-trough D 0.583, corr(P,D) -0.48, best lag 20 s corr 0.71". */
static void metrics_line(const rep_run *run, char *buf, size_t size)
{
    buf[0] = '\0';
    metric_text(buf, size, "std P", rep_summary_num(run, "load_dynamics.prefill_std"), "%.3f");
    metric_text(buf, size, " D", rep_summary_num(run, "load_dynamics.decode_std"), "%.3f");
    metric_text(buf, size, ", peak-to-trough D", rep_summary_num(run, "load_dynamics.decode_p2t"), "%.3f");
    metric_text(buf, size, ", corr(P,D)", rep_summary_num(run, "load_dynamics.corr_pd"), "%.2f");
    metric_text(buf, size, ", best lag", rep_summary_num(run, "load_dynamics.best_lag_s"), "%.0f s");
    metric_text(buf, size, " corr", rep_summary_num(run, "load_dynamics.best_lag_corr"), "%.2f");
}

/* One data block of the run's binned pool loads; the number of rows. */
static int write_series(rep *r, const rep_run *run, FILE *dat, sim_err *err)
{
    double end_ms =
        (double)rep_count(r, "SELECT CAST(MAX(t_ms) AS INTEGER) FROM samples WHERE run_id=?1", run->id, NULL);
    double bin_ms = end_ms > DYN_BINS ? ceil(end_ms / DYN_BINS) : 1;
    sqlite3_stmt *st = rep_prepare(r, pool_sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, run->id);
    sqlite3_bind_double(st, 2, bin_ms);
    fprintf(dat, "# run %lld: t_s (bin middle)\tprefill pool load\tdecode pool load (bins of %g ms)\n",
            (long long)run->id, bin_ms);
    int n = 0;
    for (; sqlite3_step(st) == SQLITE_ROW; n++) {
        double t_s = ((double)sqlite3_column_int64(st, 0) + 0.5) * bin_ms / 1e3;
        fprintf(dat, "%.6g", t_s);
        for (int k = 1; k <= 2; k++)
            if (sqlite3_column_type(st, k) == SQLITE_NULL) fputs("\tNaN", dat);
            else fprintf(dat, "\t%.6g", sqlite3_column_double(st, k));
        fputc('\n', dat);
    }
    fputs("\n\n", dat);
    sqlite3_finalize(st);
    return n;
}

/* The panel of one run: the window's edges as dashed grey lines, prefill
 * solid blue, decode dashed orange (told apart by colour and by dash). */
static void write_panel(rep_body *b, const rep *r, int g, const rep_run *run, const char *file, int index)
{
    char head[256], metrics[256];
    snprintf(head, sizeof head, "run #%lld %s", (long long)run->id, r->groups[g].label);
    metrics_line(run, metrics, sizeof metrics);
    fputs("set title ", b->f); /* two lines: gnuplot joins the quoted parts around a newline */
    rep_gp_string(b->f, head);
    fputs(" . \"\\n\" . ", b->f);
    rep_gp_string(b->f, metrics);
    fputs("\nunset arrow\n", b->f);
    double from = rep_summary_num(run, "steady_state.start_s"), to = rep_summary_num(run, "steady_state.end_s");
    for (int k = 0; k < 2 && !isnan(from) && !isnan(to); k++)
        fprintf(b->f, "set arrow from %.6g, graph 0 to %.6g, graph 1 nohead dashtype 3 linecolor rgb \"#808080\"\n",
                k ? to : from, k ? to : from);
    rep_plot_clause(b->f, true, file, index, "1:2", "lines linewidth 2 linecolor rgb \"#0072b2\"", "prefill pool");
    rep_plot_clause(b->f, false, file, index, "1:3", "lines linewidth 2 dashtype 2 linecolor rgb \"#e69f00\"",
                    "decode pool");
    fputc('\n', b->f);
}

static const char dyn_settings[] = "set xlabel \"time (s)\"\nset ylabel \"pool load (1 = at the SLO)\"\nset grid\n"
                                   "set key outside right top\nset yrange [0:*]\n";

int rep_fig_dynamics(rep *r, sim_err *err)
{
    int groups[DYN_PANELS], n = 0;
    for (int g = 0; g < r->ngroups && n < DYN_PANELS; g++)
        if (dynamics_run(r, g)) groups[n++] = g;
    if (n == 0) return 0;
    FILE *dat = rep_open(r, "dynamics.dat", err);
    if (!dat) return -1;
    rep_body b;
    rep_body_open(&b);
    fprintf(b.f, "%sset multiplot layout %d,1 title figure_title\n", dyn_settings, n);
    int rc = 0;
    for (int k = 0; k < n && rc == 0; k++) {
        const rep_run *run = dynamics_run(r, groups[k]);
        if (write_series(r, run, dat, err) < 0) rc = -1;
        else write_panel(&b, r, groups[k], run, "dynamics.dat", k);
    }
    fputs("unset multiplot\n", b.f);
    if (rep_close(r, dat, "dynamics.dat", rc == 0, err)) rc = -1;
    if (rc) {
        rep_body_discard(&b);
        return -1;
    }
    const char *title = "Prefill and decode pool load over time, per configuration";
    int height = REP_HEIGHT / 4 + n * (REP_HEIGHT / 2);
    if (rep_body_finish(r, &b, "dynamics", title, REP_WIDTH, height, err)) return -1;
    rep_section(r, "dynamics", title,
                "Mean load of each pool's active instances (prefill: estimated queue time / TTFT SLO; decode: the "
                "greater of estimated iteration time / TBT SLO and KV in use / HBM), averaged over time bins (at most "
                "400 a run), for the "
                "first run of each configuration (Mooncake Fig. 9/10). Dotted grey lines: the steady-state window. "
                "The metrics in each title are the run's load_dynamics over that window, on the unbinned series.",
                NULL);
    return 1;
}
