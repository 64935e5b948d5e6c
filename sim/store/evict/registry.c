/* sim/store/evict/registry.c — name → eviction policy table (see
 * sim/store/evict/registry.h). Adding a policy = one file here + one line in
 * the table. Lookups are linear scans: once per run, over a handful of
 * entries. */
#include "sim/store/evict/registry.h"

#include <stdio.h>
#include <string.h>

#include "sim/config/param.h"

static const kv_evict_entry evict_table[] = {
    {"lru", "least recently used (Mooncake Store default, §3.2.1)", "", false, &kv_evict_lru_ops},
    {"fifo", "first in, first out: hits do not reorder", "", false, &kv_evict_fifo_ops},
    {"lfu", "least frequently used, ties to LRU; counts halve periodically (aging)",
     "lfu_max_freq=15: count saturation; lfu_age_period=0: accesses between halvings (0 = 10 x resident blocks)", false,
     &kv_evict_lfu_ops},
    {"sieve", "SIEVE (NSDI'24): FIFO queue, visited bit, a hand that sifts out unvisited blocks", "", false,
     &kv_evict_sieve_ops},
    {"s3fifo", "S3-FIFO (SOSP'23): small + main FIFO queues and a ghost queue",
     "s3fifo_small_ratio=0.1: share of the small queue; s3fifo_ghost_ratio=0.9: ghost size / capacity; "
     "s3fifo_move_threshold=2: hits in the small queue to move to main",
     false, &kv_evict_s3fifo_ops},
    {"belady", "offline optimum (furthest next use, with bypass); kvsim hitrate only", "", true, &kv_evict_belady_ops},
};

#define N_EVICT (sizeof evict_table / sizeof evict_table[0])

size_t kv_evict_count(void) { return N_EVICT; }

const kv_evict_entry *kv_evict_at(size_t i) { return i < N_EVICT ? &evict_table[i] : NULL; }

const kv_evict_entry *kv_evict_lookup(const char *name)
{
    for (size_t i = 0; i < N_EVICT; i++)
        if (!strcmp(evict_table[i].name, name)) return &evict_table[i];
    return NULL;
}

int kv_evict_find(const char *name, const kv_evict_entry **out, sim_err *err)
{
    *out = kv_evict_lookup(name);
    if (*out) return 0;
    char known[256] = "";
    for (size_t i = 0; i < N_EVICT; i++) {
        size_t len = strlen(known);
        snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "", evict_table[i].name);
    }
    return sim_errf(err, "unknown eviction policy '%s' (known: %s)", name, known);
}

enum { MAX_PARAMS = 16, PARAM_CHARS = 64 };

/* The parameter names policy e declares, into names[] (copies in buf). */
static size_t param_names(const kv_evict_entry *e, char buf[MAX_PARAMS][PARAM_CHARS], const char **names)
{
    const char *name;
    size_t len, n = 0;
    for (const char *at = e->params; n < MAX_PARAMS && sim_param_next(&at, &name, &len); n++) {
        snprintf(buf[n], PARAM_CHARS, "%.*s", (int)len, name);
        names[n] = buf[n];
    }
    return n;
}

/* The other policy that declares parameter key, or NULL. */
static const kv_evict_entry *owner_of(const char *key, const kv_evict_entry * not )
{
    char buf[MAX_PARAMS][PARAM_CHARS];
    const char *names[MAX_PARAMS];
    for (size_t i = 0; i < N_EVICT; i++) {
        if (&evict_table[i] == not ) continue;
        size_t n = param_names(&evict_table[i], buf, names);
        for (size_t k = 0; k < n; k++)
            if (!strcmp(names[k], key)) return &evict_table[i];
    }
    return NULL;
}

/* A key that is no parameter of e: its name, e's and what e takes, with a
 * slip's likely meaning or the other policy the key belongs to. */
static int unknown_param(const kv_evict_entry *e, const char *key, const char *const *names, size_t n, const char *what,
                         sim_err *err)
{
    const kv_evict_entry *other = owner_of(key, e);
    char owner[160] = "";
    if (other) snprintf(owner, sizeof owner, " ('%s' is policy %s's: --policy %s)", key, other->name, other->name);
    if (n == 0)
        return sim_errf(err, "%s: policy %s takes no parameters, not '%s'%s: drop %s", what, e->name, key, owner, what);
    char takes[512] = "";
    for (size_t k = 0, at = 0; k < n && at < sizeof takes; k++)
        at += (size_t)snprintf(takes + at, sizeof takes - at, "%s%s", k ? ", " : "", names[k]);
    return sim_errf(err, "%s: policy %s has no parameter '%s'%s; it takes %s (kvsim policies describes them)", what,
                    e->name, key, other ? owner : sim_did_you_mean(key, names, n), takes);
}

int kv_evict_params_check(const kv_evict_entry *e, const json_t *params, const char *what, sim_err *err)
{
    char buf[MAX_PARAMS][PARAM_CHARS];
    const char *names[MAX_PARAMS], *key;
    size_t n = param_names(e, buf, names);
    const json_t *v;
    json_object_foreach((json_t *)params, key, v)
    {
        bool known = false;
        for (size_t k = 0; k < n && !known; k++) known = !strcmp(names[k], key);
        if (!known) return unknown_param(e, key, names, n, what, err);
    }
    return 0;
}
