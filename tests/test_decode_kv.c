/* tests/test_decode_kv.c — decode memory as engines manage it
 * (decode.kv_allocation, decode.preemption; sim/serving/disagg/flow.c), on
 * a hand-worked two-request trace:
 *
 *  - incremental growth: two requests decode together until their KV, grown
 *    one token a step, no longer fits; the newest is preempted, holding the
 *    tokens worked out below, and resumes when the other's KV is freed;
 *  - recompute: the resumption step also prefills its held tokens
 *    (recomputed_tokens), and its last token comes when the hand sum says;
 *  - swap: the same tokens go to DRAM and back (swapped_bytes), no recompute;
 *  - decode.kv_receive = dram: the KV's load from DRAM into HBM delays
 *    the decode by the host link's copy time;
 *  - reserve: no preemption, and the preemption counters stay out of the
 *    summary (recorded summaries under reserve are today's, bit for bit:
 *    tests/test_summaries.c);
 *  - early_reject_predict's expected pool (docs/definitions-decode.md, "Predicted
 *    decode load") against a hand computation;
 *  - its uniform decode time t_d, timed from a decode's entry into a batch
 *    as the predicted departures are, on a hand-worked five-request trace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <jansson.h>
#include <sqlite3.h>

#include "sched/sched.h"
#include "sim/config/config.h"
#include "sim/cost/cost.h"

/* Two requests of N distinct input tokens and O output tokens, both at
 * t = 0, on 2P1D without layer-wise streaming: they prefill side by side and
 * finish together at p; their KV streams share the decode node's receiving
 * NIC, A's arriving at p + T, B's at p + 2T, while A's first step runs
 * (T < that step: checked). So B joins one step after A: at every step
 * start A has one token more than B. With HBM for C = 2N + 2M tokens, the
 * step where B has t tokens needs (N + t + 1) + (N + t); A grows first and
 * fits up to t = M, then B's growth to N + M does not: B, the newest, is
 * preempted holding N + M − 1 tokens, with M emitted. Alone, A never leaves
 * room for B's N + M tokens, so B rejoins in the step after A's last token,
 * and needs O − M more steps from context N + M. (Worked with the prefill's
 * token as each request's first, metrics.first_token = prefill; the
 * first-token test below sets each mode itself.) */
#define N 1024
#define O 200
#define M 50
#define C (2 * N + 2 * M)
#define SETS                                                                                                           \
    "--set cluster.prefill=2 --set cluster.decode=1 --set cluster.layerwise=false --set policy.router=least_loaded "   \
    "--set metrics.sample_rows=false --set metrics.first_token=prefill"

static char *two_requests(void)
{
    char *path = tu_write_temp("");
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 2; i++) tu_trace_request(f, 0, N, O, 1 + i * 100);
    fclose(f);
    return path;
}

/* cluster.decode_hbm_frac that leaves exactly cap tokens of KV room, and
 * the cost model under it (it points into cfg: the caller frees cfg). */
static double frac_for(int64_t cap, sim_config *cfg_out, sim_cost *cost)
{
    sim_config cfg;
    sim_err err;
    assert_int_equal(sim_config_load(&cfg, NULL, NULL, 0, &err), 0);
    assert_int_equal(sim_cost_init(cost, &cfg, &err), 0);
    double frac =
        (cost->weight_bytes + cost->activation_bytes + (cap + 0.5) * cost->kv_bytes_per_token) / cost->hw->hbm_bytes;
    char set[64], *sets[] = {set};
    snprintf(set, sizeof set, "cluster.decode_hbm_frac=%.17g", frac);
    sim_config_free(&cfg);
    assert_int_equal(sim_config_load(cfg_out, NULL, sets, 1, &err), 0);
    assert_int_equal(sim_cost_init(cost, cfg_out, &err), 0);
    assert_int_equal(sim_cost_decode_kv_tokens(cost), cap);
    return frac;
}

static double frac_for_capacity(sim_config *cfg_out, sim_cost *cost) { return frac_for(C, cfg_out, cost); }

static double sql_num(const char *db, const char *sql)
{
    char *t = tu_sql_text(db, sql);
    double v = atof(t);
    free(t);
    return v;
}

