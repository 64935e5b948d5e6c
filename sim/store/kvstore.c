/* sim/store/kvstore.c — the simulated KV cache (see kvstore.h): one tier
 * (kv_cache) and the multi-node, multi-tier store (kv_store).
 *
 * A kv_cache owns slots 0..nslots-1 (grown on demand up to its capacity, so
 * an "inf" tier costs only what it holds), an index key → slot, and per-slot
 * key, pin count and cache class. The eviction policy (sim/store/evict/evict.h) keeps
 * its own per-slot ordering; the core drives it through hooks.
 *
 * A kv_store has, per node, up to three kv_caches: HBM (the instance's
 * private prefix cache), DRAM and SSD (the "store tiers", Mooncake Store).
 * DRAM and SSD of a node are exclusive: eviction from DRAM demotes to SSD,
 * a promoted SSD read moves the block up. A replica index counts, per key,
 * the nodes whose store tiers hold it; it is updated on every insert, drop
 * and node failure, so it is exact at all times. A one-node store keeps no
 * such index: node 0's own tiers answer every replica question, which
 * spares the hot path of single-pool `kvsim hitrate` a second hash table. */
#include "sim/store/kvstore.h"

#include <stdlib.h>
#include <string.h>

#include "sim/store/evict/registry.h"
#include "sim/store/holders.h"
#include "sim/index/keymap.h"

/* ======================================================================== */
/* kv_cache: one tier                                                        */
/* ======================================================================== */

#define INITIAL_SLOTS 1024

/* A tier's place in its store (defined with kv_store below). */
typedef struct tier_ref tier_ref;
/* The tier's index gained or lost key: the store's holder index follows. */
static void holders_in(const tier_ref *r, uint64_t key);
static void holders_out(const tier_ref *r, uint64_t key);

/* What the core keeps per slot, together so a victim check touches one line. */
typedef struct kv_slot {
    uint64_t key;
    int32_t pins;
    uint8_t cls; /* sim_cache_class */
} kv_slot;

struct kv_cache {
    const kv_evict_ops *ops;
    void *pol;
    int64_t capacity; /* slots allowed */
    int64_t nslots;   /* slots allocated (≤ capacity) */
    int64_t fresh;    /* slots ever handed out: [fresh, nslots) never used */
    int64_t size;     /* resident blocks */
    kv_slot *slots;   /* per slot */
    int64_t *freed;   /* stack of released slots below fresh */
    int64_t nfreed;
    sim_keymap index; /* key → slot */
    kv_evict_cb evict_cb;
    void *evict_ctx;
    bool keep_context;
    bool ever_protected;    /* a slot was ever pinned or held a context block */
    const tier_ref *member; /* the store keeps a holder index: tell it of every key in and out; else NULL */
    kv_cache_stats st;
};

static bool cache_evictable(const void *ctx, int64_t slot)
{
    const kv_cache *c = ctx;
    return c->slots[slot].pins == 0 && !(c->keep_context && c->slots[slot].cls == SIM_CACHE_CONTEXT);
}

static void cache_resize(kv_cache *c, int64_t nslots)
{
    size_t n = (size_t)nslots;
    c->slots = sim_xrealloc(c->slots, n * sizeof *c->slots);
    c->freed = sim_xrealloc(c->freed, n * sizeof *c->freed);
    c->nslots = nslots;
    c->ops->resize(c->pol, nslots);
}

int kv_cache_new(kv_cache **out, const char *policy, int64_t capacity_blocks, const json_t *params, sim_err *err)
{
    const kv_evict_entry *e;
    if (capacity_blocks < 0) return sim_errf(err, "tier capacity: %lld blocks is negative", (long long)capacity_blocks);
    if (kv_evict_find(policy, &e, err)) return -1;
    kv_cache *c = sim_xcalloc(1, sizeof *c);
    c->ops = e->ops;
    c->capacity = capacity_blocks;
    if (c->ops->create(&c->pol, capacity_blocks, params, err)) {
        free(c);
        return -1;
    }
    cache_resize(c, capacity_blocks < INITIAL_SLOTS ? capacity_blocks : INITIAL_SLOTS);
    sim_keymap_init(&c->index, c->nslots);
    *out = c;
    return 0;
}

