/* sim/replay/plan.c — capacity planning by bisection over cache-only replays
 * (see plan.h): the unbounded setup gives the achievable hit rate and the
 * goal, then the capacity in blocks is bisected between 0 and the trace's
 * distinct block count. */
#include "sim/replay/plan.h"

#include <math.h>

/* Bisection on blocks per node: invariant rate(lo) < goal ≤ rate(hi). */
static int bisect(kv_replay_trace *t, const kv_hitrate_spec *s, int64_t distinct, kv_plan_result *p, sim_err *err)
{
    int64_t lo = 0, hi = distinct;
    p->best = p->max;
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        kv_replay_result r;
        if (kv_hitrate_point(t, s, (double)mid * s->block_tokens, &r, err)) return -1;
        p->replays++;
        if (r.hit_rate_blocks >= p->goal) {
            hi = mid;
            p->best = r;
        } else {
            lo = mid;
        }
    }
    p->blocks = hi;
    return 0;
}

int kv_plan(kv_replay_trace *t, const kv_hitrate_spec *s, double target, kv_plan_result *p, sim_err *err)
{
    *p = (kv_plan_result){0};
    kv_replay_result all;
    if (kv_hitrate_max(t, &all, err) || kv_hitrate_point(t, s, INFINITY, &p->max, err)) return -1;
    p->replays = 2;
    p->goal = target * p->max.hit_rate_blocks;
    if (p->goal <= 0) {
        p->best = p->max;
        return 0;
    }
    /* Every distinct key is inserted exactly once into an unbounded cache. */
    return bisect(t, s, all.tier[KV_TIER_DRAM].inserts, p, err);
}
