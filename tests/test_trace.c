/* tests/test_trace.c — the Mooncake trace reader (sim/trace/trace.c), `kvsim trace
 * stats` and `kvsim trace gen` (sim/cli/cmd_trace.c, sim/trace/tracegen.c).
 *
 * Bad input is checked end to end through the CLI: every class of bad line
 * must exit 2 and print "FILE:LINE: FIELD: problem". Reader semantics
 * (skip-bad, sort, speed, sample, limit, key chaining) and statistics are
 * checked through the library API with values worked out by hand below. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <math.h>
#include <unistd.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <xxhash.h>
#include <zlib.h>

#include "sim/trace/trace.h"

/* ---- helpers ------------------------------------------------------------ */

/* Run `kvsim trace stats PATH extra`; the caller frees the result. */
static cli_result stats_cli(const char *path, const char *extra)
{
    char args[1024];
    snprintf(args, sizeof args, "trace stats %s %s", path, extra);
    return tu_kvsim(args);
}

/* A trace whose line `bad_line` is `bad` and whose other lines are valid
 * requests with increasing timestamps; `kvsim trace stats` must exit 2 and
 * print "PATH:bad_line: expect". */
static void expect_bad_line(int bad_line, const char *bad, const char *expect)
{
    char text[8192] = "";
    for (int i = 1; i <= bad_line + 1; i++) {
        char line[512];
        if (i == bad_line) snprintf(line, sizeof line, "%s\n", bad);
        else
            snprintf(line, sizeof line,
                     "{\"timestamp\": %d, \"input_length\": 1024, \"output_length\": 5, \"hash_ids\": [%d, 2]}\n",
                     1000 + i, i);
        strcat(text, line);
    }
    char *path = tu_write_temp(text);
    cli_result r = stats_cli(path, "");
    char want[1024];
    snprintf(want, sizeof want, "%s:%d: %s", path, bad_line, expect);
    if (r.status != 2 || !strstr(r.err, want))
        fail_msg("status %d, stderr '%s'; wanted exit 2 and '%s'", r.status, r.err, want);
    tu_free(&r);
    unlink(path);
    free(path);
}

/* The same line with an unknown field added, which the reader's fast
 * recognizer declines, so jansson reads it: the verdict must not change. */
static void with_unknown_field(const char *line, char *out, size_t n)
{
    const char *close = strrchr(line, '}');
    assert_non_null(close);
    snprintf(out, n, "%.*s, \"zz\": null%s", (int)(close - line), line, close);
}

static void expect_bad(int bad_line, const char *bad, const char *expect)
{
    char variant[1024];
    expect_bad_line(bad_line, bad, expect);
    if (bad[strlen(bad) - 1] != '}') return;
    with_unknown_field(bad, variant, sizeof variant);
    expect_bad_line(bad_line, variant, expect);
}

static void free_all(sim_request **reqs, int n)
{
    for (int i = 0; i < n; i++) sim_request_free(reqs[i]);
}

/* Open `text` as a trace with `opts` and read every request into reqs[]; -1 (nothing
 * kept) when the reader fails. */
static int read_all(const char *text, const sim_trace_opts *opts, sim_request **reqs, int max, sim_err *err)
{
    char *path = tu_write_temp(text);
    sim_trace *t;
    assert_int_equal(sim_trace_open(&t, path, opts, err), 0);
    int n = 0, rc;
    sim_request *r;
    while ((rc = sim_trace_next(t, &r, err)) == 1) {
        assert_true(n < max);
        reqs[n++] = r;
    }
    sim_trace_close(t);
    unlink(path);
    free(path);
    if (rc < 0) {
        free_all(reqs, n);
        return -1;
    }
    return n;
}

/* ---- bad input: exit 2 with FILE:LINE: FIELD: problem ------------------- */

static void test_bad_malformed_json(void **state)
{
    expect_bad(3, "{\"timestamp\": 1, \"input_length\":", "json: malformed JSON (");
}

static void test_bad_not_an_object(void **state)
{
    expect_bad(2, "[1, 2, 3]", "json: expected an object, got an array");
}

static void test_bad_missing_fields(void **state)
{
    expect_bad(7, "{\"timestamp\": 5000, \"output_length\": 5, \"hash_ids\": []}", "input_length: missing");
    expect_bad(2, "{\"timestamp\": 5000, \"input_length\": 5, \"hash_ids\": []}", "output_length: missing");
    expect_bad(2, "{\"input_length\": 5, \"output_length\": 5, \"hash_ids\": []}", "timestamp: missing");
    expect_bad(4, "{\"timestamp\": 5000, \"input_length\": 5, \"output_length\": 5}", "hash_ids: missing");
}

