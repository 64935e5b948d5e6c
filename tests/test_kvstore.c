/* tests/test_kvstore.c — the KV store core: one LRU tier against a
 * hand-simulated sequence, pins, KV_FULL, semantics-aware classes, and the
 * multi-node store (global dedup vs local copies, replica counts, tiers,
 * promotion, fetch plans). Every expected number is derived by hand in the
 * comment above its assertion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sim/store/evict/registry.h"
#include "sim/store/kvstore.h"

static kv_cache *new_cache(const char *policy, int64_t cap)
{
    kv_cache *c;
    sim_err err;
    assert_int_equal(kv_cache_new(&c, policy, cap, NULL, &err), 0);
    return c;
}

/* Keys 1 .. n accessed in order (a fresh tier of capacity n: all inserted). */
static void fill(kv_cache *c, uint64_t n)
{
    for (uint64_t k = 1; k <= n; k++) kv_cache_access(c, k, SIM_CACHE_DEFAULT);
}

/* LRU, capacity 3, keys 1 2 3 1 4 2 5 1 2 3 (list written MRU first):
 *   1 miss [1]      2 miss [2 1]     3 miss [3 2 1]   1 HIT  [1 3 2]
 *   4 miss, evict 2 [4 1 3]          2 miss, evict 3 [2 4 1]
 *   5 miss, evict 1 [5 2 4]          1 miss, evict 4 [1 5 2]
 *   2 HIT  [2 1 5]                   3 miss, evict 5 [3 2 1]
 * → 2 hits, 8 misses, 8 inserts, 5 evictions; resident {1, 2, 3}. */
static void test_lru_hand_sequence(void **state)
{
    kv_cache *c = new_cache("lru", 3);
    const uint64_t seq[] = {1, 2, 3, 1, 4, 2, 5, 1, 2, 3};
    const kv_result want[] = {KV_INSERTED, KV_INSERTED, KV_INSERTED, KV_HIT, KV_INSERTED,
                              KV_INSERTED, KV_INSERTED, KV_INSERTED, KV_HIT, KV_INSERTED};
    for (size_t i = 0; i < 10; i++) assert_int_equal(kv_cache_access(c, seq[i], SIM_CACHE_DEFAULT), want[i]);
    const kv_cache_stats *st = kv_cache_get_stats(c);
    assert_int_equal(st->hits, 2);
    assert_int_equal(st->misses, 8);
    assert_int_equal(st->inserts, 8);
    assert_int_equal(st->evictions, 5);
    assert_int_equal(kv_cache_size(c), 3);
    assert_true(kv_cache_contains(c, 1) && kv_cache_contains(c, 2) && kv_cache_contains(c, 3));
    assert_false(kv_cache_contains(c, 4) || kv_cache_contains(c, 5));
    kv_cache_free(c);
}

/* Capacity 2: 1, 2 inserted ([2 1]); 1 pinned twice. 3 must evict 2 although
 * 1 is older ([3 1]); 4 evicts 3 ([4 1]). Pins nest: after one unpin 1 is
 * still pinned and 5 evicts 4; after the second, 6 evicts 1. */
static void test_pins_never_evicted(void **state)
{
    kv_cache *c = new_cache("lru", 2);
    fill(c, 2);
    kv_cache_pin(c, 1);
    kv_cache_pin(c, 1);
    assert_int_equal(kv_cache_pins(c, 1), 2);
    kv_cache_access(c, 3, SIM_CACHE_DEFAULT);
    assert_true(kv_cache_contains(c, 1));
    assert_false(kv_cache_contains(c, 2));
    kv_cache_access(c, 4, SIM_CACHE_DEFAULT);
    assert_true(kv_cache_contains(c, 1));
    assert_false(kv_cache_contains(c, 3));
    kv_cache_unpin(c, 1);
    kv_cache_access(c, 5, SIM_CACHE_DEFAULT);
    assert_true(kv_cache_contains(c, 1)); /* still pinned once: 4 went instead */
    assert_false(kv_cache_contains(c, 4));
    kv_cache_unpin(c, 1);
    kv_cache_access(c, 6, SIM_CACHE_DEFAULT);
    assert_false(kv_cache_contains(c, 1));
    assert_true(kv_cache_contains(c, 5) && kv_cache_contains(c, 6));
    kv_cache_unpin(c, 42); /* absent: no-op */
    kv_cache_free(c);
}

