/* reports/tables.c — the tables of a report's page: the comparison of
 * every run (the config keys that differ, the summary, the best value of
 * each column highlighted), the groups of seeds with mean and interval, and
 * how to reproduce each run (its resolved config written beside the page,
 * and the command that replays it).
 *
 * "Best" is per column where higher or lower is plainly better (attainment,
 * goodput, latencies, hit rate...), compared as printed, so ties in the
 * table are ties in the highlight; a column where every run has the same
 * value highlights nothing. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reports/report_int.h"

/* Summary columns: header, summary path, printf format, which way is
 * better (+1 higher, -1 lower, 0 neither: the best is not highlighted),
 * whether only a report with a PIC run shows it (MEPIC's own metrics,
 * end-to-end latency and peak HBM, beside TTFT), and a scale (0 = 1). */
typedef struct summary_col {
    const char *head, *path, *fmt;
    int better;
    bool pic;
    double scale;
} summary_col;

static const summary_col summary_cols[] = {
    {"requests", "requests", "%.0f", 0, false, 0},
    {"completed", "completed", "%.0f", +1, false, 0},
    {"rejected", "rejected.total", "%.0f", -1, false, 0},
    {"SLO attainment", "slo_attainment", "%.3f", +1, false, 0},
    {"goodput req/s", "goodput_rps", "%.3f", +1, false, 0},
    {"TTFT mean ms", "ttft_ms.mean", "%.1f", -1, false, 0},
    {"TTFT p90 ms", "ttft_ms.p90", "%.1f", -1, false, 0},
    {"TTFT p99 ms", "ttft_ms.p99", "%.1f", -1, false, 0},
    {"E2E mean ms", "e2e_ms.mean", "%.1f", -1, true, 0},
    {"peak HBM KV GiB", "peak_footprint_bytes", "%.2f", -1, true, 1.0 / 1073741824.0},
    {"TBT mean ms", "tbt_ms.mean", "%.1f", -1, false, 0},
    {"TBT p99 ms", "tbt_ms.p99", "%.1f", -1, false, 0},
    {"hit rate blocks", "hit_rate_blocks", "%.3f", +1, false, 0},
    {"remote blocks", "remote_blocks", "%.0f", 0, false, 0},
    {"prefill GPU s/req", "prefill_gpu_s_mean", "%.3f", -1, false, 0},
    {"simulated s", "sim_seconds", "%.1f", 0, false, 0},
    {"wall s", "wall_seconds", "%.2f", 0, false, 0},
};
#define NCOLS (sizeof summary_cols / sizeof summary_cols[0])

/* Whether the report shows column c. */
static bool shown(const rep *r, size_t c) { return !summary_cols[c].pic || rep_any_run_pic(r); }

/* The column's value of a summary number, scaled. */
static double col_value(const summary_col *col, double v) { return col->scale ? v * col->scale : v; }

/* A dotted config key as a header, HTML-escaped, that may wrap only after
 * a '.' or '_' (<wbr>): "kvstore.<wbr>dram_<wbr>bytes", never mid-word. */
static void breakable_key(FILE *h, const char *key)
{
    char one[2] = {0, 0};
    for (const char *p = key; *p; p++) {
        one[0] = *p;
        sim_fput_xml(h, one);
        if ((*p == '.' || *p == '_') && p[1]) fputs("<wbr>", h);
    }
}

/* The best value of column c over the runs as printed (so that ties in
 * the table are ties here), and whether the runs differ in it at all. */
static bool best_value(const rep *r, size_t c, char *best, size_t size)
{
    const summary_col *col = &summary_cols[c];
    double top = NAN;
    bool differ = false;
    char first[64] = "", text[64];
    for (int i = 0; i < r->nruns && col->better; i++) {
        const json_t *v = rep_json_at(r->runs[i].summary, col->path);
        if (!json_is_number(v)) continue;
        snprintf(text, sizeof text, col->fmt, col_value(col, json_number_value(v)));
        double x = atof(text);
        if (!*first) snprintf(first, sizeof first, "%s", text);
        differ = differ || strcmp(first, text);
        if (isnan(top) || (col->better > 0 ? x > top : x < top)) top = x, snprintf(best, size, "%s", text);
    }
    return differ;
}

