/* sim/slo/search.c — steps 1-3 of `kvsim plan slo` (sim/slo/plan_slo.h):
 * the cheapest split whose runs meet the targets, and the frontier over
 * DRAM per node. Cheapest is the fewest GPUs, or the lowest price an hour
 * when hardware.price_per_hour prices both sides (sim_slo_cost): with
 * prefill and decode on different presets the two differ.
 *
 * The search rests on one assumption, which issue 12 states and the runs
 * bear out: TTFT falls as prefill instances are added and hardly depends
 * on decode instances, TBT falls as decode instances are added and hardly
 * depends on prefill ones, and less DRAM never helps. Then a probe that
 * fails on the prefill side at P fails at every P' ≤ P (a lower bound
 * P_lo), one that fails on the decode side at D fails at every D' ≤ D
 * (D_lo), and a cluster of N < P_lo + D_lo instances cannot pass. So:
 *  1. on the line P + D = M (--max-instances), where each P has the most
 *     decode instances it can have, bisect the smallest P whose prefill
 *     side passes and the largest P whose decode side passes: about
 *     2 log2(M) probes, each telling both bisections something;
 *  2. tighten each bound along its own axis (the fewest P passing with
 *     D_lo decode instances, then the fewest D passing with P_lo; one probe
 *     when the bound already holds), then probe the splits inside the
 *     bounds cheapest first (for equal costs per instance: N = P_lo + D_lo
 *     first, then each larger N), raising the bounds on each failure,
 *     until a split passes: the cheapest. Where the runs break the
 *     assumption, a cheaper feasible point some earlier probe of the level
 *     found wins. Then the two clusters one instance smaller
 *     (one prefill, one decode fewer) are run and must fail; if one passes
 *     it becomes the answer and is checked in turn;
 *  3. for each smaller DRAM level, the same (with its check) from the
 *     previous level's bounds: the frontier. A level that needs more than
 *     M instances ends the walk (smaller levels would need as many).
 * The cheapest point is the frontier's cheapest, then the least DRAM.
 * The runs are not exactly monotone (a TBT 0.5 ms over its target at one
 * DRAM level and under it at a smaller one): the frontier reports what
 * each level's runs showed, and the cheapest point is a run that met
 * every target, the clusters one instance smaller run and failing. */
#include <stdio.h>
#include <stdlib.h>

#include "sim/slo/slo_int.h"

static int imax(int a, int b) { return a > b ? a : b; }
static int imin(int a, int b) { return a < b ? a : b; }

/* The point of the line at P whose first miss explains a failure. */
static void line_reason(slo_plan *pl, int P, const char *what, char *buf, size_t n)
{
    const sim_slo_result *r = pl->r;
    int M = pl->o->max_instances;
    char miss[256] = "";
    for (int i = 0; i < r->npts; i++)
        if (r->pts[i].prefill == P && r->pts[i].decode == M - P && r->pts[i].dram_level == 0) {
            slo_describe_miss(pl->o, &r->pts[i], miss, sizeof miss);
            break;
        }
    snprintf(buf, n, "no cluster of up to %d instances (--max-instances) meets the targets: %s at %dP%dD: %s", M, what,
             P, M - P, miss);
}

/* Step 1: P_lo, the smallest P with its prefill side passing on the line,
 * and D_lo = M − the largest P with its decode side passing. a < P_lo ≤ b
 * and c ≤ P_hi < d throughout; b = M or c = 0 at the end: never. */
static int line_bounds(slo_plan *pl, int *p_lo, int *d_lo, sim_err *err)
{
    int M = pl->o->max_instances, a = 0, b = M, c = 0, d = M;
    while (b - a > 1 || d - c > 1) {
        int P = b - a > 1 ? (a + b) / 2 : (c + d) / 2;
        slo_probe pr;
        if (slo_probe_run(pl, P, M - P, 0, "line", &pr, err)) return -1;
        if (pr.prefill_ok) b = imin(b, P);
        else a = imax(a, P);
        if (pr.decode_ok) c = imax(c, P);
        else d = imin(d, P);
    }
    *p_lo = b;
    *d_lo = M - c;
    sim_slo_result *r = pl->r;
    if (b == M) line_reason(pl, M - 1, "the prefill side fails even", r->reason, sizeof r->reason);
    else if (c == 0) line_reason(pl, 1, "the decode side fails even", r->reason, sizeof r->reason);
    else if (b > c)
        snprintf(r->reason, sizeof r->reason,
                 "no cluster of up to %d instances (--max-instances) meets the targets: the prefill side needs %d "
                 "instances and the decode side %d",
                 M, b, M - c);
    return 0;
}

