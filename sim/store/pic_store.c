/* sim/store/pic_store.c — the PIC block store (sim/store/pic.h, docs/pic.md):
 * objects (prefix-chain blocks and chunk copies) with reference
 * counts, one LRU over the unreferenced ones, the footprint, and the
 * admission of a request in two phases.
 *
 * Lookups come before allocations. First every item of the request is
 * looked up: a chain item hits while it and every chain item before it are
 * present; a chunk hits when present or when it repeats an earlier chunk of
 * the same request. The hits are then referenced (so that the request's own
 * allocations cannot evict them), and only then are the misses allocated,
 * each evicting unreferenced objects from the LRU's tail (the object that
 * lost its last reference longest ago) until it fits. An object that cannot
 * fit, everything else being referenced, is not stored; a held one then
 * counts as the request's private blocks. Items the policy does not hold
 * (CacheBlend's and EPIC's chunks, read into private copies) are released
 * at the end of the admission, in prompt order. On release, held objects
 * lose their references in the order the ticket lists them: the prefix
 * chain tail first, then chunks in prompt order, as vLLM frees a request's
 * blocks. */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "sim/index/dlist.h"
#include "sim/store/pic_index.h"
#include "sim/store/pic_int.h"

struct kv_pic {
    kv_pic_params p;
    const kv_pic_policy *pol;
    kv_pic_index index; /* key ↔ slot, and each object's blocks and references */
    int32_t nslots, cap;
    int32_t *free_slots;
    int32_t nfree;
    sim_links links;
    sim_list lru; /* unreferenced objects; head = released last */
    int64_t stored, referenced, private_total, peak, evictions;
    int64_t inflight, held; /* admitted requests; Σ refs × blocks over objects */
    kv_pic_peak at_peak;
    kv_pic_item *items;
    int64_t items_cap;
};

/* ---- helpers shared with the policies ----------------------------------- */

int64_t kv_pic_items_max(const kv_pic_params *p, const sim_request *r)
{
    return kv_pic_ceil(r->input_len, p->block_tokens) + r->nsegs + 1;
}

/* A hash_id request's pages: page i lies in block i·B / prefix_tokens (B
 * divides prefix_tokens) and is named by that block's chained key and its
 * place in it (the member of the tag), so it inherits the block's prefix
 * identity and sits beside its block's other pages in the index. Only
 * pages of blocks the request names. */
static int32_t hash_pages(const kv_pic_params *p, const sim_request *r, int32_t n, kv_pic_item *items)
{
    int32_t per = p->prefix_tokens / p->block_tokens, most = r->nblocks * per;
    n = n < most ? n : most;
    for (int32_t i = 0; i < n; i++) {
        uint64_t g = r->keys[i / per];
        items[i] = (kv_pic_item){.key = per > KV_PIC_MEMBERS ? sim_block_key(g, i % per) : g,
                                 .blocks = 1,
                                 .chain = true,
                                 .hold = true,
                                 .tag = kv_pic_tag(g, i % per)};
    }
    return n;
}

int32_t kv_pic_chain_items(const kv_pic_params *p, const sim_request *r, int64_t limit, int32_t n, kv_pic_item *items)
{
    if (n <= 0) return 0;
    if (r->nsegs == 0) return hash_pages(p, r, n, items);
    uint64_t *keys = sim_xmalloc((size_t)n * sizeof *keys);
    sim_segments_keys(r, p->prefix_tokens, p->block_tokens, limit, n, keys, NULL);
    for (int32_t i = 0; i < n; i++)
        items[i] = (kv_pic_item){.key = keys[i], .blocks = 1, .seg = 0, .chain = true, .hold = true};
    free(keys);
    return n;
}

uint64_t kv_pic_chunk_key(const sim_segment *s)
{
    int64_t v[3] = {0x43484e4bLL /* "CHNK" */, s->id, s->len};
    return XXH3_64bits(v, sizeof v);
}

int32_t kv_pic_prefix_len(const sim_request *r)
{
    return r->nsegs > 0 && r->segs[0].kind == SIM_SEG_PREFIX ? r->segs[0].len : 0;
}

