/* sim/store/holders.h — the conductor's global block index: block key → the
 * set of nodes holding it in any tier (Mooncake's conductor keeps one such
 * map of its cache metadata, §4.1, §4.2). kv_store keeps it in step with
 * every insertion, eviction, demotion, promotion and node failure when
 * kv_store_cfg.holder_index asks for it; the cache-aware routers then find
 * every instance's prefix in one walk over the request's blocks instead of
 * probing each instance's tiers (kv_store_prefix_runs).
 *
 * A key's holders are a bitset of the store's nodes, one row of
 * ⌈nodes/64⌉ 64-bit words in a row pool; a sim_keymap maps the key to its
 * row. A key with no holder has no row (its row returns to the pool), so
 * the index holds exactly the keys resident somewhere. Every update is one
 * map probe and one word write: O(1) amortized. */
#ifndef SIM_STORE_HOLDERS_H
#define SIM_STORE_HOLDERS_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/index/keymap.h"

typedef struct kv_holders {
    int nodes, words;  /* words = ⌈nodes/64⌉ per row */
    sim_keymap rows;   /* key → row number */
    uint64_t *bits;    /* rows × words */
    int64_t nrows;     /* rows allocated */
    int64_t used;      /* rows ever handed out: [used, nrows) never used */
    int64_t *released; /* stack of rows given back, below used */
    int64_t nreleased;
} kv_holders;

void kv_holders_init(kv_holders *h, int nodes);
void kv_holders_free(kv_holders *h);
/* node now holds key (idempotent). */
void kv_holders_add(kv_holders *h, uint64_t key, int node);
/* node no longer holds key in any tier (no-op when it was not a holder). */
void kv_holders_del(kv_holders *h, uint64_t key, int node);
bool kv_holders_has(const kv_holders *h, uint64_t key, int node);
/* Keys with at least one holder. */
int64_t kv_holders_keys(const kv_holders *h);
/* For every node, the leading run of keys[0..n) it holds: run[node] for
 * node in [0, nodes). */
void kv_holders_runs(const kv_holders *h, const uint64_t *keys, int32_t n, int32_t *run);

#endif