/* Everything pinned: a miss is KV_FULL, counted, nothing inserted; after an
 * unpin the next miss succeeds. */
static void test_full_when_all_pinned(void **state)
{
    kv_cache *c = new_cache("lru", 2);
    fill(c, 2);
    kv_cache_pin(c, 1);
    kv_cache_pin(c, 2);
    assert_int_equal(kv_cache_access(c, 3, SIM_CACHE_DEFAULT), KV_FULL);
    assert_int_equal(kv_cache_access(c, 4, SIM_CACHE_DEFAULT), KV_FULL);
    assert_int_equal(kv_cache_get_stats(c)->full_events, 2);
    assert_int_equal(kv_cache_size(c), 2);
    assert_false(kv_cache_contains(c, 3));
    kv_cache_unpin(c, 2);
    assert_int_equal(kv_cache_access(c, 3, SIM_CACHE_DEFAULT), KV_INSERTED);
    assert_false(kv_cache_contains(c, 2));
    kv_cache_free(c);
}

/* Ephemeral misses are not admitted; an ephemeral hit still refreshes; a
 * zero-capacity tier admits nothing; remove frees the slot for reuse. */
static void test_cache_admission_and_remove(void **state)
{
    kv_cache *c = new_cache("lru", 2);
    assert_int_equal(kv_cache_access(c, 7, SIM_CACHE_EPHEMERAL), KV_NOT_ADMITTED);
    assert_int_equal(kv_cache_get_stats(c)->not_admitted, 1);
    kv_cache_access(c, 7, SIM_CACHE_DEFAULT);
    assert_int_equal(kv_cache_access(c, 7, SIM_CACHE_EPHEMERAL), KV_HIT);
    assert_true(kv_cache_remove(c, 7));
    assert_false(kv_cache_remove(c, 7));
    assert_int_equal(kv_cache_size(c), 0);
    kv_cache_free(c);

    kv_cache *z = new_cache("lru", 0);
    assert_int_equal(kv_cache_access(z, 1, SIM_CACHE_DEFAULT), KV_NOT_ADMITTED);
    kv_cache_free(z);
}

/* Many keys through a small cache and an unbounded one: the index and the
 * lazily grown slot arrays stay consistent. 10,000 distinct keys, cap 100:
 * exactly 100 resident and 9,900 evictions; the unbounded tier keeps all. */
static void test_growth_and_bad_policy(void **state)
{
    kv_cache *c = new_cache("lru", 100), *inf = new_cache("lru", INT64_MAX);
    for (uint64_t k = 0; k < 10000; k++) {
        kv_cache_access(c, k * 7919, SIM_CACHE_DEFAULT);
        kv_cache_access(inf, k * 7919, SIM_CACHE_DEFAULT);
    }
    assert_int_equal(kv_cache_size(c), 100);
    assert_int_equal(kv_cache_get_stats(c)->evictions, 9900);
    assert_true(kv_cache_contains(c, 9999 * 7919) && !kv_cache_contains(c, 9899 * 7919));
    assert_int_equal(kv_cache_size(inf), 10000);
    kv_cache_free(c);
    kv_cache_free(inf);

    kv_cache *bad;
    sim_err err;
    assert_int_equal(kv_cache_new(&bad, "nosuch", 4, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "nosuch"));
    assert_int_equal(kv_cache_new(&bad, "lru", -1, NULL, &err), -1);
}

static kv_store *new_store(int nodes, kv_scope scope, int64_t hbm, int64_t dram, int64_t ssd, bool promote)
{
    kv_store_cfg cfg = {.nodes = nodes, .scope = scope, .tier_blocks = {hbm, dram, ssd}, .promote = promote};
    kv_store *s;
    sim_err err;
    assert_int_equal(kv_store_new(&s, &cfg, &err), 0);
    return s;
}

