/* sim/cli/cmd_trace.c — `kvsim trace`: tools for Mooncake-format traces.
 *
 *   kvsim trace stats FILE   size, lengths, arrival rate and the infinite-cache
 *                            prefix hit rate (the trace's theoretical maximum)
 *   kvsim trace gen -o FILE  seeded synthetic trace: conversation-like (Mooncake
 *                            hash_ids), RAG (--workload rag, segments),
 *                            LMCache's multi-round QA (--workload multiround-qa)
 *                            or inference-perf's shared prefix (--workload
 *                            shared-prefix)
 *   kvsim trace import ragpulse DIR -o FILE
 *                            a RAGPulse trace directory as a segment trace
 *   kvsim trace import azure|burstgpt FILE.csv -o FILE
 *                            a length-only CSV trace as Mooncake JSONL
 *   kvsim trace rechunk IN --block-tokens N -o OUT
 *                            coarser hash blocks, exactly
 *
 * Bad input files exit 2 with the reader's "FILE:LINE: FIELD: problem". */
#include "sim/cli/cli.h"
#include "sim/outfile.h"
#include "sim/replay/pic_replay.h"
#include "sim/trace/csvimport.h"
#include "sim/trace/genopts.h"
#include "sim/trace/ragpulse.h"
#include "sim/trace/rechunk.h"
#include "sim/trace/trace.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- kvsim trace stats -------------------------------------------------- */

static void stats_usage(FILE *f)
{
    fprintf(f, "usage: kvsim trace stats FILE [--json] [--block-tokens N] [--skip-bad] [--sort]\n\n"
               "Statistics of a Mooncake JSONL trace: requests, duration, arrival rate,\n"
               "input/output token mean, p50 and p99, blocks, distinct blocks, and the\n"
               "infinite-cache prefix hit rate (the best any cache can do, docs/definitions.md).\n"
               "For a segment trace (docs/pic.md) also chunks per request, how often\n"
               "chunks repeat and move, and the reusable token fractions under prefix-only and\n"
               "position-independent (mepic) reuse.\n\n"
               "  --json             one JSON object instead of the table\n"
               "  --block-tokens N   tokens per hash block (default 512); printed as \"block size\",\n"
               "                     with a warning when the trace's id counts do not fit it\n"
               "  --skip-bad         skip bad lines (counted) instead of failing\n"
               "  --sort             accept out-of-order timestamps by sorting (loads the file)\n"
               "  -h, --help         this text\n");
}

/* Segment traces (docs/pic.md): chunk reuse and the reusable fractions. */
static void print_segment_table(const kv_pic_trace_stats *p)
{
    printf("segments         %" PRId64 " requests, %.2f chunks each; %.4f of chunk occurrences repeat one seen "
           "before,\n                 %.4f of reused chunks appear at more than one position\n",
           p->segment_requests, p->chunks_per_request, p->chunk_repeat_share, p->multi_position_share);
    printf("reusable         %.4f of input tokens prefix-only, %.4f position-independent (mepic; infinite cache, "
           "one at a time)\n",
           p->reusable_fraction_prefix, p->reusable_fraction_pic);
}

static void print_stats_table(const char *path, uint64_t fp, const sim_trace_stats *s, const kv_pic_trace_stats *p)
{
    printf("trace            %s\n", path);
    printf("fingerprint      %016" PRIx64 "\n", fp);
    printf("requests         %" PRId64 "\n", s->requests);
    printf("duration         %.1f s\n", s->duration_s);
    if (s->duration_s > 0) printf("arrival rate     %.3f req/s\n", s->arrival_rate);
    else printf("arrival rate     none: %s\n", s->requests > 1 ? "every request at one instant" : "one request");
    /* a median between two lengths is a half (3199.5 once printed as 3200) */
    printf("input tokens     mean %.1f  p50 %.10g  p99 %.10g\n", s->input_mean, s->input_p50, s->input_p99);
    printf("output tokens    mean %.1f  p50 %.10g  p99 %.10g\n", s->output_mean, s->output_p50, s->output_p99);
    printf("block size       %d tokens (assumed: --block-tokens)\n", s->block_tokens);
    printf("blocks           %" PRId64 " (%" PRId64 " distinct)\n", s->blocks, s->distinct_blocks);
    printf("max hit rate     %.4f blocks, %.4f tokens (infinite cache)\n", s->max_hit_rate_blocks,
           s->max_hit_rate_tokens);
    if (p) print_segment_table(p);
    printf("skipped lines    %" PRId64 "\n", s->skipped);
}

