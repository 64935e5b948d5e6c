/* tests/test_run.c — `kvsim run` end to end: determinism, conservation
 * invariants under every baseline policy, the sanity of the model on the
 * bundled Mooncake trace, and bad input (exit 2 with a message naming it).
 *
 * Runs go through the CLI into SQLite files; the invariants are checked with
 * SQL over the requests table, against bounds computed from the cost model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <jansson.h>
#include <sqlite3.h>

#include "sched/registry.h"
#include "sim/config/config.h"
#include "sim/serving/serving.h"
#include "sim/store/cache_model.h"
#include "sim/store/evict/registry.h"
#include "sim/cost/cost.h"

/* ---- a small trace with shared prefixes ---------------------------------- */

/* 240 requests, one every 150 ms; 4 "system prompts" of 6 blocks shared by
 * turns; inputs 3,000–9,000 tokens; outputs 1–120 tokens. Deterministic. */
static char *small_trace(void)
{
    size_t cap = 1 << 20, n = 0;
    char *text = malloc(cap);
    int64_t next_id = 1000;
    for (int i = 0; i < 240; i++) {
        int prompt = (i * 7) % 4, input = 3000 + (i * 997) % 6001, output = 1 + (i * 31) % 120;
        int blocks = (input + 511) / 512;
        n += (size_t)snprintf(text + n, cap - n,
                              "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": %d, "
                              "\"hash_ids\": [",
                              i * 150, input, output);
        for (int b = 0; b < blocks; b++) {
            long long id = b < 6 ? prompt * 10 + b : next_id++;
            n += (size_t)snprintf(text + n, cap - n, "%s%lld", b ? ", " : "", id);
        }
        n += (size_t)snprintf(text + n, cap - n, "]}\n");
    }
    char *path = tu_write_temp(text);
    free(text);
    return path;
}

static char *trace_path;

static int setup_trace(void **state)
{
    trace_path = small_trace();
    return 0;
}

static int remove_trace(void **state)
{
    tu_remove_temp(trace_path);
    return 0;
}

/* ---- helpers ---------------------------------------------------------------- */

static json_t *run_json(const char *extra)
{
    char args[4096];
    snprintf(args, sizeof args, "run --trace %s --json %s", trace_path, extra);
    return tu_kvsim_json(args);
}

/* One number from a SQL query. */
static double sql_num(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    double v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_double(st, 0) : -1;
    sqlite3_finalize(st);
    return v;
}

/* All request rows rendered as text, in id order. */
static char *dump_requests(const char *db_path)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT * FROM requests ORDER BY id", -1, &st, NULL), SQLITE_OK);
    size_t cap = 1 << 16, n = 0;
    char *out = malloc(cap);
    out[0] = 0;
    while (sqlite3_step(st) == SQLITE_ROW)
        for (int c = 1; c < sqlite3_column_count(st); c++) { /* column 0 is run_id */
            const char *v = (const char *)sqlite3_column_text(st, c);
            size_t need = strlen(v ? v : "NULL") + 2;
            if (n + need >= cap) out = realloc(out, cap *= 2);
            n += (size_t)snprintf(out + n, cap - n, "%s|", v ? v : "NULL");
        }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
}

static void strip_wall(json_t *summary)
{
    json_object_del(summary, "wall_seconds");
    json_object_del(summary, "run_id");
}

/* ---- determinism ------------------------------------------------------------- */

/* Same trace + config + seed ⇒ identical summary (wall time aside) and
 * identical request rows, with the simplest policies and with the whole
 * conductor on (kvcentric, predictive early rejection, dynamic PD ratio,
 * instance failures); with noise on, a different seed changes them. */
static void check_deterministic(const char *config)
{
    char *db1 = tu_temp_path(), *db2 = tu_temp_path(), args[2048];
    snprintf(args, sizeof args, "%s --db %s", config, db1);
    json_t *a = run_json(args);
    snprintf(args, sizeof args, "%s --db %s", config, db2);
    json_t *b = run_json(args);
    strip_wall(a);
    strip_wall(b);
    assert_true(json_equal(a, b));
    char *ra = dump_requests(db1), *rb = dump_requests(db2);
    assert_string_equal(ra, rb);
    free(ra), free(rb), json_decref(a), json_decref(b);
    unlink(db1), unlink(db2), free(db1), free(db2);
}

