/* tests/test_pic_index.c — the PIC store's grouped Robin Hood index
 * (sim/store/pic_index.h): pages of one block named by the block's key and
 * their member, plain keys beside them, removal by slot, growth, and a
 * long random run checked against a brute-force list of (key, tag, slot)
 * triples. After every phase the table's invariants are checked: each
 * bucket holds its slot's tag, and along each probe run the distance
 * from the home bucket grows by at most one per bucket (Robin Hood). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "sim/store/pic_index.h"

static uint64_t dist(const kv_pic_index *x, uint64_t b) { return (b - kv_pic_home(x, x->e[b].tag)) & x->mask; }

/* Each bucket's tag is its slot's; a run's distances rise by ≤ 1 per
 * bucket and an entry right after an empty bucket sits at its home; the
 * count matches the occupied buckets. */
static void check_invariants(const kv_pic_index *x)
{
    int64_t count = 0;
    for (uint64_t b = 0; b <= x->mask; b++) {
        if (x->e[b].slot < 0) continue;
        count++;
        assert_int_equal(x->slot[x->e[b].slot].tag, x->e[b].tag);
        uint64_t prev = (b - 1) & x->mask;
        if (x->e[prev].slot < 0) assert_int_equal(dist(x, b), 0);
        else assert_true(dist(x, b) <= dist(x, prev) + 1);
    }
    assert_int_equal(count, x->count);
}

/* Tags: members 0–255 of a group differ only in the low 8 bits (the same
 * run hash for members 0–7), members 8–15 take another run hash, and a
 * plain key's tag is the top 32 bits of its Fibonacci hash. Homes: the 8
 * members of a run are 8 consecutive buckets of one aligned region. */
static void test_pic_tags_and_homes(void **state)
{
    uint64_t g = 0x1234567890abcdefull;
    assert_int_equal(kv_pic_tag(g, 0) & ~0xFFu, kv_pic_tag(g, 7) & ~0xFFu);
    assert_int_equal(kv_pic_tag(g, 5) & 0xFFu, 5);
    assert_int_equal(kv_pic_tag(g, 200) & 0xFFu, 200);
    assert_int_not_equal(kv_pic_tag(g, 0) & ~0xFFu, kv_pic_tag(g, 8) & ~0xFFu);
    assert_int_equal(kv_pic_tag(g, -1), (uint32_t)((g * 0x9E3779B97F4A7C15ull) >> 32));
    kv_pic_index x;
    kv_pic_index_init(&x, 1000); /* 2·1000 → 2048 buckets */
    assert_int_equal(x.mask, 2047);
    uint64_t h0 = kv_pic_home(&x, kv_pic_tag(g, 0));
    assert_int_equal(h0 % 8, 0);
    for (int m = 1; m < 8; m++) assert_int_equal(kv_pic_home(&x, kv_pic_tag(g, m)), h0 + (uint64_t)m);
    kv_pic_index_free(&x);
}

/* 32 pages of block A (slots 0–31), 32 of block B (32–63) and 100 plain
 * keys (64–163): each found by its name; page 3 of A is not page 3 of B
 * nor the plain key equal to A's key; after removing A's slots 31 down to
 * 16 (eviction order: the last page first) those are gone, the rest stay,
 * and removing a stale slot (already removed) changes nothing. */
static void test_pic_index_groups(void **state)
{
    kv_pic_index x;
    kv_pic_index_init(&x, 200);
    kv_pic_index_slots(&x, 200);
    uint64_t A = 0xa11ce, B = 0xb0b;
    for (int m = 0; m < 32; m++) {
        kv_pic_index_put(&x, A, kv_pic_tag(A, m), m);
        kv_pic_index_put(&x, B, kv_pic_tag(B, m), 32 + m);
    }
    for (int k = 0; k < 100; k++) kv_pic_index_put(&x, 1000 + (uint64_t)k, kv_pic_tag(1000 + (uint64_t)k, -1), 64 + k);
    assert_int_equal(x.count, 164);
    check_invariants(&x);
    for (int m = 0; m < 32; m++) {
        assert_int_equal(kv_pic_index_find(&x, A, kv_pic_tag(A, m)), m);
        assert_int_equal(kv_pic_index_find(&x, B, kv_pic_tag(B, m)), 32 + m);
    }
    assert_int_equal(kv_pic_index_find(&x, A, kv_pic_tag(A, 32)), -1);
    assert_int_equal(kv_pic_index_find(&x, A, kv_pic_tag(A, -1)), -1);
    for (int k = 0; k < 100; k++)
        assert_int_equal(kv_pic_index_find(&x, 1000 + (uint64_t)k, kv_pic_tag(1000 + (uint64_t)k, -1)), 64 + k);
    for (int m = 31; m >= 16; m--) kv_pic_index_remove(&x, m);
    kv_pic_index_remove(&x, 20);
    assert_int_equal(x.count, 164 - 16);
    check_invariants(&x);
    for (int m = 0; m < 32; m++) assert_int_equal(kv_pic_index_find(&x, A, kv_pic_tag(A, m)), m < 16 ? m : -1);
    kv_pic_index_free(&x);
}