/* Request [10 11 12] committed on node 0, then seen by node 1.
 * Global: node 1's prefix covers all 3 (node 0 serves), commit only refreshes
 *   node 0's copies → node 1 holds 0 blocks, each key 1 replica.
 * Local: node 1 sees nothing, commit inserts its own copies → 3 blocks on
 *   node 1, each key 2 replicas. */
static void test_global_dedup_vs_local_copies(void **state)
{
    const uint64_t k[] = {10, 11, 12};
    for (int scope = KV_SCOPE_GLOBAL; scope <= KV_SCOPE_LOCAL; scope++) {
        kv_store *s = new_store(2, (kv_scope)scope, 0, 8, 0, false);
        kv_store_commit(s, 0, k, 3, 0, false, SIM_CACHE_DEFAULT);
        int32_t hit = kv_store_prefix_any(s, 1, k, 3);
        assert_int_equal(kv_store_prefix_local(s, 1, k, 3), 0);
        kv_store_commit(s, 1, k, 3, hit, false, SIM_CACHE_DEFAULT);
        bool global = scope == KV_SCOPE_GLOBAL;
        assert_int_equal(hit, global ? 3 : 0);
        assert_int_equal(kv_store_blocks(s, 1, KV_TIER_DRAM), global ? 0 : 3);
        assert_int_equal(kv_store_replicas(s, 11), global ? 1 : 2);
        assert_int_equal(kv_store_keys(s), 3);
        kv_store_free(s);
    }
}

static void count_replicas(void *ctx, uint64_t key, int replicas) { *(int64_t *)ctx += replicas; }

/* Global, 3 nodes, DRAM 2 blocks each.
 *  node 0 commits [1 2]            → replicas 1: 1, 2: 1
 *  node 1 commits [1 2], hit 2, replicate → node 1 copies: 1: 2, 2: 2
 *  node 2 commits [1 2], hit 2, replicate → 1: 3, 2: 3 (Σ = 6)
 *  node 0 commits [3 4] (new)      → node 0 evicts 1, 2: 1: 2, 2: 2
 *  node 1 fails                    → 1: 1, 2: 1, 3: 1, 4: 1 (Σ = 4) */
static void test_replica_counts(void **state)
{
    kv_store *s = new_store(3, KV_SCOPE_GLOBAL, 0, 2, 0, false);
    const uint64_t a[] = {1, 2}, b[] = {3, 4};
    kv_store_commit(s, 0, a, 2, 0, false, SIM_CACHE_DEFAULT);
    kv_store_commit(s, 1, a, 2, kv_store_prefix_any(s, 1, a, 2), true, SIM_CACHE_DEFAULT);
    kv_store_commit(s, 2, a, 2, kv_store_prefix_any(s, 2, a, 2), true, SIM_CACHE_DEFAULT);
    assert_int_equal(kv_store_replicas(s, 1), 3);
    int64_t total = 0;
    kv_store_foreach_replica(s, count_replicas, &total);
    assert_int_equal(total, 6);
    kv_store_commit(s, 0, b, 2, 0, false, SIM_CACHE_DEFAULT);
    assert_int_equal(kv_store_replicas(s, 1), 2);
    assert_int_equal(kv_store_replicas(s, 3), 1);
    kv_store_drop_node(s, 1);
    assert_int_equal(kv_store_blocks(s, 1, KV_TIER_DRAM), 0);
    assert_int_equal(kv_store_replicas(s, 2), 1);
    total = 0;
    kv_store_foreach_replica(s, count_replicas, &total);
    assert_int_equal(total, 4);
    assert_int_equal(kv_store_keys(s), 4);
    kv_store_free(s);
}

