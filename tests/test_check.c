/* tests/test_check.c — `kvsim check`, the CI regression check: recording a
 * baseline, passing it, failing with exit 3 and a readable table when a
 * number is perturbed beyond its tolerance, re-recording, bad baselines,
 * placement args (and their deprecated spelling "route"), relative and
 * one-sided tolerances, baselines recorded from a `run` or `plan slo`
 * command line, and the two baselines the project ships. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/testutil.h"

/* T1 of test_hitrate.c: LRU hit rates inf → 5/10, 1536 tokens (3 blocks)
 * → 4/10; FIFO 3 blocks → 2/10 (hand simulations there). */
static const char *T1 =
    "{\"timestamp\": 0, \"input_length\": 1536, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}\n"
    "{\"timestamp\": 1, \"input_length\": 1500, \"output_length\": 1, \"hash_ids\": [1, 2, 4]}\n"
    "{\"timestamp\": 2, \"input_length\": 2000, \"output_length\": 1, \"hash_ids\": [1, 2, 3, 5]}\n";

static cli_result kvsim(const char *fmt, ...)
{
    char args[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return tu_kvsim(args);
}

/* The expect object of the measurement named `name` in a baseline file. */
static json_t *expect_of(json_t *root, const char *name)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(root, "measurements"), i, m)
    {
        if (!strcmp(json_string_value(json_object_get(m, "name")), name)) return json_object_get(m, "expect");
    }
    fail_msg("no measurement '%s'", name);
    return NULL;
}

static void set_expect(const char *path, const char *name, const char *metric, double v)
{
    json_t *root = json_load_file(path, 0, NULL);
    json_object_set_new(expect_of(root, name), metric, json_real(v));
    assert_int_equal(json_dump_file(root, path, JSON_INDENT(2)), 0);
    json_decref(root);
}

/* Record lru and fifo at inf and 1536 tokens (4 measurements × 2 metrics),
 * check the recorded numbers against the hand values, then check: all 8
 * within tolerance. Perturb lru 1536 from 0.4 to 0.41 (beyond 0.002): exit 3
 * with a FAIL row showing expected 0.41, got 0.4, delta −0.01. A move of
 * 0.001 stays within tolerance: exit 0. Re-recording restores 0.4. */
static void test_record_check_perturb(void **state)
{
    char *t = tu_write_temp(T1), *b = tu_write_temp(""), *out = tu_write_temp("");
    cli_result r = kvsim("check --write-baseline %s --trace %s --policies lru,fifo --capacity-tokens inf,1536", b, t);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "recorded 8 numbers"));
    tu_free(&r);
    json_t *root = json_load_file(b, 0, NULL);
    assert_float_equal(json_number_value(json_object_get(expect_of(root, "lru inf"), "hit_rate_blocks")), 0.5, 1e-6);
    assert_float_equal(json_number_value(json_object_get(expect_of(root, "lru 1536"), "hit_rate_blocks")), 0.4, 1e-6);
    assert_float_equal(json_number_value(json_object_get(expect_of(root, "fifo 1536"), "hit_rate_blocks")), 0.2, 1e-6);
    json_decref(root);

    r = kvsim("check --baseline %s", b);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "all 8 numbers within tolerance"));
    tu_free(&r);

    set_expect(b, "lru 1536", "hit_rate_blocks", 0.41);
    r = kvsim("check --baseline %s", b);
    assert_int_equal(r.status, 3);
    assert_non_null(strstr(r.out, "expected"));
    assert_non_null(strstr(r.out, "delta"));
    const char *row = strstr(r.out, "lru 1536");
    assert_non_null(row);
    row = strstr(row, "hit_rate_blocks");
    assert_non_null(row);
    assert_non_null(strstr(row, "0.410000"));
    assert_non_null(strstr(row, "0.400000"));
    assert_non_null(strstr(row, "-0.010000"));
    assert_non_null(strstr(row, "FAIL"));
    assert_non_null(strstr(r.err, "1 of 8 numbers moved"));
    tu_free(&r);

    r = kvsim("check --baseline %s --write-baseline %s", b, out);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    root = json_load_file(out, 0, NULL);
    assert_float_equal(json_number_value(json_object_get(expect_of(root, "lru 1536"), "hit_rate_blocks")), 0.4, 1e-6);
    json_decref(root);

    set_expect(b, "lru 1536", "hit_rate_blocks", 0.401);
    r = kvsim("check --baseline %s", b);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    tu_remove_temp(t);
    tu_remove_temp(b);
    tu_remove_temp(out);
}