static json_t *dist_json(double mean, double p50, double p99)
{
    return json_pack("{s:f, s:f, s:f}", "mean", mean, "p50", p50, "p99", p99);
}

static void print_stats_json(const char *path, uint64_t fp, const sim_trace_stats *s, const kv_pic_trace_stats *p)
{
    char fps[17];
    snprintf(fps, sizeof fps, "%016" PRIx64, fp);
    json_t *o =
        json_pack("{s:s, s:s, s:I, s:f, s:o, s:o, s:o, s:I, s:I, s:f, s:f, s:I}", "trace", path, "fingerprint", fps,
                  "requests", (json_int_t)s->requests, "duration_s", s->duration_s, "arrival_rate",
                  s->duration_s > 0 ? json_real(s->arrival_rate) : json_null(), /* no span: no rate, not 0 */
                  "input", dist_json(s->input_mean, s->input_p50, s->input_p99), "output",
                  dist_json(s->output_mean, s->output_p50, s->output_p99), "blocks", (json_int_t)s->blocks,
                  "distinct_blocks", (json_int_t)s->distinct_blocks, "max_hit_rate_blocks", s->max_hit_rate_blocks,
                  "max_hit_rate_tokens", s->max_hit_rate_tokens, "skipped", (json_int_t)s->skipped);
    if (p)
        json_object_update_new(
            o, json_pack("{s:I, s:f, s:f, s:f, s:f, s:f}", "segment_requests", (json_int_t)p->segment_requests,
                         "chunks_per_request", p->chunks_per_request, "chunk_repeat_share", p->chunk_repeat_share,
                         "multi_position_share", p->multi_position_share, "reusable_fraction_prefix",
                         p->reusable_fraction_prefix, "reusable_fraction_pic", p->reusable_fraction_pic));
    json_dumpf(o, stdout, JSON_REAL_PRECISION(12));
    putchar('\n');
    json_decref(o);
}

/* Under --skip-bad, name the first skipped line. */
static void warn_skipped(const char *path, const sim_trace_opts *opts, int64_t skipped)
{
    sim_err err;
    if (sim_trace_first_bad_line(path, opts, &err))
        fprintf(stderr, "kvsim trace stats: warning: skipped %" PRId64 " bad line(s), the first: %s\n", skipped,
                err.msg);
}

/* The trace's lengths and id counts do not fit the assumed block size:
 * say how many requests, the first, and which block sizes would fit. */
static void warn_block_fit(const char *given, const sim_trace_stats *s)
{
    char text[512];
    if (sim_block_fit_empty_warning(&s->fit, given, text, sizeof text)) { /* no ids at all: no size to give */
        fprintf(stderr, "kvsim trace stats: warning: %s\n", text);
        return;
    }
    fprintf(stderr,
            "kvsim trace stats: warning: %" PRId64 " of %" PRId64 " requests have fewer hash_ids than "
            "ceil(input_length / %d) (the first: %s:%" PRId64 "): ",
            s->fit.short_ids, s->requests, s->block_tokens, given, s->fit.first_short_line);
    char fits[128];
    sim_block_fit_text(&s->fit, fits, sizeof fits);
    fputs(fits, stderr);
    if (s->fit.lo == s->fit.hi) fprintf(stderr, ": give --block-tokens %" PRId64 "\n", s->fit.lo);
    else fputs(s->fit.lo < s->fit.hi ? ": give --block-tokens\n" : "\n", stderr);
}

/* Statistics of the trace at path (a pipe's spooled copy: messages and
 * output name `given`), printed as a table or JSON. */
