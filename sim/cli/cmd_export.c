/* sim/cli/cmd_export.c — `kvsim export`: a results database's runs (or any
 * of its tables) as CSV or TSV. Parses, calls sim/results/export.c, prints. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cli/cli.h"
#include "sim/outfile.h"
#include "sim/results/export.h"
#include "sim/results/results.h"

static const char export_usage[] =
    "usage: kvsim export --db FILE [--format csv|tsv] [--table NAME] [--runs IDS] [--where SQL] [-o FILE]\n"
    "\n"
    "A results database as a table for spreadsheets, pandas or R. The runs table\n"
    "(the default) has one row per completed run: id, created, kvsim_version,\n"
    "config_hash, trace_path, trace_fingerprint, seed, wall_seconds, then every key of\n"
    "its resolved config as a column (cluster.prefill, policy.router, ...), then every\n"
    "number of its summary as summary.PATH (summary.ttft_ms.p90, ...). Other tables\n"
    "(requests, samples, replicas, hitrate) are written as stored. A text cell that\n"
    "starts with =, +, -, @, a tab or a carriage return (and is not a number) gets a\n"
    "leading ' so that a spreadsheet reads it as text, not a formula (OWASP's\n"
    "CSV-injection advice).\n"
    "\n"
    "  --db FILE          results database (kvsim run/sweep/merge --db); read only\n"
    "  --format csv|tsv   comma-separated, RFC 4180 quoting (default), or tab-separated\n"
    "  --table NAME       runs (default), requests, samples, replicas, hitrate\n"
    "  --runs IDS         only these runs, e.g. 3,7,10-12 (hitrate: these set ids)\n"
    "  --where SQL        only runs for which this SQL expression over the runs table holds,\n"
    "                     e.g. \"json_extract(config_json, '$.policy.router') = 'kvcentric'\"\n"
    "  -o, --out FILE     write here (whole or not at all) instead of stdout\n"
    "  -h, --help         this help\n"
    "\n"
    "Exit status: 0 ok, 2 bad arguments, an unreadable database or an unwritable output.\n";

typedef struct export_args {
    sim_export_opts o;
    const char *out;
} export_args;

/* 0, -1 after --help, or an exit status. */
static int parse_args(int argc, char **argv, export_args *a, sim_err *err)
{
    static const struct option opts[] = {
        {"db", required_argument, 0, 'd'},    {"format", required_argument, 0, 'f'},
        {"table", required_argument, 0, 't'}, {"runs", required_argument, 0, 'r'},
        {"out", required_argument, 0, 'o'},   {"where", required_argument, 0, 'w'},
        {"help", no_argument, 0, 'h'},        {0, 0, 0, 0},
    };
    if (sim_cli_once("export", argc, argv, opts, NULL)) return SIM_EXIT_USAGE;
    opterr = 0;
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1;) {
        switch (c) {
        case 'd': a->o.db = optarg; break;
        case 'f':
            if (strcmp(optarg, "csv") && strcmp(optarg, "tsv"))
                return sim_usage_error("export", "--format: expected csv or tsv");
            a->o.tsv = !strcmp(optarg, "tsv");
            break;
        case 't': a->o.table = optarg; break;
        case 'r':
            if (sim_results_parse_ids(optarg, &a->o.runs, &a->o.nruns, err)) return sim_usage_error("export", err->msg);
            break;
        case 'o': a->out = optarg; break;
        case 'w': a->o.where = optarg; break;
        case 'h': fputs(export_usage, stdout); return -1;
        default: return sim_cli_bad_option("export", argv[optind - 1]);
        }
    }
    if (optind < argc) return sim_cli_unexpected_error("export", argv[optind], "--db");
    if (!a->o.db) return sim_usage_error("export", "--db FILE is required");
    if (a->out && sim_same_file(a->out, a->o.db)) /* it once replaced the database with its own CSV */
        return sim_errf(err, "-o %s is the results database --db reads: write the export elsewhere", a->out),
               sim_usage_error("export", err->msg);
    return 0;
}

int cmd_export(int argc, char **argv)
{
    export_args a = {.out = NULL};
    sim_err err;
    int st = parse_args(argc, argv, &a, &err);
    if (st) {
        free(a.o.runs);
        return st < 0 ? SIM_EXIT_OK : st;
    }
    sim_outfile out;
    int64_t rows = 0;
    int rc = sim_outfile_open(&out, a.out ? a.out : "-", &err);
    if (!rc && sim_export(&a.o, out.f, &rows, &err)) {
        sim_outfile_abort(&out);
        rc = -1;
    } else if (!rc) {
        rc = sim_outfile_close(&out, &err);
    }
    free(a.o.runs);
    if (rc) return sim_usage_error("export", err.msg);
    if (a.out) fprintf(stderr, "kvsim export: %lld rows to %s\n", (long long)rows, a.out);
    return SIM_EXIT_OK;
}
