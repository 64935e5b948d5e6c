/* tests/test_holders.c — the global block → holders index
 * (sim/store/holders.h) that the cache-aware routers read: hand-worked
 * runs over a two-word node set, the invariant that after any sequence of
 * insertions, evictions, demotions, promotions, pins and node failures the
 * index is exactly the union of the nodes' contents, and whole replays
 * routed through it bit-identical to routing by probing each instance
 * (policy.params.holder_index=0, the reference path) on every router. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sched/registry.h"
#include "sim/store/evict/registry.h"
#include "sim/store/holders.h"
#include "sim/store/kvstore.h"
#include "tests/testutil.h"

/* 70 nodes span two words. Node 0 holds a, b, c; node 1 a; node 65 a, b;
 * node 2 b only (not a: its run is 0); node 69 c only. Runs over [a, b, c]
 * by hand: 3, 1, 0, 2 (node 65), 0 (node 69), 0 everywhere else. Over
 * [] every node's run is 0; over [a] nodes 0, 1 and 65 have 1. */
static void test_hand_worked_runs(void **state)
{
    enum { a = 11, b = 22, c = 33 };
    kv_holders h;
    kv_holders_init(&h, 70);
    assert_int_equal(h.words, 2);
    kv_holders_add(&h, a, 0), kv_holders_add(&h, b, 0), kv_holders_add(&h, c, 0);
    kv_holders_add(&h, a, 1);
    kv_holders_add(&h, a, 65), kv_holders_add(&h, b, 65);
    kv_holders_add(&h, b, 2);
    kv_holders_add(&h, c, 69);
    kv_holders_add(&h, c, 69); /* idempotent */
    assert_int_equal(kv_holders_keys(&h), 3);
    const uint64_t keys[] = {a, b, c};
    int32_t run[70];
    kv_holders_runs(&h, keys, 3, run);
    for (int n = 0; n < 70; n++) {
        int32_t want = n == 0 ? 3 : n == 1 ? 1 : n == 65 ? 2 : 0;
        if (run[n] != want) fail_msg("node %d: run %d, expected %d", n, run[n], want);
    }
    kv_holders_runs(&h, keys, 1, run);
    for (int n = 0; n < 70; n++) assert_int_equal(run[n], n == 0 || n == 1 || n == 65);
    kv_holders_runs(&h, keys, 0, run);
    for (int n = 0; n < 70; n++) assert_int_equal(run[n], 0);
    assert_true(kv_holders_has(&h, c, 69) && !kv_holders_has(&h, c, 65) && !kv_holders_has(&h, 44, 0));
    /* c leaves node 0 and node 69: no holder, no entry; its row is reused. */
    kv_holders_del(&h, c, 0), kv_holders_del(&h, c, 69), kv_holders_del(&h, c, 69);
    assert_int_equal(kv_holders_keys(&h), 2);
    assert_false(kv_holders_has(&h, c, 69));
    kv_holders_add(&h, 44, 64);
    assert_int_equal(h.used, 3);
    kv_holders_runs(&h, keys, 3, run);
    assert_int_equal(run[0], 2);
    assert_int_equal(run[65], 2);
    kv_holders_free(&h);
}

static uint32_t lcg(uint32_t *r) { return (*r = *r * 1664525u + 1013904223u) >> 8; }

/* A request: a prefix of one of 16 documents of 12 blocks (keys d·16 + j),
 * so that nodes share leading runs of several blocks. */
static int32_t draw_request(uint32_t *rng, uint64_t *keys)
{
    uint64_t doc = lcg(rng) % 16;
    int32_t n = 1 + (int32_t)(lcg(rng) % 12);
    for (int32_t j = 0; j < n; j++) keys[j] = doc * 16 + (uint64_t)j;
    return n;
}

#define UNIVERSE 256

/* Every key of the universe on every node: the index's holders are the
 * nodes whose tiers hold it (kv_store_prefix_local of the one key), and it
 * holds exactly the keys some node holds. */
static void check_union(const kv_store *s)
{
    int nodes = kv_store_nodes(s);
    int32_t run[nodes];
    int64_t held = 0;
    for (uint64_t k = 0; k < UNIVERSE; k++) {
        assert_int_equal(kv_store_prefix_runs(s, &k, 1, run), 0);
        bool any = false;
        for (int n = 0; n < nodes; n++) {
            int32_t want = kv_store_prefix_local(s, n, &k, 1);
            if (run[n] != want)
                fail_msg("key %llu node %d: index says %d, tiers %d", (unsigned long long)k, n, run[n], want);
            any |= want > 0;
        }
        held += any;
    }
    assert_int_equal(kv_store_holder_keys(s), held);
}

/* One step of the random workload: a request on a random node — its
 * prefix runs on every node compared with probing each node, then
 * committed (a replica now and then, context blocks now and then), its
 * blocks pinned for a while; a node failure now and then. */
static void random_step(kv_store *s, uint32_t *rng, uint64_t pinned[8][12], int32_t *npinned, int *pnode)
{
    int nodes = kv_store_nodes(s);
    uint64_t keys[12];
    int32_t n = draw_request(rng, keys), run[nodes];
    int node = (int)(lcg(rng) % (uint32_t)nodes);
    assert_int_equal(kv_store_prefix_runs(s, keys, n, run), 0);
    for (int i = 0; i < nodes; i++) assert_int_equal(run[i], kv_store_prefix_local(s, i, keys, n));
    int32_t hit = kv_store_prefix_any(s, node, keys, n);
    kv_store_commit(s, node, keys, n, hit, lcg(rng) % 3 == 0, lcg(rng) % 5 ? SIM_CACHE_DEFAULT : SIM_CACHE_CONTEXT);
    int slot = (int)(lcg(rng) % 8);
    if (npinned[slot]) kv_store_unpin(s, pnode[slot], pinned[slot], npinned[slot]);
    memcpy(pinned[slot], keys, sizeof keys);
    npinned[slot] = n;
    pnode[slot] = node;
    kv_store_pin(s, node, keys, n);
    if (lcg(rng) % 300 == 0) {
        int down = (int)(lcg(rng) % (uint32_t)nodes);
        kv_store_drop_node(s, down);
        for (int p = 0; p < 8; p++)
            if (pnode[p] == down) npinned[p] = 0;
    }
}