static int trace_stats_of(const char *path, const char *given, const sim_trace_opts *opts, uint64_t fp, bool json,
                          sim_trace_stats *s, sim_err *err)
{
    kv_pic_trace_stats ps;
    sim_request **kept;
    int64_t nkept;
    if (sim_trace_compute_stats_keep(path, opts, s, &kept, &nkept, err)) return -1;
    if (s->segment_requests && kv_pic_trace_stats_of(path, opts, kept, nkept, &ps, err)) return -1;
    if (s->skipped) warn_skipped(path, opts, s->skipped);
    if (s->fit.short_ids) warn_block_fit(given, s);
    if (s->distinct_blocks >= SIM_TRACE_WHOLE_BLOCKS)
        fprintf(stderr,
                "kvsim trace stats: note: %" PRId64 " distinct blocks were held for the infinite-cache hit rate: "
                "memory grew with the trace (docs/run.md, \"Long traces\")\n",
                s->distinct_blocks);
    if (json) print_stats_json(given, fp, s, s->segment_requests ? &ps : NULL);
    else print_stats_table(given, fp, s, s->segment_requests ? &ps : NULL);
    return 0;
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
    if (optind != argc - 1)
        return sim_usage_error("trace stats", "expected exactly one FILE (see kvsim trace stats --help)");
    const char *given = argv[optind];
    char path[PATH_MAX];
    bool spooled = false;
    uint64_t fp;
    sim_trace_stats s;
    opts.name = given; /* a pipe is read from its spooled copy, named as given */
    if (sim_trace_materialize(given, path, sizeof path, &spooled, &fp, &err))
        return sim_usage_error("trace stats", err.msg);
    int rc = trace_stats_of(path, given, &opts, fp, json, &s, &err);
    if (spooled) unlink(path);
    return rc ? sim_usage_error("trace stats", err.msg) : SIM_EXIT_OK;
}
/* ---- kvsim trace gen ---------------------------------------------------- */

static void gen_usage(FILE *f)
{
    sim_gen_args d = sim_gen_defaults();
    fprintf(f, "usage: kvsim trace gen [--workload conversation|rag|multiround-qa|shared-prefix] [options] -o FILE\n\n"
               "Write a seeded synthetic trace (JSONL); the same options and seed give the\n"
               "same bytes. An option of another workload is an error.\n\n"
               "  -o, --output FILE          where to write (\"-\" = stdout); required\n"
               "  --workload NAME            conversation, rag, multiround-qa or shared-prefix\n"
               "                             (default conversation)\n"
               "  -h, --help                 this text\n");
    for (int w = 0; w < SIM_NWORKLOADS; w++) {
        d.wl = (sim_gen_workload)w;
        fprintf(f, "\n%s\n\n", sim_gen_info(d.wl)->about);
        for (size_t i = 0; i < sim_gen_info(d.wl)->nopts; i++) {
            const sim_gen_opt *g = &sim_gen_info(d.wl)->opts[i];
            char flag[40], def[64];
            snprintf(flag, sizeof flag, "--%s %s", g->name, sim_gen_metavar(g));
            sim_gen_format_default(g, &d, def, sizeof def);
            fprintf(f, "  %-26s %s (default %s)\n", flag, g->help, def);
        }
    }
}

/* getopt's table: the union of the workloads' option names (values 256 +
 * index into names[]), then --workload, --output, --help. */
static void gen_longopts(struct option *lo, const char **names)
{
    size_t n = 0;
    for (int w = 0; w < SIM_NWORKLOADS; w++)
        for (size_t i = 0; i < sim_gen_info(w)->nopts; i++) {
            const char *name = sim_gen_info(w)->opts[i].name;
            size_t j = 0;
            while (j < n && strcmp(names[j], name)) j++;
            if (j < n) continue;
            names[n] = name;
            int has_arg = sim_gen_info(w)->opts[i].kind == SIM_GEN_FLAG ? no_argument : required_argument;
            lo[n] = (struct option){name, has_arg, NULL, 256 + (int)n};
            n++;
        }
    lo[n++] = (struct option){"workload", required_argument, NULL, 'w'};
    lo[n++] = (struct option){"output", required_argument, NULL, 'o'};
    lo[n++] = (struct option){"help", no_argument, NULL, 'h'};
    lo[n] = (struct option){NULL, 0, NULL, 0};
}