static void test_determinism(void **state)
{
    const char *noisy = "--set cost.noise=0.1 --set policy.router=random --seed 5";
    check_deterministic(noisy);
    check_deterministic("--set cost.noise=0.1 --set policy.router=kvcentric --set policy.admission=early_reject_predict"
                        " --set policy.pd_controller=dynamic --set policy.params.pd_period_s=3"
                        " --set 'faults=[{\"at_ms\":5000,\"instance\":1,\"down_ms\":4000}]'"
                        " --set metrics.replica_period_ms=2000 --seed 3");
    char args[512];
    snprintf(args, sizeof args, "%s", noisy);
    json_t *a = run_json(args), *c = run_json("--set cost.noise=0.1 --set policy.router=random --seed 6");
    strip_wall(a);
    strip_wall(c);
    assert_false(json_equal(a, c));
    json_decref(a), json_decref(c);
}

/* ---- conservation --------------------------------------------------------------- */

/* label: a run's name, or for a registry entry its "key=name" set, which
 * the cost bounds are computed under (an aggregated instance's cost model
 * is not the disaggregated default's). */
static void check_invariants(const char *db_path, const char *label)
{
    sqlite3 *db;
    sim_config cfg;
    sim_cost cost;
    sim_err err;
    char set[128], *sets[] = {set};
    snprintf(set, sizeof set, "%s", label);
    assert_int_equal(sim_config_load(&cfg, NULL, sets, strchr(label, '=') ? 1 : 0, &err), 0);
    assert_int_equal(sim_cost_init(&cost, &cfg, &err), 0);
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    /* every request ends exactly once (id is the primary key; count = 240) */
    assert_int_equal((int)sql_num(db, "SELECT COUNT(*) FROM requests"), 240);
    assert_int_equal((int)sql_num(db, "SELECT COUNT(DISTINCT id) FROM requests"), 240);
    assert_int_equal(
        (int)sql_num(db, "SELECT COUNT(*) FROM requests WHERE status NOT IN ('completed','rejected','lost')"), 0);
    /* tokens emitted = Σ output_length of completed requests; rejected emit none */
    assert_true(sql_num(db, "SELECT SUM(tokens) - SUM(output_len) FROM requests WHERE status='completed'") == 0);
    assert_true(sql_num(db, "SELECT COALESCE(SUM(tokens),0) FROM requests WHERE status!='completed'") == 0);
    /* TTFT ≥ the prefill time of its uncached part; TBT ≥ the smallest
     * iteration it could have seen (batch of one holding its own context). */
    sqlite3_stmt *st;
    assert_int_equal(
        sqlite3_prepare_v2(db,
                           "SELECT input_len, hit_tokens, ttft_ms, tbt_ms, output_len, prefill_gpu_s FROM requests"
                           " WHERE status='completed'",
                           -1, &st, NULL),
        SQLITE_OK);
    int rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int n = sqlite3_column_int(st, 0), hit = sqlite3_column_int(st, 1), out = sqlite3_column_int(st, 4);
        double ttft = sqlite3_column_double(st, 2) / 1e3;
        if (ttft + 1e-9 < sim_cost_prefill_s(&cost, n, hit)) fail_msg("%s: TTFT %g below prefill time", label, ttft);
        if (ttft + 1e-9 < sqlite3_column_double(st, 5)) fail_msg("%s: TTFT %g below its prefill GPU time", label, ttft);
        if (out > 1) {
            double tbt = sqlite3_column_double(st, 3) / 1e3;
            if (tbt + 1e-9 < sim_cost_decode_iter_s(&cost, 1, n))
                fail_msg("%s: TBT %g below the smallest iteration", label, tbt);
        } else {
            assert_int_equal(sqlite3_column_type(st, 3), SQLITE_NULL);
        }
        rows++;
    }
    sqlite3_finalize(st);
    assert_int_equal(rows, (int)sql_num(db, "SELECT COUNT(*) FROM requests WHERE status='completed'"));
    sqlite3_close(db);
    sim_config_free(&cfg);
}

/* Invariants hold under every registered router, both scopes, every
 * admission policy (a tight TTFT SLO makes them reject), the dynamic PD
 * controller, and instance failures with retry or loss. */
