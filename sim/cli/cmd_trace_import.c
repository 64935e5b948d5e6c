/* sim/cli/cmd_trace_import.c — `kvsim trace import` and `kvsim trace
 * rechunk`: published traces (RAGPulse, Azure, BurstGPT) into kvsim traces,
 * and a trace's hash blocks coarsened exactly. Parse, call sim/trace, print;
 * dispatched by sim/cli/cmd_trace.c. */
#include "sim/cli/cli.h"
#include "sim/outfile.h"
#include "sim/trace/csvimport.h"
#include "sim/trace/ragpulse.h"
#include "sim/trace/rechunk.h"
#include "sim/trace/trace.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- kvsim trace import ------------------------------------------------- */

static void import_usage(FILE *f)
{
    fprintf(f, "usage: kvsim trace import FORMAT INPUT -o FILE [options]\n\n"
               "Convert a published trace into a kvsim trace (docs/trace-import.md).\n\n"
               "formats:\n"
               "  ragpulse   RAGPulse (github.com/flashserve/RAGPulse): INPUT is a directory of\n"
               "             0_trace.jsonl and the id tables 1_sys_prompt.jsonl .. 5_web_search.jsonl;\n"
               "             written as a segment trace sorted by timestamp (stable), sessions\n"
               "             numbered 0, 1, 2, ... in order of first appearance\n");
    for (size_t i = 0; i < sim_csv_format_count(); i++)
        fprintf(f, "  %-10s %s\n", sim_csv_format_at(i)->name, sim_csv_format_at(i)->help);
    fprintf(f,
            "             (CSV, plain or gzip) written as Mooncake JSONL, timestamps in ms from\n"
            "             the first request; these traces carry no prefix information, so every\n"
            "             request gets fresh hash blocks (nothing is shared). Rows of 0 input\n"
            "             tokens and failed rows (0 output tokens) are skipped and counted.\n\n"
            "  -o, --output FILE    where to write (\"-\" = stdout); required\n"
            "  --block-tokens N     CSV formats: tokens per fresh hash block (default %d)\n"
            "  --limit N            CSV formats: stop after N requests written\n"
            "  --model NAME         burstgpt: keep only rows of this Model (e.g. ChatGPT, GPT-4)\n"
            "  --log-type TYPE      burstgpt: keep only rows of this Log Type (e.g. \"Conversation log\")\n"
            "  -h, --help           this text\n",
            sim_csv_import_default_opts().block_tokens);
}

static void ragpulse_summary(const char *dir, const char *path, const sim_ragpulse_stats *s)
{
    const char *w = "kvsim trace import: warning:";
    if (s->over)
        fprintf(stderr,
                "%s %" PRId64 " request(s) whose parts sum to more than input_length (the first: "
                "%s/0_trace.jsonl:%" PRId64 "): input_length raised to the sum, by at most %" PRId64 " tokens\n",
                w, s->over, dir, s->over_first_line, s->over_max_tokens);
    if (s->irregular_prefix)
        fprintf(stderr,
                "%s %" PRId64 " request(s) whose sys_prompt blocks are not 512 tokens but the last (the first: "
                "%s/0_trace.jsonl:%" PRId64 "): written as they are\n",
                w, s->irregular_prefix, dir, s->irregular_prefix_first_line);
    if (s->empty_parts) fprintf(stderr, "%s %" PRId64 " part id(s) of 0 tokens left out\n", w, s->empty_parts);
    fprintf(stderr,
            "kvsim trace import: wrote %" PRId64 " requests (%" PRId64 " sessions, %" PRId64
            " out of timestamp order) from %s to %s\n",
            s->requests, s->sessions, s->reordered, dir, strcmp(path, "-") ? path : "stdout");
}

static void csv_summary(const sim_csv_format *fmt, const char *in, const char *path, const sim_csv_import_opts *o,
                        const sim_csv_import_stats *s)
{
    fprintf(stderr, "kvsim trace import: wrote %" PRId64 " requests from %" PRId64 " %s row(s) of %s to %s%s\n",
            s->requests, s->rows, fmt->name, in, strcmp(path, "-") ? path : "stdout",
            s->limited ? " (stopped at --limit)" : "");
    if (s->filtered) fprintf(stderr, "  %" PRId64 " row(s) of another --model / --log-type left out\n", s->filtered);
    if (s->zero_input)
        fprintf(stderr, "  %" PRId64 " row(s) of 0 input tokens skipped (the first: %s:%" PRId64 ")\n", s->zero_input,
                in, s->zero_input_first_line);
    if (s->failed)
        fprintf(stderr, "  %" PRId64 " failed row(s) (0 output tokens) skipped (the first: %s:%" PRId64 ")\n",
                s->failed, in, s->failed_first_line);
    fprintf(stderr,
            "  %" PRId64 " fresh hash blocks of %d tokens: the %s trace has no prefix information, so no block is "
            "shared\n",
            s->blocks, o->block_tokens, fmt->name);
}