/* One side's bound at DRAM level lv: the prefill side along P with
 * `other` decode instances, or the decode side along D (slo_smallest's
 * test side_ok). */
typedef struct slo_axis {
    int lv, other;
    bool prefill;
} slo_axis;

static int side_ok(slo_plan *pl, const void *ctx, int v, bool *ok, sim_err *err)
{
    const slo_axis *ax = ctx;
    slo_probe pr;
    int P = ax->prefill ? v : ax->other, D = ax->prefill ? ax->other : v;
    if (slo_probe_run(pl, P, D, ax->lv, ax->prefill ? "prefill bound" : "decode bound", &pr, err)) return -1;
    *ok = ax->prefill ? pr.prefill_ok : pr.decode_ok;
    return 0;
}

/* The smallest v in [lo, hi] that passes (hi + 1: none), failing below
 * and passing above: galloping up from lo (lo, lo + 2, lo + 6, lo + 14,
 * ...: a bound that holds costs one probe, one that moves by k about
 * 2 log2 k), then bisecting between the last failure and the first pass. */
int slo_smallest(slo_plan *pl, slo_test test, const void *ctx, int lo, int hi, int *out, sim_err *err)
{
    int fail = lo - 1, pass = hi + 1;
    bool ok = false;
    for (int step = 1; fail < hi && !ok; step *= 2) {
        int v = imin(fail + step, hi);
        if (test(pl, ctx, v, &ok, err)) return -1;
        if (ok) pass = v;
        else fail = v;
    }
    while (pass - fail > 1 && pass <= hi) {
        int v = fail + (pass - fail) / 2;
        if (test(pl, ctx, v, &ok, err)) return -1;
        if (ok) pass = v;
        else fail = v;
    }
    *out = pass;
    return 0;
}

/* The cost the search minimises: a split's price per hour when both
 * sides are priced (hardware.price_per_hour, docs/hardware.md §4), else its
 * GPUs. Homogeneous and unpriced, it is the instance count times one
 * instance's GPUs, so the order below is the instance count's. */
static double split_cost(const sim_slo_result *r, int P, int D, int lv)
{
    sim_slo_point p = {.prefill = P, .decode = D, .dram_level = lv};
    return sim_slo_cost(r, &p);
}

/* Splits (P, D) and (P2, D2) compared by cost, then by instances:
 * negative when the first is cheaper. */
static int cmp_cost(const sim_slo_result *r, int lv, int P, int D, int lv2, int P2, int D2)
{
    double c = split_cost(r, P, D, lv), c2 = split_cost(r, P2, D2, lv2);
    if (c != c2) return c < c2 ? -1 : 1;
    return (P + D > P2 + D2) - (P + D < P2 + D2);
}

/* The staircase's order: by cost and instances, then fewer prefill
 * instances first. */
static bool before(const sim_slo_result *r, int lv, int P, int D, int P2, int D2)
{
    int c = cmp_cost(r, lv, P, D, lv, P2, D2);
    return c ? c < 0 : P < P2;
}

/* The staircase's next split: of those not yet probed inside the bounds
 * (P >= p_lo, D >= d_lo, P + D <= M), the first in `before` order. The
 * cost is linear in P and D with positive weights, so along each P the
 * splits come in order of D: dnext[P] is the next D to probe at that P, and
 * the next split is the first of those heads (a merge of M sorted lists,
 * never materialised). Returns false when none is left. */
static bool next_split(const slo_plan *pl, int lv, const int *dnext, int p_lo, int d_lo, int *P, int *D)
{
    int M = pl->o->max_instances;
    *P = -1;
    for (int p = p_lo; p <= M - d_lo; p++) {
        int d = imax(dnext[p], d_lo);
        if (p + d > M) continue;
        if (*P < 0 || before(pl->r, lv, p, d, *P, *D)) *P = p, *D = d;
    }
    return *P >= 0;
}

/* Steps 2 and 3: the cheapest feasible split at DRAM level lv (*best its
 * point, -1 when none up to M). The bounds are first made tight along each
 * axis (slo_smallest), then the splits inside them are probed cheapest
 * first (next_split), the bounds rising as probes fail. */