/* A measurement's own tolerance overrides the file's: 0 makes the
 * 0.001 move above fail. */
static void test_measurement_tolerance(void **state)
{
    char *t = tu_write_temp(T1);
    char text[2048];
    snprintf(text, sizeof text,
             "{\"kvsim_baseline\": 1, \"tolerance\": 0.01, \"measurements\": [{\"name\": \"strict\", \"kind\": "
             "\"hitrate\", \"args\": {\"trace\": \"%s\", \"capacity_tokens\": 1536}, \"tolerance\": 0, \"expect\": "
             "{\"hit_rate_blocks\": 0.401}}, {\"name\": \"loose\", \"kind\": \"hitrate\", \"args\": {\"trace\": "
             "\"%s\", \"capacity_tokens\": \"1536\"}, \"expect\": {\"hit_rate_blocks\": 0.401}}]}",
             t, t);
    char *b = tu_write_temp(text);
    cli_result r = kvsim("check --baseline %s", b);
    assert_int_equal(r.status, 3);
    assert_non_null(strstr(strstr(r.out, "strict"), "FAIL"));
    assert_non_null(strstr(strstr(r.out, "loose"), "ok"));
    tu_free(&r);
    tu_remove_temp(t);
    tu_remove_temp(b);
}

/* ---- relative and one-sided tolerances -------------------------------------- */

/* A baseline of one hitrate measurement of T1 at 1536 tokens (LRU: 0.4
 * blocks, by hand in test_hitrate.c) expecting `expect` for
 * hit_rate_blocks, with the file's tolerance and the measurement's extra
 * keys (",\"worse\": ..." or ""); returns `kvsim check` of it. */
static cli_result check_one(const char *trace, const char *tol, double expect, const char *extra)
{
    char text[2048];
    snprintf(
        text, sizeof text,
        "{\"kvsim_baseline\": 1, \"tolerance\": %s, \"measurements\": [{\"name\": \"m\", \"kind\": \"hitrate\", "
        "\"args\": {\"trace\": \"%s\", \"capacity_tokens\": \"1536\"}, \"expect\": {\"hit_rate_blocks\": %.17g}%s}]}",
        tol, trace, expect, extra);
    char *b = tu_write_temp(text);
    cli_result r = kvsim("check --baseline %s", b);
    tu_remove_temp(b);
    return r;
}

/* "2%": got 0.4 against an expected 0.4 / 1.019 is +1.9% (ok), against
 * 0.4 / 1.021 +2.1% (FAIL, exit 3; 2% of 0.391773 is 0.00783546, the move
 * 0.00822718). "worse": "higher" passes a -50% move (expected 0.8) as
 * improved, and so does the file's "worse"; "lower" fails it. */