/* Run the trace with `extra` settings; the summary (caller decrefs). */
static json_t *run(const char *trace, const char *db, double frac, const char *extra)
{
    char args[1024];
    snprintf(args, sizeof args, "run --json --trace %s --db %s " SETS " --set cluster.decode_hbm_frac=%.17g %s", trace,
             db, frac, extra);
    return tu_kvsim_json(args);
}

/* Seconds of B's steps after it rejoins: O − M steps from context N + M
 * (each step's end rounded to the clock's ns, as the engine does). */
static double resumed_steps_s(const sim_cost *cost)
{
    int64_t ns = 0;
    for (int j = 0; j < O - M; j++) ns += sim_s_to_ns(sim_cost_decode_iter_s(cost, 1, N + M + j));
    return sim_ns_to_s(ns);
}

static void check_preemption(const char *mode, bool swap)
{
    sim_config cfg;
    sim_cost cost;
    double frac = frac_for_capacity(&cfg, &cost);
    double T = sim_cost_nic_s(&cost, N * cost.kv_bytes_per_token);
    /* B's KV lands, and is loaded from DRAM (L after A's own load), during A's first step */
    double L = sim_cost_h2d_s(&cost, N * cost.kv_bytes_per_token);
    assert_true(T < L + sim_cost_decode_iter_s(&cost, 1, N + 1) && L < sim_cost_decode_iter_s(&cost, 1, N + 1));
    char *trace = two_requests(), *db = tu_temp_path(), extra[256];
    snprintf(extra, sizeof extra,
             "--set decode.kv_allocation=incremental --set decode.preemption=%s --set metrics.sample_rows=true "
             "--set metrics.sample_period_ms=1 --set metrics.sample_rows_per_s=0",
             mode);
    json_t *s = run(trace, db, frac, extra);
    int64_t held = N + M - 1;
    assert_int_equal(tu_int_field(s, "completed"), 2);
    assert_int_equal(tu_int_field(s, "preemptions"), 1);
    assert_int_equal(tu_int_field(s, "recomputed_tokens"), swap ? 0 : held);
    assert_double_equal(json_number_value(json_object_get(s, "swapped_bytes")),
                        swap ? (double)held * cost.kv_bytes_per_token : 0, 0);
    /* both prefilled together; B (id 1) is the one preempted, once */
    assert_double_equal(sql_num(db, "SELECT first_token_ms FROM requests WHERE id = 1"),
                        sql_num(db, "SELECT first_token_ms FROM requests WHERE id = 0"), 0);
    assert_int_equal((int)sql_num(db, "SELECT retries FROM requests WHERE id = 0"), 0);
    assert_int_equal((int)sql_num(db, "SELECT retries FROM requests WHERE id = 1"), 1);
    /* the requests table names them as preemptions, and the decode
     * instance's samples count the one preemption from its first sample
     * after it on (the load figure marks it there) */
    assert_int_equal((int)sql_num(db, "SELECT preemptions FROM requests WHERE id = 1"), 1);
    assert_int_equal((int)sql_num(db, "SELECT preemptions FROM requests WHERE id = 0"), 0);
    assert_int_equal((int)sql_num(db, "SELECT MAX(preemptions) FROM samples WHERE role = 'decode'"), 1);
    assert_int_equal((int)sql_num(db, "SELECT MAX(preemptions) FROM samples WHERE role = 'prefill'"), 0);
    /* B resumes in the step after A's last token: that step adds the
     * recompute (a prefill of its held tokens) or the swap-in */
    double resume =
        swap ? sim_cost_h2d_s(&cost, (double)held * cost.kv_bytes_per_token) : sim_cost_prefill_s(&cost, held, 0);
    double a_done = sql_num(db, "SELECT done_ms FROM requests WHERE id = 0"),
           b_done = sql_num(db, "SELECT done_ms FROM requests WHERE id = 1");
    printf("%s: A done %.3f ms, B done %.3f ms, resume %.3f ms\n", mode, a_done, b_done, resume * 1e3);
    assert_double_equal(b_done, a_done + (resume + resumed_steps_s(&cost)) * 1e3, 1e-3);
    json_decref(s);
    tu_remove_temp(db);
    tu_remove_temp(trace);
    sim_config_free(&cfg);
}

