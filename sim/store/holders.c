/* sim/store/holders.c — the global block → holders index (see holders.h):
 * a row of node bits per resident key, rows pooled and reused. */
#include "sim/store/holders.h"

#include <stdlib.h>
#include <string.h>

#include "sim/util.h"

#define INITIAL_ROWS 1024

void kv_holders_init(kv_holders *h, int nodes)
{
    *h = (kv_holders){.nodes = nodes, .words = (nodes + 63) / 64};
    sim_keymap_init(&h->rows, INITIAL_ROWS);
}

void kv_holders_free(kv_holders *h)
{
    sim_keymap_free(&h->rows);
    free(h->bits);
    free(h->released);
    *h = (kv_holders){0};
}

static inline uint64_t *row_bits(const kv_holders *h, int64_t row) { return h->bits + row * h->words; }

/* A zeroed row: a released one, else the next fresh one (the pool doubles). */
static int64_t take_row(kv_holders *h)
{
    int64_t row;
    if (h->nreleased > 0) row = h->released[--h->nreleased];
    else {
        if (h->used == h->nrows) {
            h->nrows = h->nrows ? 2 * h->nrows : INITIAL_ROWS;
            h->bits = sim_xrealloc(h->bits, (size_t)(h->nrows * h->words) * sizeof *h->bits);
            h->released = sim_xrealloc(h->released, (size_t)h->nrows * sizeof *h->released);
        }
        row = h->used++;
    }
    memset(row_bits(h, row), 0, (size_t)h->words * sizeof *h->bits);
    return row;
}

void kv_holders_add(kv_holders *h, uint64_t key, int node)
{
    uint64_t where;
    int64_t row = sim_keymap_probe(&h->rows, key, &where);
    if (row < 0) sim_keymap_put_at(&h->rows, where, key, row = take_row(h));
    row_bits(h, row)[node / 64] |= (uint64_t)1 << (node % 64);
}

void kv_holders_del(kv_holders *h, uint64_t key, int node)
{
    int64_t row = sim_keymap_get(&h->rows, key);
    if (row < 0) return;
    uint64_t *b = row_bits(h, row);
    b[node / 64] &= ~((uint64_t)1 << (node % 64));
    for (int w = 0; w < h->words; w++)
        if (b[w]) return;
    sim_keymap_del(&h->rows, key);
    h->released[h->nreleased++] = row;
}

bool kv_holders_has(const kv_holders *h, uint64_t key, int node)
{
    int64_t row = sim_keymap_get(&h->rows, key);
    return row >= 0 && (row_bits(h, row)[node / 64] >> (node % 64) & 1);
}

int64_t kv_holders_keys(const kv_holders *h) { return h->rows.count; }

/* Every node's leading run in one walk over the keys: `alive` holds the
 * nodes that have held every key so far. At key i, the alive nodes that do
 * not hold it are dead with a run of i (each node dies once, so writing
 * the runs costs O(nodes) in all); the walk stops when no node is alive,
 * and the survivors of all n keys have a run of n. The cost is O(words)
 * per key of the longest run plus O(nodes), against O(nodes) tier probes
 * per key when each node is asked in turn. */
void kv_holders_runs(const kv_holders *h, const uint64_t *keys, int32_t n, int32_t *run)
{
    uint64_t alive[h->words];
    int live = 0;
    for (int w = 0; w < h->words; w++) {
        int bits = h->nodes - 64 * w < 64 ? h->nodes - 64 * w : 64;
        alive[w] = bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
        live |= alive[w] != 0;
    }
    int32_t i = 0;
    for (; i < n && live; i++) {
        int64_t row = sim_keymap_get(&h->rows, keys[i]);
        live = 0;
        for (int w = 0; w < h->words; w++) {
            uint64_t held = row >= 0 ? row_bits(h, row)[w] : 0;
            for (uint64_t dead = alive[w] & ~held; dead; dead &= dead - 1) run[64 * w + __builtin_ctzll(dead)] = i;
            alive[w] &= held;
            live |= alive[w] != 0;
        }
    }
    for (int w = 0; w < h->words; w++)
        for (uint64_t a = alive[w]; a; a &= a - 1) run[64 * w + __builtin_ctzll(a)] = i;
}
