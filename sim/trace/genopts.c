/* sim/trace/genopts.c — the option tables of `kvsim trace gen` and what is
 * done with them (sim/trace/genopts.h): each workload's flags with their
 * offsets into its generator's options struct, applied once the workload
 * is known, then checked and written by that generator. */
#include "sim/trace/genopts.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct gen_fn {
    const char *metavar;
    int (*parse)(const char *arg, void *opts, sim_err *err);
    void (*format)(const void *opts, char *buf, size_t n);
} gen_fn;

#define GEN_FIELD(f) offsetof(sim_tracegen_opts, f)
static const sim_gen_opt gen_opts[] = {
    {"requests", SIM_GEN_I64, GEN_FIELD(requests), "requests to write"},
    {"rate", SIM_GEN_DOUBLE, GEN_FIELD(rate), "Poisson arrival rate, requests/s"},
    {"arrivals-from", SIM_GEN_PATH, GEN_FIELD(arrivals_from), "copy timestamps from this trace (stops when it ends)"},
    {"block-tokens", SIM_GEN_INT, GEN_FIELD(block_tokens), "tokens per hash block"},
    {"prompts", SIM_GEN_INT, GEN_FIELD(prompts), "shared system prompts"},
    {"zipf", SIM_GEN_DOUBLE, GEN_FIELD(zipf), "Zipf exponent of prompt popularity (0 = uniform)"},
    {"prompt-mean", SIM_GEN_DOUBLE, GEN_FIELD(prompt_mean), "mean system-prompt tokens (lognormal, whole blocks)"},
    {"prompt-sigma", SIM_GEN_DOUBLE, GEN_FIELD(prompt_sigma), "lognormal sigma of prompt lengths"},
    {"session-prob", SIM_GEN_DOUBLE, GEN_FIELD(session_prob), "probability a request continues a live session"},
    {"max-turns", SIM_GEN_INT, GEN_FIELD(max_turns), "requests per session at most"},
    {"think-time", SIM_GEN_DOUBLE, GEN_FIELD(think_time), "seconds before a session's next turn may arrive"},
    {"max-live", SIM_GEN_INT, GEN_FIELD(max_live), "live sessions at most (the least recent ends)"},
    {"input-mean", SIM_GEN_DOUBLE, GEN_FIELD(input_mean), "mean new-turn input tokens (lognormal)"},
    {"input-sigma", SIM_GEN_DOUBLE, GEN_FIELD(input_sigma), "lognormal sigma of new-turn tokens"},
    {"output-mean", SIM_GEN_DOUBLE, GEN_FIELD(output_mean), "mean output tokens (lognormal)"},
    {"output-sigma", SIM_GEN_DOUBLE, GEN_FIELD(output_sigma), "lognormal sigma of output tokens"},
    {"max-input", SIM_GEN_INT, GEN_FIELD(max_input), "input tokens at most (a session ends beyond it)"},
    {"max-output", SIM_GEN_INT, GEN_FIELD(max_output), "output tokens at most"},
    {"ephemeral-frac", SIM_GEN_DOUBLE, GEN_FIELD(ephemeral_frac), "fraction tagged \"cache\": \"ephemeral\""},
    {"context-frac", SIM_GEN_DOUBLE, GEN_FIELD(context_frac), "fraction tagged \"cache\": \"context\""},
    {"seed", SIM_GEN_SEED, GEN_FIELD(seed), "RNG seed (same seed, same bytes)"},
    {"target-hit-rate", SIM_GEN_DOUBLE, GEN_FIELD(target_hit_rate),
     "a ceiling token hit rate in [0, 0.99]: reuse earlier prefixes to it (-1 = off)"},
};
#define NGEN_OPTS (sizeof gen_opts / sizeof gen_opts[0])

