/* sim/store/evict/evict.h — the eviction policy interface (libCacheSim-style hooks).
 *
 * A tier of the simulated KV store (sim/store/kvstore.c, kv_cache) owns the slots,
 * the key index, pins and the loop find → admit → evict → insert. A policy
 * only keeps ordering metadata in arrays indexed by slot (intrusive lists,
 * sim/index/dlist.h) and answers the hooks below; every hook is O(1) amortized.
 *
 * Slots are integers in [0, nslots). The core grows nslots as the tier
 * fills (an "inf" tier never allocates what it does not use) and tells the
 * policy through resize() before handing out a new slot. A slot is either
 * resident (between on_insert and on_remove) or free; hooks are only called
 * for resident slots, except on_insert, which makes a free slot resident.
 *
 * The core calls, for one access of key k:
 *   hit   → on_hit(slot, req)
 *   miss  → [tier full: admit(req)? → victim(view) → on_remove(victim)]
 *           → on_insert(slot, req)
 * and on_remove(slot) whenever a slot leaves the tier for another reason
 * (explicit remove, promotion, node failure). */
#ifndef KV_EVICT_H
#define KV_EVICT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "sim/index/dlist.h"
#include "sim/trace/trace.h"
#include "sim/util.h"

#define KV_NO_VICTIM        ((int64_t)-1)
#define KV_NEXT_USE_UNKNOWN ((int64_t)-1)

/* What the core knows about the access being served (libCacheSim passes the
 * request to every hook the same way). */
typedef struct kv_evict_req {
    uint64_t key;
    sim_cache_class cls;
    /* Offline replay only: position of this key's next access in the replayed
     * block stream (INT64_MAX = never again), or KV_NEXT_USE_UNKNOWN. */
    int64_t next_use;
} kv_evict_req;

/* The core's answer to "may this slot be evicted now?" — false for pinned
 * (in-use, Mooncake §3.2.1) slots and for context blocks at the last level
 * of the hierarchy (§5.2). `all` is set while the tier has never held such
 * a slot (a cache-only replay of a trace without context blocks): every
 * slot is evictable, and the question is not asked. */
typedef struct kv_evict_view {
    bool (*evictable)(const void *ctx, int64_t slot);
    const void *ctx;
    bool all;
} kv_evict_view;

static inline bool kv_evictable(const kv_evict_view *v, int64_t slot) { return v->all || v->evictable(v->ctx, slot); }

typedef struct kv_evict_ops {
    /* Allocate the policy state for a tier of `capacity` slots (SIM_COUNT_UNBOUNDED
     * for an unbounded tier; per-slot arrays are sized by resize(), not here).
     * params: the policy.params object or NULL; unknown keys are ignored, bad
     * values of the policy's own keys fail with err naming the key. */
    int (*create)(void **state, int64_t capacity, const json_t *params, sim_err *err);
    void (*destroy)(void *state);
    /* The tier now has nslots slots (it only grows): extend per-slot arrays.
     * Called once right after create and again before any slot ≥ the old
     * nslots is used. */
    void (*resize)(void *state, int64_t nslots);
    /* A resident slot was accessed again. */
    void (*on_hit)(void *state, int64_t slot, const kv_evict_req *req);
    /* A free slot now holds req->key. */
    void (*on_insert)(void *state, int64_t slot, const kv_evict_req *req);
    /* Optional (NULL = admit everything): the tier is full and req missed;
     * return false to decline the insertion instead of evicting. */
    bool (*admit)(void *state, const kv_evict_req *req);
    /* Choose a resident slot for which view says evictable, or return
     * KV_NO_VICTIM when there is none. The policy may reorder its own
     * metadata while searching (second chances, queue moves) but must not
     * forget the returned slot: the core calls on_remove(slot) right after. */
    int64_t (*victim)(void *state, const kv_evict_view *view);
    /* A resident slot left the tier (evicted or removed): unlink it. */
    void (*on_remove)(void *state, int64_t slot);
} kv_evict_ops;

/* The oldest evictable slot of q, or KV_NO_VICTIM. Slots that may not be
 * evicted now (pinned: in use, hence as good as just used) are rotated to the
 * head on the way, so a long-pinned block is passed over once per lap instead
 * of on every eviction: O(1) amortized while most slots are evictable, one
 * lap (|q| steps, order preserved) when none is. */
static inline int64_t kv_list_victim_rotate(sim_list *q, sim_links *l, const kv_evict_view *v)
{
    for (int64_t k = q->size; k > 0; k--) {
        int64_t s = q->tail;
        if (kv_evictable(v, s)) return s;
        sim_list_move_head(q, l, s);
    }
    return KV_NO_VICTIM;
}

/* The policies (one file each, sched/evict_NAME.c; listed in registry.c). */
extern const kv_evict_ops kv_evict_lru_ops;
extern const kv_evict_ops kv_evict_fifo_ops;
extern const kv_evict_ops kv_evict_lfu_ops;
extern const kv_evict_ops kv_evict_sieve_ops;
extern const kv_evict_ops kv_evict_s3fifo_ops;
extern const kv_evict_ops kv_evict_belady_ops;

#endif
