/* sim/store/kvstore.h — the simulated KV cache: tiers of hash blocks per node, an
 * index keyed by chained block keys, pins, scopes and replicas.
 *
 * Two layers:
 *
 *  kv_cache  one tier (HBM, DRAM or SSD) of one node: a fixed number of block
 *            slots, an open-addressing index key → slot, pin counts, and an
 *            eviction policy from sched/ (sim/store/evict/evict.h). The core owns the
 *            loop find → admit → evict → insert; the policy only answers hooks.
 *
 *  kv_store  all nodes' tiers plus the scope:
 *            - "local": a node sees only its own tiers;
 *            - "global" (Mooncake Store): a block resident on any node serves
 *              any prefill node over the NIC. Puts are deduplicated across the
 *              pool: storing a key that some node already holds refreshes that
 *              copy instead of creating a second one. Replicas only appear
 *              when the conductor asks for them (kv_store_commit with
 *              replicate = true), which is how hot blocks spread (§4.2).
 *
 * With kv_store_cfg.holder_index the store also keeps the conductor's global
 * index block → nodes holding it in any tier (sim/store/holders.h), in step
 * with every tier's insertions and removals: kv_store_prefix_runs gives every
 * node's prefix of a request in one walk, for the cache-aware routers.
 *
 * The timed simulation asks kv_store_plan where a request's prefix would come
 * from on a node (tier by tier, local vs remote holder) to charge the right
 * transfer costs, then kv_store_commit carries the accesses out. Cache-only
 * replay (kvsim hitrate) uses the same calls without any timing. */
#ifndef SIM_KVSTORE_H
#define SIM_KVSTORE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "sim/config/scope.h"
#include "sim/store/evict/evict.h"
#include "sim/trace/trace.h"
#include "sim/util.h"

/* ---- one tier ---------------------------------------------------------- */

typedef struct kv_cache kv_cache;

typedef enum kv_result {
    KV_HIT = 0,      /* key resident: policy refreshed it */
    KV_INSERTED,     /* key was absent and is now resident (maybe after evictions) */
    KV_NOT_ADMITTED, /* absent and the admission rule declined it (e.g. ephemeral) */
    KV_FULL,         /* absent and every resident slot is pinned: counted, not inserted */
} kv_result;

typedef struct kv_cache_stats {
    int64_t hits, misses, inserts, evictions, full_events, not_admitted;
} kv_cache_stats;

/* Called for each key a tier evicts, before it disappears (kv_store uses it
 * to demote to the next tier and to keep its replica index exact). */
typedef void (*kv_evict_cb)(void *ctx, uint64_t key, sim_cache_class cls);

/* policy: a name from the eviction registry ("lru", ...); params: the
 * policy's parameter object or NULL. capacity_blocks may be 0 (a tier that
 * holds nothing). Errors name an unknown policy or bad parameter. */
int kv_cache_new(kv_cache **out, const char *policy, int64_t capacity_blocks, const json_t *params, sim_err *err);
void kv_cache_free(kv_cache *c);
void kv_cache_set_evict_cb(kv_cache *c, kv_evict_cb cb, void *ctx);

bool kv_cache_contains(const kv_cache *c, uint64_t key);
/* Access one block: a hit refreshes, a miss admits/evicts/inserts. */
kv_result kv_cache_access(kv_cache *c, uint64_t key, sim_cache_class cls);
/* Remove a key if resident (no eviction callback). Returns true if removed. */
bool kv_cache_remove(kv_cache *c, uint64_t key);
/* Pins nest; a pinned block is never chosen as a victim. No-op if absent. */
void kv_cache_pin(kv_cache *c, uint64_t key);
void kv_cache_unpin(kv_cache *c, uint64_t key);

/* Allocate room for `blocks` resident blocks (at most the capacity) now: a
 * tier known to fill that far skips the growth steps. No other effect. */
