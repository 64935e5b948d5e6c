/* sim/trace/tracegen_mqa.c — the seeded multi-round QA workload of
 * `kvsim trace gen --workload multiround-qa` (docs/trace.md).
 *
 * LMCache §7.2 evaluates CPU offloading with "multi-round Q&A workloads that
 * emulate a typical chatbot-based document analysis scenario": a query is a
 * ~10K-token document (a 12-page PDF) and a unique short question, the
 * answer is at most 100 tokens, the session begins with 40 users and more
 * join at the arrival rate (QPS). Here:
 *   - D documents; document d's length is drawn once (fixed, or lognormal)
 *     and its ⌊len / B⌋ full blocks get fixed ids, shared by every request
 *     about it. Its partial last block also holds the start of what follows
 *     the document (a question), so it is not the document's: a fresh id.
 *   - U users take turns round-robin: arrival i belongs to user slot i mod U,
 *     so one user's questions are U arrivals (≈ U / rate seconds) apart, the
 *     per-user gap of LMCache's benchmarks/multi-round-qa. A user reads one
 *     document (the s-th user, s mod D; or a Zipf pick) and asks R questions;
 *     then a new user (a new session) has the slot's next turn (each line
 *     carries "session" and "turn", its question's number from 0). The first
 *     users are staggered as that benchmark's ramp-up staggers them: slot k's
 *     first user asks R − ⌊k·R/U⌋ questions, so users leave and join at a
 *     steady rate/R per second rather than in waves.
 *   - round r's prompt = round r−1's prompt + its answer + a new question.
 *     Its hash_ids start with the previous request's FULL blocks' ids; every
 *     block after them gets a fresh id (the previous partial last block now
 *     holds more tokens: other content, another id), as tracegen.c does for
 *     a growing conversation. A block id so names the same B tokens wherever
 *     it appears, and earlier rounds are a reusable prefix.
 *   - question and answer lengths are fixed or lognormal; arrivals Poisson.
 * One GSL mt19937 stream drives every draw in a fixed order (document
 * lengths; then per request: arrival, a new user's document pick, question,
 * answer), so a seed gives byte-identical output. Memory is the documents
 * and the U users' id lists. */
#include "sim/trace/tracegen_mqa.h"
#include "sim/trace/trace_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "sim/trace/tracegen.h"

#define MQA_MAX_DOC   (1 << 24) /* document tokens are clamped to [1, this] */
#define MQA_MAX_TURN  32768     /* question and answer tokens are clamped to [1, this] */
#define MQA_MAX_COUNT (1 << 20) /* documents and users are held in memory */
#define MQA_MAX_ROUND 10000     /* 2^24 + 10^4 × 2 × 32768 < 2^31: input_length fits the reader */

sim_tracegen_mqa_opts sim_tracegen_mqa_default_opts(void)
{
    /* LMCache §7.2: queries of ~10K tokens (a document + a unique short
     * question), answers of 100 tokens at most, 40 users at the start, QPS 1
     * (its low-load example). It gives no round count or question length:
     * 5 rounds and a ~20-token question are LMCache's benchmarks/multi-round-qa
     * (--num-rounds 5, "Here's question #N: ..."). 40 documents, one per
     * starting user (that benchmark gives each user its own context); later
     * users re-read them. */
    return (sim_tracegen_mqa_opts){
        .requests = 1000,
        .rate = 1,
        .block_tokens = 512,
        .documents = 40,
        .doc_tokens = 10000,
        .doc_sigma = 0,
        .doc_zipf = 0,
        .users = 40,
        .rounds = 5,
        .question_tokens = 20,
        .question_sigma = 0.5,
        .answer_tokens = 100,
        .answer_sigma = 0,
        .seed = 1,
    };
}

