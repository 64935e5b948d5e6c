/* sim/cli/cmd_compare.c — `kvsim compare --db D --by KEY`: the difference of
 * each headline metric between groups of runs with a 95% interval, per
 * load, and where the order flips (sim/results/compare.c). */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cli/cli.h"
#include "sim/results/compare.h"

static const char compare_usage[] =
    "usage: kvsim compare --db FILE --by KEY [--baseline VALUE] [--metric M1,M2,...] [--speed S1,S2,...] [--json]\n"
    "\n"
    "Group the completed runs of a results database by the value of a config key\n"
    "(e.g. policy.router) and give, for each other value against the baseline, the\n"
    "difference of each metric (value - baseline), its 95% interval and the relative\n"
    "change, one row per load (trace.speed), and where the order flips with load.\n"
    "Runs are compared only with runs that differ in KEY, seed and trace.speed alone;\n"
    "other differing keys (e.g. cluster.scope) are compared separately.\n"
    "\n"
    "The interval is the paired t interval over the seeds both groups ran (two or\n"
    "more), else Welch's t interval, else none (one seed a side: no verdict). Seeds\n"
    "vary only what the seed drives (estimator noise, random policies): the interval\n"
    "covers that variability only, not the workload's; where they change neither\n"
    "side, it says so instead of an interval of zero width. A run with the same\n"
    "config and seed as an earlier one is counted once and named.\n"
    "\n"
    "  --db FILE         results database (kvsim run --db, kvsim sweep)\n"
    "  --by KEY          dotted config key whose values form the groups\n"
    "  --baseline VALUE  the value the others are compared with (default: the first run's)\n"
    "  --metric LIST     summary numbers (default ttft_ms.mean,ttft_ms.p90,tbt_ms.p90,\n"
    "                    tbt_ms.p99,slo_attainment,hit_rate_blocks)\n"
    "  --speed LIST      only runs at these trace.speed values (e.g. 0.5,1,1.5,2)\n"
    "  --json            one JSON object instead of the tables\n"
    "  -h, --help        this help\n"
    "\n"
    "Exit status: 0 ok, 2 bad arguments, database, key, value or metric.\n";

/* Split a comma list in place into at most max items. */
static int split_list(char *s, char **items, int max)
{
    int n = 0;
    for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ",")) items[n++] = tok;
    return n;
}

static int parse_speeds(char *list, double *speeds, int *n)
{
    char *items[64];
    *n = split_list(list, items, 64);
    for (int i = 0; i < *n; i++) {
        char *end;
        speeds[i] = strtod(items[i], &end);
        if (end == items[i] || *end || !(speeds[i] > 0) || !isfinite(speeds[i])) {
            char msg[256];
            snprintf(msg, sizeof msg, "--speed: '%s' is not a positive number (e.g. --speed 0.5,1,1.5,2)", items[i]);
            return sim_usage_error("compare", msg);
        }
    }
    return *n ? 0 : sim_usage_error("compare", "--speed: an empty list (e.g. --speed 0.5,1,1.5,2)");
}

int cmd_compare(int argc, char **argv)
{
    static const struct option opts[] = {{"db", required_argument, 0, 'd'},       {"by", required_argument, 0, 'b'},
                                         {"baseline", required_argument, 0, 'B'}, {"metric", required_argument, 0, 'm'},
                                         {"speed", required_argument, 0, 's'},    {"json", no_argument, 0, 'j'},
                                         {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
    sim_compare_opts o = {0};
    const char *metrics[64];
    double speeds[64];
    bool json = false;
    if (sim_cli_once("compare", argc, argv, opts, NULL)) return SIM_EXIT_USAGE;
    opterr = 0;
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        if (ch == 'h') return fputs(compare_usage, stdout), SIM_EXIT_OK;
        else if (ch == 'd') o.db = optarg;
        else if (ch == 'b') o.by = optarg;
        else if (ch == 'B') o.baseline = optarg;
        else if (ch == 'm') o.nmetrics = split_list(optarg, (char **)metrics, 64), o.metrics = metrics;
        else if (ch == 's' && parse_speeds(optarg, speeds, &o.nspeeds)) return SIM_EXIT_USAGE;
        else if (ch == 's') o.speeds = speeds;
        else if (ch == 'j') json = true;
        else return sim_cli_bad_option("compare", argv[optind - 1]);
    }
    if (optind < argc) return sim_cli_unexpected_error("compare", argv[optind], "--db");
    if (!o.db || !o.by)
        return sim_usage_error("compare", "--db FILE and --by KEY are required (e.g. --by policy.router)");
    if (o.metrics && !o.nmetrics)
        return sim_usage_error("compare", "--metric: an empty list (e.g. --metric ttft_ms.mean)");
    sim_err err = {{0}};
    json_t *cmp;
    if (sim_compare(&o, &cmp, &err)) return sim_usage_error("compare", err.msg);
    if (json) json_dumpf(cmp, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10)), putchar('\n');
    else sim_compare_print(stdout, cmp);
    json_decref(cmp);
    return SIM_EXIT_OK;
}