static void test_bad_negative(void **state)
{
    expect_bad(9, "{\"timestamp\": 5000, \"input_length\": -5, \"output_length\": 5, \"hash_ids\": []}",
               "input_length: -5 is negative");
    expect_bad(2, "{\"timestamp\": 5000, \"input_length\": 5, \"output_length\": -1, \"hash_ids\": []}",
               "output_length: -1 is negative");
    expect_bad(1, "{\"timestamp\": -3, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": []}",
               "timestamp: -3 is negative");
    expect_bad(2, "{\"timestamp\": 5000, \"input_length\": 0, \"output_length\": 1, \"hash_ids\": []}",
               "input_length: 0 tokens (a request needs at least 1)");
    expect_bad(2, "{\"timestamp\": 1e20, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": []}",
               "timestamp: 1e+20 is too large");
    /* SIM_TRACE_MAX_TOKENS: a mistyped length never asks for gigabytes (found by make fuzz) */
    expect_bad(2, "{\"timestamp\": 5, \"input_length\": 16777217, \"output_length\": 1, \"hash_ids\": []}",
               "input_length: 16777217 tokens is too large (max 16777216)");
    expect_bad(
        2, "{\"timestamp\": 5, \"output_length\": 5, \"segments\": [{\"k\":\"prompt\",\"id\":1,\"len\":2147483647}]}",
        "segments[0].len: 2147483647 tokens is too large (max 16777216)");
}

static void test_bad_wrong_types(void **state)
{
    expect_bad(2, "{\"timestamp\": 5000, \"input_length\": \"4000\", \"output_length\": 5, \"hash_ids\": []}",
               "input_length: expected an integer, got a string");
    expect_bad(2, "{\"timestamp\": 5000, \"input_length\": 40.5, \"output_length\": 5, \"hash_ids\": []}",
               "input_length: expected an integer, got a real number");
    expect_bad(2, "{\"timestamp\": \"noon\", \"input_length\": 4, \"output_length\": 5, \"hash_ids\": []}",
               "timestamp: expected a number, got a string");
    expect_bad(2, "{\"timestamp\": 5000, \"input_length\": 4, \"output_length\": 5, \"hash_ids\": {}}",
               "hash_ids: expected an array, got an object");
    expect_bad(2,
               "{\"timestamp\": 5000, \"input_length\": 4, \"output_length\": 5, \"hash_ids\": [], "
               "\"session\": \"a\"}",
               "session: expected an integer, got a string");
}

static void test_bad_hash_ids(void **state)
{
    /* ceil(4000 / 512) = 8 blocks at most */
    expect_bad(4,
               "{\"timestamp\": 5000, \"input_length\": 4000, \"output_length\": 5, "
               "\"hash_ids\": [1,2,3,4,5,6,7,8,9,10,11,12]}",
               "hash_ids: 12 ids but input_length 4000 allows at most 8 blocks of 512 tokens");
    expect_bad(2, "{\"timestamp\": 5000, \"input_length\": 4000, \"output_length\": 5, \"hash_ids\": [1, 2.5]}",
               "hash_ids: element 1 is not an integer (got a real number)");
    expect_bad(2, "{\"timestamp\": 5000, \"input_length\": 4000, \"output_length\": 5, \"hash_ids\": [\"7\"]}",
               "hash_ids: element 0 is not an integer (got a string)");
}

static void test_bad_cache_class(void **state)
{
    expect_bad(2,
               "{\"timestamp\": 5000, \"input_length\": 4, \"output_length\": 5, \"hash_ids\": [], "
               "\"cache\": \"forever\"}",
               "cache: \"forever\" is not one of ephemeral|context");
}

static void test_bad_order(void **state)
{
    const char *text = "{\"timestamp\": 250, \"input_length\": 4, \"output_length\": 5, \"hash_ids\": [1]}\n"
                       "{\"timestamp\": 100, \"input_length\": 4, \"output_length\": 5, \"hash_ids\": [1]}\n";
    char *path = tu_write_temp(text);
    cli_result r = stats_cli(path, "");
    char want[512];
    snprintf(want, sizeof want, "%s:2: timestamp: 100 is before the previous request's 250 (use --sort to reorder)",
             path);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, want));
    tu_free(&r);
    r = stats_cli(path, "--sort --json");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\"requests\": 2"));
    tu_free(&r);
    unlink(path);
    free(path);
}

static void test_blank_lines_are_skipped(void **state)
{
    /* Blank lines count for line numbers but are not requests and not errors. */
    const char *text = "\n{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 5, \"hash_ids\": [1]}\n"
                       "   \n\n{\"timestamp\": 1, \"input_length\": 4, \"output_length\": 5, \"hash_ids\": [1]}\n";
    sim_trace_opts o = sim_trace_default_opts();
    sim_request *reqs[4];
    sim_err err;
    int n = read_all(text, &o, reqs, 4, &err);
    assert_int_equal(n, 2);
    assert_int_equal(reqs[0]->line, 2);
    assert_int_equal(reqs[1]->line, 5);
    free_all(reqs, n);
}

static void test_missing_file(void **state)
{
    tu_expect_exit("trace stats /nonexistent/trace.jsonl", 2, "/nonexistent/trace.jsonl: cannot open");
}

/* ---- reader semantics --------------------------------------------------- */

