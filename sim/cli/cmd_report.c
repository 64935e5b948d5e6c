/* sim/cli/cmd_report.c — `kvsim report`: parse the arguments, call
 * rep_generate (reports/report.h), print what it wrote. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report.h"
#include "sim/cli/cli.h"

static const char report_usage[] =
    "usage: kvsim report --db FILE [--runs IDS|--last N] [--where SQL] [--title TEXT] -o DIR\n"
    "\n"
    "Write DIR/index.html: a comparison table of the runs (only the config keys that\n"
    "differ between them) and figures, each as DIR/NAME.svg and DIR/NAME.png rendered\n"
    "by gnuplot from DIR/NAME.dat with the editable script DIR/NAME.gp:\n"
    "  ttft_cdf, tbt_cdf        TTFT and TBT distributions per run, with the SLOs\n"
    "  slo, latency, cache      per-run bars: SLO attainment and goodput, mean TTFT and\n"
    "                           TBT, hit rate and prefill GPU time\n"
    "  rejections               rejected requests per run (when any)\n"
    "  pic                      peak HBM KV footprint and recompute fraction per run (kvstore.pic runs)\n"
    "  ttft_qps                 mean and p90 TTFT against offered load, one curve per configuration\n"
    "                           (runs differing only in trace.speed/trace.path), with the highest load\n"
    "                           each keeps under slo.ttft_ms (a kvsim sweep over trace.speed)\n"
    "  hitrate                  hit rate vs capacity (kvsim hitrate --db), with the\n"
    "                           infinite-cache line: every setup in the database,\n"
    "                           its newest points (not filtered by --runs/--last)\n"
    "  load_runN                prefill/decode load per instance over time, rejections marked\n"
    "  roles_runN               instances per role over time (when roles change)\n"
    "  replicas_runN            replicas of the hottest keys over time (when recorded)\n"
    "A figure appears only when its data is in the database.\n"
    "\n"
    "  --db FILE          results database (kvsim run/sweep/merge --db)\n"
    "  --runs IDS         these runs, e.g. 3,7,10-12 (default: every completed run)\n"
    "  --last N           the N most recent runs\n"
    "  --where SQL        only runs for which this SQL expression over the runs table holds, e.g.\n"
    "                     \"json_extract(config_json, '$.policy.router') = 'kvcentric'\"\n"
    "  --title TEXT       page title (default: kvsim report)\n"
    "  -o, --out DIR      output directory (created when missing)\n"
    "  -h, --help         this help\n"
    "\n"
    "Exit status: 0 ok, 2 bad arguments or an unreadable database, 1 internal error\n"
    "(e.g. gnuplot missing: install gnuplot-nox).\n";

typedef rep_options report_args;

static int parse_args(int argc, char **argv, report_args *a, int *rc)
{
    static const struct option opts[] = {
        {"db", required_argument, 0, 'd'},       {"runs", required_argument, 0, 'r'},
        {"last", required_argument, 0, 'l'},     {"where", required_argument, 0, 'w'},
        {"title", required_argument, 0, 't'},    {"out", required_argument, 0, 'o'},
        {"color-by", required_argument, 0, 'c'}, {"facet-by", required_argument, 0, 'f'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0},
    };
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
        case 'h':
            fputs(report_usage, stdout);
            *rc = SIM_EXIT_OK;
            return -1;
        default: *rc = sim_usage_error("report", "unknown or incomplete option (see kvsim report --help)"); return -1;
        }
    }
    const char *bad = optind < argc        ? "unexpected argument (see kvsim report --help)"
                      : !a->db             ? "--db FILE is required"
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
        return st == REP_BAD_INPUT ? SIM_EXIT_USAGE : SIM_EXIT_INTERNAL;
    }
    printf("kvsim report: %s/index.html: %d runs, %d figures (SVG, PNG and PDF, with .dat and .gp)\n", a.dir, nruns,
           nfigures);
    return SIM_EXIT_OK;
}
