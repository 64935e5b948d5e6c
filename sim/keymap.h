/* sim/keymap.h — a small open-addressing hash map from uint64 keys to
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
 * hot path of `kvsim hitrate`. */
#ifndef SIM_KEYMAP_H
#define SIM_KEYMAP_H

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
    sim_keymap_entry *e;
    uint64_t mask; /* buckets − 1 */
    int shift;     /* 64 − log2(buckets) */
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
    __builtin_prefetch(&m->e[sim_keymap_bucket(m, key)]);
}

/* An empty map sized for about `expected` keys (it grows as needed). */
void sim_keymap_init(sim_keymap *m, int64_t expected);
void sim_keymap_free(sim_keymap *m);
/* Make room for `expected` keys now rather than growing step by step. */
void sim_keymap_reserve(sim_keymap *m, int64_t expected);
/* Insert or overwrite; val must be ≥ 0. */
void sim_keymap_put(sim_keymap *m, uint64_t key, int64_t val);
/* Insert a key that sim_keymap_probe reported absent, at the bucket it
 * returned in *where (one probe for the lookup and the insertion). */
void sim_keymap_put_at(sim_keymap *m, uint64_t where, uint64_t key, int64_t val);
/* Remove key; returns whether it was present. */
bool sim_keymap_del(sim_keymap *m, uint64_t key);
/* Add delta to key's value (absent counts as 0); a result of 0 removes the
 * key. Returns the new value. */
int64_t sim_keymap_add(sim_keymap *m, uint64_t key, int64_t delta);

#endif