static void test_skip_bad(void **state)
{
    /* lines 2 and 4 are bad; 3 good requests remain, the first message is line 2's */
    const char *text = "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 5, \"hash_ids\": [1]}\n"
                       "{\"timestamp\": 1, \"input_length\": -4, \"output_length\": 5, \"hash_ids\": [1]}\n"
                       "{\"timestamp\": 2, \"input_length\": 4, \"output_length\": 5, \"hash_ids\": [1]}\n"
                       "not json\n"
                       "{\"timestamp\": 3, \"input_length\": 4, \"output_length\": 5, \"hash_ids\": [1]}\n";
    char *path = tu_write_temp(text);
    sim_trace_opts o = sim_trace_default_opts();
    o.skip_bad = true;
    sim_trace *t;
    sim_err err;
    assert_int_equal(sim_trace_open(&t, path, &o, &err), 0);
    sim_request *r;
    int n = 0;
    while (sim_trace_next(t, &r, &err) == 1) {
        assert_int_equal(r->index, n++);
        sim_request_free(r);
    }
    assert_int_equal(n, 3);
    assert_int_equal(sim_trace_skipped(t), 2);
    char want[512];
    snprintf(want, sizeof want, "%s:2: input_length: -4 is negative", path);
    assert_string_equal(sim_trace_first_skip(t), want);
    sim_trace_close(t);

    cli_result c = stats_cli(path, "--skip-bad --json");
    assert_int_equal(c.status, 0);
    assert_non_null(strstr(c.out, "\"skipped\": 2"));
    assert_non_null(strstr(c.out, "\"requests\": 3"));
    assert_non_null(strstr(c.err, "skipped 2 bad line(s), the first: "));
    assert_non_null(strstr(c.err, want));
    tu_free(&c);
    unlink(path);
    free(path);
}

/* `kvsim run --skip-bad` on a trace where every line is bad says so, with
 * the count and the first bad line's number and reason: "no requests to
 * replay" alone hid the cause. */
static void test_skip_bad_every_line(void **state)
{
    char *path = tu_write_temp("not json\n"
                               "\n"
                               "{\"timestamp\": 1, \"input_length\": 4, \"output_length\": 5}\n"
                               "{\"timestamp\": 2, \"input_length\": -4, \"output_length\": 5, \"hash_ids\": [1]}\n"
                               "[1, 2]\n");
    char args[600], want[1200];
    snprintf(want, sizeof want,
             "kvsim run: %s: all 4 lines were skipped as bad (--skip-bad), leaving no requests; the first, line 1: "
             "json: malformed JSON ('[' or '{' expected near 'not' at column 3) (docs/trace.md has the format)\n",
             path);
    static const char *const how[2] = {"", "--sort "};
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "run --skip-bad %s--trace %s", how[i], path);
        cli_result r = tu_kvsim(args);
        assert_int_equal(r.status, 2);
        assert_string_equal(r.err, want);
        tu_free(&r);
    }
    unlink(path);
    free(path);
    path = tu_write_temp("\n{\"timestamp\": 1, \"input_length\": 0, \"output_length\": 5, \"hash_ids\": []}\n");
    snprintf(want, sizeof want,
             "kvsim run: %s: its only line, line 2, was skipped as bad (--skip-bad), leaving no requests: "
             "input_length: 0 tokens",
             path);
    snprintf(args, sizeof args, "run --skip-bad --trace %s", path);
    tu_expect_exit(args, 2, want);
    unlink(path);
    free(path);
}

static void test_sort_is_stable(void **state)
{
    /* timestamps by line: 1:300 2:100 3:200 4:100 → order 2, 4, 3, 1 (2 before 4: stable) */
    const char *text = "{\"timestamp\": 300, \"input_length\": 4, \"output_length\": 5, \"hash_ids\": [1]}\n"
                       "{\"timestamp\": 100, \"input_length\": 4, \"output_length\": 5, \"hash_ids\": [2]}\n"
                       "{\"timestamp\": 200, \"input_length\": 4, \"output_length\": 5, \"hash_ids\": [3]}\n"
                       "{\"timestamp\": 100, \"input_length\": 4, \"output_length\": 5, \"hash_ids\": [4]}\n";
    sim_trace_opts o = sim_trace_default_opts();
    sim_request *reqs[4];
    sim_err err;
    assert_int_equal(read_all(text, &o, reqs, 4, &err), -1);
    assert_non_null(strstr(err.msg, ":2: timestamp: 100 is before the previous request's 300"));
    o.sort = true;
    assert_int_equal(read_all(text, &o, reqs, 4, &err), 4);
    const int64_t want_lines[4] = {2, 4, 3, 1};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(reqs[i]->line, want_lines[i]);
        assert_int_equal(reqs[i]->index, i);
    }
    free_all(reqs, 4);
}

static void test_speed_halves_arrivals(void **state)
{
    /* 1500 ms at speed 1 = 1.5e9 ns; at speed 2 = 0.75e9 ns; the file's ms stay */
    const char *text = "{\"timestamp\": 1500, \"input_length\": 4, \"output_length\": 5, \"hash_ids\": [1]}\n"
                       "{\"timestamp\": 2001, \"input_length\": 4, \"output_length\": 5, \"hash_ids\": [1]}\n";
    sim_trace_opts o = sim_trace_default_opts();
    sim_request *reqs[2];
    sim_err err;
    assert_int_equal(read_all(text, &o, reqs, 2, &err), 2);
    assert_int_equal(reqs[0]->arrival_ns, 1500000000LL);
    assert_int_equal(reqs[1]->arrival_ns, 2001000000LL);
    free_all(reqs, 2);
    o.speed = 2;
    assert_int_equal(read_all(text, &o, reqs, 2, &err), 2);
    assert_int_equal(reqs[0]->arrival_ns, 750000000LL);
    assert_int_equal(reqs[1]->arrival_ns, 1000500000LL);
    assert_true(reqs[1]->timestamp_ms == 2001.0);
    free_all(reqs, 2);
}

