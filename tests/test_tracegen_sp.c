/* tests/test_tracegen_sp.c — `kvsim trace gen --workload shared-prefix`
 * (sim/trace/tracegen_sp.c, sim/cli/cmd_trace.c): inference-perf's
 * shared_prefix load as a Mooncake-format trace.
 *
 * Checked on the written bytes with jansson, against values worked out by
 * hand: request counts per stage (⌊rate × seconds⌋); lengths; the blocks a
 * group's users share at 16-, 64- and 512-token blocks and the repeats of a
 * pool entry; constant, jittered and Poisson stage timing; multi-turn
 * prefix growth; determinism; `trace stats` and `kvsim run` read the trace;
 * option misuse exits 2 naming the option; --help lists the options. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <inttypes.h>

/* ---- a parsed trace ------------------------------------------------------- */

typedef struct line {
    double ts;
    int64_t input, output, session;
    size_t first, n; /* its ids: sp_trace.ids[first .. first + n) */
} line;

typedef struct sp_trace {
    line *lines;
    int64_t *ids;
    int n;
    size_t nids;
} sp_trace;

static void add_line(sp_trace *t, const json_t *o, size_t *cap_lines, size_t *cap_ids)
{
    if ((size_t)t->n == *cap_lines) t->lines = realloc(t->lines, (*cap_lines *= 2) * sizeof *t->lines);
    const json_t *ids = json_object_get(o, "hash_ids");
    line *l = &t->lines[t->n++];
    *l = (line){.ts = json_number_value(json_object_get(o, "timestamp")),
                .input = tu_int_field(o, "input_length"),
                .output = tu_int_field(o, "output_length"),
                .session = tu_int_field(o, "session"),
                .first = t->nids,
                .n = json_array_size(ids)};
    while (t->nids + l->n > *cap_ids) t->ids = realloc(t->ids, (*cap_ids *= 2) * sizeof *t->ids);
    for (size_t j = 0; j < l->n; j++) t->ids[t->nids++] = json_integer_value(json_array_get(ids, j));
}

/* `kvsim trace gen --workload shared-prefix ARGS -o -`, parsed. */
static sp_trace gen(const char *args)
{
    char all[1024];
    snprintf(all, sizeof all, "--workload shared-prefix %s", args);
    char *text = tu_gen_text(all), *save = NULL;
    size_t cap_lines = 256, cap_ids = 4096;
    sp_trace t = {malloc(cap_lines * sizeof(line)), malloc(cap_ids * sizeof(int64_t)), 0, 0};
    for (char *s = strtok_r(text, "\n", &save); s; s = strtok_r(NULL, "\n", &save)) {
        json_error_t je;
        json_t *o = json_loads(s, 0, &je);
        if (!o) fail_msg("line %d: %s: %s", t.n + 1, je.text, s);
        add_line(&t, o, &cap_lines, &cap_ids);
        json_decref(o);
    }
    free(text);
    return t;
}

static void sp_free(sp_trace *t)
{
    free(t->lines);
    free(t->ids);
}

static const int64_t *ids_of(const sp_trace *t, int i) { return &t->ids[t->lines[i].first]; }

/* How many ids lines a and b share (ids within a line are distinct). */
static int shared_ids(const sp_trace *t, int a, int b)
{
    int k = 0;
    for (size_t x = 0; x < t->lines[a].n; x++)
        for (size_t y = 0; y < t->lines[b].n; y++) k += ids_of(t, a)[x] == ids_of(t, b)[y];
    return k;
}

static bool same_ids(const sp_trace *t, int a, int b)
{
    return t->lines[a].n == t->lines[b].n && !memcmp(ids_of(t, a), ids_of(t, b), t->lines[a].n * sizeof(int64_t));
}

static int64_t distinct_ids(const sp_trace *t)
{
    int64_t max = 0, k = 0;
    for (size_t j = 0; j < t->nids; j++) max = t->ids[j] > max ? t->ids[j] : max;
    bool *seen = calloc((size_t)max + 1, 1);
    for (size_t j = 0; j < t->nids; j++) k += !seen[t->ids[j]], seen[t->ids[j]] = true;
    free(seen);
    return k;
}

/* ---- counts and lengths --------------------------------------------------- */

