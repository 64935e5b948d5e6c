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
 * blocks.
 *
 * The pages of one hash_id block (a prefix request's 16-token pages, 32
 * to a 512-token block) are one span item (kv_pic_item.pages) and one
 * group in the store: one index entry under the block's key, and per
 * member (page) its references and, while it has none, the LRU run it
 * lies in. An unreferenced page is not an LRU node of its own:
 * consecutive members released together are one node, a run, standing
 * for members lo..hi−1 from head to tail (the order a release pushes a
 * block's pages in, tail first). Evicting the LRU's tail evicts its run's
 * member hi−1; referencing a member again cuts it out of its run. A
 * request holds the leading members of each block it names, so a
 * block's stored members are a prefix, its unreferenced ones a suffix of
 * that, and a cut or a release touches a run's low end (the splitting of
 * a run and the several runs of one release are there for any other
 * shape). The LRU thus holds the same pages in the same order as with one
 * object per page (kv_pic_params.pages_apart; tests/test_pic_store.c
 * replays random requests both ways and compares every outcome), while a
 * request's ~300 pages cost one index lookup per block and one LRU node
 * per block released, not ~300 of each — each of which was a cache miss
 * in tables of every cached page (an aggregated replay of 1M requests
 * spent 65% of its time there; CHANGELOG.md, "Moved from docs/run.md"). */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "sim/index/dlist.h"
#include "sim/store/pic_index.h"
#include "sim/store/pic_int.h"

/* A group: its slot (−1 once freed) and how many of its members are
 * stored; its members' counts are rows of kv_pic.members. */
typedef struct kv_pic_group {
    int32_t slot, present;
} kv_pic_group;

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
    int32_t width; /* members a group holds: pages per hash_id block */
    kv_pic_group *groups;
    int32_t *members; /* by group, 2 × width: each member's references, then its run (−1: none) */
    int32_t *free_groups;
    int32_t ngroups, groups_cap, nfree_groups;
};

/* What a slot is (kv_pic_slot.group): −1, a plain object; else a slot of
 * that group: its own (refs −1) or an LRU run of its members lo .. lo +
 * blocks − 1 (a run has no references: refs holds lo). */
static int32_t run_lo(const kv_pic *s, int32_t r) { return s->index.slot[r].refs; }

/* ---- helpers shared with the policies ----------------------------------- */

int64_t kv_pic_items_max(const kv_pic_params *p, const sim_request *r)
{
    return kv_pic_ceil(r->input_len, p->block_tokens) + r->nsegs + 1;
}

/* A hash_id request's pages: page i lies in block i·B / prefix_tokens (B
 * divides prefix_tokens) and is named by that block's chained key and its
 * place in it (the member of the tag), so it inherits the block's prefix
 * identity and sits beside its block's other pages in the index. Only
 * pages of blocks the request names. A block's pages are one span item
 * (kv_pic_item.pages) unless a block has more than KV_PIC_MEMBERS of them
 * or pages_apart asks for one item each. */
static int32_t hash_pages(const kv_pic_params *p, const sim_request *r, int32_t n, kv_pic_item *items)
{
    int32_t per = p->prefix_tokens / p->block_tokens, most = r->nblocks * per, k = 0;
    n = n < most ? n : most;
    bool spans = per <= KV_PIC_MEMBERS && !p->pages_apart;
    for (int32_t i = 0; i < n; i += spans ? per : 1) {
        uint64_t g = r->keys[i / per];
        items[k++] = (kv_pic_item){.key = per > KV_PIC_MEMBERS ? sim_block_key(g, i % per) : g,
                                   .blocks = 1,
                                   .chain = true,
                                   .hold = true,
                                   .tag = kv_pic_tag(g, i % per),
                                   .pages = spans ? (n - i < per ? n - i : per) : 0};
    }
    return k;
}

