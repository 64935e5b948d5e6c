/* tests/test_definitions.c — the definitions of docs/definitions.md against
 * what the code computes, each from values worked out independently:
 *
 *  - effective requests, SLO attainment and goodput recomputed from the
 *    requests rows (with the documented SQL) equal the summary's;
 *  - samples.queue_len (waiting) and samples.running (in service) on a
 *    hand-worked three-request trace, and utilisation.decode (the share of
 *    decode capacity running batches held) on the same run;
 *  - a results database written before `running` existed still opens and
 *    gets the column;
 *  - `baseline` checks the decode load at that moment after prefill, as
 *    `early_reject` does at arrival (sched_decode_load_now);
 *  - policy.params.decode_signal=1: the decode pool's load (Mooncake
 *    §4.3.1), the mean predicted TBT / SLO_tbt over the active decode
 *    instances, on a hand-made pool, as all three admission policies judge it;
 *  - `kvsim plan slo` reads decode_load, or utilisation.decode from a
 *    summary recorded before decode_load existed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <jansson.h>
#include <sqlite3.h>

#include "sched/registry.h"
#include "sched/sched.h"
#include "sim/config/config.h"
#include "sim/cost/cost.h"
#include "sim/cost/estimator.h"
#include "sim/slo/plan_slo.h"

static double sql_num(const char *db_path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    double v = NAN;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* The default config and its cost model (cfg freed by the caller). */
static void default_cost(sim_config *cfg, sim_cost *cost)
{
    sim_err err;
    assert_int_equal(sim_config_load(cfg, NULL, NULL, 0, &err), 0);
    assert_int_equal(sim_cost_init(cost, cfg, &err), 0);
}

static double num(const json_t *j, const char *a, const char *b)
{
    const json_t *v = json_object_get(j, a);
    return json_number_value(b ? json_object_get(v, b) : v);
}

/* `kvsim run --trace trace --db db extra`: its summary at full precision
 * (the runs row; the printed one rounds to 10 digits). */
static json_t *run_db(const char *trace, const char *db, const char *extra)
{
    char args[2048];
    snprintf(args, sizeof args, "run --json --trace %s --db %s %s", trace, db, extra);
    json_decref(tu_kvsim_json(args));
    char *text = tu_sql_text(db, "SELECT summary_json FROM runs ORDER BY id DESC LIMIT 1");
    json_t *s = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(s);
    return s;
}

/* ---- effective requests ------------------------------------------------------ */

/* 200 requests, one every 100 ms; every fourth has one output token (no
 * TBT), the others 2–151; inputs 2,000–8,000 tokens, three shared
 * 4-block prompts. On 4P1D with SLOs of 800 ms and 16 ms some requests of
 * each kind meet the SLOs and some miss them. */
static char *effective_trace(void)
{
    char *path = tu_write_temp("");
    FILE *f = fopen(path, "w");
    long long next = 1000;
    for (int i = 0; i < 200; i++) {
        int input = 2000 + (i * 1237) % 6001, output = i % 4 == 0 ? 1 : 2 + (i * 37) % 150;
        fprintf(f, "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": %d, \"hash_ids\": [", i * 100, input,
                output);
        for (int b = 0; b < (input + 511) / 512; b++)
            fprintf(f, "%s%lld", b ? ", " : "", b < 4 ? i % 3 * 10 + b : next++);
        fputs("]}\n", f);
    }
    fclose(f);
    return path;
}

/* The definition applied to every requests row in C: completed, TTFT ≤
 * 800 ms, and no TBT or TBT ≤ 16 ms. *no_tbt: effective rows without a TBT. */
static int64_t effective_by_rows(const char *db_path, int64_t *no_tbt)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT status, ttft_ms, tbt_ms, output_len FROM requests", -1, &st, NULL),
                     SQLITE_OK);
    int64_t n = 0;
    *no_tbt = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        bool done = !strcmp((const char *)sqlite3_column_text(st, 0), "completed");
        bool has_tbt = sqlite3_column_type(st, 2) != SQLITE_NULL;
        assert_true(!done || has_tbt == (sqlite3_column_int(st, 3) > 1)); /* TBT exactly when output > 1 */
        bool eff = done && sqlite3_column_double(st, 1) <= 800 && (!has_tbt || sqlite3_column_double(st, 2) <= 16);
        n += eff;
        *no_tbt += eff && !has_tbt;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

