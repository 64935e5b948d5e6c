/* sim/slo/plan_slo.h — `kvsim plan slo` (sim/cli/cmd_plan_slo.c parses and
 * prints): the smallest disaggregated cluster (prefill and decode instance
 * counts, DRAM per node, cache scope, chunked pipeline parallelism) — or
 * aggregated LMCache cluster (instances, CPU DRAM per instance or node,
 * disk, remote store, kvstore.load; search_agg.c) — whose timed replay of
 * a trace meets latency targets — TTFT and TBT means and percentiles, SLO
 * attainment — or, when none can, the floor that blocks them.
 *
 * Every point is a real `kvsim run`, run by the sweep engine (sim/sweep) as
 * a worker process into one results database; the search judges each run
 * by its summary (runs.summary_json). A point the database already holds
 * is not run again, so a second search on the same database is instant.
 *
 * The search (plan_slo.c, floor.c, search.c, probe.c; `kvsim plan slo --help`):
 *  0. floor (floor.c, no run): each request alone on one instance, with the
 *     prefix hit an unbounded cache could give it, from the cost model. No
 *     cluster beats it; a target below it is infeasible at once;
 *  1. on the line P + D = max_instances, two bisections: the fewest
 *     prefill instances whose side passes (TTFT targets) and the fewest
 *     decode instances whose side passes (TBT targets);
 *  2. a staircase from N = P_lo + D_lo up: the splits of N inside the
 *     bounds, until one is feasible; then the two clusters one instance
 *     smaller are run to confirm it;
 *  3. the same staircase for each smaller DRAM level, from the previous
 *     level's N: the frontier (fewest GPUs per DRAM level);
 *  4. confirmation (confirm.c): the cheapest point re-run on
 *     opts.confirm_seeds seeds, on the trace as recorded and resampled,
 *     each run within opts.headroom of every target, growing by one
 *     instance on each failing side until a candidate passes them all:
 *     the recommendation (sim_slo_answer).
 * multi.c runs one search per GPU kind, GPUs per instance and cluster mode
 * (--hardware, --tp, --modes); tiers.c is `kvsim plan tiers`, one
 * cluster against the size of its DRAM or disk tier; text.c and result.c
 * print them; command.c writes each point's `kvsim run` line.
 * Each probe of a split (P, D, DRAM) runs every scope × CPP point at once,
 * in parallel; a split passes when any of them does.
 *
 * Use: sim_slo_opts_init, fill, sim_slo_plan, print (or sim_slo_json),
 * sim_slo_free (always, also after a failed plan). */
#ifndef SIM_SLO_PLAN_SLO_H
#define SIM_SLO_PLAN_SLO_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "sim/config/config.h"
#include "sim/sweep/sweep.h"
#include "sim/util.h"

/* Targets: {TTFT, TBT} × {mean, p50, p90, p99}, in that order; target t
 * reads summary key sim_slo_metric_key(t) (".ttft_ms") and statistic
 * sim_slo_stat_key(t) ("p90"); its option is "--ttft-p90-ms". */
enum { SIM_SLO_NSTATS = 4, SIM_SLO_NTARGETS = 8, SIM_SLO_MAX_LIST = 16 };
/* DRAM levels of a plan: the listed ones, then those the cliff search adds. */
enum { SIM_SLO_MAX_LEVELS = 64 };
const char *sim_slo_metric_key(int t); /* "ttft_ms" or "tbt_ms" */
const char *sim_slo_stat_key(int t);   /* "mean", "p50", "p90", "p99" */
const char *sim_slo_option(int t);     /* "ttft-p90-ms" */
const char *sim_slo_label(int t);      /* "TTFT p90" */
bool sim_slo_is_ttft(int t);

