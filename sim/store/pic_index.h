/* sim/store/pic_index.h — the PIC store's index (sim/store/pic_store.c):
 * which slot holds the object of a key, and back, laid out so that the
 * pages of one prefix block sit side by side.
 *
 * Why not sim_keymap: an aggregated instance caches up to its HBM's
 * ~83k 16-token pages, and a request looks up, references and later evicts
 * every page of its prompt (~300 for a 4.7k-token prompt). Hashed one by
 * one, each page is a cache miss in a table of 4 buckets per page grown by
 * doubling (8 MiB per instance at 83k pages, 64 MiB for 8 instances: most
 * of an aggregated replay's memory, and half its time in probe and delete
 * misses). Here the pages of a group (a hash_id block's 32 pages, members
 * 0–31) have consecutive home buckets, 8 by 8 in aligned 8-bucket regions,
 * so a request's pages are runs of consecutive buckets (two cache lines
 * per 8 pages, fetched ahead); the table is
 * sized once for the store's capacity (at most half full at full capacity:
 * 4 MiB for 83k pages) and doubles only past that (objects of 0 blocks).
 *
 * Robin Hood linear probing (each probe run sorted by home bucket), so a
 * miss ends early and a deletion shifts back only up to the next entry at
 * its home (regions of 32 made every insertion and deletion walk ~15
 * buckets through a neighbouring group's run; regions of 8, ~3). A bucket
 * holds a slot and its tag (group hash and member, from which its home
 * follows at any table size): 8 bytes, a run of 8 pages one cache line;
 * the key is kept per slot and read only when a tag matches. The layout
 * changes no result: a lookup compares whole names (key and tag; a page's
 * are its block's key and its member, exact for up to KV_PIC_MEMBERS pages
 * a block). The store now keeps a hash_id block's pages as one group, one
 * entry per block (sim/store/pic_store.c); pages named one by one remain
 * for segment traces' prefix chains and kv_pic_params.pages_apart. */
#ifndef KV_PIC_INDEX_H
#define KV_PIC_INDEX_H

#include <stdbool.h>
#include <stdint.h>

/* A bucket: 8 bytes, so a run of 8 members is one 64-byte cache line. */
typedef struct kv_pic_entry {
    int32_t slot; /* -1: empty bucket */
    uint32_t tag; /* kv_pic_tag: run hash (high 24 bits) and member (low 8) */
} kv_pic_entry;

/* A slot: the name it was put with (key and tag; a page: its block's key
 * and member) and, beside it in the same cache line, the store's counts
 * for the object there (sim/store/pic_store.c), read on every hit. */
typedef struct kv_pic_slot {
    uint64_t key;
    uint32_t tag;
    int32_t blocks, refs;
    int32_t group; /* the store's: −1 a plain object, else a slot of that group (pic_store.c) */
} kv_pic_slot;

typedef struct kv_pic_index {
    kv_pic_entry *e;
    uint64_t mask; /* buckets − 1 */
    int log2n;
    int64_t count;
    kv_pic_slot *slot; /* by slot number */
} kv_pic_index;

/* A group's members 0–255 are told apart by the tag's low 8 bits (the
 * caller names pages of larger groups by their own keys). Each run of 8
 * members shares an aligned 8-bucket region, one bucket each, chosen by
 * the hash of the group and the run (the tag's high 24 bits, bit 8 set so
 * that a member's tag is never 0); a plain key's tag is its hash
 * (kv_pic_tag(key, -1)), so plain keys spread over every bucket. */
#define KV_PIC_MEMBERS 256
static inline uint32_t kv_pic_tag(uint64_t group, int32_t member)
{
    if (member < 0) return (uint32_t)((group * 0x9E3779B97F4A7C15ull) >> 32);
    uint64_t run = group + (uint64_t)(member >> 3) * 0xD6E8FEB86659FD93ull;
    return ((uint32_t)((run * 0x9E3779B97F4A7C15ull) >> 32) & ~0xFFu) | 0x100u | ((uint32_t)member & 0xFFu);
}

/* Home bucket: the region (the tag's top log2n bits, less the low 3) plus
 * the member's place in its run. */
static inline uint64_t kv_pic_home(const kv_pic_index *x, uint32_t tag)
{
    return (((((uint64_t)tag << x->log2n) >> 32) & ~(uint64_t)7) | (tag & 7u)) & x->mask;
}

/* The slot of key and tag (an object is named by both: a page by its
 * block's key and its member), or -1: the probe ends at
 * an empty bucket or at an entry nearer its home than key would be. */
static inline int32_t kv_pic_index_find(const kv_pic_index *x, uint64_t key, uint32_t tag)
{
    for (uint64_t b = kv_pic_home(x, tag), d = 0;; b = (b + 1) & x->mask, d++) {
        const kv_pic_entry *e = &x->e[b];
        if (e->slot < 0 || ((b - kv_pic_home(x, e->tag)) & x->mask) < d) return -1;
        if (e->tag == tag && x->slot[e->slot].key == key) return e->slot;
    }
}

/* Start loading the home bucket of tag (a hint; no effect on results). */
static inline void kv_pic_index_prefetch(const kv_pic_index *x, uint32_t tag)
{
    __builtin_prefetch(&x->e[kv_pic_home(x, tag)]);
}

/* An empty index for about `expected` objects. */
void kv_pic_index_init(kv_pic_index *x, int64_t expected);
void kv_pic_index_free(kv_pic_index *x);
/* Slots will be below nslots. */
void kv_pic_index_slots(kv_pic_index *x, int64_t nslots);
/* Map key and tag to slot (overwriting their slot if present). */
void kv_pic_index_put(kv_pic_index *x, uint64_t key, uint32_t tag, int32_t slot);
/* Remove slot's name (nothing if another slot took it over since). */
void kv_pic_index_remove(kv_pic_index *x, int32_t slot);

#endif
