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
#include "sim/trace/ragpulse.h"
#include "sim/trace/rechunk.h"
#include "sim/trace/trace.h"
#include "sim/trace/tracegen.h"
#include "sim/trace/tracegen_mqa.h"
#include "sim/trace/tracegen_rag.h"
#include "sim/trace/tracegen_sp.h"

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
    printf("arrival rate     %.3f req/s\n", s->arrival_rate);
    printf("input tokens     mean %.1f  p50 %.0f  p99 %.0f\n", s->input_mean, s->input_p50, s->input_p99);
    printf("output tokens    mean %.1f  p50 %.0f  p99 %.0f\n", s->output_mean, s->output_p50, s->output_p99);
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
        json_pack("{s:s, s:s, s:I, s:f, s:f, s:o, s:o, s:I, s:I, s:f, s:f, s:I}", "trace", path, "fingerprint", fps,
                  "requests", (json_int_t)s->requests, "duration_s", s->duration_s, "arrival_rate", s->arrival_rate,
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

/* A segment trace's own statistics, of the n requests kept by the first
 * pass (it keeps them when the first has segments; else read again): 0,
 * or -1 with err. */
static int segment_stats(const char *path, const sim_trace_opts *opts, sim_request **kept, int64_t n,
                         kv_pic_trace_stats *out, sim_err *err)
{
    kv_pic_trace t;
    int rc = 0;
    if (kept) kv_pic_trace_adopt(&t, path, kept, n);
    else rc = kv_pic_trace_load(&t, path, opts, err);
    if (rc == 0) kv_pic_trace_stats_compute(&t, opts->block_tokens, out);
    kv_pic_trace_free(&t);
    return rc;
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

/* The trace's lengths and id counts do not fit the assumed block size:
 * say how many requests, the first, and which block sizes would fit. */
static void warn_block_fit(const char *given, const sim_trace_stats *s)
{
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
    if (s->segment_requests && segment_stats(path, opts, kept, nkept, &ps, err)) return -1;
    if (s->skipped) warn_skipped(path, *opts, s->skipped);
    if (s->fit.short_ids) warn_block_fit(given, s);
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
/* ---- output files (trace gen, trace import) --------------------------------- */

/* Open / close a command's output (sim/outfile.h: whole or not at all). */
static int out_open(sim_outfile *o, const char *cmd, const char *path)
{
    sim_err err;
    return sim_outfile_open(o, path, &err) ? sim_usage_error(cmd, err.msg) : SIM_EXIT_OK;
}

/* Close after the writer returned rc (err set when rc != 0); the exit code. */
static int out_close(sim_outfile *o, const char *cmd, int rc, const sim_err *err)
{
    if (rc) {
        sim_outfile_abort(o);
        return sim_usage_error(cmd, err->msg);
    }
    sim_err e;
    return sim_outfile_close(o, &e) ? sim_usage_error(cmd, e.msg) : SIM_EXIT_OK;
}

/* ---- kvsim trace gen ---------------------------------------------------- */

/* GEN_FLAG: a bool set by the bare flag; GEN_FN: parsed and printed by
 * functions of its own (gen_fns[offset]), which take the whole options struct. */
typedef enum gen_opt_kind { GEN_I64, GEN_INT, GEN_DOUBLE, GEN_SEED, GEN_PATH, GEN_FLAG, GEN_FN } gen_opt_kind;

/* Every generator option: its flag, where it lands in its workload's
 * options struct, and its help line (the default printed next to it comes
 * from the defaults). */
typedef struct gen_opt {
    const char *name;
    gen_opt_kind kind;
    size_t offset; /* GEN_FN: the index of its functions in gen_fns[] */
    const char *help;
} gen_opt;

typedef struct gen_fn {
    const char *metavar;
    int (*parse)(const char *arg, void *opts, sim_err *err);
    void (*format)(const void *opts, char *buf, size_t n);
} gen_fn;

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
    {"target-hit-rate", GEN_DOUBLE, GEN_FIELD(target_hit_rate),
     "a ceiling token hit rate in [0, 0.99]: reuse earlier prefixes to it (-1 = off)"},
};
#define NGEN_OPTS (sizeof gen_opts / sizeof gen_opts[0])

#define RAG_FIELD(f) offsetof(sim_tracegen_rag_opts, f)
static const gen_opt rag_opts[] = {
    {"requests", GEN_I64, RAG_FIELD(requests), "requests to write"},
    {"rate", GEN_DOUBLE, RAG_FIELD(rate), "Poisson arrival rate, requests/s"},
    {"passages", GEN_INT, RAG_FIELD(passages), "passages in the corpus (id = popularity rank, 0 first)"},
    {"k", GEN_INT, RAG_FIELD(k), "distinct passages per request, in random order"},
    {"passage-mean", GEN_DOUBLE, RAG_FIELD(passage_mean), "mean passage tokens (lognormal, drawn once each)"},
    {"passage-sigma", GEN_DOUBLE, RAG_FIELD(passage_sigma), "lognormal sigma of passage lengths"},
    {"max-passage", GEN_INT, RAG_FIELD(max_passage), "passage tokens at most"},
    {"zipf", GEN_DOUBLE, RAG_FIELD(zipf), "Zipf exponent of passage popularity (0 = uniform)"},
    {"system-tokens", GEN_INT, RAG_FIELD(system_tokens), "shared system prompt tokens, a prefix (0 = none)"},
    {"question-mean", GEN_DOUBLE, RAG_FIELD(question_mean), "mean unique question tokens (lognormal)"},
    {"question-sigma", GEN_DOUBLE, RAG_FIELD(question_sigma), "lognormal sigma of question lengths"},
    {"output-mean", GEN_DOUBLE, RAG_FIELD(output_mean), "mean output tokens (lognormal)"},
    {"output-sigma", GEN_DOUBLE, RAG_FIELD(output_sigma), "lognormal sigma of output tokens"},
    {"max-output", GEN_INT, RAG_FIELD(max_output), "output tokens at most"},
    {"seed", GEN_SEED, RAG_FIELD(seed), "RNG seed (same seed, same bytes)"},
};
#define NRAG_OPTS (sizeof rag_opts / sizeof rag_opts[0])

/* LMCache §7.2's multi-round QA (sim/trace/tracegen_mqa.c has the sources of the defaults). */
#define MQA_FIELD(f) offsetof(sim_tracegen_mqa_opts, f)
static const gen_opt mqa_opts[] = {
    {"requests", GEN_I64, MQA_FIELD(requests), "requests to write"},
    {"rate", GEN_DOUBLE, MQA_FIELD(rate), "Poisson arrival rate over all users, requests/s (QPS)"},
    {"block-tokens", GEN_INT, MQA_FIELD(block_tokens), "tokens per hash block"},
    {"documents", GEN_INT, MQA_FIELD(documents), "documents (each user reads one)"},
    {"doc-tokens", GEN_DOUBLE, MQA_FIELD(doc_tokens), "mean document tokens (drawn once each)"},
    {"doc-sigma", GEN_DOUBLE, MQA_FIELD(doc_sigma), "lognormal sigma of document lengths (0 = fixed)"},
    {"doc-zipf", GEN_DOUBLE, MQA_FIELD(doc_zipf), "Zipf exponent of document popularity (0 = round-robin)"},
    {"users", GEN_INT, MQA_FIELD(users), "concurrent users, taking turns round-robin"},
    {"rounds", GEN_INT, MQA_FIELD(rounds), "questions per user (then a new user joins)"},
    {"question-tokens", GEN_DOUBLE, MQA_FIELD(question_tokens), "mean unique question tokens"},
    {"question-sigma", GEN_DOUBLE, MQA_FIELD(question_sigma), "lognormal sigma of question lengths (0 = fixed)"},
    {"answer-tokens", GEN_DOUBLE, MQA_FIELD(answer_tokens), "mean answer (output) tokens"},
    {"answer-sigma", GEN_DOUBLE, MQA_FIELD(answer_sigma), "lognormal sigma of answer lengths (0 = fixed)"},
    {"seed", GEN_SEED, MQA_FIELD(seed), "RNG seed (same seed, same bytes)"},
};
#define NMQA_OPTS (sizeof mqa_opts / sizeof mqa_opts[0])

/* inference-perf's shared_prefix (sim/trace/tracegen_sp.c has the sources of the defaults). */
static int sp_parse_arrivals(const char *arg, void *opts, sim_err *err)
{
    sim_tracegen_sp_opts *o = opts;
    o->poisson = !strcmp(arg, "poisson");
    o->jittered = !strcmp(arg, "jittered");
    if (!o->poisson && !o->jittered && strcmp(arg, "constant"))
        return sim_errf(err, "--arrivals: '%s' is not an arrival process (constant, poisson, jittered)", arg);
    return 0;
}

static void sp_format_arrivals(const void *opts, char *buf, size_t n)
{
    const sim_tracegen_sp_opts *o = opts;
    snprintf(buf, n, "%s", o->poisson ? "poisson" : o->jittered ? "jittered" : "constant");
}

static int sp_parse_stages(const char *arg, void *opts, sim_err *err)
{
    return sim_tracegen_sp_parse_stages(arg, opts, err);
}

static void sp_format_stages(const void *opts, char *buf, size_t n)
{
    const sim_tracegen_sp_opts *o = opts;
    size_t len = 0;
    buf[0] = 0;
    for (int k = 0; k < o->nstages && len < n; k++)
        len += (size_t)snprintf(buf + len, n - len, "%s%g:%g", k ? "," : "", o->stages[k].rate_rps,
                                o->stages[k].duration_s);
}

enum { FN_SP_STAGES, FN_SP_ARRIVALS };
static const gen_fn gen_fns[] = {
    [FN_SP_STAGES] = {"R:S,...", sp_parse_stages, sp_format_stages},
    [FN_SP_ARRIVALS] = {"KIND", sp_parse_arrivals, sp_format_arrivals},
};

#define SP_FIELD(f) offsetof(sim_tracegen_sp_opts, f)
static const gen_opt sp_opts[] = {
    {"system-prompts", GEN_INT, SP_FIELD(system_prompts), "shared system prompts (groups)"},
    {"users-per-prompt", GEN_INT, SP_FIELD(users_per_prompt), "users (distinct questions) per system prompt"},
    {"system-tokens", GEN_INT, SP_FIELD(system_tokens), "system prompt tokens, shared by its users"},
    {"question-tokens", GEN_INT, SP_FIELD(question_tokens), "question tokens, one question per user"},
    {"output-tokens", GEN_INT, SP_FIELD(output_tokens), "output tokens of every request"},
    {"multi-turn", GEN_FLAG, SP_FIELD(multi_turn), "a user's prompt grows with its earlier questions and answers"},
    {"stages", GEN_FN, FN_SP_STAGES, "load stages, requests/s for seconds each"},
    {"arrivals", GEN_FN, FN_SP_ARRIVALS, "constant, poisson or jittered (inference-perf's timer)"},
    {"requests", GEN_I64, SP_FIELD(requests), "stop after N requests (0 = when the stages end)"},
    {"block-tokens", GEN_INT, SP_FIELD(block_tokens), "tokens per hash block"},
    {"seed", GEN_SEED, SP_FIELD(seed), "RNG seed (same seed, same bytes)"},
};
#define NSP_OPTS (sizeof sp_opts / sizeof sp_opts[0])

typedef enum gen_workload { WL_CONVERSATION, WL_RAG, WL_MQA, WL_SP, NWORKLOADS } gen_workload;

static const struct {
    const char *name;
    const gen_opt *opts;
    size_t nopts;
    const char *about;
} workloads[NWORKLOADS] = {
    [WL_CONVERSATION] = {"conversation", gen_opts, NGEN_OPTS,
                         "--workload conversation (the default): Mooncake-format requests\n"
                         "(hash_ids) with shared system prompts of Zipf popularity and multi-turn\n"
                         "sessions whose prefix grows turn by turn; every request carries \"session\"."},
    [WL_RAG] = {"rag", rag_opts, NRAG_OPTS,
                "--workload rag: a segment trace (docs/trace.md) of SQuAD-like RAG: k\n"
                "distinct passages of a corpus with Zipf popularity, in random order,\n"
                "between a shared system prompt (a prefix segment) and a unique question."},
    [WL_MQA] = {"multiround-qa", mqa_opts, NMQA_OPTS,
                "--workload multiround-qa: the multi-round QA of the LMCache paper (section 7.2),\n"
                "Mooncake-format (hash_ids): users take turns asking short unique questions\n"
                "about a ~10K-token document; a round's prompt = document + earlier rounds +\n"
                "the new question, so earlier rounds are a reusable prefix."},
    [WL_SP] = {"shared-prefix", sp_opts, NSP_OPTS,
               "--workload shared-prefix: inference-perf's shared_prefix load, Mooncake-format\n"
               "(hash_ids): a shuffled pool of system prompts x users (a shared system\n"
               "prompt + a distinct question each) sent in turn, so later requests repeat\n"
               "whole prompts, under constant or Poisson load stages."},
};

/* Every workload's options, filled before the workload is known. */
typedef struct gen_args {
    gen_workload wl;
    sim_tracegen_opts conv;
    sim_tracegen_rag_opts rag;
    sim_tracegen_mqa_opts mqa;
    sim_tracegen_sp_opts sp;
} gen_args;

static gen_args gen_defaults(void)
{
    return (gen_args){.wl = WL_CONVERSATION,
                      .conv = sim_tracegen_default_opts(),
                      .rag = sim_tracegen_rag_default_opts(),
                      .mqa = sim_tracegen_mqa_default_opts(),
                      .sp = sim_tracegen_sp_default_opts()};
}

static void *gen_target(gen_args *a)
{
    switch (a->wl) {
    case WL_RAG: return &a->rag;
    case WL_MQA: return &a->mqa;
    case WL_SP: return &a->sp;
    default: return &a->conv;
    }
}

static void format_gen_default(const gen_opt *g, const void *d, char *buf, size_t n)
{
    const char *p = (const char *)d + g->offset;
    switch (g->kind) {
    case GEN_I64: snprintf(buf, n, "%" PRId64, *(const int64_t *)(const void *)p); break;
    case GEN_INT: snprintf(buf, n, "%d", *(const int *)(const void *)p); break;
    case GEN_DOUBLE: snprintf(buf, n, "%g", *(const double *)(const void *)p); break;
    case GEN_SEED: snprintf(buf, n, "%" PRIu64, *(const uint64_t *)(const void *)p); break;
    case GEN_PATH: snprintf(buf, n, "none"); break;
    case GEN_FLAG: snprintf(buf, n, "%s", *(const bool *)(const void *)p ? "on" : "off"); break;
    case GEN_FN: gen_fns[g->offset].format(d, buf, n); break;
    }
}

static void gen_usage(FILE *f)
{
    gen_args d = gen_defaults();
    fprintf(f, "usage: kvsim trace gen [--workload conversation|rag|multiround-qa|shared-prefix] [options] -o FILE\n\n"
               "Write a seeded synthetic trace (JSONL); the same options and seed give the\n"
               "same bytes. An option of another workload is an error.\n\n"
               "  -o, --output FILE          where to write (\"-\" = stdout); required\n"
               "  --workload NAME            conversation, rag, multiround-qa or shared-prefix\n"
               "                             (default conversation)\n"
               "  -h, --help                 this text\n");
    for (int w = 0; w < NWORKLOADS; w++) {
        d.wl = (gen_workload)w;
        fprintf(f, "\n%s\n\n", workloads[w].about);
        for (size_t i = 0; i < workloads[w].nopts; i++) {
            const gen_opt *g = &workloads[w].opts[i];
            char flag[40], def[64];
            static const char *const metavar[] = {
                [GEN_I64] = "N",     [GEN_INT] = "N", [GEN_DOUBLE] = "X", [GEN_SEED] = "N",
                [GEN_PATH] = "FILE", [GEN_FLAG] = "", [GEN_FN] = "VALUE"};
            snprintf(flag, sizeof flag, "--%s %s", g->name,
                     g->kind == GEN_FN ? gen_fns[g->offset].metavar : metavar[g->kind]);
            format_gen_default(g, gen_target(&d), def, sizeof def);
            fprintf(f, "  %-26s %s (default %s)\n", flag, g->help, def);
        }
    }
}

static int set_gen_opt(const gen_opt *g, const char *arg, void *o, sim_err *err)
{
    char what[48];
    snprintf(what, sizeof what, "--%s", g->name);
    void *p = (char *)o + g->offset;
    int64_t v;
    switch (g->kind) {
    case GEN_DOUBLE: return sim_parse_double(arg, what, p, err);
    case GEN_PATH: *(const char **)p = arg; return 0;
    case GEN_FLAG: *(bool *)p = true; return 0;
    case GEN_FN: return gen_fns[g->offset].parse(arg, o, err);
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

/* An option as given, applied once the workload is known. */
typedef struct gen_given {
    const char *name, *arg;
} gen_given;

/* Each given option into the chosen workload's options; one that it does
 * not have is an error naming the option and the workload. */
static int apply_gen_opts(gen_args *a, const gen_given *given, size_t n, sim_err *err)
{
    const gen_opt *table = workloads[a->wl].opts;
    size_t nopts = workloads[a->wl].nopts;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < nopts && strcmp(table[j].name, given[i].name)) j++;
        if (j == nopts)
            return sim_errf(err, "--%s does not apply to --workload %s", given[i].name, workloads[a->wl].name);
        if (set_gen_opt(&table[j], given[i].arg, gen_target(a), err)) return -1;
    }
    return 0;
}

/* A workload by name; an unknown one is an error listing the names. */
static int parse_workload(const char *arg, gen_workload *wl, sim_err *err)
{
    char names[256] = "";
    for (int w = 0; w < NWORKLOADS; w++) {
        if (!strcmp(arg, workloads[w].name)) {
            *wl = (gen_workload)w;
            return 0;
        }
        size_t n = strlen(names);
        snprintf(names + n, sizeof names - n, "%s%s", w ? ", " : "", workloads[w].name);
    }
    return sim_errf(err, "--workload: '%s' is not a workload (%s)", arg, names);
}

/* getopt's table: the union of the workloads' option names (values 256 +
 * index into names[]), then --workload, --output, --help. */
static void gen_longopts(struct option *lo, const char **names)
{
    size_t n = 0;
    for (int w = 0; w < NWORKLOADS; w++)
        for (size_t i = 0; i < workloads[w].nopts; i++) {
            const char *name = workloads[w].opts[i].name;
            size_t j = 0;
            while (j < n && strcmp(names[j], name)) j++;
            if (j < n) continue;
            names[n] = name;
            int has_arg = workloads[w].opts[i].kind == GEN_FLAG ? no_argument : required_argument;
            lo[n] = (struct option){name, has_arg, NULL, 256 + (int)n};
            n++;
        }
    lo[n++] = (struct option){"workload", required_argument, NULL, 'w'};
    lo[n++] = (struct option){"output", required_argument, NULL, 'o'};
    lo[n++] = (struct option){"help", no_argument, NULL, 'h'};
    lo[n] = (struct option){NULL, 0, NULL, 0};
}

/* Run the chosen generator into `path`. */
static int write_trace(const gen_args *a, const char *path)
{
    sim_outfile of;
    int rc = out_open(&of, "trace gen", path);
    if (rc) return rc;
    sim_err err;
    int64_t written;
    switch (a->wl) {
    case WL_RAG: rc = sim_tracegen_rag_write(&a->rag, of.f, path, &written, &err); break;
    case WL_MQA: rc = sim_tracegen_mqa_write(&a->mqa, of.f, path, &written, &err); break;
    case WL_SP: rc = sim_tracegen_sp_write(&a->sp, of.f, path, &written, &err); break;
    default: rc = sim_tracegen_write(&a->conv, of.f, path, &written, &err); break;
    }
    if ((rc = out_close(&of, "trace gen", rc, &err))) return rc;
    fprintf(stderr, "kvsim trace gen: wrote %" PRId64 " requests to %s\n", written,
            strcmp(path, "-") ? path : "stdout");
    return SIM_EXIT_OK;
}

/* The chosen workload's option check: 0, or -1 with err naming the option. */
static int gen_check(const gen_args *a, sim_err *err)
{
    switch (a->wl) {
    case WL_RAG: return sim_tracegen_rag_check(&a->rag, err);
    case WL_MQA: return sim_tracegen_mqa_check(&a->mqa, err);
    case WL_SP: return sim_tracegen_sp_check(&a->sp, err);
    default: return sim_tracegen_check(&a->conv, err);
    }
}

/* given[] has room for every argument. */
static int gen_main(int argc, char **argv, gen_given *given)
{
    struct option longopts[NGEN_OPTS + NRAG_OPTS + NMQA_OPTS + NSP_OPTS + 4];
    const char *names[NGEN_OPTS + NRAG_OPTS + NMQA_OPTS + NSP_OPTS];
    gen_longopts(longopts, names);
    gen_args a = gen_defaults();
    const char *path = NULL;
    size_t ngiven = 0;
    sim_err err;
    int c;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        if (c >= 256) {
            given[ngiven++] = (gen_given){names[c - 256], optarg};
        } else if (c == 'w') {
            if (parse_workload(optarg, &a.wl, &err)) return sim_usage_error("trace gen", err.msg);
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
    if (apply_gen_opts(&a, given, ngiven, &err)) return sim_usage_error("trace gen", err.msg);
    if (optind != argc) return sim_cli_unexpected_error("trace gen", argv[optind], NULL);
    if (!path) return sim_usage_error("trace gen", "-o FILE is required (\"-\" for stdout)");
    if (gen_check(&a, &err)) return sim_usage_error("trace gen", err.msg);
    return write_trace(&a, path);
}

static int trace_gen(int argc, char **argv)
{
    gen_given *given = sim_xcalloc((size_t)argc + 1, sizeof *given);
    int rc = gen_main(argc, argv, given);
    free(given);
    return rc;
}

/* ---- kvsim trace import ------------------------------------------------- */

static void import_usage(FILE *f)
{
    fprintf(f, "usage: kvsim trace import FORMAT INPUT -o FILE [options]\n\n"
               "Convert a published trace into a kvsim trace (docs/trace.md).\n\n"
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
    if (rc || (rc = out_open(&of, "trace import", a->path))) return rc;
    sim_err err;
    sim_ragpulse_stats rs;
    sim_csv_import_stats cs;
    rc = fmt ? sim_csv_import(fmt, in, &a->csv, of.f, a->path, &cs, &err)
             : sim_ragpulse_import(in, of.f, a->path, &rs, &err);
    if ((rc = out_close(&of, "trace import", rc, &err))) return rc;
    if (fmt) csv_summary(fmt, in, a->path, &a->csv, &cs);
    else ragpulse_summary(in, a->path, &rs);
    return SIM_EXIT_OK;
}

static int trace_import(int argc, char **argv)
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
            "usage: kvsim trace rechunk IN --block-tokens N -o OUT [--from-block-tokens M]\n\n"
            "Coarsen a Mooncake trace's hash blocks from M to N = f*M tokens, exactly: a coarse\n"
            "block is shared iff all its fine blocks are (the same fine ids up to its end);\n"
            "a request's last, partly filled coarse block stays distinct from every full one.\n"
            "A finer N, or one that is not a multiple of M, is refused. Other fields are kept.\n\n"
            "  --block-tokens N        tokens per block of the output; required\n"
            "  --from-block-tokens M   tokens per block of IN (default %d, Mooncake's)\n"
            "  -o, --output OUT        where to write (\"-\" = stdout); required\n"
            "  -h, --help              this text\n",
            sim_trace_default_opts().block_tokens);
}

static int rechunk_run(const char *in, int from, int to, const char *path)
{
    sim_err err;
    if (sim_rechunk_check(from, to, &err)) return sim_usage_error("trace rechunk", err.msg);
    sim_outfile of;
    int rc = out_open(&of, "trace rechunk", path);
    if (rc) return rc;
    sim_rechunk_stats st;
    rc = sim_rechunk(in, from, to, of.f, path, &st, &err);
    if ((rc = out_close(&of, "trace rechunk", rc, &err))) return rc;
    fprintf(stderr,
            "kvsim trace rechunk: wrote %" PRId64 " requests to %s: %" PRId64 " blocks of %d tokens (%" PRId64
            " distinct) became %" PRId64 " blocks of %d tokens (%" PRId64 " distinct)\n",
            st.requests, strcmp(path, "-") ? path : "stdout", st.fine_blocks, from, st.fine_distinct, st.coarse_blocks,
            to, st.coarse_distinct);
    return SIM_EXIT_OK;
}

static int trace_rechunk(int argc, char **argv)
{
    static const struct option longopts[] = {{"block-tokens", required_argument, NULL, 'b'},
                                             {"from-block-tokens", required_argument, NULL, 'f'},
                                             {"output", required_argument, NULL, 'o'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int64_t to = 0, from = sim_trace_default_opts().block_tokens, v;
    const char *path = NULL;
    sim_err err;
    int c;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        if (c == 'o') {
            path = optarg;
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
    return rechunk_run(argv[optind], (int)from, (int)to, path);
}

/* ---- dispatch ----------------------------------------------------------- */

static const sim_cmd trace_cmds[] = {
    {"stats", "statistics and the infinite-cache hit rate of a trace", trace_stats},
    {"gen", "write a seeded synthetic trace (conversation, RAG, multi-round QA, shared prefix)", trace_gen},
    {"import", "convert a published trace (RAGPulse, Azure, BurstGPT) into a kvsim trace", trace_import},
    {"rechunk", "coarsen a trace's hash blocks by an integer factor, exactly", trace_rechunk},
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