static void test_incremental_recompute(void **state) { check_preemption("recompute", false); }

static void test_incremental_swap(void **state) { check_preemption("swap", true); }

/* reserve: B's whole input + output (N + O) does not fit beside A's, so it
 * waits for A without preemption; once A's last step frees its room, B's
 * KV is loaded from DRAM into HBM (decode.kv_receive = dram: L, the host
 * link's time for N tokens) and its O − 1 steps follow. */
static void test_reserve_never_preempts(void **state)
{
    sim_config cfg;
    sim_cost cost;
    double frac = frac_for_capacity(&cfg, &cost);
    assert_true(2 * (N + O) > C && N + O <= C);
    char *trace = two_requests(), *db = tu_temp_path();
    json_t *s = run(trace, db, frac, "--set decode.kv_allocation=reserve");
    assert_int_equal(tu_int_field(s, "completed"), 2);
    assert_null(json_object_get(s, "preemptions"));
    assert_null(json_object_get(s, "recomputed_tokens"));
    int64_t ns = 0;
    for (int k = 1; k < O; k++) ns += sim_s_to_ns(sim_cost_decode_iter_s(&cost, 1, N + k));
    double a_done = sql_num(db, "SELECT done_ms FROM requests WHERE id = 0"),
           b_done = sql_num(db, "SELECT done_ms FROM requests WHERE id = 1");
    ns += sim_s_to_ns(sim_cost_h2d_s(&cost, N * cost.kv_bytes_per_token));
    assert_double_equal(b_done, a_done + sim_ns_to_s(ns) * 1e3, 1e-3);
    json_decref(s);
    tu_remove_temp(db);
    tu_remove_temp(trace);
    sim_config_free(&cfg);
}

/* A duration rounded to the engine's clock (ns), as the engine rounds it. */
static double ns_s(double s) { return sim_ns_to_s(sim_s_to_ns(s)); }

/* A trace of one request of N distinct tokens and `out` output tokens at
 * t = 0 (caller removes it). */
static char *one_request(int out)
{
    char text[160];
    snprintf(text, sizeof text,
             "{\"timestamp\": 0, \"input_length\": %d, \"output_length\": %d, \"hash_ids\": [1, 2]}\n", N, out);
    return tu_write_temp(text);
}

/* decode.kv_receive: with one request, landing in DRAM delays its whole
 * decode by the host link's copy of its N input tokens' KV into HBM
 * (the A of the trace above alone: its last token L later than with hbm). */
static void test_kv_receive_dram_adds_the_load(void **state)
{
    sim_config cfg;
    sim_cost cost;
    double frac = frac_for_capacity(&cfg, &cost), done[2];
    char *trace = one_request(O), *db = tu_temp_path();
    const char *modes[] = {"hbm", "dram"};
    for (int i = 0; i < 2; i++) {
        char extra[64], sql[96];
        snprintf(extra, sizeof extra, "--set decode.kv_receive=%s", modes[i]);
        json_decref(run(trace, db, frac, extra));
        snprintf(sql, sizeof sql, "SELECT done_ms FROM requests WHERE run_id = %d", i + 1);
        done[i] = sql_num(db, sql);
    }
    double L = ns_s(sim_cost_h2d_s(&cost, N * cost.kv_bytes_per_token));
    printf("hbm %.3f ms, dram %.3f ms, load %.3f ms\n", done[0], done[1], L * 1e3);
    assert_double_equal(done[1] - done[0], L * 1e3, 1e-6);
    tu_remove_temp(db);
    tu_remove_temp(trace);
    sim_config_free(&cfg);
}

/* metrics.first_token (docs/definitions.md, "First token"): one request of
 * N tokens and 2 output tokens, alone on 2P1D without layer-wise
 * streaming, its KV landing in the decode node's DRAM. Its prefill ends at
 * p, its KV crosses the NIC (T) and the host link (L), then decode steps
 * run at context N + tokens made. `prefill`: the first token at p; the one
 * interval, T + L + step(N + 1), is its TBT. `decode`: the decode instance
 * makes both tokens, the first at p + T + L + step(N); the TBT is
 * step(N + 1). Each duration rounded to the clock's ns, as the engine does. */