void kv_cache_free(kv_cache *c)
{
    if (!c) return;
    c->ops->destroy(c->pol);
    sim_keymap_free(&c->index);
    free(c->slots);
    free(c->freed);
    free(c);
}

void kv_cache_set_evict_cb(kv_cache *c, kv_evict_cb cb, void *ctx)
{
    c->evict_cb = cb;
    c->evict_ctx = ctx;
}

void kv_cache_set_keep_context(kv_cache *c, bool keep) { c->keep_context = keep; }

static inline int64_t cache_find(const kv_cache *c, uint64_t key) { return sim_keymap_get(&c->index, key); }

bool kv_cache_contains(const kv_cache *c, uint64_t key) { return cache_find(c, key) >= 0; }

/* A hit: context requests promote the block to context (§5.2: the user
 * marked it for reuse), then the policy refreshes it. */
static void cache_touch(kv_cache *c, int64_t slot, const kv_evict_req *req)
{
    if (req->cls == SIM_CACHE_CONTEXT) {
        c->slots[slot].cls = SIM_CACHE_CONTEXT;
        c->ever_protected = true;
    }
    c->ops->on_hit(c->pol, slot, req);
}

static void cache_release(kv_cache *c, int64_t slot)
{
    c->ops->on_remove(c->pol, slot);
    sim_keymap_del(&c->index, c->slots[slot].key);
    c->slots[slot].pins = 0;
    c->freed[c->nfreed++] = slot;
    c->size--;
    if (c->member) holders_out(c->member, c->slots[slot].key);
}

static int64_t cache_take_slot(kv_cache *c)
{
    if (c->nfreed > 0) return c->freed[--c->nfreed];
    if (c->fresh == c->nslots) {
        int64_t n = c->nslots * 2 > INITIAL_SLOTS ? c->nslots * 2 : INITIAL_SLOTS;
        cache_resize(c, n < c->capacity ? n : c->capacity);
    }
    return c->fresh++;
}

/* Ask the policy for a victim and take it out of the policy's order (the
 * callback sees its key before it disappears). Its index entry and slot
 * are left to the caller, who reuses them. KV_NO_VICTIM when every
 * resident block is protected. */
static int64_t cache_pick_victim(kv_cache *c)
{
    const kv_evict_view view = {.evictable = cache_evictable, .ctx = c, .all = !c->ever_protected};
    int64_t v = c->ops->victim(c->pol, &view);
    if (v == KV_NO_VICTIM) return v;
    if (c->evict_cb) c->evict_cb(c->evict_ctx, c->slots[v].key, (sim_cache_class)c->slots[v].cls);
    c->ops->on_remove(c->pol, v);
    c->st.evictions++;
    return v;
}

/* The slot for a new key whose index probe ended at bucket `where`: a free
 * slot while the tier has room, else the victim's. The new key enters the
 * index before the victim's leaves it (sim_keymap_replace_at), because
 * deleting first could shift the probe run under `where`. -1 when every
 * resident block is protected. */
static int64_t cache_claim_slot(kv_cache *c, uint64_t key, uint64_t where)
{
    if (c->size < c->capacity) {
        int64_t slot = cache_take_slot(c);
        sim_keymap_put_at(&c->index, where, key, slot);
        c->size++;
        if (c->member) holders_in(c->member, key);
        return slot;
    }
    int64_t v = cache_pick_victim(c);
    if (v == KV_NO_VICTIM) return -1;
    sim_keymap_replace_at(&c->index, where, key, v, c->slots[v].key);
    if (c->member) {
        holders_out(c->member, c->slots[v].key);
        holders_in(c->member, key);
    }
    return v;
}

/* Admit → evict → insert for a key known to be absent, whose index probe
 * ended at bucket `where` (the index unchanged since). *slot_out gets the
 * new slot when the result is KV_INSERTED. */
