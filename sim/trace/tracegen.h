/* sim/trace/tracegen.h — the seeded synthetic trace generator behind
 * `kvsim trace gen`: conversation-like Mooncake-format JSONL with shared
 * system prompts (Zipf popularity) and multi-turn sessions whose prefix grows
 * turn by turn, so caches have real prefix reuse to find.
 *
 * The generator streams: memory is bounded by the live sessions (at most
 * max_live), never by the number of requests. The same options and seed give
 * byte-identical output. */
#ifndef SIM_TRACEGEN_H
#define SIM_TRACEGEN_H

#include <stdint.h>
#include <stdio.h>

#include "sim/util.h"

typedef struct sim_tracegen_opts {
    int64_t requests;          /* how many requests to write */
    double rate;               /* Poisson arrivals, requests per second */
    const char *arrivals_from; /* take timestamps from this trace instead (NULL: Poisson) */
    int block_tokens;          /* tokens per hash block */
    int prompts;               /* number of shared system prompts */
    double zipf;               /* Zipf exponent of prompt popularity */
    double prompt_mean;        /* mean system-prompt length in tokens (lognormal, whole blocks) */
    double prompt_sigma;
    double session_prob;              /* probability a request continues a live session */
    int max_turns;                    /* a session ends after this many requests */
    double think_time;                /* seconds a session waits before its next turn can arrive */
    int max_live;                     /* live sessions kept; the oldest ends when a new one needs room */
    double input_mean, input_sigma;   /* new-turn tokens, lognormal */
    double output_mean, output_sigma; /* output tokens, lognormal */
    int max_input, max_output;        /* clamps: lengths are in [1, max] */
    double ephemeral_frac;            /* fraction tagged "cache": "ephemeral" */
    double context_frac;              /* fraction tagged "cache": "context" */
    uint64_t seed;
    /* -1: off. Else a trace whose ceiling token hit rate (one infinite cache,
     * kvsim hitrate's maximum) is this fraction: each request reuses a
     * prefix of an earlier one, as long as the running rate asks (below). */
    double target_hit_rate;
} sim_tracegen_opts;

/* A small conversation-like workload (see docs/trace.md for the values). */
sim_tracegen_opts sim_tracegen_default_opts(void);

/* Check the options; the message names the option (--rate, --zipf, ...). */
int sim_tracegen_check(const sim_tracegen_opts *o, sim_err *err);

/* --rate for n requests: positive, finite, and slow only as far as a
 * trace's timestamps reach (2^62 ns, about 146 years, trace_parse.c):
 * n / rate at most 1e9 s, a margin of 4.6 for the Poisson clock's spread.
 * A slower rate once wrote a trace its own reader refused. */
int sim_tracegen_check_rate(double rate, int64_t n, sim_err *err);

/* Write the trace to `out` (named `out_name` in messages). Returns 0, or -1
 * with err set (bad options, unreadable --arrivals-from trace, write error).
 * *written receives the number of requests written. */
int sim_tracegen_write(const sim_tracegen_opts *o, FILE *out, const char *out_name, int64_t *written, sim_err *err);

#endif
