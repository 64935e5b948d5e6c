/* tests/test_hitrate.c — `kvsim hitrate` and `kvsim plan` end to end:
 * the cache-only replay definition (docs/store.md) on tiny hand-simulated
 * traces, scopes and placements, tiers, semantics-aware classes, planning,
 * bad input, the deprecated --route spelling, and the published facts of
 * the public Mooncake trace (bundled). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/testutil.h"

/* T1, 512-token blocks (10 blocks, 5036 tokens, 5 distinct blocks):
 *   r1 [1 2 3]   input 1536
 *   r2 [1 2 4]   input 1500
 *   r3 [1 2 3 5] input 2000 */
static const char *T1 =
    "{\"timestamp\": 0, \"input_length\": 1536, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}\n"
    "{\"timestamp\": 1, \"input_length\": 1500, \"output_length\": 1, \"hash_ids\": [1, 2, 4]}\n"
    "{\"timestamp\": 2, \"input_length\": 2000, \"output_length\": 1, \"hash_ids\": [1, 2, 3, 5]}\n";

static double point(const json_t *o, size_t i, const char *field)
{
    return json_number_value(json_object_get(json_array_get(json_object_get(o, "points"), i), field));
}

/* Infinite cache: r1 0 hits; r2 hits 1 2 (2); r3 hits 1 2 3 (3) → 5/10.
 *   tokens: 0 + min(1024, 1500) + min(1536, 2000) = 2560 of 5036.
 * LRU, 3 blocks (1536 tokens), list MRU first:
 *   r1 → [3 2 1]; r2 prefix 2, 1 2 hit → [2 1 3], 4 evicts 3 → [4 2 1];
 *   r3 prefix 1 2 (3 gone) = 2 → 4/10; tokens 0 + 1024 + 1024 = 2048.
 * LRU, 2 blocks: r1 leaves [3 2], so no request ever finds block 1 → 0.
 * FIFO, 3 blocks: r1 → [3 2 1]; r2 prefix 2 (no reorder), 4 evicts 1;
 *   r3 finds no 1 → 0; 2/10.
 * Belady, 3 blocks, next uses: r1 1→3 2→4 3→8; r2 1→6 2→7 4→∞: block 4 is
 *   needed later than everything resident (8) → not admitted; r3 finds
 *   1 2 3 → 5/10 = the maximum. */
static void test_hand_trace(void **state)
{
    char *t = tu_write_temp(T1);
    json_t *o = tu_kvsim_jsonf("hitrate --trace %s --capacity-tokens inf,1536,1024 --json", t);
    assert_float_equal(json_number_value(json_object_get(o, "max_hit_rate_blocks")), 0.5, 1e-12);
    assert_float_equal(point(o, 0, "hit_rate_blocks"), 0.5, 1e-12);
    assert_float_equal(point(o, 0, "hit_rate_tokens"), 2560.0 / 5036.0, 1e-9);
    assert_float_equal(point(o, 1, "hit_rate_blocks"), 0.4, 1e-12);
    assert_float_equal(point(o, 1, "hit_rate_tokens"), 2048.0 / 5036.0, 1e-9);
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(json_object_get(o, "points"), 1), "capacity_blocks")), 3);
    assert_float_equal(point(o, 2, "hit_rate_blocks"), 0.0, 1e-12);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(o, "points"), 0), "capacity_tokens")), "inf");
    json_decref(o);
    o = tu_kvsim_jsonf("hitrate --trace %s --capacity-tokens 1536 --policy fifo --json", t);
    assert_float_equal(point(o, 0, "hit_rate_blocks"), 0.2, 1e-12);
    json_decref(o);
    o = tu_kvsim_jsonf("hitrate --trace %s --capacity-tokens 1536 --policy belady --json", t);
    assert_float_equal(point(o, 0, "hit_rate_blocks"), 0.5, 1e-12);
    json_decref(o);
    tu_remove_temp(t);
}

/* T2: [1 2] [3 4] [1 2] [1 2] on 2 nodes of 2 blocks (1024 tokens) each.
 * in_turn sends r1, r3 to node 0 and r2, r4 to node 1:
 *   global: r3 hits 2 on node 0; r4 on node 1 is served by node 0 → 4/8.
 *   local:  r3 hits 2; r4 sees only node 1's [3 4] → 2/8.
 * longest_prefix sends r4 to node 0 (prefix 2): local 4/8 as well. */
