/* sim/cli/cmd_trace.c — `kvsim trace`: tools for Mooncake-format traces.
 *
 *   kvsim trace stats FILE   size, lengths, arrival rate and the infinite-cache
 *                            prefix hit rate (the trace's theoretical maximum)
 *   kvsim trace gen -o FILE  seeded synthetic conversation-like trace
 *
 * Bad input files exit 2 with the reader's "FILE:LINE: FIELD: problem". */
#include "sim/cli/cli.h"
#include "sim/trace/trace.h"
#include "sim/trace/tracegen.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- kvsim trace stats -------------------------------------------------- */

static void stats_usage(FILE *f)
{
    fprintf(f, "usage: kvsim trace stats FILE [--json] [--block-tokens N] [--skip-bad] [--sort]\n\n"
               "Statistics of a Mooncake JSONL trace: requests, duration, arrival rate,\n"
               "input/output token mean, p50 and p99, blocks, distinct blocks, and the\n"
               "infinite-cache prefix hit rate (the best any cache can do, docs/architecture.md §4).\n\n"
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
    json_t *o =
        json_pack("{s:s, s:s, s:I, s:f, s:f, s:o, s:o, s:I, s:I, s:f, s:f, s:I}", "trace", path, "fingerprint", fps,
                  "requests", (json_int_t)s->requests, "duration_s", s->duration_s, "arrival_rate", s->arrival_rate,
                  "input", dist_json(s->input_mean, s->input_p50, s->input_p99), "output",
                  dist_json(s->output_mean, s->output_p50, s->output_p99), "blocks", (json_int_t)s->blocks,
                  "distinct_blocks", (json_int_t)s->distinct_blocks, "max_hit_rate_blocks", s->max_hit_rate_blocks,
                  "max_hit_rate_tokens", s->max_hit_rate_tokens, "skipped", (json_int_t)s->skipped);
    json_dumpf(o, stdout, JSON_REAL_PRECISION(12));
    putchar('\n');
    json_decref(o);
}

/* Under --skip-bad, name the first skipped line: read again without
 * skipping, up to the line that fails. */
static void warn_skipped(const char *path, sim_trace_opts opts, int64_t skipped)
{
    sim_trace *t;
    sim_request *r;
    sim_err err;
    opts.skip_bad = false;
    opts.limit = 0;
    if (sim_trace_open(&t, path, &opts, &err)) return;
    int rc;
    while ((rc = sim_trace_next(t, &r, &err)) == 1) sim_request_free(r);
    if (rc < 0)
        fprintf(stderr, "kvsim trace stats: warning: skipped %" PRId64 " bad line(s), the first: %s\n", skipped,
                err.msg);
    sim_trace_close(t);
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
    if (strcmp(path, "-") == 0)
        return sim_usage_error("trace stats", "FILE must be a file, not stdin (it is read twice)");
    uint64_t fp;
    sim_trace_stats s;
    if (sim_trace_fingerprint(path, &fp, &err) || sim_trace_compute_stats(path, &opts, &s, &err))
        return sim_usage_error("trace stats", err.msg);
    if (s.skipped) warn_skipped(path, opts, s.skipped);
    if (json) print_stats_json(path, fp, &s);
    else print_stats_table(path, fp, &s);
    return SIM_EXIT_OK;
}

/* ---- kvsim trace gen ---------------------------------------------------- */

typedef enum gen_opt_kind { GEN_I64, GEN_INT, GEN_DOUBLE, GEN_SEED, GEN_PATH } gen_opt_kind;

/* Every generator option: its flag, where it lands in sim_tracegen_opts, and
 * its help line (the default printed next to it comes from the defaults). */
typedef struct gen_opt {
    const char *name;
    gen_opt_kind kind;
    size_t offset;
    const char *help;
} gen_opt;

#define GEN_FIELD(f) offsetof(sim_tracegen_opts, f)
static const gen_opt gen_opts[] = {
    {"requests", GEN_I64, GEN_FIELD(requests), "requests to write"},
    {"rate", GEN_DOUBLE, GEN_FIELD(rate), "Poisson arrival rate, requests/s"},
    {"arrivals-from", GEN_PATH, GEN_FIELD(arrivals_from), "copy timestamps from this trace (stops when it ends)"},
    {"block-tokens", GEN_INT, GEN_FIELD(block_tokens), "tokens per hash block"},
    {"prompts", GEN_INT, GEN_FIELD(prompts), "shared system prompts"},
    {"zipf", GEN_DOUBLE, GEN_FIELD(zipf), "Zipf exponent of prompt popularity (0 = uniform)"},
    {"prompt-mean", GEN_DOUBLE, GEN_FIELD(prompt_mean), "mean system-prompt tokens (lognormal, whole blocks)"},
    {"prompt-sigma", GEN_DOUBLE, GEN_FIELD(prompt_sigma), "lognormal sigma of prompt lengths"},
    {"session-prob", GEN_DOUBLE, GEN_FIELD(session_prob), "probability a request continues a live session"},
    {"max-turns", GEN_INT, GEN_FIELD(max_turns), "requests per session at most"},
    {"think-time", GEN_DOUBLE, GEN_FIELD(think_time), "seconds before a session's next turn may arrive"},
    {"max-live", GEN_INT, GEN_FIELD(max_live), "live sessions at most (the least recent ends)"},
    {"input-mean", GEN_DOUBLE, GEN_FIELD(input_mean), "mean new-turn input tokens (lognormal)"},
    {"input-sigma", GEN_DOUBLE, GEN_FIELD(input_sigma), "lognormal sigma of new-turn tokens"},
    {"output-mean", GEN_DOUBLE, GEN_FIELD(output_mean), "mean output tokens (lognormal)"},
    {"output-sigma", GEN_DOUBLE, GEN_FIELD(output_sigma), "lognormal sigma of output tokens"},
    {"max-input", GEN_INT, GEN_FIELD(max_input), "input tokens at most (a session ends beyond it)"},
    {"max-output", GEN_INT, GEN_FIELD(max_output), "output tokens at most"},
    {"ephemeral-frac", GEN_DOUBLE, GEN_FIELD(ephemeral_frac), "fraction tagged \"cache\": \"ephemeral\""},
    {"context-frac", GEN_DOUBLE, GEN_FIELD(context_frac), "fraction tagged \"cache\": \"context\""},
    {"seed", GEN_SEED, GEN_FIELD(seed), "RNG seed (same seed, same bytes)"},
};
#define NGEN_OPTS (sizeof gen_opts / sizeof gen_opts[0])

static void format_gen_default(const gen_opt *g, const sim_tracegen_opts *d, char *buf, size_t n)
{
    const char *p = (const char *)d + g->offset;
    switch (g->kind) {
    case GEN_I64: snprintf(buf, n, "%" PRId64, *(const int64_t *)(const void *)p); break;
    case GEN_INT: snprintf(buf, n, "%d", *(const int *)(const void *)p); break;
    case GEN_DOUBLE: snprintf(buf, n, "%g", *(const double *)(const void *)p); break;
    case GEN_SEED: snprintf(buf, n, "%" PRIu64, *(const uint64_t *)(const void *)p); break;
    case GEN_PATH: snprintf(buf, n, "none"); break;
    }
}

static void gen_usage(FILE *f)
{
    sim_tracegen_opts d = sim_tracegen_default_opts();
    fprintf(f, "usage: kvsim trace gen [options] -o FILE\n\n"
               "Write a seeded synthetic Mooncake-format trace (JSONL): shared system prompts\n"
               "with Zipf popularity and multi-turn sessions whose prefix grows turn by turn.\n"
               "Every request carries \"session\"; the same options and seed give the same bytes.\n\n"
               "  -o, --output FILE          where to write (\"-\" = stdout); required\n");
    for (size_t i = 0; i < NGEN_OPTS; i++) {
        char flag[40], def[32];
        static const char *const metavar[] = {
            [GEN_I64] = "N", [GEN_INT] = "N", [GEN_DOUBLE] = "X", [GEN_SEED] = "N", [GEN_PATH] = "FILE"};
        snprintf(flag, sizeof flag, "--%s %s", gen_opts[i].name, metavar[gen_opts[i].kind]);
        format_gen_default(&gen_opts[i], &d, def, sizeof def);
        fprintf(f, "  %-26s %s (default %s)\n", flag, gen_opts[i].help, def);
    }
    fprintf(f, "  -h, --help                 this text\n");
}

static int set_gen_opt(const gen_opt *g, const char *arg, sim_tracegen_opts *o, sim_err *err)
{
    char what[48];
    snprintf(what, sizeof what, "--%s", g->name);
    void *p = (char *)o + g->offset;
    int64_t v;
    switch (g->kind) {
    case GEN_DOUBLE: return sim_parse_double(arg, what, p, err);
    case GEN_PATH: *(const char **)p = arg; return 0;
    case GEN_I64: return sim_parse_i64(arg, what, p, err);
    case GEN_SEED:
        if (sim_parse_i64(arg, what, &v, err)) return -1;
        *(uint64_t *)p = (uint64_t)v;
        return 0;
    case GEN_INT:
        if (sim_parse_i64(arg, what, &v, err)) return -1;
        if (v > INT32_MAX) return sim_errf(err, "%s: '%s' is too large", what, arg);
        *(int *)p = (int)v;
        return 0;
    }
    return 0;
}

/* Run the generator into `path`. On failure a file this run created is
 * removed; an existing path (a device, a file being overwritten) is not. */
static int write_trace(const sim_tracegen_opts *o, const char *path)
{
    bool to_stdout = strcmp(path, "-") == 0;
    struct stat st;
    bool existed = to_stdout || stat(path, &st) == 0;
    FILE *out = to_stdout ? stdout : fopen(path, "w");
    char msg[1200];
    if (!out) {
        snprintf(msg, sizeof msg, "%s: cannot create: %s", path, strerror(errno));
        return sim_usage_error("trace gen", msg);
    }
    sim_err err;
    int64_t written;
    int rc = sim_tracegen_write(o, out, path, &written, &err);
    bool write_failed = ferror(out) != 0;
    if (!to_stdout && fclose(out)) write_failed = true;
    if (rc || write_failed) {
        if (!existed) remove(path);
        if (!write_failed) return sim_usage_error("trace gen", err.msg);
        fprintf(stderr, "kvsim trace gen: %s: write error\n", path);
        return SIM_EXIT_INTERNAL;
    }
    fprintf(stderr, "kvsim trace gen: wrote %" PRId64 " requests to %s\n", written, to_stdout ? "stdout" : path);
    return SIM_EXIT_OK;
}

static int trace_gen(int argc, char **argv)
{
    struct option longopts[NGEN_OPTS + 3];
    for (size_t i = 0; i < NGEN_OPTS; i++)
        longopts[i] = (struct option){gen_opts[i].name, required_argument, NULL, 256 + (int)i};
    longopts[NGEN_OPTS] = (struct option){"output", required_argument, NULL, 'o'};
    longopts[NGEN_OPTS + 1] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[NGEN_OPTS + 2] = (struct option){NULL, 0, NULL, 0};
    sim_tracegen_opts o = sim_tracegen_default_opts();
    const char *path = NULL;
    sim_err err;
    int c;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        if (c >= 256) {
            if (set_gen_opt(&gen_opts[c - 256], optarg, &o, &err)) return sim_usage_error("trace gen", err.msg);
        } else if (c == 'o') {
            path = optarg;
        } else if (c == 'h') {
            gen_usage(stdout);
            return SIM_EXIT_OK;
        } else {
            gen_usage(stderr);
            return SIM_EXIT_USAGE;
        }
    }
    if (optind != argc) return sim_usage_error("trace gen", "unexpected argument (see --help)");
    if (!path) return sim_usage_error("trace gen", "-o FILE is required (\"-\" for stdout)");
    if (sim_tracegen_check(&o, &err)) return sim_usage_error("trace gen", err.msg);
    return write_trace(&o, path);
}

/* ---- dispatch ----------------------------------------------------------- */

static const sim_cmd trace_cmds[] = {
    {"stats", "statistics and the infinite-cache hit rate of a trace", trace_stats},
    {"gen", "write a seeded synthetic conversation-like trace", trace_gen},
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