static void test_conservation_all_policies(void **state)
{
    const char *faults = "--set 'faults=[{\"at_ms\":5000,\"instance\":0,\"down_ms\":4000},"
                         "{\"at_ms\":9000,\"instance\":3,\"down_ms\":3000}]'";
    char retry[512], lose[512];
    snprintf(retry, sizeof retry, "%s", faults);
    snprintf(lose, sizeof lose, "%s --set cluster.on_failure=lose", faults);
    const char *variants[] = {"",
                              "--set policy.admission=slo_reject --set slo.ttft_ms=800",
                              "--set policy.admission=baseline --set slo.ttft_ms=800 --set slo.tbt_ms=20",
                              "--set policy.admission=early_reject --set slo.ttft_ms=800 --set slo.tbt_ms=20",
                              "--set policy.admission=early_reject_predict --set slo.ttft_ms=800",
                              "--set cluster.scope=local --set cluster.layerwise=false",
                              "--set policy.pd_controller=dynamic --set policy.params.pd_period_s=3 "
                              "--set cluster.switch_ms=500 --set slo.tbt_ms=15",
                              "--set cluster.cpp_group=2 --set cluster.cpp_threshold=2000",
                              "--set policy.pd_controller=dynamic --set policy.params.pd_period_s=2 "
                              "--set cluster.switch_ms=500 --set 'policy.params.tide=[[0,4],[6,2],[20,4]]'",
                              retry,
                              lose};
    size_t nvariants = sizeof variants / sizeof variants[0];
    int rejected = 0, retries = 0, lost = 0;
    for (size_t r = 0; r < sched_router_count(); r++)
        for (size_t v = 0; v < nvariants; v++) {
            char *db = tu_temp_path(), args[2048], label[128];
            snprintf(args, sizeof args,
                     "--set policy.router=%s %s --set cluster.prefill=2 --set cluster.decode=2 --db %s",
                     sched_router_at(r)->name, variants[v], db);
            snprintf(label, sizeof label, "%s/%zu", sched_router_at(r)->name, v);
            json_t *s = run_json(args);
            rejected += (int)json_integer_value(json_object_get(json_object_get(s, "rejected"), "total"));
            retries += (int)json_integer_value(json_object_get(s, "retries"));
            lost += (int)json_integer_value(json_object_get(s, "lost"));
            check_invariants(db, label);
            json_decref(s);
            tu_remove_temp(db);
        }
    assert_true(rejected > 0); /* the admission policies did reject */
    assert_true(retries > 0);  /* failures restarted requests */
    assert_true(lost > 0);     /* and lost some in lose mode */
    /* the text's requests line adds up, the lost counted (once left out) */
    char args[1024];
    snprintf(args, sizeof args, "run %s --set cluster.prefill=2 --set cluster.decode=2", lose);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    long long req = 0, done = 0, rej = 0, gone = 0;
    const char *line = strstr(r.out, "requests   ");
    assert_non_null(line);
    assert_int_equal(sscanf(line, "requests   %lld   completed %lld   rejected %lld", &req, &done, &rej), 3);
    const char *l = strstr(line, "   lost ");
    assert_non_null(l);
    assert_int_equal(sscanf(l, "   lost %lld", &gone), 1);
    assert_int_equal(req, done + rej + gone);
    tu_free(&r);
}

/* ---- the model's sanity on the public Mooncake trace ------------------------- */

static double mean_ttft_mooncake(const char *extra)
{
    char args[1024];
    snprintf(args, sizeof args, "run --trace %s --json --set cluster.prefill=4 --set cluster.decode=4 %s",
             MOONCAKE_TRACE, extra);
    json_t *j = tu_kvsim_json(args);
    double v = json_number_value(json_object_get(json_object_get(j, "ttft_ms"), "mean"));
    json_decref(j);
    return v;
}

/* cache_aware_local beats random on mean TTFT on 4P4D: in local scope at the
 * trace's own speed (random scatters prefixes), and in global scope at 0.7×
 * speed (below saturation, where placement matters). */
static void test_cache_aware_beats_random(void **state)
{
    double rnd = mean_ttft_mooncake("--set policy.router=random --set cluster.scope=local");
    double cal = mean_ttft_mooncake("--set policy.router=cache_aware_local --set cluster.scope=local");
    printf("local 4P4D: random %.0f ms, cache_aware_local %.0f ms\n", rnd, cal);
    assert_true(cal < rnd);
    rnd = mean_ttft_mooncake("--set policy.router=random --speed 0.7");
    cal = mean_ttft_mooncake("--set policy.router=cache_aware_local --speed 0.7");
    printf("global 4P4D at 0.7x: random %.0f ms, cache_aware_local %.0f ms\n", rnd, cal);
    assert_true(cal < rnd);
}

/* Raising the replay speed raises TTFT and lowers SLO attainment. */
static void test_speed_raises_ttft(void **state)
{
    double prev_ttft = 0, prev_slo = 2;
    const char *speeds[] = {"0.5", "0.7", "1"};
    for (int i = 0; i < 3; i++) {
        char args[512];
        snprintf(args, sizeof args, "run --trace %s --json --speed %s", MOONCAKE_TRACE, speeds[i]);
        json_t *j = tu_kvsim_json(args);
        double ttft = json_number_value(json_object_get(json_object_get(j, "ttft_ms"), "mean"));
        double slo = json_number_value(json_object_get(j, "slo_attainment"));
        printf("speed %s: mean TTFT %.0f ms, SLO attainment %.3f\n", speeds[i], ttft, slo);
        assert_true(ttft > prev_ttft);
        assert_true(slo < prev_slo);
        prev_ttft = ttft, prev_slo = slo;
        json_decref(j);
    }
}

