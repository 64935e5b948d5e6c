/* sim/index/keyset.c — the numbering uint64 key set (see keyset.h). */
#include "sim/index/keyset.h"

#include <assert.h>
#include <stdlib.h>

#include "sim/util.h"

static void alloc_buckets(sim_keyset *s, int log2n, bool numbered)
{
    s->b = sim_xcalloc((size_t)1 << log2n, sizeof *s->b);
    s->num = numbered ? sim_xmalloc(((size_t)1 << log2n) * sizeof *s->num) : NULL;
    s->mask = ((uint64_t)1 << log2n) - 1;
    s->shift = 64 - log2n;
}

static void init(sim_keyset *s, int64_t expected, bool numbered)
{
    int log2n = 4;
    while (((int64_t)1 << log2n) < 2 * expected) log2n++;
    alloc_buckets(s, log2n, numbered);
    s->count = 0;
    s->zero_num = -1;
}

void sim_keyset_init(sim_keyset *s, int64_t expected) { init(s, expected, true); }

void sim_keyset_init_plain(sim_keyset *s, int64_t expected) { init(s, expected, false); }

void sim_keyset_free(sim_keyset *s)
{
    free(s->b);
    free(s->num);
    s->b = NULL;
    s->num = NULL;
}

/* key's bucket, or the empty bucket that ends its probe run (key ≠ 0). */
static uint64_t find_bucket(const sim_keyset *s, uint64_t key)
{
    uint64_t i = sim_keyset_home(s, key);
    while (s->b[i] && s->b[i] != key) i = (i + 1) & s->mask;
    return i;
}

static void grow(sim_keyset *s)
{
    sim_keyset old = *s;
    alloc_buckets(s, 64 - old.shift + 1, old.num != NULL);
    for (uint64_t i = 0; i <= old.mask; i++) {
        if (!old.b[i]) continue;
        uint64_t j = find_bucket(s, old.b[i]);
        s->b[j] = old.b[i];
        if (s->num) s->num[j] = old.num[i];
    }
    sim_keyset_free(&old);
}

bool sim_keyset_has(const sim_keyset *s, uint64_t key)
{
    return key ? s->b[find_bucket(s, key)] == key : s->zero_num >= 0;
}

/* key's number, adding it when absent; -1 for a key of a plain set. */
static int64_t add(sim_keyset *s, uint64_t key)
{
    if (!key) {
        if (s->zero_num < 0) s->zero_num = s->count++;
        return s->zero_num;
    }
    uint64_t i = find_bucket(s, key);
    if (s->b[i]) return s->num ? s->num[i] : -1;
    s->b[i] = key;
    int64_t n = s->count++;
    if (s->num) s->num[i] = (int32_t)n;
    if (2 * s->count > (int64_t)(s->mask + 1)) grow(s);
    return s->num ? n : -1;
}

int64_t sim_keyset_number(sim_keyset *s, uint64_t key)
{
    assert(s->num != NULL); /* a plain set numbers nothing */
    return add(s, key);
}

bool sim_keyset_add(sim_keyset *s, uint64_t key)
{
    int64_t before = s->count;
    add(s, key);
    return s->count > before;
}
