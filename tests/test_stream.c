/* tests/test_stream.c — long replays in bounded memory (issue 45 items 2
 * and 3; docs/run.md, "Long traces"):
 *
 *  - the streamed summary (per-request values written to temporary columns
 *    past a window of ids) equals the in-memory one, key for key and bit
 *    for bit, on the bundled traces' first 5,000 requests, for both
 *    serving models;
 *  - every request a replay reads is freed, and the most alive at once is
 *    bounded by the requests in the system (from the requests rows) plus
 *    the one read ahead;
 *  - radix selection over a column equals sorting (ties, negatives, NAN
 *    gaps), and the online steady-state window equals sim_steady_window on
 *    random request sets;
 *  - trace gen writes as it goes: its bytes through a pipe equal its file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/testutil.h"

#include <math.h>

#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <sqlite3.h>

#include "sim/config/config.h"
#include "sim/results/dynamics.h"
#include "sim/results/results.h"
#include "sim/results/spill.h"
#include "sim/serving/serving.h"
#include "sim/trace/trace.h"

typedef struct replay_out {
    json_t *summary;
    int64_t peak_live;
    int64_t max_in_system; /* from the requests rows: completed requests between arrival and done */
} replay_out;

/* The most requests in the system at once, from the rows: each completed
 * request from arrival_ms to done_ms (every request of these runs completes). */
static int64_t max_in_system(sim_results *db)
{
    sqlite3_stmt *st;
    const char *sql = "SELECT t, d FROM (SELECT arrival_ms AS t, 1 AS d FROM requests UNION ALL "
                      "SELECT done_ms, -1 FROM requests) ORDER BY t, d";
    assert_int_equal(sqlite3_prepare_v2(sim_results_handle(db), sql, -1, &st, NULL), SQLITE_OK);
    int64_t n = 0, most = 0;
    while (sqlite3_step(st) == SQLITE_ROW)
        if ((n += sqlite3_column_int(st, 1)) > most) most = n;
    sqlite3_finalize(st);
    return most;
}

/* The first 5,000 requests of each trace: a window of 1,024 ids slides
 * four times over them, and the sanitizer build replays them in a third of
 * the conversation trace's time. */
#define STREAM_LIMIT "5000"

/* Replay trace (with one more --set, or NULL) with the summary keeping at
 * most memory_ids requests in memory, rows in a temporary results file. */
static replay_out replay(const char *trace, const char *set, int64_t memory_ids)
{
    char tp[512], db_path[] = "/tmp/kvsim-test-stream-XXXXXX";
    snprintf(tp, sizeof tp, "trace.path=%s", trace);
    char *sets[] = {tp, (char *)(set ? set : "trace.speed=1"), (char *)"trace.limit=" STREAM_LIMIT};
    sim_config cfg;
    sim_err err = {{0}};
    assert_int_equal(sim_config_load(&cfg, NULL, sets, 3, &err), 0);
    int fd = mkstemp(db_path);
    assert_true(fd >= 0);
    close(fd);
    unlink(db_path);
    sim_results *db;
    assert_int_equal(sim_results_open(&db, db_path, &err), 0);
    sim_results_set_memory_ids(db, memory_ids);
    sim_run_info info = {.config_json = "{}", .config_hash = cfg.hash, .trace_path = trace, .seed = cfg.seed};
    int64_t id;
    replay_out o = {0};
    assert_int_equal(sim_results_begin_run(db, &info, &id, &err), 0);
    sim_request_live_reset();
    if (sim_serving_replay(&cfg, db, &o.summary, &err)) fail_msg("%s", err.msg);
    o.peak_live = sim_request_live_peak();
    assert_int_equal(sim_request_live(), 0); /* every request read was freed */
    o.max_in_system = max_in_system(db);
    sim_results_close(db);
    sim_config_free(&cfg);
    char side[600];
    unlink(db_path);
    snprintf(side, sizeof side, "%s-wal", db_path), unlink(side);
    snprintf(side, sizeof side, "%s-shm", db_path), unlink(side);
    return o;
}

static const char *const traces[] = {"traces/mooncake/conversation_trace.jsonl.gz",
                                     "traces/mooncake/mooncake_synthetic_trace.jsonl.gz"};
static const char *const models[] = {NULL, "cluster.mode=aggregated"};

/* The summary of a window of 1,024 ids (streamed past it) equals the
 * in-memory summary, but for the key that says it was streamed. */
