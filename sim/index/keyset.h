/* sim/index/keyset.h — a set of uint64 keys that numbers them in the order they
 * were added (0, 1, 2, …): the distinct blocks of a trace in `kvsim trace
 * stats`, and the dense block numbering of kvsim hitrate's loaded trace
 * (hitrate.c: number_blocks).
 *
 * The compact, insert-only sibling of sim_keymap (keymap.h): 8 bytes of
 * key and 4 of number per bucket, at most half full, instead of 16 bytes
 * at most a quarter full — under half a map's memory, which matters because
 * a replay's first touch of fresh memory is a page fault per 4 KiB (on a
 * virtual machine, microseconds each). Linear probing over a power-of-two
 * table with Fibonacci hashing, as in keymap.h; nothing is ever removed.
 * 0 marks an empty bucket, and the key 0 itself is kept aside. A plain
 * set (sim_keyset_init_plain) keeps no numbers: 8 bytes a bucket, for
 * the sets that only ask whether a key was seen (`trace stats`, the fine
 * blocks of `trace rechunk`). */
#ifndef SIM_KEYSET_H
#define SIM_KEYSET_H

#include <stdbool.h>
#include <stdint.h>

typedef struct sim_keyset {
    uint64_t *b;      /* buckets; 0 = empty */
    int32_t *num;     /* per bucket: the key's number (valid where b ≠ 0); NULL in a plain set */
    uint64_t mask;    /* buckets − 1 */
    int shift;        /* 64 − log2(buckets) */
    int64_t count;    /* keys in the set, 0 included = the next number */
    int64_t zero_num; /* the key 0's number, −1 while absent */
} sim_keyset;

/* Fibonacci hashing, as in keymap.h: the top bits of key × 2^64/φ. */
static inline uint64_t sim_keyset_home(const sim_keyset *s, uint64_t key)
{
    return (key * 0x9E3779B97F4A7C15ull) >> s->shift;
}

/* An empty set sized for about `expected` keys (it grows as needed; at
 * most 2^31 keys). */
void sim_keyset_init(sim_keyset *s, int64_t expected);
/* The same without numbers (sim_keyset_number may not be called). */
void sim_keyset_init_plain(sim_keyset *s, int64_t expected);
void sim_keyset_free(sim_keyset *s);
bool sim_keyset_has(const sim_keyset *s, uint64_t key);
/* Add key; true when it was not in the set before. */
bool sim_keyset_add(sim_keyset *s, uint64_t key);
/* key's number, adding it (with the next number, count) when absent. */
int64_t sim_keyset_number(sim_keyset *s, uint64_t key);

/* Start loading key's home bucket into cache (a hint; no effect on results). */
static inline void sim_keyset_prefetch(const sim_keyset *s, uint64_t key)
{
    __builtin_prefetch(&s->b[sim_keyset_home(s, key)]);
}

#endif