static void test_counts(void **state)
{
    static const struct {
        const char *args;
        int want;
    } cases[] = {
        {"", 4800},                     /* 8 × 600 */
        {"--stages 8:2,20:1", 16 + 20}, /* 8 × 2 + 20 × 1 */
        {"--stages 8:2,20:1 --requests 20", 20},
        {"--stages 0.29:100", 29}, /* 28.999999999999996 in doubles */
        {"--stages 2.5:3,0.5:1,1:2", 7 + 0 + 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sp_trace t = gen(cases[i].args);
        if (t.n != cases[i].want) fail_msg("%s: %d requests, want %d", cases[i].args, t.n, cases[i].want);
        sp_free(&t);
    }
}

/* 100 + 447 = 547 input tokens, 248 output, ⌈547/16⌉ = 35 ids; the pool
 * of 11 × 4 = 44 users: each of the first 44 requests is a different user,
 * and request i + 44 repeats request i exactly (same user, same ids). */
static void test_lengths_and_repeats(void **state)
{
    sp_trace t = gen("");
    bool seen[44] = {false};
    for (int i = 0; i < t.n; i++) {
        const line *l = &t.lines[i];
        assert_int_equal(l->input, 547);
        assert_int_equal(l->output, 248);
        assert_int_equal(l->n, 35);
        assert_true(l->session >= 0 && l->session < 44);
        if (i < 44) {
            assert_false(seen[l->session]);
            seen[l->session] = true;
        } else {
            assert_int_equal(l->session, t.lines[i - 44].session);
            assert_true(same_ids(&t, i, i - 44));
        }
    }
    assert_int_equal(distinct_ids(&t), 11 * 6 + 44 * 29); /* 6 system blocks a group, 29 own blocks a user */
    sp_free(&t);
}

/* ---- shared-prefix blocks --------------------------------------------------- */

/* Users s and s' (session = group × 4 + user) share exactly `nsys` ids when
 * in one group — the leading blocks wholly inside the 100-token system
 * prompt — and none otherwise; the block after them is the user's own. */
static void check_sharing(const char *args, size_t nblocks, int nsys)
{
    sp_trace t = gen(args);
    int first[44];
    for (int s = 0; s < 44; s++) first[s] = -1;
    for (int i = 0; i < 44; i++) first[t.lines[i].session] = i;
    for (int s = 0; s < 44; s++) {
        assert_true(first[s] >= 0);
        assert_int_equal(t.lines[first[s]].n, nblocks);
        for (int s2 = 0; s2 < 44; s2++) {
            if (s2 == s) continue;
            int want = s / 4 == s2 / 4 ? nsys : 0;
            int got = shared_ids(&t, first[s], first[s2]);
            if (got != want) fail_msg("%s: users %d and %d share %d ids, want %d", args, s, s2, got, want);
            if (want) assert_memory_equal(ids_of(&t, first[s]), ids_of(&t, first[s2]), (size_t)nsys * sizeof(int64_t));
        }
    }
    sp_free(&t);
}

static void test_shared_blocks(void **state)
{
    check_sharing("--requests 44", 35, 6);                   /* 6 × 16 = 96 ≤ 100; block 7 mixes */
    check_sharing("--requests 44 --block-tokens 64", 9, 1);  /* ⌈547/64⌉ = 9; 64 ≤ 100 < 128 */
    check_sharing("--requests 44 --block-tokens 512", 2, 0); /* ⌈547/512⌉ = 2; 100 < 512 */
    check_sharing("--requests 44 --block-tokens 50", 11, 2); /* 100 = 2 × 50 exactly */
}

/* ---- stage timing ------------------------------------------------------------- */

/* Constant: 125 ms apart in stage 1 (8/s for 2 s), 50 ms in stage 2 (20/s)
 * from 2000 ms; the request number restarts with the stage, so request 16
 * sends pool entry 0 again. */
static void test_constant_stages(void **state)
{
    sp_trace t = gen("--stages 8:2,20:1");
    for (int j = 0; j < 16; j++) assert_double_equal(t.lines[j].ts, 125.0 * j, 0);
    for (int j = 0; j < 20; j++) assert_double_equal(t.lines[16 + j].ts, 2000 + 50.0 * j, 0);
    assert_int_equal(t.lines[16].session, t.lines[0].session);
    assert_int_equal(t.lines[16 + 15].session, t.lines[15].session);
    sp_free(&t);
    t = gen("--stages 3:1"); /* 333.333… ms, kept to the microsecond */
    assert_double_equal(t.lines[1].ts, 333.333, 0);
    assert_double_equal(t.lines[2].ts, 666.667, 0);
    sp_free(&t);
}

/* Jittered (inference-perf's constant timer): ⌊rate × s⌋ requests after the
 * stage start, the last exactly at its end, gaps not all equal. */
static void test_jittered_stages(void **state)
{
    sp_trace t = gen("--arrivals jittered --stages 4:5,10:2");
    assert_int_equal(t.n, 40);
    assert_double_equal(t.lines[19].ts, 5000, 0);
    assert_double_equal(t.lines[39].ts, 7000, 0);
    double min_gap = 1e9, max_gap = 0;
    for (int i = 0; i < 40; i++) {
        double lo = i < 20 ? 0 : 5000;
        assert_true(t.lines[i].ts > lo && t.lines[i].ts <= lo + (i < 20 ? 5000 : 2000));
        if (i == 0 || i == 20) continue;
        double gap = t.lines[i].ts - t.lines[i - 1].ts;
        min_gap = fmin(min_gap, gap), max_gap = fmax(max_gap, gap);
    }
    assert_true(min_gap >= 0 && max_gap > 2 * min_gap);
    sp_free(&t);
}

/* A batch (vllm bench latency's): the stages' ⌊rate × s⌋ requests, every
 * one at time 0; 8 users of one empty system prompt are 8 distinct
 * 32-token prompts of two 16-token blocks each, no block shared. */
static void test_batch_arrivals(void **state)
{
    sp_trace t = gen("--arrivals batch --stages 4:5,10:2");
    assert_int_equal(t.n, 40);
    for (int i = 0; i < 40; i++) assert_double_equal(t.lines[i].ts, 0, 0);
    sp_free(&t);
    t = gen("--arrivals batch --stages 8:1 --system-prompts 1 --users-per-prompt 8 --system-tokens 0 "
            "--question-tokens 32 --output-tokens 128");
    assert_int_equal(t.n, 8);
    assert_int_equal(t.nids, 16);
    for (size_t i = 0; i < t.nids; i++)
        for (size_t j = 0; j < i; j++) assert_true(t.ids[i] != t.ids[j]);
    for (int i = 0; i < 8; i++) assert_true(t.lines[i].input == 32 && t.lines[i].output == 128 && t.lines[i].n == 2);
    sp_free(&t);
}

/* Poisson: 50/s for 400 s = 20000 requests; the mean gap is 20 ms (the
 * standard error of 20000 exponential gaps is 0.14 ms: ±0.4 ms is ~3
 * sigma) and the coefficient of variation ~1; the second stage starts at
 * 400 s or after the first one's last arrival. */
static void test_poisson_stages(void **state)
{
    sp_trace t = gen("--arrivals poisson --stages 50:400,10:100 --seed 7");
    assert_int_equal(t.n, 20000 + 1000);
    double sum = 0, sum2 = 0;
    for (int i = 1; i < 20000; i++) {
        double g = t.lines[i].ts - t.lines[i - 1].ts;
        assert_true(g >= 0);
        sum += g, sum2 += g * g;
    }
    double mean = (sum + t.lines[0].ts) / 20000, var = sum2 / 19999 - (sum / 19999) * (sum / 19999);
    assert_double_equal(mean, 20, 0.4);
    assert_double_equal(sqrt(var) / mean, 1, 0.05);
    assert_true(t.lines[20000].ts >= fmax(400000, t.lines[19999].ts));
    assert_double_equal((t.lines[20999].ts - fmax(400000, t.lines[19999].ts)) / 1000, 100, 10);
    sp_free(&t);
}

/* ---- multi-turn ----------------------------------------------------------------- */

/* 2 groups × 2 users, system 40, question 20, output 10, 16-token blocks:
 * ⌊40/16⌋ = 2 group blocks (ids 0,1 and 2,3). Turn 1 is 60 tokens = 4
 * blocks: the group's 2 and 2 fresh. Turn 2 is 60 + 10 + 20 = 90 tokens = 6
 * blocks: turn 1's ⌊60/16⌋ = 3 full blocks and 3 fresh. 4 + 4×2 + 4×3 = 24
 * distinct ids. */
static void test_multi_turn_by_hand(void **state)
{
    sp_trace t = gen("--multi-turn --system-prompts 2 --users-per-prompt 2 --system-tokens 40 --question-tokens 20 "
                     "--output-tokens 10 --stages 1:8");
    assert_int_equal(t.n, 8);
    for (int i = 0; i < 8; i++) {
        const line *l = &t.lines[i];
        int64_t g = l->session / 2;
        assert_int_equal(l->input, i < 4 ? 60 : 90);
        assert_int_equal(l->n, i < 4 ? 4 : 6);
        assert_int_equal(ids_of(&t, i)[0], 2 * g);
        assert_int_equal(ids_of(&t, i)[1], 2 * g + 1);
        if (i >= 4) {
            assert_int_equal(l->session, t.lines[i - 4].session);
            assert_int_equal(ids_of(&t, i)[2], ids_of(&t, i - 4)[2]);
            assert_int_equal(shared_ids(&t, i, i - 4), 3);
        }
    }
    assert_int_equal(distinct_ids(&t), 24);
    sp_free(&t);
}

/* The defaults with --multi-turn: a user's turn r (1-based) is 547 + (r−1)
 * × 695 tokens, starts with the previous turn's ⌊input/16⌋ ids, and its
 * later ids appear in no earlier request. */
static void test_multi_turn_growth(void **state)
{
    sp_trace t = gen("--multi-turn --requests 440");
    int prev[44], turns[44] = {0};
    int64_t max_id = 11 * 6 - 1;
    for (int i = 0; i < t.n; i++) {
        const line *l = &t.lines[i];
        int s = (int)l->session;
        assert_int_equal(l->input, 547 + turns[s] * 695);
        assert_int_equal(l->n, (l->input + 15) / 16);
        size_t keep = turns[s] ? (size_t)(t.lines[prev[s]].input / 16) : 6;
        if (turns[s]) assert_memory_equal(ids_of(&t, i), ids_of(&t, prev[s]), keep * sizeof(int64_t));
        for (size_t j = keep; j < l->n; j++) {
            if (ids_of(&t, i)[j] <= max_id) fail_msg("line %d: id %zu is not fresh", i, j);
            max_id = ids_of(&t, i)[j];
        }
        prev[s] = i, turns[s]++;
    }
    for (int s = 0; s < 44; s++) assert_int_equal(turns[s], 10);
    sp_free(&t);
}

/* ---- determinism, readers, options ------------------------------------------------- */

static void test_deterministic(void **state)
{
    char *a = tu_gen_text("--workload shared-prefix --stages 8:60 --seed 5");
    char *b = tu_gen_text("--seed 5 --stages 8:60 --workload shared-prefix");
    char *c = tu_gen_text("--workload shared-prefix --stages 8:60 --seed 6");
    assert_string_equal(a, b);
    assert_true(strcmp(a, c) != 0);
    free(a), free(b), free(c);
    sp_trace x = gen("--seed 5 --requests 44"), y = gen("--seed 6 --requests 44");
    int moved = 0; /* another seed shuffles the pool another way */
    for (int i = 0; i < 44; i++) moved += x.lines[i].session != y.lines[i].session;
    assert_true(moved > 30);
    sp_free(&x), sp_free(&y);
}

/* `trace stats` reads every line: 4800 × 35 blocks, 1342 distinct. */
static void test_stats_reads(void **state)
{
    char *path = tu_temp_path(), cmd[1024];
    snprintf(cmd, sizeof cmd, "trace gen --workload shared-prefix -o %s", path);
    tu_expect_exit(cmd, 0, "kvsim trace gen: wrote 4800 requests to ");
    snprintf(cmd, sizeof cmd, "trace stats --json --block-tokens 16 %s", path);
    json_t *j = tu_kvsim_json(cmd);
    assert_int_equal(tu_int_field(j, "requests"), 4800);
    assert_int_equal(tu_int_field(j, "blocks"), 4800 * 35);
    assert_int_equal(tu_int_field(j, "distinct_blocks"), 1342);
    assert_int_equal(tu_int_field(j, "skipped"), 0);
    assert_double_equal(json_real_value(json_object_get(j, "max_hit_rate_blocks")), 1 - 1342.0 / 168000, 1e-12);
    json_decref(j);
    tu_remove_temp(path);
}

/* `kvsim run` replays it on one aggregated vLLM-like instance at 16-token blocks. */
static void test_run_replays(void **state)
{
    char *path = tu_temp_path(), cmd[1024];
    snprintf(cmd, sizeof cmd, "trace gen --workload shared-prefix --stages 8:600,20:600 --requests 300 -o %s", path);
    tu_expect_exit(cmd, 0, NULL);
    snprintf(cmd, sizeof cmd,
             "run --trace %s --set model=llama3.1-8b --set hardware=h100x1 --set cluster.mode=aggregated "
             "--set cluster.instances=1 --set trace.block_tokens=16 --set kvstore.block_tokens=16",
             path);
    tu_expect_stdout(cmd, "requests   300   completed 300");
    tu_remove_temp(path);
}

static void test_option_errors(void **state)
{
    static const struct {
        const char *args, *want;
    } cases[] = {
        {"--stages 8:600,x", "kvsim trace gen: --stages: stage 2 'x' is not RATE:SECONDS"},
        {"--stages 8-600", "kvsim trace gen: --stages: stage 1 '8-600' is not RATE:SECONDS"},
        {"--stages 8:600:1", "kvsim trace gen: --stages: stage 1 '8:600:1' is not RATE:SECONDS"},
        {"--stages 8:600,", "kvsim trace gen: --stages: stage 2 '' is not RATE:SECONDS"},
        {"--stages ''", "kvsim trace gen: --stages: empty"},
        {"--stages 0:600", "kvsim trace gen: --stages: stage 1 (0:600): the rate must be a positive"},
        {"--stages 8:10,20:-1", "kvsim trace gen: --stages: stage 2 (20:-1): the duration must be a positive"},
        {"--stages 8:inf", "kvsim trace gen: --stages: stage 1 (8:inf): the duration must be"},
        {"--stages 0.1:5", "kvsim trace gen: --stages: no stage sends a request"},
        {"--stages 1e9:1e6", "kvsim trace gen: --stages: stage 1 (1e+09:1e+06) sends more than 10^12 requests"},
        {"--system-prompts 0", "kvsim trace gen: --system-prompts must be in [1, 1048576]"},
        {"--users-per-prompt 0", "kvsim trace gen: --users-per-prompt must be in [1, 1048576]"},
        {"--system-prompts 100000 --users-per-prompt 1000", "--system-prompts x --users-per-prompt must be at most"},
        {"--system-tokens -1", "kvsim trace gen: --system-tokens: '-1' is negative"},
        {"--question-tokens 0", "kvsim trace gen: --question-tokens must be in [1, "},
        {"--output-tokens 0", "kvsim trace gen: --output-tokens must be in [1, 16777216]"},
        {"--block-tokens 0", "kvsim trace gen: --block-tokens must be in [1, 2^30]"},
        {"--arrivals uniform", "kvsim trace gen: --arrivals: 'uniform' is not an arrival process"},
        {"--multi-turn --system-prompts 1 --users-per-prompt 1 --stages 100:600",
         "kvsim trace gen: --multi-turn: a user's prompt would grow to 41699852 tokens over its 60000 turns"},
        {"--rate 3", "kvsim trace gen: --rate does not apply to --workload shared-prefix"},
        {"--documents 3", "kvsim trace gen: --documents does not apply to --workload shared-prefix"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[512];
        snprintf(args, sizeof args, "trace gen --workload shared-prefix %s -o /dev/null", cases[i].args);
        tu_expect_exit(args, 2, cases[i].want);
    }
    tu_expect_exit("trace gen --stages 8:600 -o /dev/null", 2,
                   "kvsim trace gen: --stages does not apply to --workload conversation");
    tu_expect_exit("trace gen --multi-turn -o /dev/null", 2,
                   "kvsim trace gen: --multi-turn does not apply to --workload conversation");
    tu_expect_exit("trace gen --workload shared-prefix -o /dev/full", 2, "No space left on device");
}

static void test_help(void **state)
{
    static const char *const want[] = {
        "conversation|rag|multiround-qa|shared-prefix",
        "--workload shared-prefix:",
        "--system-prompts N         shared system prompts (groups) (default 11)",
        "--users-per-prompt N       users (distinct questions) per system prompt (default 4)",
        "--system-tokens N          system prompt tokens, shared by its users (default 100)",
        "--question-tokens N        question tokens, one question per user (default 447)",
        "--output-tokens N          output tokens of every request (default 248)",
        "--multi-turn               a user's prompt grows with its earlier questions and answers (default off)",
        "--stages R:S,...           load stages, requests/s for seconds each (default 8:600)",
        "--arrivals KIND            constant, poisson, jittered (inference-perf's timer) or batch (all at time 0, as "
        "vllm bench latency) (default constant)",
        "--block-tokens N           tokens per hash block (default 16)",
    };
    tu_expect_all("trace gen --help", want, sizeof want / sizeof want[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_lengths_and_repeats),
        cmocka_unit_test(test_shared_blocks),
        cmocka_unit_test(test_constant_stages),
        cmocka_unit_test(test_jittered_stages),
        cmocka_unit_test(test_batch_arrivals),
        cmocka_unit_test(test_poisson_stages),
        cmocka_unit_test(test_multi_turn_by_hand),
        cmocka_unit_test(test_multi_turn_growth),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_stats_reads),
        cmocka_unit_test(test_run_replays),
        cmocka_unit_test(test_option_errors),
        cmocka_unit_test(test_help),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