typedef struct import_args {
    const char *path; /* -o */
    sim_csv_import_opts csv;
    bool csv_given; /* --block-tokens or --limit */
} import_args;

/* One option of kvsim trace import into a: 0, or a usage exit code. */
static int import_opt(int c, import_args *a)
{
    sim_err err;
    int64_t v;
    switch (c) {
    case 'o': a->path = optarg; return 0;
    case 'm': a->csv.model = optarg; return 0;
    case 'l': a->csv.log_type = optarg; return 0;
    case 'b':
    case 'n':
        if (sim_parse_i64(optarg, c == 'b' ? "--block-tokens" : "--limit", &v, &err))
            return sim_usage_error("trace import", err.msg);
        if (c == 'b' && (v < 1 || v > 1 << 20))
            return sim_usage_error("trace import", "--block-tokens must be in [1, 2^20]");
        if (c == 'n' && v < 1) return sim_usage_error("trace import", "--limit must be at least 1");
        if (c == 'b') a->csv.block_tokens = (int)v;
        else a->csv.limit = v;
        a->csv_given = true;
        return 0;
    case 'h': import_usage(stdout); return -1;
    default: import_usage(stderr); return SIM_EXIT_USAGE;
    }
}

/* The options a format does not take are usage errors. */
static int import_check(const char *format, const sim_csv_format *fmt, const import_args *a)
{
    char msg[256];
    if (!fmt && a->csv_given) {
        snprintf(msg, sizeof msg, "--block-tokens and --limit are for the CSV formats, not %s", format);
        return sim_usage_error("trace import", msg);
    }
    if ((!fmt || !fmt->filters) && (a->csv.model || a->csv.log_type)) {
        snprintf(msg, sizeof msg, "--model and --log-type are for burstgpt, not %s", format);
        return sim_usage_error("trace import", msg);
    }
    if (!a->path) return sim_usage_error("trace import", "-o FILE is required (\"-\" for stdout)");
    return SIM_EXIT_OK;
}

static int import_run(const char *format, const char *in, const import_args *a)
{
    const sim_csv_format *fmt = sim_csv_format_find(format);
    int rc = import_check(format, fmt, a);
    sim_outfile of;
    if (rc || (rc = sim_cli_out_open(&of, "trace import", a->path))) return rc;
    sim_err err;
    sim_ragpulse_stats rs;
    sim_csv_import_stats cs;
    rc = fmt ? sim_csv_import(fmt, in, &a->csv, of.f, a->path, &cs, &err)
             : sim_ragpulse_import(in, of.f, a->path, &rs, &err);
    if ((rc = sim_cli_out_close(&of, "trace import", rc, &err))) return rc;
    if (fmt) csv_summary(fmt, in, a->path, &a->csv, &cs);
    else ragpulse_summary(in, a->path, &rs);
    return SIM_EXIT_OK;
}

int cmd_trace_import(int argc, char **argv)
{
    static const struct option longopts[] = {{"output", required_argument, NULL, 'o'},
                                             {"block-tokens", required_argument, NULL, 'b'},
                                             {"limit", required_argument, NULL, 'n'},
                                             {"model", required_argument, NULL, 'm'},
                                             {"log-type", required_argument, NULL, 'l'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    import_args a = {.csv = sim_csv_import_default_opts()};
    int c, rc;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1)
        if ((rc = import_opt(c, &a))) return rc < 0 ? SIM_EXIT_OK : rc;
    char msg[1200], names[256] = "ragpulse";
    for (size_t i = 0; i < sim_csv_format_count(); i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), ", %s", sim_csv_format_at(i)->name);
    if (optind < argc && strcmp(argv[optind], "ragpulse") && !sim_csv_format_find(argv[optind])) {
        snprintf(msg, sizeof msg, "unknown format '%s' (supported: %s)", argv[optind], names);
        return sim_usage_error("trace import", msg);
    }
    snprintf(msg, sizeof msg, "expected FORMAT INPUT, FORMAT one of %s (see kvsim trace import --help)", names);
    if (argc - optind != 2) return sim_usage_error("trace import", msg);
    return import_run(argv[optind], argv[optind + 1], &a);
}

/* ---- kvsim trace rechunk -------------------------------------------------- */

