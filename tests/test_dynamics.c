/* tests/test_dynamics.c — a run's load dynamics (sim/results/dynamics.h,
 * docs/definitions.md "Steady state" and "Load oscillation"; issue 42),
 * each against values worked out by hand:
 *
 *  - the steady-state window of a hand-made request series, and the
 *    summary's steady_state (goodput, attainment, rejections) over it;
 *  - std, peak-to-trough, corr(P, D) and its best lag of hand-made load
 *    series;
 *  - the bounded series: frozen ticks repeat a value, and a full series
 *    averages its samples in pairs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/testutil.h"

#include <math.h>

#include "sim/results/dynamics.h"
#include "sim/results/results.h"

/* ---- the steady-state window ----------------------------------------------------- */

/* Requests 0 … 8 arrive at 0 … 8 s and each stays 3 s; one more arrives at
 * 5 s and is rejected at arrival (never in the system); one id is absent.
 * Over [0, 8] (first to last arrival) N(t) is 1 on [0, 1), 2 on [1, 2) and
 * 3 on [2, 8) (one leaves as one arrives): 1 s, 1 s and 6 s, so the
 * time-weighted median is 3 (1 + 1 < 4 ≤ 1 + 1 + 6), first reached at 2 s.
 * The window is [2, 8] s: fill-up [0, 2) and drain (8, 11] left out. */
#define N_REQ 11
static const double arrival_s[N_REQ] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 5, NAN};
static double left_s(int i) { return i == 9 ? 5 : i + 3.0; }

static void test_steady_window(void **state)
{
    double a[N_REQ], l[N_REQ], start, end;
    for (int i = 0; i < N_REQ; i++) a[i] = arrival_s[i] * 1e3, l[i] = left_s(i) * 1e3;
    assert_true(sim_steady_window(a, l, N_REQ, &start, &end));
    assert_double_equal(start, 2000, 0);
    assert_double_equal(end, 8000, 0);
    /* one request: no span, no window */
    assert_false(sim_steady_window(a, l, 1, &start, &end));
    assert_double_equal(start, 0, 0);
    assert_false(sim_steady_window(a + 10, l + 10, 1, &start, &end));
    assert_true(isnan(start));
}

/* The same requests through the results tally: in the window arrive
 * requests 2 … 8 and the rejected one, 8 in all; of them 2, 4 and 6 missed
 * their SLO (completed, not effective), 3 … 8 but 4, 6 were effective:
 * 3, 5, 7, 8 → 4 effective. Attainment 4 / 8 = 0.5, goodput 4 / 6 s. */
static void test_steady_summary(void **state)
{
    sim_results *r;
    sim_err err = {{0}};
    int64_t id;
    sim_run_info info = {.config_json = "{}", .trace_path = "t.jsonl"};
    assert_int_equal(sim_results_open(&r, NULL, &err), 0);
    assert_int_equal(sim_results_begin_run(r, &info, &id, &err), 0);
    for (int i = 0; i < N_REQ - 1; i++) {
        bool rejected = i == 9, missed = i == 2 || i == 4 || i == 6;
        sim_request_row row = {.id = i,
                               .arrival_ms = arrival_s[i] * 1e3,
                               .left_ms = left_s(i) * 1e3,
                               .prefill_inst = -1,
                               .decode_inst = -1,
                               .prefill_start_ms = -1,
                               .first_token_ms = -1,
                               .done_ms = -1,
                               .ttft_ms = -1,
                               .tbt_ms = -1,
                               .e2e_ms = -1,
                               .itl_ms = -1,
                               .stage = rejected ? SIM_STAGE_AT_ARRIVAL : SIM_STAGE_NONE,
                               .effective = !rejected && !missed};
        assert_int_equal(sim_results_add_request(r, &row, &err), 0);
    }
    json_t *s;
    assert_int_equal(sim_results_summary(r, 11, 0, &s, &err), 0);
    const json_t *st = json_object_get(s, "steady_state");
    assert_double_equal(json_number_value(json_object_get(st, "start_s")), 2, 0);
    assert_double_equal(json_number_value(json_object_get(st, "end_s")), 8, 0);
    assert_int_equal(json_integer_value(json_object_get(st, "requests")), 8);
    assert_int_equal(json_integer_value(json_object_get(st, "effective")), 4);
    assert_double_equal(json_number_value(json_object_get(st, "slo_attainment")), 0.5, 1e-15);
    assert_double_equal(json_number_value(json_object_get(st, "goodput_rps")), 4.0 / 6, 1e-15);
    const json_t *rej = json_object_get(st, "rejected");
    assert_int_equal(json_integer_value(json_object_get(rej, "at_arrival")), 1);
    assert_int_equal(json_integer_value(json_object_get(rej, "total")), 1);
    json_decref(s);
    sim_results_close(r);
}

