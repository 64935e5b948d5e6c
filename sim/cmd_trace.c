/* sim/cmd_trace.c — `kvsim trace`: tools for Mooncake-format traces.
 *
 *   kvsim trace stats FILE   size, lengths, arrival rate and the infinite-cache
 *                            prefix hit rate (the trace's theoretical maximum)
 *   kvsim trace gen -o FILE  seeded synthetic conversation-like trace
 *
 * Bad input files exit 2 with the reader's "FILE:LINE: FIELD: problem". */
#include "sim/cli.h"
#include "sim/trace.h"
#include "sim/tracegen.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- kvsim trace stats -------------------------------------------------- */

static void stats_usage(FILE *f)
{
    fprintf(f, "usage: kvsim trace stats FILE [--json] [--block-tokens N] [--skip-bad] [--sort]\n\n"
               "Statistics of a Mooncake JSONL trace: requests, duration, arrival rate,\n"
               "input/output token mean, p50 and p99, blocks, distinct blocks, and the\n"
               "infinite-cache prefix hit rate (the best any cache can do, DESIGN.md §4).\n\n"
               "  --json             one JSON object instead of the table\n"
               "  --block-tokens N   tokens per hash block (default 512)\n"
               "  --skip-bad         skip bad lines (counted) instead of failing\n"
               "  --sort             accept out-of-order timestamps by sorting (loads the file)\n"
               "  -h, --help         this text\n");
}

static void print_stats_table(const char *path, uint64_t fp, const sim_trace_stats *s)
{
    printf("trace            %s\n", path);
    printf("fingerprint      %016" PRIx64 "\n", fp);
    printf("requests         %" PRId64 "\n", s->requests);
    printf("duration         %.1f s\n", s->duration_s);
    printf("arrival rate     %.3f req/s\n", s->arrival_rate);
    printf("input tokens     mean %.1f  p50 %.0f  p99 %.0f\n", s->input_mean, s->input_p50, s->input_p99);
    printf("output tokens    mean %.1f  p50 %.0f  p99 %.0f\n", s->output_mean, s->output_p50, s->output_p99);
    printf("blocks           %" PRId64 " (%" PRId64 " distinct)\n", s->blocks, s->distinct_blocks);
    printf("max hit rate     %.4f blocks, %.4f tokens (infinite cache)\n", s->max_hit_rate_blocks,
           s->max_hit_rate_tokens);
    printf("skipped lines    %" PRId64 "\n", s->skipped);
}

static json_t *dist_json(double mean, double p50, double p99)
{
    return json_pack("{s:f, s:f, s:f}", "mean", mean, "p50", p50, "p99", p99);
}

static void print_stats_json(const char *path, uint64_t fp, const sim_trace_stats *s)
{
    char fps[17];
    snprintf(fps, sizeof fps, "%016" PRIx64, fp);
    json_t *o = json_pack("{s:s, s:s, s:I, s:f, s:f, s:o, s:o, s:I, s:I, s:f, s:f, s:I}", "trace", path,
                          "fingerprint", fps, "requests", (json_int_t)s->requests, "duration_s", s->duration_s,
                          "arrival_rate", s->arrival_rate, "input",
                          dist_json(s->input_mean, s->input_p50, s->input_p99), "output",
                          dist_json(s->output_mean, s->output_p50, s->output_p99), "blocks",
                          (json_int_t)s->blocks, "distinct_blocks", (json_int_t)s->distinct_blocks,
                          "max_hit_rate_blocks", s->max_hit_rate_blocks, "max_hit_rate_tokens",
                          s->max_hit_rate_tokens, "skipped", (json_int_t)s->skipped);
    json_dumpf(o, stdout, JSON_REAL_PRECISION(12));
    putchar('\n');
    json_decref(o);
}

static int trace_stats(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},     {"block-tokens", required_argument, NULL, 'b'},
        {"skip-bad", no_argument, NULL, 's'}, {"sort", no_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},     {NULL, 0, NULL, 0},
    };
    sim_trace_opts opts = sim_trace_default_opts();
    bool json = false;
    sim_err err;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int64_t v;
        switch (c) {
        case 'j': json = true; break;
        case 'b':
            if (sim_parse_i64(optarg, "--block-tokens", &v, &err)) return sim_usage_error("trace stats", err.msg);
            if (v < 1 || v > 1 << 30) return sim_usage_error("trace stats", "--block-tokens must be in [1, 2^30]");
            opts.block_tokens = (int)v;
            break;
        case 's': opts.skip_bad = true; break;
        case 'S': opts.sort = true; break;
        case 'h': stats_usage(stdout); return SIM_EXIT_OK;
        default: stats_usage(stderr); return SIM_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) return sim_usage_error("trace stats", "expected exactly one FILE (see --help)");
    const char *path = argv[optind];
    uint64_t fp;
    sim_trace_stats s;
    if (sim_trace_fingerprint(path, &fp, &err) || sim_trace_compute_stats(path, &opts, &s, &err))
        return sim_usage_error("trace stats", err.msg);
    if (json)
        print_stats_json(path, fp, &s);
    else
        print_stats_table(path, fp, &s);
    return SIM_EXIT_OK;
}

/* ---- dispatch ----------------------------------------------------------- */

static const sim_cmd trace_cmds[] = {
    {"stats", "statistics and the infinite-cache hit rate of a trace", trace_stats},
};

#define NTRACE_CMDS (sizeof trace_cmds / sizeof trace_cmds[0])

static void trace_usage(FILE *f)
{
    fprintf(f, "usage: kvsim trace SUBCOMMAND [options]   (kvsim trace SUBCOMMAND --help)\n\nsubcommands:\n");
    for (size_t i = 0; i < NTRACE_CMDS; i++) fprintf(f, "  %-8s %s\n", trace_cmds[i].name, trace_cmds[i].summary);
}

int cmd_trace(int argc, char **argv)
{
    if (argc < 2) {
        trace_usage(stderr);
        return SIM_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        trace_usage(stdout);
        return SIM_EXIT_OK;
    }
    for (size_t i = 0; i < NTRACE_CMDS; i++)
        if (!strcmp(argv[1], trace_cmds[i].name)) return trace_cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "kvsim trace: unknown subcommand '%s'\n\n", argv[1]);
    trace_usage(stderr);
    return SIM_EXIT_USAGE;
}
