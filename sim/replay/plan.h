/* sim/replay/plan.h — capacity planning by cache-only replay, the engine of
 * `kvsim plan` (sim/cli/cmd_plan.c parses and prints): the smallest DRAM
 * capacity per node that reaches a target fraction of the achievable prefix
 * hit rate (Mooncake §7.3.1: "1 TB of DRAM holds about 3M tokens of
 * LLaMA3-70B — how much is enough?").
 *
 * The achievable hit rate is the same setup's with unbounded DRAM. The
 * search bisects the capacity in blocks between 0 and the trace's distinct
 * block count (where nothing is ever evicted, so the hit rate equals the
 * unbounded one). Bisection assumes the hit rate does not decrease with
 * capacity, which holds for stack policies such as LRU and Belady; for the
 * others the answer is a capacity that reaches the target, not necessarily
 * the smallest one. */
#ifndef SIM_PLAN_H
#define SIM_PLAN_H

#include <stdint.h>

#include "sim/replay/hitrate.h"
#include "sim/util.h"

typedef struct kv_plan_result {
    kv_replay_result max;  /* the setup with unbounded DRAM: the achievable */
    kv_replay_result best; /* the setup at the answer's capacity */
    double goal;           /* target × max.hit_rate_blocks */
    int64_t blocks;        /* the answer: DRAM blocks per node */
    int replays;           /* replays the search took */
} kv_plan_result;

/* Search the DRAM capacity per node (spec's capacity list is ignored) for
 * the smallest one whose block hit rate reaches target (in (0, 1]) × the
 * achievable one. */
int kv_plan(kv_replay_trace *t, const kv_hitrate_spec *s, double target, kv_plan_result *p, sim_err *err);

#endif