/* ---- oscillation metrics ---------------------------------------------------------- */

/* P = 1, 3, 1, 3, … and D = 4 − P (anti-phase): both std 1 (every value
 * 1 from the mean 2), peak-to-trough 2, corr −1; D one sample later is P
 * itself, so the best lag is +1 (a sample) at corr 1. */
static void test_oscillation_antiphase(void **state)
{
    double p[8], d[8];
    for (int i = 0; i < 8; i++) p[i] = i % 2 ? 3 : 1, d[i] = 4 - p[i];
    sim_oscillation o;
    sim_oscillation_of(p, d, 8, 3, &o);
    assert_int_equal(o.n, 8);
    assert_double_equal(o.std_p, 1, 1e-15);
    assert_double_equal(o.std_d, 1, 1e-15);
    assert_double_equal(o.p2t_p, 2, 0);
    assert_double_equal(o.p2t_d, 2, 0);
    assert_double_equal(o.corr, -1, 1e-15);
    assert_double_equal(o.best_lag, 1, 0);
    assert_double_equal(o.best_corr, 1, 1e-15);
}

/* P = 1, 2, 3, 4 and D = 2, 1, 4, 3: deviations from 2.5 are
 * (−1.5, −0.5, 0.5, 1.5) and (−0.5, −1.5, 1.5, 0.5), so Σ products = 3,
 * Σ squares = 5 each: corr 3 / 5 = 0.6, std √(5/4). Lag +1 leaves the
 * pairs (1,1), (2,4), (3,3): deviations (−1, 0, 1) and (−5/3, 4/3, 1/3),
 * Σ products 2, Σ squares 2 and 42/9: corr 2 / √(84/9) = 6/√84 ≈ 0.655;
 * lag −1, (2,2), (3,1), (4,4), the same; lag ±2 leaves 2 pairs (none).
 * The best is +1, the smaller |lag| winning the tie. A constant D has no
 * correlation (NAN). */
static void test_oscillation_hand(void **state)
{
    const double p[4] = {1, 2, 3, 4}, d[4] = {2, 1, 4, 3}, flat[4] = {1, 1, 1, 1};
    sim_oscillation o;
    sim_oscillation_of(p, d, 4, 5, &o);
    assert_double_equal(o.std_p, sqrt(1.25), 1e-15);
    assert_double_equal(o.std_d, sqrt(1.25), 1e-15);
    assert_double_equal(o.p2t_p, 3, 0);
    assert_double_equal(o.corr, 0.6, 1e-15);
    assert_double_equal(o.best_lag, 1, 0);
    assert_double_equal(o.best_corr, 6 / sqrt(84), 1e-15);
    sim_oscillation_of(p, flat, 4, 1, &o);
    assert_double_equal(o.std_d, 0, 0);
    assert_true(isnan(o.corr) && isnan(o.best_lag));
}

/* ---- the bounded series ------------------------------------------------------------- */

static void test_series(void **state)
{
    sim_series s = {.period_s = 0.5};
    sim_series_add(&s, 10, 1, 2, 3); /* three frozen ticks */
    sim_series_add(&s, 11.5, 3, 4, 1);
    assert_int_equal(s.n, 4);
    assert_double_equal(s.t0_s, 10, 0);
    assert_double_equal(s.p[2], 1, 0);
    assert_double_equal(s.d[3], 4, 0);
    sim_series_free(&s);
    /* full at SIM_SERIES_CAP: pairs averaged, step 2; the next sample
     * averages the next two periods */
    s = (sim_series){.period_s = 1};
    for (size_t i = 0; i < SIM_SERIES_CAP + 2; i++) sim_series_add(&s, (double)i, (double)i, 0, 1);
    assert_int_equal(s.n, SIM_SERIES_CAP / 2 + 1);
    assert_int_equal(s.step, 2);
    assert_double_equal(s.p[0], 0.5, 0);
    assert_double_equal(s.p[SIM_SERIES_CAP / 2], SIM_SERIES_CAP + 0.5, 0);
    sim_series_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steady_window),
        cmocka_unit_test(test_steady_summary),
        cmocka_unit_test(test_oscillation_antiphase),
        cmocka_unit_test(test_oscillation_hand),
        cmocka_unit_test(test_series),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