static void test_effective_from_rows(void **state)
{
    char *trace = effective_trace(), *db = tu_temp_path();
    json_t *s =
        run_db(trace, db, "--set cluster.prefill=4 --set cluster.decode=1 --set slo.ttft_ms=800 --set slo.tbt_ms=16");
    int64_t no_tbt, eff = effective_by_rows(db, &no_tbt);
    double summary = num(s, "effective", NULL);
    printf("effective: summary %.0f, rows %lld (%lld without a TBT)\n", summary, (long long)eff, (long long)no_tbt);
    assert_true(eff > 0 && eff < 200 && no_tbt > 0);
    assert_true(summary == (double)eff);
    /* the SQL of docs/definitions.md, and the effective column */
    assert_true(sql_num(db, "SELECT COUNT(*) FROM requests WHERE run_id = 1 AND ttft_ms <= 800"
                            " AND (tbt_ms IS NULL OR tbt_ms <= 16)") == summary);
    assert_true(sql_num(db, "SELECT SUM(effective) FROM requests") == summary);
    /* both branches of the TBT condition matter on this run */
    assert_true(sql_num(db, "SELECT COUNT(*) FROM requests WHERE ttft_ms <= 800 AND tbt_ms <= 16") ==
                summary - (double)no_tbt);
    assert_true(sql_num(db, "SELECT COUNT(*) FROM requests WHERE tbt_ms IS NULL AND ttft_ms > 800") > 0);
    /* attainment = effective / requests; goodput = effective / (last end − first arrival) */
    double span_s = sql_num(db, "SELECT (MAX(done_ms) - MIN(arrival_ms)) / 1e3 FROM requests");
    assert_true(sql_num(db, "SELECT COUNT(*) FROM requests WHERE status = 'completed'") == 200);
    assert_double_equal(num(s, "slo_attainment", NULL), (double)eff / 200, 1e-12);
    assert_double_equal(num(s, "sim_seconds", NULL), span_s, 1e-9);
    assert_double_equal(num(s, "goodput_rps", NULL), (double)eff / span_s, 1e-9);
    json_decref(s);
    tu_remove_temp(db);
    tu_remove_temp(trace);
}

/* ---- samples.queue_len and samples.running ----------------------------------- */

#define TINY_N 12000 /* input tokens of each request */
#define TINY_O 173   /* output tokens of each request */
#define TINY_SETS                                                                                                      \
    "--set cluster.prefill=1 --set cluster.decode=1 --set cluster.layerwise=false --set cluster.decode_max_batch=1 "   \
    "--set metrics.first_token=prefill"

/* Three requests of 12,000 distinct tokens and 173 output tokens at 0, 1
 * and 2 ms on 1P1D, no layer-wise overlap, decode batches of one. With p
 * the prefill time, T the KV transfer, L its load from the decode node's
 * DRAM into HBM (decode.kv_receive = dram; it holds the batch's one place)
 * and D a decode (172 iterations over a growing context: the prefill's
 * token is each request's first, metrics.first_token = prefill):
 *   prefill: A [0, p], B [p, 2p], C [2p, 3p];
 *   KV at decode: A p+T, B 2p+T, C 3p+T;
 *   decode: A [p+T+L, p+T+L+D], B then [.., p+T+2(L+D)], C then [.., p+T+3(L+D)].
 * With p ≈ 1.6 s, T ≈ 0.04 s, L ≈ 0.03 s, D ≈ 2.5 s (checked below) the ticks every
 * second see (queue_len, running): */
static const int want_prefill[10][2] = {{0, 1}, {2, 1}, {1, 1}, {1, 1}, {0, 1}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}};
static const int want_decode[10][2] = {{0, 0}, {0, 0}, {0, 1}, {0, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 1}, {0, 1}, {0, 1}};

/* The timing the table above assumes, from the cost model. */
static void tiny_timing(const sim_cost *cost, double *p, double *T, double *L, double *D)
{
    *p = sim_cost_prefill_s(cost, TINY_N, 0);
    *T = sim_cost_nic_s(cost, TINY_N * cost->kv_bytes_per_token);
    *L = sim_cost_h2d_s(cost, TINY_N * cost->kv_bytes_per_token);
    *D = 0;
    for (int k = 1; k < TINY_O; k++) *D += sim_cost_decode_iter_s(cost, 1, TINY_N + k);
    double a_end = *p + *T + *L + *D, b_end = a_end + *L + *D, c_end = b_end + *L + *D;
    printf("tiny trace: p %.4f s, T %.4f s, L %.4f s, D %.4f s\n", *p, *T, *L, *D);
    assert_true(1.5 < *p && *p < 5.0 / 3);                                 /* t=1..4: A, B, B, C prefilling; t=5 none */
    assert_true(*p + *T < 2 && 3 < a_end && 2 * *p + *T < 4 && 4 < a_end); /* A decodes at 2..4; B waits at 4 */
    assert_true(a_end < 5 && 3 * *p + *T < 5 && 6 < b_end);                /* B decodes at 5, 6; C waits */
    assert_true(b_end < 7 && 9 < c_end && c_end < 10);                     /* C decodes at 7..9 */
}

