/* sim/trace/tracegen_sp.c — the seeded shared-prefix workload of
 * `kvsim trace gen --workload shared-prefix` (docs/trace.md): the load
 * inference-perf (kubernetes-sigs/inference-perf) sends with its
 * shared_prefix data generator, so that a measured run of a real engine
 * under that tool can be replayed in kvsim.
 *
 * inference-perf builds, once, a pool of G × U prompts: per group a random
 * system prompt, per user of the group a random question; the pool is
 * shuffled, and request j of a load stage sends pool entry (j mod G·U), so
 * later requests repeat whole prompts. Here:
 *   - the pool is a GSL shuffle (seeded) of the entry numbers e = g·U + u;
 *   - a prompt is S system tokens + Q question tokens, output O tokens;
 *   - its hash_ids: a block wholly inside the system prompt (the first
 *     ⌊S/B⌋) has the group's id, g·⌊S/B⌋ + b; every later block (the first
 *     of them may mix system and question tokens) belongs to the entry:
 *     G·⌊S/B⌋ + e·(blocks − ⌊S/B⌋) + (b − ⌊S/B⌋). A repeated entry so
 *     repeats its ids exactly (identical text), and different text never
 *     shares an id;
 *   - with multi_turn (inference-perf's enable_multi_turn_chat) the pool
 *     entries are users: a user's first prompt is as above, and its next
 *     turn's prompt is the previous prompt + its answer + a new question
 *     (each line then carries "turn", the user's prompt number from 0).
 *     Its hash_ids keep the previous prompt's FULL blocks' ids and give a
 *     fresh id to every block after (the previous partial block now holds
 *     more tokens), as tracegen_mqa.c does; memory is the users' id lists;
 *   - load: stages of ⌊rate × seconds⌋ requests each (inference-perf's
 *     num_requests); stage k starts when stage k−1 ends. Arrivals are
 *     constant (request j at start + j/rate), Poisson (exponential gaps) or
 *     jittered (inference-perf's own constant timer: exponential gaps scaled
 *     to sum to the stage's duration, so its last request lands on its end)
 *     or a batch (every request at time 0, an offline batch as `vllm bench
 *     latency` sends it to vLLM's LLM class).
 *     The request number restarts at 0 every stage, as inference-perf's
 *     run_stage numbers them.
 * One GSL mt19937 stream drives every draw in a fixed order (the shuffle;
 * then per stage its arrival gaps), so a seed gives byte-identical output. */
#include "sim/trace/tracegen_sp.h"
#include "sim/trace/trace_int.h"
#include "sim/trace/trace.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#define SP_MAX_GROUPS (1 << 20) /* system prompts, and users per prompt */
#define SP_MAX_POOL   (1 << 24) /* prompts in the pool (held in memory) */
#define SP_MAX_STAGE  1e12      /* requests in one stage */

sim_tracegen_sp_opts sim_tracegen_sp_default_opts(void)
{
    /* The validation runs (docs/trace.md): inference-perf shared_prefix with
     * num_unique_system_prompts 11, num_users_per_system_prompt 4,
     * system_prompt_len 100, question_len 447, output_len 248; vLLM's
     * 16-token blocks; the first load stage, constant 8 requests/s for 600 s. */
    return (sim_tracegen_sp_opts){
        .system_prompts = 11,
        .users_per_prompt = 4,
        .system_tokens = 100,
        .question_tokens = 447,
        .output_tokens = 248,
        .multi_turn = false,
        .block_tokens = 16,
        .poisson = false,
        .jittered = false,
        .nstages = 1,
        .stages = {{.rate_rps = 8, .duration_s = 600}},
        .requests = 0,
        .seed = 1,
    };
}

int64_t sim_tracegen_sp_stage_requests(const sim_sp_stage *s)
{
    /* int(rate * duration) in inference-perf; the 1e-9 keeps 0.29 × 100
     * (28.999999999999996 in doubles) at 29 requests. */
    return (int64_t)floor(s->rate_rps * s->duration_s + 1e-9);
}

/* ---- options ------------------------------------------------------------- */

