/* tests/test_evict.c — every eviction policy against the same small trace,
 * simulated by hand (libCacheSim style), plus the contract every policy
 * must keep: pinned blocks are never victims, all-pinned is KV_FULL, and a
 * long random stream keeps size, inserts and evictions consistent.
 *
 * The trace: capacity 3 blocks, keys D C B D E C B C A B A (positions 0..10). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/store/evict/registry.h"
#include "sim/store/kvstore.h"
#include "tests/testutil.h"

enum { A = 1, B, C, D, E };
static const uint64_t SEQ[] = {D, C, B, D, E, C, B, C, A, B, A};
#define NSEQ (sizeof SEQ / sizeof SEQ[0])

static kv_cache *new_cache(const char *policy, int64_t cap, const char *params_json)
{
    kv_cache *c;
    sim_err err;
    json_t *params = params_json ? json_loads(params_json, 0, NULL) : NULL;
    assert_int_equal(kv_cache_new(&c, policy, cap, params, &err), 0);
    json_decref(params);
    return c;
}

/* Replays SEQ; checks the hit pattern (1 = hit at that position), the
 * eviction count and the final resident set {r0, r1, r2}. */
static void check_policy(const char *policy, const char *hits, int64_t evictions, const uint64_t resident[3])
{
    kv_cache *c = new_cache(policy, 3, NULL);
    for (size_t i = 0; i < NSEQ; i++) {
        kv_result r = kv_cache_access(c, SEQ[i], SIM_CACHE_DEFAULT);
        if ((r == KV_HIT) != (hits[i] == '1'))
            fail_msg("%s: position %zu: expected %s", policy, i, hits[i] == '1' ? "hit" : "miss");
    }
    int64_t nhits = 0;
    for (size_t i = 0; i < NSEQ; i++) nhits += hits[i] == '1';
    const kv_cache_stats *st = kv_cache_get_stats(c);
    assert_int_equal(st->hits, nhits);
    assert_int_equal(st->misses, (int64_t)NSEQ - nhits);
    assert_int_equal(st->evictions, evictions);
    for (int k = 0; k < 3; k++) assert_true(kv_cache_contains(c, resident[k]));
    kv_cache_free(c);
}

/* LRU (list MRU first):
 *  D [D]  C [C D]  B [B C D]  D hit [D B C]  E evict C [E D B]
 *  C evict B [C E D]  B evict D [B C E]  C hit [C B E]  A evict E [A C B]
 *  B hit [B A C]  A hit [A B C]                → 4 hits, 4 evictions */
static void test_lru(void **state) { check_policy("lru", "00010001011", 4, (const uint64_t[]){A, B, C}); }

/* FIFO (queue newest first; hits do not move):
 *  D C B → [B C D]; D hit; E evicts D [E B C]; C, B, C hit;
 *  A evicts C [A E B]; B hit; A hit              → 6 hits, 2 evictions */
static void test_fifo(void **state) { check_policy("fifo", "00010111011", 2, (const uint64_t[]){A, E, B}); }

/* LFU (count; ties → least recent). No aging happens: the default period is
 * 10 × resident blocks, and at access n (n ≤ 11) min(n, 3) blocks are
 * resident, so the counter n stays below 10 · min(n, 3).
 *  D1 C1 B1; D hit → D2; E: bucket 1 = [B C] → evict C, E1;
 *  C: bucket 1 = [E B] → evict B; B: [C E] → evict E; C hit → C2;
 *  A: bucket 1 = [B] → evict B; B: evict A; A: evict B
 *  → 2 hits (D, C), 6 evictions, resident {A, C, D} */
static void test_lfu(void **state) { check_policy("lfu", "00010001000", 6, (const uint64_t[]){A, C, D}); }