typedef struct sim_slo_opts {
    const char *config; /* --config, or NULL */
    const char *trace;  /* --trace, or NULL: the config's trace.path */
    const char *speed;  /* --speed as given, or NULL: the config's trace.speed */
    char **sets;        /* --set "key=value" (borrowed) */
    int nsets;
    double target[SIM_SLO_NTARGETS]; /* ms; 0 = no target */
    double attainment;               /* minimum SLO attainment (default 0.9), with no overload; 0 = SLOs ignored */
    bool allow_rejected;             /* requests may be rejected or lost (default: none may) */
    int max_instances;               /* P + D at most; 32 */
    double dram
        [SIM_SLO_MAX_LIST]; /* DRAM per node, bytes, descending; ndram 0 = the hardware preset's × 1, 1/2, 1/4, 1/8 */
    int ndram;
    int scope[2]; /* kv_scope values to try; default global, local */
    int nscope;
    int cpp[SIM_SLO_MAX_LIST]; /* cluster.cpp_group values to try; default 1, 4 */
    int ncpp;
    const char *disagg_opt; /* "--scopes" or "--cpp" when given (disaggregated only), or NULL */
    /* aggregated (LMCache) clusters only; n* 0 = the config's value, not searched */
    double ssd[SIM_SLO_MAX_LIST]; /* kvstore.ssd_bytes per instance to try, ascending */
    int nssd;
    double remote[SIM_SLO_MAX_LIST]; /* kvstore.remote.bytes to try, ascending */
    int nremote;
    int load[SIM_LOAD_N]; /* kvstore.load values to try (SIM_LOAD_*) */
    int nload;
    double dram_step;      /* the cliff's resolution, bytes; 0 = 1 GB */
    int jobs;              /* worker processes */
    const char *db;        /* results database, or NULL: a temporary one, removed at the end */
    bool tty;              /* the sweep engine's progress as a bar */
    sim_sweep_slurm slurm; /* slurm.on: each probe's points as one Slurm job array */
    /* confirmation (confirm.c): the cheapest point re-run before it is recommended */
    int confirm_seeds;    /* seeds per workload, from the config's seed up (default 4; 0 = no confirmation) */
    int confirm_resample; /* trace.resample of the second workload (SIM_RESAMPLE_*; default sessions, none = only
                               the trace as recorded) */
    double headroom;      /* every confirmation meets each target × (1 − headroom) (default 0.05) */
} sim_slo_opts;

void sim_slo_opts_init(sim_slo_opts *o);

/* One evaluated point: a `kvsim run` and how it did. */
typedef struct sim_slo_point {
    int prefill, decode, dram_level, scope, cpp; /* aggregated: prefill = instances, decode = 0 */
    int knob;                                    /* its knobs' index in the probe's grid */
    int load;                                    /* aggregated: kvstore.load (SIM_LOAD_*) */
    double ssd, remote;                          /* aggregated: kvstore.ssd_bytes, kvstore.remote.bytes */
    int probe;                                   /* the probe (1, 2, ...) that ran it: the search's order */
    bool ran;                                    /* its summary was read (false: the run failed) */
    int64_t run_id;
    double value[SIM_SLO_NTARGETS]; /* every metric, ms */
    double attainment;
    double util_prefill, decode_load; /* utilisation.prefill; decode_load (sim_slo_decode_load) */
    double hit_rate;                  /* hit_rate_tokens */
    double goodput;                   /* goodput_rps */
    double tokens, sim_seconds;       /* output tokens of completed requests ("tokens"), simulated seconds */
    uint64_t seed;                    /* the run's seed (a confirmation's) */
    int resample;                     /* its trace.resample (SIM_RESAMPLE_*) */
    int64_t requests, rejected;       /* rejected: rejected or lost */
    bool overloaded;                  /* the run's diagnosis.overloaded */
    char busiest[64];                 /* its diagnosis.bottleneck ("prefill compute", "decode"), or "" */
    double busiest_util;              /* and that kind's utilisation */
    bool feasible, prefill_ok, decode_ok;
    bool feasible_bare; /* a confirmation: feasible against the targets themselves (feasible: with the headroom) */
} sim_slo_point;