static kv_result cache_insert_at(kv_cache *c, const kv_evict_req *req, uint64_t where, int64_t *slot_out)
{
    bool full = c->size >= c->capacity;
    if (req->cls == SIM_CACHE_EPHEMERAL || c->capacity == 0 || (full && c->ops->admit && !c->ops->admit(c->pol, req))) {
        c->st.not_admitted++;
        return KV_NOT_ADMITTED;
    }
    int64_t slot = cache_claim_slot(c, req->key, where);
    if (slot < 0) {
        c->st.full_events++;
        return KV_FULL;
    }
    c->slots[slot] = (kv_slot){.key = req->key, .pins = 0, .cls = (uint8_t)req->cls};
    c->ever_protected |= req->cls == SIM_CACHE_CONTEXT;
    c->st.inserts++;
    c->ops->on_insert(c->pol, slot, req);
    if (slot_out) *slot_out = slot;
    return KV_INSERTED;
}

/* cache_insert_at for a key not probed yet. */
static kv_result cache_insert(kv_cache *c, const kv_evict_req *req, int64_t *slot_out)
{
    uint64_t where;
    sim_keymap_probe(&c->index, req->key, &where);
    return cache_insert_at(c, req, where, slot_out);
}

kv_result kv_cache_access_req(kv_cache *c, const kv_evict_req *req)
{
    uint64_t where;
    int64_t slot = sim_keymap_probe(&c->index, req->key, &where);
    if (slot >= 0) {
        c->st.hits++;
        cache_touch(c, slot, req);
        return KV_HIT;
    }
    c->st.misses++;
    return cache_insert_at(c, req, where, NULL);
}

kv_result kv_cache_access(kv_cache *c, uint64_t key, sim_cache_class cls)
{
    const kv_evict_req req = {.key = key, .cls = cls, .next_use = KV_NEXT_USE_UNKNOWN};
    return kv_cache_access_req(c, &req);
}

bool kv_cache_remove(kv_cache *c, uint64_t key)
{
    int64_t slot = cache_find(c, key);
    if (slot < 0) return false;
    cache_release(c, slot);
    return true;
}

void kv_cache_pin(kv_cache *c, uint64_t key)
{
    int64_t slot = cache_find(c, key);
    if (slot >= 0) {
        c->slots[slot].pins++;
        c->ever_protected = true;
    }
}

void kv_cache_unpin(kv_cache *c, uint64_t key)
{
    int64_t slot = cache_find(c, key);
    if (slot >= 0 && c->slots[slot].pins > 0) c->slots[slot].pins--;
}

int32_t kv_cache_pins(const kv_cache *c, uint64_t key)
{
    int64_t slot = cache_find(c, key);
    return slot >= 0 ? c->slots[slot].pins : 0;
}

void kv_cache_reserve(kv_cache *c, int64_t blocks)
{
    int64_t n = blocks < c->capacity ? blocks : c->capacity;
    if (n > c->nslots) cache_resize(c, n);
    sim_keymap_reserve(&c->index, n);
}

void kv_cache_dense_keys(kv_cache *c, int64_t universe)
{
    sim_keymap_free(&c->index);
    sim_keymap_init_dense(&c->index, universe);
}

int64_t kv_cache_size(const kv_cache *c) { return c->size; }
int64_t kv_cache_capacity(const kv_cache *c) { return c->capacity; }
const kv_cache_stats *kv_cache_get_stats(const kv_cache *c) { return &c->st; }

/* ======================================================================== */
/* kv_store: nodes × tiers                                                   */
/* ======================================================================== */

struct tier_ref {
    kv_store *s;
    int node;
    kv_tier tier;
};

struct kv_store {
    int nodes;
    kv_scope scope;
    bool promote;
    bool ignore_class;
    kv_tier put_tier;    /* where new blocks go: DRAM, else SSD, else KV_NTIERS (none) */
    bool single_tier;    /* each node is one store tier (no HBM, not DRAM + SSD) and sees
                          only itself (one node, or local scope): kv_store_access's
                          one-pass case */
    kv_cache **caches;   /* [node * KV_NTIERS + tier], NULL = tier absent */
    tier_ref *refs;      /* eviction-callback contexts, same indexing */
    sim_keymap replicas; /* key → nodes holding it in DRAM or SSD (nodes > 1) */
    bool has_hbm;        /* nodes have an HBM tier (not in the replica counts) */
    bool has_holders;    /* cfg.holder_index: holders is kept */
    kv_holders holders;  /* key → nodes holding it in any tier, HBM included */
};