/* ---- calibration ------------------------------------------------------------------ */

static double mean_ttft(const char *extra)
{
    json_t *s = run_json(extra);
    double v = json_number_value(json_object_get(json_object_get(s, "ttft_ms"), "mean"));
    json_decref(s);
    return v;
}

/* The shipped CPU calibration's curves replace the analytic DRAM→HBM
 * bandwidth (128 GB/s on a800x8; about 6 GB/s measured on the CPU backend),
 * so loads take longer; halving every curve's bandwidth in a copy of the
 * file makes them longer still. Without layer-wise overlap, load time adds
 * straight into TTFT. Prefill compute does not change. */
static void test_calibration_drives_load_times(void **state)
{
    const char *serial = "--set cluster.layerwise=false";
    char extra[1024];
    snprintf(extra, sizeof extra, "%s --set hardware=a800x8", serial);
    double analytic = mean_ttft(extra);
    snprintf(extra, sizeof extra, "%s --set hardware=cpu-local", serial);
    double shipped = mean_ttft(extra);
    json_t *cal = json_load_file("configs/calibration/cpu-local.json", 0, NULL);
    assert_non_null(cal);
    size_t i;
    json_t *curve;
    json_array_foreach(json_object_get(cal, "curves"), i, curve)
        json_object_set_new(curve, "beta_Bps", json_real(json_number_value(json_object_get(curve, "beta_Bps")) / 2));
    char *slow = tu_write_temp("");
    assert_int_equal(json_dump_file(cal, slow, 0), 0);
    snprintf(extra, sizeof extra, "%s --set hardware=cpu-local --set hardware.calibration=\\\"%s\\\"", serial, slow);
    double halved = mean_ttft(extra);
    printf("mean TTFT: analytic %.1f ms, CPU calibration %.1f ms, its bandwidths halved %.1f ms\n", analytic, shipped,
           halved);
    assert_true(shipped > analytic);
    assert_true(halved > shipped);
    json_decref(cal);
    tu_remove_temp(slow);
}

/* ---- bad input ------------------------------------------------------------------ */

static void test_bad_input(void **state)
{
    char args[1024], *bad = tu_write_temp("{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 5, "
                                          "\"hash_ids\": [1]}\n{\"timestamp\": 1, \"output_length\": 5}\n");
    char *empty = tu_write_temp(""), *badcfg = tu_write_temp("{\"cluster\": {\"prefil\": 3}}");
    char *notjson = tu_write_temp("{\"cluster\": ");
    tu_expect_exit("run --set policy.router=nope", 2, "policy.router: unknown router 'nope'");
    tu_expect_exit("run --set policy.admission=nope", 2, "unknown admission policy 'nope'");
    tu_expect_exit("run --set kvstore.eviction=nope", 2, "unknown eviction policy 'nope'");
    tu_expect_exit("run --set cluster.foo=1", 2, "unknown config key 'cluster.foo'");
    tu_expect_exit("run --set model=gpt-17", 2, "unknown model preset 'gpt-17': the presets are");
    tu_expect_exit("run --set hardware=abacus", 2, "unknown hardware preset 'abacus'");
    tu_expect_exit("run --set cluster.prefill=0", 2, "cluster.prefill");
    tu_expect_exit("run --set kvstore.dram_bytes=-5", 2, "kvstore.dram_bytes");
    tu_expect_exit("run --set kvstore.dram_bytes=\\\"12XB\\\"", 2, "unknown suffix 'XB'");
    tu_expect_exit("run --set cluster.scope=\\\"nearby\\\"", 2, "cluster.scope");
    tu_expect_exit("run --set nokey", 2, "expected key.path=value");
    tu_expect_exit("run --set hardware.calibration=\\\"/nonexistent/cal.json\\\"", 2, "/nonexistent/cal.json");
    tu_expect_exit("run --frobnicate", 2, "unknown or incomplete option");
    tu_expect_exit("run --trace /nonexistent/t.jsonl", 2, "/nonexistent/t.jsonl");
    snprintf(args, sizeof args, "run --trace %s", bad);
    tu_expect_exit(args, 2, ":2: input_length: missing");
    snprintf(args, sizeof args, "run --trace %s", empty);
    tu_expect_exit(args, 2, "no requests");
    snprintf(args, sizeof args, "run --config %s", badcfg);
    tu_expect_exit(args, 2, "unknown config key 'cluster.prefil'");
    snprintf(args, sizeof args, "run --config %s", notjson);
    tu_expect_exit(args, 2, notjson);
    snprintf(args, sizeof args, "run --trace %s --db /nonexistent/dir/x.db", trace_path);
    tu_expect_exit(args, 2, "/nonexistent/dir/x.db");
    unlink(bad), unlink(empty), unlink(badcfg), unlink(notjson);
    free(bad), free(empty), free(badcfg), free(notjson);
}