static void test_index_equals_union(void **state)
{
    for (size_t p = 0; p < kv_evict_count(); p++) {
        const kv_evict_entry *e = kv_evict_at(p);
        if (e->offline) continue;
        for (int setup = 0; setup < 8; setup++) {
            kv_store_cfg cfg = {.nodes = setup & 4 ? 70 : 3,
                                .scope = setup & 1 ? KV_SCOPE_LOCAL : KV_SCOPE_GLOBAL,
                                .tier_blocks = {setup & 2 ? 0 : 8, 16, setup & 2 ? 24 : 0},
                                .promote = true,
                                .holder_index = true};
            for (kv_tier t = 0; t < KV_NTIERS; t++) cfg.policy[t] = e->name;
            kv_store *s;
            sim_err err;
            assert_int_equal(kv_store_new(&s, &cfg, &err), 0);
            uint32_t rng = 7 + (uint32_t)setup;
            uint64_t pinned[8][12];
            int32_t npinned[8] = {0};
            int pnode[8] = {0};
            int steps = cfg.nodes > 3 ? 1200 : 600;
            for (int r = 0; r < steps; r++) {
                random_step(s, &rng, pinned, npinned, pnode);
                if (r % 50 == 49) check_union(s);
            }
            assert_true(kv_store_holder_keys(s) > 0);
            kv_store_free(s);
        }
    }
    kv_store_cfg plain = {.nodes = 2, .scope = KV_SCOPE_GLOBAL, .tier_blocks = {0, 4, 0}};
    kv_store *s;
    sim_err err;
    assert_int_equal(kv_store_new(&s, &plain, &err), 0);
    int32_t run[2] = {-7, -7};
    uint64_t k = 1;
    assert_int_equal(kv_store_prefix_runs(s, &k, 1, run), -1); /* no index kept: the caller probes */
    assert_int_equal(run[0], -7);
    assert_int_equal(kv_store_holder_keys(s), -1);
    kv_store_free(s);
}

/* The whole run (summary at full precision, every requests row) of `kvsim
 * run ARGS` with policy.params.holder_index=index. */
static json_t *run_with(const char *args, int index)
{
    char *db = tu_temp_path();
    json_decref(tu_kvsim_jsonf("run --json %s --set policy.params.holder_index=%d --db %s", args, index, db));
    json_t *res = tu_run_result(db);
    tu_drop_volatile(res);
    tu_remove_temp(db);
    return res;
}

static void expect_same_runs(const char *args)
{
    json_t *probe = run_with(args, 0), *index = run_with(args, 1);
    char *a = json_dumps(probe, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    char *b = json_dumps(index, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    if (strcmp(a, b)) fail_msg("kvsim run %s:\n  probing %s\n  index   %s", args, a, b);
    free(a), free(b);
    json_decref(probe), json_decref(index);
}

/* Every router that reads the index (ops->holders: the others never keep
 * it, and do not take holder_index) on the bundled conversation trace and
 * a generated one, the default cluster; also, on the generated trace,
 * with local scope, a small DRAM over an SSD (evictions, demotions,
 * promotions), an HBM tier, 70 prefill instances (two words of holders),
 * a node failure, the PD-ratio controller moving instances, and the
 * aggregated model. */
static void test_routers_index_equals_probe(void **state)
{
    char *gen = tu_gen_text("--requests 1000 --rate 6 --seed 7"), *trace = tu_write_temp(gen);
    free(gen);
    const char *traces[] = {MOONCAKE_CONVERSATION, trace};
    const char *setups[] = {
        "--set cluster.scope=local --set kvstore.dram_bytes=4GiB --set kvstore.ssd_bytes=8GiB",
        "--set kvstore.dram_bytes=4GiB --set kvstore.ssd_bytes=8GiB --set kvstore.hbm_bytes=2GiB",
        "--set cluster.prefill=70 --set cluster.decode=4 --set kvstore.dram_bytes=2GiB",
        "--set 'faults=[{\"at_ms\":300000,\"instance\":1,\"down_ms\":120000}]'",
        "--speed 3 --config configs/clusters/mooncake-pd-ratio.json --set policy.pd_controller=dynamic",
        "--set cluster.mode=aggregated --set cluster.instances=6",
    };
    char args[1024];
    int readers = 0;
    for (size_t r = 0; r < sched_router_count(); r++) {
        const sched_router_ops *ops = sched_router_at(r);
        readers += ops->holders;
        for (size_t t = 0; ops->holders && t < 2; t++) {
            snprintf(args, sizeof args, "--trace %s --set policy.router=%s", traces[t], ops->name);
            expect_same_runs(args);
            for (size_t k = 0; t == 1 && k < sizeof setups / sizeof *setups; k++) {
                snprintf(args, sizeof args, "--trace %s --set policy.router=%s %s", traces[t], ops->name, setups[k]);
                expect_same_runs(args);
            }
        }
    }
    assert_true(readers >= 2); /* kvcentric and cache_aware_local */
    tu_remove_temp(trace);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_worked_runs),
        cmocka_unit_test(test_index_equals_union),
        cmocka_unit_test(test_routers_index_equals_probe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