static inline kv_cache *tier_of(const kv_store *s, int node, kv_tier t) { return s->caches[node * KV_NTIERS + t]; }

static const char *const tier_names[KV_NTIERS] = {"hbm", "dram", "ssd"};

/* One more (+1) or one fewer (−1) node holds key in a store tier. */
static inline void replica_add(kv_store *s, uint64_t key, int delta)
{
    if (s->nodes > 1) sim_keymap_add(&s->replicas, key, delta);
}

/* A block leaving a node's store tier: DRAM victims move down to the SSD
 * when the node has one (and it accepts them); anything else leaves the
 * node, so its replica count drops. */
static void on_store_evict(void *ctx, uint64_t key, sim_cache_class cls)
{
    tier_ref *r = ctx;
    kv_cache *ssd = r->tier == KV_TIER_DRAM ? tier_of(r->s, r->node, KV_TIER_SSD) : NULL;
    if (ssd) {
        const kv_evict_req req = {.key = key, .cls = cls, .next_use = KV_NEXT_USE_UNKNOWN};
        if (cache_insert(ssd, &req, NULL) == KV_INSERTED) return;
    }
    replica_add(r->s, key, -1);
}

static int store_new_tier(kv_store *s, const kv_store_cfg *cfg, int node, kv_tier t, sim_err *err)
{
    kv_cache *c;
    const char *policy = cfg->policy[t] ? cfg->policy[t] : "lru";
    const kv_evict_entry *e = kv_evict_lookup(policy);
    if (e && e->offline && !cfg->next_use_hints)
        return sim_errf(err,
                        "kvstore %s tier: eviction policy '%s' needs the future and only runs in an offline "
                        "replay (kvsim hitrate --policy %s)",
                        tier_names[t], policy, policy);
    sim_err why;
    if (kv_cache_new(&c, policy, cfg->tier_blocks[t], cfg->params, &why))
        return sim_errf(err, "kvstore %s tier: %s", tier_names[t], why.msg);
    if (cfg->key_universe > 0) kv_cache_dense_keys(c, cfg->key_universe);
    if (cfg->expected_keys > 0) kv_cache_reserve(c, cfg->expected_keys);
    s->refs[node * KV_NTIERS + t] = (tier_ref){.s = s, .node = node, .tier = t};
    s->caches[node * KV_NTIERS + t] = c;
    if (s->has_holders) c->member = &s->refs[node * KV_NTIERS + t];
    return 0;
}

/* A store tier's victims need the callback when they move down (DRAM with
 * an SSD below) or when a replica index counts them (several nodes); a lone
 * tier of a one-node store just lets them go. */
static void store_set_evict_cbs(kv_store *s)
{
    for (int i = 0; i < s->nodes * KV_NTIERS; i++) {
        tier_ref *r = &s->refs[i];
        bool demotes = r->tier == KV_TIER_DRAM && tier_of(s, r->node, KV_TIER_SSD);
        if (s->caches[i] && r->tier != KV_TIER_HBM && (demotes || s->nodes > 1))
            kv_cache_set_evict_cb(s->caches[i], on_store_evict, r);
    }
}

/* The lowest store tier keeps context blocks: nothing below it to demote to. */
static void store_mark_last_level(kv_store *s)
{
    kv_tier last = s->put_tier == KV_NTIERS ? KV_NTIERS : (tier_of(s, 0, KV_TIER_SSD) ? KV_TIER_SSD : KV_TIER_DRAM);
    if (last == KV_NTIERS || s->ignore_class) return;
    for (int n = 0; n < s->nodes; n++) kv_cache_set_keep_context(tier_of(s, n, last), true);
}

