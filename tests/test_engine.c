/* tests/test_engine.c — the event heap's ordering and deterministic
 * tie-breaking, its tape (the event-loop bound of kvsim run
 * --engine-bound), and the exact TBT top-k against a brute-force
 * reference. */
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
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x < y) - (x > y);
}

/* TBT = mean of the longest max(1, floor(n/10)) intervals. By hand: intervals
 * 1..25 ns → k = 2 → (25 + 24) / 2 = 24.5 ns; 3 intervals → k = 1 → the max. */
static void test_topk_by_hand(void **state)
{
    sim_topk t;
    sim_topk_init(&t, 25);
    for (int i = 1; i <= 25; i++) sim_topk_add(&t, (i * 7) % 25 + 1); /* a permutation of 1..25 */
    assert_true(sim_topk_mean_s(&t) == 24.5 / 1e9);
    sim_topk_free(&t);
    sim_topk_init(&t, 3);
    sim_topk_add(&t, 5);
    sim_topk_add(&t, 9);
    sim_topk_add(&t, 2);
    assert_true(sim_topk_mean_s(&t) == 9 / 1e9);
    sim_topk_free(&t);
}

/* The second implementation: keep every interval, sort, sum the k largest. */
static double ref_topk_mean_s(int64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, desc);
    int k = n / 10 > 1 ? n / 10 : 1;
    int64_t s = 0;
    for (int i = 0; i < k; i++) s += v[i];
    return (double)s / k / 1e9;
}

static int64_t shape_value(int shape, int i, int len)
{
    switch (shape) {
    case 0: return rand() % 100000;                        /* random */
    case 1: return 1000 + 7 * (int64_t)i;                  /* increasing: a lone decode */
    case 2: return 1000 + 7 * (int64_t)(len - i);          /* decreasing */
    case 3: return rand() % 4;                             /* ties */
    case 4: return (i % 50 ? 1000 : 90000) + i / 10;       /* flat with spikes */
    case 5: return i ? 1000 + (int64_t)i : 500000;         /* a long first interval, then a lone decode */
    default: return 1000 + i % 97 + (int64_t)(i / 97) * 3; /* increasing runs with drops */
    }
}

/* Random, increasing, decreasing, tied and spiky sequences of every length
 * up to 600 and a few long ones (k from 1 to 500, buffers compacted many
 * times): the same mean, to the bit, as sorting every interval. */
static void test_topk_matches_sort(void **state)
{
    srand(11);
    int lens[610];
    for (int i = 0; i < 600; i++) lens[i] = i + 1;
    for (int i = 600; i < 610; i++) lens[i] = 1000 + 400 * (i - 600);
    for (int l = 0; l < 610; l++)
        for (int shape = 0; shape < 7; shape++) {
            int len = lens[l];
            int64_t *v = malloc(sizeof *v * (size_t)len);
            sim_topk t;
            sim_topk_init(&t, len);
            for (int i = 0; i < len; i++) sim_topk_add(&t, v[i] = shape_value(shape, i, len));
            double got = sim_topk_mean_s(&t), want = ref_topk_mean_s(v, len);
            if (got != want) printf("len %d shape %d: %.17g, want %.17g\n", len, shape, got, want);
            assert_true(got == want);
            sim_topk_free(&t);
            free(v);
        }
}

/* The same intervals in another order give the same TBT, to the bit. */
static void test_topk_order_independent(void **state)
{
    srand(3);
    int64_t v[997];
    for (int i = 0; i < 997; i++) v[i] = 1000000 + rand() % 5000000;
    sim_topk a, b;
    sim_topk_init(&a, 997);
    sim_topk_init(&b, 997);
    for (int i = 0; i < 997; i++) sim_topk_add(&a, v[i]);
    for (int i = 0; i < 997; i++) sim_topk_add(&b, v[(i * 389) % 997]); /* 389 is prime to 997 */
    assert_true(sim_topk_mean_s(&a) == sim_topk_mean_s(&b));
    sim_topk_free(&a);
    sim_topk_free(&b);
}

/* The tape records each push's time (clamped to now) and -1 for each pop
 * that returned an event, in order; replayed, it pops as many events. A
 * run with --engine-bound reports the run's own event count and otherwise
 * the same summary as without it. */
static void test_tape_records_and_replays(void **state)
{
    sim_engine e;
    sim_event ev;
    sim_engine_tape tape = {0};
    sim_engine_init(&e);
    e.tape = &tape;
    sim_engine_push(&e, 5, 0, 0, 0, NULL);
    sim_engine_push(&e, 3, 0, 0, 0, NULL);
    assert_true(sim_engine_pop(&e, &ev));
    sim_engine_push(&e, 1, 0, 0, 0, NULL); /* in the past: at now = 3 */
    assert_true(sim_engine_pop(&e, &ev));
    assert_true(sim_engine_pop(&e, &ev));
    assert_false(sim_engine_pop(&e, &ev));
    const int64_t want[] = {5, 3, -1, 3, -1, -1};
    assert_int_equal(tape.n, 6);
    assert_memory_equal(tape.op, want, sizeof want);
    int64_t events = 0;
    sim_engine_tape_replay(&tape, &events);
    assert_int_equal(events, 3);
    sim_engine_tape_free(&tape);
    sim_engine_free(&e);

    json_t *plain = tu_kvsim_json("run --json"), *bound = tu_kvsim_json("run --json --engine-bound");
    const json_t *b = json_object_get(bound, "engine_bound");
    assert_non_null(b);
    assert_int_equal(tu_int_field(b, "events"), tu_int_field(bound, "events"));
    assert_true(json_real_value(json_object_get(b, "heap_s")) > 0);
    assert_true(json_real_value(json_object_get(b, "heap_events_per_s")) > 0);
    assert_null(json_object_get(plain, "engine_bound"));
    json_object_del(bound, "engine_bound");
    tu_drop_volatile(plain);
    tu_drop_volatile(bound);
    assert_true(json_equal(plain, bound));
    json_decref(plain);
    json_decref(bound);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tie_break_by_insertion),   cmocka_unit_test(test_random_order),
        cmocka_unit_test(test_no_time_travel),           cmocka_unit_test(test_topk_by_hand),
        cmocka_unit_test(test_topk_matches_sort),        cmocka_unit_test(test_topk_order_independent),
        cmocka_unit_test(test_tape_records_and_replays),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