/* Run the chosen generator into `path`. */
static int write_trace(const sim_gen_args *a, const char *path)
{
    sim_outfile of;
    int rc = sim_cli_out_open(&of, "trace gen", path);
    if (rc) return rc;
    sim_err err;
    int64_t written;
    rc = sim_gen_write(a, of.f, path, &written, &err);
    if ((rc = sim_cli_out_close(&of, "trace gen", rc, &err))) return rc;
    fprintf(stderr, "kvsim trace gen: wrote %" PRId64 " requests to %s\n", written,
            strcmp(path, "-") ? path : "stdout");
    return SIM_EXIT_OK;
}
/* given[] has room for every argument. */
static int gen_parse(int argc, char **argv, const struct option *longopts, const char **names, sim_gen_given *given);

static int gen_main(int argc, char **argv, sim_gen_given *given)
{
    size_t nopts = 0;
    for (int w = 0; w < SIM_NWORKLOADS; w++) nopts += sim_gen_info(w)->nopts;
    struct option *longopts = sim_xcalloc(nopts + 4, sizeof *longopts);
    const char **names = sim_xcalloc(nopts, sizeof *names);
    gen_longopts(longopts, names);
    int rc = gen_parse(argc, argv, longopts, names, given);
    free(longopts);
    free(names);
    return rc;
}

/* Parse with the table gen_longopts made, then check and write. */
static int gen_parse(int argc, char **argv, const struct option *longopts, const char **names, sim_gen_given *given)
{
    sim_gen_args a = sim_gen_defaults();
    const char *path = NULL;
    size_t ngiven = 0;
    sim_err err;
    int c;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        if (c >= 256) {
            given[ngiven++] = (sim_gen_given){names[c - 256], optarg};
        } else if (c == 'w') {
            if (sim_gen_parse_workload(optarg, &a.wl, &err)) return sim_usage_error("trace gen", err.msg);
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
    if (sim_gen_apply(&a, given, ngiven, &err)) return sim_usage_error("trace gen", err.msg);
    if (optind != argc) return sim_cli_unexpected_error("trace gen", argv[optind], NULL);
    if (!path) return sim_usage_error("trace gen", "-o FILE is required (\"-\" for stdout)");
    if (sim_gen_check(&a, &err)) return sim_usage_error("trace gen", err.msg);
    return write_trace(&a, path);
}

static int trace_gen(int argc, char **argv)
{
    sim_gen_given *given = sim_xcalloc((size_t)argc + 1, sizeof *given);
    int rc = gen_main(argc, argv, given);
    free(given);
    return rc;
}

/* ---- dispatch ----------------------------------------------------------- */

static const sim_cmd trace_cmds[] = {
    {"stats", "statistics and the infinite-cache hit rate of a trace", trace_stats},
    {"gen", "write a seeded synthetic trace (conversation, RAG, multi-round QA, shared prefix)", trace_gen},
    {"import", "convert a published trace (RAGPulse, Azure, BurstGPT) into a kvsim trace", cmd_trace_import},
    {"rechunk", "coarsen a trace's hash blocks by an integer factor, exactly", cmd_trace_rechunk},
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
    const char *names[NTRACE_CMDS];
    for (size_t i = 0; i < NTRACE_CMDS; i++) {
        if (!strcmp(argv[1], trace_cmds[i].name)) return trace_cmds[i].fn(argc - 1, argv + 1);
        names[i] = trace_cmds[i].name;
    }
    fprintf(stderr, "kvsim trace: unknown subcommand '%s'%s\n\n", argv[1],
            sim_did_you_mean(argv[1], names, NTRACE_CMDS));
    trace_usage(stderr);
    return SIM_EXIT_USAGE;
}
