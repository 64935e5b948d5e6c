/* sim/cli/cmd_plan_tiers.c — `kvsim plan tiers`: for one cluster, the hit
 * rate, TTFT p90, goodput and price against the size of its DRAM (or disk)
 * tier on a log grid, the knee marked, as text, JSON and a figure. This
 * file parses the options and prints; the runs are sim/slo/tiers.c, the
 * figure reports/curve.c. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reports/report.h"
#include "sim/cli/cli.h"
#include "sim/cli/slurm_opt.h"
#include "sim/slo/plan_slo.h"

static const char tiers_usage[] =
    "usage: kvsim plan tiers [--trace FILE] [--config FILE] [--set key=value]... [--speed X]\n"
    "                        [--ssd] [--max SIZE] [--points N] [--knee F] [--plot FILE.png]\n"
    "                        [--jobs N] [--db FILE] [--json] [--slurm [--partition P] [--sbatch-args 'A B']]\n"
    "\n"
    "For the config's cluster (instances, hardware, model), a timed run at each size of\n"
    "its DRAM tier per node (kvstore.dram_bytes; --ssd: its disk, kvstore.ssd_bytes, with\n"
    "the DRAM the config's) on a log grid: --max (default the node's own memory or disks,\n"
    "hardware.dram_bytes or hardware.ssd_bytes) and each half below it, --points sizes in\n"
    "all, and 0. Prints each size's prefix hit rate (tokens), TTFT p90, goodput, SLO\n"
    "attainment and price (an hour, and per million output tokens: the preset's\n"
    "price_per_hour, and dram_price_per_GB_hour / ssd_price_per_GB_hour when given), and\n"
    "the knee: the smallest size whose hit rate is within --knee of the best on the grid.\n"
    "\n"
    "  --trace FILE      trace to replay (default: the config's trace.path)\n"
    "  --config FILE     config merged over configs/default.json\n"
    "  --set KEY=VALUE   fixed override of every run (not the tier's size)\n"
    "  --speed X         replay speed factor (trace.speed)\n"
    "  --ssd             the disk tier's curve instead of DRAM's\n"
    "  --max SIZE        the largest size, e.g. 500GB (at most the node's)\n"
    "  --points N        sizes on the grid besides 0, 1-31 (default 8: max, max/2, ..., max/128)\n"
    "  --knee F          the knee's share of the best hit rate, (0, 1] (default 0.95)\n"
    "  --plot FILE.png   the figure (hit rate and TTFT p90 against size, log x, knee marked),\n"
    "                    with FILE.png.dat and FILE.png.gp beside it (gnuplot)\n"
    "  --jobs N          worker processes (default: the number of CPUs)\n"
    "  --db FILE         results database; sizes it records are not run again\n"
    "  --json            one JSON object: setup, points, knee\n"
    "%s"
    "  -h, --help        this text\n"
    "\n"
    "Exit status: 0, 2 bad arguments, config, trace or a size over the node's.\n";

enum { OPT_SSD = 1000, OPT_MAX, OPT_POINTS, OPT_KNEE, OPT_PLOT, OPT_JOBS, OPT_DB, OPT_SPEED };

typedef struct tiers_args {
    sim_tiers_opts o;
    const char *plot;
    bool json, help;
} tiers_args;

/* A whole number of at most max into *out ("3x" and "abc" are refused, as
 * atoi took them for 3 and 0). */
static int parse_int(const char *arg, const char *what, int64_t max, int *out, sim_err *err)
{
    int64_t v;
    if (sim_parse_i64(arg, what, &v, err)) return -1;
    if (v > max) return sim_errf(err, "%s: '%s' is too large", what, arg);
    *out = (int)v;
    return 0;
}

static int parse_one(int c, const char *arg, tiers_args *a, sim_err *err)
{
    sim_slo_opts *s = &a->o.slo;
    switch (c) {
    case 't': s->trace = arg; return 0;
    case 'c': s->config = arg; return 0;
    case 's': s->sets[s->nsets++] = (char *)arg; return 0;
    case OPT_SPEED: /* named as given (it once said config key 'trace.speed') */
        s->speed = arg;
        return sim_parse_positive(arg, "--speed", &(double){0}, err);
    case OPT_SSD: a->o.ssd = true; return 0;
    case OPT_MAX:
        if (sim_parse_size(arg, "--max", &a->o.max, err)) return -1;
        return a->o.max > 0 ? 0
                            : sim_errf(err, "--max: '%s' is no size (the grid has 0 already: give its largest)", arg);
    case OPT_POINTS: return parse_int(arg, "--points", 1 << 30, &a->o.points, err);
    case OPT_KNEE: return sim_parse_double(arg, "--knee", &a->o.knee, err);
    case OPT_PLOT: a->plot = arg; return 0;
    case OPT_JOBS:
        if (parse_int(arg, "--jobs", 1 << 20, &s->jobs, err)) return -1;
        return s->jobs >= 1 ? 0 : sim_errf(err, "--jobs: '%s' is not a count >= 1", arg);
    case OPT_DB: s->db = arg; return 0;
    case 'j': a->json = true; return 0;
    case 'h': a->help = true; return 0;
    default:
        if (sim_cli_slurm_option(c, arg, &s->slurm)) return 0;
        return sim_errf(err, "bad option (see kvsim plan tiers --help)");
    }
}