static void test_relative_and_one_sided(void **state)
{
    char *t = tu_write_temp(T1);
    cli_result r = check_one(t, "\"2%\"", 0.4 / 1.019, "");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "0.392542   0.400000  +0.007458        2%  ok"));
    tu_free(&r);
    r = check_one(t, "\"2%\"", 0.4 / 1.021, "");
    assert_int_equal(r.status, 3);
    assert_non_null(strstr(r.out, "0.391773   0.400000  +0.008227        2%  FAIL"));
    tu_free(&r);
    r = check_one(t, "0.002", 0.4 / 1.019, ""); /* the same move against an absolute 0.002 */
    assert_int_equal(r.status, 3);
    tu_free(&r);
    setenv("GITHUB_ACTIONS", "true", 1);
    r = check_one(t, "\"2%\"", 0.8, ", \"worse\": \"higher\"");
    unsetenv("GITHUB_ACTIONS");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "0.800000   0.400000  -0.400000       +2%  improved"));
    assert_non_null(strstr(r.out, "all 1 numbers within tolerance; 1 improved beyond it"));
    assert_non_null(strstr(r.out, "::notice title=kvsim check::m hit_rate_blocks improved: expected 0.8, got 0.4"));
    tu_free(&r);
    r = check_one(t, "\"2%\"", 0.8, ", \"worse\": {\"hit_rate_blocks\": \"higher\"}");
    assert_int_equal(r.status, 0);
    tu_free(&r);
    r = check_one(t, "\"2%\", \"worse\": \"higher\"", 0.8, "");
    assert_int_equal(r.status, 0);
    tu_free(&r);
    r = check_one(t, "\"2%\"", 0.8, ", \"worse\": \"lower\"");
    assert_int_equal(r.status, 3);
    assert_non_null(strstr(r.out, "-2%  FAIL"));
    tu_free(&r);
    /* one-sided "higher": a rise of 2.1% fails, as two-sided */
    r = check_one(t, "\"2%\"", 0.4 / 1.021, ", \"worse\": \"higher\"");
    assert_int_equal(r.status, 3);
    tu_free(&r);
    /* bad tolerances and directions: exit 2 naming the key */
    static const char *const bad[][3] = {
        {"\"-2%\"", "", "baseline: \"tolerance\": \"-2%\" is not a non-negative number"},
        {"\"2 %\"", "", "baseline: \"tolerance\": \"2 %\" is not a non-negative number"},
        {"\"abc\"", "", "baseline: \"tolerance\": \"abc\" is not a non-negative number"},
        {"\"2\"", "", "baseline: \"tolerance\": \"2\" is not"},
        {"0", ", \"tolerance\": \"x%\"", "measurement m: \"tolerance\": \"x%\" is not a non-negative number"},
        {"0", ", \"worse\": \"up\"", "measurement m: \"worse\": \"up\" is not \"higher\" or \"lower\""},
        {"0", ", \"worse\": {\"hit_rate_blocks\": 1}", "measurement m: \"worse\".hit_rate_blocks: 1 is not"},
        {"0", ", \"worse\": {\"ttft\": \"higher\"}", "measurement m: \"worse\": no metric 'ttft'"},
        {"0, \"worse\": 3", "", "baseline: \"worse\": 3 is not \"higher\" or \"lower\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = check_one(t, bad[i][0], 0.4, bad[i][1]);
        if (r.status != 2 || !strstr(r.err, bad[i][2]))
            fail_msg("%s %s: exit %d, %s (want 2, %s)", bad[i][0], bad[i][1], r.status, r.err, bad[i][2]);
        tu_free(&r);
    }
    tu_expect_exit("check --write-baseline /tmp/x.json --trace x --tolerance -2%", 2, "--tolerance: negative");
    tu_expect_exit("check --write-baseline /tmp/x.json --trace x --tolerance 2x%", 2, "--tolerance");
    tu_remove_temp(t);
}

/* --write-baseline -- run ...: a run measurement (args trace, set; with
 * --one-sided each metric's direction) whose check passes at once; an
 * expected TTFT p90 10% above what the run gives is an improvement (exit
 * 0), 10% below a regression (exit 3). -- plan slo ...: its answer
 * recorded (feasible 1, its GPUs) and checked. Bad commands exit 2. */