/* Every entry of every registry (serving models, cache models, the four
 * conductor kinds, online eviction policies) is listed by kvsim policies and
 * runs the test trace with its defaults, keeping the invariants. Driven
 * from the tables: a new entry is covered with no edit here. */
static void run_entry(const char *key, const char *name)
{
    char *db = tu_temp_path(), args[1024], label[128];
    snprintf(args, sizeof args, "--set %s=%s --set cluster.prefill=2 --set cluster.decode=2 --db %s", key, name, db);
    snprintf(label, sizeof label, "%s=%s", key, name);
    json_t *s = run_json(args);
    assert_int_equal(json_integer_value(json_object_get(s, "requests")), 240);
    check_invariants(db, label);
    json_decref(s);
    tu_remove_temp(db);
    char want[128];
    snprintf(want, sizeof want, "  %s ", name);
    tu_expect_stdout("policies", want);
}

static void test_every_registered_entry_runs(void **state)
{
    for (size_t i = 0; i < sim_serving_count(); i++) run_entry("cluster.mode", sim_serving_at(i)->name);
    for (size_t i = 0; i < kv_cache_model_count(); i++) run_entry("kvstore.pic", kv_cache_model_at(i)->name);
    for (size_t i = 0; i < sched_router_count(); i++) run_entry("policy.router", sched_router_at(i)->name);
    for (size_t i = 0; i < sched_decode_count(); i++) run_entry("policy.decode", sched_decode_at(i)->name);
    for (size_t i = 0; i < sched_admission_count(); i++) run_entry("policy.admission", sched_admission_at(i)->name);
    for (size_t i = 0; i < sched_pd_count(); i++) run_entry("policy.pd_controller", sched_pd_at(i)->name);
    for (size_t i = 0; i < kv_evict_count(); i++)
        if (!kv_evict_at(i)->offline) run_entry("kvstore.eviction", kv_evict_at(i)->name);
    assert_null(sched_router_at(sched_router_count()));
    assert_null(sim_serving_lookup("nosuch"));
    tu_expect_exit("run --set cluster.mode=nosuch", 2, "cluster.mode: unknown serving model 'nosuch'");
    tu_expect_exit("run --set kvstore.pic=nosuch", 2, "kvstore.pic: unknown cache model 'nosuch'");
}

/* --help on run and policies; the summary fields the brief promises. */
static void test_help_and_summary_fields(void **state)
{
    tu_expect_stdout("run --help", "usage: kvsim run");
    tu_expect_stdout("policies", "cache_aware_local");
    tu_expect_stdout("policies", "slo_reject");
    json_t *s = run_json("");
    const char *keys[] = {"requests",       "completed",    "rejected",        "ttft_ms",         "tbt_ms",
                          "slo_attainment", "goodput_rps",  "hit_rate_blocks", "hit_rate_tokens", "prefill_gpu_s_mean",
                          "sim_seconds",    "wall_seconds", "events"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!json_object_get(s, keys[i])) fail_msg("summary lacks '%s'", keys[i]);
    const char *q[] = {"mean", "p50", "p90", "p99"};
    for (size_t i = 0; i < 4; i++) assert_non_null(json_object_get(json_object_get(s, "ttft_ms"), q[i]));
    assert_int_equal(json_integer_value(json_object_get(s, "requests")), 240);
    json_decref(s);
}

/* Every run is diagnosed (sim/serving/diagnose.c). The bundled trace at
 * speed 1 is served (simulated span within 7% of the arrivals'). At speed 8
 * its 1,500 requests arrive in 75 s and take 120 s, but every SLO is met,
 * prefill is 52% busy and the last tenth of requests waits no longer than
 * the first: a tail, not overload (it used to be warned about). At speed 16
 * the last tenth waits 25.2 s for its first token against 2.0 s for the
 * first: queues grew, overloaded, with a warning line on stderr. The
 * utilisations are busy fractions in [0, 1] for prefill, and the span ratio
 * is the simulated over the arrival span: 1.059 at speed 1, the last
 * arrivals' decodes (15.2 ms steps since the decode cost has its all-reduce
 * term, docs/cost-model.md) ending 35 s after the last arrival. */