/* ---- objects ------------------------------------------------------------ */

int kv_pic_params_check(const kv_pic_params *p, sim_err *err)
{
    if (p->block_tokens < 1 || p->block_tokens > 1 << 20)
        return sim_errf(err, "config key 'kvstore.pic_block_tokens': %d is not in [1, 1048576]", p->block_tokens);
    if (!(p->cacheblend_ratio >= 0 && p->cacheblend_ratio <= 1))
        return sim_errf(err, "config key 'kvstore.pic_cacheblend_ratio': %g is not in [0, 1]", p->cacheblend_ratio);
    if (p->epic_tokens < 0)
        return sim_errf(err, "config key 'kvstore.pic_epic_tokens': %d is negative", p->epic_tokens);
    if (p->prefix_tokens < 1) return sim_errf(err, "config key 'trace.block_tokens': must be at least 1");
    if (p->capacity_blocks < 0)
        return sim_errf(err, "PIC capacity: %lld blocks is negative", (long long)p->capacity_blocks);
    return 0;
}

static void grow_slots(kv_pic *s, int32_t cap)
{
    s->cap = cap;
    s->free_slots = sim_xrealloc(s->free_slots, (size_t)cap * sizeof *s->free_slots);
    sim_links_resize(&s->links, cap);
    kv_pic_index_slots(&s->index, cap);
}

kv_pic *kv_pic_create(const kv_pic_policy *pol, const kv_pic_params *p)
{
    kv_pic *s = sim_xcalloc(1, sizeof *s);
    s->p = *p;
    s->pol = pol;
    kv_pic_index_init(&s->index, 1024);
    grow_slots(s, 1024);
    sim_list_init(&s->lru);
    return s;
}

void kv_pic_destroy(kv_pic *s)
{
    if (!s) return;
    kv_pic_index_free(&s->index);
    free(s->free_slots);
    sim_links_free(&s->links);
    free(s->items);
    free(s);
}

void kv_pic_ticket_free(kv_pic_ticket *t)
{
    free(t->slots);
    *t = (kv_pic_ticket){0};
}

static void ref(kv_pic *s, int32_t slot)
{
    kv_pic_slot *o = &s->index.slot[slot];
    s->held += o->blocks;
    if (o->refs++ == 0) {
        sim_list_unlink(&s->lru, &s->links, slot);
        s->referenced += o->blocks;
    }
}

static void unref(kv_pic *s, int32_t slot)
{
    kv_pic_slot *o = &s->index.slot[slot];
    s->held -= o->blocks;
    if (--o->refs == 0) {
        sim_list_push_head(&s->lru, &s->links, slot);
        s->referenced -= o->blocks;
    }
}

static void evict_tail(kv_pic *s)
{
    int32_t slot = (int32_t)s->lru.tail;
    sim_list_unlink(&s->lru, &s->links, slot);
    kv_pic_index_remove(&s->index, slot);
    s->stored -= s->index.slot[slot].blocks;
    s->free_slots[s->nfree++] = slot;
    s->evictions++;
}

/* Slots double, but stop once at the capacity: objects of at least one
 * block never outnumber C (an aggregated instance's 82,624 pages take
 * 82,624 slots, not 131,072). */
static int32_t next_cap(const kv_pic *s)
{
    int64_t next = 2 * (int64_t)s->cap, c = s->p.capacity_blocks;
    return (int32_t)(c > s->cap && c < next ? c : next);
}

static int32_t new_slot(kv_pic *s)
{
    if (s->nfree) return s->free_slots[--s->nfree];
    if (s->nslots == s->cap) grow_slots(s, next_cap(s));
    return s->nslots++;
}

/* Store a new object of `blocks` with one reference, evicting as needed;
 * -1 when it cannot fit. `extra`: blocks not yet counted that share C. */