static void test_scopes_and_placements(void **state)
{
    char *t = tu_write_temp("{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [1, 2]}\n"
                            "{\"timestamp\": 1, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [3, 4]}\n"
                            "{\"timestamp\": 2, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [1, 2]}\n"
                            "{\"timestamp\": 3, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [1, 2]}\n");
    const char *cases[][3] = {{"global", "in_turn", "0.5"},
                              {"local", "in_turn", "0.25"},
                              {"local", "longest_prefix", "0.5"},
                              {"global", "longest_prefix", "0.5"}};
    for (size_t i = 0; i < 4; i++) {
        json_t *o =
            tu_kvsim_jsonf("hitrate --trace %s --capacity-tokens 1024 --nodes 2 --scope %s --placement %s --json", t,
                           cases[i][0], cases[i][1]);
        assert_float_equal(point(o, 0, "hit_rate_blocks"), atof(cases[i][2]), 1e-12);
        json_decref(o);
    }
    tu_remove_temp(t);
}

/* T1 with DRAM 2 blocks: 0 (see above). Adding an SSD of 3 blocks (no
 * promotion) gives room for all 5 distinct blocks: DRAM victims move down
 * and nothing is ever dropped, so the hit rate is the maximum 0.5. */
static void test_tiers(void **state)
{
    char *t = tu_write_temp(T1);
    json_t *o = tu_kvsim_jsonf("hitrate --trace %s --tiers dram=1024,ssd=1536 --no-promote --json", t);
    assert_float_equal(point(o, 0, "hit_rate_blocks"), 0.5, 1e-12);
    json_t *ssd = json_object_get(json_object_get(json_array_get(json_object_get(o, "points"), 0), "tiers"), "ssd");
    assert_non_null(ssd);
    assert_int_equal(json_integer_value(json_object_get(ssd, "evictions")), 0);
    json_decref(o);
    tu_remove_temp(t);
}

/* S (1024-token requests, 2 blocks each): r1 context [10 11], then default
 * [20 21], [22 23], then [10 11] again. Tiers: DRAM 2 blocks + SSD 2.
 *  semantics: r2 pushes 10 11 down to SSD; r3's victims 20 21 find the SSD
 *    full of context blocks (never dropped at the last level) and are
 *    dropped instead; r4 finds 10 11 in SSD → 2/8 = 0.25.
 *  plain LRU: r3's victims push 10 11 out of the SSD → r4 misses → 0.
 * DRAM only (2 blocks): with semantics the context blocks are never victims
 *  (r2, r3 are not stored) → 0.25; plain → 0.
 * E: ephemeral [40 41] then default [40 41], unbounded: the ephemeral
 *  blocks are not admitted → 0 with semantics, 2/4 = 0.5 without. */
static void test_semantics_aware(void **state)
{
    char *s =
        tu_write_temp("{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [10, 11], "
                      "\"cache\": \"context\"}\n"
                      "{\"timestamp\": 1, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [20, 21]}\n"
                      "{\"timestamp\": 2, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [22, 23]}\n"
                      "{\"timestamp\": 3, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [10, 11]}\n");
    const char *cases[][3] = {{"dram=1024,ssd=1024", "", "0.25"},
                              {"dram=1024,ssd=1024", "--no-semantics", "0"},
                              {"dram=1024", "", "0.25"},
                              {"dram=1024", "--no-semantics", "0"}};
    for (size_t i = 0; i < 4; i++) {
        json_t *o = tu_kvsim_jsonf("hitrate --trace %s --tiers %s %s --json", s, cases[i][0], cases[i][1]);
        assert_float_equal(point(o, 0, "hit_rate_blocks"), atof(cases[i][2]), 1e-12);
        json_decref(o);
    }
    char *e =
        tu_write_temp("{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [40, 41], "
                      "\"cache\": \"ephemeral\"}\n"
                      "{\"timestamp\": 1, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [40, 41]}\n");
    json_t *o = tu_kvsim_jsonf("hitrate --trace %s --json", e);
    assert_float_equal(point(o, 0, "hit_rate_blocks"), 0.0, 1e-12);
    assert_float_equal(json_number_value(json_object_get(o, "max_hit_rate_blocks")), 0.5, 1e-12);
    json_decref(o);
    o = tu_kvsim_jsonf("hitrate --trace %s --no-semantics --json", e);
    assert_float_equal(point(o, 0, "hit_rate_blocks"), 0.5, 1e-12);
    json_decref(o);
    tu_remove_temp(s);
    tu_remove_temp(e);
}

