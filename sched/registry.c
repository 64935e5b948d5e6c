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

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* count / at / lookup of one table (the lookup compares names; nothing else does). */
#define REGISTRY(kind, ops_t, table)                                                                                   \
    size_t sched_##kind##_count(void) { return COUNT(table); }                                                         \
    const ops_t *sched_##kind##_at(size_t i) { return i < COUNT(table) ? table[i] : NULL; }                            \
    const ops_t *sched_##kind##_lookup(const char *name)                                                               \
    {                                                                                                                  \
        for (size_t i = 0; i < COUNT(table); i++)                                                                      \
            if (!strcmp(table[i]->name, name)) return table[i];                                                        \
        return NULL;                                                                                                   \
    }

REGISTRY(router, sched_router_ops, routers)
REGISTRY(decode, sched_decode_ops, decoders)
REGISTRY(admission, sched_admission_ops, admissions)
REGISTRY(pd, sched_pd_ops, pd_controllers)