/* Global, 3 nodes, HBM 2 + DRAM 4 per node, LRU everywhere.
 *  node 0 commits [1 2 3 4]: its HBM keeps the 2 most recent (3, 4), DRAM all 4.
 *  node 1 commits [1 2] (hit 2): HBM of node 1 gets 1, 2; DRAM copies deduped.
 * Plan on node 1 for [1 2 3 4], hit 4: 1, 2 local HBM; 3, 4 remote DRAM of node 0.
 * Plan on node 2: all 4 remote DRAM from node 0.
 * Plan on node 0: 3, 4 from HBM, 1, 2 from its DRAM. */
static void test_plan_by_tier_and_holder(void **state)
{
    kv_store *s = new_store(3, KV_SCOPE_GLOBAL, 2, 4, 0, false);
    const uint64_t k[] = {1, 2, 3, 4};
    kv_store_commit(s, 0, k, 4, 0, false, SIM_CACHE_DEFAULT);
    kv_store_commit(s, 1, k, 2, kv_store_prefix_any(s, 1, k, 2), false, SIM_CACHE_DEFAULT);
    int32_t from[3];
    kv_fetch_plan p = {.remote_from = from};
    assert_int_equal(kv_store_prefix_any(s, 1, k, 4), 4);
    assert_int_equal(kv_store_prefix_local(s, 1, k, 4), 2);
    kv_store_plan(s, 1, k, 4, &p);
    assert_int_equal(p.hit_blocks, 4);
    assert_int_equal(p.local[KV_TIER_HBM], 2);
    assert_int_equal(p.local[KV_TIER_DRAM], 0);
    assert_int_equal(p.remote[KV_TIER_DRAM], 2);
    assert_int_equal(from[0], 2);
    assert_int_equal(from[2], 0);
    kv_store_plan(s, 2, k, 4, &p);
    assert_int_equal(p.remote[KV_TIER_DRAM], 4);
    assert_int_equal(from[0], 4);
    kv_store_plan(s, 0, k, 4, &p);
    assert_int_equal(p.local[KV_TIER_HBM], 2);
    assert_int_equal(p.local[KV_TIER_DRAM], 2);
    assert_int_equal(p.remote[KV_TIER_DRAM], 0);
    kv_store_free(s);
}

/* One node, DRAM 2 + SSD 2, LRU.
 *  commit [1 2 3]: DRAM [2 1] then 3 evicts 1 → demoted: DRAM {2,3}, SSD {1}.
 *  plan [1 2 3]: 1 from SSD, 2 and 3 from DRAM.
 *  pin [1] (in SSD), commit [1] with promotion: 1 moves up with its pin,
 *   DRAM evicts its LRU block 2 → SSD: DRAM {1,3}, SSD {2}. Replicas stay 1.
 * Without promotion the SSD hit leaves 1 where it is. */
static void test_ssd_demotion_and_promotion(void **state)
{
    const uint64_t k[] = {1, 2, 3};
    for (int promote = 0; promote <= 1; promote++) {
        kv_store *s = new_store(1, KV_SCOPE_GLOBAL, 0, 2, 2, promote);
        kv_store_commit(s, 0, k, 3, 0, false, SIM_CACHE_DEFAULT);
        assert_int_equal(kv_store_blocks(s, 0, KV_TIER_DRAM), 2);
        assert_int_equal(kv_store_blocks(s, 0, KV_TIER_SSD), 1);
        kv_fetch_plan p = {0};
        kv_store_plan(s, 0, k, kv_store_prefix_any(s, 0, k, 3), &p);
        assert_int_equal(p.hit_blocks, 3);
        assert_int_equal(p.local[KV_TIER_SSD], 1);
        assert_int_equal(p.local[KV_TIER_DRAM], 2);
        kv_store_pin(s, 0, k, 1);
        kv_store_commit(s, 0, k, 1, 1, false, SIM_CACHE_DEFAULT);
        kv_store_plan(s, 0, k, 3, &p);
        assert_int_equal(p.local[KV_TIER_SSD], 1);
        assert_int_equal(p.local[KV_TIER_DRAM], 2);
        kv_store_plan(s, 0, k, 1, &p);
        assert_int_equal(p.local[promote ? KV_TIER_DRAM : KV_TIER_SSD], 1);
        kv_store_plan(s, 0, k + 1, 1, &p);
        assert_int_equal(p.local[promote ? KV_TIER_SSD : KV_TIER_DRAM], 1);
        assert_int_equal(kv_store_replicas(s, 1), 1);
        assert_int_equal(kv_store_replicas(s, 2), 1);
        assert_int_equal(kv_store_keys(s), 3);
        kv_store_unpin(s, 0, k, 1);
        kv_cache_stats st;
        kv_store_stats(s, KV_TIER_SSD, &st);
        assert_int_equal(st.hits, 1);
        kv_store_free(s);
    }
}

