/* tests/test_trace.c — the Mooncake trace reader (sim/trace.c), `kvsim trace
 * stats` and `kvsim trace gen` (sim/cmd_trace.c, sim/tracegen.c).
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
#include <xxhash.h>

#include "sim/trace.h"

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
        if (i == bad_line)
            snprintf(line, sizeof line, "%s\n", bad);
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
    expect_bad_line(3, "{\"timestamp\": 1, \"input_length\":", "json: malformed JSON (");
}

static void test_bad_not_an_object(void **state)
{
    expect_bad_line(2, "[1, 2, 3]", "json: expected an object, got an array");
}

static void test_bad_missing_fields(void **state)
{
    expect_bad_line(7, "{\"timestamp\": 5000, \"output_length\": 5, \"hash_ids\": []}", "input_length: missing");
    expect_bad_line(2, "{\"timestamp\": 5000, \"input_length\": 5, \"hash_ids\": []}", "output_length: missing");
    expect_bad_line(2, "{\"input_length\": 5, \"output_length\": 5, \"hash_ids\": []}", "timestamp: missing");
    expect_bad_line(4, "{\"timestamp\": 5000, \"input_length\": 5, \"output_length\": 5}", "hash_ids: missing");
}

static void test_bad_negative(void **state)
{
    expect_bad_line(9, "{\"timestamp\": 5000, \"input_length\": -5, \"output_length\": 5, \"hash_ids\": []}",
                    "input_length: -5 is negative");
    expect_bad_line(2, "{\"timestamp\": 5000, \"input_length\": 5, \"output_length\": -1, \"hash_ids\": []}",
                    "output_length: -1 is negative");
    expect_bad_line(1, "{\"timestamp\": -3, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": []}",
                    "timestamp: -3 is negative");
    expect_bad_line(2, "{\"timestamp\": 5000, \"input_length\": 0, \"output_length\": 1, \"hash_ids\": []}",
                    "input_length: 0 tokens (a request needs at least 1)");
}

static void test_bad_wrong_types(void **state)
{
    expect_bad_line(2, "{\"timestamp\": 5000, \"input_length\": \"4000\", \"output_length\": 5, \"hash_ids\": []}",
                    "input_length: expected an integer, got a string");
    expect_bad_line(2, "{\"timestamp\": 5000, \"input_length\": 40.5, \"output_length\": 5, \"hash_ids\": []}",
                    "input_length: expected an integer, got a real number");
    expect_bad_line(2, "{\"timestamp\": \"noon\", \"input_length\": 4, \"output_length\": 5, \"hash_ids\": []}",
                    "timestamp: expected a number, got a string");
    expect_bad_line(2, "{\"timestamp\": 5000, \"input_length\": 4, \"output_length\": 5, \"hash_ids\": {}}",
                    "hash_ids: expected an array, got an object");
    expect_bad_line(2, "{\"timestamp\": 5000, \"input_length\": 4, \"output_length\": 5, \"hash_ids\": [], "
                       "\"session\": \"a\"}",
                    "session: expected an integer, got a string");
}

static void test_bad_hash_ids(void **state)
{
    /* ceil(4000 / 512) = 8 blocks at most */
    expect_bad_line(4, "{\"timestamp\": 5000, \"input_length\": 4000, \"output_length\": 5, "
                       "\"hash_ids\": [1,2,3,4,5,6,7,8,9,10,11,12]}",
                    "hash_ids: 12 ids but input_length 4000 allows at most 8 blocks of 512 tokens");
    expect_bad_line(2, "{\"timestamp\": 5000, \"input_length\": 4000, \"output_length\": 5, \"hash_ids\": [1, 2.5]}",
                    "hash_ids: element 1 is not an integer (got a real number)");
    expect_bad_line(2, "{\"timestamp\": 5000, \"input_length\": 4000, \"output_length\": 5, \"hash_ids\": [\"7\"]}",
                    "hash_ids: element 0 is not an integer (got a string)");
}

static void test_bad_cache_class(void **state)
{
    expect_bad_line(2, "{\"timestamp\": 5000, \"input_length\": 4, \"output_length\": 5, \"hash_ids\": [], "
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
    cli_result r = tu_kvsim("trace stats /nonexistent/trace.jsonl");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "/nonexistent/trace.jsonl: cannot open"));
    tu_free(&r);
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
    tu_free(&c);
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
    const char *text = "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [], \"session\": 12, "
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
    const char *keys[] = {"\"trace\"", "\"fingerprint\"", "\"requests\": 5", "\"duration_s\": 5.0",
                          "\"arrival_rate\"", "\"input\": {", "\"output\": {", "\"p99\"", "\"blocks\": 10",
                          "\"distinct_blocks\": 6", "\"max_hit_rate_blocks\": 0.4", "\"max_hit_rate_tokens\"",
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

static void test_shared_trace_facts(void **state)
{
    const char *path = tu_shared_trace();
    if (!path) skip();
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
        cmocka_unit_test(test_sort_is_stable),
        cmocka_unit_test(test_speed_halves_arrivals),
        cmocka_unit_test(test_sample_deterministic),
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_key_chaining),
        cmocka_unit_test(test_extension_fields),
        cmocka_unit_test(test_stats_hand_computed),
        cmocka_unit_test(test_fingerprint),
        cmocka_unit_test(test_shared_trace_facts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
