/* sched/registry.c — the name → ops tables of every policy kind (see
 * registry.h). Each table is a plain array; lookup is a linear scan, since
 * it happens once per run and tables hold a handful of entries. */
#include "sched/registry.h"

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