/* Plan on T1 (LRU; achievable 0.5): 2 blocks → 0, 3 → 0.4, 4 → 0.5 (the
 * fourth slot keeps block 3 for r3).
 *  target 1.0 → 4 blocks = 2048 tokens = 2048 × 327,680 B (LLaMA3-70B:
 *  2 · 80 layers · 8 kv heads · 128 · 2 B) = 671,088,640 B;
 *  target 0.7 (goal 0.35) → 3 blocks; 2 nodes double the total bytes. */
static void test_plan_hand_trace(void **state)
{
    char *t = tu_write_temp(T1);
    json_t *o = tu_kvsim_jsonf("plan --trace %s --target 1 --json", t);
    assert_int_equal(json_integer_value(json_object_get(o, "capacity_blocks")), 4);
    assert_float_equal(json_number_value(json_object_get(o, "capacity_tokens")), 2048, 0);
    assert_float_equal(json_number_value(json_object_get(o, "capacity_bytes")), 671088640.0, 0);
    assert_float_equal(json_number_value(json_object_get(o, "hit_rate_blocks")), 0.5, 1e-12);
    json_decref(o);
    o = tu_kvsim_jsonf("plan --trace %s --target 0.7 --nodes 2 --model llama3-70b --json", t);
    assert_int_equal(json_integer_value(json_object_get(o, "capacity_blocks")), 3);
    assert_float_equal(json_number_value(json_object_get(o, "total_bytes")), 2 * 1536 * 327680.0, 0);
    json_decref(o);
    tu_expect_stdout("plan --help", "--target");
    tu_remove_temp(t);
}

/* Each bad input exits 2 with a message naming what was wrong. */
static void test_bad_input(void **state)
{
    char *t = tu_write_temp(T1), *empty = tu_write_temp(""),
         *bad = tu_write_temp("{\"timestamp\": 0, \"input_length\": -5, \"output_length\": 1, \"hash_ids\": []}\n");
    char args[1024];
    const char *cases[][2] = {
        {"hitrate --trace %s --policy nosuch", "unknown eviction policy 'nosuch'"},
        {"hitrate --trace %s --capacity-tokens -5", "negative"},
        {"hitrate --trace %s --capacity-tokens 3x", "unknown suffix"},
        {"hitrate --trace %s --capacity-tokens abc", "not a size"},
        {"hitrate --trace %s --capacity-tokens 1e6,,2e6", "not a list"},
        {"hitrate --trace %s --scope galactic", "not a scope"},
        {"hitrate --trace %s --tiers flash=1e6", "TIER=TOKENS"},
        {"hitrate --trace %s --placement nosuch",
         "unknown placement 'nosuch' (known: bounded, longest_prefix, in_turn)"},
        {"hitrate --trace %s --route nosuch", "route: unknown placement"},
        {"hitrate --trace %s --policy belady --tiers ssd=1e6", "DRAM tier only"},
        {"hitrate --trace %s --nodes 0", "outside"},
        {"hitrate --trace %s --params '[1]'", "JSON object"},
        {"hitrate --trace %s --capacity-tokens 1e6 --tiers dram=1e6", "both set"},
        {"plan --trace %s --target 1.5", "--target"},
        {"plan --trace %s --capacity-tokens 1e6", "does not apply"},
        {"plan --trace %s --model nosuch", "nosuch"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(args, sizeof args, cases[i][0], t);
        tu_expect_exit(args, 2, cases[i][1]);
    }
    const char *files[][2] = {{empty, "empty trace"}, {bad, ":1:"}, {"/nonexistent.jsonl", "cannot open"}};
    for (size_t i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "hitrate --trace %s", files[i][0]);
        tu_expect_exit(args, 2, files[i][1]);
    }
    tu_expect_exit("hitrate", 2, "--trace");
    tu_remove_temp(t);
    tu_remove_temp(empty);
    tu_remove_temp(bad);
}

