/* sim/slo/slo_int.h — what the files of sim/slo share and nobody else sees:
 * the state of one plan. Calls go one way only: plan_slo.c calls floor.c
 * and search.c; search.c calls probe.c; every file calls targets.c (the
 * targets' names) and none calls back; result.c only reads a result. */
#ifndef SIM_SLO_INT_H
#define SIM_SLO_INT_H

#include <limits.h>
#include <stdint.h>

#include "sim/config/config.h"
#include "sim/slo/plan_slo.h"
#include "sim/util.h"

typedef struct slo_plan {
    const sim_slo_opts *o;
    sim_slo_result *r;
    char **base; /* the sets of every point: --set, trace.path, trace.speed, no rows */
    int nbase;
    int cpp[SIM_SLO_MAX_LIST]; /* the CPP groups searched: opts.cpp less those the floor rules out */
    int ncpp;
    char grid[512]; /* the knobs of a probe: "cluster.cpp_group=1,4;cluster.scope=global,local" */
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
/* probe.c: the first target point p misses, as "TTFT p90 5234.1 ms > 2000 ms". */
void slo_describe_miss(const sim_slo_opts *o, const sim_slo_point *p, char *buf, size_t n);

/* search.c: steps 1-3 (r->pts, frontier, cheapest, status, reason). */
int slo_search(slo_plan *pl, sim_err *err);

#endif