static void test_write_baseline_commands(void **state)
{
    char *t = tu_write_temp(T1), *b = tu_write_temp("");
    cli_result r = kvsim("check --write-baseline %s --name r --one-sided --tolerance 2%% -- run --trace %s --set "
                         "cluster.prefill=2 --speed 2",
                         b, t);
    if (r.status) fail_msg("record: %s", r.err);
    assert_non_null(strstr(r.out, "recorded 13 numbers"));
    tu_free(&r);
    json_t *root = json_load_file(b, 0, NULL), *m = json_array_get(json_object_get(root, "measurements"), 0);
    assert_string_equal(json_string_value(json_object_get(root, "tolerance")), "2%");
    assert_string_equal(json_string_value(json_object_get(m, "kind")), "run");
    const json_t *set = json_object_get(json_object_get(m, "args"), "set");
    assert_int_equal(json_integer_value(json_object_get(set, "cluster.prefill")), 2);
    assert_true(json_number_value(json_object_get(set, "trace.speed")) == 2);
    assert_string_equal(json_string_value(json_object_get(json_object_get(m, "worse"), "ttft_ms.p90")), "higher");
    assert_string_equal(json_string_value(json_object_get(json_object_get(m, "worse"), "slo_attainment")), "lower");
    double p90 = json_number_value(json_object_get(json_object_get(m, "expect"), "ttft_ms.p90"));
    assert_true(p90 > 0);
    json_decref(root);
    r = kvsim("check --baseline %s", b);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "all 13 numbers within tolerance"));
    tu_free(&r);
    set_expect(b, "r", "ttft_ms.p90", p90 * 1.1);
    r = kvsim("check --baseline %s", b);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "1 improved beyond it"));
    tu_free(&r);
    set_expect(b, "r", "ttft_ms.p90", p90 / 1.1);
    r = kvsim("check --baseline %s", b);
    assert_int_equal(r.status, 3);
    tu_free(&r);
    /* a plan slo measurement added to the same baseline (the run one re-recorded) */
    r = kvsim("check --baseline %s --write-baseline %s --name plan -- plan slo --trace %s --ttft-p90-ms 5000 "
              "--max-instances 4 --dram 1TB --scopes global --cpp 1 --jobs 1",
              b, b, t);
    if (r.status) fail_msg("record plan: %s", r.err);
    assert_non_null(strstr(r.out, "recorded 27 numbers"));
    tu_free(&r);
    root = json_load_file(b, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(root, "measurements")), 2);
    json_t *e = expect_of(root, "plan");
    assert_int_equal(json_integer_value(json_object_get(e, "feasible")), 1);
    assert_true(json_number_value(json_object_get(e, "gpus")) >= 16); /* 2 instances of 8 GPUs at least */
    json_decref(root);
    r = kvsim("check --baseline %s", b);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "all 27 numbers within tolerance"));
    tu_free(&r);
    /* a relative trace, the baseline in another folder: the path is
     * rewritten for it and the recorded config hash is the one its check
     * computes there (the check passes from any working directory) */
    char dir[] = "/tmp/kvsim-blc-XXXXXX", cmd[16384], bin[4096];
    assert_non_null(mkdtemp(dir));
    assert_non_null(realpath(tu_kvsim_bin(), bin));
    snprintf(cmd, sizeof cmd,
             "cd %s && cp %s t.jsonl && mkdir ci && %s check --write-baseline ci/b.json -- run --trace t.jsonl && "
             "cd / && %s check --baseline %s/ci/b.json",
             dir, t, bin, bin, dir);
    r = tu_shell(cmd);
    if (r.status || !strstr(r.out, "all 13 numbers within tolerance")) fail_msg("relative: %s%s", r.out, r.err);
    tu_free(&r);
    snprintf(cmd, sizeof cmd, "%s/ci/b.json", dir);
    root = json_load_file(cmd, 0, NULL);
    m = json_array_get(json_object_get(root, "measurements"), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(m, "args"), "trace")), "../t.jsonl");
    json_decref(root);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    char args[1024];
    snprintf(args, sizeof args, "check --write-baseline %s -- sweep --grid x", b);
    tu_expect_exit(args, 2, "a measurement records `run ...` or `plan slo ...`");
    snprintf(args, sizeof args, "check --write-baseline %s -- run --trace %s --bogus 1", b, t);
    tu_expect_exit(args, 2, "run --bogus: not an option a run measurement records");
    snprintf(args, sizeof args, "check --write-baseline %s -- run --set cluster.prefill=2", b);
    tu_expect_exit(args, 2, "run: a measurement needs --trace FILE");
    snprintf(args, sizeof args, "check --write-baseline %s -- plan slo --trace %s --ttft-p90-ms 5000 --json", b, t);
    tu_expect_exit(args, 2, "plan slo --json: not an option of a measurement");
    snprintf(args, sizeof args, "check --write-baseline %s -- plan slo --trace %s --ttft-p90-ms -1", b, t);
    tu_expect_exit(args, 2, "--ttft-p90-ms: -1 is not a number > 0");
    snprintf(args, sizeof args, "check --baseline %s -- run --trace %s", b, t);
    tu_expect_exit(args, 2, "-- COMMAND needs --write-baseline OUT");
    tu_remove_temp(t);
    tu_remove_temp(b);
}

/* Placement args on the bundled trace, 4 local nodes of 1e5 tokens (where
 * the two placements differ: 0.366 vs 0.617). The deprecated spelling
 * "route" with the old names records the same numbers as "placement" with
 * the new ones, and warns on stderr once per distinct text however many
 * measurements use it; "placement" alone warns nothing. */
