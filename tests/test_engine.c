/* tests/test_engine.c — the event heap's ordering and deterministic
 * tie-breaking, and the exact TBT top-k against a brute-force reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <stdlib.h>

#include "sim/serving/serving.h"
#include "sim/engine/engine.h"

/* Simultaneous events pop in insertion order; the clock follows. */
static void test_tie_break_by_insertion(void **state)
{
    sim_engine e;
    sim_event ev;
    sim_engine_init(&e);
    sim_engine_push(&e, 50, 0, 1, 0, NULL);
    sim_engine_push(&e, 10, 0, 2, 0, NULL);
    sim_engine_push(&e, 50, 0, 3, 0, NULL);
    sim_engine_push(&e, 10, 0, 4, 0, NULL);
    sim_engine_push(&e, 50, 0, 5, 0, NULL);
    int expect[] = {2, 4, 1, 3, 5};
    for (int i = 0; i < 5; i++) {
        assert_true(sim_engine_pop(&e, &ev));
        assert_int_equal(ev.target, expect[i]);
        assert_int_equal(e.now, ev.time);
    }
    assert_false(sim_engine_pop(&e, &ev));
    assert_int_equal(e.processed, 5);
    sim_engine_free(&e);
}

/* 10,000 random times (many equal) pop sorted by (time, seq). */
static void test_random_order(void **state)
{
    sim_engine e;
    sim_event ev, prev = {0};
    sim_engine_init(&e);
    srand(7);
    for (int i = 0; i < 10000; i++) sim_engine_push(&e, rand() % 500, 0, i, 0, NULL);
    for (int i = 0; i < 10000; i++) {
        assert_true(sim_engine_pop(&e, &ev));
        if (i) assert_true(prev.time < ev.time || (prev.time == ev.time && prev.seq < ev.seq));
        prev = ev;
    }
    sim_engine_free(&e);
}

/* An event scheduled in the past is clamped to now: time never goes back. */
static void test_no_time_travel(void **state)
{
    sim_engine e;
    sim_event ev;
    sim_engine_init(&e);
    sim_engine_push(&e, 100, 0, 0, 0, NULL);
    sim_engine_pop(&e, &ev);
    sim_engine_push(&e, 40, 0, 1, 0, NULL);
    sim_engine_pop(&e, &ev);
    assert_int_equal(ev.time, 100);
    sim_engine_free(&e);
}

static int desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* TBT = mean of the longest max(1, floor(n/10)) intervals. By hand: intervals
 * 1..25 → k = 2 → (25 + 24) / 2 = 24.5; 3 intervals → k = 1 → the max. */
static void test_topk_by_hand(void **state)
{
    sim_topk t;
    sim_topk_init(&t, 25);
    for (int i = 1; i <= 25; i++) sim_topk_add(&t, (i * 7) % 25 + 1); /* a permutation of 1..25 */
    assert_double_equal(sim_topk_mean(&t), 24.5, 1e-12);
    sim_topk_free(&t);
    sim_topk_init(&t, 3);
    sim_topk_add(&t, 5);
    sim_topk_add(&t, 9);
    sim_topk_add(&t, 2);
    assert_double_equal(sim_topk_mean(&t), 9, 0);
    sim_topk_free(&t);
}

/* Random sequences against sorting every interval. */
static void test_topk_matches_sort(void **state)
{
    srand(11);
    for (int trial = 0; trial < 200; trial++) {
        int n = 1 + rand() % 400;
        double *v = malloc(sizeof(double) * (size_t)n);
        sim_topk t;
        sim_topk_init(&t, n);
        for (int i = 0; i < n; i++) sim_topk_add(&t, v[i] = (rand() % 1000) / 7.0);
        qsort(v, (size_t)n, sizeof *v, desc);
        int k = n / 10 > 1 ? n / 10 : 1;
        double s = 0;
        for (int i = 0; i < k; i++) s += v[i];
        assert_double_equal(sim_topk_mean(&t), s / k, 1e-9);
        sim_topk_free(&t);
        free(v);
    }
}

/* The reference heap: the plain sift with a branch for the smaller child.
 * The simulator's must leave every slot of the array exactly where this one
 * does, because TBT sums the heap in array order (a different layout moves
 * results by ULPs). */
static void ref_topk_add(double *v, int32_t *n, int32_t k, double x)
{
    int32_t i;
    if (*n < k) {
        for (i = (*n)++; i > 0 && v[(i - 1) / 2] > x; i = (i - 1) / 2) v[i] = v[(i - 1) / 2];
        v[i] = x;
        return;
    }
    if (x <= v[0]) return;
    for (i = 0;;) {
        int32_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && v[c + 1] < v[c]) c++;
        if (v[c] >= x) break;
        v[i] = v[c];
        i = c;
    }
    v[i] = x;
}

/* Random, increasing and tied sequences of every length up to 300 (k from 1
 * to 30, so heaps of 1 and 2 slots too): the same array after every add. */
static void test_topk_same_heap_as_reference(void **state)
{
    srand(5);
    for (int len = 1; len <= 300; len++)
        for (int shape = 0; shape < 3; shape++) {
            sim_topk t;
            sim_topk_init(&t, len);
            double ref[64];
            int32_t n = 0;
            for (int i = 0; i < len; i++) {
                double x = shape == 0 ? rand() % 1000 : shape == 1 ? 1 + i * 0.5 : rand() % 4;
                sim_topk_add(&t, x);
                ref_topk_add(ref, &n, t.k, x);
                assert_int_equal(t.n, n);
                assert_memory_equal(t.v, ref, sizeof(double) * (size_t)n);
            }
            sim_topk_free(&t);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tie_break_by_insertion), cmocka_unit_test(test_random_order),
        cmocka_unit_test(test_no_time_travel),         cmocka_unit_test(test_topk_by_hand),
        cmocka_unit_test(test_topk_matches_sort),      cmocka_unit_test(test_topk_same_heap_as_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