static int parse_args(int argc, char **argv, tiers_args *a, sim_err *err)
{
    static const struct option opts[] = {{"trace", required_argument, 0, 't'},
                                         {"config", required_argument, 0, 'c'},
                                         {"set", required_argument, 0, 's'},
                                         {"speed", required_argument, 0, OPT_SPEED},
                                         {"ssd", no_argument, 0, OPT_SSD},
                                         {"max", required_argument, 0, OPT_MAX},
                                         {"points", required_argument, 0, OPT_POINTS},
                                         {"knee", required_argument, 0, OPT_KNEE},
                                         {"plot", required_argument, 0, OPT_PLOT},
                                         {"jobs", required_argument, 0, OPT_JOBS},
                                         {"db", required_argument, 0, OPT_DB},
                                         {"json", no_argument, 0, 'j'},
                                         {"help", no_argument, 0, 'h'},
                                         SIM_CLI_SLURM_OPTIONS,
                                         {0, 0, 0, 0}};
    a->o.slo.sets = sim_xcalloc((size_t)argc + 1, sizeof *a->o.slo.sets);
    opterr = 0;
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, ":h", opts, NULL)) != -1;) {
        if (c == '?' || c == ':')
            return sim_errf(err, "%s '%s'%s", c == ':' ? "option" : "unknown option", argv[optind - 1],
                            c == ':' ? " needs a value" : " (see kvsim plan tiers --help)");
        if (parse_one(c, optarg, a, err)) return -1;
    }
    if (optind < argc) return sim_errf(err, "unexpected argument '%s' (see kvsim plan tiers --help)", argv[optind]);
    const char *bad = sim_cli_slurm_check(&a->o.slo.slurm);
    return bad ? sim_errf(err, "%s", bad) : 0;
}

/* The figure of the curve (reports/curve.c). */
static int plot(const tiers_args *a, const sim_tiers *t, sim_err *err)
{
    double hit[SIM_TIERS_MAX], ttft[SIM_TIERS_MAX];
    for (int i = 0; i < t->n; i++) hit[i] = t->pt[i].hit_rate, ttft[i] = t->pt[i].value[2];
    char title[256];
    snprintf(title, sizeof title, "%s on %s: %s tier against its size", t->r.model, t->r.hardware,
             t->ssd ? "disk" : "DRAM");
    rep_curve c = {.title = title,
                   .tier = t->ssd ? "disk" : "DRAM",
                   .x = t->size,
                   .hit = hit,
                   .ttft = ttft,
                   .n = t->n,
                   .knee = t->knee >= 0 ? t->size[t->knee] : 0};
    return rep_curve_png(a->plot, &c, err);
}

int cmd_plan_tiers(int argc, char **argv)
{
    tiers_args a = {0};
    sim_slo_tiers_opts_init(&a.o);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    a.o.slo.jobs = cpus > 0 ? (int)cpus : 1;
    a.o.slo.tty = isatty(STDERR_FILENO);
    sim_err err = {{0}};
    sim_tiers *t = sim_xcalloc(1, sizeof *t);
    int rc = SIM_EXIT_OK;
    if (parse_args(argc, argv, &a, &err)) rc = sim_usage_error("plan tiers", err.msg);
    else if (a.help) printf(tiers_usage, sim_cli_slurm_usage);
    else if (sim_slo_tiers(&a.o, t, &err))
        rc = t->r.stop_signal ? 128 + t->r.stop_signal : sim_usage_error("plan tiers", err.msg);
    else {
        if (a.json) {
            json_t *j = sim_slo_tiers_json(&a.o, t);
            json_dumpf(j, stdout, JSON_REAL_PRECISION(10)), putchar('\n');
            json_decref(j);
        } else sim_slo_tiers_print(&a.o, t);
        if (a.plot && plot(&a, t, &err)) rc = sim_usage_error("plan tiers", err.msg);
    }
    free(t);
    free(a.o.slo.sets);
    sim_cli_slurm_free(&a.o.slo.slurm);
    return rc;
}
