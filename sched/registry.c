/* sched/registry.c — name → implementation tables, one per policy kind.
 * Adding a policy = one file in sched/ + one line in its table here. */
#include "sched/sched.h"

#include <string.h>

extern const sched_router_ops sched_route_random, sched_route_round_robin, sched_route_least_loaded,
    sched_route_cache_aware_local;
extern const sched_decode_ops sched_decode_least_loaded;
extern const sched_admission_ops sched_admit_none, sched_admit_slo_reject;

static const sched_router_ops *const routers[] = {
    &sched_route_random,
    &sched_route_round_robin,
    &sched_route_least_loaded,
    &sched_route_cache_aware_local,
};

static const sched_decode_ops *const decoders[] = {
    &sched_decode_least_loaded,
};

static const sched_admission_ops *const admissions[] = {
    &sched_admit_none,
    &sched_admit_slo_reject,
};

static const sched_pd_ops pd_static = {
    .name = "static",
    .help = "keep the configured prefill/decode split for the whole run",
    .params = "",
};

static const sched_pd_ops *const pd_controllers[] = {
    &pd_static,
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define LOOKUP(table, name)                                                                                        \
    do {                                                                                                           \
        for (size_t i_ = 0; i_ < COUNT(table); i_++)                                                               \
            if (!strcmp(table[i_]->name, name)) return table[i_];                                                  \
        return NULL;                                                                                               \
    } while (0)

const sched_router_ops *sched_router_lookup(const char *name) { LOOKUP(routers, name); }
const sched_decode_ops *sched_decode_lookup(const char *name) { LOOKUP(decoders, name); }
const sched_admission_ops *sched_admission_lookup(const char *name) { LOOKUP(admissions, name); }
const sched_pd_ops *sched_pd_lookup(const char *name) { LOOKUP(pd_controllers, name); }

#define PRINT_KIND(f, title, key, table)                                                                           \
    do {                                                                                                           \
        fprintf(f, "%s (%s):\n", title, key);                                                                      \
        for (size_t i_ = 0; i_ < COUNT(table); i_++) {                                                             \
            fprintf(f, "  %-20s %s\n", table[i_]->name, table[i_]->help);                                          \
            if (*table[i_]->params) fprintf(f, "  %-20s params: %s\n", "", table[i_]->params);                     \
        }                                                                                                          \
    } while (0)

void sched_print_policies(FILE *f)
{
    PRINT_KIND(f, "prefill routers", "policy.router", routers);
    PRINT_KIND(f, "decode selectors", "policy.decode", decoders);
    PRINT_KIND(f, "admission", "policy.admission", admissions);
    PRINT_KIND(f, "PD-ratio controllers", "policy.pd_controller", pd_controllers);
}
