/* sched/registry.h — the policy registries: one table per policy kind,
 * mapping a name from the config or the command line to its ops, with a
 * one-line help and the parameters it reads (for `kvsim policies`).
 *
 * Adding a policy = one file in sched/ + one line in its table in
 * registry.c. Lookups are the only place names are compared. */
#ifndef SCHED_REGISTRY_H
#define SCHED_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "sim/store/evict/evict.h"
#include "sim/util.h"

/* ---- eviction policies (per tier of the KV store) ---------------------- */

typedef struct sched_evict_entry {
    const char *name;
    const char *help;   /* one line */
    const char *params; /* "key=default: meaning; ..." read from policy.params, or "" */
    bool offline;       /* needs next-use hints from an offline replay (belady) */
    const sched_evict_ops *ops;
} sched_evict_entry;

/* The entry named `name`, or NULL. */
const sched_evict_entry *sched_evict_lookup(const char *name);
/* Same, but an unknown name fails with "unknown eviction policy 'x' (known: ...)". */
int sched_evict_find(const char *name, const sched_evict_entry **out, sim_err *err);
/* Iteration in table order: entries 0 .. sched_evict_count()-1. */
size_t sched_evict_count(void);
const sched_evict_entry *sched_evict_at(size_t i);

/* ---- parameters shared by every kind ----------------------------------- */

/* params[name] as a number in [min, max]; `def` when params is NULL or has
 * no such key. A non-number or out-of-range value fails naming
 * policy.params.NAME. */
int sched_param_number(const json_t *params, const char *name, double def, double min, double max, double *out,
                       sim_err *err);

#endif
