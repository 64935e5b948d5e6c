/* sim/trace/tracegen_rag.c — segment-trace lines, and the seeded RAG workload
 * of `kvsim trace gen --workload rag` (docs/trace.md, docs/pic.md).
 *
 * The workload follows the question-answering traces MEPIC evaluates
 * (MEPIC §4.1, Table 1: SQuAD, NewsQA; paragraphs are the reusable chunks):
 *   - a corpus of P passages; passage p's length is drawn once (lognormal,
 *     clamped to [1, max_passage]) and its id is p, its popularity rank;
 *   - retrieval popularity is Zipf: passage p has weight 1/(p+1)^zipf (the
 *     skew MEPIC §1 cites for RAG, code and web retrieval);
 *   - each request draws k distinct passages by popularity (successive
 *     sampling without replacement) and shuffles them, as a retriever's
 *     ranking order differs from request to request;
 *   - the prompt is: the shared system prompt (one prefix segment, fixed
 *     block ids after the passage ids; none when its length is 0), the k
 *     passages as chunks, and a unique question (a null-id prompt segment);
 *   - question and output lengths are lognormal; arrivals are Poisson.
 * One GSL mt19937 stream drives every draw in a fixed order (passage lengths
 * first, then per request: arrival, picks, shuffle, question, output), so a
 * seed gives byte-identical output. */
#include "sim/trace/tracegen_rag.h"
#include "sim/trace/trace_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "sim/trace/tracegen.h"

/* ---- segment-trace lines ------------------------------------------------ */

/* A JSON number: an integer when it is one, else the shortest of %.15g and
 * %.17g that reads back as the same double. */
static void write_number(FILE *out, double x)
{
    if (x == floor(x) && fabs(x) < 9007199254740992.0) {
        fprintf(out, "%" PRId64, (int64_t)x);
        return;
    }
    char buf[40];
    snprintf(buf, sizeof buf, "%.15g", x);
    if (strtod(buf, NULL) != x) snprintf(buf, sizeof buf, "%.17g", x);
    fputs(buf, out);
}

static void write_segment(FILE *out, const sim_seg_out *s)
{
    static const char *const kinds[] = {
        [SIM_SEG_PREFIX] = "prefix", [SIM_SEG_CHUNK] = "chunk", [SIM_SEG_PROMPT] = "prompt"};
    fprintf(out, "{\"k\":\"%s\",", kinds[s->kind]);
    if (s->kind == SIM_SEG_PREFIX) {
        fputs("\"hash_ids\":[", out);
        for (size_t i = 0; i < s->nhash; i++) sim_trace_put_id(out, i ? "," : "", s->hash_ids[i]);
        fputs("],", out);
    } else if (s->id == SIM_SEG_NULL_ID) {
        fputs("\"id\":null,", out);
    } else {
        fprintf(out, "\"id\":%" PRId64 ",", s->id);
    }
    fprintf(out, "\"len\":%" PRId64 "}", s->len);
}

void sim_segtrace_write(FILE *out, const sim_seg_request *r)
{
    fputs("{\"timestamp\": ", out);
    write_number(out, r->timestamp_ms);
    fprintf(out, ", \"input_length\": %" PRId64 ", \"output_length\": %" PRId64, r->input_len, r->output_len);
    if (r->session >= 0) fprintf(out, ", \"session\": %" PRId64, r->session);
    fputs(", \"segments\": [", out);
    for (size_t i = 0; i < r->nsegs; i++) {
        if (i) fputs(", ", out);
        write_segment(out, &r->segs[i]);
    }
    fputs("]}\n", out);
}

/* ---- options ------------------------------------------------------------- */

#define RAG_PREFIX_BLOCK 512       /* tokens per prefix content block (docs/pic.md) */
#define RAG_MAX_QUESTION 32768     /* question lengths are clamped to [1, this] */
#define RAG_MAX_PASSAGES (1 << 24) /* the corpus is held in memory */
#define RAG_MAX_SYSTEM   (1 << 24)

sim_tracegen_rag_opts sim_tracegen_rag_default_opts(void)
{
    /* SQuAD-like (MEPIC Table 1: 2,224 tokens a request, 84.9% reused):
     * 10 paragraphs of ~210 tokens + a 64-token system prompt + a ~48-token
     * question ≈ 2,212 tokens; 300 requests (MEPIC samples 300 per dataset)
     * at 15 req/s (its §4.4 load). */
    return (sim_tracegen_rag_opts){
        .requests = 300,
        .rate = 15,
        .passages = 500,
        .k = 10,
        .passage_mean = 210,
        .passage_sigma = 0.3,
        .max_passage = 4096,
        .zipf = 0.8,
        .system_tokens = 64,
        .question_mean = 48,
        .question_sigma = 0.5,
        .output_mean = 64,
        .output_sigma = 0.8,
        .max_output = 4096,
        .seed = 1,
    };
}