/* SIEVE (queue newest first, v = visited, hand starts at the tail):
 *  D C B → [B C D]; D hit: vD
 *  E: hand at D: visited → clear, move to C: unvisited → evict C; hand → B.
 *     [E B D]
 *  C: hand B unvisited → evict B; hand → E. [C E D]
 *  B: hand E unvisited → evict E; hand → C. [B C D]
 *  C hit: vC
 *  A: hand C visited → clear, move to B → evict B; hand → (head) wraps. [A C D]
 *  B: hand at tail D (cleared earlier) → evict D; hand → C. [B A C]
 *  A hit                                      → 3 hits, 5 evictions */
static void test_sieve(void **state) { check_policy("sieve", "00010001001", 5, (const uint64_t[]){A, B, C}); }

/* S3-FIFO, capacity 3: small share ⌊0.1·3⌋ = 0, so main's target is 3 and
 * the small queue is used until main is over it; ghost holds ⌊0.9·3⌋ = 2
 * keys; move to main after ≥ 2 hits in small.
 *  D C B → S [B C D]; D hit fD=1
 *  E: M empty → evict from S: tail D, fD=1 < 2 → evicted, G [D]. S [E B C]
 *  C hit fC=1, B hit fB=1, C hit fC=2
 *  A: S tail C, fC=2 → moves to M (f=0); tail B, fB=1 → evicted, G [D B].
 *     S [A E], M [C]
 *  B: S tail E, f=0 → evicted, G full → D forgotten, G [B E]; B is in the
 *     ghost → inserted into M [B C]. S [A]
 *  A hit                                      → 5 hits, 3 evictions */
static void test_s3fifo(void **state) { check_policy("s3fifo", "00010111001", 3, (const uint64_t[]){A, B, C}); }

/* Belady with bypass, next uses from the positions in SEQ (∞ = never):
 *  0 D→3  1 C→5  2 B→6  3 D→∞  4 E→∞  5 C→7  6 B→9  7 C→∞  8 A→10  9 B→∞  10 A→∞
 *  D C B inserted; D hit (now ∞); E: full, E's next use ∞ is not sooner than
 *  the furthest resident (D, ∞) → not admitted; C hit, B hit, C hit;
 *  A: next use 10 < ∞ → admitted, evicting an ∞ block (D or C); B hit, A hit
 *  → 6 hits (≥ every online policy above), 1 eviction, 1 not admitted. */
static void test_belady(void **state)
{
    const int64_t next[] = {3, 5, 6, INT64_MAX, INT64_MAX, 7, 9, INT64_MAX, 10, INT64_MAX, INT64_MAX};
    kv_cache *c = new_cache("belady", 3, NULL);
    for (size_t i = 0; i < NSEQ; i++) {
        const kv_evict_req req = {.key = SEQ[i], .cls = SIM_CACHE_DEFAULT, .next_use = next[i]};
        kv_cache_access_req(c, &req);
    }
    const kv_cache_stats *st = kv_cache_get_stats(c);
    assert_int_equal(st->hits, 6);
    assert_int_equal(st->evictions, 1);
    assert_int_equal(st->not_admitted, 1);
    assert_true(kv_cache_contains(c, A) && kv_cache_contains(c, B));
    kv_cache_free(c);
}

/* LFU aging, capacity 2, lfu_age_period 4:
 *  A ×4 → counts 1,2,3,4; the 4th access ages: A = 4/2 = 2.
 *  B, B → B = 2. C misses: bucket 2 holds [B A] (newest first) → A, the
 *  least recent, is evicted. Without aging A keeps 4 and B (2) is evicted. */
static void test_lfu_aging(void **state)
{
    const uint64_t seq[] = {A, A, A, A, B, B, C};
    for (int aging = 0; aging <= 1; aging++) {
        kv_cache *c = new_cache("lfu", 2, aging ? "{\"lfu_age_period\": 4}" : "{\"lfu_age_period\": 1000}");
        for (size_t i = 0; i < 7; i++) kv_cache_access(c, seq[i], SIM_CACHE_DEFAULT);
        assert_true(kv_cache_contains(c, C));
        assert_true(kv_cache_contains(c, aging ? B : A));
        assert_false(kv_cache_contains(c, aging ? A : B));
        kv_cache_free(c);
    }
}