int kv_store_new(kv_store **out, const kv_store_cfg *cfg, sim_err *err)
{
    if (cfg->nodes < 1) return sim_errf(err, "kvstore: nodes must be at least 1 (got %d)", cfg->nodes);
    if (cfg->scope != KV_SCOPE_GLOBAL && cfg->scope != KV_SCOPE_LOCAL)
        return sim_errf(err, "kvstore: unknown scope %d", (int)cfg->scope);
    kv_store *s = sim_xcalloc(1, sizeof *s);
    s->nodes = cfg->nodes;
    s->scope = cfg->scope;
    s->promote = cfg->promote;
    s->ignore_class = cfg->ignore_class;
    s->put_tier = cfg->tier_blocks[KV_TIER_DRAM] > 0  ? KV_TIER_DRAM
                  : cfg->tier_blocks[KV_TIER_SSD] > 0 ? KV_TIER_SSD
                                                      : KV_NTIERS;
    s->caches = sim_xcalloc((size_t)s->nodes * KV_NTIERS, sizeof *s->caches);
    s->refs = sim_xcalloc((size_t)s->nodes * KV_NTIERS, sizeof *s->refs);
    sim_keymap_init(&s->replicas, 1024);
    s->has_holders = cfg->holder_index;
    if (s->has_holders) kv_holders_init(&s->holders, s->nodes);
    for (int n = 0; n < s->nodes; n++)
        for (kv_tier t = 0; t < KV_NTIERS; t++)
            if (cfg->tier_blocks[t] > 0 && store_new_tier(s, cfg, n, t, err)) {
                kv_store_free(s);
                return -1;
            }
    store_mark_last_level(s);
    store_set_evict_cbs(s);
    s->has_hbm = cfg->tier_blocks[KV_TIER_HBM] > 0;
    s->single_tier = s->put_tier != KV_NTIERS && cfg->tier_blocks[KV_TIER_HBM] == 0 &&
                     !(cfg->tier_blocks[KV_TIER_DRAM] > 0 && cfg->tier_blocks[KV_TIER_SSD] > 0) &&
                     (s->nodes == 1 || s->scope == KV_SCOPE_LOCAL);
    *out = s;
    return 0;
}

void kv_store_free(kv_store *s)
{
    if (!s) return;
    for (int i = 0; i < s->nodes * KV_NTIERS; i++) kv_cache_free(s->caches[i]);
    free(s->caches);
    free(s->refs);
    sim_keymap_free(&s->replicas);
    if (s->has_holders) kv_holders_free(&s->holders);
    free(s);
}

static bool resident_local(const kv_store *s, int node, uint64_t key)
{
    for (kv_tier t = 0; t < KV_NTIERS; t++) {
        const kv_cache *c = tier_of(s, node, t);
        if (c && cache_find(c, key) >= 0) return true;
    }
    return false;
}

/* The holder index follows each tier's index (kv_cache.member): a key
 * entering any tier of a node makes the node a holder; a key leaving one
 * tier leaves the node only when no other tier of it still has the key
 * (HBM beside DRAM or SSD; a block demoted or promoted between DRAM and
 * SSD enters its new tier before it leaves the old). */
static void holders_in(const tier_ref *r, uint64_t key) { kv_holders_add(&r->s->holders, key, r->node); }

static void holders_out(const tier_ref *r, uint64_t key)
{
    if (!resident_local(r->s, r->node, key)) kv_holders_del(&r->s->holders, key, r->node);
}

int kv_store_nodes(const kv_store *s) { return s->nodes; }

int kv_store_prefix_runs(const kv_store *s, const uint64_t *keys, int32_t n, int32_t *run)
{
    if (!s->has_holders) return -1;
    kv_holders_runs(&s->holders, keys, n, run);
    return 0;
}

int64_t kv_store_holder_keys(const kv_store *s) { return s->has_holders ? kv_holders_keys(&s->holders) : -1; }

static kv_tier store_tier_holding(const kv_store *s, int node, uint64_t key, int64_t *slot);

int kv_store_replicas(const kv_store *s, uint64_t key)
{
    int64_t slot;
    if (s->nodes == 1) return store_tier_holding(s, 0, key, &slot) != KV_NTIERS;
    int64_t v = sim_keymap_get(&s->replicas, key);
    return v < 0 ? 0 : (int)v;
}

/* A request's blocks are looked up one after the other, by the prefix
 * check and again by the commit: asking for all their index buckets up
 * front overlaps the cache misses instead of paying them in sequence. */