#define NSAMPLE 2000

static char *sample_text(void)
{
    size_t cap = NSAMPLE * 100;
    char *text = malloc(cap), *p = text;
    for (int i = 0; i < NSAMPLE; i++)
        p += snprintf(p, cap - (size_t)(p - text),
                      "{\"timestamp\": %d, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [%d]}\n", i, i);
    return text;
}

/* Lines kept by sampling, as a bitmap over NSAMPLE lines; returns the count. */
static int sampled_lines(const char *text, double p, uint64_t seed, unsigned char *kept)
{
    static sim_request *reqs[NSAMPLE];
    sim_trace_opts o = sim_trace_default_opts();
    o.sample = p;
    o.seed = seed;
    sim_err err;
    int n = read_all(text, &o, reqs, NSAMPLE, &err);
    memset(kept, 0, NSAMPLE);
    for (int i = 0; i < n; i++) {
        assert_int_equal(reqs[i]->index, i);
        kept[reqs[i]->line - 1] = 1;
    }
    free_all(reqs, n);
    return n;
}

static void test_sample_deterministic(void **state)
{
    char *text = sample_text();
    static unsigned char a[NSAMPLE], b[NSAMPLE], c[NSAMPLE];
    int na = sampled_lines(text, 0.25, 7, a);
    int nb = sampled_lines(text, 0.25, 7, b);
    int nc = sampled_lines(text, 0.25, 8, c);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, NSAMPLE);
    assert_memory_not_equal(a, c, NSAMPLE);
    /* Binomial(2000, 0.25): mean 500, sd sqrt(2000·0.25·0.75) ≈ 19.4; allow ±5 sd */
    assert_in_range(na, 403, 597);
    assert_in_range(nc, 403, 597);
    free(text);
}

static void test_limit(void **state)
{
    char *text = sample_text();
    static sim_request *reqs[NSAMPLE];
    sim_trace_opts o = sim_trace_default_opts();
    o.limit = 3;
    sim_err err;
    assert_int_equal(read_all(text, &o, reqs, NSAMPLE, &err), 3);
    assert_int_equal(reqs[2]->line, 3);
    free_all(reqs, 3);
    free(text);
}

static void test_key_chaining(void **state)
{
    /* The definition: XXH3-64 of the id's 8 little-endian bytes, seeded with the previous key. */
    const unsigned char le42[8] = {42, 0, 0, 0, 0, 0, 0, 0};
    assert_true(sim_block_key(7, 42) == XXH3_64bits_withSeed(le42, 8, 7));
    const char *text = "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [5, 6]}\n"
                       "{\"timestamp\": 1, \"input_length\": 1536, \"output_length\": 1, \"hash_ids\": [9, 5, 6]}\n"
                       "{\"timestamp\": 2, \"input_length\": 1536, \"output_length\": 1, \"hash_ids\": [5, 6, 7]}\n";
    sim_trace_opts o = sim_trace_default_opts();
    sim_request *r[3];
    sim_err err;
    assert_int_equal(read_all(text, &o, r, 3, &err), 3);
    assert_true(r[0]->keys[0] == sim_block_key(0, 5));
    assert_true(r[0]->keys[1] == sim_block_key(sim_block_key(0, 5), 6));
    /* same ids 5, 6 after a different prefix: different keys */
    assert_true(r[1]->keys[1] != r[0]->keys[0]);
    assert_true(r[1]->keys[2] != r[0]->keys[1]);
    /* same prefix: same keys */
    assert_true(r[2]->keys[0] == r[0]->keys[0]);
    assert_true(r[2]->keys[1] == r[0]->keys[1]);
    assert_int_equal(r[1]->hash_ids[0], 9);
    assert_int_equal(r[1]->nblocks, 3);
    free_all(r, 3);
}

static void test_extension_fields(void **state)
{
    const char *text =
        "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [], \"session\": 12, "
        "\"cache\": \"context\", \"slo_ttft_ms\": 500, \"slo_tbt_ms\": 50.5}\n"
        "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [1], "
        "\"cache\": \"ephemeral\"}\n";
    sim_trace_opts o = sim_trace_default_opts();
    sim_request *r[2];
    sim_err err;
    assert_int_equal(read_all(text, &o, r, 2, &err), 2);
    assert_int_equal(r[0]->session, 12);
    assert_int_equal(r[0]->cache, SIM_CACHE_CONTEXT);
    assert_true(r[0]->slo_ttft_ms == 500 && r[0]->slo_tbt_ms == 50.5);
    assert_int_equal(r[0]->nblocks, 0);
    assert_int_equal(r[1]->session, -1);
    assert_int_equal(r[1]->cache, SIM_CACHE_EPHEMERAL);
    assert_true(r[1]->slo_ttft_ms == 0);
    free_all(r, 2);
}

/* ---- statistics ----------------------------------------------------------- */

