/* tests/test_keymap.c — the two uint64 hash tables behind the KV store and
 * the replays: sim_keymap (key → value, with deletion; hashed and dense
 * modes) and sim_keyset (membership and insertion-order numbering). Small integer keys crowd the probe runs, so growth,
 * backward-shift deletion and the probe/put_at pair are all exercised;
 * each expected value is derived in the comment above its assertion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sim/index/keymap.h"
#include "sim/index/keyset.h"

/* Keys 0..999 with value 3k, then the even keys deleted: 500 remain, each
 * odd key still maps to 3k, each even key is absent and a second deletion
 * reports false. The map starts at 16 buckets, so it grows many times. */
static void test_keymap_put_get_del(void **state)
{
    sim_keymap m;
    sim_keymap_init(&m, 1);
    for (uint64_t k = 0; k < 1000; k++) sim_keymap_put(&m, k, (int64_t)(3 * k));
    assert_int_equal(m.count, 1000);
    for (uint64_t k = 0; k < 1000; k += 2) assert_true(sim_keymap_del(&m, k));
    assert_int_equal(m.count, 500);
    for (uint64_t k = 0; k < 1000; k++)
        assert_int_equal(sim_keymap_get(&m, k), k % 2 ? (int64_t)(3 * k) : SIM_KEYMAP_ABSENT);
    assert_false(sim_keymap_del(&m, 0));
    sim_keymap_free(&m);
}

/* Deleting from the middle of probe runs: in a map reserved for 4096 keys,
 * keys 1..2048 with every third one removed leave 2048 − 682 = 1366 keys
 * (the multiples of 3 up to 2048 are 3·1 .. 3·682 = 2046), each found with
 * its own value. */
static void test_keymap_delete_keeps_runs(void **state)
{
    sim_keymap m;
    sim_keymap_init(&m, 1);
    sim_keymap_reserve(&m, 4096);
    for (uint64_t k = 1; k <= 2048; k++) sim_keymap_put(&m, k, (int64_t)k);
    for (uint64_t k = 3; k <= 2048; k += 3) assert_true(sim_keymap_del(&m, k));
    assert_int_equal(m.count, 2048 - 682);
    for (uint64_t k = 1; k <= 2048; k++)
        assert_int_equal(sim_keymap_get(&m, k), k % 3 ? (int64_t)k : SIM_KEYMAP_ABSENT);
    sim_keymap_free(&m);
}

/* sim_keymap_probe reports an absent key with the bucket where
 * sim_keymap_put_at then stores it; a present key with its value. 100 keys
 * into a 16-bucket map: put_at must grow it on the way (16/4 = 4 keys fit). */
static void test_keymap_probe_put_at(void **state)
{
    sim_keymap m;
    sim_keymap_init(&m, 1);
    for (uint64_t k = 1; k <= 100; k++) {
        uint64_t where;
        assert_int_equal(sim_keymap_probe(&m, k * 7919, &where), SIM_KEYMAP_ABSENT);
        sim_keymap_put_at(&m, where, k * 7919, (int64_t)k);
    }
    assert_int_equal(m.count, 100);
    for (uint64_t k = 1; k <= 100; k++) {
        uint64_t where;
        assert_int_equal(sim_keymap_probe(&m, k * 7919, &where), (int64_t)k);
        assert_int_equal(m.e[where].key, k * 7919);
    }
    sim_keymap_free(&m);
}

/* A table of 2 MiB or more comes from sim_xmalloc_huge, aligned to 2 MiB:
 * 40,000 keys need 4 × 40,000 = 160,000 buckets, the next power of two is
 * 2^18 = 262,144, of 16 bytes each = 4 MiB. Growing into it from 16
 * buckets and the dense mode over 600,000 keys (4 bytes each = 2.4 MB) keep
 * every value, and every bucket starts empty (the fill the huge pages take). */