#define RAG_FIELD(f) offsetof(sim_tracegen_rag_opts, f)
static const sim_gen_opt rag_opts[] = {
    {"requests", SIM_GEN_I64, RAG_FIELD(requests), "requests to write"},
    {"rate", SIM_GEN_DOUBLE, RAG_FIELD(rate), "Poisson arrival rate, requests/s"},
    {"passages", SIM_GEN_INT, RAG_FIELD(passages), "passages in the corpus (id = popularity rank, 0 first)"},
    {"k", SIM_GEN_INT, RAG_FIELD(k), "distinct passages per request, in random order"},
    {"passage-mean", SIM_GEN_DOUBLE, RAG_FIELD(passage_mean), "mean passage tokens (lognormal, drawn once each)"},
    {"passage-sigma", SIM_GEN_DOUBLE, RAG_FIELD(passage_sigma), "lognormal sigma of passage lengths"},
    {"max-passage", SIM_GEN_INT, RAG_FIELD(max_passage), "passage tokens at most"},
    {"zipf", SIM_GEN_DOUBLE, RAG_FIELD(zipf), "Zipf exponent of passage popularity (0 = uniform)"},
    {"system-tokens", SIM_GEN_INT, RAG_FIELD(system_tokens), "shared system prompt tokens, a prefix (0 = none)"},
    {"question-mean", SIM_GEN_DOUBLE, RAG_FIELD(question_mean), "mean unique question tokens (lognormal)"},
    {"question-sigma", SIM_GEN_DOUBLE, RAG_FIELD(question_sigma), "lognormal sigma of question lengths"},
    {"output-mean", SIM_GEN_DOUBLE, RAG_FIELD(output_mean), "mean output tokens (lognormal)"},
    {"output-sigma", SIM_GEN_DOUBLE, RAG_FIELD(output_sigma), "lognormal sigma of output tokens"},
    {"max-output", SIM_GEN_INT, RAG_FIELD(max_output), "output tokens at most"},
    {"seed", SIM_GEN_SEED, RAG_FIELD(seed), "RNG seed (same seed, same bytes)"},
};
#define NRAG_OPTS (sizeof rag_opts / sizeof rag_opts[0])

/* LMCache §7.2's multi-round QA (sim/trace/tracegen_mqa.c has the sources of the defaults). */
#define MQA_FIELD(f) offsetof(sim_tracegen_mqa_opts, f)
static const sim_gen_opt mqa_opts[] = {
    {"requests", SIM_GEN_I64, MQA_FIELD(requests), "requests to write"},
    {"rate", SIM_GEN_DOUBLE, MQA_FIELD(rate), "Poisson arrival rate over all users, requests/s (QPS)"},
    {"block-tokens", SIM_GEN_INT, MQA_FIELD(block_tokens), "tokens per hash block"},
    {"documents", SIM_GEN_INT, MQA_FIELD(documents), "documents (each user reads one)"},
    {"doc-tokens", SIM_GEN_DOUBLE, MQA_FIELD(doc_tokens), "mean document tokens (drawn once each)"},
    {"doc-sigma", SIM_GEN_DOUBLE, MQA_FIELD(doc_sigma), "lognormal sigma of document lengths (0 = fixed)"},
    {"doc-zipf", SIM_GEN_DOUBLE, MQA_FIELD(doc_zipf), "Zipf exponent of document popularity (0 = round-robin)"},
    {"users", SIM_GEN_INT, MQA_FIELD(users), "concurrent users, taking turns round-robin"},
    {"rounds", SIM_GEN_INT, MQA_FIELD(rounds), "questions per user (then a new user joins)"},
    {"question-tokens", SIM_GEN_DOUBLE, MQA_FIELD(question_tokens), "mean unique question tokens"},
    {"question-sigma", SIM_GEN_DOUBLE, MQA_FIELD(question_sigma), "lognormal sigma of question lengths (0 = fixed)"},
    {"answer-tokens", SIM_GEN_DOUBLE, MQA_FIELD(answer_tokens), "mean answer (output) tokens"},
    {"answer-sigma", SIM_GEN_DOUBLE, MQA_FIELD(answer_sigma), "lognormal sigma of answer lengths (0 = fixed)"},
    {"seed", SIM_GEN_SEED, MQA_FIELD(seed), "RNG seed (same seed, same bytes)"},
};
#define NMQA_OPTS (sizeof mqa_opts / sizeof mqa_opts[0])

/* inference-perf's shared_prefix (sim/trace/tracegen_sp.c has the sources of the defaults). */
static int sp_parse_arrivals(const char *arg, void *opts, sim_err *err)
{
    sim_tracegen_sp_opts *o = opts;
    o->poisson = !strcmp(arg, "poisson");
    o->jittered = !strcmp(arg, "jittered");
    o->batch = !strcmp(arg, "batch");
    if (!o->poisson && !o->jittered && !o->batch && strcmp(arg, "constant"))
        return sim_errf(err, "--arrivals: '%s' is not an arrival process (constant, poisson, jittered, batch)", arg);
    return 0;
}