static void rechunk_usage(FILE *f)
{
    fprintf(f,
            "usage: kvsim trace rechunk IN --block-tokens N -o OUT [--from-block-tokens M] [--ids first|key]\n\n"
            "Coarsen a Mooncake trace's hash blocks from M to N = f*M tokens, exactly: a coarse\n"
            "block is shared iff all its fine blocks are (the same fine ids up to its end);\n"
            "a request's last, partly filled coarse block stays distinct from every full one.\n"
            "A finer N, or one that is not a multiple of M, is refused. Other fields are kept.\n\n"
            "  --block-tokens N        tokens per block of the output; required\n"
            "  --from-block-tokens M   tokens per block of IN (default %d, Mooncake's)\n"
            "  --ids first|key         a coarse block's id: first = 0, 1, 2, ... in order of first\n"
            "                          appearance (default; memory grows with the distinct blocks);\n"
            "                          key = its 63-bit chained key (constant memory, the same blocks\n"
            "                          shared, distinct blocks not counted)\n"
            "  -o, --output OUT        where to write (\"-\" = stdout); required\n"
            "  -h, --help              this text\n",
            sim_trace_default_opts().block_tokens);
}

static int rechunk_run(const char *in, int from, int to, sim_rechunk_ids ids, const char *path)
{
    sim_err err;
    if (sim_rechunk_check(from, to, &err)) return sim_usage_error("trace rechunk", err.msg);
    sim_outfile of;
    int rc = sim_cli_out_open(&of, "trace rechunk", path);
    if (rc) return rc;
    sim_rechunk_stats st;
    rc = sim_rechunk(in, from, to, ids, of.f, path, &st, &err);
    if ((rc = sim_cli_out_close(&of, "trace rechunk", rc, &err))) return rc;
    if (ids == SIM_RECHUNK_IDS_KEY)
        return fprintf(stderr,
                       "kvsim trace rechunk: wrote %" PRId64 " requests to %s: %" PRId64
                       " blocks of %d tokens became %" PRId64
                       " blocks of %d tokens (ids: chained keys; distinct blocks not counted)\n",
                       st.requests, strcmp(path, "-") ? path : "stdout", st.fine_blocks, from, st.coarse_blocks, to),
               SIM_EXIT_OK;
    fprintf(stderr,
            "kvsim trace rechunk: wrote %" PRId64 " requests to %s: %" PRId64 " blocks of %d tokens (%" PRId64
            " distinct) became %" PRId64 " blocks of %d tokens (%" PRId64 " distinct)\n",
            st.requests, strcmp(path, "-") ? path : "stdout", st.fine_blocks, from, st.fine_distinct, st.coarse_blocks,
            to, st.coarse_distinct);
    if (st.fine_distinct >= SIM_TRACE_WHOLE_BLOCKS)
        fprintf(stderr,
                "kvsim trace rechunk: note: %" PRId64 " distinct blocks were held to number the coarse ones in "
                "order of first appearance: memory grew with the trace; --ids key does not (docs/run.md, \"Long "
                "traces\")\n",
                st.fine_distinct);
    return SIM_EXIT_OK;
}

int cmd_trace_rechunk(int argc, char **argv)
{
    static const struct option longopts[] = {{"block-tokens", required_argument, NULL, 'b'},
                                             {"from-block-tokens", required_argument, NULL, 'f'},
                                             {"output", required_argument, NULL, 'o'},
                                             {"ids", required_argument, NULL, 'i'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int64_t to = 0, from = sim_trace_default_opts().block_tokens, v;
    const char *path = NULL;
    sim_rechunk_ids ids = SIM_RECHUNK_IDS_FIRST;
    sim_err err;
    int c;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        if (c == 'o') {
            path = optarg;
        } else if (c == 'i') {
            if (strcmp(optarg, "first") && strcmp(optarg, "key")) {
                snprintf(err.msg, sizeof err.msg, "--ids: expected first or key, got '%.200s'", optarg);
                return sim_usage_error("trace rechunk", err.msg);
            }
            ids = strcmp(optarg, "key") ? SIM_RECHUNK_IDS_FIRST : SIM_RECHUNK_IDS_KEY;
        } else if (c == 'b' || c == 'f') {
            const char *name = c == 'b' ? "--block-tokens" : "--from-block-tokens";
            if (sim_parse_i64(optarg, name, &v, &err)) return sim_usage_error("trace rechunk", err.msg);
            if (v < 1 || v > 1 << 20) {
                snprintf(err.msg, sizeof err.msg, "%s must be in [1, 2^20]", name);
                return sim_usage_error("trace rechunk", err.msg);
            }
            *(c == 'b' ? &to : &from) = v;
        } else {
            rechunk_usage(c == 'h' ? stdout : stderr);
            return c == 'h' ? SIM_EXIT_OK : SIM_EXIT_USAGE;
        }
    }
    if (optind != argc - 1)
        return sim_usage_error("trace rechunk", "expected exactly one IN trace (see kvsim trace rechunk --help)");
    if (!to) return sim_usage_error("trace rechunk", "--block-tokens N is required");
    if (!path) return sim_usage_error("trace rechunk", "-o OUT is required (\"-\" for stdout)");
    return rechunk_run(argv[optind], (int)from, (int)to, ids, path);
}