static void test_placement_and_deprecated_route(void **state)
{
    const char *m = "{\"name\": \"%s\", \"kind\": \"hitrate\", \"args\": {\"trace\": \"%s\", "
                    "\"capacity_tokens\": \"1e5\", \"nodes\": 4, \"scope\": \"local\", \"%s\": \"%s\"}}";
    char trace[1024]; /* absolute: the baselines are written to /tmp, and their paths are relative to them */
    char *real = realpath("traces/default.jsonl", NULL);
    assert_true(real && strlen(real) < sizeof trace);
    snprintf(trace, sizeof trace, "%.1000s", real);
    free(real);
    const char *rows[][3] = {{"new in_turn", "placement", "in_turn"},
                             {"new longest_prefix", "placement", "longest_prefix"},
                             {"old round_robin", "route", "round_robin"},
                             {"old cache_aware_local", "route", "cache_aware_local"},
                             {"old round_robin again", "route", "round_robin"}};
    char text[16384] = "{\"kvsim_baseline\": 1, \"tolerance\": 1e-6, \"measurements\": [";
    for (size_t i = 0; i < 5; i++) {
        size_t n = strlen(text);
        snprintf(text + n, sizeof text - n, m, rows[i][0], trace, rows[i][1], rows[i][2]);
        strcat(text, i < 4 ? ", " : "]}");
    }
    char *b = tu_write_temp(text), *out = tu_write_temp("");
    cli_result r = kvsim("check --baseline %s --write-baseline %s", b, out);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "kvsim check: \"route\" is deprecated, use \"placement\" (round_robin is now in_turn)\n"
                               "kvsim check: \"route\" is deprecated, use \"placement\" (cache_aware_local is now "
                               "longest_prefix)\n");
    tu_free(&r);
    json_t *root = json_load_file(out, 0, NULL);
    const char *metrics[] = {"hit_rate_blocks", "hit_rate_tokens"};
    for (size_t k = 0; k < 2; k++) {
        double in_turn = json_number_value(json_object_get(expect_of(root, "new in_turn"), metrics[k]));
        double longest = json_number_value(json_object_get(expect_of(root, "new longest_prefix"), metrics[k]));
        assert_true(in_turn < longest - 0.1);
        assert_true(json_number_value(json_object_get(expect_of(root, "old round_robin"), metrics[k])) == in_turn);
        assert_true(json_number_value(json_object_get(expect_of(root, "old round_robin again"), metrics[k])) ==
                    in_turn);
        assert_true(json_number_value(json_object_get(expect_of(root, "old cache_aware_local"), metrics[k])) ==
                    longest);
    }
    assert_float_equal(json_number_value(json_object_get(expect_of(root, "new in_turn"), "hit_rate_blocks")), 0.366382,
                       1e-6);
    json_decref(root);
    r = kvsim("check --baseline %s", out);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "all 10 numbers within tolerance"));
    tu_free(&r);
    snprintf(text, sizeof text, "{\"kvsim_baseline\": 1, \"measurements\": [");
    snprintf(text + strlen(text), sizeof text - strlen(text), m, "new", trace, "placement", "in_turn");
    strcat(text, "]}");
    char *c = tu_write_temp(text);
    r = kvsim("check --baseline %s --write-baseline %s", c, out);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    tu_free(&r);
    tu_remove_temp(b);
    tu_remove_temp(c);
    tu_remove_temp(out);
}