static char *tiny_trace(void)
{
    char *path = tu_write_temp("");
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 3; i++) tu_trace_request(f, i, TINY_N, TINY_O, 1 + i * 100);
    fclose(f);
    return path;
}

static void test_samples_queue_and_running(void **state)
{
    sim_config cfg;
    sim_cost cost;
    default_cost(&cfg, &cost);
    double p, T, L, D;
    tiny_timing(&cost, &p, &T, &L, &D);
    char *trace = tiny_trace(), *db = tu_temp_path();
    json_t *s = run_db(trace, db, TINY_SETS);
    for (int t = 0; t < 10; t++)
        for (int inst = 0; inst < 2; inst++) {
            const int *w = inst == 0 ? want_prefill[t] : want_decode[t];
            char q[256];
            snprintf(q, sizeof q, "SELECT queue_len * 10 + running FROM samples WHERE t_ms = %d AND instance = %d",
                     t * 1000, inst);
            double got = sql_num(db, q);
            if (got != w[0] * 10 + w[1])
                fail_msg("t=%d s, %s: queue_len/running %.0f/%.0f, expected %d/%d", t, inst ? "decode" : "prefill",
                         floor(got / 10), fmod(got, 10), w[0], w[1]);
        }
    assert_true(sql_num(db, "SELECT COUNT(*) FROM samples WHERE role = 'decode' AND running <> batch") == 0);
    /* utilisation.decode: three decodes, each of O − 1 iterations, the k-th
     * holding N + k tokens of the capacity C (decode.kv_allocation =
     * incremental: the KV grows a token a step), over the one decode
     * instance's p + T + 3(L + D) seconds */
    double C = (double)sim_cost_decode_kv_tokens(&cost), span = p + T + 3 * (L + D), held = 0;
    for (int k = 1; k < TINY_O; k++) held += sim_cost_decode_iter_s(&cost, 1, TINY_N + k) * (TINY_N + k);
    assert_double_equal(num(s, "sim_seconds", NULL), span, 1e-6);
    assert_double_equal(num(s, "utilisation", "decode"), 3 * held / C / span, 1e-9);
    assert_true(num(s, "decode_load", NULL) > 0);
    json_decref(s);
    tu_remove_temp(db);
    tu_remove_temp(trace);
    sim_config_free(&cfg);
}

/* A results file written before samples had `running` (one old row, run 99)
 * opens, gets the column (NULL in the old row) and takes a new run's rows. */
static void test_old_results_db_gets_running(void **state)
{
    char *db = tu_temp_path(), *trace = tiny_trace();
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h,
                                  "CREATE TABLE samples(run_id INTEGER, t_ms REAL, instance INTEGER, role TEXT,"
                                  " state TEXT, queue_len INTEGER, load REAL, batch INTEGER, kv_used REAL);"
                                  "INSERT INTO samples VALUES(99, 0, 0, 'prefill', 'active', 1, 0.5, 0, 0);",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(h);
    json_decref(run_db(trace, db, TINY_SETS));
    assert_true(sql_num(db, "SELECT COUNT(*) FROM pragma_table_info('samples') WHERE name = 'running'") == 1);
    assert_true(isnan(sql_num(db, "SELECT running FROM samples WHERE run_id = 99")));
    assert_true(sql_num(db, "SELECT COUNT(*) FROM samples WHERE run_id = 1 AND running IS NULL") == 0);
    assert_true(sql_num(db, "SELECT queue_len * 10 + running FROM samples WHERE run_id = 1 AND t_ms = 1000"
                            " AND instance = 0") == 21);
    /* and the preemption counts, after it (NULL in the old row, 0 in the new run's) */
    assert_true(isnan(sql_num(db, "SELECT preemptions FROM samples WHERE run_id = 99")));
    assert_true(sql_num(db, "SELECT COUNT(*) FROM samples WHERE run_id = 1 AND preemptions IS NULL") == 0);
    assert_true(sql_num(db, "SELECT COUNT(*) FROM pragma_table_info('requests') WHERE name = 'preemptions'") == 1);
    tu_remove_temp(db);
    tu_remove_temp(trace);
}