/* The cost model's floor of every target for one CPP group. */
typedef struct sim_slo_floor {
    int cpp, threshold;             /* group and cluster.cpp_threshold it assumes */
    double value[SIM_SLO_NTARGETS]; /* no cluster's metric is below it (ms) */
    double attainment;              /* no cluster's attainment is above it */
    bool blocks;                    /* a target lies beyond it */
} sim_slo_floor;

/* Confirmation of one candidate (confirm.c): its point re-run on
 * opts.confirm_seeds seeds, on the trace as recorded and resampled. */
enum { SIM_SLO_MAX_SEEDS = 16, SIM_SLO_MAX_CANDIDATES = 16 };
typedef struct sim_slo_candidate {
    sim_slo_point run[2 * SIM_SLO_MAX_SEEDS]; /* each confirmation: seeds, then the same seeds resampled */
    int nrun;
    int pass;                       /* confirmations meeting every target with the headroom (and the SLOs) */
    int pass_bare;                  /* meeting every target without the headroom */
    double worst[SIM_SLO_NTARGETS]; /* each target's worst value over the confirmations (ms) */
    double worst_attainment;
    bool knife_edge; /* all pass bare, not all with the headroom */
    char miss[256];  /* the first miss with the headroom, or "" */
    char *command;   /* its `kvsim run` line (sim_slo_free frees it) */
} sim_slo_candidate;
/* A candidate's confirmations on a resampled workload (each a fresh draw of
 * the load: trace.resample), and, all of them passing, the one-sided 95%
 * Clopper-Pearson bound on how often a draw fails, 1 − 0.05^(1/n): what n
 * passes out of n can rule out (4 passes: a failure rate above 52.7%). */
int sim_slo_draws(const sim_slo_candidate *c);
/* How many of its confirmations are distinct: on the trace as recorded a
 * seed may change nothing a run measures (confirm.c). */
int sim_slo_distinct(const sim_slo_candidate *c);
double sim_slo_fail_bound(int draws);

typedef enum sim_slo_status { SIM_SLO_FEASIBLE, SIM_SLO_INFEASIBLE_FLOOR, SIM_SLO_INFEASIBLE_MAX } sim_slo_status;

typedef struct sim_slo_result {
    /* the setup */
    char trace[4096], model[64], hardware[64];
    uint64_t fingerprint;
    int64_t requests;
    double speed, kv_bytes_per_token, hw_dram_bytes;
    double slo_ttft_ms, slo_tbt_ms; /* the config's SLOs (slo.ttft_ms, slo.tbt_ms) */
    int gpus_per_instance, block_tokens, cpp_threshold;
    int tp, pp;                    /* the instance's tensor and pipeline parallel degrees (cluster.gpus_per_instance) */
    int prefill_gpus, decode_gpus; /* per instance of each side (cluster.prefill_hardware, decode_hardware) */
    double prefill_price, decode_price; /* their hardware.price_per_hour, a node-hour's share (0 = not given) */
    double dram_price, ssd_price;       /* hardware.dram_price_per_GB_hour, ssd_price_per_GB_hour (0 = not given) */
    double ssd_bytes;                   /* the config's kvstore.ssd_bytes (per node, not searched when disaggregated) */
    double hw_ssd_bytes;                /* hardware.ssd_bytes: the node's disks (0 = not given) */
    double dram[SIM_SLO_MAX_LEVELS];    /* the listed levels (descending), then the cliff's */
    int ndram, nlisted;
    bool aggregated, lmcache;   /* cluster.mode = aggregated; kvstore.lmcache */
    int instances_per_node;     /* > 1: DRAM is per node of that many instances (kvstore.cpu_scope = node) */
    int cliff_pass, cliff_fail; /* aggregated: the least DRAM passing with the fewest instances and the
                                   most failing below it (points), or -1 */
    double dram_step;           /* the cliff's resolution */
    /* step 0 */
    sim_slo_floor floor[SIM_SLO_MAX_LIST]; /* one per CPP group tried (opts.cpp) */
    int nfloor;
    sim_slo_floor best_cpp;                /* CPP over 8 nodes, threshold 0: what CPP could do */
    double hit_rate_tokens;                /* achievable (unbounded cache) */
    int64_t max_input;                     /* longest prompt */
    int32_t prompt_tokens;                 /* the quantile prompt of the first TTFT target */
    char prompt_q[8];                      /* its quantile: "p90" */
    double prompt_alone_ms, prompt_hit_ms; /* it alone on one instance, without and with its hit */
    char note[1024];                       /* CPP groups dropped, and why */
    /* steps 1-3 */
    sim_slo_point *pts;
    int npts, nprobes;
    int frontier[SIM_SLO_MAX_LEVELS]; /* per listed DRAM level: its cheapest point, or -1 */
    int cheapest;                     /* point index, or -1 */
    sim_slo_status status;
    char reason[1024];                          /* why infeasible */
    char command[8192];                         /* the `kvsim run` reproducing the cheapest point */
    char *frontier_command[SIM_SLO_MAX_LEVELS]; /* each frontier point's (sim_slo_free frees them) */
    /* confirmation (confirm.c): candidates from the cheapest point up, until one passes them all */
    sim_slo_candidate *cand;
    int ncand;
    int recommended;                /* the candidate recommended, or -1 (none passed: exit 3) */
    char confirm_note[512];         /* why confirmation stopped without a recommendation */
    int64_t runs, recorded, failed; /* points run, found recorded, failed */
    int stop_signal;                /* a signal stopped a sweep (sim_slo_plan returned -1) */
    double wall_seconds;
} sim_slo_result;