static int32_t store_new(kv_pic *s, uint64_t key, uint32_t tag, int32_t blocks, int64_t extra)
{
    int64_t other = s->p.private_counts ? s->private_total + extra : 0;
    while (s->stored + blocks + other > s->p.capacity_blocks && s->lru.size > 0) evict_tail(s);
    if (s->stored + blocks + other > s->p.capacity_blocks) return -1;
    int32_t slot = new_slot(s);
    kv_pic_index_put(&s->index, key, tag, slot);
    s->index.slot[slot].blocks = blocks;
    s->index.slot[slot].refs = 1;
    s->stored += blocks;
    s->referenced += blocks;
    s->held += blocks;
    return slot;
}

/* ---- admission ---------------------------------------------------------- */

/* A new peak footprint: remember what made it up. */
static void note_peak(kv_pic *s)
{
    if (kv_pic_footprint(s) <= s->peak) return;
    s->peak = kv_pic_footprint(s);
    s->at_peak = (kv_pic_peak){.footprint = s->peak,
                               .inflight = s->inflight,
                               .shared_blocks = s->referenced,
                               .held_blocks = s->held,
                               .private_blocks = s->private_total};
}

/* Phase 1: hits, repeats, and the slots of present objects. The home
 * buckets of the request's groups are fetched first, all at once. */
static void lookup(const kv_pic *s, kv_pic_item *it, int32_t n)
{
    bool chain_ok = true;
    for (int32_t i = 0; i < n; i++)
        if (i == 0 || (it[i].tag & ~7u) != (it[i - 1].tag & ~7u)) kv_pic_index_prefetch(&s->index, it[i].tag);
    for (int32_t i = 0; i < n; i++) {
        int32_t slot = kv_pic_index_find(&s->index, it[i].key, it[i].tag);
        it[i].slot = slot;
        it[i].dup = false;
        for (int32_t j = 0; j < i && !it[i].chain; j++)
            if (!it[j].chain && it[j].key == it[i].key) {
                it[i].dup = true;
                it[i].slot = j; /* the first occurrence's item, until phase 2 */
                break;
            }
        if (it[i].chain) chain_ok = it[i].hit = chain_ok && slot >= 0;
        else it[i].hit = it[i].dup || slot >= 0;
    }
}

/* Blocks admitting would add to the footprint (private ones included). */
static int64_t footprint_delta(const kv_pic *s, const kv_pic_item *it, int32_t n, const kv_pic_outcome *o)
{
    int64_t d = o->private_blocks;
    for (int32_t i = 0; i < n; i++)
        if (!it[i].dup && it[i].hold && (it[i].slot < 0 || s->index.slot[it[i].slot].refs == 0)) d += it[i].blocks;
    return d;
}

/* Phase 2: reference what is present, allocate what is not. */
static void reference_and_allocate(kv_pic *s, kv_pic_item *it, int32_t n, kv_pic_outcome *o)
{
    for (int32_t i = 0; i < n; i++)
        if (!it[i].dup && it[i].slot >= 0) ref(s, it[i].slot);
    for (int32_t i = 0; i < n; i++) {
        if (it[i].dup) {
            it[i].stored = it[it[i].slot].stored;
            it[i].slot = it[it[i].slot].slot;
            continue;
        }
        if (it[i].slot < 0) it[i].slot = store_new(s, it[i].key, it[i].tag, it[i].blocks, o->private_blocks);
        it[i].stored = it[i].slot >= 0;
        if (!it[i].stored && it[i].hold) o->private_blocks += it[i].blocks;
    }
}

static void ticket_push(kv_pic_ticket *t, int32_t slot)
{
    if (t->n == t->cap)
        t->slots = sim_xrealloc(t->slots, (size_t)(t->cap = t->cap ? 2 * t->cap : 16) * sizeof *t->slots);
    t->slots[t->n++] = slot;
}

/* Phase 3: drop what is only read; list what is held in release order. */
static void settle(kv_pic *s, const kv_pic_item *it, int32_t n, kv_pic_ticket *t)
{
    t->n = 0;
    for (int32_t i = 0; i < n; i++)
        if (!it[i].dup && it[i].stored && !it[i].hold) unref(s, it[i].slot);
    for (int32_t i = n - 1; i >= 0; i--)
        if (it[i].chain && it[i].stored) ticket_push(t, it[i].slot);
    for (int32_t i = 0; i < n; i++)
        if (!it[i].chain && !it[i].dup && it[i].stored && it[i].hold) ticket_push(t, it[i].slot);
}