/* Semantics-aware classes (§5.2), one node:
 *  DRAM-only, 2 blocks: context blocks [c1 c2] fill DRAM, the last level, so
 *   they are never victims: the default request [x y] finds DRAM full (2 full
 *   events) — under ignore_class x and y evict them instead.
 *  DRAM 2 + SSD 1: [c1] context, then [a b d]: b evicts c1 from DRAM → SSD;
 *   d evicts a from DRAM, whose demotion finds SSD full of context → a is
 *   dropped; c1 survives. Plain (ignore_class): a's demotion evicts c1.
 *  Ephemeral blocks are not admitted at all. */
static void test_semantics_aware_classes(void **state)
{
    const uint64_t ctx[] = {101, 102}, dflt[] = {201, 202}, one[] = {301}, abd[] = {401, 402, 403}, eph[] = {501};
    for (int plain = 0; plain <= 1; plain++) {
        kv_store_cfg cfg = {.nodes = 1, .tier_blocks = {0, 2, 0}, .ignore_class = plain};
        kv_store *s;
        sim_err err;
        assert_int_equal(kv_store_new(&s, &cfg, &err), 0);
        kv_store_commit(s, 0, ctx, 2, 0, false, SIM_CACHE_CONTEXT);
        kv_store_commit(s, 0, dflt, 2, 0, false, SIM_CACHE_DEFAULT);
        kv_cache_stats st;
        kv_store_stats(s, KV_TIER_DRAM, &st);
        assert_int_equal(st.full_events, plain ? 0 : 2);
        assert_int_equal(kv_store_prefix_any(s, 0, ctx, 2), plain ? 0 : 2);
        kv_store_commit(s, 0, eph, 1, 0, false, SIM_CACHE_EPHEMERAL);
        assert_int_equal(kv_store_replicas(s, 501), plain ? 1 : 0);
        kv_store_free(s);

        cfg.tier_blocks[KV_TIER_SSD] = 1;
        assert_int_equal(kv_store_new(&s, &cfg, &err), 0);
        kv_store_commit(s, 0, one, 1, 0, false, SIM_CACHE_CONTEXT);
        kv_store_commit(s, 0, abd, 3, 0, false, SIM_CACHE_DEFAULT);
        assert_int_equal(kv_store_replicas(s, 301), plain ? 0 : 1);
        assert_int_equal(kv_store_replicas(s, 401), plain ? 1 : 0);
        assert_int_equal(kv_store_keys(s), 3);
        kv_store_free(s);
    }
}

static void test_store_bad_config(void **state)
{
    kv_store *s;
    sim_err err;
    kv_store_cfg cfg = {.nodes = 0, .tier_blocks = {0, 4, 0}};
    assert_int_equal(kv_store_new(&s, &cfg, &err), -1);
    assert_non_null(strstr(err.msg, "nodes"));
    cfg.nodes = 2;
    cfg.policy[KV_TIER_DRAM] = "nosuch";
    assert_int_equal(kv_store_new(&s, &cfg, &err), -1);
    assert_non_null(strstr(err.msg, "dram"));
    assert_non_null(strstr(err.msg, "nosuch"));
    /* belady without next-use hints (a timed run) is refused */
    cfg.policy[KV_TIER_DRAM] = "belady";
    assert_int_equal(kv_store_new(&s, &cfg, &err), -1);
    assert_non_null(strstr(err.msg, "offline"));
    cfg.next_use_hints = true;
    assert_int_equal(kv_store_new(&s, &cfg, &err), 0);
    kv_store_free(s);
}