void kv_store_prefetch(const kv_store *s, int node, const uint64_t *keys, int32_t n)
{
    for (kv_tier t = 0; t < KV_NTIERS; t++) {
        const kv_cache *c = tier_of(s, node, t);
        if (c)
            for (int32_t i = 0; i < n; i++) sim_keymap_prefetch(&c->index, keys[i]);
    }
}

int32_t kv_store_prefix_local(const kv_store *s, int node, const uint64_t *keys, int32_t n)
{
    kv_store_prefetch(s, node, keys, n);
    int32_t i = 0;
    while (i < n && resident_local(s, node, keys[i])) i++;
    return i;
}

int32_t kv_store_prefix_bound(const kv_store *s, const uint64_t *keys, int32_t n)
{
    if (s->nodes == 1 || s->has_hbm) return n;
    int32_t i = 0;
    while (i < n && sim_keymap_get(&s->replicas, keys[i]) > 0) i++;
    return i;
}

int32_t kv_store_prefix_any(const kv_store *s, int node, const uint64_t *keys, int32_t n)
{
    if (s->scope == KV_SCOPE_LOCAL || s->nodes == 1) return kv_store_prefix_local(s, node, keys, n);
    int32_t i = 0;
    while (i < n && (resident_local(s, node, keys[i]) || kv_store_replicas(s, keys[i]) > 0)) i++;
    return i;
}

/* Where a node's store tiers hold key: the tier (DRAM before SSD) and slot,
 * or KV_NTIERS. */
static kv_tier store_tier_holding(const kv_store *s, int node, uint64_t key, int64_t *slot)
{
    for (kv_tier t = KV_TIER_DRAM; t < KV_NTIERS; t++) {
        const kv_cache *c = tier_of(s, node, t);
        if (c && (*slot = cache_find(c, key)) >= 0) return t;
    }
    return KV_NTIERS;
}

/* The first other node (ascending index) whose store tiers hold key, or -1. */
static int remote_holder(const kv_store *s, int node, uint64_t key, kv_tier *tier, int64_t *slot)
{
    if (s->scope == KV_SCOPE_LOCAL || s->nodes == 1 || kv_store_replicas(s, key) == 0) return -1;
    for (int h = 0; h < s->nodes; h++)
        if (h != node && (*tier = store_tier_holding(s, h, key, slot)) != KV_NTIERS) return h;
    return -1;
}

void kv_store_plan(const kv_store *s, int node, const uint64_t *keys, int32_t hit, kv_fetch_plan *plan)
{
    plan->hit_blocks = 0;
    for (kv_tier t = 0; t < KV_NTIERS; t++) plan->local[t] = plan->remote[t] = 0;
    if (plan->remote_from)
        for (int h = 0; h < s->nodes; h++) plan->remote_from[h] = 0;
    for (int32_t i = 0; i < hit; i++) {
        const kv_cache *hbm = tier_of(s, node, KV_TIER_HBM);
        int64_t slot;
        kv_tier t = hbm && cache_find(hbm, keys[i]) >= 0 ? KV_TIER_HBM : store_tier_holding(s, node, keys[i], &slot);
        if (t != KV_NTIERS) {
            plan->local[t]++;
        } else {
            int h = remote_holder(s, node, keys[i], &t, &slot);
            if (h < 0) continue;
            plan->remote[t]++;
            if (plan->remote_from) plan->remote_from[h]++;
        }
        plan->hit_blocks++;
    }
}

/* A new copy of a block in node's put tier; counts the node as a holder. */
static void store_put(kv_store *s, int node, const kv_evict_req *req)
{
    if (cache_insert(tier_of(s, node, s->put_tier), req, NULL) == KV_INSERTED) replica_add(s, req->key, 1);
}

/* Promotion (cfg.promote): move an SSD block up to DRAM, pins included. The
 * SSD copy is held pinned while DRAM makes room, because DRAM's victims are
 * demoted into that same SSD. If DRAM cannot take it, it stays in SSD. */
