/* sim/cli/cmd_report.c — `kvsim report`: parse the arguments, call
 * rep_generate (reports/report.h), print what it wrote. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report.h"
#include "sim/cli/cli.h"

static const char report_usage[] =
    "usage: kvsim report --db FILE [--runs IDS|--last N] [--where SQL] [--color-by KEY]\n"
    "                    [--facet-by KEY] [--baseline VALUE] [--title TEXT] -o DIR\n"
    "\n"
    "Write DIR/index.html: a comparison table of the runs (only the config keys that\n"
    "differ between them, the best value of each column highlighted), a table of the\n"
    "groups of seeds (mean ± 95% CI), the command reproducing each run (its resolved\n"
    "config in DIR/configs/runID.json), and figures, each as DIR/NAME.svg, .png and\n"
    ".pdf rendered by gnuplot from DIR/NAME.dat with the editable script DIR/NAME.gp.\n"
    "\n"
    "Runs whose configs differ only in seed form a group: one line (or bar) with a\n"
    "band (or error bar) over its seeds, 95% CI from 3 seeds, min-max below. Groups\n"
    "are labelled by the keys that differ (router=kvcentric), coloured by one of them\n"
    "(Okabe-Ito colours) and split into panels by another; identical results are\n"
    "labelled as such. Figures:\n"
    "  ttft_cdf, tbt_cdf        TTFT and TBT distributions over all requests (a rejected\n"
    "                           request never gets one: a curve ends below 1), with the SLOs;\n"
    "                           past 6 curves a panel, the legend goes below the plot\n"
    "  slo, latency, cache      per group: SLO attainment and goodput, mean TTFT and\n"
    "                           TBT, hit rate and prefill GPU time (a log axis when a metric\n"
    "                           spans more than 100x; a key names the colours)\n"
    "  rejections               rejected requests per group (when any)\n"
    "  pic                      peak HBM KV footprint and recompute fraction (kvstore.pic runs)\n"
    "  pic_latency              mean end-to-end latency beside mean TTFT (kvstore.pic runs; their\n"
    "                           tables add E2E mean and peak HBM KV columns)\n"
    "  ttft_qps                 mean and p90 TTFT against offered load, one curve per configuration\n"
    "                           (runs differing only in trace.speed/trace.path), with the highest load\n"
    "                           each keeps under slo.ttft_ms (a kvsim sweep over trace.speed)\n"
    "  hitrate                  hit rate vs capacity in tokens and bytes (kvsim hitrate --db), with\n"
    "                           the infinite-cache line: every setup in the database,\n"
    "                           its newest points (not filtered by --runs/--last)\n"
    "  compare                  each metric's difference from the baseline (--baseline) with its\n"
    "                           95% interval against load, as kvsim compare --by KEY gives it\n"
    "  load_runN                prefill/decode load over time (a mean and min-max band over more\n"
    "                           than 4 instances, or over 300 time bins in a long run), rejections\n"
    "                           marked; the first run of each group\n"
    "  roles_runN               instances per role over time (when roles change)\n"
    "  replicas_runN            replicas of the hottest keys over time (when recorded)\n"
    "A figure appears only when its data is in the database.\n"
    "\n"
    "  --db FILE          results database (kvsim run/sweep/merge --db)\n"
    "  --runs IDS         these runs, e.g. 3,7,10-12 (default: every completed run)\n"
    "  --last N           the N most recent runs\n"
    "  --where SQL        only runs for which this SQL expression over the runs table holds, e.g.\n"
    "                     \"json_extract(config_json, '$.policy.router') = 'kvcentric'\"\n"
    "  --color-by KEY     the differing config key that colours lines and bars (default: the one\n"
    "                     with the most values, e.g. policy.router)\n"
    "  --facet-by KEY     the differing config key with one panel per value in the distributions\n"
    "                     (default: the one with the next most values)\n"
    "  --baseline VALUE   the compare figure's baseline value of its key (the colour key), as\n"
    "                     kvsim compare --baseline (default: the first run's, as kvsim compare)\n"
    "  --title TEXT       page title (default: kvsim report)\n"
    "  -o, --out DIR      output directory (created when missing)\n"
    "  -h, --help         this help\n"
    "\n"
    "Every file appears whole or not at all (written under a temporary name, renamed when\n"
    "complete; an image only once gnuplot finished it).\n"
    "\n"
    "Exit status: 0 ok, 2 bad arguments, an unreadable database, a --color-by/--facet-by key\n"
    "that does not differ between the runs, a --baseline no run has, or an output that\n"
    "cannot be written (disk full, file-size limit: the cause is named), 1 internal error\n"
    "(e.g. gnuplot missing: install gnuplot-nox).\n";

typedef rep_options report_args;

static int parse_args(int argc, char **argv, report_args *a, int *rc)
{
    static const struct option opts[] = {
        {"db", required_argument, 0, 'd'},
        {"runs", required_argument, 0, 'r'},
        {"last", required_argument, 0, 'l'},
        {"where", required_argument, 0, 'w'},
        {"title", required_argument, 0, 't'},
        {"out", required_argument, 0, 'o'},
        {"color-by", required_argument, 0, 'c'},
        {"facet-by", required_argument, 0, 'f'},
        {"baseline", required_argument, 0, 'b'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    if (sim_cli_once("report", argc, argv, opts, NULL)) return *rc = SIM_EXIT_USAGE, -1;
    opterr = 0;
    optind = 1;
    sim_err err = {{0}};
    for (int ch; (ch = getopt_long(argc, argv, "ho:", opts, NULL)) != -1;) {
        switch (ch) {
        case 'd': a->db = optarg; break;
        case 'r': a->runs = optarg; break;
        case 'l':
            if (sim_parse_i64(optarg, "--last", &a->last, &err) || a->last < 1)
                return *rc = sim_usage_error("report", err.msg[0] ? err.msg : "--last: expected N >= 1"), -1;
            break;
        case 't': a->title = optarg; break;
        case 'w': a->where = optarg; break;
        case 'o': a->dir = optarg; break;
        case 'c': a->color_by = optarg; break;
        case 'f': a->facet_by = optarg; break;
        case 'b': a->baseline = optarg; break;
        case 'h':
            fputs(report_usage, stdout);
            *rc = SIM_EXIT_OK;
            return -1;
        default: *rc = sim_cli_bad_option("report", argv[optind - 1]); return -1;
        }
    }
    if (optind < argc) return *rc = sim_cli_unexpected_error("report", argv[optind], "--db"), -1;
    const char *bad = !a->db               ? "--db FILE is required"
                      : !a->dir            ? "-o DIR is required"
                      : a->runs && a->last ? "--runs and --last exclude each other"
                                           : NULL;
    if (bad) return *rc = sim_usage_error("report", bad), -1;
    return 0;
}

int cmd_report(int argc, char **argv)
{
    report_args a = {0};
    int rc = SIM_EXIT_OK;
    if (parse_args(argc, argv, &a, &rc)) return rc;
    sim_err err = {{0}};
    int nruns = 0, nfigures = 0;
    rep_status st = rep_generate(&a, &nruns, &nfigures, &err);
    if (st != REP_OK) {
        fprintf(stderr, "kvsim report: %s\n", err.msg);
        return st == REP_FAILED ? SIM_EXIT_INTERNAL : SIM_EXIT_USAGE;
    }
    printf("kvsim report: %s/index.html: %d run%s, %d figure%s (SVG, PNG and PDF, with .dat and .gp)\n", a.dir, nruns,
           nruns == 1 ? "" : "s", nfigures, nfigures == 1 ? "" : "s");
    return SIM_EXIT_OK;
}