/* Dense block numbers (cfg.key_universe: each tier indexes keys by array)
 * are only a faster index: for every online policy, scope and tier setup,
 * the same access stream gives the same prefix hits, counters and
 * residency as the hashed index. The stream: 3000 requests of 1..8 keys
 * from a universe of 400, drawn by a fixed linear congruential generator,
 * on 3 nodes with DRAM 40 (+ SSD 60) blocks each. */
static int32_t replay_stream(kv_store *s, uint32_t *rng, int64_t *hits_total)
{
    uint64_t keys[8];
    int32_t n = 1 + (int32_t)((*rng = *rng * 1664525u + 1013904223u) >> 29);
    for (int32_t i = 0; i < n; i++) keys[i] = ((*rng = *rng * 1664525u + 1013904223u) >> 8) % 400;
    int node = (int)((*rng >> 4) % 3);
    int32_t hit = kv_store_access(s, node, keys, n, (*rng >> 12) % 7 ? SIM_CACHE_DEFAULT : SIM_CACHE_CONTEXT, NULL);
    *hits_total += hit;
    return hit;
}

static void test_dense_keys_same_replay(void **state)
{
    for (size_t p = 0; p < kv_evict_count(); p++) {
        const kv_evict_entry *e = kv_evict_at(p);
        if (e->offline) continue;
        for (int setup = 0; setup < 4; setup++) {
            kv_store_cfg cfg = {.nodes = 3,
                                .scope = setup & 1 ? KV_SCOPE_LOCAL : KV_SCOPE_GLOBAL,
                                .tier_blocks = {0, 40, setup & 2 ? 60 : 0},
                                .promote = true};
            for (kv_tier t = 0; t < KV_NTIERS; t++) cfg.policy[t] = e->name;
            kv_store *hashed, *dense;
            sim_err err;
            assert_int_equal(kv_store_new(&hashed, &cfg, &err), 0);
            cfg.key_universe = 400;
            assert_int_equal(kv_store_new(&dense, &cfg, &err), 0);
            uint32_t rng_h = 7, rng_d = 7;
            int64_t hits_h = 0, hits_d = 0;
            for (int r = 0; r < 3000; r++)
                assert_int_equal(replay_stream(hashed, &rng_h, &hits_h), replay_stream(dense, &rng_d, &hits_d));
            assert_true(hits_h > 0);
            for (kv_tier t = KV_TIER_DRAM; t < KV_NTIERS; t++) {
                kv_cache_stats a, b;
                kv_store_stats(hashed, t, &a);
                kv_store_stats(dense, t, &b);
                assert_memory_equal(&a, &b, sizeof a);
                for (int n = 0; n < 3; n++)
                    assert_int_equal(kv_store_blocks(hashed, n, t), kv_store_blocks(dense, n, t));
            }
            for (uint64_t k = 0; k < 400; k++)
                assert_int_equal(kv_store_replicas(hashed, k), kv_store_replicas(dense, k));
            kv_store_free(hashed);
            kv_store_free(dense);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lru_hand_sequence),
        cmocka_unit_test(test_pins_never_evicted),
        cmocka_unit_test(test_full_when_all_pinned),
        cmocka_unit_test(test_cache_admission_and_remove),
        cmocka_unit_test(test_growth_and_bad_policy),
        cmocka_unit_test(test_global_dedup_vs_local_copies),
        cmocka_unit_test(test_replica_counts),
        cmocka_unit_test(test_plan_by_tier_and_holder),
        cmocka_unit_test(test_ssd_demotion_and_promotion),
        cmocka_unit_test(test_semantics_aware_classes),
        cmocka_unit_test(test_store_bad_config),
        cmocka_unit_test(test_dense_keys_same_replay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