int sim_tracegen_mqa_check(const sim_tracegen_mqa_opts *o, sim_err *err)
{
    if (o->requests < 1) return sim_errf(err, "--requests must be at least 1");
    if (sim_tracegen_check_rate(o->rate, o->requests, err)) return -1;
    if (o->block_tokens < 1 || o->block_tokens > 1 << 30) return sim_errf(err, "--block-tokens must be in [1, 2^30]");
    if (o->documents < 1 || o->documents > MQA_MAX_COUNT)
        return sim_errf(err, "--documents must be in [1, %d]", MQA_MAX_COUNT);
    if (o->users < 1 || o->users > MQA_MAX_COUNT) return sim_errf(err, "--users must be in [1, %d]", MQA_MAX_COUNT);
    if (o->rounds < 1 || o->rounds > MQA_MAX_ROUND) return sim_errf(err, "--rounds must be in [1, %d]", MQA_MAX_ROUND);
    if (!(o->doc_tokens >= 1 && o->doc_tokens <= MQA_MAX_DOC))
        return sim_errf(err, "--doc-tokens must be in [1, %d]", MQA_MAX_DOC);
    if (!(o->question_tokens >= 1 && o->question_tokens <= MQA_MAX_TURN))
        return sim_errf(err, "--question-tokens must be in [1, %d]", MQA_MAX_TURN);
    if (!(o->answer_tokens >= 1 && o->answer_tokens <= MQA_MAX_TURN))
        return sim_errf(err, "--answer-tokens must be in [1, %d]", MQA_MAX_TURN);
    if (!(o->doc_sigma >= 0) || !(o->question_sigma >= 0) || !(o->answer_sigma >= 0))
        return sim_errf(err, "--doc-sigma, --question-sigma and --answer-sigma must not be negative");
    if (!(o->doc_zipf >= 0)) return sim_errf(err, "--doc-zipf must not be negative");
    return 0;
}

/* ---- generator state ------------------------------------------------------ */

typedef struct mqa_doc {
    int64_t len;      /* tokens */
    int64_t first_id; /* its full blocks are ids first_id .. first_id + nfull − 1 */
    int64_t nfull;
} mqa_doc;

typedef struct mqa_user {
    int64_t session; /* −1: the slot waits for a new user */
    int64_t doc;
    int rounds_left;               /* questions still to ask */
    int turn;                      /* questions asked so far */
    int64_t input_len, output_len; /* of its latest request */
    int64_t *ids;                  /* hash ids of its latest request */
    size_t nids, cap;
} mqa_user;

typedef struct mqa_gen {
    const sim_tracegen_mqa_opts *o;
    gsl_rng *rng;
    gsl_ran_discrete_t *pick; /* document popularity when doc_zipf > 0, else NULL */
    mqa_doc *docs;
    mqa_user *users;
    int64_t next_id, next_session;
    double clock_ms; /* Poisson arrival clock */
} mqa_gen;

/* `mean` when sigma is 0, else lognormal with that mean (mu = ln mean −
 * sigma²/2); rounded and clamped to [1, max]. */
static int64_t draw_tokens(gsl_rng *rng, double mean, double sigma, int64_t max)
{
    double x = sigma > 0 ? gsl_ran_lognormal(rng, log(mean) - sigma * sigma / 2, sigma) : mean;
    return (int64_t)fmin(fmax(round(x), 1), (double)max);
}

static void mqa_gen_init(mqa_gen *g, const sim_tracegen_mqa_opts *o)
{
    size_t nd = (size_t)o->documents, nu = (size_t)o->users;
    memset(g, 0, sizeof *g);
    g->o = o;
    g->rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g->rng, (unsigned long)o->seed);
    g->docs = sim_xmalloc(nd * sizeof *g->docs);
    for (size_t d = 0; d < nd; d++) {
        mqa_doc *doc = &g->docs[d];
        doc->len = draw_tokens(g->rng, o->doc_tokens, o->doc_sigma, MQA_MAX_DOC);
        doc->nfull = doc->len / o->block_tokens;
        doc->first_id = g->next_id;
        g->next_id += doc->nfull;
    }
    if (o->doc_zipf > 0) {
        double *w = sim_xmalloc(nd * sizeof *w);
        for (size_t d = 0; d < nd; d++) w[d] = pow((double)(d + 1), -o->doc_zipf);
        g->pick = gsl_ran_discrete_preproc(nd, w);
        free(w);
    }
    /* the ramp-up stagger: slot k's first user asks R − ⌊k·R/U⌋ ≥ 1 questions */
    g->users = sim_xcalloc(nu, sizeof *g->users);
    for (size_t k = 0; k < nu; k++) {
        g->users[k].session = -1;
        g->users[k].rounds_left = o->rounds - (int)((int64_t)k * o->rounds / o->users);
    }
}

