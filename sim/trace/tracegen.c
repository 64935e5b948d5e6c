/* sim/trace/tracegen.c — seeded synthetic Mooncake-format traces (`kvsim trace gen`).
 *
 * The workload imitates chat serving, the case KV-cache reuse is about
 * (Mooncake §2, §5.2):
 *   - K shared system prompts; a new session picks one with Zipf popularity
 *     (GSL's discrete sampler over weights 1/rank^s). Each prompt's length in
 *     whole blocks is drawn once, and its block ids are fixed, so sessions on
 *     the same prompt share that prefix.
 *   - multi-turn sessions: with probability session_prob a request continues
 *     a random live session that has been idle for at least think_time (the
 *     user read the answer and typed the next turn). Its input is the previous input + the previous
 *     output + a new user turn, and it reuses the previous request's full
 *     blocks' ids (the partial last block changed, so it gets a fresh id).
 *     A session ends after max_turns requests, when its context would pass
 *     max_input, or when it is the least recently used of max_live sessions
 *     and a new one needs room.
 *   - new-turn and output lengths are lognormal with the given mean and sigma,
 *     clamped to [1, max]; fresh hash ids come from a counter.
 *   - arrivals are Poisson at `rate`, or copied from an existing trace.
 * One GSL mt19937 stream drives every draw in a fixed order, so a seed gives
 * byte-identical output. Memory is bounded by the live sessions. */
#include "sim/trace/tracegen.h"
#include "sim/trace/trace_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "sim/trace/trace.h"

sim_tracegen_opts sim_tracegen_default_opts(void)
{
    return (sim_tracegen_opts){
        .requests = 1500,
        .rate = 2.5,
        .block_tokens = 512,
        .prompts = 32,
        .zipf = 1.0,
        .prompt_mean = 2048,
        .prompt_sigma = 0.6,
        .session_prob = 0.5,
        .max_turns = 10,
        .think_time = 10,
        .max_live = 64,
        .input_mean = 1000,
        .input_sigma = 1.0,
        .output_mean = 300,
        .output_sigma = 0.8,
        .max_input = 32768,
        .max_output = 4096,
        .seed = 1,
        .target_hit_rate = -1,
    };
}

int sim_tracegen_check_rate(double rate, int64_t n, sim_err *err)
{
    if (!(rate > 0) || !isfinite(rate)) return sim_errf(err, "--rate must be positive");
    if ((double)n / rate > 1e9)
        return sim_errf(err,
                        "--rate %g: %" PRId64 " requests at that rate span about %.3g s, beyond the 1e9 s a trace's "
                        "timestamps are kept within (raise --rate)",
                        rate, n, (double)n / rate);
    return 0;
}