/* Bad baselines exit 2 with a message naming the problem. */
static void test_bad_baselines(void **state)
{
    char *t = tu_write_temp(T1);
    char text[1024];
    const char *bodies[][2] = {
        {"not json", ":1:"},
        {"{\"kvsim_baseline\": 1, \"measurements\": 3}", "must be an array"},
        {"{\"kvsim_baseline\": 1, \"measurements\": [{\"name\": \"x\", \"kind\": \"teleport\", \"args\": {}}]}",
         "unknown or missing kind 'teleport'"},
        {"{\"kvsim_baseline\": 1, \"measurements\": [{\"name\": \"x\", \"kind\": \"hitrate\", \"args\": {\"trace\": "
         "\"/nonexistent\"}, "
         "\"expect\": {\"hit_rate_blocks\": 0}}]}",
         "measurement x: /nonexistent"},
        {"{\"kvsim_baseline\": 1, \"measurements\": [{\"name\": \"x\", \"kind\": \"hitrate\", \"args\": {\"trace\": "
         "\"%s\", \"policy\": "
         "\"nosuch\"}, \"expect\": {\"hit_rate_blocks\": 0}}]}",
         "unknown eviction policy"},
        {"{\"kvsim_baseline\": 1, \"measurements\": [{\"name\": \"x\", \"kind\": \"hitrate\", \"args\": {\"trace\": "
         "\"%s\"}, \"expect\": "
         "{\"speed\": 1}}]}",
         "no metric 'speed'"},
        {"{\"kvsim_baseline\": 1, \"measurements\": [{\"name\": \"x\", \"kind\": \"hitrate\", \"args\": {\"trace\": "
         "\"%s\"}}]}",
         "no \"expect\""},
        {"{\"kvsim_baseline\": 1, \"measurements\": [{\"name\": \"x\", \"kind\": \"hitrate\", \"args\": {\"trace\": "
         "\"%s\", "
         "\"capacity_tokens\": \"1,2\"}, \"expect\": {\"hit_rate_blocks\": 0}}]}",
         "one value"},
        {"{\"kvsim_baseline\": 1, \"measurements\": [{\"name\": \"x\", \"kind\": \"hitrate\", \"args\": {\"trace\": "
         "\"%s\", "
         "\"placement\": \"round_robin\"}, \"expect\": {\"hit_rate_blocks\": 0}}]}",
         "measurement x: placement: unknown placement 'round_robin' (known: bounded, longest_prefix, in_turn)"},
        /* issue 27: a check of nothing, a tolerance nothing can meet and a
         * format this kvsim does not know are setup errors (exit 2), not a
         * pass ("all 0 numbers within tolerance") or a regression (exit 3) */
        {"{\"kvsim_baseline\": 1, \"tolerance\": 0.002, \"measurements\": []}",
         "baseline: \"measurements\" is empty: nothing to check"},
        {"{\"kvsim_baseline\": 1, \"tolerance\": -0.1, \"measurements\": [{\"name\": \"x\", \"kind\": "
         "\"hitrate\", \"args\": {\"trace\": \"%s\"}, \"expect\": {\"hit_rate_blocks\": 0.4}}]}",
         "baseline: \"tolerance\": -0.1 is not a non-negative number"},
        {"{\"kvsim_baseline\": 1, \"measurements\": [{\"name\": \"x\", \"kind\": \"hitrate\", \"args\": "
         "{\"trace\": \"%s\"}, \"tolerance\": -1, \"expect\": {\"hit_rate_blocks\": 0.4}}]}",
         "measurement x: \"tolerance\": -1 is not a non-negative number"},
        {"{\"kvsim_baseline\": 2, \"measurements\": [{\"name\": \"x\", \"kind\": \"hitrate\", \"args\": "
         "{\"trace\": \"%s\"}, \"expect\": {\"hit_rate_blocks\": 0.4}}]}",
         "\"kvsim_baseline\": 2 is not a baseline format it knows; this kvsim reads version 1"},
        {"{\"measurements\": [{\"name\": \"x\", \"kind\": \"hitrate\", \"args\": {\"trace\": \"%s\"}, "
         "\"expect\": {\"hit_rate_blocks\": 0.4}}]}",
         "\"kvsim_baseline\": missing; this kvsim reads version 1"},
        /* a misspelt key was ignored, and the tolerance fell to 0 */
        {"{\"kvsim_baseline\": 1, \"tolerence\": 0.1, \"measurements\": [{\"name\": \"x\", \"kind\": "
         "\"hitrate\", \"args\": {\"trace\": \"%s\"}, \"expect\": {\"hit_rate_blocks\": 0.4}}]}",
         "baseline: unknown key \"tolerence\" (did you mean 'tolerance'?)"},
        {"{\"kvsim_baseline\": 1, \"measurements\": [{\"name\": \"x\", \"kind\": \"hitrate\", \"args\": "
         "{\"trace\": \"%s\"}, \"tolerence\": 0.1, \"expect\": {\"hit_rate_blocks\": 0.4}}]}",
         "measurement x: unknown key \"tolerence\" (did you mean 'tolerance'?)"},
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        snprintf(text, sizeof text, bodies[i][0], t);
        char *b = tu_write_temp(text), args[1024];
        snprintf(args, sizeof args, "check --baseline %s", b);
        tu_expect_exit(args, 2, bodies[i][1]);
        /* --json answers on stdout too: status "error" and the message
         * (a parse error, a measurement that fails, a check of nothing) */
        if (i != 0 && i != 3 && i != 9) {
            tu_remove_temp(b);
            continue;
        }
        snprintf(args, sizeof args, "check --baseline %s --json", b);
        cli_result r = tu_kvsim(args);
        assert_int_equal(r.status, 2);
        json_t *j = json_loads(r.out, 0, NULL);
        if (!j) fail_msg("check --json on exit 2 printed no JSON: '%s'", r.out);
        assert_string_equal(json_string_value(json_object_get(j, "status")), "error");
        assert_non_null(strstr(json_string_value(json_object_get(j, "error")), bodies[i][1]));
        json_decref(j);
        tu_free(&r);
        tu_remove_temp(b);
    }
    tu_expect_exit("check", 2, "--baseline");
    tu_expect_exit("check --write-baseline /tmp/x.json", 2, "--trace");
    /* --junit onto the baseline once replaced it with XML */
    tu_expect_exit("check --baseline tests/baselines/default.json --junit tests/baselines/default.json", 2,
                   "--junit names the baseline file");
    tu_remove_temp(t);
}