int32_t kv_pic_chain_hits(const kv_pic_item *items, int32_t n, int32_t *blocks)
{
    int32_t hit = 0, all = 0;
    bool leading = true;
    for (int32_t i = 0; i < n; i++) {
        all += items[i].pages ? items[i].pages : 1;
        if (leading) hit += items[i].pages ? items[i].hit_pages : items[i].hit;
        leading = leading && items[i].hit;
    }
    *blocks = all;
    return hit;
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

const sim_request *kv_pic_as_admitted(const kv_pic_policy *pol, const sim_request *r, sim_request *plain,
                                      sim_segment *whole)
{
    if (r->nsegs > 0 || (pol->hash_blocks && r->nblocks > 0)) return r;
    *whole = (sim_segment){.kind = SIM_SEG_PROMPT, .len = r->input_len, .unique = true};
    *plain = *r;
    plain->segs = whole;
    plain->nsegs = 1;
    return plain;
}

int32_t kv_pic_prefix_len(const sim_request *r)
{
    return r->nsegs > 0 && r->segs[0].kind == SIM_SEG_PREFIX ? r->segs[0].len : 0;
}

/* ---- objects ------------------------------------------------------------ */

const kv_pic_names kv_pic_config_names = {"kvstore.pic_block_tokens", "trace.block_tokens",
                                          "kvstore.pic_cacheblend_ratio", "kvstore.pic_epic_tokens"};

/* The largest divisor of n that is at most most (at least 1). */
static int divisor_below(int n, int most)
{
    int d = most < n ? most : n;
    while (d > 1 && n % d) d--;
    return d > 1 ? d : 1;
}

int kv_pic_params_check(const kv_pic_params *p, const kv_pic_names *names, sim_err *err)
{
    if (p->block_tokens < 1 || p->block_tokens > 1 << 20)
        return sim_errf(err, "%s: %d is not in [1, 1048576]", names->block_tokens, p->block_tokens);
    if (!(p->cacheblend_ratio >= 0 && p->cacheblend_ratio <= 1))
        return sim_errf(err, "%s: %g is not in [0, 1]", names->cacheblend_ratio, p->cacheblend_ratio);
    if (p->epic_tokens < 0) return sim_errf(err, "%s: %d is negative", names->epic_tokens, p->epic_tokens);
    if (p->prefix_tokens < 1) return sim_errf(err, "%s: must be at least 1", names->prefix_tokens);
    if (p->prefix_tokens % p->block_tokens)
        return sim_errf(err,
                        "%s: %d does not divide %s (%d): a block of the trace must be whole HBM blocks; use a divisor "
                        "of %d such as %d",
                        names->block_tokens, p->block_tokens, names->prefix_tokens, p->prefix_tokens, p->prefix_tokens,
                        divisor_below(p->prefix_tokens, p->block_tokens));
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
    int32_t per = p->block_tokens > 0 ? p->prefix_tokens / p->block_tokens : 0;
    s->width = per >= 1 && per <= KV_PIC_MEMBERS ? per : 1;
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
    free(s->groups);
    free(s->members);
    free(s->free_groups);
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

/* Slots double, but stop once at the capacity: objects of at least one
 * block never outnumber C (an aggregated instance's 82,624 pages take
 * 82,624 slots, not 131,072). */
static int32_t next_cap(const kv_pic *s)
{
    int64_t next = 2 * (int64_t)s->cap, c = s->p.capacity_blocks;
    return (int32_t)(c > s->cap && c < next ? c : next);
}

static int32_t new_slot(kv_pic *s, int32_t group, int32_t lo)
{
    int32_t slot;
    if (s->nfree) slot = s->free_slots[--s->nfree];
    else {
        if (s->nslots == s->cap) grow_slots(s, next_cap(s));
        slot = s->nslots++;
    }
    s->index.slot[slot].group = group;
    s->index.slot[slot].refs = lo;
    return slot;
}

static void free_slot(kv_pic *s, int32_t slot) { s->free_slots[s->nfree++] = slot; }

/* ---- groups: a hash_id block's pages (see the top of the file) ----------- */

static int32_t *member_refs(const kv_pic *s, int32_t g) { return s->members + (size_t)g * 2 * s->width; }
static int32_t *member_run(const kv_pic *s, int32_t g) { return member_refs(s, g) + s->width; }

static bool member_present(const kv_pic *s, int32_t g, int32_t m)
{
    return member_refs(s, g)[m] > 0 || member_run(s, g)[m] >= 0;
}

/* The slot of the group named key, or −1. */
static int32_t group_find(const kv_pic *s, uint64_t key)
{
    return kv_pic_index_find(&s->index, key, kv_pic_tag(key, 0));
}

/* A new group for key, with no member stored: its group number. */
static int32_t group_new(kv_pic *s, uint64_t key)
{
    int32_t g;
    if (s->nfree_groups) g = s->free_groups[--s->nfree_groups];
    else {
        if (s->ngroups == s->groups_cap) {
            s->groups_cap = s->groups_cap ? 2 * s->groups_cap : 256;
            s->groups = sim_xrealloc(s->groups, (size_t)s->groups_cap * sizeof *s->groups);
            s->members = sim_xrealloc(s->members, (size_t)s->groups_cap * 2 * s->width * sizeof *s->members);
            s->free_groups = sim_xrealloc(s->free_groups, (size_t)s->groups_cap * sizeof *s->free_groups);
        }
        g = s->ngroups++;
    }
    int32_t slot = new_slot(s, g, -1);
    kv_pic_index_put(&s->index, key, kv_pic_tag(key, 0), slot);
    s->index.slot[slot].blocks = 0;
    s->groups[g] = (kv_pic_group){.slot = slot, .present = 0};
    int32_t *refs = member_refs(s, g), *run = member_run(s, g);
    for (int32_t m = 0; m < s->width; m++) refs[m] = 0, run[m] = -1;
    return g;
}

/* A run node for members lo..hi−1 of g (not yet in the LRU). */
static int32_t run_new(kv_pic *s, int32_t g, int32_t lo, int32_t hi)
{
    int32_t r = new_slot(s, g, lo), *run = member_run(s, g);
    s->index.slot[r].blocks = hi - lo;
    for (int32_t m = lo; m < hi; m++) run[m] = r;
    return r;
}

/* Member m of g is referenced again: out of its run. The run's members
 * keep their LRU order: cut at an end, it shrinks; cut inside, its upper
 * part (nearer the tail) becomes a new node right after it. */
static void run_cut(kv_pic *s, int32_t g, int32_t m)
{
    int32_t *run = member_run(s, g), r = run[m];
    int32_t lo = run_lo(s, r), hi = lo + s->index.slot[r].blocks;
    run[m] = -1;
    if (hi - lo == 1) {
        sim_list_unlink(&s->lru, &s->links, r);
        free_slot(s, r);
    } else if (m == lo) {
        s->index.slot[r].refs++;
        s->index.slot[r].blocks--;
    } else if (m == hi - 1) {
        s->index.slot[r].blocks--;
    } else {
        s->index.slot[r].blocks = m - lo;
        sim_list_insert_after(&s->lru, &s->links, r, run_new(s, g, m + 1, hi));
    }
}

/* A page (member m of the group in slot gslot) gets a reference. */
static void ref_page(kv_pic *s, int32_t gslot, int32_t m)
{
    int32_t g = s->index.slot[gslot].group;
    s->held++;
    if (member_refs(s, g)[m]++ == 0) {
        run_cut(s, g, m);
        s->referenced++;
    }
}

/* Release members lo..hi−1 of the group in gslot, hi−1 first: those
 * left unreferenced go to the LRU's head as one run per stretch of
 * consecutive members, the upper stretch first (what pushing each page in
 * turn would give). */
static void release_pages(kv_pic *s, int32_t gslot, int32_t lo, int32_t hi)
{
    int32_t g = s->index.slot[gslot].group, *refs = member_refs(s, g), top = -1;
    for (int32_t m = hi - 1; m >= lo; m--) {
        s->held--;
        if (--refs[m] > 0) {
            if (top >= 0) sim_list_push_head(&s->lru, &s->links, run_new(s, g, m + 1, top));
            top = -1;
            continue;
        }
        s->referenced--;
        if (top < 0) top = m + 1;
    }
    if (top >= 0) sim_list_push_head(&s->lru, &s->links, run_new(s, g, lo, top));
}

/* Evict the last member of run r; a group left with none goes. */
static void evict_page(kv_pic *s, int32_t r)
{
    int32_t g = s->index.slot[r].group;
    member_run(s, g)[run_lo(s, r) + s->index.slot[r].blocks - 1] = -1;
    if (--s->index.slot[r].blocks == 0) {
        sim_list_unlink(&s->lru, &s->links, r);
        free_slot(s, r);
    }
    if (--s->groups[g].present == 0) {
        kv_pic_index_remove(&s->index, s->groups[g].slot);
        free_slot(s, s->groups[g].slot);
        s->groups[g].slot = -1;
        s->free_groups[s->nfree_groups++] = g;
    }
}

/* ---- storing and evicting -------------------------------------------------- */

static void evict_tail(kv_pic *s)
{
    int32_t slot = (int32_t)s->lru.tail;
    s->evictions++;
    if (s->index.slot[slot].group >= 0) {
        s->stored--;
        evict_page(s, slot);
        return;
    }
    s->stored -= s->index.slot[slot].blocks;
    sim_list_unlink(&s->lru, &s->links, slot);
    kv_pic_index_remove(&s->index, slot);
    free_slot(s, slot);
}

/* Evict until `blocks` more fit beside `extra` blocks not yet counted that
 * share C: false when they cannot. */
static bool make_room(kv_pic *s, int64_t blocks, int64_t extra)
{
    int64_t other = s->p.private_counts ? s->private_total + extra : 0;
    while (s->stored + blocks + other > s->p.capacity_blocks && s->lru.size > 0) evict_tail(s);
    return s->stored + blocks + other <= s->p.capacity_blocks;
}

/* Store a new object of `blocks` with one reference, evicting as needed;
 * -1 when it cannot fit. */
static int32_t store_new(kv_pic *s, const kv_pic_item *it, int64_t extra)
{
    if (!make_room(s, it->blocks, extra)) return -1;
    int32_t slot = new_slot(s, -1, -1);
    kv_pic_index_put(&s->index, it->key, it->tag, slot);
    s->index.slot[slot].blocks = it->blocks;
    s->index.slot[slot].refs = 1;
    s->stored += it->blocks;
    s->referenced += it->blocks;
    s->held += it->blocks;
    return slot;
}

/* gslot, when it still is the slot of the group named key (a group's slot
 * is freed with its last member, and may then be reused). */
static bool is_group(const kv_pic *s, int32_t gslot, uint64_t key)
{
    const kv_pic_slot *o = gslot >= 0 ? &s->index.slot[gslot] : NULL;
    return o && o->group >= 0 && o->refs < 0 && o->key == key;
}

/* Phase 2 of a span: store its members not present, in order, each with
 * one reference (the group made at the first if there is none), evicting
 * as needed; one that cannot fit adds a private block. Then it->slot is
 * the group's and it->stored says whether any member is held.
 *
 * The absent members come in stretches, and a stretch is stored at once
 * with what storing its pages one by one would do: its first page as a
 * page alone (room for it, then the group found or made: slots are taken
 * in the same order), then room for the other k − 1 in one make_room,
 * which evicts from the LRU's tail exactly the pages k − 1 single calls
 * would (what is being stored is referenced, never in the LRU). Those that
 * fit are stored, and once one does not the LRU is empty, so every later
 * page of the span adds a private block too. */
static int32_t absent_until(const kv_pic *s, int32_t gslot, uint64_t key, int32_t m, int32_t pages)
{
    if (!is_group(s, gslot, key)) return pages;
    int32_t g = s->index.slot[gslot].group;
    while (m < pages && !member_present(s, g, m)) m++;
    return m;
}

/* Store members m..e−1 (all absent) of the group in *gslot, or of a new
 * group for key; returns how many were stored. */
static int32_t store_stretch(kv_pic *s, int32_t *gslot, uint64_t key, int32_t m, int32_t e, kv_pic_outcome *o)
{
    if (!make_room(s, 1, o->private_blocks)) {
        o->private_blocks += e - m;
        return 0;
    }
    if (!is_group(s, *gslot, key)) *gslot = group_find(s, key);
    int32_t g = *gslot >= 0 ? s->index.slot[*gslot].group : group_new(s, key);
    *gslot = s->groups[g].slot;
    int32_t *refs = member_refs(s, g), k = e - m - 1, fit = k;
    refs[m] = 1; /* the first page counts before room is made for the rest */
    s->groups[g].present++;
    s->stored++, s->referenced++, s->held++;
    if (k > 0 && !make_room(s, k, o->private_blocks)) {
        int64_t other = s->p.private_counts ? s->private_total + o->private_blocks : 0;
        int64_t room = s->p.capacity_blocks - s->stored - other;
        fit = room < 0 ? 0 : room < k ? (int32_t)room : k;
    }
    for (int32_t i = m + 1; i <= m + fit; i++) refs[i] = 1;
    s->groups[g].present += fit;
    s->stored += fit;
    s->referenced += fit;
    s->held += fit;
    o->private_blocks += k - fit;
    return 1 + fit;
}

static void store_span(kv_pic *s, kv_pic_item *it, kv_pic_outcome *o)
{
    int32_t gslot = it->slot, held = 0;
    for (int32_t m = 0; m < it->pages;) {
        if (is_group(s, gslot, it->key) && member_present(s, s->index.slot[gslot].group, m)) {
            held++;
            m++;
            continue;
        }
        int32_t e = absent_until(s, gslot, it->key, m + 1, it->pages);
        held += store_stretch(s, &gslot, it->key, m, e, o);
        m = e;
    }
    it->stored = held > 0;
    it->slot = held > 0 ? gslot : -1;
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

/* Phase 1 of a span: its group's slot, and its leading members present
 * (none once the chain broke before it). */
static bool lookup_span(const kv_pic *s, kv_pic_item *it, bool chain_ok)
{
    it->slot = group_find(s, it->key);
    it->dup = false;
    int32_t h = 0;
    if (chain_ok && it->slot >= 0)
        while (h < it->pages && member_present(s, s->index.slot[it->slot].group, h)) h++;
    it->hit_pages = h;
    return it->hit = chain_ok && h == it->pages;
}

/* Phase 1: hits, repeats, and the slots of present objects. The home
 * buckets of the request's objects are fetched first, all at once. */
static void lookup(const kv_pic *s, kv_pic_item *it, int32_t n)
{
    bool chain_ok = true;
    for (int32_t i = 0; i < n; i++)
        if (i == 0 || (it[i].tag & ~7u) != (it[i - 1].tag & ~7u)) kv_pic_index_prefetch(&s->index, it[i].tag);
    for (int32_t i = 0; i < n; i++) {
        if (it[i].pages) {
            chain_ok = lookup_span(s, &it[i], chain_ok);
            continue;
        }
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

/* Blocks admitting item it would add to the footprint: what is not
 * stored or has no reference (a span: of its members). */
static int64_t item_adds(const kv_pic *s, const kv_pic_item *it)
{
    if (it->dup || !it->hold) return 0;
    if (!it->pages) return it->slot < 0 || s->index.slot[it->slot].refs == 0 ? it->blocks : 0;
    if (it->slot < 0) return it->pages;
    const int32_t *refs = member_refs(s, s->index.slot[it->slot].group);
    int64_t d = 0;
    for (int32_t m = 0; m < it->pages; m++) d += refs[m] == 0;
    return d;
}

/* Blocks admitting would add to the footprint (private ones included). */
static int64_t footprint_delta(const kv_pic *s, const kv_pic_item *it, int32_t n, const kv_pic_outcome *o)
{
    int64_t d = o->private_blocks;
    for (int32_t i = 0; i < n; i++) d += item_adds(s, &it[i]);
    return d;
}

/* A reference on each present item (a span: on each present member). */
static void reference(kv_pic *s, const kv_pic_item *it, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        if (it[i].dup || it[i].slot < 0) continue;
        if (!it[i].pages) {
            ref(s, it[i].slot);
            continue;
        }
        for (int32_t m = 0; m < it[i].pages; m++)
            if (member_present(s, s->index.slot[it[i].slot].group, m)) ref_page(s, it[i].slot, m);
    }
}

/* Phase 2: reference what is present, allocate what is not. */
static void reference_and_allocate(kv_pic *s, kv_pic_item *it, int32_t n, kv_pic_outcome *o)
{
    reference(s, it, n);
    for (int32_t i = 0; i < n; i++) {
        if (it[i].pages) {
            store_span(s, &it[i], o);
            continue;
        }
        if (it[i].dup) {
            it[i].stored = it[it[i].slot].stored;
            it[i].slot = it[it[i].slot].slot;
            continue;
        }
        if (it[i].slot < 0) it[i].slot = store_new(s, &it[i], o->private_blocks);
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

/* A held span in release order: its stretches of consecutive held
 * members, the upper first, each as −1 − slot, lo, hi. */
static void ticket_span(const kv_pic *s, kv_pic_ticket *t, const kv_pic_item *it)
{
    int32_t g = s->index.slot[it->slot].group, hi = -1;
    for (int32_t m = it->pages - 1; m >= -1; m--) {
        bool held = m >= 0 && member_refs(s, g)[m] > 0;
        if (held && hi < 0) hi = m + 1;
        if (held || hi < 0) continue;
        ticket_push(t, -1 - it->slot);
        ticket_push(t, m + 1);
        ticket_push(t, hi);
        hi = -1;
    }
}

/* Phase 3: drop what is only read; list what is held in release order. */
static void settle(kv_pic *s, const kv_pic_item *it, int32_t n, kv_pic_ticket *t)
{
    t->n = 0;
    for (int32_t i = 0; i < n; i++)
        if (!it[i].dup && it[i].stored && !it[i].hold) unref(s, it[i].slot);
    for (int32_t i = n - 1; i >= 0; i--)
        if (it[i].chain && it[i].stored) {
            if (it[i].pages) ticket_span(s, t, &it[i]);
            else ticket_push(t, it[i].slot);
        }
    for (int32_t i = 0; i < n; i++)
        if (!it[i].chain && !it[i].dup && it[i].stored && it[i].hold) ticket_push(t, it[i].slot);
}

int kv_pic_admit(kv_pic *s, const sim_request *r, bool only_if_fits, kv_pic_ticket *t, kv_pic_outcome *o)
{
    sim_segment whole;
    sim_request plain;
    r = kv_pic_as_admitted(s->pol, r, &plain, &whole);
    int64_t max = kv_pic_items_max(&s->p, r);
    if (max > s->items_cap) s->items = sim_xrealloc(s->items, (size_t)(s->items_cap = max) * sizeof *s->items);
    int32_t n = s->pol->items(&s->p, r, s->items);
    for (int32_t i = 0; i < n; i++) {
        kv_pic_item *it = &s->items[i];
        if (!it->tag) it->tag = kv_pic_tag(it->key, -1);
        if (it->pages > s->width || !it->chain || !it->hold) it->pages = 0; /* what a span must be */
    }
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
    for (int32_t i = 0; i < t->n; i++) {
        int32_t v = t->slots[i];
        if (v >= 0) unref(s, v);
        else release_pages(s, -1 - v, t->slots[i + 1], t->slots[i + 2]), i += 2;
    }
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
