/* sim/store/pic_prefix.c — kvstore.pic = "prefix": vLLM-style prefix
 * caching over the whole packed prompt, the baseline position-independent
 * reuse is measured against (docs/pic.md).
 *
 * One chain of the ⌊N/B⌋ full blocks of the N-token prompt; a hit is the
 * longest leading run of chain blocks present, and the request computes
 * N − hit·B tokens. Every full block is a shared store object held while
 * the request is in flight; the partial tail block is private. A chunk
 * occurrence counts as reused when it lies wholly inside the hit. A
 * Mooncake request (hash_ids, no segments) is chained by its blocks: its
 * pages are named by their block's key (vLLM prefix caching of an
 * aggregated instance, docs/lmcache.md). */
#include <stdlib.h>
#include <string.h>

#include "sim/index/keyset.h"
#include "sim/store/pic_int.h"

static int32_t prefix_items(const kv_pic_params *p, const sim_request *r, kv_pic_item *items)
{
    return kv_pic_chain_items(p, r, r->input_len, r->input_len / p->block_tokens, items);
}

static void prefix_account(const kv_pic_params *p, const sim_request *r, const kv_pic_item *items, int32_t n,
                           kv_pic_outcome *o)
{
    int32_t blocks, hit = kv_pic_chain_hits(items, n, &blocks);
    int64_t hit_tokens = (int64_t)hit * p->block_tokens, pos = 0;
    o->computed_tokens = o->computed_positions = r->input_len - hit_tokens;
    o->reused_blocks = hit;
    o->private_blocks = kv_pic_ceil(r->input_len, p->block_tokens) - blocks;
    for (int32_t i = 0; i < r->nsegs; i++) {
        pos += r->segs[i].len;
        if (r->segs[i].kind != SIM_SEG_CHUNK) continue;
        o->chunks++;
        o->chunk_hits += pos <= hit_tokens;
    }
}

const kv_pic_policy kv_pic_prefix = {
    .name = "prefix",
    .hash_blocks = true,
    .help = "vLLM prefix caching of the packed prompt: reuse only the leading run of cached 16-token blocks",
    .items = prefix_items,
    .account = prefix_account,
};

/* ---- the unbounded one-at-a-time replay, without a store ----------------
 * With nothing evicted and one request at a time, a page is present iff an
 * earlier request named it (a request looks its pages up before it stores
 * any): a segment chain's page, named by its key, when the key is in a
 * set; a block's pages (a span), whose stored members are always the
 * leading ones, up to the most that any earlier request named (a count per
 * block key). The hit is the leading run, as prefix_account counts it. A
 * set of keys instead of a store of objects with references, LRU links and
 * tickets: `kvsim trace stats` of a 7,106-request RAG trace looks up and
 * stores 1M pages. */
typedef struct seen {
    sim_keyset pages, blocks; /* page keys; block keys, numbered */
    int32_t *most;            /* by block number: the most members stored */
    int64_t cap;
} seen;

/* The most members of block key stored so far (0 for a new block). */
static int32_t *most_of(seen *z, uint64_t key)
{
    int64_t b = sim_keyset_number(&z->blocks, key);
    if (b >= z->cap) {
        int64_t was = z->cap;
        z->most = sim_xrealloc(z->most, (size_t)(z->cap = 2 * b + 1024) * sizeof *z->most);
        memset(z->most + was, 0, (size_t)(z->cap - was) * sizeof *z->most);
    }
    return &z->most[b];
}

/* The leading pages of items[0..n) stored before. */
static int64_t seen_hits(seen *z, const kv_pic_item *it, int32_t n)
{
    int64_t hit = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!it[i].pages) {
            if (!sim_keyset_has(&z->pages, it[i].key)) break;
            hit++;
            continue;
        }
        int32_t most = *most_of(z, it[i].key);
        hit += most < it[i].pages ? most : it[i].pages;
        if (most < it[i].pages) break;
    }
    return hit;
}

/* items[0..n) are stored. Their pages' buckets are fetched first, all at
 * once (most pages are new: a cache miss each in a set of every page). */
static void seen_add(seen *z, const kv_pic_item *it, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        if (!it[i].pages) sim_keyset_prefetch(&z->pages, it[i].key);
    for (int32_t i = 0; i < n; i++) {
        if (!it[i].pages) {
            sim_keyset_add(&z->pages, it[i].key);
            continue;
        }
        int32_t *most = most_of(z, it[i].key);
        if (*most < it[i].pages) *most = it[i].pages;
    }
}

bool kv_pic_prefix_unbounded(const kv_pic_params *p, sim_request *const *req, int64_t n, int64_t *input,
                             int64_t *computed)
{
    int64_t pages = 0, cap = 0;
    for (int64_t i = 0; i < n; i++) pages += req[i]->input_len / p->block_tokens;
    seen z = {0};
    sim_keyset_init(&z.pages, pages);
    sim_keyset_init(&z.blocks, 1024);
    kv_pic_item *items = NULL;
    bool ok = true;
    *input = *computed = 0;
    for (int64_t i = 0; i < n && ok; i++) {
        sim_segment whole;
        sim_request plain;
        const sim_request *r = kv_pic_as_admitted(&kv_pic_prefix, req[i], &plain, &whole);
        int64_t max = kv_pic_items_max(p, r);
        if (max > cap) items = sim_xrealloc(items, (size_t)(cap = max) * sizeof *items);
        int32_t k = prefix_items(p, r, items);
        for (int32_t j = 0; j < k; j++) ok = ok && (items[j].pages || !items[j].tag); /* named by key alone */
        int64_t hit = seen_hits(&z, items, k);
        seen_add(&z, items, k);
        *input += r->input_len;
        *computed += r->input_len - hit * p->block_tokens;
    }
    free(items);
    free(z.most);
    sim_keyset_free(&z.pages);
    sim_keyset_free(&z.blocks);
    return ok;
}