/* --params keys are checked against the policy's parameters (kvsim
 * policies): a misspelt or foreign key exits 2 naming it, the policy and
 * what the policy takes; it was taken silently and the default used. A key
 * the policy declares still works, in hitrate and plan alike. */
static void test_params_unknown_key(void **state)
{
    const char *cases[][2] = {
        {"hitrate --trace traces/default.jsonl --policy lfu --params '{\"lfu_age_perod\": 1000}'",
         "kvsim hitrate: --params: policy lfu has no parameter 'lfu_age_perod' (did you mean 'lfu_age_period'?); it "
         "takes lfu_max_freq, lfu_age_period (kvsim policies describes them)\n"},
        {"hitrate --trace traces/default.jsonl --policy s3fifo --params '{\"s3fifo_ghost\": 1}'",
         "kvsim hitrate: --params: policy s3fifo has no parameter 's3fifo_ghost'; it takes s3fifo_small_ratio, "
         "s3fifo_ghost_ratio, s3fifo_move_threshold (kvsim policies describes them)\n"},
        {"hitrate --trace traces/default.jsonl --params '{\"lfu_age_period\": 1000}'",
         "kvsim hitrate: --params: policy lru takes no parameters, not 'lfu_age_period' ('lfu_age_period' is policy "
         "lfu's: --policy lfu): drop --params\n"},
        {"hitrate --trace traces/default.jsonl --policy fifo --params '{\"foo\": 1}'",
         "kvsim hitrate: --params: policy fifo takes no parameters, not 'foo': drop --params\n"},
        {"plan --trace traces/default.jsonl --target 0.5 --policy lfu --params '{\"lfu_max_frq\": 3}'",
         "kvsim plan: --params: policy lfu has no parameter 'lfu_max_frq' (did you mean 'lfu_max_freq'?); it takes "
         "lfu_max_freq, lfu_age_period (kvsim policies describes them)\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) tu_expect_exit(cases[i][0], 2, cases[i][1]);
    tu_expect_stdout("hitrate --trace traces/default.jsonl --policy lfu --capacity-tokens 1e6 "
                     "--params '{\"lfu_age_period\": 1000, \"lfu_max_freq\": 3}'",
                     "policy lfu");
    tu_expect_stdout("plan --trace traces/default.jsonl --target 0.5 --policy s3fifo "
                     "--params '{\"s3fifo_ghost_ratio\": 0.5}'",
                     NULL);
}

/* --route, placement's old name, with the old values (the conductor's router
 * names) still works for hitrate and plan: the same output byte for byte
 * as --placement with the new value, plus one line on stderr. On the bundled
 * trace, 4 local nodes of 1e5 tokens tell the two placements apart (0.366
 * vs 0.617), so a swapped alias would show. --route with a new value is
 * accepted too; --placement says nothing on stderr. */
static void test_deprecated_route(void **state)
{
    const char *base = "--trace traces/default.jsonl --nodes 4 --scope local";
    const char *pairs[][2] = {{"round_robin", "in_turn"}, {"cache_aware_local", "longest_prefix"}};
    char args[1024], line[256];
    for (size_t i = 0; i < 2; i++)
        for (int plan = 0; plan < 2; plan++) {
            const char *cmd = plan ? "plan" : "hitrate", *cap = plan ? "--target 0.8" : "--capacity-tokens 1e5,3e5";
            snprintf(args, sizeof args, "%s %s %s --json --placement %s", cmd, base, cap, pairs[i][1]);
            cli_result now = tu_kvsim(args);
            snprintf(args, sizeof args, "%s %s %s --json --route %s", cmd, base, cap, pairs[i][0]);
            cli_result old = tu_kvsim(args);
            assert_int_equal(now.status, 0);
            assert_int_equal(old.status, 0);
            assert_string_equal(now.err, "");
            assert_string_equal(old.out, now.out);
            snprintf(line, sizeof line, "kvsim %s: --route is deprecated, use --placement (%s is now %s)\n", cmd,
                     pairs[i][0], pairs[i][1]);
            assert_string_equal(old.err, line);
            tu_free(&now);
            tu_free(&old);
        }
    json_t *a = tu_kvsim_jsonf("hitrate %s --capacity-tokens 1e5 --route round_robin --json", base);
    json_t *b = tu_kvsim_jsonf("hitrate %s --capacity-tokens 1e5 --route cache_aware_local --json", base);
    assert_float_equal(point(a, 0, "hit_rate_blocks"), 0.366382, 1e-6);
    assert_float_equal(point(b, 0, "hit_rate_blocks"), 0.61732, 1e-6);
    json_decref(a);
    json_decref(b);
    cli_result r = tu_kvsim("hitrate --trace traces/default.jsonl --nodes 2 --route in_turn");
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "kvsim hitrate: --route is deprecated, use --placement\n");
    assert_non_null(strstr(r.out, "2 nodes placed by in_turn"));
    tu_free(&r);
    tu_expect_stdout("hitrate --help", "--placement RULE");
    tu_expect_stdout("plan --help", "--placement RULE");
}

/* ---- the public Mooncake trace (traces/mooncake/README.md facts) ------- */

/* LRU, global: infinite → 0.640 (the trace's maximum), 3M tokens → 0.309. */
static void test_mooncake_lru_facts(void **state)
{
    const char *t = MOONCAKE_TRACE;
    json_t *o = tu_kvsim_jsonf("hitrate --trace %s --capacity-tokens inf,3e6 --json", t);
    assert_float_equal(json_number_value(json_object_get(o, "max_hit_rate_blocks")), 0.640, 0.0005);
    assert_float_equal(point(o, 0, "hit_rate_blocks"), 0.640, 0.002);
    assert_float_equal(point(o, 0, "hit_rate_tokens"), 0.651, 0.0005);
    assert_float_equal(point(o, 1, "hit_rate_blocks"), 0.309, 0.002);
    json_decref(o);
}

/* Over a 10-point sweep: LRU never decreases with capacity (a stack
 * policy), and Belady is at least every online policy at every capacity. */
static void test_mooncake_monotone_and_belady_bound(void **state)
{
    const char *t = MOONCAKE_TRACE;
    const char *caps = "2.5e5,5e5,1e6,2e6,3e6,5e6,1e7,1.5e7,2e7,3e7";
    const char *online[] = {"lru", "fifo", "lfu", "sieve", "s3fifo"};
    json_t *opt = tu_kvsim_jsonf("hitrate --trace %s --capacity-tokens %s --policy belady --json", t, caps);
    for (size_t p = 0; p < 5; p++) {
        json_t *o = tu_kvsim_jsonf("hitrate --trace %s --capacity-tokens %s --policy %s --json", t, caps, online[p]);
        for (size_t i = 0; i < 10; i++) {
            double h = point(o, i, "hit_rate_blocks"), b = point(opt, i, "hit_rate_blocks");
            if (h > b + 1e-12) fail_msg("%s beats belady at point %zu: %f > %f", online[p], i, h, b);
            if (p == 0 && i > 0 && h < point(o, i - 1, "hit_rate_blocks"))
                fail_msg("lru decreases between points %zu and %zu", i - 1, i);
        }
        json_decref(o);
    }
    json_decref(opt);
}

/* Mooncake Fig. 17's comparison, 10 nodes × 3M tokens each. With requests
 * spread without regard to the cache (in_turn), a local pool holds
 * each shared prefix on one node only while the global pool serves it to
 * all: the global/local ratio is > 1 (0.6396 vs 0.1676).
 *
 * With the cache-aware placement (longest_prefix: longest local prefix,
 * ties to the least-used node) the ratio on this trace is exactly 1, and
 * the test asserts why: every request returns to the node holding its
 * prefix, so each of the 43,924 distinct blocks is stored once (inserts =
 * the maximum's misses), no node's share of them exceeds its 5,859 blocks
 * (no eviction anywhere), and local reaches the trace's maximum, which no
 * pool can exceed. Fig. 17's gap needs load balancing to split prefix
 * groups across nodes: the timed replay shows it (test_conductor.c). */
static void test_mooncake_global_vs_local(void **state)
{
    const char *t = MOONCAKE_TRACE;
    double h[2][2];
    const char *scopes[] = {"global", "local"}, *placements[] = {"in_turn", "longest_prefix"};
    for (int s = 0; s < 2; s++)
        for (int r = 0; r < 2; r++) {
            json_t *o =
                tu_kvsim_jsonf("hitrate --trace %s --capacity-tokens 3e6 --nodes 10 --scope %s --placement %s --json",
                               t, scopes[s], placements[r]);
            h[s][r] = point(o, 0, "hit_rate_blocks");
            if (s == 1 && r == 1) {
                const json_t *p = json_array_get(json_object_get(o, "points"), 0);
                const json_t *dram = json_object_get(json_object_get(p, "tiers"), "dram");
                assert_int_equal(json_integer_value(json_object_get(dram, "evictions")), 0);
                assert_int_equal(json_integer_value(json_object_get(dram, "inserts")), 43924);
                assert_true(fabs(h[s][r] - json_number_value(json_object_get(o, "max_hit_rate_blocks"))) < 1e-12);
            }
            json_decref(o);
        }
    assert_true(h[1][0] > 0);
    assert_true(h[0][0] / h[1][0] > 1.0);
    assert_true(fabs(h[0][1] / h[1][1] - 1.0) < 1e-12);
}

/* DRAM 3M + SSD 30M ≥ DRAM 3M alone; plan's answer reaches its goal and one
 * block less does not. */
static void test_mooncake_tiers_and_plan(void **state)
{
    const char *t = MOONCAKE_TRACE;
    json_t *a = tu_kvsim_jsonf("hitrate --trace %s --tiers dram=3e6 --json", t);
    json_t *b = tu_kvsim_jsonf("hitrate --trace %s --tiers dram=3e6,ssd=30e6 --json", t);
    assert_true(point(b, 0, "hit_rate_blocks") >= point(a, 0, "hit_rate_blocks"));
    json_decref(a);
    json_decref(b);
    json_t *p = tu_kvsim_jsonf("plan --trace %s --target 0.9 --json", t);
    double goal = json_number_value(json_object_get(p, "goal_hit_rate_blocks"));
    json_int_t blocks = json_integer_value(json_object_get(p, "capacity_blocks"));
    json_t *o = tu_kvsim_jsonf("hitrate --trace %s --capacity-tokens %lld,%lld --json", t, (long long)blocks * 512,
                               (long long)(blocks - 1) * 512);
    assert_true(point(o, 0, "hit_rate_blocks") >= goal);
    assert_true(point(o, 1, "hit_rate_blocks") < goal);
    json_decref(o);
    json_decref(p);
}

/* Units cannot be confused (issue 12): a token capacity with a byte suffix
 * is an error saying so, not 549,755,813,888 tokens. */
static void test_byte_size_is_not_a_token_count(void **state)
{
    tu_expect_exit("hitrate --trace traces/default.jsonl --capacity-tokens 512GiB", 2,
                   "capacity-tokens: '512GiB' is a byte size, but capacity-tokens is a count");
    tu_expect_exit("hitrate --trace traces/default.jsonl --tiers dram=1TB", 2, "'1TB' is a byte size");
    tu_expect_stdout("hitrate --trace traces/default.jsonl --capacity-tokens 3M", "3000000");
    /* every capacity also in bytes, for the model's KV bytes per token:
     * LLaMA3.1-8B, 2 x 32 layers x 8 KV heads x 128 x 2 bytes = 131072 */
    json_t *j = tu_kvsim_json("hitrate --trace traces/default.jsonl --capacity-tokens 1e5 --model llama3.1-8b --json");
    assert_double_equal(json_number_value(json_object_get(j, "kv_bytes_per_token")), 131072, 0);
    assert_double_equal(
        json_number_value(json_object_get(json_array_get(json_object_get(j, "points"), 0), "capacity_bytes")),
        1e5 * 131072, 0);
    /* a node holds whole blocks: floor(1e5 / 512) = 195 of 512 tokens, 99,840 tokens */
    assert_double_equal(
        json_number_value(json_object_get(json_array_get(json_object_get(j, "points"), 0), "held_bytes")),
        195 * 512 * 131072.0, 0);
    json_decref(j);
    /* the text's GB/node is what the blocks/node beside it hold (LLaMA3-70B's
     * 327,680 bytes a token: 99,840 x 327,680 = 32.72 GB; it once printed the
     * nominal 1e5 tokens' 32.77) */
    tu_expect_stdout("hitrate --trace traces/default.jsonl --capacity-tokens 1e5",
                     "          100000          195      32.72");
    tu_expect_exit("hitrate --trace traces/default.jsonl --model nosuch", 2,
                   "unknown model preset 'nosuch': the presets are");
}

/* A placement that loads one node with everything is warned about (issue
 * 12): every prompt of this trace starts with the same system prompt, so
 * longest_prefix sends all requests to node 0 once it holds it; in_turn
 * spreads them, and so does the default, bounded: no node may take more
 * than ⌈1.25 · m / 8⌉ of the first m requests, so of the trace's 1,000 the
 * busiest serves at most 157 (share 0.157). plan checks its answer against
 * the hardware's DRAM, and with bounded its DRAM per node falls as nodes are
 * added while the total does not. */
static void test_skew_and_hardware(void **state)
{
    char *path = tu_temp_path(), args[512];
    snprintf(args, sizeof args, "trace gen --prompts 1 --session-prob 0 --requests 1000 -o %s", path);
    tu_expect_exit(args, 0, NULL);
    snprintf(args, sizeof args, "hitrate --trace %s --nodes 8 --capacity-tokens 1e5 --placement longest_prefix", path);
    tu_expect_exit(args, 0, "warning: placement longest_prefix sent 100% of the requests to node 0 of 8");
    static const char *const spread[] = {"in_turn", "bounded"};
    for (int k = 0; k < 2; k++) {
        snprintf(args, sizeof args, "hitrate --trace %s --nodes 8 --capacity-tokens 1e5 --placement %s --json", path,
                 spread[k]);
        cli_result r = tu_kvsim(args);
        assert_int_equal(r.status, 0);
        assert_null(strstr(r.err, "warning"));
        json_t *j = json_loads(r.out, 0, NULL);
        double share =
            json_number_value(json_object_get(json_array_get(json_object_get(j, "points"), 0), "busiest_node_share"));
        assert_true(share <= (k ? 0.157 : 0.125) + 1e-9);
        json_decref(j);
        tu_free(&r);
    }
    /* with sessions (the generator's default) there is more to reuse than the
     * one system prompt every node needs */
    char *sessions = tu_temp_path();
    snprintf(args, sizeof args, "trace gen --prompts 1 --requests 1000 --seed 2 -o %s", sessions);
    tu_expect_exit(args, 0, NULL);
    double per_node[3], total[3];
    for (int i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "plan --trace %s --nodes %d --scope local --json", sessions, 1 << (2 * i));
        json_t *j = tu_kvsim_json(args);
        per_node[i] = json_number_value(json_object_get(j, "capacity_bytes"));
        total[i] = json_number_value(json_object_get(j, "total_bytes"));
        json_decref(j);
    }
    printf("plan, bounded placement: per node %.3g / %.3g / %.3g bytes, total %.3g / %.3g / %.3g (1, 4, 16 nodes)\n",
           per_node[0], per_node[1], per_node[2], total[0], total[1], total[2]);
    assert_true(per_node[1] < per_node[0] && per_node[2] < per_node[1]);
    assert_true(total[1] >= total[0] && total[2] >= total[1]);
    tu_remove_temp(sessions);
    snprintf(args, sizeof args, "plan --trace %s --nodes 8 --placement longest_prefix", path);
    tu_expect_exit(args, 0, "kvsim plan: warning: placement longest_prefix sent 100%");
    snprintf(args, sizeof args, "plan --trace %s --json", path);
    json_t *j = tu_kvsim_json(args);
    assert_true(json_is_true(json_object_get(j, "fits")));
    assert_double_equal(json_number_value(json_object_get(j, "hardware_dram_bytes")), 1e12, 0);
    json_decref(j);
    snprintf(args, sizeof args, "plan --trace %s --hardware h99", path);
    tu_expect_exit(args, 2, "unknown hardware preset 'h99'");
    tu_remove_temp(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_skew_and_hardware),
        cmocka_unit_test(test_byte_size_is_not_a_token_count),
        cmocka_unit_test(test_hand_trace),
        cmocka_unit_test(test_scopes_and_placements),
        cmocka_unit_test(test_tiers),
        cmocka_unit_test(test_semantics_aware),
        cmocka_unit_test(test_plan_hand_trace),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_params_unknown_key),
        cmocka_unit_test(test_deprecated_route),
        cmocka_unit_test(test_mooncake_lru_facts),
        cmocka_unit_test(test_mooncake_monotone_and_belady_bound),
        cmocka_unit_test(test_mooncake_global_vs_local),
        cmocka_unit_test(test_mooncake_tiers_and_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