static void test_first_token_prefill_or_decode(void **state)
{
    sim_config cfg;
    sim_cost cost;
    double frac = frac_for_capacity(&cfg, &cost);
    char *trace = one_request(2), *db = tu_temp_path();
    double p = ns_s(sim_cost_prefill_s(&cost, N, 0)), T = ns_s(sim_cost_nic_s(&cost, N * cost.kv_bytes_per_token)),
           L = ns_s(sim_cost_h2d_s(&cost, N * cost.kv_bytes_per_token));
    double want_ttft[2] = {p, p + T + L + ns_s(sim_cost_decode_iter_s(&cost, 1, N))};
    double want_tbt[2] = {T + L + ns_s(sim_cost_decode_iter_s(&cost, 1, N + 1)),
                          ns_s(sim_cost_decode_iter_s(&cost, 1, N + 1))};
    const char *modes[] = {"prefill", "decode"};
    for (int i = 0; i < 2; i++) {
        char extra[96], sql[96];
        snprintf(extra, sizeof extra, "--set decode.kv_receive=dram --set metrics.first_token=%s", modes[i]);
        json_decref(run(trace, db, frac, extra));
        snprintf(sql, sizeof sql, "SELECT ttft_ms FROM requests WHERE run_id = %d", i + 1);
        double ttft = sql_num(db, sql) / 1e3;
        snprintf(sql, sizeof sql, "SELECT tbt_ms FROM requests WHERE run_id = %d", i + 1);
        double tbt = sql_num(db, sql) / 1e3;
        printf("first_token=%s: TTFT %.6f s (hand %.6f), TBT %.6f s (hand %.6f)\n", modes[i], ttft, want_ttft[i], tbt,
               want_tbt[i]);
        assert_double_equal(ttft, want_ttft[i], 2e-9);
        assert_double_equal(tbt, want_tbt[i], 2e-9);
    }
    tu_remove_temp(db);
    tu_remove_temp(trace);
    sim_config_free(&cfg);
}

/* ---- early_reject_predict's expected pool ------------------------------------------
 *
 * Finished outputs 10, 20, 30, 40 tokens; t = 5 s, step τ = 1 s, so a
 * request in the pool from max(start, now) gains Δ = 5 − max(start, 0)
 * tokens by t. The candidate has 1,000 input tokens (1,001 KV tokens
 * when it joins under incremental allocation). In flight (start s, k out):
 *   f1 s −3, k 12, input 100: P(L > 17 | L > 12) = 3/3 = 1, KV 100+12+5 = 117
 *   f2 s −1, k 25, input 200: P(L > 30 | L > 25) = 1/2,     KV 200+25+5 = 230
 *   f3 s  2, k  0, input 300: k = 1 at its start, Δ = 3: P(L > 4 | L > 1) = 1,
 *                             KV 300+1+3 = 304
 *   f4 s  7: decodes after t, not in the pool
 *   f5 s −2, k 45, input 500: longer than every finished output: 1, KV 550
 * batch = 1 + 1 + 1/2 + 1 + 1 = 4.5; KV = 1001 + 117 + 115 + 304 + 550 = 2087.
 * Reserved KV instead (ctx 1000, 2000, 3000, —, 5000; candidate 1000 + 50):
 * 1050 + 1000 + 1000 + 3000 + 5000 = 11050. With no output finished yet, the
 * uniform t_d rule (and always with lengths=0): t_d = 10 keeps f1, f2, f3, f5 (ends 7, 9, 12, 8 > 5):
 * batch 5, KV 1001 + 117 + 230 + 304 + 550 = 2202; t_d = 4 keeps f3 alone
 * (ends 1, 3, 6, 2): batch 2, KV 1305. */