static void test_keymap_huge_tables(void **state)
{
    sim_keymap m;
    sim_keymap_init(&m, 1);
    for (uint64_t k = 0; k < 40000; k++) sim_keymap_put(&m, k * 2654435761u, (int64_t)k);
    assert_int_equal(m.mask + 1, 1 << 18);
    assert_int_equal((uintptr_t)m.e % (2u << 20), 0);
    for (uint64_t k = 0; k < 40000; k++) assert_int_equal(sim_keymap_get(&m, k * 2654435761u), (int64_t)k);
    assert_int_equal(sim_keymap_get(&m, 1), SIM_KEYMAP_ABSENT);
    sim_keymap_free(&m);
    sim_keymap_init_dense(&m, 600000);
    assert_int_equal((uintptr_t)m.dense % (2u << 20), 0);
    for (uint64_t k = 0; k < 600000; k++) assert_int_equal(sim_keymap_get(&m, k), SIM_KEYMAP_ABSENT);
    for (uint64_t k = 0; k < 600000; k += 7) sim_keymap_put(&m, k, (int64_t)(k / 7));
    for (uint64_t k = 0; k < 600000; k++)
        assert_int_equal(sim_keymap_get(&m, k), k % 7 ? SIM_KEYMAP_ABSENT : (int64_t)(k / 7));
    sim_keymap_free(&m);
}

/* sim_keyset_add is true only the first time; key 0 counts like any other.
 * Keys 0..4999 added twice: 5000 adds true, 5000 false, count 5000; 5000 and
 * above absent. */
static void test_keyset(void **state)
{
    sim_keyset s;
    sim_keyset_init(&s, 0);
    int added = 0;
    for (int pass = 0; pass < 2; pass++)
        for (uint64_t k = 0; k < 5000; k++) added += sim_keyset_add(&s, k);
    assert_int_equal(added, 5000);
    assert_int_equal(s.count, 5000);
    for (uint64_t k = 0; k < 5100; k++) assert_int_equal(sim_keyset_has(&s, k), k < 5000);
    sim_keyset_free(&s);
}

/* A plain set (no numbers) answers as a numbered one: the same adds, the
 * same count and membership through several growths (keys 0..4999 from
 * 16 buckets), and no number array. */
static void test_keyset_plain(void **state)
{
    sim_keyset plain, numbered;
    sim_keyset_init_plain(&plain, 0);
    sim_keyset_init(&numbered, 0);
    for (int pass = 0; pass < 2; pass++)
        for (uint64_t k = 0; k < 5000; k++)
            assert_int_equal(sim_keyset_add(&plain, k * 7919), sim_keyset_add(&numbered, k * 7919));
    assert_null(plain.num);
    assert_int_equal(plain.count, 5000);
    assert_int_equal(plain.mask, numbered.mask);
    for (uint64_t k = 0; k < 5100; k++) assert_int_equal(sim_keyset_has(&plain, k * 7919), k < 5000);
    sim_keyset_free(&plain);
    sim_keyset_free(&numbered);
}

/* Dense mode follows the same protocol: the probe of an absent key names
 * the key itself as its bucket; put_at, put, del and add keep count. Keys
 * 0..99 of a universe of 100 with value k+1, then the multiples of 3
 * deleted (0, 3, .., 99: 34 keys) leave 66; add(7, +5) gives 8 + 5 = 13,
 * add(7, −13) removes key 7 (65 left). Iterating the buckets visits each
 * remaining key once with its value: Σ (k+1) over the 65 keys = Σ_{0..99}
 * (k+1) − Σ over the multiples of 3 (3j+1, j = 0..33) − 8 = 5050 − 1717 − 8
 * = 3325. */