static void mqa_gen_free(mqa_gen *g)
{
    for (int k = 0; g->users && k < g->o->users; k++) free(g->users[k].ids);
    free(g->users);
    free(g->docs);
    if (g->pick) gsl_ran_discrete_free(g->pick);
    if (g->rng) gsl_rng_free(g->rng);
}

/* ---- one request ---------------------------------------------------------- */

static void reserve_ids(mqa_user *u, size_t n)
{
    if (n <= u->cap) return;
    u->cap = n + n / 2 + 16;
    u->ids = sim_xrealloc(u->ids, u->cap * sizeof *u->ids);
}

/* A new user in slot u: a new session about one document, whose full
 * blocks start its id list. Returns how many ids it keeps (those blocks). */
static size_t start_user(mqa_gen *g, mqa_user *u)
{
    const sim_tracegen_mqa_opts *o = g->o;
    u->session = g->next_session++;
    u->turn = 0;
    u->doc = g->pick ? (int64_t)gsl_ran_discrete(g->rng, g->pick) : u->session % o->documents;
    if (u->rounds_left == 0) u->rounds_left = o->rounds;
    const mqa_doc *d = &g->docs[u->doc];
    reserve_ids(u, (size_t)d->nfull);
    for (int64_t b = 0; b < d->nfull; b++) u->ids[b] = d->first_id + b;
    u->input_len = d->len;
    return (size_t)d->nfull;
}

static void write_request(FILE *out, double timestamp_ms, const mqa_user *u)
{
    fprintf(out,
            "{\"timestamp\": %.15g, \"input_length\": %" PRId64 ", \"output_length\": %" PRId64 ", \"hash_ids\": [",
            timestamp_ms, u->input_len, u->output_len);
    for (size_t i = 0; i < u->nids; i++) sim_trace_put_id(out, i ? ", " : "", u->ids[i]);
    fprintf(out, "], \"session\": %" PRId64 ", \"turn\": %d}\n", u->session, u->turn);
}

/* Build and write request i: slot i mod U's turn. A new user's prompt is
 * its document + a question; a continuing user's is its previous prompt +
 * the answer + a question, keeping the previous full blocks' ids. */
static void mqa_request(mqa_gen *g, int64_t i, FILE *out)
{
    const sim_tracegen_mqa_opts *o = g->o;
    mqa_user *u = &g->users[i % o->users];
    g->clock_ms += gsl_ran_exponential(g->rng, 1000.0 / o->rate);
    double timestamp_ms = round(g->clock_ms);
    size_t keep;
    if (u->session < 0) {
        keep = start_user(g, u);
    } else {
        keep = (size_t)(u->input_len / o->block_tokens);
        u->input_len += u->output_len;
    }
    u->input_len += draw_tokens(g->rng, o->question_tokens, o->question_sigma, MQA_MAX_TURN);
    size_t nblocks = (size_t)((u->input_len + o->block_tokens - 1) / o->block_tokens);
    reserve_ids(u, nblocks);
    for (u->nids = keep; u->nids < nblocks; u->nids++) u->ids[u->nids] = g->next_id++;
    u->output_len = draw_tokens(g->rng, o->answer_tokens, o->answer_sigma, MQA_MAX_TURN);
    write_request(out, timestamp_ms, u);
    u->turn++;
    if (--u->rounds_left == 0) u->session = -1;
}

int sim_tracegen_mqa_write(const sim_tracegen_mqa_opts *o, FILE *out, const char *out_name, int64_t *written,
                           sim_err *err)
{
    *written = 0;
    if (sim_tracegen_mqa_check(o, err)) return -1;
    mqa_gen g;
    mqa_gen_init(&g, o);
    for (int64_t i = 0; i < o->requests && !ferror(out); i++) {
        mqa_request(&g, i, out);
        ++*written;
    }
    mqa_gen_free(&g);
    if (fflush(out) || ferror(out)) return sim_errf(err, "%s: write error: %s", out_name, strerror(errno));
    return 0;
}