/* Putting a present name again gives it the new slot; the old slot's
 * removal is then a no-op (its bucket belongs to the new slot). */
static void test_pic_index_overwrite(void **state)
{
    kv_pic_index x;
    kv_pic_index_init(&x, 16);
    kv_pic_index_slots(&x, 8);
    kv_pic_index_put(&x, 7, kv_pic_tag(7, 2), 1);
    kv_pic_index_put(&x, 7, kv_pic_tag(7, 2), 5);
    assert_int_equal(x.count, 1);
    assert_int_equal(kv_pic_index_find(&x, 7, kv_pic_tag(7, 2)), 5);
    kv_pic_index_remove(&x, 1);
    assert_int_equal(kv_pic_index_find(&x, 7, kv_pic_tag(7, 2)), 5);
    kv_pic_index_remove(&x, 5);
    assert_int_equal(x.count, 0);
    assert_int_equal(kv_pic_index_find(&x, 7, kv_pic_tag(7, 2)), -1);
    kv_pic_index_free(&x);
}

/* An index sized for 16 objects (2·16 = 32 buckets, raised to the
 * minimum of 64) takes 5,000 pages of 157 blocks (members 0–31, the last
 * block short): it doubles past half full, to 16,384 buckets (5,000 >
 * 4,096 = 8,192 / 2), and finds every page. */
static void test_pic_index_grows(void **state)
{
    kv_pic_index x;
    kv_pic_index_init(&x, 16);
    assert_int_equal(x.mask, 63);
    kv_pic_index_slots(&x, 5000);
    for (int i = 0; i < 5000; i++)
        kv_pic_index_put(&x, (uint64_t)(i / 32) * 7919, kv_pic_tag((uint64_t)(i / 32) * 7919, i % 32), i);
    assert_int_equal(x.mask, 16383);
    check_invariants(&x);
    for (int i = 0; i < 5000; i++)
        assert_int_equal(
            kv_pic_index_find(&x, (uint64_t)(i / 32) * 7919, kv_pic_tag((uint64_t)(i / 32) * 7919, i % 32)), i);
    kv_pic_index_free(&x);
}

/* 50,000 random operations on up to 2,000 live slots (a 4,096-bucket
 * table kept near half full) from 64 blocks of 32 pages and 500 plain
 * keys: put a name that is absent (the PIC store's use), or remove a
 * random live slot. After each phase of 5,000 every one of the 2,548 names
 * is looked up and compared with a brute-force list. */
typedef struct ref_obj {
    uint64_t key;
    uint32_t tag;
    int32_t slot; /* -1: absent */
} ref_obj;

static void test_pic_index_random(void **state)
{
    enum { NAMES = 64 * 32 + 500, SLOTS = 2000 };
    static ref_obj ref[NAMES];
    static int32_t owner[SLOTS]; /* slot → name, -1 free */
    for (int i = 0; i < NAMES; i++) {
        uint64_t k = i < 64 * 32 ? 0x5eed0000ull + (uint64_t)(i / 32) : 0xf00d0000ull + (uint64_t)i;
        ref[i] = (ref_obj){.key = k, .tag = kv_pic_tag(k, i < 64 * 32 ? i % 32 : -1), .slot = -1};
    }
    for (int s = 0; s < SLOTS; s++) owner[s] = -1;
    kv_pic_index x;
    kv_pic_index_init(&x, SLOTS);
    kv_pic_index_slots(&x, SLOTS);
    srand(32);
    for (int op = 1; op <= 50000; op++) {
        int s = rand() % SLOTS, i = rand() % NAMES;
        if (owner[s] >= 0) {
            kv_pic_index_remove(&x, s);
            ref[owner[s]].slot = -1;
            owner[s] = -1;
        } else if (ref[i].slot < 0) {
            kv_pic_index_put(&x, ref[i].key, ref[i].tag, s);
            ref[i].slot = s;
            owner[s] = i;
        }
        if (op % 5000) continue;
        check_invariants(&x);
        for (int j = 0; j < NAMES; j++) assert_int_equal(kv_pic_index_find(&x, ref[j].key, ref[j].tag), ref[j].slot);
    }
    kv_pic_index_free(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pic_tags_and_homes),  cmocka_unit_test(test_pic_index_groups),
        cmocka_unit_test(test_pic_index_overwrite), cmocka_unit_test(test_pic_index_grows),
        cmocka_unit_test(test_pic_index_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
