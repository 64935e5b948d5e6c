/* sched/registry.c — name → implementation tables, one per policy kind
 * (see sched/registry.h and sched/sched.h). Adding a policy = one file in
 * sched/ + one line in its table here. Lookups are linear scans: they happen
 * once per run and tables hold a handful of entries. */
#include "sched/registry.h"

#include <string.h>

extern const sched_router_ops sched_route_random, sched_route_round_robin, sched_route_least_loaded,
    sched_route_cache_aware_local, sched_route_kvcentric;
extern const sched_decode_ops sched_decode_least_loaded;
extern const sched_admission_ops sched_admit_none, sched_admit_slo_reject, sched_admit_baseline,
    sched_admit_early_reject, sched_admit_early_reject_predict;
extern const sched_pd_ops sched_pd_static, sched_pd_dynamic;

static const sched_router_ops *const routers[] = {
    &sched_route_random,    &sched_route_round_robin, &sched_route_least_loaded, &sched_route_cache_aware_local,
    &sched_route_kvcentric,
};

static const sched_decode_ops *const decoders[] = {
    &sched_decode_least_loaded,
};

static const sched_admission_ops *const admissions[] = {
    &sched_admit_none,         &sched_admit_slo_reject,           &sched_admit_baseline,
    &sched_admit_early_reject, &sched_admit_early_reject_predict,
};

static const sched_pd_ops *const pd_controllers[] = {
    &sched_pd_static,
    &sched_pd_dynamic,
};

SIM_REGISTRY(sched_router, sched_router_ops, routers)
SIM_REGISTRY(sched_decode, sched_decode_ops, decoders)
SIM_REGISTRY(sched_admission, sched_admission_ops, admissions)
SIM_REGISTRY(sched_pd, sched_pd_ops, pd_controllers)