int sim_tracegen_check(const sim_tracegen_opts *o, sim_err *err)
{
    if (o->requests < 1) return sim_errf(err, "--requests must be at least 1");
    if (!o->arrivals_from && sim_tracegen_check_rate(o->rate, o->requests, err)) return -1;
    if (o->block_tokens < 1) return sim_errf(err, "--block-tokens must be at least 1");
    if (o->prompts < 1) return sim_errf(err, "--prompts must be at least 1");
    if (!(o->zipf >= 0)) return sim_errf(err, "--zipf must not be negative");
    if (!(o->prompt_mean > 0) || !(o->input_mean > 0) || !(o->output_mean > 0))
        return sim_errf(err, "--prompt-mean, --input-mean and --output-mean must be positive");
    if (!(o->prompt_sigma >= 0) || !(o->input_sigma >= 0) || !(o->output_sigma >= 0))
        return sim_errf(err, "--prompt-sigma, --input-sigma and --output-sigma must not be negative");
    if (!(o->session_prob >= 0 && o->session_prob <= 1)) return sim_errf(err, "--session-prob must be in [0, 1]");
    if (!(o->think_time >= 0)) return sim_errf(err, "--think-time must not be negative");
    if (o->max_turns < 1) return sim_errf(err, "--max-turns must be at least 1");
    if (o->max_live < 1) return sim_errf(err, "--max-live must be at least 1");
    if (o->max_input < 1 || o->max_output < 1) return sim_errf(err, "--max-input and --max-output must be at least 1");
    if (o->max_input > SIM_TRACE_MAX_TOKENS || o->max_output > SIM_TRACE_MAX_TOKENS)
        return sim_errf(err, "--max-input and --max-output must be at most %d (a trace's request holds at most that)",
                        SIM_TRACE_MAX_TOKENS);
    if (o->max_input <= o->block_tokens) /* a prompt is whole blocks and a turn token: none fit (it once wrote
                                              a trace with no shared block, its hit rate 0, without a word) */
        return sim_errf(err,
                        "--max-input %d leaves no room for a shared prompt: a prompt is whole blocks of "
                        "--block-tokens %d before at least one token of its own; give --max-input above %d",
                        o->max_input, o->block_tokens, o->block_tokens);
    if (o->target_hit_rate != -1 && !(o->target_hit_rate >= 0 && o->target_hit_rate <= 0.99))
        return sim_errf(err, "--target-hit-rate must be in [0, 0.99] (a first request never hits)");
    if (!(o->ephemeral_frac >= 0) || !(o->context_frac >= 0) || !(o->ephemeral_frac + o->context_frac <= 1))
        return sim_errf(err, "--ephemeral-frac and --context-frac must be non-negative with a sum of at most 1");
    return 0;
}

/* ---- generator state ---------------------------------------------------- */

typedef struct id_list {
    int64_t *v;
    size_t n, cap;
} id_list;

static void id_list_push(id_list *l, int64_t id)
{
    if (l->n == l->cap) l->v = sim_xrealloc(l->v, (l->cap = l->cap ? 2 * l->cap : 64) * sizeof *l->v);
    l->v[l->n++] = id;
}

typedef struct gen_prompt {
    int64_t first_id; /* its blocks are ids first_id .. first_id + nblocks - 1 */
    int32_t nblocks;
} gen_prompt;

typedef struct gen_session {
    int64_t id;
    int turns;      /* requests so far */
    double last_ms; /* arrival of its latest request (think time, LRU eviction) */
    int32_t input_len, output_len;
    id_list ids; /* hash ids of its latest request */
} gen_session;

typedef struct generator {
    const sim_tracegen_opts *o;
    gsl_rng *rng;
    gsl_ran_discrete_t *prompt_pick;
    gen_prompt *prompts;
    gen_session *live; /* max_live slots, n_live in use */
    int n_live;
    int64_t next_id, next_session;
    double clock_ms; /* Poisson arrival clock */
    sim_trace *arrivals;
} generator;

/* Lognormal with the given mean (mu = ln mean − sigma²/2), rounded and
 * clamped to [1, max]. */
static int32_t draw_len(generator *g, double mean, double sigma, int32_t max)
{
    double x = gsl_ran_lognormal(g->rng, log(mean) - sigma * sigma / 2, sigma);
    double r = fmin(fmax(round(x), 1), (double)max);
    return (int32_t)r;
}

/* Prompt lengths in whole blocks, leaving room for at least one turn token. */
static void make_prompts(generator *g)
{
    const sim_tracegen_opts *o = g->o;
    double *weights = sim_xmalloc((size_t)o->prompts * sizeof *weights);
    g->prompts = sim_xmalloc((size_t)o->prompts * sizeof *g->prompts);
    int32_t max_blocks = (o->max_input - 1) / o->block_tokens;
    for (int k = 0; k < o->prompts; k++) {
        weights[k] = pow(k + 1, -o->zipf);
        double blocks = round(draw_len(g, o->prompt_mean, o->prompt_sigma, INT32_MAX) / (double)o->block_tokens);
        g->prompts[k].nblocks = (int32_t)fmin(fmax(blocks, 1), max_blocks);
        g->prompts[k].first_id = g->next_id;
        g->next_id += g->prompts[k].nblocks;
    }
    g->prompt_pick = gsl_ran_discrete_preproc((size_t)o->prompts, weights);
    free(weights);
}