void kv_cache_reserve(kv_cache *c, int64_t blocks);
/* Promise that every key this (still empty) tier will see is < universe
 * (dense block numbers, as kvsim hitrate makes them): its index becomes a
 * plain array over the universe (sim_keymap's dense mode). No other effect. */
void kv_cache_dense_keys(kv_cache *c, int64_t universe);

int64_t kv_cache_size(const kv_cache *c);     /* resident blocks */
int64_t kv_cache_capacity(const kv_cache *c); /* slots */
const kv_cache_stats *kv_cache_get_stats(const kv_cache *c);

/* ---- the store: nodes × tiers ------------------------------------------ */

typedef enum kv_tier { KV_TIER_HBM = 0, KV_TIER_DRAM, KV_TIER_SSD, KV_NTIERS } kv_tier;

typedef struct kv_store_cfg {
    int nodes;
    kv_scope scope;
    int64_t tier_blocks[KV_NTIERS]; /* per node; 0 = tier absent */
    const char *policy[KV_NTIERS];  /* eviction policy name per tier ("lru") */
    const json_t *params;           /* policy.params object, may be NULL */
    bool promote;                   /* a read from SSD promotes to DRAM */
    bool ignore_class;              /* treat every block as default class: plain
                                         eviction, the §5.2 baseline (no ephemeral
                                         filter, no context persistence) */
    bool next_use_hints;            /* the caller passes next-use hints
                                         (kv_store_commit_hint): required by
                                         offline policies such as belady */
    int64_t expected_keys;          /* hint, 0 = unknown: at most this many
                                         distinct keys will be stored; each tier
                                         allocates min(capacity, this) up front
                                         (kv_cache_reserve) */
    int64_t key_universe;           /* 0, or every key is < this: each tier
                                         indexes keys by array (kv_cache_dense_keys) */
    bool holder_index;              /* keep the global index key → nodes holding
                                         it in any tier (sim/store/holders.h), for
                                         kv_store_prefix_runs */
} kv_store_cfg;

typedef struct kv_store kv_store;

int kv_store_new(kv_store **out, const kv_store_cfg *cfg, sim_err *err);
void kv_store_free(kv_store *s);

/* Leading run of keys resident on `node` (any tier), no state change. */
int32_t kv_store_prefix_local(const kv_store *s, int node, const uint64_t *keys, int32_t n);
/* An upper bound on kv_store_prefix_local for every node: the leading run
 * of keys some node holds in a store tier (one lookup per key in the
 * replica counts), or n where those do not cover every tier (one node, or
 * HBM tiers). A router asks each node only for the first bound keys. */
int32_t kv_store_prefix_bound(const kv_store *s, const uint64_t *keys, int32_t n);
/* kv_store_prefix_local for every node at once, from the holder index
 * (kv_store_cfg.holder_index): run[node] for node in [0, kv_store_nodes),
 * in one walk over the keys whatever the number of nodes. -1 (run
 * untouched) when the store keeps no holder index. */
int kv_store_prefix_runs(const kv_store *s, const uint64_t *keys, int32_t n, int32_t *run);
int kv_store_nodes(const kv_store *s);
/* Distinct keys the holder index holds (resident on some node, any tier),
 * -1 without one. */
int64_t kv_store_holder_keys(const kv_store *s);
/* Leading run resident on any node (global scope) or on `node` (local). */
int32_t kv_store_prefix_any(const kv_store *s, int node, const uint64_t *keys, int32_t n);

/* Where the blocks of a prefix of `hit` blocks would come from when served
 * to `node`. Blocks resident on node count by tier; others (global scope)
 * count per holder node, preferring the holder whose index is passed in
 * `prefer` order (the first holder found otherwise). remote_from has
 * s->nodes entries, filled by the call. */
typedef struct kv_fetch_plan {
    int32_t hit_blocks;
    int32_t local[KV_NTIERS];
    int32_t remote[KV_NTIERS]; /* by the holder's tier */
    int32_t *remote_from;      /* caller-provided, nodes entries: blocks per holder */
} kv_fetch_plan;