static void config_cells(FILE *h, const rep *r, const rep_run *run)
{
    size_t k;
    json_t *key;
    json_array_foreach(r->diff_keys, k, key)
    {
        char *v = rep_config_text(run->config, json_string_value(key), "");
        fputs("<td class=\"text\">", h);
        sim_fput_xml(h, v);
        fputs("</td>", h);
        free(v);
    }
}

/* Whether the seed is among the config keys that differ: then its column
 * is theirs, and the last one (config hash, fingerprint, seed) leaves it out. */
static bool seed_differs(const rep *r)
{
    size_t k;
    json_t *key;
    json_array_foreach(r->diff_keys, k, key) if (!strcmp(json_string_value(key), "seed")) return true;
    return false;
}

/* run | the differing config keys | summary | config hash, fingerprint, seed */
static void comparison_row(FILE *h, const rep *r, const rep_run *run, char best[][64])
{
    fprintf(h, "<tr data-run=\"%lld\"><td><a href=\"#reproduce-%lld\">#%lld</a></td>", (long long)run->id,
            (long long)run->id, (long long)run->id);
    config_cells(h, r, run);
    for (size_t c = 0; c < NCOLS; c++) {
        if (!shown(r, c)) continue;
        const json_t *v = rep_json_at(run->summary, summary_cols[c].path);
        char text[64] = "—"; /* null: undefined (e.g. a TTFT with no request completed), never best */
        if (json_is_number(v))
            snprintf(text, sizeof text, summary_cols[c].fmt, col_value(&summary_cols[c], json_number_value(v)));
        fprintf(h, "<td%s>%s</td>", json_is_number(v) && !strcmp(text, best[c]) ? " class=\"best\"" : "", text);
    }
    fputs("<td class=\"text\"><code>", h);
    sim_fput_xml(h, run->hash);
    fputs("</code></td><td class=\"text\"><code>", h);
    sim_fput_xml(h, run->fp);
    fputs("</code></td>", h);
    if (!seed_differs(r)) fprintf(h, "<td>%lld</td>", (long long)run->seed);
    fputs("</tr>\n", h);
}

void rep_comparison_table(rep *r)
{
    FILE *h = r->html;
    fputs("<section id=\"runs\">\n<h2>Runs</h2>\n<p>Summary of every run (the run number links to how to "
          "reproduce it; the best value of a column, where higher or lower is better, is highlighted)",
          h);
    fputs(json_array_size(r->diff_keys) ? "; the columns after the run are the config keys whose values differ "
                                          "between the runs (every other key is the same).</p>\n"
                                        : "; the runs share one config.</p>\n",
          h);
    fputs("<div class=\"scroll\"><table id=\"comparison\">\n<tr><th>run</th>", h);
    size_t k;
    json_t *key;
    json_array_foreach(r->diff_keys, k, key)
    {
        fputs("<th>", h);
        breakable_key(h, json_string_value(key));
        fputs("</th>", h);
    }
    for (size_t c = 0; c < NCOLS; c++)
        if (shown(r, c)) fprintf(h, "<th>%s</th>", summary_cols[c].head);
    fputs(seed_differs(r) ? "<th>config hash</th><th>trace fingerprint</th></tr>\n"
                          : "<th>config hash</th><th>trace fingerprint</th><th>seed</th></tr>\n",
          h);
    char best[NCOLS][64];
    for (size_t c = 0; c < NCOLS; c++)
        if (!best_value(r, c, best[c], sizeof best[c])) best[c][0] = 0;
    for (int i = 0; i < r->nruns; i++) comparison_row(h, r, &r->runs[i], best);
    fputs("</table></div>\n</section>\n", h);
}