static int generator_init(generator *g, const sim_tracegen_opts *o, sim_err *err)
{
    memset(g, 0, sizeof *g);
    g->o = o;
    if (o->arrivals_from) {
        sim_trace_opts topts = sim_trace_default_opts();
        topts.block_tokens = o->block_tokens;
        if (sim_trace_open(&g->arrivals, o->arrivals_from, &topts, err)) return -1;
    }
    g->rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g->rng, (unsigned long)o->seed);
    g->live = sim_xcalloc((size_t)o->max_live, sizeof *g->live);
    make_prompts(g);
    return 0;
}

static void generator_free(generator *g)
{
    for (int i = 0; g->live && i < g->o->max_live; i++) free(g->live[i].ids.v);
    free(g->live);
    free(g->prompts);
    if (g->prompt_pick) gsl_ran_discrete_free(g->prompt_pick);
    if (g->rng) gsl_rng_free(g->rng);
    sim_trace_close(g->arrivals);
}

/* ---- one request -------------------------------------------------------- */

typedef struct gen_request {
    double timestamp_ms;
    int32_t input_len, output_len;
    int64_t session;
    const char *cache; /* NULL, "ephemeral" or "context" */
    id_list *ids;      /* the session's id list, rebuilt for this request */
} gen_request;

/* Next arrival: 1 with *ms set, 0 when --arrivals-from has run out, -1 on a bad line. */
static int next_arrival(generator *g, double *ms, sim_err *err)
{
    if (!g->arrivals) {
        g->clock_ms += gsl_ran_exponential(g->rng, 1000.0 / g->o->rate);
        *ms = round(g->clock_ms);
        return 1;
    }
    sim_request *r;
    int rc = sim_trace_next(g->arrivals, &r, err);
    if (rc == 1) {
        *ms = r->timestamp_ms;
        sim_request_free(r);
    }
    return rc;
}

/* Fresh ids for the blocks after the first `keep` until input_len is covered. */
static void fill_fresh_ids(generator *g, id_list *ids, size_t keep, int32_t input_len)
{
    size_t nblocks = ((size_t)input_len + (size_t)g->o->block_tokens - 1) / (size_t)g->o->block_tokens;
    ids->n = keep;
    while (ids->n < nblocks) id_list_push(ids, g->next_id++);
}

static void end_session(generator *g, int slot)
{
    id_list ids = g->live[slot].ids;
    g->live[slot] = g->live[--g->n_live];
    g->live[g->n_live] = (gen_session){.ids = ids}; /* keep the buffer for reuse */
    g->live[g->n_live].ids.n = 0;
}

/* A slot for a new session: a free one, or the least recently used. */
static int session_slot(generator *g)
{
    if (g->n_live == g->o->max_live) {
        int lru = 0;
        for (int i = 1; i < g->n_live; i++)
            if (g->live[i].last_ms < g->live[lru].last_ms) lru = i;
        end_session(g, lru);
    }
    return g->n_live++;
}

/* A new session on a Zipf-chosen prompt: prompt blocks + the first turn. */
static int start_session(generator *g)
{
    const gen_prompt *p = &g->prompts[gsl_ran_discrete(g->rng, g->prompt_pick)];
    int32_t prompt_tokens = p->nblocks * g->o->block_tokens;
    int32_t turn = draw_len(g, g->o->input_mean, g->o->input_sigma, g->o->max_input);
    int slot = session_slot(g);
    gen_session *s = &g->live[slot];
    s->id = g->next_session++;
    s->turns = 0;
    s->input_len = (int32_t)fmin((double)prompt_tokens + turn, g->o->max_input);
    s->ids.n = 0;
    for (int32_t b = 0; b < p->nblocks; b++) id_list_push(&s->ids, p->first_id + b);
    fill_fresh_ids(g, &s->ids, s->ids.n, s->input_len);
    return slot;
}