/* Recorded at tolerance 0, a baseline passes its own next check: its
 * numbers are kept to 6 significant digits, and what that rounding took
 * is no move (11 of 13 once failed). */
static void test_tolerance_zero_round_trip(void **state)
{
    (void)state;
    char *b = tu_temp_path(), args[1024];
    snprintf(args, sizeof args, "check --write-baseline %s --tolerance 0 -- run --trace traces/default.jsonl", b);
    tu_expect_exit(args, 0, NULL);
    snprintf(args, sizeof args, "check --baseline %s", b);
    tu_expect_exit(args, 0, NULL);
    tu_remove_temp(b);
}

/* Paths in a baseline are relative to its folder: a baseline beside its
 * trace passes from any working directory, and --write-baseline into
 * another folder rewrites the path for it. */
static void test_paths_relative_to_baseline(void **state)
{
    char dir[] = "/tmp/kvsim-bl-XXXXXX", path[256], cmd[8192 + 512], bin[4096];
    assert_non_null(mkdtemp(dir));
    assert_non_null(realpath(tu_kvsim_bin(), bin));
    snprintf(path, sizeof path, "%s/t.jsonl", dir);
    FILE *f = fopen(path, "w");
    fputs(T1, f);
    fclose(f);
    snprintf(path, sizeof path, "%s/b.json", dir);
    f = fopen(path, "w");
    fputs("{\"kvsim_baseline\": 1, \"tolerance\": 0.002, \"measurements\": [{\"name\": \"lru inf\", \"kind\": "
          "\"hitrate\", \"args\": {\"trace\": \"t.jsonl\", \"policy\": \"lru\", \"capacity_tokens\": \"inf\"}}]}",
          f);
    fclose(f);
    cli_result r = kvsim("check --baseline %s --write-baseline %s", path, path);
    if (r.status) fail_msg("record: %s", r.err);
    tu_free(&r);
    snprintf(cmd, sizeof cmd, "cd / && %s check --baseline %s", bin, path);
    r = tu_shell(cmd);
    if (r.status || !strstr(r.out, "all 2 numbers within tolerance")) fail_msg("from /: %s%s", r.out, r.err);
    tu_free(&r);
    r = kvsim("check --baseline %s --write-baseline %s/sub-b.json", path, dir);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    snprintf(cmd, sizeof cmd, "%s/sub-b.json", dir);
    json_t *b = json_load_file(cmd, 0, NULL);
    json_t *args = json_object_get(json_array_get(json_object_get(b, "measurements"), 0), "args");
    assert_string_equal(json_string_value(json_object_get(args, "trace")), "t.jsonl");
    json_decref(b);
    snprintf(cmd, sizeof cmd, "mkdir %s/sub && %s check --baseline %s --write-baseline %s/sub/b.json", dir, bin, path,
             dir);
    r = tu_shell(cmd);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    snprintf(cmd, sizeof cmd, "%s/sub/b.json", dir);
    b = json_load_file(cmd, 0, NULL);
    args = json_object_get(json_array_get(json_object_get(b, "measurements"), 0), "args");
    assert_string_equal(json_string_value(json_object_get(args, "trace")), "../t.jsonl");
    json_decref(b);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* The baselines the project ships pass as committed. */
static void test_shipped_default_baseline(void **state)
{
    tu_expect_exit("check --baseline tests/baselines/default.json", 0, NULL);
}

static void test_shipped_mooncake_baseline(void **state)
{
    tu_expect_exit("check --baseline tests/baselines/mooncake_synthetic.json", 0, NULL);
}

/* kind "run": record a run's numbers, check them, and tell a changed trace
 * or config (exit 2, "not a regression") from a moved number (exit 3). */
static void test_run_kind_and_setup_guard(void **state)
{
    char *b = tu_write_temp("{\"kvsim_baseline\": 1, \"tolerance\": 0.01, \"measurements\": [{\"name\": \"r\", "
                            "\"kind\": \"run\", \"args\": {\"trace\": \"traces/default.jsonl\", \"set\": "
                            "{\"cluster.prefill\": 2, \"cluster.decode\": 2}}}]}");
    char args[1024];
    snprintf(args, sizeof args, "check --baseline %s --write-baseline %s", b, b);
    tu_expect_stdout(args, "recorded 13 numbers");
    snprintf(args, sizeof args, "check --baseline %s", b);
    tu_expect_stdout(args, "all 13 numbers within tolerance");
    json_error_t je;
    json_t *base = json_load_file(b, 0, &je), *m = json_array_get(json_object_get(base, "measurements"), 0);
    assert_int_equal(strlen(json_string_value(json_object_get(m, "trace_fingerprint"))), 16);
    assert_non_null(json_object_get(json_object_get(m, "expect"), "ttft_ms.p90"));
    /* a moved number: exit 3; --json says the same in one object; under
     * GitHub Actions each moved number is an ::error line */
    json_object_set_new(json_object_get(m, "expect"), "slo_attainment", json_real(0.5));
    json_dump_file(base, b, 0);
    tu_expect_exit(args, 3, "moved beyond tolerance");
    char jargs[1100];
    snprintf(jargs, sizeof jargs, "%s --json", args);
    cli_result r = tu_kvsim(jargs);
    assert_int_equal(r.status, 3);
    json_t *o = json_loads(r.out, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(o, "status")), "moved");
    assert_int_equal(json_integer_value(json_object_get(o, "moved")), 1);
    assert_int_equal(json_array_size(json_object_get(o, "rows")), 13);
    json_decref(o);
    tu_free(&r);
    /* --junit: one testcase per number, the moved one a failure */
    char *junit = tu_temp_path();
    snprintf(jargs, sizeof jargs, "%s --junit %s", args, junit);
    r = tu_kvsim(jargs);
    assert_int_equal(r.status, 3);
    tu_free(&r);
    FILE *jf = fopen(junit, "r");
    assert_non_null(jf);
    char *xml = tu_slurp(jf);
    fclose(jf);
    assert_non_null(strstr(xml, "tests=\"13\" failures=\"1\" errors=\"0\""));
    assert_non_null(strstr(xml, "<testcase classname=\"r\" name=\"slo_attainment\"><failure message=\"moved: "
                                "expected 0.5, got 1 (tolerance 0.01)\"/></testcase>"));
    free(xml);
    tu_remove_temp(junit);
    snprintf(jargs, sizeof jargs, "%s", args);
    setenv("GITHUB_ACTIONS", "true", 1);
    r = tu_kvsim(jargs);
    unsetenv("GITHUB_ACTIONS");
    assert_non_null(strstr(r.out, "::error title=kvsim check::r slo_attainment moved: expected 0.5, got 1"));
    tu_free(&r);
    /* a different trace: exit 2, named as such */
    json_object_set_new(m, "trace_fingerprint", json_string("0000000000000000"));
    json_dump_file(base, b, 0);
    tu_expect_exit(args, 2, "the trace changed (trace_fingerprint");
    json_object_del(m, "trace_fingerprint");
    json_object_set_new(m, "config_hash", json_string("0000000000000000"));
    json_dump_file(base, b, 0);
    tu_expect_exit(args, 2, "the resolved config changed (config_hash");
    json_object_set_new(json_object_get(m, "args"), "sets", json_object());
    json_dump_file(base, b, 0);
    tu_expect_exit(args, 2, "sets: not a run argument (trace, config, set)");
    json_decref(base);
    tu_remove_temp(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_check_perturb),           cmocka_unit_test(test_measurement_tolerance),
        cmocka_unit_test(test_placement_and_deprecated_route), cmocka_unit_test(test_bad_baselines),
        cmocka_unit_test(test_tolerance_zero_round_trip),      cmocka_unit_test(test_run_kind_and_setup_guard),
        cmocka_unit_test(test_shipped_default_baseline),       cmocka_unit_test(test_shipped_mooncake_baseline),
        cmocka_unit_test(test_paths_relative_to_baseline),     cmocka_unit_test(test_relative_and_one_sided),
        cmocka_unit_test(test_write_baseline_commands),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
