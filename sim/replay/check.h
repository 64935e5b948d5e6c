/* sim/replay/check.h — the measurement kinds of `kvsim check`, the CI regression
 * check (sim/cli/cmd_check.c).
 *
 * A baseline is a JSON file:
 *   {"kvsim_baseline": 1, "tolerance": 0.002,
 *    "measurements": [
 *      {"name": "lru-3M", "kind": "hitrate",
 *       "args": {"trace": "traces/default.jsonl", "capacity_tokens": "3e6"},
 *       "tolerance": 0.002,
 *       "expect": {"hit_rate_blocks": 0.3094, "hit_rate_tokens": 0.3151}}]}
 * `kind` selects a measure function from the table in cmd_check.c; it runs
 * the measurement `args` describe and returns its numbers by name; each
 * number in `expect` must be within `tolerance` (absolute; the file's
 * top-level value when a measurement states none). Adding a kind = one
 * measure function + one line in that table. */
#ifndef SIM_CHECK_H
#define SIM_CHECK_H

#include <jansson.h>

#include "sim/util.h"

/* Per-check-run state shared by measurements (e.g. traces loaded once). */
typedef struct sim_check_ctx sim_check_ctx;

/* Run the measurement described by args and return a new JSON object
 * metric → number in *got. Errors name the bad argument (kvsim check then
 * exits 2). */
typedef int (*sim_check_measure_fn)(sim_check_ctx *ctx, const json_t *args, json_t **got, sim_err *err);

typedef struct sim_check_kind {
    const char *name;
    const char *help;
    sim_check_measure_fn measure;
} sim_check_kind;

/* kind "hitrate": args are kvsim hitrate's options with '_' for '-'
 * (trace, capacity_tokens — one value —, policy, scope, nodes, route,
 * tiers, block_tokens, params, promote, semantics); metrics
 * hit_rate_blocks and hit_rate_tokens. */
int sim_check_hitrate(sim_check_ctx *ctx, const json_t *args, json_t **got, sim_err *err);

#endif
