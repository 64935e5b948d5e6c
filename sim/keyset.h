/* sim/keyset.h — a set of uint64 keys, for when only membership matters:
 * the distinct blocks of a trace and its infinite-cache (maximum) hit rate,
 * in `kvsim trace stats` and in kvsim hitrate's maximum replay.
 *
 * The compact sibling of sim_keymap (keymap.h): 8 bytes per bucket instead
 * of 16 and at most half full instead of a quarter, so a set costs a
 * quarter of a map's memory — which matters because a replay's first touch
 * of fresh memory is a page fault per 4 KiB. Linear probing over a
 * power-of-two table with Fibonacci hashing, as in keymap.h; nothing is
 * ever removed. 0 marks an empty bucket, and the key 0 itself is kept as a
 * flag. */
#ifndef SIM_KEYSET_H
#define SIM_KEYSET_H

#include <stdbool.h>
#include <stdint.h>

typedef struct sim_keyset {
    uint64_t *b;   /* buckets; 0 = empty */
    uint64_t mask; /* buckets − 1 */
    int shift;     /* 64 − log2(buckets) */
    int64_t count; /* keys in the set, 0 included */
    bool has_zero;
} sim_keyset;

/* Fibonacci hashing, as in keymap.h: the top bits of key × 2^64/φ. */
static inline uint64_t sim_keyset_home(const sim_keyset *s, uint64_t key)
{
    return (key * 0x9E3779B97F4A7C15ull) >> s->shift;
}

/* An empty set sized for about `expected` keys (it grows as needed). */
void sim_keyset_init(sim_keyset *s, int64_t expected);
void sim_keyset_free(sim_keyset *s);
bool sim_keyset_has(const sim_keyset *s, uint64_t key);
/* Add key; true when it was not in the set before. */
bool sim_keyset_add(sim_keyset *s, uint64_t key);

/* Start loading key's home bucket into cache (a hint; no effect on results). */
static inline void sim_keyset_prefetch(const sim_keyset *s, uint64_t key)
{
    __builtin_prefetch(&s->b[sim_keyset_home(s, key)]);
}

#endif
