/* sim/cli/cmd_validate.c — `kvsim validate`: predictions of measured runs of
 * a real engine, with their errors (sim/replay/validate.h,
 * docs/validation.md). Parses, calls sim_validate, prints. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cli/cli.h"
#include "sim/replay/validate.h"

static const char validate_usage[] =
    "usage: kvsim validate --measurements FILE [--only ID] [--db FILE] [--set key=value]... [--json]\n"
    "\n"
    "Replay each experiment of a measurements file (measured runs of a real serving\n"
    "engine; docs/validation.md has the format) on one simulated aggregated instance\n"
    "configured from its engine block, with the production-engine cost model\n"
    "(cost.compute = engine), and print predicted beside measured with the error of\n"
    "every measured metric, then the median absolute error per metric.\n"
    "\n"
    "  --measurements FILE  the measurements (e.g. validation/vllm-h100-train.json)\n"
    "  --only ID            just this experiment\n"
    "  --db FILE            keep the runs in this results database (kvsim report reads it)\n"
    "  --set KEY=VALUE      override a config key in every experiment (a what-if, e.g.\n"
    "                       --set engine.seq_overhead_ms=0)\n"
    "  --json               the report as JSON: experiments[] (id, status, predicted,\n"
    "                       measured, ape, mpe) and median_ape\n"
    "  -h, --help           this help\n"
    "\n"
    "An experiment kvsim cannot express is listed as \"not expressible\" with the\n"
    "reason. Exit status: 0 ok; 2 a bad file, experiment, model, knob or metric\n"
    "(the message names it).\n";

static void print_metric(const char *metric, const char *stat, const json_t *row)
{
    double m = json_number_value(json_object_get(json_object_get(json_object_get(row, "measured"), metric), stat));
    double p = json_number_value(json_object_get(json_object_get(json_object_get(row, "predicted"), metric), stat));
    double e = json_number_value(json_object_get(json_object_get(json_object_get(row, "mpe"), metric), stat));
    printf("  %-8s %-5s %12.2f %12.2f %+11.2f %+8.1f%%\n", metric, stat, m, p, p - m, e);
}

static void print_row(const json_t *row)
{
    printf("%s", json_string_value(json_object_get(row, "id")));
    if (strcmp(json_string_value(json_object_get(row, "status")), "ok")) {
        printf(": not expressible: %s\n\n", json_string_value(json_object_get(row, "why")));
        return;
    }
    printf("%s\n", json_is_true(json_object_get(row, "overloaded")) ? " (kvsim: overloaded)" : "");
    printf("  %-8s %-5s %12s %12s %11s %9s\n", "metric", "stat", "measured", "kvsim", "error", "error %");
    const char *metric, *stat;
    const json_t *m, *v;
    json_object_foreach(json_object_get(row, "measured"), metric, m)
    {
        if (!json_is_object(m)) continue;
        json_object_foreach((json_t *)m, stat, v) print_metric(metric, stat, row);
    }
    putchar('\n');
}

static void print_report(const json_t *r)
{
    size_t i;
    const json_t *row, *stats, *v;
    const char *metric, *stat;
    json_array_foreach(json_object_get(r, "experiments"), i, row) print_row(row);
    printf("median absolute error over the experiments:\n");
    json_object_foreach(json_object_get(r, "median_ape"), metric, stats)
    {
        json_object_foreach((json_t *)stats, stat, v) printf("  %-8s %-5s %6.1f%%\n", metric, stat, json_real_value(v));
    }
}

int cmd_validate(int argc, char **argv)
{
    static const struct option opts[] = {
        {"measurements", required_argument, 0, 'm'},
        {"only", required_argument, 0, 'o'},
        {"db", required_argument, 0, 'd'},
        {"set", required_argument, 0, 's'},
        {"json", no_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    sim_validate_opts o = {0};
    char **sets = sim_xcalloc((size_t)argc + 1, sizeof *sets);
    bool json = false;
    int rc = SIM_EXIT_OK;
    opterr = 0;
    optind = 1;
    for (int ch; rc == SIM_EXIT_OK && (ch = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        if (ch == 'm') o.measurements = optarg;
        else if (ch == 'o') o.only = optarg;
        else if (ch == 'd') o.db = optarg;
        else if (ch == 's') sets[o.nsets++] = optarg;
        else if (ch == 'j') json = true;
        else if (ch == 'h') return free(sets), fputs(validate_usage, stdout), SIM_EXIT_OK;
        else rc = sim_cli_bad_option("validate", argv[optind - 1]);
    }
    if (rc == SIM_EXIT_OK && optind < argc) rc = sim_cli_unexpected_error("validate", argv[optind], "--measurements");
    if (rc == SIM_EXIT_OK && !o.measurements)
        rc = sim_usage_error("validate", "--measurements FILE is required (e.g. validation/vllm-h100-train.json)");
    o.sets = sets;
    json_t *report = NULL;
    sim_err err = {{0}};
    if (rc == SIM_EXIT_OK && sim_validate(&o, &report, &err)) rc = sim_usage_error("validate", err.msg);
    if (report && json) {
        json_dumpf(report, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        putchar('\n');
    } else if (report) print_report(report);
    json_decref(report);
    free(sets);
    return rc;
}