/* "mean ± half-width" (95% CI) or "mean [min, max]" (fewer than 3 seeds). */
static void stat_cell(FILE *h, const rep *r, const rep_group *g, const summary_col *col)
{
    rep_stat s = rep_group_stat(r, g, col->path);
    char m[64], lo[64], hi[64];
    fputs("<td>", h);
    if (s.n) {
        snprintf(m, sizeof m, col->fmt, col_value(col, s.mean));
        snprintf(lo, sizeof lo, col->fmt, col_value(col, s.ci ? (s.hi - s.lo) / 2 : s.lo));
        snprintf(hi, sizeof hi, col->fmt, col_value(col, s.hi));
        if (s.ci) fprintf(h, "%s ± %s", m, lo);
        else fprintf(h, "%s [%s, %s]", m, lo, hi);
    } else {
        fputs("—", h); /* no run of the group has the number */
    }
    fputs("</td>", h);
}

/* What the seeds of the groups vary (their runs' trace.resample, docs/trace.md):
 * whether the intervals cover the workload's variability or only the noise. */
static void seeds_cover(const rep *r, FILE *h)
{
    static const char *const kinds[] = {"none", "poisson", "sessions"};
    bool seen[3] = {false}, other = false;
    for (int g = 0; g < r->ngroups; g++)
        for (int i = 0; r->groups[g].n > 1 && i < r->groups[g].n; i++) {
            char *v = rep_config_text(r->runs[r->groups[g].runs[i]].config, "trace.resample", "none");
            int k = 0;
            while (k < 3 && strcmp(v, kinds[k])) k++;
            if (k < 3) seen[k] = true;
            else other = true;
            free(v);
        }
    fputs("<p id=\"seeds-cover\">What the seeds vary, and so what the intervals and the figures' bands cover: ", h);
    if (seen[0] && !seen[1] && !seen[2] && !other)
        fputs("the cost model's noise (<code>cost.noise</code>, the estimators' profile samples) and seeded "
              "policies only; every seed replays the same workload (<code>trace.resample</code> = none), so they "
              "do not cover workload variability. Set <code>trace.resample</code> to poisson or sessions for "
              "that.</p>\n",
              h);
    else if (!seen[0] && !other)
        fprintf(h,
                "the workload too (<code>trace.resample</code> = %s%s%s: %s), besides the cost model's noise and "
                "seeded policies, so they cover workload variability.</p>\n",
                seen[1] ? "poisson" : "", seen[1] && seen[2] ? ", " : "", seen[2] ? "sessions" : "",
                seen[1] && !seen[2]   ? "arrivals redrawn as a Poisson process, sessions kept"
                : seen[2] && !seen[1] ? "sessions bootstrapped"
                                      : "per group as its config says");
    else
        fputs("it differs between groups: some replay the same workload in every seed (<code>trace.resample</code> = "
              "none: the noise only), others resample it; compare their intervals with care.</p>\n",
              h);
}

void rep_groups_table(rep *r)
{
    bool seeds = false;
    for (int g = 0; g < r->ngroups; g++) seeds = seeds || r->groups[g].n > 1;
    if (!seeds) return;
    FILE *h = r->html;
    fputs("<section id=\"groups\">\n<h2>Groups of seeds</h2>\n<p>Runs whose configs differ only in the seed, as one "
          "row: the mean over seeds ± the half-width of its 95% confidence interval (Student t) from 3 seeds, "
          "[min, max] below.</p>\n",
          h);
    seeds_cover(r, h);
    fputs("<div class=\"scroll\"><table id=\"groups-table\">\n<tr><th>group</th><th>seeds</th><th>runs</th>", h);
    for (size_t c = 0; c < NCOLS; c++)
        if (shown(r, c)) fprintf(h, "<th>%s</th>", summary_cols[c].head);
    fputs("</tr>\n", h);
    for (int g = 0; g < r->ngroups; g++) {
        const rep_group *grp = &r->groups[g];
        fputs("<tr><td class=\"text label\">", h);
        sim_fput_xml(h, grp->label);
        fprintf(h, "</td><td>%d</td><td class=\"text\">", grp->n);
        for (int i = 0; i < grp->n; i++) fprintf(h, "%s#%lld", i ? " " : "", (long long)r->runs[grp->runs[i]].id);
        fputs("</td>", h);
        for (size_t c = 0; c < NCOLS; c++)
            if (shown(r, c)) stat_cell(h, r, grp, &summary_cols[c]);
        fputs("</tr>\n", h);
    }
    fputs("</table></div>\n</section>\n", h);
}