int kv_pic_admit(kv_pic *s, const sim_request *r, bool only_if_fits, kv_pic_ticket *t, kv_pic_outcome *o)
{
    /* A request without segments shares nothing (one unique prompt), unless
     * the policy reads hash_id blocks (prefix caching) and it has some. */
    sim_segment whole = {.kind = SIM_SEG_PROMPT, .len = r->input_len, .unique = true};
    sim_request plain;
    if (r->nsegs == 0 && !(s->pol->hash_blocks && r->nblocks > 0)) {
        plain = *r;
        plain.segs = &whole;
        plain.nsegs = 1;
        r = &plain;
    }
    int64_t max = kv_pic_items_max(&s->p, r);
    if (max > s->items_cap) s->items = sim_xrealloc(s->items, (size_t)(s->items_cap = max) * sizeof *s->items);
    int32_t n = s->pol->items(&s->p, r, s->items);
    for (int32_t i = 0; i < n; i++)
        if (!s->items[i].tag) s->items[i].tag = kv_pic_tag(s->items[i].key, -1);
    lookup(s, s->items, n);
    *o = (kv_pic_outcome){.input_tokens = r->input_len, .unsegmented = r == &plain};
    s->pol->account(&s->p, r, s->items, n, o);
    if (only_if_fits) {
        int64_t d = o->adds_blocks = footprint_delta(s, s->items, n, o);
        if (d > s->p.capacity_blocks) return 2;
        if (kv_pic_footprint(s) + d > s->p.capacity_blocks) return 1;
    }
    reference_and_allocate(s, s->items, n, o);
    settle(s, s->items, n, t);
    t->private_blocks = o->private_blocks;
    s->private_total += o->private_blocks;
    s->inflight += !t->admitted;
    t->admitted = true;
    note_peak(s);
    return 0;
}

int kv_pic_grow(kv_pic *s, kv_pic_ticket *t, int64_t blocks)
{
    int64_t other = s->p.private_counts ? s->private_total + blocks : blocks;
    if (s->referenced + other > s->p.capacity_blocks) return -1;
    while (s->stored + other > s->p.capacity_blocks && s->lru.size > 0) evict_tail(s);
    t->private_blocks += blocks;
    s->private_total += blocks;
    note_peak(s);
    return 0;
}

void kv_pic_release(kv_pic *s, kv_pic_ticket *t)
{
    for (int32_t i = 0; i < t->n; i++) unref(s, t->slots[i]);
    s->private_total -= t->private_blocks;
    s->inflight -= t->admitted;
    t->admitted = false;
    t->n = 0;
    t->private_blocks = 0;
}

int64_t kv_pic_footprint(const kv_pic *s) { return s->referenced + s->private_total; }
int64_t kv_pic_peak_footprint(const kv_pic *s) { return s->peak; }
kv_pic_peak kv_pic_peak_state(const kv_pic *s) { return s->at_peak; }

kv_pic_peak kv_pic_peak_of(kv_pic *const *stores, int n)
{
    kv_pic_peak best = {0};
    for (int i = 0; i < n; i++)
        if (stores[i]->at_peak.footprint > best.footprint) best = stores[i]->at_peak;
    return best;
}

void kv_pic_peak_json(const kv_pic_peak *p, json_t *o)
{
    json_object_set_new(o, "peak_inflight_requests", json_integer(p->inflight));
    json_object_set_new(o, "peak_shared_blocks", json_integer(p->shared_blocks));
    json_object_set_new(o, "peak_held_blocks", json_integer(p->held_blocks));
    json_object_set_new(o, "peak_private_blocks", json_integer(p->private_blocks));
}
int64_t kv_pic_stored_blocks(const kv_pic *s) { return s->stored; }
int64_t kv_pic_evictions(const kv_pic *s) { return s->evictions; }