/* Search; 0 with *r filled (feasible or not: r->status), -1 with err for
 * bad options, config or trace, or a sweep that could not run. */
int sim_slo_plan(const sim_slo_opts *o, sim_slo_result *r, sim_err *err);
/* The result as one JSON object (caller decrefs). */
json_t *sim_slo_json(const sim_slo_opts *o, const sim_slo_result *r);
/* GPUs of a point: P × a prefill instance's GPUs + D × a decode one's. */
int sim_slo_gpus(const sim_slo_result *r, const sim_slo_point *p);
/* Its price per hour from both sides' hardware.price_per_hour; 0 when
 * either is not given (an input: docs/hardware.md §4); plus its DRAM and
 * disk at hardware.dram_price_per_GB_hour and ssd_price_per_GB_hour when
 * those are given (sim_slo_tier_price). */
double sim_slo_price(const sim_slo_result *r, const sim_slo_point *p);
/* The DRAM and disk part of it alone ($/h; 0 when not priced). */
double sim_slo_tier_price(const sim_slo_result *r, const sim_slo_point *p);
/* $ per million output tokens served: the price over the run's simulated
 * time, per output token of its completed requests; 0 when not priced. */
double sim_slo_price_per_mtok(const sim_slo_result *r, const sim_slo_point *p);
/* The result as text on stdout (text.c). */
void sim_slo_print(const sim_slo_opts *o, const sim_slo_result *r);
/* What the search minimises: the price when both sides are priced, else
 * the GPUs. */
double sim_slo_cost(const sim_slo_result *r, const sim_slo_point *p);
void sim_slo_free(sim_slo_result *r);
/* The point a plan answers with: its recommended candidate's first run, or
 * with confirmation off its cheapest point; NULL when it has none. */
const sim_slo_point *sim_slo_answer(const sim_slo_result *r);

/* ---- one search per GPU kind and GPUs per instance (multi.c) ---- */
enum { SIM_SLO_MAX_VARIANTS = 64 };
typedef struct sim_slo_variant {
    char kind[48];     /* as given to --hardware ("h100", "h200x2"), or "" */
    char mode[16];     /* cluster.mode set (--modes), or "" (the config's) */
    char hardware[64]; /* the preset searched, or "" (the config's) */
    int tp;            /* cluster.gpus_per_instance set, or 0 */
    char why[256];     /* why it was not searched, or "" */
    sim_slo_result r;
} sim_slo_variant;
typedef struct sim_slo_multi {
    sim_slo_variant *v;
    int n;
    int best;        /* the cheapest answer (sim_slo_multi_cost), or -1 */
    bool by_gpus;    /* an answer has no price: every answer compared by its GPUs */
    int stop_signal; /* a signal stopped a search */
} sim_slo_multi;
/* What answer i is compared by: its price an hour (sim_slo_cost) when every
 * search's answer is priced, else its GPUs (dollars and GPU counts never
 * compared with each other). */