static void test_stats_hand_computed(void **state)
{
    /* block_tokens 512. Infinite-cache replay, keys chained (k(a,b) = key of b after a):
     *   r0 t=0    in 1024 out 10 ids [1,2]    cache {}            hit 0  insert k1 k12
     *   r1 t=1000 in 1500 out 20 ids [1,2,3]  k1 k12 seen, k123 no hit 2  insert k123
     *   r2 t=2000 in  600 out 30 ids [2,1]    k2 not seen          hit 0  insert k2 k21
     *   r3 t=4000 in  700 out 40 ids [1,9]    k1 seen, k19 no      hit 1  insert k19
     *   r4 t=5000 in  300 out 50 ids [1]      k1 seen              hit 1
     * blocks 2+3+2+2+1 = 10, hit blocks 0+2+0+1+1 = 4 → 0.4
     * distinct keys k1 k12 k123 k2 k21 k19 = 6 (only 4 distinct raw ids)
     * tokens 1024+1500+600+700+300 = 4124; hit tokens min(n·512, in):
     *   0 + 1024 + 0 + 512 + min(512,300)=300 = 1836 → 1836/4124 = 0.44519883...
     * duration 5 s, rate 5/5 = 1 req/s
     * input sorted 300 600 700 1024 1500: mean 824.8, p50 = element 2 = 700,
     *   p99 at (5−1)·0.99 = 3.96 → 1024 + 0.96·(1500−1024) = 1480.96
     * output 10..50: mean 30, p50 30, p99 = 40 + 0.96·10 = 49.6 */
    const char *text = "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 10, \"hash_ids\": [1, 2]}\n"
                       "{\"timestamp\": 1000, \"input_length\": 1500, \"output_length\": 20, \"hash_ids\": [1, 2, 3]}\n"
                       "{\"timestamp\": 2000, \"input_length\": 600, \"output_length\": 30, \"hash_ids\": [2, 1]}\n"
                       "{\"timestamp\": 4000, \"input_length\": 700, \"output_length\": 40, \"hash_ids\": [1, 9]}\n"
                       "{\"timestamp\": 5000, \"input_length\": 300, \"output_length\": 50, \"hash_ids\": [1]}\n";
    char *path = tu_write_temp(text);
    sim_trace_opts o = sim_trace_default_opts();
    sim_trace_stats s;
    sim_err err;
    assert_int_equal(sim_trace_compute_stats(path, &o, &s, &err), 0);
    assert_int_equal(s.requests, 5);
    assert_int_equal(s.blocks, 10);
    assert_int_equal(s.distinct_blocks, 6);
    assert_float_equal(s.max_hit_rate_blocks, 0.4, 1e-12);
    assert_float_equal(s.max_hit_rate_tokens, 1836.0 / 4124.0, 1e-12);
    assert_float_equal(s.duration_s, 5.0, 1e-12);
    assert_float_equal(s.arrival_rate, 1.0, 1e-12);
    assert_float_equal(s.input_mean, 824.8, 1e-9);
    assert_float_equal(s.input_p50, 700, 1e-9);
    assert_float_equal(s.input_p99, 1480.96, 1e-9);
    assert_float_equal(s.output_mean, 30, 1e-9);
    assert_float_equal(s.output_p50, 30, 1e-9);
    assert_float_equal(s.output_p99, 49.6, 1e-9);
    assert_int_equal(s.skipped, 0);

    cli_result r = stats_cli(path, "--json");
    assert_int_equal(r.status, 0);
    const char *keys[] = {"\"trace\"",
                          "\"fingerprint\"",
                          "\"requests\": 5",
                          "\"duration_s\": 5.0",
                          "\"arrival_rate\"",
                          "\"input\": {",
                          "\"output\": {",
                          "\"p99\"",
                          "\"blocks\": 10",
                          "\"distinct_blocks\": 6",
                          "\"max_hit_rate_blocks\": 0.4",
                          "\"max_hit_rate_tokens\"",
                          "\"skipped\": 0"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strstr(r.out, keys[i])) fail_msg("%s missing from %s", keys[i], r.out);
    tu_free(&r);
    unlink(path);
    free(path);
}

static void test_fingerprint(void **state)
{
    /* XXH64 (seed 0) of the bytes, computed here in one call */
    const char *text = "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [1]}\n";
    char *path = tu_write_temp(text);
    uint64_t fp;
    sim_err err;
    assert_int_equal(sim_trace_fingerprint(path, &fp, &err), 0);
    assert_true(fp == XXH64(text, strlen(text), 0));
    char want[32];
    snprintf(want, sizeof want, "\"%016llx\"", (unsigned long long)fp);
    cli_result r = stats_cli(path, "--json");
    assert_non_null(strstr(r.out, want));
    tu_free(&r);
    unlink(path);
    free(path);
}

static void test_mooncake_trace_facts(void **state)
{
    const char *path = MOONCAKE_TRACE;
    sim_trace_opts o = sim_trace_default_opts();
    sim_trace_stats s;
    sim_err err;
    assert_int_equal(sim_trace_compute_stats(path, &o, &s, &err), 0);
    assert_int_equal(s.requests, 3993);
    assert_int_equal(s.blocks, 121877);
    assert_int_equal(s.distinct_blocks, 43924);
    assert_float_equal(s.max_hit_rate_blocks, 0.6396, 0.0005);
    assert_float_equal(s.max_hit_rate_tokens, 0.651, 0.0005);
}

/* The length statistics are GSL's on the sorted lengths, bit for bit,
 * though `trace stats` keeps counts by length (and lengths of 2^20 tokens
 * and more one by one): 3,000 requests of pseudo-random lengths, a few
 * of them long, against gsl_sort, gsl_stats_mean and
 * gsl_stats_quantile_from_sorted_data on an array of every length. */