static void store_promote(kv_store *s, int node, int64_t slot, const kv_evict_req *req)
{
    kv_cache *ssd = tier_of(s, node, KV_TIER_SSD), *dram = tier_of(s, node, KV_TIER_DRAM);
    cache_touch(ssd, slot, req);
    kv_evict_req moved = *req;
    moved.cls = (sim_cache_class)ssd->slots[slot].cls;
    int32_t pins = ssd->slots[slot].pins++;
    ssd->ever_protected = dram->ever_protected = true;
    int64_t up;
    kv_result r = cache_insert(dram, &moved, &up);
    ssd->slots[slot].pins--;
    if (r != KV_INSERTED) return;
    dram->slots[up].pins = pins;
    cache_release(ssd, slot);
}

static void count_store_misses(kv_store *s, int node)
{
    for (kv_tier t = KV_TIER_DRAM; t < KV_NTIERS; t++) {
        kv_cache *c = tier_of(s, node, t);
        if (c) c->st.misses++;
    }
}

/* One block of a committed request on node (see kv_store_commit): the HBM
 * prefix cache is accessed; the store copy is refreshed where it lives —
 * locally (DRAM, or SSD with promotion), else on a remote holder (global
 * scope, plus a local replica when asked) — or, when no visible copy
 * exists, put into node's DRAM. Each tier counts a hit when it served the
 * block and a miss when it was consulted and did not hold it. */
static void commit_block(kv_store *s, int node, const kv_evict_req *req, bool replicate)
{
    kv_cache *hbm = tier_of(s, node, KV_TIER_HBM);
    if (hbm) kv_cache_access_req(hbm, req);
    if (s->put_tier == KV_NTIERS) return;
    int64_t slot;
    kv_tier t = store_tier_holding(s, node, req->key, &slot);
    if (t == KV_TIER_DRAM || (t == KV_TIER_SSD && !tier_of(s, node, KV_TIER_DRAM))) {
        tier_of(s, node, t)->st.hits++;
        cache_touch(tier_of(s, node, t), slot, req);
        return;
    }
    if (t == KV_TIER_SSD) {
        tier_of(s, node, KV_TIER_DRAM)->st.misses++;
        tier_of(s, node, KV_TIER_SSD)->st.hits++;
        if (s->promote) store_promote(s, node, slot, req);
        else cache_touch(tier_of(s, node, KV_TIER_SSD), slot, req);
        return;
    }
    count_store_misses(s, node);
    int h = remote_holder(s, node, req->key, &t, &slot);
    if (h < 0) {
        store_put(s, node, req);
        return;
    }
    tier_of(s, h, t)->st.hits++;
    cache_touch(tier_of(s, h, t), slot, req);
    if (replicate) store_put(s, node, req);
}

void kv_store_commit_hint(kv_store *s, int node, const uint64_t *keys, int32_t n, int32_t hit, bool replicate,
                          sim_cache_class cls, const int64_t *next_use)
{
    kv_evict_req req = {.cls = s->ignore_class ? SIM_CACHE_DEFAULT : cls};
    for (int32_t i = 0; i < n; i++) {
        req.key = keys[i];
        req.next_use = next_use ? next_use[i] : KV_NEXT_USE_UNKNOWN;
        commit_block(s, node, &req, replicate && i < hit);
    }
}

void kv_store_commit(kv_store *s, int node, const uint64_t *keys, int32_t n, int32_t hit, bool replicate,
                     sim_cache_class cls)
{
    kv_store_commit_hint(s, node, keys, n, hit, replicate, cls, NULL);
}

/* kv_store_access on a single-tier node: the prefix check and the commit
 * in one pass. Before the first absent key only hits happen, and a hit
 * evicts nothing, so every key of the leading run is still resident when
 * its turn comes: probing each key once, counting the leading hits, gives
 * exactly the prefix and the accesses of the two-pass form. */
static int32_t access_single_tier(kv_store *s, int node, kv_cache *c, const uint64_t *keys, int32_t n,
                                  kv_evict_req *req, const int64_t *next_use)
{
    int32_t hit = 0;
    bool leading = true;
    for (int32_t i = 0; i < n; i++) {
        req->key = keys[i];
        req->next_use = next_use ? next_use[i] : KV_NEXT_USE_UNKNOWN;
        uint64_t where;
        int64_t slot = sim_keymap_probe(&c->index, keys[i], &where);
        if (slot >= 0) {
            hit += leading;
            c->st.hits++;
            cache_touch(c, slot, req);
        } else {
            leading = false;
            c->st.misses++;
            if (cache_insert_at(c, req, where, NULL) == KV_INSERTED) replica_add(s, req->key, 1);
        }
    }
    return hit;
}

