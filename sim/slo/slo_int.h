/* sim/slo/slo_int.h — what the files of sim/slo share and nobody else sees:
 * the state of one plan. Calls go one way only: multi.c and tiers.c call
 * plan_slo.c; plan_slo.c calls floor.c, search.c, search_agg.c and
 * confirm.c; search_agg.c calls search.c (slo_smallest); the searches and
 * confirm.c call probe.c, confirm.c and plan_slo.c call command.c; every
 * file calls targets.c (the targets' names) and none calls back; result.c
 * and text.c only read a result. */
#ifndef SIM_SLO_INT_H
#define SIM_SLO_INT_H

#include <limits.h>
#include <stdint.h>

#include "sim/config/config.h"
#include "sim/results/results.h"
#include "sim/slo/plan_slo.h"
#include "sim/util.h"

/* The knobs one point of a probe is run at besides its split: scope and
 * CPP group (disaggregated), or disk, remote store and kvstore.load
 * (aggregated). */
typedef struct slo_knob {
    int scope, cpp, load;
    double ssd, remote;
} slo_knob;

enum { SLO_MAX_KNOBS = 256 };

typedef struct slo_plan {
    const sim_slo_opts *o;
    sim_slo_result *r;
    char **base; /* the sets of every point: --set, trace.path, trace.speed, no rows */
    int nbase;
    int cpp[SIM_SLO_MAX_LIST]; /* the CPP groups searched: opts.cpp less those the floor rules out */
    int ncpp;
    bool agg;                     /* an aggregated cluster: the split is cluster.instances */
    int load0;                    /* the config's kvstore.load (SIM_LOAD_*) */
    uint64_t seed;                /* the config's seed: the first confirmation seed */
    slo_knob knob[SLO_MAX_KNOBS]; /* the points of a probe's grid, in the sweep's order */
    int nknob;
    char grid[4096]; /* the knobs of a probe: "cluster.cpp_group=1,4;cluster.scope=global,local" */
    char db[PATH_MAX + 16], tmpdir[PATH_MAX];
    int stop_signal; /* the signal that stopped a sweep, or 0 */
} slo_plan;

/* What one probe of a split found over its scope × CPP points. */
typedef struct slo_probe {
    bool feasible, prefill_ok, decode_ok; /* of any point */
    int best;                             /* the first feasible point, or -1 */
} slo_probe;

/* floor.c: step 0 — the floors (r->floor, best_cpp, prompt, hit rate),
 * the CPP groups left to search (pl->cpp) and, when every one is blocked,
 * r->status = SIM_SLO_INFEASIBLE_FLOOR with r->reason. */
int slo_floor(slo_plan *pl, const sim_config *cfg, sim_err *err);

/* probe.c: run (or find recorded) every scope × CPP point of split (P, D) at
 * DRAM level lv, judge each, append them to r->pts; `why` names the step
 * in the progress line on stderr. */
int slo_probe_run(slo_plan *pl, int P, int D, int lv, const char *why, slo_probe *out, sim_err *err);
/* probe.c: judge a point read from its summary against pl->o's targets
 * (p->feasible, prefill_ok, decode_ok). */
void slo_judge(const slo_plan *pl, sim_slo_point *p);
/* probe.c: read the run of config sets[0..n) from db into p (p->ran
 * false when none finished) and judge it. */
int slo_read_point(slo_plan *pl, sim_results *db, char **sets, int n, sim_slo_point *p, sim_err *err);
/* probe.c: one sweep of grid over the fixed sets[0..n) into the plan's
 * database (recorded points skipped; counts into r->runs, recorded,
 * failed), then read(pl, its database, sets, n, ctx). */
typedef int (*slo_reader)(slo_plan *pl, sim_results *db, char **sets, int n, const void *ctx, sim_err *err);
int slo_sweep(slo_plan *pl, char **sets, int n, const char *grid, slo_reader read, const void *ctx, sim_err *err);
/* probe.c: "cluster.prefill=P", "cluster.decode=D" (or "cluster.instances=P")
 * and "kvstore.dram_bytes=..." of level lv into sets (caller frees each);
 * returns how many (at most 3). */
int slo_split_sets(const slo_plan *pl, int P, int D, int lv, char **sets);

/* plan_slo.c: pl->base, the sets of every point: --set, trace.path and
 * trace.speed, no request or sample rows (free each and the array). */
void slo_base_sets(slo_plan *pl);
/* plan_slo.c: pl->db: opts.db, or a temporary folder's plan.db (pl->tmpdir,
 * removed by the caller with sim_remove_tree). */
int slo_open_db(slo_plan *pl, sim_err *err);

/* confirm.c: the recommendation: candidates from the cheapest point up,
 * each re-run on opts.confirm_seeds seeds on the trace as recorded and
 * resampled, until one meets every target with opts.headroom on all of
 * them (r->cand, ncand, recommended, confirm_note). */
int slo_confirm(slo_plan *pl, sim_err *err);
/* plan_slo.c: the `kvsim run` line of split (P, D) at level lv with knob k
 * (caller frees). */
char *slo_command(const slo_plan *pl, int P, int D, int lv, int k);

/* probe.c: the first target point p misses, as "TTFT p90 5234.1 ms > 2000 ms". */
void slo_describe_miss(const sim_slo_opts *o, const sim_slo_point *p, char *buf, size_t n);

/* probe.c: the "key=value" sets of knob k into sets[0..) (each of 64
 * bytes), as the probe's grid writes them; returns how many. */
int slo_knob_sets(const slo_plan *pl, int k, char (*sets)[64]);
/* probe.c: the first feasible point of split (P, D) at level lv, or -1. */
int slo_feasible_point(const sim_slo_result *r, int P, int D, int lv);

/* search.c: steps 1-3 (r->pts, frontier, cheapest, status, reason). */
int slo_search(slo_plan *pl, sim_err *err);

/* search.c: the smallest v in [lo, hi] for which ok(ctx, v) holds (hi + 1:
 * none), assuming it fails below and holds above: galloping up from lo,
 * then bisecting. */
typedef int (*slo_test)(slo_plan *pl, const void *ctx, int v, bool *ok, sim_err *err);
int slo_smallest(slo_plan *pl, slo_test ok, const void *ctx, int lo, int hi, int *out, sim_err *err);

/* search_agg.c: steps 1-3 for an aggregated cluster: the fewest instances
 * per DRAM level, then the cliff (r->cliff_pass, r->cliff_fail). */
int slo_search_agg(slo_plan *pl, sim_err *err);

/* The "non-monotone" lines of a plan (sim/slo/text.c): each split that
 * fails at a DRAM level while it passes at a smaller one, with what moved
 * between the two runs (prefix hit rate, prefill busy, decode load) and the
 * one that moved most. Printed to stdout. */
void slo_print_nonmonotone(const sim_slo_opts *o, const sim_slo_result *r);

/* An aggregated cluster without LMCache: no tier below HBM (agg.c), so no
 * DRAM level is searched, priced, set on its runs or printed (plan_slo.c,
 * dram_levels). */
static inline bool slo_no_cpu_tier(const sim_slo_result *r) { return r->aggregated && !r->lmcache; }

#endif