static void test_stats_lengths_like_gsl(void **state)
{
    enum { N = 3000 };
    static double in[N], out[N];
    char *text = malloc((size_t)N * 96), *p = text;
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int32_t a = 1 + (int32_t)(x % 5000), b = 1 + (int32_t)((x >> 20) % 700);
        if (i % 997 == 5) a = (1 << 20) + (int32_t)(x % 3000000); /* past the counted lengths */
        in[i] = a, out[i] = b;
        p += sprintf(p, "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": %d, \"hash_ids\": [%d]}\n", i, a,
                     b, i);
    }
    char *path = tu_write_temp(text);
    sim_trace_opts o = sim_trace_default_opts();
    sim_trace_stats s;
    sim_err err;
    if (sim_trace_compute_stats(path, &o, &s, &err)) fail_msg("%s", err.msg);
    gsl_sort(in, 1, N), gsl_sort(out, 1, N);
    assert_true(in[N - 1] >= (1 << 20));
    assert_true(s.input_mean == gsl_stats_mean(in, 1, N));
    assert_true(s.input_p50 == gsl_stats_quantile_from_sorted_data(in, 1, N, 0.5));
    assert_true(s.input_p99 == gsl_stats_quantile_from_sorted_data(in, 1, N, 0.99));
    assert_true(s.output_mean == gsl_stats_mean(out, 1, N));
    assert_true(s.output_p50 == gsl_stats_quantile_from_sorted_data(out, 1, N, 0.5));
    assert_true(s.output_p99 == gsl_stats_quantile_from_sorted_data(out, 1, N, 0.99));
    unlink(path);
    free(path);
    free(text);
}

/* ---- the fast recognizer agrees with jansson ------------------------------ */

/* Read one line; returns 1 with *out, or -1 with err. */
static int read_one(const char *line, sim_request **out, sim_err *err)
{
    char text[1200];
    snprintf(text, sizeof text, "%s\n", line);
    int n = read_all(text, &(sim_trace_opts){.block_tokens = 512, .speed = 1, .sample = 1, .seed = 1}, out, 1, err);
    return n == 1 ? 1 : -1;
}

/* The part of a message after "FILE:LINE: " (temp file names differ). */
static const char *after_location(const char *msg)
{
    const char *p = strstr(msg, ": ");
    return p ? p + 2 : msg;
}

static void expect_same_as_jansson(const char *line)
{
    char variant[1200];
    with_unknown_field(line, variant, sizeof variant);
    sim_request *a = NULL, *b = NULL;
    sim_err ea = {""}, eb = {""};
    int ra = read_one(line, &a, &ea), rb = read_one(variant, &b, &eb);
    if (ra != rb) fail_msg("'%s': %d (%s) but with jansson %d (%s)", line, ra, ea.msg, rb, eb.msg);
    if (ra < 0) {
        /* jansson's column moves with the added field; compare up to it */
        size_t n = strcspn(after_location(ea.msg), "(");
        assert_memory_equal(after_location(ea.msg), after_location(eb.msg), n);
        return;
    }
    assert_true(a->timestamp_ms == b->timestamp_ms);
    assert_int_equal(a->input_len, b->input_len);
    assert_int_equal(a->output_len, b->output_len);
    assert_int_equal(a->session, b->session);
    assert_int_equal(a->cache, b->cache);
    assert_int_equal(a->nblocks, b->nblocks);
    assert_memory_equal(a->hash_ids, b->hash_ids, (size_t)a->nblocks * sizeof *a->hash_ids);
    assert_memory_equal(a->keys, b->keys, (size_t)a->nblocks * sizeof *a->keys);
    sim_request_free(a);
    sim_request_free(b);
}

static void test_recognizer_matches_jansson(void **state)
{
    static const char *const lines[] = {
        "{\"timestamp\":0,\"input_length\":1024,\"output_length\":1,\"hash_ids\":[1,-2]}",
        "{ \"timestamp\" : 1.5e3 ,\t\"input_length\":1024,\"output_length\":1,\"hash_ids\":[ 7 , 8 ] }",
        "{\"hash_ids\": [3], \"output_length\": 2, \"input_length\": 9, \"timestamp\": 4, \"session\": 7}",
        "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [1234567890123456789]}",
        "{\"timestamp\": -0, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [0]}",
        "{\"timestamp\": 2.5, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [], \"cache\": \"context\"}",
        "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 1, \"hash\\u005fids\": [3]}",
        "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [3], \"cache\": "
        "\"cont\\u0065xt\"}",
        "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [3], \"cache\": "
        "\"\xc3\xa9t\xc3\xa9\"}",
        "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [01]}",
        "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [1,]}",
        "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [1 2]}",
        "{\"timestamp\": 0, \"input_length\": 4, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [1]}",
        "{\"timestamp\": 1., \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [1]}",
        "{\"timestamp\": 1e999, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [1]}",
        "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [1]} x}",
        "{\"timestamp\": 0, \"input_length\": 99999999999, \"output_length\": 1, \"hash_ids\": [1]}",
        "{\"timestamp\": 0, \"input_length\": 4e2, \"output_length\": 1, \"hash_ids\": [1]}",
        "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": [1], \"hash_ids\": [1]}",
        "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [1], \"session\": -2}",
        "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [1, 2]}",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) expect_same_as_jansson(lines[i]);
}