static void test_overload_diagnosis(void **state)
{
    cli_result r = tu_kvsim("run --json");
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "overloaded"));
    json_t *j = json_loads(r.out, 0, NULL), *d = json_object_get(j, "diagnosis");
    assert_false(json_is_true(json_object_get(d, "overloaded")));
    double ratio = json_number_value(json_object_get(d, "span_ratio"));
    assert_double_equal(ratio,
                        json_number_value(json_object_get(d, "sim_span_s")) /
                            json_number_value(json_object_get(d, "trace_span_s")),
                        1e-9);
    double p = json_number_value(json_object_get(json_object_get(j, "utilisation"), "prefill"));
    assert_true(p > 0 && p < 1 && ratio < 1.07);
    json_decref(j);
    tu_free(&r);
    r = tu_kvsim("run --json --set trace.speed=8");
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "overloaded"));
    j = json_loads(r.out, 0, NULL);
    assert_false(json_is_true(json_object_get(json_object_get(j, "diagnosis"), "overloaded")));
    json_decref(j);
    tu_free(&r);
    r = tu_kvsim("run --json --set trace.speed=16");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "kvsim run: warning: overloaded: 112 s simulated for 37 s of arrivals"));
    assert_non_null(strstr(r.err, "queues grew: mean TTFT 25.2 s for the last tenth of requests vs 2.0 s"));
    assert_non_null(strstr(r.err, "kvsim plan slo finds the smallest cluster"));
    j = json_loads(r.out, 0, NULL);
    d = json_object_get(j, "diagnosis");
    assert_true(json_is_true(json_object_get(d, "overloaded")) && json_is_true(json_object_get(d, "queues_grew")));
    json_decref(j);
    tu_free(&r);
}

/* What is not overload (sim/serving/diagnose.c): a burst of 8 prompts
 * arriving at once keeps the prefill instance busy until it drains (its
 * utilisation is 1 by construction) but meets its SLOs: not overloaded (it
 * once was, and `kvsim plan slo` sized it 9P1D). An SLO below a request's
 * own service time, missed on a cluster 8% busy, is said to be that, not
 * load; and a run whose every request was rejected says so instead of
 * quoting percentiles of no requests. */
static void test_not_overload(void **state)
{
    (void)state;
    char *burst = tu_gen_trace("--workload shared-prefix --arrivals batch --requests 8 --output-tokens 1 "
                               "--block-tokens 512"),
         args[1024];
    snprintf(args, sizeof args, "run --json --trace %s --set cluster.prefill=1 --set cluster.decode=1", burst);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "overloaded"));
    json_t *j = json_loads(r.out, 0, NULL), *d = json_object_get(j, "diagnosis");
    assert_true(json_is_true(json_object_get(d, "burst")));
    assert_false(json_is_true(json_object_get(d, "overloaded")));
    assert_true(tu_num_at(j, "utilisation", "prefill") > 0.95); /* busy, as any burst is */
    json_decref(j);
    tu_free(&r);
    r = tu_kvsim("run --trace traces/default.jsonl --set slo.ttft_ms=0.4 --set slo.tbt_ms=0.3");
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "overloaded"));
    assert_non_null(strstr(r.out, "SLO        TTFT ≤ 0.4 ms, TBT ≤ 0.3 ms:")); /* not "≤ 0 ms" */
    assert_non_null(strstr(r.out, "not load: the SLO is below these requests' own service time"));
    tu_free(&r);
    r = tu_kvsim("run --trace traces/default.jsonl --set slo.ttft_ms=0.001 --set policy.admission=early_reject");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "no request completed; 1500 of 1500 requests rejected by policy.admission = "
                                  "early_reject (at arrival 1500, after prefill 0, on the TTFT SLO 0)"));
    tu_free(&r);
    tu_remove_temp(burst);
    /* but a run whose queues grew on what no utilisation covers (an
     * LMCache remote store's link) is overloaded, and not said to be "not
     * load" (it once was, beside the overload warning) */
    char *mqa = tu_gen_trace("--workload multiround-qa --requests 300 --doc-tokens 20000 --rate 2");
    snprintf(args, sizeof args,
             "run --trace %s --config configs/clusters/lmcache-central-storage.json --set trace.speed=0.5", mqa);
    r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "warning: overloaded"));
    assert_null(strstr(r.out, "not load"));
    tu_free(&r);
    tu_remove_temp(mqa);
}

/* Names the user typed: a slip gets a suggestion, a parameter no policy
 * declares is an error (it used to be ignored), --version answers. */
static void test_did_you_mean(void **state)
{
    tu_expect_exit("run --set cluster.prefil=3", 2,
                   "unknown config key 'cluster.prefil' (did you mean 'cluster.prefill'?)");
    tu_expect_exit("run --set policy.router=kvcentrc", 2, "unknown router 'kvcentrc' (did you mean 'kvcentric'?)");
    tu_expect_exit("run --set policy.admission=early_rejct", 2, "(did you mean 'early_reject'?)");
    tu_expect_exit("run --set policy.admission=early_reject --set policy.params.load_treshold=2", 2,
                   "policy.params.load_treshold: no policy has this parameter (did you mean 'load_threshold'?)");
    tu_expect_exit("rnu", 2, "unknown command 'rnu' (did you mean 'run'?)");
    tu_expect_exit("run --set nothing.like.it=1", 2,
                   "unknown config key 'nothing.like.it' (kvsim config --schema lists the keys)\n");
    tu_expect_stdout("--version", "kvsim 0.1.0+");
    /* a parameter of a policy not selected in this run is fine (sweeps) */
    tu_expect_stdout("run --set policy.params.kvcache_balancing_threshold=2", "requests");
}