static int staircase(slo_plan *pl, int lv, int *p_lo, int *d_lo, int *best, sim_err *err)
{
    int M = pl->o->max_instances;
    *best = -1;
    slo_axis ap = {lv, *d_lo, true};
    if (slo_smallest(pl, side_ok, &ap, *p_lo, M - *d_lo, p_lo, err)) return -1;
    slo_axis ad = {lv, *p_lo, false};
    if (*p_lo + *d_lo <= M && slo_smallest(pl, side_ok, &ad, *d_lo, M - *p_lo, d_lo, err)) return -1;
    int *dnext = sim_xcalloc((size_t)M + 1, sizeof *dnext), P, D, rc = 0;
    while (next_split(pl, lv, dnext, *p_lo, *d_lo, &P, &D)) {
        slo_probe pr;
        if ((rc = slo_probe_run(pl, P, D, lv, "staircase", &pr, err))) break;
        dnext[P] = D + 1;
        if (pr.feasible) {
            *best = pr.best;
            break;
        }
        if (!pr.prefill_ok) *p_lo = imax(*p_lo, P + 1);
        if (!pr.decode_ok) *d_lo = imax(*d_lo, D + 1);
    }
    free(dnext);
    return rc;
}

/* Steps 2 and 3's check, at the level of *best: the clusters one prefill
 * and one decode instance smaller fail; when one passes, it becomes the
 * answer and is checked in turn. */
static int confirm(slo_plan *pl, int *best, sim_err *err)
{
    for (bool moved = true; moved;) {
        const sim_slo_point *p = &pl->r->pts[*best];
        int P = p->prefill, D = p->decode;
        slo_probe pr = {.best = -1};
        moved = false;
        int lv = p->dram_level;
        if (P > 1 && slo_probe_run(pl, P - 1, D, lv, "confirm", &pr, err)) return -1;
        if (!pr.feasible && D > 1 && slo_probe_run(pl, P, D - 1, lv, "confirm", &pr, err)) return -1;
        if (pr.feasible) *best = pr.best, moved = true;
    }
    return 0;
}

/* Points i and j compared by cost, then instances (cmp_cost). */
static int cmp_points(const sim_slo_result *r, int i, int j)
{
    const sim_slo_point *p = &r->pts[i], *q = &r->pts[j];
    return cmp_cost(r, p->dram_level, p->prefill, p->decode, q->dram_level, q->prefill, q->decode);
}

/* The frontier's cheapest (sim_slo_cost, then fewest instances), then the
 * least DRAM (the later level). */
static void pick_cheapest(sim_slo_result *r)
{
    for (int lv = 0; lv < r->ndram; lv++) {
        int i = r->frontier[lv];
        if (i >= 0 && (r->cheapest < 0 || cmp_points(r, i, r->cheapest) <= 0)) r->cheapest = i;
    }
}

/* The cheapest feasible point of level lv (the first found of equals), or -1. */
static int cheapest_feasible(const sim_slo_result *r, int lv)
{
    int best = -1;
    for (int i = 0; i < r->npts; i++)
        if (r->pts[i].feasible && r->pts[i].dram_level == lv && (best < 0 || cmp_points(r, i, best) < 0)) best = i;
    return best;
}

/* One DRAM level: the staircase, then the cheapest point any of the
 * level's runs met the targets with (where the runs break the assumption
 * the staircase may miss one the line or a bound probe found), checked. */
static int level(slo_plan *pl, int lv, int *p_lo, int *d_lo, int *best, sim_err *err)
{
    if (staircase(pl, lv, p_lo, d_lo, best, err)) return -1;
    int k = cheapest_feasible(pl->r, lv);
    if (k >= 0 && (*best < 0 || cmp_points(pl->r, k, *best) < 0)) *best = k;
    return *best >= 0 ? confirm(pl, best, err) : 0;
}

int slo_search(slo_plan *pl, sim_err *err)
{
    sim_slo_result *r = pl->r;
    int p_lo, d_lo, best = -1;
    if (line_bounds(pl, &p_lo, &d_lo, err)) return -1;
    if (r->reason[0]) return r->status = SIM_SLO_INFEASIBLE_MAX, 0;
    for (int lv = 0; lv < r->ndram; lv++) {
        if (lv) p_lo = imin(p_lo, r->pts[best].prefill), d_lo = imin(d_lo, r->pts[best].decode);
        int b = -1;
        if (level(pl, lv, &p_lo, &d_lo, &b, err)) return -1;
        if (b < 0) break;
        r->frontier[lv] = best = b;
    }
    if (best < 0) {
        snprintf(r->reason, sizeof r->reason, "no split of up to %d instances met the targets (--max-instances)",
                 pl->o->max_instances);
        return r->status = SIM_SLO_INFEASIBLE_MAX, 0;
    }
    pick_cheapest(r);
    r->status = SIM_SLO_FEASIBLE;
    return 0;
}