/* Every line of the bundled Mooncake trace read through jansson instead gives the same statistics. */
static void test_mooncake_trace_through_jansson(void **state)
{
    const char *path = MOONCAKE_TRACE;
    gzFile in = gzopen(path, "rb");
    char *variant_path = tu_write_temp("");
    FILE *out = fopen(variant_path, "w");
    static char line[1 << 16];
    while (gzgets(in, line, sizeof line)) {
        char *close = strrchr(line, '}');
        fprintf(out, "%.*s, \"zz\": null%s", (int)(close - line), line, close);
    }
    gzclose(in);
    fclose(out);
    sim_trace_opts o = sim_trace_default_opts();
    sim_trace_stats a, b;
    sim_err err;
    assert_int_equal(sim_trace_compute_stats(path, &o, &a, &err), 0);
    assert_int_equal(sim_trace_compute_stats(variant_path, &o, &b, &err), 0);
    assert_int_equal(a.requests, b.requests);
    assert_int_equal(a.blocks, b.blocks);
    assert_int_equal(a.distinct_blocks, b.distinct_blocks);
    assert_true(a.max_hit_rate_blocks == b.max_hit_rate_blocks);
    assert_true(a.max_hit_rate_tokens == b.max_hit_rate_tokens);
    assert_true(a.input_mean == b.input_mean && a.output_p99 == b.output_p99 && a.duration_s == b.duration_s);
    unlink(variant_path);
    free(variant_path);
}

/* ---- the generator -------------------------------------------------------- */

/* `kvsim trace gen ARGS -o TEMP`; returns the temp path (caller frees). */
static char *gen_trace(const char *args)
{
    char *path = tu_write_temp("");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "trace gen %s -o %s", args, path);
    tu_expect_exit(cmd, 0, NULL);
    return path;
}

static char *slurp_path(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *text = tu_slurp(f);
    fclose(f);
    return text;
}

static void test_gen_deterministic(void **state)
{
    char *a = gen_trace("--requests 400 --seed 5");
    char *b = gen_trace("--requests 400 --seed 5");
    char *c = gen_trace("--requests 400 --seed 6");
    char *ta = slurp_path(a), *tb = slurp_path(b), *tc = slurp_path(c);
    assert_true(strlen(ta) > 1000);
    assert_string_equal(ta, tb);
    assert_true(strcmp(ta, tc) != 0);
    free(ta), free(tb), free(tc);
    unlink(a), unlink(b), unlink(c);
    free(a), free(b), free(c);
}

static void test_gen_passes_reader(void **state)
{
    /* cache tags: Binomial(2000, 0.2) ≈ 400 ± 18 each; allow ±5 sd */
    char *path = gen_trace("--requests 2000 --ephemeral-frac 0.2 --context-frac 0.2 --seed 3");
    sim_trace_opts o = sim_trace_default_opts();
    sim_trace *t;
    sim_err err;
    assert_int_equal(sim_trace_open(&t, path, &o, &err), 0);
    sim_request *r;
    int n = 0, rc, eph = 0, ctx = 0;
    while ((rc = sim_trace_next(t, &r, &err)) == 1) {
        n++;
        eph += r->cache == SIM_CACHE_EPHEMERAL;
        ctx += r->cache == SIM_CACHE_CONTEXT;
        assert_true(r->session >= 0);
        sim_request_free(r);
    }
    if (rc < 0) fail_msg("%s", err.msg);
    assert_int_equal(n, 2000);
    assert_int_equal(sim_trace_skipped(t), 0);
    assert_in_range(eph, 310, 490);
    assert_in_range(ctx, 310, 490);
    sim_trace_close(t);
    unlink(path);
    free(path);
}

#define GEN_N 1000

/* What the checker remembers of a session's latest request. */
typedef struct seen_session {
    int turns;
    double timestamp_ms;
    int32_t input_len, output_len;
    int32_t nblocks;
    int64_t ids[64];
} seen_session;

/* A continuation arrives at least the think time (5 s) after its
 * predecessor; its input is previous input + previous output + a new turn
 * (≥ 1 token); it reuses the previous request's floor(input/512) full
 * blocks' ids; its other ids are fresh (above every id seen so far). */
static void check_continuation(const seen_session *prev, const sim_request *r, int64_t max_seen)
{
    assert_true(r->timestamp_ms >= prev->timestamp_ms + 5000);
    assert_true(r->input_len > prev->input_len + prev->output_len);
    int32_t full = prev->input_len / 512;
    assert_memory_equal(r->hash_ids, prev->ids, (size_t)full * sizeof *r->hash_ids);
    for (int32_t i = full; i < r->nblocks; i++) assert_true(r->hash_ids[i] > max_seen);
}