int sim_tracegen_sp_parse_stages(const char *text, sim_tracegen_sp_opts *o, sim_err *err)
{
    const char *p = text;
    int n = 0;
    if (!*p) return sim_errf(err, "--stages: empty; give RATE:SECONDS,... (e.g. 8:600,20:600)");
    for (;;) {
        const char *item = p;
        size_t len = strcspn(p, ",");
        char *end;
        if (n == SIM_SP_MAX_STAGES) return sim_errf(err, "--stages: more than %d stages", SIM_SP_MAX_STAGES);
        errno = 0;
        double rate = strtod(p, &end);
        bool ok = end != p && *end == ':' && !errno;
        double seconds = ok ? strtod(p = end + 1, &end) : 0;
        if (!ok || end == p || end != item + len || errno)
            return sim_errf(err, "--stages: stage %d '%.*s' is not RATE:SECONDS (e.g. 8:600,20:600)", n + 1, (int)len,
                            item);
        o->stages[n++] = (sim_sp_stage){.rate_rps = rate, .duration_s = seconds};
        if (!item[len]) break;
        p = item + len + 1;
    }
    o->nstages = n;
    return 0;
}

/* The stages' rates and durations, and that they send a request. */
static int check_stages(const sim_tracegen_sp_opts *o, sim_err *err)
{
    if (o->nstages < 1 || o->nstages > SIM_SP_MAX_STAGES)
        return sim_errf(err, "--stages: give 1 to %d stages RATE:SECONDS,...", SIM_SP_MAX_STAGES);
    int64_t total = 0;
    for (int k = 0; k < o->nstages; k++) {
        const sim_sp_stage *s = &o->stages[k];
        if (!(s->rate_rps > 0) || !isfinite(s->rate_rps))
            return sim_errf(err, "--stages: stage %d (%g:%g): the rate must be a positive number of requests/s", k + 1,
                            s->rate_rps, s->duration_s);
        if (!(s->duration_s > 0) || !isfinite(s->duration_s))
            return sim_errf(err, "--stages: stage %d (%g:%g): the duration must be a positive number of seconds", k + 1,
                            s->rate_rps, s->duration_s);
        if (s->rate_rps * s->duration_s > SP_MAX_STAGE)
            return sim_errf(err, "--stages: stage %d (%g:%g) sends more than 10^12 requests", k + 1, s->rate_rps,
                            s->duration_s);
        total += sim_tracegen_sp_stage_requests(s);
    }
    if (total == 0)
        return sim_errf(err, "--stages: no stage sends a request (a stage sends rate x seconds of them, rounded down)");
    return 0;
}

/* With multi_turn a user's prompt grows by Q + O tokens a turn: the most
 * turns any user takes (pool entry 0's user, the first of every stage)
 * must keep its prompt within the trace reader's SIM_TRACE_MAX_TOKENS. */
static int check_growth(const sim_tracegen_sp_opts *o, sim_err *err)
{
    int64_t pool = (int64_t)o->system_prompts * o->users_per_prompt, left = o->requests ? o->requests : INT64_MAX;
    double turns = 0;
    for (int k = 0; k < o->nstages && left > 0; k++) {
        int64_t n = sim_tracegen_sp_stage_requests(&o->stages[k]);
        n = n < left ? n : left;
        left -= n;
        turns += (double)((n + pool - 1) / pool);
    }
    double longest = o->system_tokens + o->question_tokens + (turns - 1) * (o->question_tokens + o->output_tokens);
    if (longest > SIM_TRACE_MAX_TOKENS)
        return sim_errf(err,
                        "--multi-turn: a user's prompt would grow to %.0f tokens over its %.0f turns, more than the "
                        "trace reader's %d; send fewer requests (--requests, --stages) or add users",
                        longest, turns, SIM_TRACE_MAX_TOKENS);
    return 0;
}

int sim_tracegen_sp_check(const sim_tracegen_sp_opts *o, sim_err *err)
{
    if (o->system_prompts < 1 || o->system_prompts > SP_MAX_GROUPS)
        return sim_errf(err, "--system-prompts must be in [1, %d]", SP_MAX_GROUPS);
    if (o->users_per_prompt < 1 || o->users_per_prompt > SP_MAX_GROUPS)
        return sim_errf(err, "--users-per-prompt must be in [1, %d]", SP_MAX_GROUPS);
    if ((int64_t)o->system_prompts * o->users_per_prompt > SP_MAX_POOL)
        return sim_errf(err, "--system-prompts x --users-per-prompt must be at most %d", SP_MAX_POOL);
    if (o->system_tokens < 0 || o->system_tokens > SIM_TRACE_MAX_TOKENS)
        return sim_errf(err, "--system-tokens must be in [0, %d]", SIM_TRACE_MAX_TOKENS);
    if (o->question_tokens < 1 || o->question_tokens > SIM_TRACE_MAX_TOKENS - o->system_tokens)
        return sim_errf(err, "--question-tokens must be in [1, %d - --system-tokens]", SIM_TRACE_MAX_TOKENS);
    if (o->output_tokens < 1 || o->output_tokens > SIM_TRACE_MAX_TOKENS)
        return sim_errf(err, "--output-tokens must be in [1, %d]", SIM_TRACE_MAX_TOKENS);
    if (o->block_tokens < 1 || o->block_tokens > 1 << 30) return sim_errf(err, "--block-tokens must be in [1, 2^30]");
    if (o->poisson + o->jittered + o->batch > 1)
        return sim_errf(err, "--arrivals: poisson, jittered and batch exclude each other");
    if (o->requests < 0) return sim_errf(err, "--requests must not be negative (0 = until the stages end)");
    if (check_stages(o, err)) return -1;
    return o->multi_turn ? check_growth(o, err) : 0;
}

