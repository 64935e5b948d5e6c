/* sim/replay/check.h — the engine of `kvsim check`, the CI regression check
 * (sim/cli/cmd_check.c parses its options and prints): re-running a
 * baseline's measurements, comparing them with tolerance, recording new
 * baselines, and the measurement kinds.
 *
 * A baseline is a JSON file:
 *   {"kvsim_baseline": 1, "tolerance": 0.002,
 *    "measurements": [
 *      {"name": "lru-3M", "kind": "hitrate",
 *       "args": {"trace": "traces/default.jsonl", "capacity_tokens": "3e6"},
 *       "tolerance": 0.002,
 *       "expect": {"hit_rate_blocks": 0.3094, "hit_rate_tokens": 0.3151}}]}
 * `kind` selects a measure function from the table in check.c (or one a
 * command adds with sim_check_add_kind); it runs the measurement `args`
 * describe and returns its numbers by name; each number in `expect` must
 * be within `tolerance` (the file's top-level value when a measurement
 * states none): a number, absolute, or a string "2%", relative to the
 * expected number (0.02 × |expected|). "worse" (a measurement's, or the
 * file's) makes the check one-sided: "higher" (a latency) fails only a
 * rise beyond tolerance, "lower" (an attainment) only a fall; a move the
 * other way beyond it passes and is reported as an improvement. A
 * measurement's "worse" may also be an object, metric → "higher"/"lower",
 * for a measurement whose metrics differ (metrics it does not name are
 * two-sided). Adding a kind = one measure function + one line in that
 * table. */
#ifndef SIM_CHECK_H
#define SIM_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "sim/util.h"

/* ---- measurement kinds -------------------------------------------------- */

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

/* The kinds, for --help. */
size_t sim_check_kind_count(void);
const sim_check_kind *sim_check_kind_at(size_t i); /* NULL past the end */
/* Add a kind whose measure lives above this layer (a command's; k is
 * borrowed for the process's life); at most 8 such kinds. */
void sim_check_add_kind(const sim_check_kind *k);

/* kind "hitrate": args are kvsim hitrate's options with '_' for '-'
 * (trace, capacity_tokens — one value —, policy, scope, nodes, placement,
 * tiers, block_tokens, params, promote, semantics; "route", placement's
 * deprecated name, is still read and reported through the run's note);
 * metrics hit_rate_blocks and hit_rate_tokens. */
int sim_check_hitrate(sim_check_ctx *ctx, const json_t *args, json_t **got, sim_err *err);

/* kind "run" (sim/replay/check_run.c): args trace, config (optional), set
 * (an object of config keys and values); metrics slo_attainment,
 * goodput_rps, rejected, hit_rate_blocks, hit_rate_tokens and
 * ttft_ms/tbt_ms .mean .p50 .p90 .p99; plus the resolved config hash under
 * SIM_CHECK_CONFIG_HASH (not a number: recorded, not compared). */
int sim_check_timed(sim_check_ctx *ctx, const json_t *args, json_t **got, sim_err *err);
#define SIM_CHECK_CONFIG_HASH "config_hash"
/* What a measurement found for the command to say (an array of texts: a
 * trace whose ids fit another block size), taken out of its numbers
 * before they are compared, each distinct text said once. */
#define SIM_CHECK_WARNINGS    "warnings"

/* The timed replay behind kind "run", for a loaded config: checked, run
 * with a private temporary results database, its summary in *summary
 * (kvsim hitrate --ladder's rung e and routing regret use it too). */
struct sim_config;
int sim_check_run_config(struct sim_config *cfg, json_t **summary, sim_err *err);

/* A measurement records the XXH64 fingerprint of its trace ("trace_fingerprint")
 * and, for runs, the config hash: when either differs from the recorded one
 * the check fails with exit 2 as a changed setup, not as a regression. */

/* ---- running a baseline ------------------------------------------------- */

/* One number compared (or recorded): a row of the command's table. */
typedef struct sim_check_row {
    const char *measurement, *metric;
    const json_t *expected;  /* NULL: no "expect" yet, the number is recorded */
    double got, tolerance;   /* got NaN: null (a statistic over no completed request), matching only null;
                               tolerance: the absolute one applied (a relative one times |expected|) */
    char tolerance_text[32]; /* as the baseline gives it, with the side: "0.002", "2%", "+2%" (worse higher), "-2%" */
    int worse;               /* 0 two-sided, +1 a rise is worse, -1 a fall is */
    bool ok, improved;       /* improved: moved beyond tolerance the better way (ok) */
} sim_check_row;

/* How a run tells its command what happened, as it happens (the command
 * prints): begin once the baseline's measurements are known to be a list,
 * row for every number, note for a warning about the baseline (a
 * deprecated argument; each distinct text once). Any hook may be NULL. */
typedef struct sim_check_report {
    void (*begin)(void *arg);
    void (*row)(void *arg, const sim_check_row *row);
    void (*note)(void *arg, const char *text);
    void *arg;
} sim_check_report;

typedef struct sim_check_totals {
    int numbers, moved, improved;
} sim_check_totals;

/* Run every measurement of baseline and compare its numbers with "expect";
 * relative "trace" and "config" paths start from base_dir (the baseline
 * file's folder; NULL = the working directory, for a new baseline);
 * with record, update baseline's expect numbers with what was got instead
 * (or, with no expect yet, record every number). Counts into tot. */
int sim_check_run(json_t *baseline, const char *base_dir, bool record, const sim_check_report *rep,
                  sim_check_totals *tot, sim_err *err);

/* ---- baseline files ----------------------------------------------------- */

typedef struct sim_check_new_opts {
    const char *trace;
    const char *policies;   /* comma-separated; NULL = every registered policy */
    const char *capacities; /* comma-separated sizes */
    double tolerance;
} sim_check_new_opts;

/* A new baseline without numbers: a hitrate measurement of every policy ×
 * capacity on one trace (sim_check_run with record fills them in). */
int sim_check_new_baseline(const sim_check_new_opts *o, json_t **out, sim_err *err);
/* The baseline format this kvsim reads and writes ("kvsim_baseline"). */
#define SIM_CHECK_VERSION 1

/* Read a baseline file (errors name the file and line; a "kvsim_baseline"
 * other than SIM_CHECK_VERSION is an error naming both). */
int sim_check_load(const char *path, json_t **out, sim_err *err);
/* Rewrite measurement m's relative paths (trace, config) from from_dir's
 * view to to_dir's (both folders exist): a measurement made from a command
 * line, whose paths are the working directory's, added to a baseline
 * whose measurements run in its own folder. */
void sim_check_rebase_measurement(json_t *m, const char *from_dir, const char *to_dir);
/* Write a baseline file (indented, 6 significant digits; whole or not at
 * all, sim/outfile.h), its relative paths rewritten from base_dir's view
 * (as for sim_check_run) to the written file's folder; 0 or -1 with err
 * naming the file and the cause. */
int sim_check_save(const json_t *baseline, const char *base_dir, const char *path, sim_err *err);

#endif
