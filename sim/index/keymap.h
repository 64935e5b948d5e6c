/* sim/index/keymap.h — a small open-addressing hash map from uint64 keys to
 * non-negative int64 values: the KV store's block index (key → slot), its
 * replica counts (key → nodes), S3-FIFO's ghost set and the next-use oracle.
 *
 * Linear probing over a power-of-two table kept at most a quarter full,
 * Fibonacci hashing (multiply by 2^64/φ, keep the top bits) so that both
 * chained XXH3 keys and small test integers spread, and backward-shift
 * deletion so that no tombstones accumulate. The low load is for speed: at
 * a quarter full most probe runs end at their first or second bucket, so
 * the probe and deletion loops are short and their branches predictable
 * (at half full, replaying the shared synthetic trace into a 488-block LRU
 * cache took 1.4 times the cycles). A value of -1 marks an empty bucket,
 * which is why stored values must be ≥ 0. Lookups are inline: they are the
 * hot path of `kvsim hitrate`.
 *
 * Dense mode (sim_keymap_init_dense): when every key is known to lie in
 * [0, universe) — kvsim hitrate renumbers a trace's blocks 0, 1, 2, … in
 * order of first appearance — the map is a plain array of values indexed
 * by the key: a lookup is one load, an insertion or a deletion one store,
 * with no hashing, probing or shifting. The bucket of a key is the key
 * itself, so the probe/put_at protocol below is the same in both modes.
 * Dense values are 32-bit (a KV store's slot numbers). */
#ifndef SIM_KEYMAP_H
#define SIM_KEYMAP_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>

#define SIM_KEYMAP_ABSENT ((int64_t)-1)
/* Buckets per key, at least: the table doubles beyond 1/SIM_KEYMAP_SPREAD full. */
#define SIM_KEYMAP_SPREAD 4

/* Key and value side by side: a probe touches one cache line. */
typedef struct sim_keymap_entry {
    uint64_t key;
    int64_t val; /* SIM_KEYMAP_ABSENT = empty bucket */
} sim_keymap_entry;

typedef struct sim_keymap {
    sim_keymap_entry *e; /* hashed mode; NULL in dense mode */
    int32_t *dense;      /* dense mode: value per key, −1 = absent; else NULL */
    uint64_t universe;   /* dense mode: keys are < universe */
    uint64_t mask;       /* buckets − 1 */
    int shift;           /* 64 − log2(buckets) */
    int64_t count;
} sim_keymap;

static inline uint64_t sim_keymap_bucket(const sim_keymap *m, uint64_t key)
{
    return (key * 0x9E3779B97F4A7C15ull) >> m->shift;
}

/* The value stored for key, or SIM_KEYMAP_ABSENT; *where gets the bucket
 * holding key or, when it is absent, the empty bucket that ends its probe
 * run: where sim_keymap_put_at inserts it, as long as the map has not
 * changed in between. (An empty bucket's val is SIM_KEYMAP_ABSENT.) */
static inline int64_t sim_keymap_probe(const sim_keymap *m, uint64_t key, uint64_t *where)
{
    if (m->dense) {
        *where = key;
        return m->dense[key];
    }
    uint64_t b = sim_keymap_bucket(m, key);
    while (m->e[b].val >= 0 && m->e[b].key != key) b = (b + 1) & m->mask;
    *where = b;
    return m->e[b].val;
}

/* The value stored for key, or SIM_KEYMAP_ABSENT. */
static inline int64_t sim_keymap_get(const sim_keymap *m, uint64_t key)
{
    uint64_t where;
    return sim_keymap_probe(m, key, &where);
}

/* Start loading key's home bucket into cache (a hint; no effect on results). */
static inline void sim_keymap_prefetch(const sim_keymap *m, uint64_t key)
{
    __builtin_prefetch(m->dense ? (const void *)&m->dense[key] : (const void *)&m->e[sim_keymap_bucket(m, key)]);
}

/* An empty map sized for about `expected` keys (it grows as needed). */
void sim_keymap_init(sim_keymap *m, int64_t expected);
/* An empty dense-mode map for keys in [0, universe) (universe ≤ 2^31);
 * a key outside that range is the caller's bug. Values must be < 2^31. */
void sim_keymap_init_dense(sim_keymap *m, int64_t universe);
void sim_keymap_free(sim_keymap *m);
/* Make room for `expected` keys now rather than growing step by step (a
 * dense map already has room for its whole universe). */
void sim_keymap_reserve(sim_keymap *m, int64_t expected);
/* Insert or overwrite; val must be ≥ 0. */
void sim_keymap_put(sim_keymap *m, uint64_t key, int64_t val);
/* The hashed-mode halves of sim_keymap_put_at and sim_keymap_del below. */
void sim_keymap_hashed_put_at(sim_keymap *m, uint64_t where, uint64_t key, int64_t val);
bool sim_keymap_hashed_del(sim_keymap *m, uint64_t key);

/* Dense mode's insertion, overwrite and deletion (val −1): one store. */
static inline void sim_keymap_dense_set(sim_keymap *m, uint64_t key, int64_t val)
{
    assert(key < m->universe && val < INT32_MAX);
    m->count += (m->dense[key] < 0) - (val < 0);
    m->dense[key] = (int32_t)val;
}

/* Insert a key that sim_keymap_probe reported absent, at the bucket it
 * returned in *where (one probe for the lookup and the insertion). */
static inline void sim_keymap_put_at(sim_keymap *m, uint64_t where, uint64_t key, int64_t val)
{
    if (!m->dense) {
        sim_keymap_hashed_put_at(m, where, key, val);
        return;
    }
    assert(key < m->universe && m->dense[key] < 0 && val >= 0 && val < INT32_MAX);
    m->count++;
    m->dense[key] = (int32_t)val;
}

/* Remove key; returns whether it was present. */
static inline bool sim_keymap_del(sim_keymap *m, uint64_t key)
{
    if (!m->dense) return sim_keymap_hashed_del(m, key);
    bool present = m->dense[key] >= 0;
    sim_keymap_dense_set(m, key, SIM_KEYMAP_ABSENT);
    return present;
}

/* Hand the value of `old` (present) to `key` (absent, probed to `where`)
 * and remove `old`: an eviction's index update. In dense mode two stores,
 * with no load of old's entry and no change of count. */
static inline void sim_keymap_replace_at(sim_keymap *m, uint64_t where, uint64_t key, int64_t val, uint64_t old)
{
    if (m->dense) {
        assert(key < m->universe && old < m->universe && val < INT32_MAX);
        m->dense[key] = (int32_t)val;
        m->dense[old] = (int32_t)SIM_KEYMAP_ABSENT;
        return;
    }
    sim_keymap_hashed_put_at(m, where, key, val);
    sim_keymap_hashed_del(m, old);
}
/* Add delta to key's value (absent counts as 0); a result of 0 removes the
 * key. Returns the new value. */
int64_t sim_keymap_add(sim_keymap *m, uint64_t key, int64_t delta);
/* Buckets to visit with sim_keymap_at, and the key and value in bucket b
 * (value SIM_KEYMAP_ABSENT when the bucket is empty). */
uint64_t sim_keymap_buckets(const sim_keymap *m);
int64_t sim_keymap_at(const sim_keymap *m, uint64_t b, uint64_t *key);

#endif