/* ---- the decode load baseline checks --------------------------------------------- */

/* The default config, its cost model and an estimator without noise over
 * it; returns the decode instance's KV capacity in tokens. */
static int64_t decode_setup(sim_config *cfg, sim_cost *cost, sim_estimator *est)
{
    default_cost(cfg, cost);
    *est = (sim_estimator){.cost = cost};
    return sim_cost_decode_kv_tokens(cost);
}

/* One decode instance of capacity C with 4 requests in its batch and the
 * KV of requests that reached it `resident`, while 40 more admitted
 * requests still wait in prefill queues: reserved = C × 1.1. A request of
 * 8,000 + 500 tokens has just been prefilled. Its decode load at that
 * moment is max(iteration over 5 requests and resident + 8,500 tokens /
 * 100 ms, (resident + 8,500) / C); the reservations of the requests still
 * in prefill (load 1.1 > 1) are not counted. */
static void test_baseline_checks_current_decode_load(void **state)
{
    sim_config cfg;
    sim_cost cost;
    sim_err err;
    sim_estimator est;
    int64_t C = decode_setup(&cfg, &cost, &est);
    sim_request req = {.input_len = 8000, .output_len = 500};
    const sched_admission_ops *base = sched_admission_lookup("baseline"),
                              *early = sched_admission_lookup("early_reject");
    void *bst = NULL, *est_ = NULL;
    assert_int_equal(base->create(&bst, cfg.params, &err), 0);
    assert_int_equal(early->create(&est_, cfg.params, &err), 0);
    sched_prefill_view pv = {.node = 0, .active = true};
    sched_route route = {.prefill = 0, .transfer_from = -1, .service_s = 1, .ttft_s = 1};
    sched_decode_choice dec = {.decode = 0};
    const int64_t resident[] = {C / 2, C - 1000};
    for (int i = 0; i < 2; i++) {
        sched_decode_view d = {.node = 1,
                               .active = true,
                               .batch = 4,
                               .pending = 41,
                               .kv_tokens = C + C / 10,
                               .kv_resident = resident[i],
                               .kv_capacity = C,
                               .ctx_tokens = resident[i]};
        sched_ctx ctx = {.cfg = &cfg,
                         .est = &est,
                         .n_prefill = 1,
                         .prefill = &pv,
                         .n_decode = 1,
                         .decode = &d,
                         .kv_bytes_per_token = cost.kv_bytes_per_token};
        double kv = (double)(resident[i] + 8500), tbt = sim_cost_decode_iter_s(&cost, 5, resident[i] + 8500);
        double want = fmax(tbt / 0.1, kv / (double)C);
        printf("decode load now %.4f (KV %.0f of %lld; reserved %.2f of capacity)\n", want, kv, (long long)C,
               (double)d.kv_tokens / (double)C);
        assert_double_equal(sched_decode_load_now(&ctx, &req, 0, NULL), want, 1e-12);
        bool accept = want <= 1;
        assert_true(accept == (i == 0));
        assert_true(base->after_prefill(bst, &ctx, &req, 0) == accept);
        assert_true((early->admit(est_, &ctx, &req, &route, &dec) == SCHED_ACCEPT) == accept);
    }
    base->destroy(bst);
    early->destroy(est_);
    sim_config_free(&cfg);
}

/* ---- the decode-pool load (decode_signal=1) -------------------------------------- */

/* The verdicts of admission policy `name` with load_threshold just above
 * and just below `want` (and decode_signal=1) are accept and reject: what
 * it judges is `want` to 1e-9. after: judge after prefill (baseline). */
static void judges(const char *name, const sched_ctx *ctx, const sim_request *req, double want, bool after)
{
    const sched_admission_ops *ops = sched_admission_lookup(name);
    sched_route route = {.prefill = 0, .transfer_from = -1, .service_s = 1e-3, .ttft_s = 1e-3};
    sched_decode_choice dec = {.decode = 1};
    for (int side = 0; side < 2; side++) {
        json_t *params =
            json_pack("{s:f, s:i}", "load_threshold", want * (side ? 1 - 1e-9 : 1 + 1e-9), "decode_signal", 1);
        void *st = NULL;
        sim_err err;
        assert_int_equal(ops->create(&st, params, &err), 0);
        bool ok = after ? ops->after_prefill(st, ctx, req, 1) : ops->admit(st, ctx, req, &route, &dec) == SCHED_ACCEPT;
        if (ok != (side == 0))
            fail_msg("%s: load %.9f, threshold %s it: %s", name, want, side ? "below" : "above",
                     ok ? "accepted" : "rejected");
        ops->destroy(st);
        json_decref(params);
    }
}