static void test_predict_pool_by_hand(void **state)
{
    sched_inflight f[] = {
        {-3, 1000, 100, 12}, {-1, 2000, 200, 25}, {2, 3000, 300, 0}, {7, 4000, 400, 0}, {-2, 5000, 500, 45},
    };
    sim_request req = {.input_len = 1000, .output_len = 50};
    sched_lengths *out = sched_lengths_new();
    sched_ctx ctx = {.n_inflight = 5, .inflight = f, .kv_incremental = true};
    double batch, kv;
    sched_predict_pool(&ctx, &req, 5, 10, 1, out, &batch, &kv);
    assert_double_equal(batch, 5, 0); /* no output finished yet: t_d */
    assert_double_equal(kv, 2202, 0);
    sched_predict_pool(&ctx, &req, 5, 4, 1, out, &batch, &kv);
    assert_double_equal(batch, 2, 0);
    assert_double_equal(kv, 1305, 0);
    for (int len = 10; len <= 40; len += 10) sched_lengths_add(out, len);
    sched_predict_pool(&ctx, &req, 5, 10, 1, out, &batch, &kv);
    assert_double_equal(batch, 4.5, 1e-12);
    assert_double_equal(kv, 2087, 1e-9);
    sched_predict_pool(&ctx, &req, 5, 4, 1, NULL, &batch, &kv); /* lengths=0: the paper's t_d whatever finished */
    assert_double_equal(batch, 2, 0);
    assert_double_equal(kv, 1305, 0);
    ctx.kv_incremental = false;
    sched_predict_pool(&ctx, &req, 5, 10, 1, out, &batch, &kv);
    assert_double_equal(batch, 4.5, 1e-12);
    assert_double_equal(kv, 11050, 1e-9);
    /* a length past the cap counts at the cap */
    sched_lengths_add(out, SCHED_LENGTHS_CAP + 5);
    assert_int_equal(sched_lengths_above(out, SCHED_LENGTHS_CAP - 1), 1);
    assert_int_equal(sched_lengths_above(out, 30), 2);
    assert_int_equal(sched_lengths_above(out, 0.5), 5);
    sched_lengths_free(out);
}

/* ---- early_reject_predict's t_d, on the clock its departures run on ---------------
 *
 * Mooncake §4.3.4: "each request's decoding stage takes a uniform time t_d",
 * and requests whose "execution time exceeds t_d" by t leave the predicted
 * pool. A request in a batch is counted from when it entered the batch, so
 * t_d must be timed from there too (sim/serving/disagg/core.c,
 * build_inflight). Hand-worked on 2P1D, KV reserved whole, one request per
 * batch (cluster.decode_max_batch = 1), HBM for 3,000 KV tokens:
 *  - A and B (N input, O output tokens) at t = 0 prefill side by side and
 *    end at p; A's KV crosses the NIC by p + T, is loaded from DRAM (L)
 *    and A enters the batch at p + T + L; its O − 1 steps take S. B's KV
 *    arrives at p + 2T and waits for the batch: it enters when A is done
 *    and its KV is loaded, at b = p + T + 2L + S, and is done at b + S.
 *  - At a = b + S/4 two fillers (22,000 tokens, one output token: no
 *    decode) take both prefill instances, and X (1,900 + 100 tokens)
 *    arrives behind them: its prefill would end at a + h, h about the
 *    fillers' prefill plus its own (about 1.25 S). X fits the HBM alone
 *    (2,000 ≤ 3,000) but not beside B (2,000 + N + O > 3,000), so it is
 *    admitted iff B is predicted gone by a + h, i.e. a + h ≥ b + t_d.
 *  - t_d at a: A, finished, decoded for S from its batch entry; B's time in
 *    the batch so far is S/4, so t_d = max(S, 2 · S/4) = S, and
 *    a + h − b = S/4 + h ≥ S: B is predicted gone, X is admitted. Timed from
 *    the prefill's end (before issue 42) A's decode time was T + L + S and
 *    B's elapsed time held its wait: t_d = max(T + L + S, 2 (S/4 + T + 2L +
 *    S)) > S/4 + h, B predicted present, X rejected.
 *  - Control: t_d_s = 100 keeps B in the predicted pool: X is rejected. */
#define TD_CAP    3000
#define TD_FILLER 22000