int32_t kv_store_access(kv_store *s, int node, const uint64_t *keys, int32_t n, sim_cache_class cls,
                        const int64_t *next_use)
{
    if (!s->single_tier) {
        int32_t hit = kv_store_prefix_any(s, node, keys, n);
        kv_store_commit_hint(s, node, keys, n, hit, false, cls, next_use);
        return hit;
    }
    kv_evict_req req = {.cls = s->ignore_class ? SIM_CACHE_DEFAULT : cls};
    return access_single_tier(s, node, tier_of(s, node, s->put_tier), keys, n, &req, next_use);
}

void kv_store_pin(kv_store *s, int node, const uint64_t *keys, int32_t n)
{
    for (kv_tier t = 0; t < KV_NTIERS; t++) {
        kv_cache *c = tier_of(s, node, t);
        if (c)
            for (int32_t i = 0; i < n; i++) kv_cache_pin(c, keys[i]);
    }
}

void kv_store_unpin(kv_store *s, int node, const uint64_t *keys, int32_t n)
{
    for (kv_tier t = 0; t < KV_NTIERS; t++) {
        kv_cache *c = tier_of(s, node, t);
        if (c)
            for (int32_t i = 0; i < n; i++) kv_cache_unpin(c, keys[i]);
    }
}

int64_t kv_store_blocks(const kv_store *s, int node, kv_tier tier)
{
    const kv_cache *c = tier_of(s, node, tier);
    return c ? c->size : 0;
}

void kv_store_drop_node(kv_store *s, int node)
{
    for (kv_tier t = 0; t < KV_NTIERS; t++) {
        kv_cache *c = tier_of(s, node, t);
        if (!c) continue;
        for (int64_t slot = 0; slot < c->fresh; slot++) {
            if (cache_find(c, c->slots[slot].key) != slot) continue; /* a released slot */
            if (t != KV_TIER_HBM) replica_add(s, c->slots[slot].key, -1);
            cache_release(c, slot);
        }
    }
}

void kv_store_stats(const kv_store *s, kv_tier tier, kv_cache_stats *out)
{
    *out = (kv_cache_stats){0};
    for (int n = 0; n < s->nodes; n++) {
        const kv_cache *c = tier_of(s, n, tier);
        if (!c) continue;
        out->hits += c->st.hits;
        out->misses += c->st.misses;
        out->inserts += c->st.inserts;
        out->evictions += c->st.evictions;
        out->full_events += c->st.full_events;
        out->not_admitted += c->st.not_admitted;
    }
}

int64_t kv_store_keys(const kv_store *s)
{
    if (s->nodes > 1) return s->replicas.count;
    return kv_store_blocks(s, 0, KV_TIER_DRAM) + kv_store_blocks(s, 0, KV_TIER_SSD);
}

/* Every key of a map with its value (a one-node store passes each resident
 * key of its store tiers with 1). */
static void foreach_entry(const sim_keymap *m, bool count_one, void (*fn)(void *ctx, uint64_t key, int replicas),
                          void *ctx)
{
    uint64_t key;
    for (uint64_t b = 0; b < sim_keymap_buckets(m); b++) {
        int64_t v = sim_keymap_at(m, b, &key);
        if (v >= 0) fn(ctx, key, count_one ? 1 : (int)v);
    }
}

void kv_store_foreach_replica(const kv_store *s, void (*fn)(void *ctx, uint64_t key, int replicas), void *ctx)
{
    if (s->nodes > 1) {
        foreach_entry(&s->replicas, false, fn, ctx);
        return;
    }
    for (kv_tier t = KV_TIER_DRAM; t < KV_NTIERS; t++)
        if (tier_of(s, 0, t)) foreach_entry(&tier_of(s, 0, t)->index, true, fn, ctx);
}