void kv_store_plan(const kv_store *s, int node, const uint64_t *keys, int32_t hit, kv_fetch_plan *plan);

/* Carry out a request's accesses on `node` after its prefill:
 *  - blocks [0, hit): refresh wherever they are served from; remote ones are
 *    copied into node's DRAM when `replicate` (a replica) — otherwise they
 *    stay where they are;
 *  - blocks [hit, n): put into node's DRAM (global scope: deduplicated).
 * cls applies to the request's new blocks (ephemeral/context, §5.2). */
void kv_store_commit(kv_store *s, int node, const uint64_t *keys, int32_t n, int32_t hit, bool replicate,
                     sim_cache_class cls);

/* Pin/unpin the blocks of keys resident on node (in-use blocks, §3.2.1). */
void kv_store_pin(kv_store *s, int node, const uint64_t *keys, int32_t n);
void kv_store_unpin(kv_store *s, int node, const uint64_t *keys, int32_t n);

/* Number of nodes holding key in a store tier, DRAM or SSD (0 when absent). */
int kv_store_replicas(const kv_store *s, uint64_t key);
/* Resident blocks of one tier of one node. */
int64_t kv_store_blocks(const kv_store *s, int node, kv_tier tier);
/* Drop every block of a node (node failure). */
void kv_store_drop_node(kv_store *s, int node);
/* Aggregated counters of every tier of every node. */
void kv_store_stats(const kv_store *s, kv_tier tier, kv_cache_stats *out);

/* ---- additions for tiers, semantics-aware caching and offline replay ---- */

/* kv_cache_access with the whole access record (req->next_use feeds offline
 * policies such as belady; kv_cache_access passes KV_NEXT_USE_UNKNOWN).
 * Semantics: a hit by a context request marks the block context; an
 * ephemeral miss is never admitted; a tier of capacity 0 admits nothing. */
kv_result kv_cache_access_req(kv_cache *c, const kv_evict_req *req);
/* Context blocks are not victims in this tier (the last level of the
 * hierarchy, §5.2); kv_store sets it on each node's lowest store tier. */
void kv_cache_set_keep_context(kv_cache *c, bool keep);
/* Pin count of a resident key (0 when absent). */
int32_t kv_cache_pins(const kv_cache *c, uint64_t key);

/* kv_store_commit with next-use hints: next_use[i] is the position of
 * keys[i]'s next access in an offline replay's block stream (NULL = unknown). */
void kv_store_commit_hint(kv_store *s, int node, const uint64_t *keys, int32_t n, int32_t hit, bool replicate,
                          sim_cache_class cls, const int64_t *next_use);

/* A request's whole cache-only access on `node` (docs/definitions.md, kvsim hitrate):
 * its prefix hit as kv_store_prefix_any sees the store, then
 * kv_store_commit_hint(s, node, keys, n, hit, false, cls, next_use).
 * Returns the prefix hit. When each node is a single store tier seen only by
 * itself, both happen in one pass over the index. */
int32_t kv_store_access(kv_store *s, int node, const uint64_t *keys, int32_t n, sim_cache_class cls,
                        const int64_t *next_use);

/* A hint, no state change: start loading the index entries that the keys'
 * lookups on `node` will read (a replay calls it one request ahead). */
void kv_store_prefetch(const kv_store *s, int node, const uint64_t *keys, int32_t n);

/* Distinct keys held by the store tiers (DRAM/SSD) of any node, and a walk
 * over them with their replica counts (Mooncake Fig. 18 sampling). HBM
 * prefix caches are private to their instance and hold no replicas. */
int64_t kv_store_keys(const kv_store *s);
void kv_store_foreach_replica(const kv_store *s, void (*fn)(void *ctx, uint64_t key, int replicas), void *ctx);

#endif