static char *td_trace(double a_ms)
{
    char *path = tu_write_temp("");
    FILE *f = fopen(path, "w");
    const struct {
        double at;
        int in, out;
    } r[] = {{0, N, O}, {0, N, O}, {a_ms, TD_FILLER, 1}, {a_ms, TD_FILLER, 1}, {a_ms, 1900, 100}};
    for (int i = 0; i < 5; i++) tu_trace_request(f, r[i].at, r[i].in, r[i].out, 1 + i * 1000);
    fclose(f);
    return path;
}

static void test_predict_t_d_from_batch_entry(void **state)
{
    sim_config cfg;
    sim_cost cost;
    double frac = frac_for(TD_CAP, &cfg, &cost);
    double bytes = N * cost.kv_bytes_per_token, p = ns_s(sim_cost_prefill_s(&cost, N, 0)),
           T = ns_s(sim_cost_nic_s(&cost, bytes)), L = ns_s(sim_cost_h2d_s(&cost, bytes)), S = 0;
    for (int k = 1; k < O; k++) S += ns_s(sim_cost_decode_iter_s(&cost, 1, N + k));
    double b = p + T + 2 * L + S, a_ms = round((b + S / 4) * 1e3), e = a_ms / 1e3 - b;
    /* h, X's predicted prefill end from its arrival: the fillers' prefill
     * and its own, by the cost model (the conductor's estimator is within
     * a few percent of it: the margins below are seconds) */
    double h = sim_cost_prefill_s(&cost, TD_FILLER, 0) + sim_cost_prefill_s(&cost, 1900, 0);
    double td_new = fmax(S, 2 * e), td_old = fmax(T + L + S, 2 * (e + T + 2 * L + S));
    printf("t_d: S %.3f s, B in the batch at %.3f s, X at +%.3f s, h %.3f s: t_d %.3f s (gone by %.3f s), "
           "timed from the prefill's end %.3f s\n",
           S, b, e, h, td_new, e + h - td_new, td_old);
    assert_true(e + h - td_new > 0.25 * S && td_old - (e + h) > 0.25 * S); /* margins far above the estimator's */
    assert_true(2000 <= TD_CAP && 2000 + N + O > TD_CAP && 2 * (N + O) <= TD_CAP);
    char *trace = td_trace(a_ms), *db = tu_temp_path();
    const char *params[] = {"", "--set policy.params.t_d_s=100"}, *want[] = {"completed", "rejected"};
    for (int i = 0; i < 2; i++) {
        char extra[256], sql[96];
        snprintf(extra, sizeof extra,
                 "--set decode.kv_allocation=reserve --set cluster.decode_max_batch=1 "
                 "--set policy.admission=early_reject_predict %s",
                 params[i]);
        json_decref(run(trace, db, frac, extra));
        snprintf(sql, sizeof sql, "SELECT done_ms FROM requests WHERE run_id = %d AND id = 1", i + 1);
        assert_double_equal(sql_num(db, sql), (b + S) * 1e3, 1e-3); /* B's timeline as worked above */
        snprintf(sql, sizeof sql, "SELECT status FROM requests WHERE run_id = %d AND id = 4", i + 1);
        char *status = tu_sql_text(db, sql);
        printf("X with %s: %s\n", i ? params[i] + 6 : "the running t_d", status);
        assert_string_equal(status, want[i]);
        free(status);
    }
    tu_remove_temp(db);
    tu_remove_temp(trace);
    sim_config_free(&cfg);
}

static void test_bad_choice_named(void **state)
{
    tu_expect_exit("run --set decode.kv_allocation=lazy", 2, "decode.kv_allocation");
    tu_expect_exit("run --set decode.preemption=kill", 2, "decode.preemption");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_incremental_recompute),         cmocka_unit_test(test_incremental_swap),
        cmocka_unit_test(test_reserve_never_preempts),        cmocka_unit_test(test_kv_receive_dram_adds_the_load),
        cmocka_unit_test(test_predict_pool_by_hand),          cmocka_unit_test(test_bad_choice_named),
        cmocka_unit_test(test_first_token_prefill_or_decode), cmocka_unit_test(test_predict_t_d_from_batch_entry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
