/* sim/trace/tracegen_sp.h — the seeded shared-prefix workload behind
 * `kvsim trace gen --workload shared-prefix`: inference-perf's shared_prefix
 * data generator (kubernetes-sigs/inference-perf) under its constant or
 * Poisson load stages, so that a run of that tool can be replayed in kvsim.
 *
 * A pool of system_prompts × users_per_prompt prompts — one shared system
 * prompt per group, one distinct question per user — is shuffled once;
 * request j of a stage sends pool entry (j mod pool size), so later
 * requests repeat whole prompts. With multi_turn a user's prompt instead
 * grows turn by turn with its earlier questions and answers.
 *
 * The output is an ordinary Mooncake-format trace (hash_ids + "session"),
 * streamed: memory is the pool (and, with multi_turn, the users' id lists),
 * never the number of requests. The same options and seed give
 * byte-identical output. docs/trace.md describes every rule. */
#ifndef SIM_TRACEGEN_SP_H
#define SIM_TRACEGEN_SP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/util.h"

/* One load stage: rate_rps requests per second for duration_s seconds. */
typedef struct sim_sp_stage {
    double rate_rps, duration_s;
} sim_sp_stage;

enum { SIM_SP_MAX_STAGES = 64 };

typedef struct sim_tracegen_sp_opts {
    int system_prompts;   /* --system-prompts: groups, one shared system prompt each */
    int users_per_prompt; /* --users-per-prompt: users (distinct questions) per group */
    int system_tokens;    /* --system-tokens: shared system prompt tokens (0 = none) */
    int question_tokens;  /* --question-tokens: each user's question */
    int output_tokens;    /* --output-tokens: every request's output */
    bool multi_turn;      /* --multi-turn: a user's prompt grows with its earlier questions and answers */
    int block_tokens;     /* --block-tokens: tokens per hash block */
    bool poisson;         /* --arrivals poisson: exponential gaps within each stage */
    bool jittered;        /* --arrivals jittered: inference-perf's own constant timer (exponential
                           * gaps scaled so a stage's last request lands on its end) */
    bool batch;           /* --arrivals batch: every request at time 0, an offline batch (vLLM's
                           * `vllm bench latency`); the stages say only how many */
    int nstages;
    sim_sp_stage stages[SIM_SP_MAX_STAGES]; /* --stages RATE:SECONDS,... */
    int64_t requests;                       /* --requests N: stop after N (0 = until the stages end) */
    uint64_t seed;                          /* --seed */
} sim_tracegen_sp_opts;

/* The validation runs' workload (docs/trace.md): 11 system prompts of 100
 * tokens, 4 users each, 447-token questions, 248-token outputs, 16-token
 * blocks, one constant stage of 8 requests/s for 600 s. */
sim_tracegen_sp_opts sim_tracegen_sp_default_opts(void);

/* Check the options; the message names the option (--stages, --system-prompts, ...). */
int sim_tracegen_sp_check(const sim_tracegen_sp_opts *o, sim_err *err);

/* Parse "8:600,20:600" (RATE:SECONDS, comma-separated) into o->stages and
 * o->nstages; 0, or -1 with err naming --stages, the stage and the text. */
int sim_tracegen_sp_parse_stages(const char *text, sim_tracegen_sp_opts *o, sim_err *err);

/* How many requests stage k sends: ⌊rate × seconds⌋, as inference-perf's
 * int(rate * duration) (robust to the last bit of rounding). */
int64_t sim_tracegen_sp_stage_requests(const sim_sp_stage *s);

/* Write the trace to `out` (named `out_name` in messages). Returns 0, or -1
 * with err set (bad options, write error); *written = requests written. */
int sim_tracegen_sp_write(const sim_tracegen_sp_opts *o, FILE *out, const char *out_name, int64_t *written,
                          sim_err *err);

#endif