/* Nothing dropped silently: lines --skip-bad skipped are counted in the
 * summary, with the first one's message, and warned about on stderr. */
static void test_skipped_lines_reported(void **state)
{
    char *path =
        tu_write_temp("{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 4, \"hash_ids\": [1, 2]}\n"
                      "{\"timestamp\": 1, \"input_length\": 0, \"output_length\": 4, \"hash_ids\": []}\n"
                      "not json\n"
                      "{\"timestamp\": 2, \"input_length\": 600, \"output_length\": 4, \"hash_ids\": [1, 3]}\n");
    char args[512];
    snprintf(args, sizeof args, "run --json --skip-bad --trace %s", path);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "warning: skipped 2 bad trace lines (trace.skip_bad); the first: "));
    assert_non_null(strstr(r.err, ":2: input_length: 0 tokens"));
    json_t *j = json_loads(r.out, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(j, "skipped_lines")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "requests")), 2);
    json_t *skips = json_object_get(j, "skips");
    assert_int_equal(json_array_size(skips), 2);
    assert_non_null(strstr(json_string_value(json_array_get(skips, 1)), ":3: json: malformed JSON"));
    json_decref(j);
    tu_free(&r);
    /* the text summary counts them; --verbose lists each with its line */
    snprintf(args, sizeof args, "run --skip-bad --verbose --trace %s", path);
    r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "trace      2 bad lines skipped"));
    assert_non_null(strstr(r.err, "skipped 2 bad trace lines (trace.skip_bad):\n  "));
    assert_non_null(strstr(r.err, ":2: input_length: 0 tokens"));
    assert_non_null(strstr(r.err, ":3: json: malformed JSON"));
    tu_free(&r);
    tu_remove_temp(path);
}

/* An installed kvsim (make install's layout: PREFIX/bin/kvsim, presets and
 * the bundled trace in PREFIX/share/kvsim) finds both from any directory. */
static void test_installed_layout(void **state)
{
    char prefix[] = "/tmp/kvsim-prefix-XXXXXX", cmd[8192], bin[4096];
    assert_non_null(mkdtemp(prefix));
    assert_non_null(realpath(tu_kvsim_bin(), bin));
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/bin %s/share/kvsim/traces && cp %s %s/bin/kvsim && cp -R configs %s/share/kvsim/ && "
             "cp traces/default.jsonl %s/share/kvsim/traces/",
             prefix, prefix, bin, prefix, prefix, prefix);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "cd / && %s/bin/kvsim run --json --set cluster.prefill=2", prefix);
    cli_result r = tu_shell(cmd);
    if (r.status) fail_msg("installed kvsim run: exit %d: %s", r.status, r.err);
    json_t *j = json_loads(r.out, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(j, "requests")), 1500);
    json_decref(j);
    tu_free(&r);
    /* the trace is named as it lies, PREFIX/share/kvsim/traces/, no "/.." in it */
    snprintf(cmd, sizeof cmd, "cd / && %s/bin/kvsim run --set cluster.prefill=2", prefix);
    r = tu_shell(cmd);
    snprintf(bin, sizeof bin, "kvsim run: %s/share/kvsim/traces/default.jsonl — ", prefix);
    if (!strstr(r.out, bin)) fail_msg("installed kvsim names its trace: %s", r.out);
    tu_free(&r);
    snprintf(cmd, sizeof cmd, "rm -rf %s", prefix);
    assert_int_equal(system(cmd), 0);
}

/* samples rows: every instance at each recorded t_ms; an idle hour costs a
 * held tick, not 3,600 (its last tick written when the change comes, with
 * the values of the tick before: the line through the rows is the line
 * through every tick); a 128-instance cluster writes every 8th period
 * (ceil(128 / (1 s × 16 rows/s))); sample_rows_per_s=0 writes every one. */
static double samples_num(const char *trace, const char *extra, const char *sql)
{
    char *db = tu_temp_path(), args[1024];
    snprintf(args, sizeof args, "run --trace %s --db %s %s", trace, db, extra);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    double v = sql_num(h, sql);
    sqlite3_close(h);
    tu_remove_temp(db);
    return v;
}