/* Three decode instances: 0 runs 6 requests over 30,000 KV tokens; 1 is
 * nearly full, 3 requests over C − 1,000 tokens; 2 is switching (not
 * active), with 40 requests. A request of 8,000 + 500 tokens joins 1
 * (incremental: 8,001 KV tokens). Per instance (today's default) its load
 * is (C + 7,001) / C > 1 on KV. The pool's load is the mean over the two
 * active instances of iteration time / 100 ms, no KV term:
 * (it(6, 30,000) + it(4, C + 7,001)) / 2 / 0.1. early_reject at arrival and
 * baseline after prefill judge that; early_reject_predict with nothing in
 * flight judges the predicted pool — this request alone, spread over the
 * two active instances: it(⌈1/2⌉ = 1, ⌊8,001 / 2⌋) / 0.1. */
static void test_decode_pool_load(void **state)
{
    sim_config cfg;
    sim_cost cost;
    sim_estimator est;
    int64_t C = decode_setup(&cfg, &cost, &est);
    sim_request req = {.input_len = 8000, .output_len = 500};
    sched_prefill_view pv = {.node = 0, .active = true};
    sched_decode_view d[3] = {
        {.node = 1, .active = true, .batch = 6, .kv_resident = 30000, .kv_capacity = C, .ctx_tokens = 30000},
        {.node = 2, .active = true, .batch = 3, .kv_resident = C - 1000, .kv_capacity = C, .ctx_tokens = C - 1000},
        {.node = 3, .active = false, .batch = 40, .kv_resident = C / 2, .kv_capacity = C, .ctx_tokens = C / 2},
    };
    sched_ctx ctx = {.cfg = &cfg,
                     .est = &est,
                     .n_prefill = 1,
                     .prefill = &pv,
                     .n_decode = 3,
                     .decode = d,
                     .kv_bytes_per_token = cost.kv_bytes_per_token,
                     .kv_incremental = true};
    double pool = (sim_cost_decode_iter_s(&cost, 6, 30000) + sim_cost_decode_iter_s(&cost, 4, C + 7001)) / 2 / 0.1;
    double predicted = sim_cost_decode_iter_s(&cost, 1, 8001 / 2) / 0.1;
    printf("decode-pool load %.4f (instance 1 alone: %.4f), predicted %.4f\n", pool,
           sched_decode_load_now(&ctx, &req, 1, NULL), predicted);
    assert_true(sched_decode_load_now(&ctx, &req, 1, NULL) > 1 && pool < 1);
    assert_double_equal(sched_decode_pool_load_now(&ctx, &req, 1), pool, 1e-12);
    judges("early_reject", &ctx, &req, pool, false);
    judges("baseline", &ctx, &req, pool, true);
    judges("early_reject_predict", &ctx, &req, predicted, false);
    d[0].active = d[1].active = false;
    assert_true(isinf(sched_decode_pool_load_now(&ctx, &req, 1)));
    sim_config_free(&cfg);
}

/* ---- kvsim plan slo's decode load ----------------------------------------------- */

static void test_plan_slo_reads_decode_load(void **state)
{
    json_t *now = json_loads("{\"utilisation\": {\"prefill\": 0.3, \"decode\": 0.02}, \"decode_load\": 1.4}", 0, NULL);
    json_t *old = json_loads("{\"utilisation\": {\"prefill\": 0.3, \"decode\": 1.4}}", 0, NULL);
    assert_double_equal(sim_slo_decode_load(now), 1.4, 0);
    assert_double_equal(sim_slo_decode_load(old), 1.4, 0);
    json_decref(now);
    json_decref(old);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_effective_from_rows),         cmocka_unit_test(test_samples_queue_and_running),
        cmocka_unit_test(test_old_results_db_gets_running), cmocka_unit_test(test_baseline_checks_current_decode_load),
        cmocka_unit_test(test_plan_slo_reads_decode_load),  cmocka_unit_test(test_decode_pool_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