/* Every online policy: with 1 and 3 pinned in a full tier of 4, a stream of
 * 200 new keys never evicts them; with all four pinned, a miss is KV_FULL. */
static void test_pins_all_policies(void **state)
{
    for (size_t p = 0; p < kv_evict_count(); p++) {
        const kv_evict_entry *e = kv_evict_at(p);
        kv_cache *c = new_cache(e->name, 4, NULL);
        for (uint64_t k = 1; k <= 4; k++) kv_cache_access(c, k, SIM_CACHE_DEFAULT);
        kv_cache_access(c, 1, SIM_CACHE_DEFAULT); /* make 1 and 3 look worth keeping too */
        kv_cache_pin(c, 1);
        kv_cache_pin(c, 3);
        for (uint64_t k = 100; k < 300; k++) {
            const kv_evict_req req = {.key = k, .cls = SIM_CACHE_DEFAULT, .next_use = (int64_t)k};
            kv_cache_access_req(c, &req);
            if (!kv_cache_contains(c, 1) || !kv_cache_contains(c, 3)) fail_msg("%s evicted a pinned block", e->name);
        }
        uint64_t others[2], n = 0;
        for (uint64_t k = 100; k < 300 && n < 2; k++)
            if (kv_cache_contains(c, k)) others[n++] = k;
        if (n == 2) {
            kv_cache_pin(c, others[0]);
            kv_cache_pin(c, others[1]);
            const kv_evict_req req = {.key = 999, .cls = SIM_CACHE_DEFAULT, .next_use = 0};
            if (kv_cache_access_req(c, &req) != KV_FULL) fail_msg("%s: all pinned must be KV_FULL", e->name);
        }
        kv_cache_free(c);
    }
}

/* Every policy on a random stream with random pins and removals: size never
 * exceeds capacity and inserts − evictions − removals = size throughout. */
static void test_random_consistency(void **state)
{
    for (size_t p = 0; p < kv_evict_count(); p++) {
        const kv_evict_entry *e = kv_evict_at(p);
        kv_cache *c = new_cache(e->name, 50, NULL);
        srand(7);
        int64_t removed = 0;
        for (int i = 0; i < 20000; i++) {
            uint64_t k = (uint64_t)(rand() % 200);
            const kv_evict_req req = {.key = k, .cls = SIM_CACHE_DEFAULT, .next_use = i + rand() % 500};
            kv_cache_access_req(c, &req);
            int op = rand() % 20;
            if (op == 0) kv_cache_pin(c, k);
            else if (op == 1) kv_cache_unpin(c, (uint64_t)(rand() % 200));
            else if (op == 2) removed += kv_cache_remove(c, (uint64_t)(rand() % 200));
            const kv_cache_stats *st = kv_cache_get_stats(c);
            if (kv_cache_size(c) > 50 || st->inserts - st->evictions - removed != kv_cache_size(c))
                fail_msg("%s: inconsistent at access %d", e->name, i);
        }
        kv_cache_free(c);
    }
}

/* An unbounded tier ("inf" bytes: SIM_COUNT_UNBOUNDED slots, issue 27
 * item 5) under every policy, S3-FIFO's ghost at its largest ratio (10 ×
 * the capacity once overflowed an int64 cast): 5,000 keys all stay, a
 * second pass hits every one, nothing is evicted, and no policy allocates
 * for the capacity (ASan refuses an allocation of 2^61 slots). */