static void test_sample_ticks(void **state)
{
    char *gap = tu_write_temp("{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [1, 2]}\n"
                              "{\"timestamp\": 3600000, \"input_length\": 600, \"output_length\": 5, "
                              "\"hash_ids\": [1, 2]}\n");
    /* ticks 0 and 1 s (the first request done), the held tick 3599 s, 3600 s, 3601 s */
    assert_true(samples_num(gap, "", "SELECT COUNT(DISTINCT t_ms) FROM samples") == 5);
    assert_true(samples_num(gap, "", "SELECT COUNT(*) FROM samples") == 5 * 8);
    assert_true(samples_num(gap, "",
                            "SELECT COUNT(*) FROM samples a JOIN samples b USING(instance) WHERE a.t_ms = 1000"
                            " AND b.t_ms = 3599000 AND a.load = b.load AND a.kv_used = b.kv_used"
                            " AND a.queue_len = b.queue_len AND a.batch = b.batch AND a.state = b.state") == 8);
    tu_remove_temp(gap);
    const char *big = "--set cluster.prefill=64 --set cluster.decode=64";
    assert_true(samples_num(trace_path, big,
                            "SELECT MIN(n) = 128 AND MAX(n) = 128 FROM"
                            " (SELECT COUNT(*) n FROM samples GROUP BY t_ms)") == 1);
    assert_true(samples_num(trace_path, big,
                            "SELECT MIN(d) FROM (SELECT t_ms - LAG(t_ms) OVER (ORDER BY t_ms) d FROM"
                            " (SELECT DISTINCT t_ms FROM samples))") == 8000);
    char all[256];
    snprintf(all, sizeof all, "%s --set metrics.sample_rows_per_s=0", big);
    assert_true(samples_num(trace_path, all,
                            "SELECT MIN(d) FROM (SELECT t_ms - LAG(t_ms) OVER (ORDER BY t_ms) d FROM"
                            " (SELECT DISTINCT t_ms FROM samples))") == 1000);
}

/* A pipe or /dev/stdin replays like the file (same summary, same recorded
 * fingerprint, the path as given); an error names "-"; a 19-digit number
 * is an error, not an overflow (issue 13). */
static void test_stdin_and_big_numbers(void **state)
{
    char *db = tu_temp_path(), args[1024];
    snprintf(args, sizeof args, "run --json --db %s --trace - < %s", db, trace_path);
    json_t *piped = tu_kvsim_json(args);
    json_t *direct = run_json("");
    strip_wall(piped), strip_wall(direct);
    json_object_del(piped, "run_id"), json_object_del(direct, "run_id");
    assert_true(json_equal(piped, direct));
    json_decref(piped), json_decref(direct);
    snprintf(args, sizeof args, "run --json --db %s --trace /dev/stdin < %s", db, trace_path);
    json_decref(tu_kvsim_json(args));
    snprintf(args, sizeof args, "run --json --db %s --trace %s", db, trace_path);
    json_decref(tu_kvsim_json(args));
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_true(sql_num(h, "SELECT COUNT(DISTINCT trace_fingerprint) FROM runs") == 1);
    assert_true(sql_num(h, "SELECT COUNT(*) FROM runs WHERE trace_path IN ('-', '/dev/stdin')") == 2);
    sqlite3_close(h);
    tu_remove_temp(db);
    tu_expect_exit("run --trace - < /dev/null", 2, "no requests to replay");
    char *bad = tu_write_temp("not json\n");
    snprintf(args, sizeof args, "run --trace - < %s", bad);
    tu_expect_exit(args, 2, "kvsim run: -:1: ");
    tu_remove_temp(bad);
    char *big = tu_write_temp("{\"timestamp\": 9999999999999999999, \"input_length\": 600, \"output_length\": 5, "
                              "\"hash_ids\": [1, 2]}\n");
    snprintf(args, sizeof args, "run --trace %s", big);
    tu_expect_exit(args, 2, ":1: json: malformed JSON (too big integer");
    tu_remove_temp(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_conservation_all_policies),
        cmocka_unit_test(test_every_registered_entry_runs),
        cmocka_unit_test(test_cache_aware_beats_random),
        cmocka_unit_test(test_speed_raises_ttft),
        cmocka_unit_test(test_calibration_drives_load_times),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_help_and_summary_fields),
        cmocka_unit_test(test_overload_diagnosis),
        cmocka_unit_test(test_not_overload),
        cmocka_unit_test(test_did_you_mean),
        cmocka_unit_test(test_skipped_lines_reported),
        cmocka_unit_test(test_sample_ticks),
        cmocka_unit_test(test_stdin_and_big_numbers),
        cmocka_unit_test(test_installed_layout),
    };
    return cmocka_run_group_tests(tests, setup_trace, remove_trace);
}
