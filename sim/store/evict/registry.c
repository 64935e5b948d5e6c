/* sim/store/evict/registry.c — name → eviction policy table (see
 * sim/store/evict/registry.h). Adding a policy = one file here + one line in
 * the table. Lookups are linear scans: once per run, over a handful of
 * entries. */
#include "sim/store/evict/registry.h"

#include <stdio.h>
#include <string.h>

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