static void sp_format_arrivals(const void *opts, char *buf, size_t n)
{
    const sim_tracegen_sp_opts *o = opts;
    snprintf(buf, n, "%s", o->poisson ? "poisson" : o->jittered ? "jittered" : o->batch ? "batch" : "constant");
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
static const sim_gen_opt sp_opts[] = {
    {"system-prompts", SIM_GEN_INT, SP_FIELD(system_prompts), "shared system prompts (groups)"},
    {"users-per-prompt", SIM_GEN_INT, SP_FIELD(users_per_prompt), "users (distinct questions) per system prompt"},
    {"system-tokens", SIM_GEN_INT, SP_FIELD(system_tokens), "system prompt tokens, shared by its users"},
    {"question-tokens", SIM_GEN_INT, SP_FIELD(question_tokens), "question tokens, one question per user"},
    {"output-tokens", SIM_GEN_INT, SP_FIELD(output_tokens), "output tokens of every request"},
    {"multi-turn", SIM_GEN_FLAG, SP_FIELD(multi_turn), "a user's prompt grows with its earlier questions and answers"},
    {"stages", SIM_GEN_FN, FN_SP_STAGES, "load stages, requests/s for seconds each"},
    {"arrivals", SIM_GEN_FN, FN_SP_ARRIVALS,
     "constant, poisson, jittered (inference-perf's timer) or batch (all at time 0, as vllm bench latency)"},
    {"requests", SIM_GEN_I64, SP_FIELD(requests), "stop after N requests (0 = when the stages end)"},
    {"block-tokens", SIM_GEN_INT, SP_FIELD(block_tokens), "tokens per hash block"},
    {"seed", SIM_GEN_SEED, SP_FIELD(seed), "RNG seed (same seed, same bytes)"},
};
#define NSP_OPTS (sizeof sp_opts / sizeof sp_opts[0])

static const sim_gen_workload_info workloads[SIM_NWORKLOADS] = {
    [SIM_WL_CONVERSATION] = {"conversation", gen_opts, NGEN_OPTS,
                             "--workload conversation (the default): Mooncake-format requests\n"
                             "(hash_ids) with shared system prompts of Zipf popularity and multi-turn\n"
                             "sessions whose prefix grows turn by turn; every request carries \"session\"."},
    [SIM_WL_RAG] = {"rag", rag_opts, NRAG_OPTS,
                    "--workload rag: a segment trace (docs/trace.md) of SQuAD-like RAG: k\n"
                    "distinct passages of a corpus with Zipf popularity, in random order,\n"
                    "between a shared system prompt (a prefix segment) and a unique question."},
    [SIM_WL_MQA] = {"multiround-qa", mqa_opts, NMQA_OPTS,
                    "--workload multiround-qa: the multi-round QA of the LMCache paper (section 7.2),\n"
                    "Mooncake-format (hash_ids): users take turns asking short unique questions\n"
                    "about a ~10K-token document; a round's prompt = document + earlier rounds +\n"
                    "the new question, so earlier rounds are a reusable prefix."},
    [SIM_WL_SP] = {"shared-prefix", sp_opts, NSP_OPTS,
                   "--workload shared-prefix: inference-perf's shared_prefix load, Mooncake-format\n"
                   "(hash_ids): a shuffled pool of system prompts x users (a shared system\n"
                   "prompt + a distinct question each) sent in turn, so later requests repeat\n"
                   "whole prompts, under constant or Poisson load stages."},
};

sim_gen_args sim_gen_defaults(void)
{
    return (sim_gen_args){.wl = SIM_WL_CONVERSATION,
                          .conv = sim_tracegen_default_opts(),
                          .rag = sim_tracegen_rag_default_opts(),
                          .mqa = sim_tracegen_mqa_default_opts(),
                          .sp = sim_tracegen_sp_default_opts()};
}

/* Where the chosen workload's options struct lies in sim_gen_args. */
static size_t gen_target_offset(sim_gen_workload wl)
{
    switch (wl) {
    case SIM_WL_RAG: return offsetof(sim_gen_args, rag);
    case SIM_WL_MQA: return offsetof(sim_gen_args, mqa);
    case SIM_WL_SP: return offsetof(sim_gen_args, sp);
    default: return offsetof(sim_gen_args, conv);
    }
}

static void *gen_target(sim_gen_args *a) { return (char *)a + gen_target_offset(a->wl); }

static void format_value(const sim_gen_opt *g, const void *d, char *buf, size_t n)
{
    const char *p = (const char *)d + g->offset;
    switch (g->kind) {
    case SIM_GEN_I64: snprintf(buf, n, "%" PRId64, *(const int64_t *)(const void *)p); break;
    case SIM_GEN_INT: snprintf(buf, n, "%d", *(const int *)(const void *)p); break;
    case SIM_GEN_DOUBLE: snprintf(buf, n, "%g", *(const double *)(const void *)p); break;
    case SIM_GEN_SEED: snprintf(buf, n, "%" PRIu64, *(const uint64_t *)(const void *)p); break;
    case SIM_GEN_PATH: snprintf(buf, n, "none"); break;
    case SIM_GEN_FLAG: snprintf(buf, n, "%s", *(const bool *)(const void *)p ? "on" : "off"); break;
    case SIM_GEN_FN: gen_fns[g->offset].format(d, buf, n); break;
    }
}

static int set_gen_opt(const sim_gen_opt *g, const char *arg, void *o, sim_err *err)
{
    char what[48];
    snprintf(what, sizeof what, "--%s", g->name);
    void *p = (char *)o + g->offset;
    int64_t v;
    switch (g->kind) {
    case SIM_GEN_DOUBLE: return sim_parse_double(arg, what, p, err);
    case SIM_GEN_PATH: *(const char **)p = arg; return 0;
    case SIM_GEN_FLAG: *(bool *)p = true; return 0;
    case SIM_GEN_FN: return gen_fns[g->offset].parse(arg, o, err);
    case SIM_GEN_I64: return sim_parse_i64(arg, what, p, err);
    case SIM_GEN_SEED:
        if (sim_parse_i64(arg, what, &v, err)) return -1;
        *(uint64_t *)p = (uint64_t)v;
        return 0;
    case SIM_GEN_INT:
        if (sim_parse_i64(arg, what, &v, err)) return -1;
        if (v > INT32_MAX) return sim_errf(err, "%s: '%s' is too large", what, arg);
        *(int *)p = (int)v;
        return 0;
    }
    return 0;
}

/* Each given option into the chosen workload's options; one that it does
 * not have is an error naming the option and the workload. */
int sim_gen_apply(sim_gen_args *a, const sim_gen_given *given, size_t n, sim_err *err)
{
    const sim_gen_opt *table = workloads[a->wl].opts;
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
int sim_gen_parse_workload(const char *arg, sim_gen_workload *wl, sim_err *err)
{
    char names[256] = "";
    for (int w = 0; w < SIM_NWORKLOADS; w++) {
        if (!strcmp(arg, workloads[w].name)) {
            *wl = (sim_gen_workload)w;
            return 0;
        }
        size_t n = strlen(names);
        snprintf(names + n, sizeof names - n, "%s%s", w ? ", " : "", workloads[w].name);
    }
    return sim_errf(err, "--workload: '%s' is not a workload (%s)", arg, names);
}

/* The chosen workload's option check: 0, or -1 with err naming the option. */
int sim_gen_check(const sim_gen_args *a, sim_err *err)
{
    switch (a->wl) {
    case SIM_WL_RAG: return sim_tracegen_rag_check(&a->rag, err);
    case SIM_WL_MQA: return sim_tracegen_mqa_check(&a->mqa, err);
    case SIM_WL_SP: return sim_tracegen_sp_check(&a->sp, err);
    default: return sim_tracegen_check(&a->conv, err);
    }
}

const sim_gen_workload_info *sim_gen_info(sim_gen_workload w) { return &workloads[w]; }

void sim_gen_format_default(const sim_gen_opt *g, const sim_gen_args *a, char *buf, size_t n)
{
    format_value(g, (const char *)a + gen_target_offset(a->wl), buf, n);
}

const char *sim_gen_metavar(const sim_gen_opt *g)
{
    static const char *const metavar[] = {
        [SIM_GEN_I64] = "N",     [SIM_GEN_INT] = "N", [SIM_GEN_DOUBLE] = "X", [SIM_GEN_SEED] = "N",
        [SIM_GEN_PATH] = "FILE", [SIM_GEN_FLAG] = "", [SIM_GEN_FN] = "VALUE"};
    return g->kind == SIM_GEN_FN ? gen_fns[g->offset].metavar : metavar[g->kind];
}

int sim_gen_write(const sim_gen_args *a, FILE *f, const char *path, int64_t *written, sim_err *err)
{
    switch (a->wl) {
    case SIM_WL_RAG: return sim_tracegen_rag_write(&a->rag, f, path, written, err);
    case SIM_WL_MQA: return sim_tracegen_mqa_write(&a->mqa, f, path, written, err);
    case SIM_WL_SP: return sim_tracegen_sp_write(&a->sp, f, path, written, err);
    default: return sim_tracegen_write(&a->conv, f, path, written, err);
    }
}