/* Continue a live session: previous context + output + a new turn, reusing
 * the previous request's full blocks. -1 when the context would not fit
 * (the session then ends). */
static int continue_session(generator *g, int slot)
{
    gen_session *s = &g->live[slot];
    int32_t turn = draw_len(g, g->o->input_mean, g->o->input_sigma, g->o->max_input);
    int64_t input = (int64_t)s->input_len + s->output_len + turn;
    if (input > g->o->max_input) {
        end_session(g, slot);
        return -1;
    }
    size_t full_blocks = (size_t)s->input_len / (size_t)g->o->block_tokens;
    s->input_len = (int32_t)input;
    fill_fresh_ids(g, &s->ids, full_blocks, s->input_len);
    return slot;
}

static const char *draw_cache_class(generator *g)
{
    const sim_tracegen_opts *o = g->o;
    if (o->ephemeral_frac + o->context_frac <= 0) return NULL;
    double u = gsl_rng_uniform(g->rng);
    return u < o->ephemeral_frac ? "ephemeral" : u < o->ephemeral_frac + o->context_frac ? "context" : NULL;
}

/* A live session whose user has had think_time since its latest request
 * (the answer has streamed back and the next turn is typed), chosen
 * uniformly; -1 when none is ready. */
static int pick_ready_session(generator *g, double now_ms)
{
    double think_ms = g->o->think_time * 1000.0;
    int ready = 0;
    for (int i = 0; i < g->n_live; i++) ready += g->live[i].last_ms + think_ms <= now_ms;
    if (ready == 0) return -1;
    unsigned long k = gsl_rng_uniform_int(g->rng, (unsigned long)ready);
    for (int i = 0; i < g->n_live; i++)
        if (g->live[i].last_ms + think_ms <= now_ms && k-- == 0) return i;
    return -1;
}

/* Build the request arriving at req->timestamp_ms; returns its session's slot. */
static int make_request(generator *g, gen_request *req)
{
    int slot = -1;
    if (g->n_live > 0 && gsl_rng_uniform(g->rng) < g->o->session_prob) {
        int ready = pick_ready_session(g, req->timestamp_ms);
        if (ready >= 0) slot = continue_session(g, ready);
    }
    if (slot < 0) slot = start_session(g);
    gen_session *s = &g->live[slot];
    s->output_len = draw_len(g, g->o->output_mean, g->o->output_sigma, g->o->max_output);
    s->turns++;
    s->last_ms = req->timestamp_ms;
    req->input_len = s->input_len;
    req->output_len = s->output_len;
    req->session = s->id;
    req->ids = &s->ids;
    req->cache = draw_cache_class(g);
    return slot;
}

static void write_request(FILE *out, const gen_request *r)
{
    fprintf(out,
            "{\"timestamp\": %.15g, \"input_length\": %" PRId32 ", \"output_length\": %" PRId32 ", \"hash_ids\": [",
            r->timestamp_ms, r->input_len, r->output_len);
    for (size_t i = 0; i < r->ids->n; i++) sim_trace_put_id(out, i ? ", " : "", r->ids->v[i]);
    fprintf(out, "], \"session\": %" PRId64, r->session);
    if (r->cache) fprintf(out, ", \"cache\": \"%s\"", r->cache);
    fputs("}\n", out);
}

/* ---- a target ceiling hit rate (--target-hit-rate X) ---------------------- *
 *
 * For controlled experiments (sglang PR 37359's runs at a set prefix-hit
 * rate): each request is h blocks of an earlier request's ids (a donor from
 * a pool of max_live recent requests, the longer of two drawn) followed by a
 * new turn of fresh ids. Under an infinite cache its prefix hit is exactly
 * h blocks (the donor's blocks were all seen; the first fresh id was not),
 * so the trace's ceiling after it is (H + hB) / (T + hB + turn) with H hit
 * tokens and T tokens so far; h is the whole number of blocks that brings
 * it nearest X, bounded by the donor's length and max_input. The running
 * rate then stays within one request of X, whatever the lengths. */