int sim_tracegen_rag_check(const sim_tracegen_rag_opts *o, sim_err *err)
{
    if (o->requests < 1) return sim_errf(err, "--requests must be at least 1");
    if (sim_tracegen_check_rate(o->rate, o->requests, err)) return -1;
    if (o->passages < 1 || o->passages > RAG_MAX_PASSAGES)
        return sim_errf(err, "--passages must be in [1, %d]", RAG_MAX_PASSAGES);
    if (o->k < 1) return sim_errf(err, "--k must be at least 1");
    if (o->k > o->passages)
        return sim_errf(err, "--k (%d) must not exceed --passages (%d): a request's passages are distinct", o->k,
                        o->passages);
    if (!(o->passage_mean > 0)) return sim_errf(err, "--passage-mean must be positive");
    if (!(o->question_mean > 0)) return sim_errf(err, "--question-mean must be positive");
    if (!(o->output_mean > 0)) return sim_errf(err, "--output-mean must be positive");
    if (!(o->passage_sigma >= 0) || !(o->question_sigma >= 0) || !(o->output_sigma >= 0))
        return sim_errf(err, "--passage-sigma, --question-sigma and --output-sigma must not be negative");
    if (o->max_passage < 1) return sim_errf(err, "--max-passage must be at least 1");
    if (o->max_output < 1) return sim_errf(err, "--max-output must be at least 1");
    if (o->max_output > SIM_TRACE_MAX_TOKENS ||
        (double)o->system_tokens + (double)o->k * o->max_passage > SIM_TRACE_MAX_TOKENS - RAG_MAX_QUESTION)
        return sim_errf(err,
                        "--max-output must be at most %d, and --system-tokens + --k x --max-passage at most %d (a "
                        "trace's request holds at most %d tokens, a question of up to %d included)",
                        SIM_TRACE_MAX_TOKENS, SIM_TRACE_MAX_TOKENS - RAG_MAX_QUESTION, SIM_TRACE_MAX_TOKENS,
                        RAG_MAX_QUESTION);
    if (!(o->zipf >= 0)) return sim_errf(err, "--zipf must not be negative");
    if (o->system_tokens < 0 || o->system_tokens > RAG_MAX_SYSTEM)
        return sim_errf(err, "--system-tokens must be in [0, %d]", RAG_MAX_SYSTEM);
    return 0;
}

/* ---- generator state ------------------------------------------------------ */

typedef struct rag_gen {
    const sim_tracegen_rag_opts *o;
    gsl_rng *rng;
    gsl_ran_discrete_t *pick; /* popularity sampler over passages */
    double *weight;           /* popularity weight of each passage */
    int64_t *plen;            /* token length of each passage */
    int64_t *mark;            /* the request that last picked each passage (−1: none) */
    int64_t *sys_ids;         /* the system prompt's block ids */
    size_t nsys;
    size_t *chosen;    /* the current request's k passages */
    sim_seg_out *segs; /* its segments: prefix, k chunks, question */
    double clock_ms;   /* Poisson arrival clock */
} rag_gen;

/* Lognormal with the given mean (mu = ln mean − sigma²/2), rounded and
 * clamped to [1, max]. */
static int64_t draw_lognormal_len(gsl_rng *rng, double mean, double sigma, int64_t max)
{
    double x = gsl_ran_lognormal(rng, log(mean) - sigma * sigma / 2, sigma);
    return (int64_t)fmin(fmax(round(x), 1), (double)max);
}

static void rag_gen_init(rag_gen *g, const sim_tracegen_rag_opts *o)
{
    size_t n = (size_t)o->passages;
    memset(g, 0, sizeof *g);
    g->o = o;
    g->rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g->rng, (unsigned long)o->seed);
    g->weight = sim_xmalloc(n * sizeof *g->weight);
    g->plen = sim_xmalloc(n * sizeof *g->plen);
    g->mark = sim_xmalloc(n * sizeof *g->mark);
    for (size_t p = 0; p < n; p++) {
        g->weight[p] = pow((double)(p + 1), -o->zipf);
        g->plen[p] = draw_lognormal_len(g->rng, o->passage_mean, o->passage_sigma, o->max_passage);
        g->mark[p] = -1;
    }
    g->pick = gsl_ran_discrete_preproc(n, g->weight);
    g->nsys = ((size_t)o->system_tokens + RAG_PREFIX_BLOCK - 1) / RAG_PREFIX_BLOCK;
    g->sys_ids = sim_xmalloc((g->nsys ? g->nsys : 1) * sizeof *g->sys_ids);
    for (size_t b = 0; b < g->nsys; b++) g->sys_ids[b] = (int64_t)(n + b);
    g->chosen = sim_xmalloc((size_t)o->k * sizeof *g->chosen);
    g->segs = sim_xmalloc(((size_t)o->k + 2) * sizeof *g->segs);
}