static void test_gen_sessions_share_prefix(void **state)
{
    char *path =
        gen_trace("--requests 1000 --session-prob 0.7 --max-turns 6 --think-time 5 --max-input 30000 --seed 11");
    static seen_session sessions[GEN_N];
    memset(sessions, 0, sizeof sessions);
    sim_trace_opts o = sim_trace_default_opts();
    sim_trace *t;
    sim_err err;
    assert_int_equal(sim_trace_open(&t, path, &o, &err), 0);
    sim_request *r;
    int64_t max_seen = -1;
    int continuations = 0;
    while (sim_trace_next(t, &r, &err) == 1) {
        assert_in_range(r->session, 0, GEN_N - 1);
        assert_int_equal(r->nblocks, (r->input_len + 511) / 512);
        assert_true(r->nblocks <= 64);
        seen_session *s = &sessions[r->session];
        if (s->turns > 0) {
            check_continuation(s, r, max_seen);
            continuations++;
        }
        assert_true(++s->turns <= 6);
        s->timestamp_ms = r->timestamp_ms;
        s->input_len = r->input_len;
        s->output_len = r->output_len;
        s->nblocks = r->nblocks;
        memcpy(s->ids, r->hash_ids, (size_t)r->nblocks * sizeof *r->hash_ids);
        for (int32_t i = 0; i < r->nblocks; i++)
            if (r->hash_ids[i] > max_seen) max_seen = r->hash_ids[i];
        sim_request_free(r);
    }
    /* session-prob 0.7: most requests continue a session (some turns overflow and restart) */
    assert_true(continuations > 400);
    sim_trace_close(t);
    unlink(path);
    free(path);
}

static void test_gen_arrivals_from(void **state)
{
    const char *text = "{\"timestamp\": 10, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [1]}\n"
                       "{\"timestamp\": 25.5, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [1]}\n"
                       "{\"timestamp\": 40, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [1]}\n";
    char *src = tu_write_temp(text);
    char args[256];
    snprintf(args, sizeof args, "--arrivals-from %s --requests 10", src);
    char *path = gen_trace(args);
    sim_request *reqs[3];
    sim_err err;
    char *gen = slurp_path(path);
    sim_trace_opts o = sim_trace_default_opts();
    assert_int_equal(read_all(gen, &o, reqs, 3, &err), 3);
    assert_true(reqs[0]->timestamp_ms == 10 && reqs[1]->timestamp_ms == 25.5 && reqs[2]->timestamp_ms == 40);
    free_all(reqs, 3);
    free(gen);
    unlink(path), unlink(src);
    free(path), free(src);
}

static void test_gen_bad_options(void **state)
{
    static const struct {
        const char *args, *expect;
    } cases[] = {
        {"--rate -1 -o /dev/null", "kvsim trace gen: --rate must be positive"},
        {"--zipf abc -o /dev/null", "kvsim trace gen: --zipf: 'abc' is not a number"},
        {"--requests 10", "kvsim trace gen: -o FILE is required"},
        {"--ephemeral-frac 0.7 --context-frac 0.5 -o /dev/null", "--ephemeral-frac and --context-frac"},
        {"--arrivals-from /nonexistent.jsonl -o /dev/null", "/nonexistent.jsonl: cannot open"},
        {"--max-turns 0 -o /dev/null", "--max-turns must be at least 1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "trace gen %s", cases[i].args);
        cli_result r = tu_kvsim(cmd);
        if (r.status != 2 || !strstr(r.err, cases[i].expect))
            fail_msg("kvsim %s: exit %d, stderr '%s'; wanted 2 and '%s'", cmd, r.status, r.err, cases[i].expect);
        tu_free(&r);
    }
}

static void test_help(void **state)
{
    static const char *const cmds[] = {"trace --help", "trace stats --help", "trace gen --help"};
    for (size_t i = 0; i < 3; i++) tu_expect_stdout(cmds[i], "usage: kvsim trace");
    tu_expect_exit("trace frobnicate", 2, "unknown subcommand 'frobnicate'");
}

/* The bundled trace is exactly what the documented command (the defaults) writes. */
static void test_bundled_trace_reproducible(void **state)
{
    char *path = gen_trace("");
    char *fresh = slurp_path(path), *bundled = slurp_path("traces/default.jsonl");
    assert_string_equal(fresh, bundled);
    free(fresh), free(bundled);
    unlink(path);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_malformed_json),
        cmocka_unit_test(test_bad_not_an_object),
        cmocka_unit_test(test_bad_missing_fields),
        cmocka_unit_test(test_bad_negative),
        cmocka_unit_test(test_bad_wrong_types),
        cmocka_unit_test(test_bad_hash_ids),
        cmocka_unit_test(test_bad_cache_class),
        cmocka_unit_test(test_bad_order),
        cmocka_unit_test(test_blank_lines_are_skipped),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_skip_bad),
        cmocka_unit_test(test_skip_bad_every_line),
        cmocka_unit_test(test_sort_is_stable),
        cmocka_unit_test(test_speed_halves_arrivals),
        cmocka_unit_test(test_sample_deterministic),
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_key_chaining),
        cmocka_unit_test(test_extension_fields),
        cmocka_unit_test(test_stats_hand_computed),
        cmocka_unit_test(test_stats_lengths_like_gsl),
        cmocka_unit_test(test_fingerprint),
        cmocka_unit_test(test_mooncake_trace_facts),
        cmocka_unit_test(test_recognizer_matches_jansson),
        cmocka_unit_test(test_mooncake_trace_through_jansson),
        cmocka_unit_test(test_gen_deterministic),
        cmocka_unit_test(test_gen_passes_reader),
        cmocka_unit_test(test_gen_sessions_share_prefix),
        cmocka_unit_test(test_gen_arrivals_from),
        cmocka_unit_test(test_gen_bad_options),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_bundled_trace_reproducible),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