typedef struct target_pool {
    id_list *v;
    int n;
    double hit, total; /* tokens: H and T */
} target_pool;

static int pick_donor(generator *g, const target_pool *p)
{
    if (p->n == 0) return -1;
    int a = (int)gsl_rng_uniform_int(g->rng, (unsigned long)p->n);
    int b = (int)gsl_rng_uniform_int(g->rng, (unsigned long)p->n);
    return p->v[b].n > p->v[a].n ? b : a;
}

/* The request's ids in *ids (donor prefix + fresh) and its input length. */
static int32_t target_request(generator *g, target_pool *p, id_list *ids)
{
    const sim_tracegen_opts *o = g->o;
    double x = o->target_hit_rate, bt = o->block_tokens;
    int32_t turn = draw_len(g, o->input_mean, o->input_sigma, o->max_input);
    int donor = pick_donor(g, p);
    double want = (x * (p->total + turn) - p->hit) / (1 - x) / bt;
    double room = floor((o->max_input - turn) / bt);
    double h = fmax(0, fmin(fmin(round(want), room), donor < 0 ? 0 : (double)p->v[donor].n));
    ids->n = 0;
    for (size_t i = 0; i < (size_t)h; i++) id_list_push(ids, p->v[donor].v[i]);
    int32_t input = (int32_t)(h * bt) + turn;
    fill_fresh_ids(g, ids, (size_t)h, input);
    p->hit += h * bt;
    p->total += input;
    return input;
}

static int write_target(generator *g, FILE *out, int64_t *written, sim_err *err)
{
    const sim_tracegen_opts *o = g->o;
    target_pool p = {.v = sim_xcalloc((size_t)o->max_live, sizeof *p.v)};
    id_list ids = {0};
    int rc = 0;
    for (int64_t i = 0; rc == 0 && i < o->requests; i++) {
        gen_request req = {.session = i, .ids = &ids};
        int arr = next_arrival(g, &req.timestamp_ms, err);
        if (arr <= 0) {
            rc = arr;
            break;
        }
        req.input_len = target_request(g, &p, &ids);
        req.output_len = draw_len(g, o->output_mean, o->output_sigma, o->max_output);
        write_request(out, &req);
        int slot = p.n < o->max_live ? p.n++ : (int)gsl_rng_uniform_int(g->rng, (unsigned long)o->max_live);
        id_list old = p.v[slot]; /* keep this request; reuse the old buffer for the next */
        p.v[slot] = ids;
        ids = old;
        ++*written;
    }
    for (int i = 0; i < p.n; i++) free(p.v[i].v);
    free(p.v);
    free(ids.v);
    return rc;
}

int sim_tracegen_write(const sim_tracegen_opts *o, FILE *out, const char *out_name, int64_t *written, sim_err *err)
{
    *written = 0;
    if (sim_tracegen_check(o, err)) return -1;
    generator g;
    int rc = generator_init(&g, o, err);
    if (rc == 0 && o->target_hit_rate >= 0) rc = write_target(&g, out, written, err);
    for (int64_t i = 0; rc == 0 && o->target_hit_rate < 0 && i < o->requests; i++) {
        gen_request req = {0};
        int arr = next_arrival(&g, &req.timestamp_ms, err);
        if (arr <= 0) {
            rc = arr;
            break;
        }
        int slot = make_request(&g, &req);
        write_request(out, &req);
        /* after writing: the request used the session's id list */
        if (g.live[slot].turns >= o->max_turns) end_session(&g, slot);
        ++*written;
    }
    generator_free(&g);
    if (rc < 0) return -1;
    if (fflush(out) || ferror(out)) return sim_errf(err, "%s: write error: %s", out_name, strerror(errno));
    return 0;
}