double sim_slo_multi_cost(const sim_slo_multi *m, int i);
/* Called before each search with its options (the command warns of the
 * config's caveats there). */
typedef void (*sim_slo_hook)(const sim_slo_opts *o, void *ctx);
/* Search each kind of hardware (comma-separated; NULL: the config's) at
 * each of tp[0..ntp) GPUs per instance, in each cluster mode of modes
 * ("disaggregated,aggregated"; NULL: the config's); 0 with m filled, -1 with err for a
 * bad list, a --set of a searched key or a stopping signal. A search that
 * cannot run has its variant's why. sim_slo_multi_free always. */
int sim_slo_plan_multi(const sim_slo_opts *o, const char *hardware, const int *tp, int ntp, const char *modes,
                       sim_slo_hook before, void *ctx, sim_slo_multi *m, sim_err *err);
/* The cheapest answered variant of kind, or -1. */
int sim_slo_multi_best_of(const sim_slo_multi *m, const char *kind);
void sim_slo_multi_print(const sim_slo_opts *o, const sim_slo_multi *m);
json_t *sim_slo_multi_json(const sim_slo_opts *o, const sim_slo_multi *m);
void sim_slo_multi_free(sim_slo_multi *m);
/* The decode load of a run's summary: its "decode_load", or in a summary
 * recorded before that key existed, "utilisation"."decode" (which was the
 * decode load then; docs/definitions.md). */
double sim_slo_decode_load(const json_t *summary);

/* ---- `kvsim plan tiers` (tiers.c): one cluster against the size of a KV tier ---- */
enum { SIM_TIERS_MAX = 32 };
typedef struct sim_tiers_opts {
    sim_slo_opts slo; /* config, trace, speed, sets, jobs, db, tty, slurm (the rest unused) */
    bool ssd;         /* the curve over kvstore.ssd_bytes (DRAM fixed at the config's) instead of kvstore.dram_bytes */
    double max;       /* the largest size (0: the node's, hardware.dram_bytes or hardware.ssd_bytes) */
    int points;       /* sizes max, max/2, ..., this many (default 8), and 0 */
    double knee;      /* the knee's share of the best hit rate (default 0.95) */
} sim_tiers_opts;
typedef struct sim_tiers {
    sim_slo_result r;                /* the setup: trace, hardware, prices */
    double size[SIM_TIERS_MAX];      /* ascending: 0, then max / 2^(points-1) ... max */
    sim_slo_point pt[SIM_TIERS_MAX]; /* each size's run */
    int n, P, D;                     /* sizes; the cluster (aggregated: P instances, D 0) */
    double fixed;                    /* the other tier's size per node (the config's) */
    int knee;                        /* the smallest size within knee × best_hit, or -1 */
    double best_hit;                 /* the best hit rate (tokens) on the grid */
    bool ssd;
} sim_tiers;
/* Whether the knee is the grid's largest size: the size below it is short
 * of the knee's share of the best, so the curve had not flattened within
 * the grid, and nothing says what a larger tier would gain. */
bool sim_slo_tiers_knee_at_top(const sim_tiers *t);
void sim_slo_tiers_opts_init(sim_tiers_opts *o);
/* Run the grid; 0 with t filled, -1 with err (bad options, config or a
 * size over the node's, or a sweep that could not run). */
int sim_slo_tiers(const sim_tiers_opts *o, sim_tiers *t, sim_err *err);
void sim_slo_tiers_print(const sim_tiers_opts *o, const sim_tiers *t);
json_t *sim_slo_tiers_json(const sim_tiers_opts *o, const sim_tiers *t);

#endif