static void test_streamed_equals_memory(void **state)
{
    (void)state;
    for (size_t t = 0; t < sizeof traces / sizeof traces[0]; t++)
        for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
            replay_out mem = replay(traces[t], models[m], SIM_RESULTS_MEMORY_IDS);
            replay_out str = replay(traces[t], models[m], 1024);
            int64_t n = json_integer_value(json_object_get(mem.summary, "requests"));
            assert_true(n > 2048 && n <= atoi(STREAM_LIMIT)); /* the window slid */
            assert_null(json_object_get(mem.summary, "streamed"));
            json_t *note = json_object_get(str.summary, "streamed");
            assert_non_null(note);
            int64_t window = json_integer_value(json_object_get(note, "memory_requests"));
            print_message("%s %s: %lld requests, window %lld ids, at most %lld in the system, %lld alive\n", traces[t],
                          models[m] ? models[m] : "", (long long)n, (long long)window, (long long)str.max_in_system,
                          (long long)str.peak_live);
            json_object_del(str.summary, "streamed");
            if (!json_equal(mem.summary, str.summary)) {
                char *a = json_dumps(mem.summary, JSON_REAL_PRECISION(17) | JSON_SORT_KEYS);
                char *b = json_dumps(str.summary, JSON_REAL_PRECISION(17) | JSON_SORT_KEYS);
                fail_msg("%s %s:\nmemory   %s\nstreamed %s", traces[t], models[m] ? models[m] : "", a, b);
            }
            /* the requests alive follow the requests in the system, plus the one read ahead */
            assert_true(str.peak_live <= str.max_in_system + 1);
            json_decref(mem.summary);
            json_decref(str.summary);
        }
}

/* ---- radix selection and the online window against second implementations ---- */

static void test_spill_select(void **state)
{
    (void)state;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 11);
    sim_err err;
    for (int round = 0; round < 3; round++) {
        int64_t n = round == 0 ? 10 : round == 1 ? 100000 : 300000;
        sim_spill s;
        assert_int_equal(sim_spill_open(&s, &err), 0);
        double *sorted = malloc((size_t)n * sizeof *sorted), sum = 0;
        int64_t present = 0;
        for (int64_t i = 0; i < n; i++) {
            double u = gsl_rng_uniform(rng), v;
            if (u < 0.05) v = NAN;                                      /* absent */
            else if (u < 0.3) v = (double)gsl_rng_uniform_int(rng, 50); /* many ties */
            else v = (gsl_rng_uniform(rng) - 0.2) * pow(10, gsl_rng_uniform_int(rng, 12) - 4.0);
            sim_spill_put(&s, v);
            if (!isnan(v)) sorted[present++] = v, sum += v;
        }
        assert_int_equal(s.n, present);
        assert_true(s.sum == sum);
        gsl_sort(sorted, 1, (size_t)present);
        int64_t ranks[6] = {0, present / 2, present / 3, present - 1, (present * 99) / 100, present / 7};
        double out[6];
        assert_int_equal(sim_spill_select(&s, ranks, 6, out, &err), 0);
        for (int j = 0; j < 6; j++) assert_true(out[j] == sorted[ranks[j]]);
        free(sorted);
        sim_spill_close(&s);
    }
    gsl_rng_free(rng);
}

/* Random arrivals (some at equal times, some rejected at arrival) fed to
 * sim_steady_acc in time order give sim_steady_window's window. */
static void test_online_window(void **state)
{
    (void)state;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 5);
    for (int round = 0; round < 200; round++) {
        size_t n = 1 + gsl_rng_uniform_int(rng, 300);
        double *arr = malloc(n * sizeof *arr), *left = malloc(n * sizeof *left), t = 0;
        for (size_t i = 0; i < n; i++) {
            t += gsl_rng_uniform(rng) < 0.2 ? 0 : floor(gsl_rng_uniform(rng) * 40);
            arr[i] = t;
            left[i] = gsl_rng_uniform(rng) < 0.1 ? t : t + floor(gsl_rng_uniform(rng) * 400);
        }
        /* changes in time order: arrivals and departures merged (departures last at a tie) */
        sim_steady_acc acc = {0};
        size_t *dep = malloc(n * sizeof *dep);
        for (size_t i = 0; i < n; i++) dep[i] = i;
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0 && left[dep[j]] < left[dep[j - 1]]; j--) {
                size_t x = dep[j];
                dep[j] = dep[j - 1], dep[j - 1] = x;
            }
        size_t d = 0;
        for (size_t i = 0; i < n; i++) {
            while (d < n && left[dep[d]] < arr[i]) sim_steady_change(&acc, left[dep[d++]], -1);
            sim_steady_change(&acc, arr[i], +1);
        }
        while (d < n) sim_steady_change(&acc, left[dep[d++]], -1);
        double s1, e1, s2, e2;
        bool b1 = sim_steady_window(arr, left, n, &s1, &e1), b2 = sim_steady_acc_window(&acc, &s2, &e2);
        assert_int_equal(b1, b2);
        assert_true(s1 == s2);
        assert_true(e1 == e2);
        sim_steady_acc_free(&acc);
        free(arr), free(left), free(dep);
    }
    gsl_rng_free(rng);
}

/* trace gen writes line by line: its output through a pipe is the file's. */
static void test_gen_streams(void **state)
{
    (void)state;
    char dir[] = "/tmp/kvsim-test-gen-XXXXXX", cmd[1024];
    assert_non_null(mkdtemp(dir));
    snprintf(cmd, sizeof cmd,
             "%s trace gen --requests 20000 --rate 5 --seed 7 -o %s/a.jsonl 2>/dev/null && "
             "%s trace gen --requests 20000 --rate 5 --seed 7 -o - 2>/dev/null | cmp -s - %s/a.jsonl",
             tu_kvsim_bin(), dir, tu_kvsim_bin(), dir);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spill_select),
        cmocka_unit_test(test_online_window),
        cmocka_unit_test(test_gen_streams),
        cmocka_unit_test(test_streamed_equals_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