/* ---- arrivals -------------------------------------------------------------- */

/* One stage's clock. Constant: start + j/rate. Poisson: a running clock of
 * exponential gaps. Jittered: the stage's n exponential gaps are drawn
 * twice — once to sum them, once more from a copy of the generator taken
 * before — and request j lands at start + duration × (gaps 1..j+1) / sum,
 * so the stage's memory stays O(1) and its last request is at its end. */
typedef struct sp_clock {
    const sim_sp_stage *stage;
    double start_ms, now_ms; /* now_ms: the latest arrival */
    double acc, sum;         /* jittered: gaps so far, all the stage's gaps */
    gsl_rng *replay;         /* jittered: the generator as it was at the stage's start */
} sp_clock;

/* Start stage `s` where the previous one ended: its scheduled end, or its
 * last arrival when that is later (a Poisson stage can run over). */
static void clock_stage(sp_clock *c, const sim_sp_stage *s, int64_t n, bool jittered, gsl_rng *rng)
{
    if (c->stage) c->start_ms = fmax(c->start_ms + 1000.0 * c->stage->duration_s, c->now_ms);
    c->stage = s;
    c->now_ms = c->start_ms;
    c->acc = c->sum = 0;
    if (c->replay) gsl_rng_free(c->replay), c->replay = NULL;
    if (!jittered) return;
    c->replay = gsl_rng_clone(rng);
    for (int64_t j = 0; j < n; j++) c->sum += gsl_ran_exponential(rng, 1.0);
}

/* Request j's arrival in ms, rounded to the microsecond (a batch's: 0). */
static double clock_next(sp_clock *c, int64_t j, const sim_tracegen_sp_opts *o, gsl_rng *rng)
{
    const sim_sp_stage *s = c->stage;
    if (o->batch) {
        c->now_ms = 0;
    } else if (o->poisson) {
        c->now_ms += gsl_ran_exponential(rng, 1000.0 / s->rate_rps);
    } else if (o->jittered) {
        c->acc += gsl_ran_exponential(c->replay, 1.0);
        c->now_ms = c->start_ms + 1000.0 * s->duration_s * (c->acc / c->sum);
    } else {
        c->now_ms = c->start_ms + 1000.0 * (double)j / s->rate_rps;
    }
    return round(c->now_ms * 1000) / 1000;
}

/* ---- prompts ------------------------------------------------------------- */

typedef struct sp_user {
    int64_t input_len; /* of its latest prompt; 0 before its first turn */
    int64_t *ids;      /* that prompt's hash ids */
    size_t nids, cap;
    int64_t turns; /* prompts so far */
} sp_user;

typedef struct sp_gen {
    const sim_tracegen_sp_opts *o;
    gsl_rng *rng;
    int32_t *pool;                /* the shuffled entry numbers e = g·U + u */
    int64_t npool, nsys, nblocks; /* pool size; ⌊S/B⌋; ⌈(S+Q)/B⌉ */
    sp_user *users;               /* multi_turn: one per entry */
    int64_t next_id;              /* multi_turn: the next fresh id */
} sp_gen;

static void sp_gen_init(sp_gen *g, const sim_tracegen_sp_opts *o)
{
    memset(g, 0, sizeof *g);
    g->o = o;
    g->rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g->rng, (unsigned long)o->seed);
    g->npool = (int64_t)o->system_prompts * o->users_per_prompt;
    g->pool = sim_xmalloc((size_t)g->npool * sizeof *g->pool);
    for (int64_t e = 0; e < g->npool; e++) g->pool[e] = (int32_t)e;
    gsl_ran_shuffle(g->rng, g->pool, (size_t)g->npool, sizeof *g->pool);
    g->nsys = o->system_tokens / o->block_tokens;
    g->nblocks = ((int64_t)o->system_tokens + o->question_tokens + o->block_tokens - 1) / o->block_tokens;
    g->next_id = o->system_prompts * g->nsys;
    if (o->multi_turn) g->users = sim_xcalloc((size_t)g->npool, sizeof *g->users);
}

