/* sim/index/keymap.c — growth, insertion and deletion of the uint64 → int64
 * open-addressing map, and its dense mode (lookups are inline in
 * keymap.h). */
#include "sim/index/keymap.h"

#include <stdlib.h>
#include <string.h>

#include "sim/util.h"

/* All bits set makes every bucket's val −1 (SIM_KEYMAP_ABSENT): one memset
 * empties the table at memory speed. */
static void alloc_buckets(sim_keymap *m, int log2n)
{
    size_t n = (size_t)1 << log2n;
    m->e = sim_xmalloc_huge(n * sizeof *m->e);
    memset(m->e, 0xff, n * sizeof *m->e);
    m->mask = n - 1;
    m->shift = 64 - log2n;
    m->count = 0;
}

/* log2 of the bucket count that holds `expected` keys. */
static int log2_buckets(int64_t expected)
{
    int log2n = 4;
    while (((int64_t)1 << log2n) < SIM_KEYMAP_SPREAD * expected) log2n++;
    return log2n;
}

void sim_keymap_init(sim_keymap *m, int64_t expected)
{
    *m = (sim_keymap){0};
    alloc_buckets(m, log2_buckets(expected));
}

/* All bits set makes every value −1, as in alloc_buckets. */
void sim_keymap_init_dense(sim_keymap *m, int64_t universe)
{
    assert(universe >= 0 && universe <= INT32_MAX);
    size_t n = universe > 0 ? (size_t)universe : 1;
    *m = (sim_keymap){.dense = sim_xmalloc_huge(n * sizeof *m->dense), .universe = (uint64_t)universe};
    memset(m->dense, 0xff, n * sizeof *m->dense);
}

void sim_keymap_free(sim_keymap *m)
{
    free(m->e);
    free(m->dense);
    m->e = NULL;
    m->dense = NULL;
}

/* Index of key's bucket, or of the empty bucket where it would go. */
static uint64_t find_bucket(const sim_keymap *m, uint64_t key)
{
    uint64_t b;
    sim_keymap_probe(m, key, &b);
    return b;
}

/* Move every key into a table of 2^log2n buckets. */
static void rehash(sim_keymap *m, int log2n)
{
    sim_keymap old = *m;
    alloc_buckets(m, log2n);
    for (uint64_t b = 0; b <= old.mask; b++)
        if (old.e[b].val >= 0) sim_keymap_put(m, old.e[b].key, old.e[b].val);
    sim_keymap_free(&old);
}

static void grow(sim_keymap *m) { rehash(m, 64 - m->shift + 1); }

void sim_keymap_reserve(sim_keymap *m, int64_t expected)
{
    if (m->dense) return;
    int log2n = log2_buckets(expected);
    if (log2n > 64 - m->shift) rehash(m, log2n);
}

void sim_keymap_put(sim_keymap *m, uint64_t key, int64_t val)
{
    if (m->dense) {
        sim_keymap_dense_set(m, key, val);
        return;
    }
    if (SIM_KEYMAP_SPREAD * (m->count + 1) > (int64_t)(m->mask + 1)) grow(m);
    uint64_t b = find_bucket(m, key);
    if (m->e[b].val < 0) m->count++;
    m->e[b] = (sim_keymap_entry){.key = key, .val = val};
}

/* Growing rehashes every key, so the bucket is found again after it. */
void sim_keymap_hashed_put_at(sim_keymap *m, uint64_t where, uint64_t key, int64_t val)
{
    if (SIM_KEYMAP_SPREAD * (m->count + 1) > (int64_t)(m->mask + 1)) {
        grow(m);
        where = find_bucket(m, key);
    }
    m->count++;
    m->e[where] = (sim_keymap_entry){.key = key, .val = val};
}

/* Backward-shift deletion (Knuth 6.4 Algorithm R): after emptying bucket
 * `hole`, walk the rest of the probe run and pull back each entry that may
 * sit at the hole — one at least as far (cyclically) from its home bucket
 * as from the hole — which makes its bucket the next hole. */
bool sim_keymap_hashed_del(sim_keymap *m, uint64_t key)
{
    uint64_t hole = find_bucket(m, key);
    if (m->e[hole].val < 0) return false;
    for (uint64_t j = (hole + 1) & m->mask; m->e[j].val >= 0; j = (j + 1) & m->mask) {
        uint64_t from_home = (j - sim_keymap_bucket(m, m->e[j].key)) & m->mask;
        if (from_home < ((j - hole) & m->mask)) continue;
        m->e[hole] = m->e[j];
        hole = j;
    }
    m->e[hole].val = SIM_KEYMAP_ABSENT;
    m->count--;
    return true;
}

int64_t sim_keymap_add(sim_keymap *m, uint64_t key, int64_t delta)
{
    int64_t v = sim_keymap_get(m, key);
    int64_t nv = (v < 0 ? 0 : v) + delta;
    if (nv > 0) sim_keymap_put(m, key, nv);
    else if (v >= 0) sim_keymap_del(m, key);
    return nv;
}

uint64_t sim_keymap_buckets(const sim_keymap *m) { return m->dense ? m->universe : m->mask + 1; }

int64_t sim_keymap_at(const sim_keymap *m, uint64_t b, uint64_t *key)
{
    if (m->dense) {
        *key = b;
        return m->dense[b];
    }
    *key = m->e[b].key;
    return m->e[b].val;
}
