/* sim/store/evict/registry.h — the eviction policies by name: one table
 * mapping a name from the config (kvstore.eviction) or the command line
 * (--policy) to its hooks, with a one-line help and the parameters it reads.
 *
 * Adding an eviction policy = one file sim/store/evict/evict_NAME.c + one
 * line in the table in registry.c. Lookups are the only place names are
 * compared; kvsim policies, the README list and the per-policy tests iterate
 * the table (kv_evict_count / kv_evict_at). */
#ifndef KV_EVICT_REGISTRY_H
#define KV_EVICT_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "sim/store/evict/evict.h"
#include "sim/util.h"

typedef struct kv_evict_entry {
    const char *name;
    const char *help;   /* one line */
    const char *params; /* "key=default: meaning; ..." read from policy.params, or "" */
    bool offline;       /* needs next-use hints from an offline replay (belady) */
    const kv_evict_ops *ops;
} kv_evict_entry;

/* The entry named `name`, or NULL. */
const kv_evict_entry *kv_evict_lookup(const char *name);
/* Same, but an unknown name fails with "unknown eviction policy 'x' (known: ...)". */
int kv_evict_find(const char *name, const kv_evict_entry **out, sim_err *err);
/* Every key of params (an object, or NULL) is a parameter of policy e
 * (its params text); else an error naming the key, the policy and the
 * parameters it takes, with a "did you mean" for a slip. `what` names
 * where params came from (an option, a config key). */
int kv_evict_params_check(const kv_evict_entry *e, const json_t *params, const char *what, sim_err *err);
/* Iteration in table order: entries 0 .. kv_evict_count()-1. */
size_t kv_evict_count(void);
const kv_evict_entry *kv_evict_at(size_t i);

#endif
