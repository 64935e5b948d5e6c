/* sched/registry.c — the name → ops tables of every policy kind (see
 * registry.h). Each table is a plain array; lookup is a linear scan, since
 * it happens once per run and tables hold a handful of entries. */
#include "sched/registry.h"

#include <stdio.h>
#include <string.h>

/* ---- eviction policies ------------------------------------------------- */

static const sched_evict_entry evict_table[] = {
    {"lru", "least recently used (Mooncake Store default, §3.2.1)", "", false, &sched_evict_lru_ops},
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
