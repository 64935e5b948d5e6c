/* sched/registry.c — name → implementation tables, one per policy kind
 * (see sched/registry.h and sched/sched.h). Adding a policy = one file in
 * sched/ + one line in its table here. Lookups are linear scans: they happen
 * once per run and tables hold a handful of entries. */
#include "sched/registry.h"
#include "sched/sched.h"

#include <stdio.h>
#include <string.h>

/* ---- eviction policies ------------------------------------------------- */

static const sched_evict_entry evict_table[] = {
    {"lru", "least recently used (Mooncake Store default, §3.2.1)", "", false, &sched_evict_lru_ops},
    {"fifo", "first in, first out: hits do not reorder", "", false, &sched_evict_fifo_ops},
    {"lfu", "least frequently used, ties to LRU; counts halve periodically (aging)",
     "lfu_max_freq=15: count saturation; lfu_age_period=0: accesses between halvings (0 = 10 x resident blocks)",
     false, &sched_evict_lfu_ops},
    {"sieve", "SIEVE (NSDI'24): FIFO queue, visited bit, a hand that sifts out unvisited blocks", "", false,
     &sched_evict_sieve_ops},
    {"s3fifo", "S3-FIFO (SOSP'23): small + main FIFO queues and a ghost queue",
     "s3fifo_small_ratio=0.1: share of the small queue; s3fifo_ghost_ratio=0.9: ghost size / capacity; "
     "s3fifo_move_threshold=2: hits in the small queue to move to main",
     false, &sched_evict_s3fifo_ops},
    {"belady", "offline optimum (furthest next use, with bypass); kvsim hitrate only", "", true,
     &sched_evict_belady_ops},
};

#define N_EVICT (sizeof evict_table / sizeof evict_table[0])

size_t sched_evict_count(void) { return N_EVICT; }

const sched_evict_entry *sched_evict_at(size_t i) { return i < N_EVICT ? &evict_table[i] : NULL; }

const sched_evict_entry *sched_evict_lookup(const char *name)
{
    for (size_t i = 0; i < N_EVICT; i++)
        if (!strcmp(evict_table[i].name, name)) return &evict_table[i];
    return NULL;
}

int sched_evict_find(const char *name, const sched_evict_entry **out, sim_err *err)
{
    *out = sched_evict_lookup(name);
    if (*out) return 0;
    char known[256] = "";
    for (size_t i = 0; i < N_EVICT; i++) {
        size_t len = strlen(known);
        snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "", evict_table[i].name);
    }
    return sim_errf(err, "unknown eviction policy '%s' (known: %s)", name, known);
}

/* ---- parameters -------------------------------------------------------- */

int sched_param_number(const json_t *params, const char *name, double def, double min, double max, double *out,
                       sim_err *err)
{
    const json_t *v = params ? json_object_get(params, name) : NULL;
    if (!v) {
        *out = def;
        return 0;
    }
    if (!json_is_number(v)) return sim_errf(err, "policy.params.%s: expected a number", name);
    double x = json_number_value(v);
    if (x < min || x > max) return sim_errf(err, "policy.params.%s: %g is outside [%g, %g]", name, x, min, max);
    *out = x;
    return 0;
}

/* ---- conductor policies ------------------------------------------------ */

extern const sched_router_ops sched_route_random, sched_route_round_robin, sched_route_least_loaded,
    sched_route_cache_aware_local, sched_route_kvcentric;
extern const sched_decode_ops sched_decode_least_loaded;
extern const sched_admission_ops sched_admit_none, sched_admit_slo_reject, sched_admit_baseline,
    sched_admit_early_reject, sched_admit_early_reject_predict;
extern const sched_pd_ops sched_pd_static, sched_pd_dynamic;

static const sched_router_ops *const routers[] = {
    &sched_route_random,
    &sched_route_round_robin,
    &sched_route_least_loaded,
    &sched_route_cache_aware_local,
    &sched_route_kvcentric,
};

static const sched_decode_ops *const decoders[] = {
    &sched_decode_least_loaded,
};

static const sched_admission_ops *const admissions[] = {
    &sched_admit_none,
    &sched_admit_slo_reject,
    &sched_admit_baseline,
    &sched_admit_early_reject,
    &sched_admit_early_reject_predict,
};

static const sched_pd_ops *const pd_controllers[] = {
    &sched_pd_static,
    &sched_pd_dynamic,
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
            fprintf(f, "  %-22s %s\n", table[i_]->name, table[i_]->help);                                          \
            if (*table[i_]->params) fprintf(f, "  %-22s params: %s\n", "", table[i_]->params);                     \
        }                                                                                                          \
    } while (0)

void sched_print_policies(FILE *f)
{
    PRINT_KIND(f, "prefill routers", "policy.router", routers);
    PRINT_KIND(f, "decode selectors", "policy.decode", decoders);
    PRINT_KIND(f, "admission", "policy.admission", admissions);
    PRINT_KIND(f, "PD-ratio controllers", "policy.pd_controller", pd_controllers);
    fprintf(f, "eviction (kvstore.eviction):\n");
    for (size_t i = 0; i < N_EVICT; i++) {
        fprintf(f, "  %-22s %s\n", evict_table[i].name, evict_table[i].help);
        if (*evict_table[i].params) fprintf(f, "  %-22s params: %s\n", "", evict_table[i].params);
    }
}