/* DIR/configs/runID.json: the run's resolved config, as the database holds it. */
static int write_config(rep *r, const rep_run *run, sim_err *err)
{
    char name[64];
    if (mkdirat(r->stage_fd, "configs", 0777) != 0 && errno != EEXIST) {
        r->unwritable = true;
        return sim_errf(err, "cannot create %s/configs: %s", r->dir, strerror(errno));
    }
    snprintf(name, sizeof name, "configs/run%lld.json", (long long)run->id);
    FILE *f = rep_open(r, name, err);
    if (!f) return -1;
    json_dumpf(run->config, f, JSON_INDENT(2) | JSON_SORT_KEYS); /* a failed write shows at close */
    return rep_close(r, f, name, true, err);
}

/* A run whose trace is not readable from here: a `kvsim validate` run's
 * workload is generated for the run into a temporary file and deleted
 * after it (its runs row names the experiment instead), so the command
 * that replays it is validate's. */
static void trace_gone(FILE *h, const rep_run *run, const char *path)
{
    fputs(" — its trace, <code>", h);
    sim_fput_xml(h, path);
    fputs("</code>, is not readable from here", h);
    if (!run->trace_path || !strcmp(run->trace_path, path) || access(run->trace_path, F_OK) == 0) {
        fputs(": run the command where it is", h);
        return;
    }
    fputs(" (a <code>kvsim validate</code> run generates its workload and deletes it after the run; <code>kvsim "
          "validate --measurements FILE --only ",
          h);
    char *id = sim_sh_word(run->trace_path);
    sim_fput_xml(h, id);
    free(id);
    fputs("</code> replays experiment <code>", h);
    sim_fput_xml(h, run->trace_path);
    fputs("</code> of the measurements FILE again)", h);
}

int rep_reproduce(rep *r, sim_err *err)
{
    FILE *h = r->html;
    fputs("<section id=\"reproduce\">\n<h2>Reproduce</h2>\n<p>Each run's resolved config (every key, the trace "
          "path and the seed included) is in <code>configs/runID.json</code> beside this page; the command, run "
          "from the directory the report and the runs were made from (where the trace path resolves), replays it and "
          "records it as a new "
          "run with the same config hash.</p>\n<ul>\n",
          h);
    for (int i = 0; i < r->nruns; i++) {
        const rep_run *run = &r->runs[i];
        if (write_config(r, run, err)) return -1;
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/configs/run%lld.json", r->dir, (long long)run->id);
        char *word = sim_sh_word(path); /* a folder with a space or $(...) pastes as one word */
        fprintf(h, "<li id=\"reproduce-%lld\">#%lld: <code>kvsim run --config <a href=\"configs/run%lld.json\">",
                (long long)run->id, (long long)run->id, (long long)run->id);
        sim_fput_xml(h, word);
        fputs("</a> --db results.db</code> (config hash <code>", h);
        sim_fput_xml(h, run->hash);
        fputs("</code>, trace fingerprint <code>", h);
        sim_fput_xml(h, run->fp);
        fputs("</code>)", h);
        const json_t *tp = rep_json_at(run->config, "trace.path");
        if (json_is_string(tp) && access(json_string_value(tp), R_OK)) trace_gone(h, run, json_string_value(tp));
        fputs("</li>\n", h);
        free(word);
    }
    fputs("</ul>\n</section>\n", h);
    return 0;
}