static void test_keymap_dense(void **state)
{
    sim_keymap m;
    sim_keymap_init_dense(&m, 100);
    for (uint64_t k = 0; k < 100; k++) {
        uint64_t where;
        assert_int_equal(sim_keymap_probe(&m, k, &where), SIM_KEYMAP_ABSENT);
        assert_int_equal(where, k);
        sim_keymap_put_at(&m, where, k, (int64_t)k + 1);
    }
    assert_int_equal(m.count, 100);
    for (uint64_t k = 0; k < 100; k += 3) assert_true(sim_keymap_del(&m, k));
    assert_false(sim_keymap_del(&m, 0));
    assert_int_equal(m.count, 66);
    assert_int_equal(sim_keymap_add(&m, 7, 5), 13);
    assert_int_equal(sim_keymap_add(&m, 7, -13), 0);
    assert_int_equal(m.count, 65);
    int64_t sum = 0, seen = 0;
    for (uint64_t b = 0; b < sim_keymap_buckets(&m); b++) {
        uint64_t key;
        int64_t v = sim_keymap_at(&m, b, &key);
        if (v < 0) continue;
        assert_int_equal(v, (int64_t)key + 1);
        sum += v;
        seen++;
    }
    assert_int_equal(seen, 65);
    assert_int_equal(sum, 3325);
    sim_keymap_put(&m, 5, 40);
    assert_int_equal(sim_keymap_get(&m, 5), 40);
    assert_int_equal(m.count, 65);
    sim_keymap_free(&m);
}

/* sim_keymap_replace_at, in both modes: keys 0..9 hold 100+k; key 20 (absent,
 * probed) takes over key 4's value and key 4 leaves: 20 → 104, 4 absent,
 * still 10 keys, and every other key keeps its value. */
static void test_keymap_replace_at(void **state)
{
    for (int dense = 0; dense < 2; dense++) {
        sim_keymap m;
        if (dense) sim_keymap_init_dense(&m, 32);
        else sim_keymap_init(&m, 1);
        for (uint64_t k = 0; k < 10; k++) sim_keymap_put(&m, k, (int64_t)(100 + k));
        uint64_t where;
        assert_int_equal(sim_keymap_probe(&m, 20, &where), SIM_KEYMAP_ABSENT);
        sim_keymap_replace_at(&m, where, 20, sim_keymap_get(&m, 4), 4);
        assert_int_equal(sim_keymap_get(&m, 20), 104);
        assert_int_equal(sim_keymap_get(&m, 4), SIM_KEYMAP_ABSENT);
        assert_int_equal(m.count, 10);
        for (uint64_t k = 0; k < 10; k++)
            if (k != 4) assert_int_equal(sim_keymap_get(&m, k), (int64_t)(100 + k));
        sim_keymap_free(&m);
    }
}

/* sim_keyset_number numbers keys in the order they first arrive, through
 * growth (the set starts at 16 buckets) and for the key 0: the stream
 * 900, 0, 900, 5, 0, 7 gives 0, 1, 0, 2, 1, 3; then keys 1000..4999 get
 * 4..4003, and every key keeps its number when asked again. */
static void test_keyset_numbering(void **state)
{
    sim_keyset s;
    sim_keyset_init(&s, 0);
    const uint64_t stream[] = {900, 0, 900, 5, 0, 7};
    const int64_t expect[] = {0, 1, 0, 2, 1, 3};
    for (int i = 0; i < 6; i++) assert_int_equal(sim_keyset_number(&s, stream[i]), expect[i]);
    for (uint64_t k = 1000; k < 5000; k++) assert_int_equal(sim_keyset_number(&s, k), (int64_t)k - 996);
    assert_int_equal(s.count, 4004);
    for (uint64_t k = 1000; k < 5000; k++) assert_int_equal(sim_keyset_number(&s, k), (int64_t)k - 996);
    assert_int_equal(sim_keyset_number(&s, 0), 1);
    assert_int_equal(sim_keyset_number(&s, 7), 3);
    assert_int_equal(s.count, 4004);
    sim_keyset_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keymap_put_get_del),  cmocka_unit_test(test_keymap_delete_keeps_runs),
        cmocka_unit_test(test_keymap_probe_put_at), cmocka_unit_test(test_keyset),
        cmocka_unit_test(test_keyset_plain),        cmocka_unit_test(test_keymap_dense),
        cmocka_unit_test(test_keymap_replace_at),   cmocka_unit_test(test_keyset_numbering),
        cmocka_unit_test(test_keymap_huge_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