static void rag_gen_free(rag_gen *g)
{
    if (g->pick) gsl_ran_discrete_free(g->pick);
    if (g->rng) gsl_rng_free(g->rng);
    free(g->weight);
    free(g->plen);
    free(g->mark);
    free(g->sys_ids);
    free(g->chosen);
    free(g->segs);
}

/* ---- one request ---------------------------------------------------------- */

/* The remaining picks of request `req` by an exact scan over the passages
 * not yet picked: the same distribution as drawing and rejecting repeats,
 * used when repeats are so frequent that drawing would take long (k close
 * to P, or a steep Zipf). */
static void pick_by_scan(rag_gen *g, int64_t req, int n)
{
    size_t np = (size_t)g->o->passages;
    for (; n < g->o->k; n++) {
        double left = 0;
        for (size_t p = 0; p < np; p++) left += g->mark[p] == req ? 0 : g->weight[p];
        double u = gsl_rng_uniform(g->rng) * left;
        size_t last = np;
        for (size_t p = 0; p < np; p++) {
            if (g->mark[p] == req) continue;
            last = p;
            if ((u -= g->weight[p]) < 0) break;
        }
        g->mark[last] = req;
        g->chosen[n] = last;
    }
}

/* k distinct passages by popularity (draw, reject repeats), then shuffled. */
static void pick_passages(rag_gen *g, int64_t req)
{
    int n = 0, k = g->o->k;
    for (int tries = 0; n < k && tries < 16 * k + 64; tries++) {
        size_t p = gsl_ran_discrete(g->rng, g->pick);
        if (g->mark[p] == req) continue;
        g->mark[p] = req;
        g->chosen[n++] = p;
    }
    if (n < k) pick_by_scan(g, req, n);
    gsl_ran_shuffle(g->rng, g->chosen, (size_t)k, sizeof *g->chosen);
}

/* Build and write request `req`. */
static void rag_request(rag_gen *g, int64_t req, FILE *out)
{
    const sim_tracegen_rag_opts *o = g->o;
    sim_seg_request r = {.session = -1, .segs = g->segs};
    g->clock_ms += gsl_ran_exponential(g->rng, 1000.0 / o->rate);
    r.timestamp_ms = round(g->clock_ms);
    pick_passages(g, req);
    size_t n = 0;
    if (o->system_tokens > 0)
        g->segs[n++] =
            (sim_seg_out){.kind = SIM_SEG_PREFIX, .len = o->system_tokens, .hash_ids = g->sys_ids, .nhash = g->nsys};
    for (int i = 0; i < o->k; i++) {
        size_t p = g->chosen[i];
        g->segs[n++] = (sim_seg_out){.kind = SIM_SEG_CHUNK, .id = (int64_t)p, .len = g->plen[p]};
    }
    int64_t question = draw_lognormal_len(g->rng, o->question_mean, o->question_sigma, RAG_MAX_QUESTION);
    g->segs[n++] = (sim_seg_out){.kind = SIM_SEG_PROMPT, .id = SIM_SEG_NULL_ID, .len = question};
    r.output_len = draw_lognormal_len(g->rng, o->output_mean, o->output_sigma, o->max_output);
    for (size_t i = 0; i < n; i++) r.input_len += g->segs[i].len;
    r.nsegs = n;
    sim_segtrace_write(out, &r);
}

int sim_tracegen_rag_write(const sim_tracegen_rag_opts *o, FILE *out, const char *out_name, int64_t *written,
                           sim_err *err)
{
    *written = 0;
    if (sim_tracegen_rag_check(o, err)) return -1;
    rag_gen g;
    rag_gen_init(&g, o);
    for (int64_t i = 0; i < o->requests && !ferror(out); i++) {
        rag_request(&g, i, out);
        ++*written;
    }
    rag_gen_free(&g);
    if (fflush(out) || ferror(out)) return sim_errf(err, "%s: write error: %s", out_name, strerror(errno));
    return 0;
}
