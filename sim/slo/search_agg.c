/* sim/slo/search_agg.c — steps 1-3 of `kvsim plan slo` for an aggregated
 * (LMCache) cluster (sim/slo/plan_slo.h): the fewest instances per level
 * of CPU DRAM, and the cliff of DRAM below which the fewest instances stop
 * meeting the targets.
 *
 * The assumptions are those of the disaggregated search (search.c), with
 * one axis where it has two: adding instances never hurts, and less DRAM
 * never helps. Then:
 *  1. at the largest DRAM level, the fewest instances I whose probe passes
 *     (slo_smallest: galloping up from 1, then bisecting), or none up to
 *     --max-instances: infeasible;
 *  2. for each smaller listed level, the fewest instances from the previous
 *     level's count up (one probe when it holds): the frontier. A level
 *     needing more than --max-instances ends the walk;
 *  3. the cliff: with the fewest instances of all (level 0's), the smallest
 *     listed level that passes and the listed level below it, which failed
 *     with them (or DRAM 0 when every listed level passes, run now); then
 *     bisecting between the two, each midpoint rounded to a multiple of
 *     the step (--dram-step, 1 GB), until they are one step apart. The
 *     cliff is that pair: the least DRAM passing and the most failing
 *     (LMCache's LRU pool over a cyclic reuse pattern goes from every
 *     reuse hitting to none within one chunk, so a cliff is what to expect).
 * The cheapest point is the cliff's passing point, or the frontier's
 * fewest instances at their least DRAM when there is no cliff. */
#include <math.h>
#include <stdio.h>

#include "sim/slo/slo_int.h"

/* slo_smallest's test: I instances at DRAM level *lv pass. */
static int instances_ok(slo_plan *pl, const void *ctx, int I, bool *ok, sim_err *err)
{
    slo_probe pr;
    if (slo_probe_run(pl, I, 0, *(const int *)ctx, "instances", &pr, err)) return -1;
    *ok = pr.feasible;
    return 0;
}

/* The reason no count up to M passes at level 0: the miss at M. */
static void infeasible(slo_plan *pl)
{
    sim_slo_result *r = pl->r;
    int M = pl->o->max_instances;
    char miss[256] = "";
    for (int i = 0; i < r->npts; i++)
        if (r->pts[i].prefill == M && r->pts[i].dram_level == 0) {
            slo_describe_miss(pl->o, &r->pts[i], miss, sizeof miss);
            break;
        }
    snprintf(r->reason, sizeof r->reason,
             "no cluster of up to %d instances (--max-instances) meets the targets: with %d instances and %.4g GB "
             "of DRAM: %s",
             M, M, r->dram[0] / 1e9, miss);
    r->status = SIM_SLO_INFEASIBLE_MAX;
}

/* Steps 1 and 2: r->frontier over the listed levels; *fewest the fewest
 * instances (level 0's), 0 when none passes. */
static int frontier(slo_plan *pl, int *fewest, sim_err *err)
{
    sim_slo_result *r = pl->r;
    int M = pl->o->max_instances, lo = 1;
    *fewest = 0;
    for (int lv = 0; lv < r->nlisted; lv++) {
        int I;
        if (slo_smallest(pl, instances_ok, &lv, lo, M, &I, err)) return -1;
        if (I > M) break;
        r->frontier[lv] = slo_feasible_point(r, I, 0, lv);
        if (lv == 0) *fewest = I;
        lo = I;
    }
    return 0;
}

/* A level of DRAM between fail and pass: the midpoint rounded to a
 * multiple of step, kept strictly inside. */
static double midpoint(double fail, double pass, double step)
{
    double m = step * round((fail + pass) / 2 / step);
    if (m <= fail) m = step * floor(fail / step) + step;
    if (m >= pass) m = step * ceil(pass / step) - step;
    return m > fail && m < pass ? m : (fail + pass) / 2;
}

/* Run I instances at a new DRAM level (appended to r->dram): its first
 * feasible point, or -1 with *failed a point of it. */
static int try_level(slo_plan *pl, int I, double dram, int *failed, sim_err *err)
{
    sim_slo_result *r = pl->r;
    int lv = r->ndram++;
    r->dram[lv] = dram;
    slo_probe pr;
    if (slo_probe_run(pl, I, 0, lv, "cliff", &pr, err)) return -2;
    for (int i = 0; i < r->npts && pr.best < 0; i++)
        if (r->pts[i].prefill == I && r->pts[i].dram_level == lv) *failed = i;
    return pr.best;
}

/* A failing point of I instances at listed level lv, or -1. */
static int failing_point(const sim_slo_result *r, int I, int lv)
{
    for (int i = 0; i < r->npts; i++)
        if (r->pts[i].prefill == I && r->pts[i].dram_level == lv && !r->pts[i].feasible) return i;
    return -1;
}

/* Step 3 (see the top of the file). */
static int cliff(slo_plan *pl, int I, sim_err *err)
{
    sim_slo_result *r = pl->r;
    int pass = -1, fail = -1, lv = 0;
    for (; lv < r->nlisted && r->frontier[lv] >= 0 && r->pts[r->frontier[lv]].prefill == I; lv++)
        pass = r->frontier[lv];
    if (lv < r->nlisted) fail = failing_point(r, I, lv);
    else if (r->dram[r->nlisted - 1] > 0 && r->lmcache) {
        int p = try_level(pl, I, 0, &fail, err);
        if (p < -1) return -1;
        if (p >= 0) pass = p, fail = -1; /* no DRAM needed */
    }
    while (fail >= 0 && r->ndram < SIM_SLO_MAX_LEVELS) {
        double lo = r->dram[r->pts[fail].dram_level], hi = r->dram[r->pts[pass].dram_level];
        if (hi - lo <= r->dram_step * (1 + 1e-12)) break;
        int f = fail, p = try_level(pl, I, midpoint(lo, hi, r->dram_step), &f, err);
        if (p < -1) return -1;
        if (p >= 0) pass = p;
        else fail = f;
    }
    r->cliff_pass = pass;
    r->cliff_fail = fail;
    return 0;
}

int slo_search_agg(slo_plan *pl, sim_err *err)
{
    sim_slo_result *r = pl->r;
    int fewest;
    if (frontier(pl, &fewest, err)) return -1;
    if (fewest == 0) return infeasible(pl), 0;
    if (r->lmcache && cliff(pl, fewest, err)) return -1;
    r->cheapest = r->cliff_pass >= 0 ? r->cliff_pass : r->frontier[0];
    for (int lv = 1; r->cliff_pass < 0 && lv < r->nlisted; lv++)
        if (r->frontier[lv] >= 0 && r->pts[r->frontier[lv]].prefill == fewest) r->cheapest = r->frontier[lv];
    r->status = SIM_SLO_FEASIBLE;
    return 0;
}