static void test_unbounded_all_policies(void **state)
{
    for (size_t p = 0; p < kv_evict_count(); p++) {
        const kv_evict_entry *e = kv_evict_at(p);
        kv_cache *c = new_cache(e->name, SIM_COUNT_UNBOUNDED, "{\"s3fifo_ghost_ratio\": 10}");
        assert_int_equal(kv_cache_capacity(c), SIM_COUNT_UNBOUNDED);
        for (int pass = 0; pass < 2; pass++)
            for (uint64_t k = 1; k <= 5000; k++) {
                const kv_evict_req req = {.key = k, .cls = SIM_CACHE_DEFAULT, .next_use = (int64_t)k + 5000};
                if ((kv_cache_access_req(c, &req) == KV_HIT) != (pass == 1))
                    fail_msg("%s: key %llu pass %d", e->name, (unsigned long long)k, pass);
            }
        assert_int_equal(kv_cache_get_stats(c)->evictions, 0);
        assert_int_equal(kv_cache_size(c), 5000);
        kv_cache_free(c);
    }
    assert_int_equal(sim_count_in(1.0 / 0.0, 512), SIM_COUNT_UNBOUNDED);
    assert_int_equal(sim_count_in(1e300, 1), SIM_COUNT_UNBOUNDED);
    assert_int_equal(sim_count_in(1e18, 5242880), 190734863281);
    assert_int_equal(sim_count_in(0.0 / 0.0, 1), 0);
    assert_int_equal(sim_count_in(1, 5242880), 0);
}

/* The same through the binary: an "inf" tier under S3-FIFO with its ghost
 * at 10 × the capacity gives what 1e18 gives (the count of inf once
 * overflowed the ghost's int64 cast), in a timed run and a cache-only
 * replay of the bundled trace. */
static void test_unbounded_s3fifo_cli(void **state)
{
    static const char *const cmd[] = {
        "run --json --set kvstore.eviction=s3fifo --set policy.params='{\"s3fifo_ghost_ratio\": 10}' "
        "--set kvstore.dram_bytes=%s",
        "hitrate --json --trace traces/default.jsonl --policy s3fifo --params '{\"s3fifo_ghost_ratio\": 10}' "
        "--tiers hbm=%s"};
    for (size_t i = 0; i < 2; i++) {
        double hit[2];
        for (int inf = 0; inf < 2; inf++) {
            char args[512];
            snprintf(args, sizeof args, cmd[i], inf ? "inf" : "1e18");
            json_t *j = tu_kvsim_json(args);
            const json_t *o = i ? json_array_get(json_object_get(j, "points"), 0) : j;
            hit[inf] = json_number_value(json_object_get(o, "hit_rate_tokens"));
            json_decref(j);
        }
        assert_true(hit[0] > 0.6);
        assert_double_equal(hit[1], hit[0], 0);
    }
}

static void test_bad_params(void **state)
{
    kv_cache *c;
    sim_err err;
    json_t *params = json_loads("{\"lfu_max_freq\": 0}", 0, NULL);
    assert_int_equal(kv_cache_new(&c, "lfu", 4, params, &err), -1);
    assert_non_null(strstr(err.msg, "lfu_max_freq"));
    json_decref(params);
    params = json_loads("{\"s3fifo_small_ratio\": \"big\"}", 0, NULL);
    assert_int_equal(kv_cache_new(&c, "s3fifo", 4, params, &err), -1);
    assert_non_null(strstr(err.msg, "s3fifo_small_ratio"));
    json_decref(params);
    assert_int_equal(kv_evict_find("nosuch", &(const kv_evict_entry *){NULL}, &err), -1);
    assert_non_null(strstr(err.msg, "known: lru, fifo"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lru),
        cmocka_unit_test(test_fifo),
        cmocka_unit_test(test_lfu),
        cmocka_unit_test(test_sieve),
        cmocka_unit_test(test_s3fifo),
        cmocka_unit_test(test_belady),
        cmocka_unit_test(test_lfu_aging),
        cmocka_unit_test(test_pins_all_policies),
        cmocka_unit_test(test_random_consistency),
        cmocka_unit_test(test_unbounded_all_policies),
        cmocka_unit_test(test_unbounded_s3fifo_cli),
        cmocka_unit_test(test_bad_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