static void sp_gen_free(sp_gen *g)
{
    for (int64_t e = 0; g->users && e < g->npool; e++) free(g->users[e].ids);
    free(g->users);
    free(g->pool);
    gsl_rng_free(g->rng);
}

/* Hash id of block b of entry e's single-turn prompt (see the top). */
static int64_t entry_block_id(const sp_gen *g, int64_t e, int64_t b)
{
    if (b < g->nsys) return (e / g->o->users_per_prompt) * g->nsys + b;
    return g->o->system_prompts * g->nsys + e * (g->nblocks - g->nsys) + (b - g->nsys);
}

/* User e's next prompt: the first is its entry's prompt (group blocks, then
 * fresh ids); a later one adds the answer and a question and keeps the
 * previous prompt's full blocks. */
static void user_turn(sp_gen *g, int64_t e)
{
    const sim_tracegen_sp_opts *o = g->o;
    sp_user *u = &g->users[e];
    bool first = u->input_len == 0;
    size_t keep = first ? (size_t)g->nsys : (size_t)(u->input_len / o->block_tokens);
    u->input_len +=
        first ? (int64_t)o->system_tokens + o->question_tokens : (int64_t)o->output_tokens + o->question_tokens;
    size_t n = (size_t)((u->input_len + o->block_tokens - 1) / o->block_tokens);
    if (n > u->cap) {
        u->cap = n + n / 2 + 16;
        u->ids = sim_xrealloc(u->ids, u->cap * sizeof *u->ids);
    }
    for (size_t b = 0; first && b < keep; b++) u->ids[b] = entry_block_id(g, e, (int64_t)b);
    for (u->nids = keep; u->nids < n; u->nids++) u->ids[u->nids] = g->next_id++;
    u->turns++;
}

/* One JSONL line: entry e's prompt (single-turn, ids computed) or user e's
 * latest (multi-turn, ids kept); "session" is the user, e. */
static void write_line(FILE *out, const sp_gen *g, double ts_ms, int64_t e)
{
    const sp_user *u = g->users ? &g->users[e] : NULL;
    int64_t input = u ? u->input_len : (int64_t)g->o->system_tokens + g->o->question_tokens;
    int64_t n = u ? (int64_t)u->nids : g->nblocks;
    fprintf(out, "{\"timestamp\": %.15g, \"input_length\": %" PRId64 ", \"output_length\": %d, \"hash_ids\": [", ts_ms,
            input, g->o->output_tokens);
    for (int64_t b = 0; b < n; b++) sim_trace_put_id(out, b ? ", " : "", u ? u->ids[b] : entry_block_id(g, e, b));
    fprintf(out, "], \"session\": %" PRId64, e);
    if (u) fprintf(out, ", \"turn\": %" PRId64, u->turns - 1);
    fputs("}\n", out);
}

/* ---- the trace ------------------------------------------------------------- */

int sim_tracegen_sp_write(const sim_tracegen_sp_opts *o, FILE *out, const char *out_name, int64_t *written,
                          sim_err *err)
{
    *written = 0;
    if (sim_tracegen_sp_check(o, err)) return -1;
    sp_gen g;
    sp_gen_init(&g, o);
    sp_clock c = {0};
    bool done = false;
    for (int k = 0; k < o->nstages && !done; k++) {
        int64_t n = sim_tracegen_sp_stage_requests(&o->stages[k]);
        clock_stage(&c, &o->stages[k], n, o->jittered, g.rng);
        for (int64_t j = 0; j < n && !done; j++) {
            if ((done = ferror(out) || (o->requests && *written == o->requests))) break;
            double ts = clock_next(&c, j, o, g.rng);
            int64_t e = g.pool[j % g.npool];
            if (o->multi_turn) user_turn(&g, e);
            write_line(out, &g, ts, e);
            ++*written;
        }
    }
    if (c.replay) gsl_rng_free(c.replay);
    sp_gen_free(&g);
    if (fflush(out) || ferror(out)) return sim_errf(err, "%s: write error: %s", out_name, strerror(errno));
    return 0;
}
