/* tests/test_pic.c — position-independent caching (docs/pic.md): the
 * segment reader, the PIC store under each policy on hand-worked traces,
 * window and capacity, eviction order, the timed run's HBM admission, and
 * bad segment input.
 *
 * The hand-worked trace (B = 16, prefix blocks of 512):
 *   r1: prefix [1] 40, chunk 7 (50), prompt null 10          N = 100
 *   r2: prefix [1] 40, chunk 8 (20), chunk 7 (50), prompt null 5   N = 115
 *   r3: chunk 7 (50), chunk 7 (50) again, prompt id 3 (16)    N = 116
 * Σ input = 331 tokens, 5 chunk occurrences. Expected values, by hand:
 * mepic, W = 1, unlimited: r1 computes all 100 (prefix 3 blocks, chunk 7's
 *   object 3 blocks + 1 private, prompt 1 block: footprint 8); r2 hits the
 *   prefix, misses chunk 8 (20), reuses chunk 7 (recomputes 50 − 3·16 = 2),
 *   prompt 5: 27 tokens, footprint 3 + 1 + 3 + 3 private = 10; r3 reuses
 *   chunk 7 twice (2 + 2) and computes the prompt (16): 20. Σ 147, 3 hits.
 * prefix: r1 100; r2 shares blocks 0–1 only (block 2 mixes the prefix with
 *   a different chunk): 115 − 32 = 83; r3 starts with a chunk, not the
 *   prefix: 116. Σ 299, no chunk inside a hit; peak 8 (7 full + 1 tail).
 * cacheblend: r1 100; r2 = 115 − 32 (prefix blocks 0–1) − (50 − ⌈7.5⌉) = 41;
 *   r3 = 116 − 2·42 = 32. Σ 173; footprint r2: 2 shared + 8 − 2 private.
 * epic: r2 = 115 − 32 − (50 − 16) = 49; r3 = 116 − 2·34 = 48. Σ 197. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <sqlite3.h>
#include <zlib.h>

#include "sim/replay/pic_replay.h"
#include "tests/testutil.h"
#include "tests/sweep_testutil.h"

static const char *const hand_trace =
    "{\"timestamp\": 0, \"output_length\": 5, \"segments\": [{\"k\":\"prefix\",\"hash_ids\":[1],\"len\":40},"
    "{\"k\":\"chunk\",\"id\":7,\"len\":50},{\"k\":\"prompt\",\"id\":null,\"len\":10}]}\n"
    "{\"timestamp\": 1, \"output_length\": 5, \"segments\": [{\"k\":\"prefix\",\"hash_ids\":[1],\"len\":40},"
    "{\"k\":\"chunk\",\"id\":8,\"len\":20},{\"k\":\"chunk\",\"id\":7,\"len\":50},{\"k\":\"prompt\",\"id\":null,"
    "\"len\":5}]}\n"
    "{\"timestamp\": 2, \"output_length\": 5, \"segments\": [{\"k\":\"chunk\",\"id\":7,\"len\":50},"
    "{\"k\":\"chunk\",\"id\":7,\"len\":50},{\"k\":\"prompt\",\"id\":3,\"len\":16}]}\n";

static kv_pic_params params(int64_t capacity)
{
    return (kv_pic_params){.block_tokens = 16,
                           .prefix_tokens = 512,
                           .cacheblend_ratio = 0.15,
                           .epic_tokens = 16,
                           .capacity_blocks = capacity};
}

static void replay_text(const char *text, const char *policy, int64_t capacity, int64_t window, kv_pic_result *r)
{
    char *path = tu_write_temp(text);
    kv_pic_trace t;
    sim_err err;
    sim_trace_opts topts = sim_trace_default_opts();
    if (kv_pic_trace_load(&t, path, &topts, &err)) fail_msg("%s", err.msg);
    kv_pic_params p = params(capacity);
    kv_pic_replay(&t, kv_pic_policy_lookup(policy), &p, window, r);
    kv_pic_trace_free(&t);
    tu_remove_temp(path);
}

typedef struct hand_case {
    const char *policy;
    int64_t computed, chunk_hits, peak;
} hand_case;

static void test_hand_worked_policies(void **state)
{
    static const hand_case cases[] = {
        {"mepic", 147, 3, 10},
        {"prefix", 299, 0, 8},
        {"cacheblend", 173, 3, 8},
        {"epic", 197, 3, 8},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kv_pic_result r;
        replay_text(hand_trace, cases[i].policy, INT64_MAX, 1, &r);
        if (r.input_tokens != 331 || r.computed_tokens != cases[i].computed || r.chunks != 5 ||
            r.chunk_hits != cases[i].chunk_hits || r.peak_footprint_blocks != cases[i].peak)
            fail_msg("%s: input %ld computed %ld hits %ld/%ld peak %ld", cases[i].policy, (long)r.input_tokens,
                     (long)r.computed_tokens, (long)r.chunk_hits, (long)r.chunks, (long)r.peak_footprint_blocks);
        assert_double_equal(r.recompute_fraction, cases[i].computed / 331.0, 1e-12);
        assert_double_equal(r.chunk_hit_rate, cases[i].chunk_hits / 5.0, 1e-12);
    }
}

/* MEPIC with nothing storable (C = 0), two in flight: every block private.
 * r1: prefix 3 + chunk 7 (1 + 3) + prompt 1 = 8; r2: 3 + chunk 8 (1 + 1) +
 * chunk 7 (1 + 3) + 1 = 10; both in flight: 18. Computed: 100 + 115 + (50
 * + 2 for the in-request repeat + 16) = 283; the repeat is the only hit. */
static void test_mepic_zero_capacity_window(void **state)
{
    kv_pic_result r;
    replay_text(hand_trace, "mepic", 0, 2, &r);
    assert_int_equal(r.computed_tokens, 283);
    assert_int_equal(r.chunk_hits, 1);
    assert_int_equal(r.peak_footprint_blocks, 18);
    /* padding: r1 48 + 64 + 16, r2 48 + 32 + 64 + 16, r3 64 + 16 + 16 */
    assert_double_equal(r.position_fraction, (128 + 160 + 96) / 331.0, 1e-12);
}

/* What the peak is made of, MEPIC with two requests in flight (W = 2,
 * unlimited), by hand from the objects above: r1 holds prefix 3 + chunk 7
 * 3 blocks, private 2 (chunk 7's first block, the prompt); r2 holds prefix
 * 3 + chunk 8 1 + chunk 7 3, private 3. Both in flight: held 6 + 7 = 13
 * block references in 7 shared blocks, private 5, footprint 12. r3 is
 * admitted after r1's release: r2's 7 held (chunk 7 now shared with r3)
 * plus r3's chunk 7 (its repeat held once) = 10 references in the same 7
 * blocks, private 3 + 3 (two first blocks, the prompt): footprint 13, the
 * peak. EPIC at W = 2 holds only prefix blocks; its chunks are private. */
static void test_mepic_peak_overlapping(void **state)
{
    kv_pic_result r;
    replay_text(hand_trace, "mepic", INT64_MAX, 2, &r);
    assert_int_equal(r.peak_footprint_blocks, 13);
    assert_int_equal(r.at_peak.footprint, 13);
    assert_int_equal(r.at_peak.inflight, 2);
    assert_int_equal(r.at_peak.shared_blocks, 7);
    assert_int_equal(r.at_peak.held_blocks, 10);
    assert_int_equal(r.at_peak.private_blocks, 6);
    /* W = 1: r2 alone (3 + 1 + 3 held, 3 private), one request in flight */
    replay_text(hand_trace, "mepic", INT64_MAX, 1, &r);
    assert_int_equal(r.at_peak.inflight, 1);
    assert_int_equal(r.at_peak.shared_blocks, 7);
    assert_int_equal(r.at_peak.held_blocks, 7);
    assert_int_equal(r.at_peak.private_blocks, 3);
}

/* The timed run's peak fields: r1 and r2 of the hand trace arrive together
 * on one prefill instance with long outputs, so r2 is admitted while r1
 * still holds its blocks (decode KV is counted on the decode instance): at
 * the peak 2 in flight, 13 references in 7 shared blocks, 5 private,
 * footprint 12 = shared + private (as the hand count above). The text
 * summary says the same. */
static void test_run_peak_fields(void **state)
{
    const char *text =
        "{\"timestamp\": 0, \"output_length\": 200, \"segments\": [{\"k\":\"prefix\",\"hash_ids\":[1],\"len\":40},"
        "{\"k\":\"chunk\",\"id\":7,\"len\":50},{\"k\":\"prompt\",\"id\":null,\"len\":10}]}\n"
        "{\"timestamp\": 0, \"output_length\": 200, \"segments\": [{\"k\":\"prefix\",\"hash_ids\":[1],\"len\":40},"
        "{\"k\":\"chunk\",\"id\":8,\"len\":20},{\"k\":\"chunk\",\"id\":7,\"len\":50},{\"k\":\"prompt\",\"id\":null,"
        "\"len\":5}]}\n";
    char *path = tu_write_temp(text), args[1024];
    const char *opts = "--set kvstore.pic=mepic --set cluster.prefill=1 --set cluster.decode=1";
    snprintf(args, sizeof args, "run --json --trace %s %s", path, opts);
    json_t *j = tu_kvsim_json(args);
    assert_int_equal(tu_int_field(j, "peak_footprint_blocks"), 12);
    assert_int_equal(tu_int_field(j, "peak_inflight_requests"), 2);
    assert_int_equal(tu_int_field(j, "peak_shared_blocks"), 7);
    assert_int_equal(tu_int_field(j, "peak_held_blocks"), 13);
    assert_int_equal(tu_int_field(j, "peak_private_blocks"), 5);
    assert_non_null(json_object_get(json_object_get(j, "e2e_ms"), "mean"));
    json_decref(j);
    snprintf(args, sizeof args, "run --trace %s %s", path, opts);
    tu_expect_stdout(args, "at peak    2 requests in flight: 13 held blocks stored once in 7 (1.86 requests each) + 5 "
                           "private\n");
    tu_expect_stdout(args, "E2E ms     mean");
    tu_remove_temp(path);
}

/* Eviction: LRU over released objects, a chain freed tail first. A (48
 * tokens, 3 full blocks) is stored and released; B (16 unique tokens)
 * needs one block of C = 3 and evicts A's tail, so A again reuses its
 * first two blocks: 48 + 16 + 16 computed. Storing A's third block again
 * evicts B's (released, unreferenced): 2 evictions. */
static void test_prefix_evicts_chain_tail_first(void **state)
{
    const char *text =
        "{\"timestamp\": 0, \"output_length\": 1, \"segments\": [{\"k\":\"prompt\",\"id\":1,\"len\":48}]}\n"
        "{\"timestamp\": 1, \"output_length\": 1, \"segments\": [{\"k\":\"prompt\",\"id\":null,\"len\":16}]}\n"
        "{\"timestamp\": 2, \"output_length\": 1, \"segments\": [{\"k\":\"prompt\",\"id\":1,\"len\":48}]}\n";
    kv_pic_result r;
    replay_text(text, "prefix", 3, 1, &r);
    assert_int_equal(r.computed_tokens, 80);
    assert_int_equal(r.evictions, 2);
}

/* Objects in flight are never evicted: with W = 2 and C = 3, B cannot
 * evict A's blocks while A is in flight, so B's block is private and A
 * again (admitted after A's release) reuses all 3: 48 + 16 + 0. */
static void test_referenced_objects_stay(void **state)
{
    const char *text =
        "{\"timestamp\": 0, \"output_length\": 1, \"segments\": [{\"k\":\"prompt\",\"id\":1,\"len\":48}]}\n"
        "{\"timestamp\": 1, \"output_length\": 1, \"segments\": [{\"k\":\"prompt\",\"id\":null,\"len\":16}]}\n"
        "{\"timestamp\": 2, \"output_length\": 1, \"segments\": [{\"k\":\"prompt\",\"id\":1,\"len\":48}]}\n";
    kv_pic_result r;
    replay_text(text, "prefix", 3, 2, &r);
    assert_int_equal(r.computed_tokens, 64);
    assert_int_equal(r.evictions, 0);
    assert_int_equal(r.peak_footprint_blocks, 4);
}

/* Every registered policy on a generated RAG trace: fractions in range,
 * and with an unlimited cache one at a time, reuse can only help: each PIC
 * policy recomputes no more than prefix caching. */
static void test_every_policy_on_rag(void **state)
{
    char *path = tu_temp_path();
    char args[512];
    snprintf(args, sizeof args, "trace gen --workload rag --requests 300 --seed 3 -o %s", path);
    tu_expect_exit(args, 0, NULL);
    kv_pic_trace t;
    sim_err err;
    sim_trace_opts topts = sim_trace_default_opts();
    if (kv_pic_trace_load(&t, path, &topts, &err)) fail_msg("%s", err.msg);
    kv_pic_params p = params(INT64_MAX);
    kv_pic_result base;
    kv_pic_replay(&t, kv_pic_policy_lookup("prefix"), &p, 1, &base);
    for (size_t i = 0; kv_pic_policy_at(i); i++) {
        kv_pic_result r;
        kv_pic_replay(&t, kv_pic_policy_at(i), &p, 8, &r);
        assert_true(r.recompute_fraction > 0 && r.recompute_fraction <= 1);
        assert_true(r.chunk_hit_rate >= 0 && r.chunk_hit_rate <= 1);
        kv_pic_replay(&t, kv_pic_policy_at(i), &p, 1, &r);
        assert_true(r.computed_tokens <= base.computed_tokens);
    }
    kv_pic_trace_free(&t);
    tu_remove_temp(path);
}

/* A segment-only trace under kvstore.pic = "none": 512-token blocks keyed
 * by content. Two requests of 920 tokens sharing their first 512 (the
 * prefix block) and differing in a unique prompt: 1 of 4 blocks hits. */
static void test_segments_without_hash_ids(void **state)
{
    const char *text =
        "{\"timestamp\": 0, \"output_length\": 5, \"segments\": [{\"k\":\"prefix\",\"hash_ids\":[1,2],"
        "\"len\":600},{\"k\":\"chunk\",\"id\":7,\"len\":300},{\"k\":\"prompt\",\"id\":null,\"len\":20}]}\n"
        "{\"timestamp\": 10, \"input_length\": 920, \"output_length\": 5, \"segments\": [{\"k\":\"prefix\","
        "\"hash_ids\":[1,2],\"len\":600},{\"k\":\"chunk\",\"id\":7,\"len\":300},{\"k\":\"prompt\","
        "\"id\":null,\"len\":20}]}\n";
    char *path = tu_write_temp(text), args[512];
    snprintf(args, sizeof args, "trace stats %s", path);
    tu_expect_stdout(args, "4 (3 distinct)");
    tu_expect_stdout(args, "max hit rate     0.2500 blocks");
    tu_remove_temp(path);
}

typedef struct bad_case {
    const char *segments; /* the line's "segments" value */
    const char *input;    /* ", \"input_length\": N" or "" */
    const char *needle;
} bad_case;

static void test_bad_segments(void **state)
{
    static const bad_case cases[] = {
        {"[{\"k\":\"chunk\",\"id\":1,\"len\":0}]", "", ":2: segments[0].len: 0 tokens"},
        {"[{\"k\":\"passage\",\"id\":1,\"len\":5}]", "", ":2: segments[0].k: \"passage\" is not one of"},
        {"[{\"k\":\"chunk\",\"id\":\"x\",\"len\":5}]", "", ":2: segments[0].id: expected an integer, got a string"},
        {"[{\"k\":\"chunk\",\"len\":5}]", "", ":2: segments[0].id: missing"},
        {"[{\"k\":\"prompt\",\"id\":1}]", "", ":2: segments[0].len: missing"},
        {"[{\"k\":\"chunk\",\"id\":1,\"len\":5}]", ", \"input_length\": 6", ":2: input_length: 6 but the segments"},
        {"[{\"k\":\"chunk\",\"id\":1,\"len\":5},{\"k\":\"prefix\",\"hash_ids\":[1],\"len\":5}]", "",
         ":2: segments[1].k: a prefix segment must come first"},
        {"[{\"k\":\"prefix\",\"hash_ids\":[1],\"len\":600}]", "",
         ":2: segments[0].hash_ids: 1 ids but len 600 is 2 blocks"},
        {"[]", "", ":2: segments: empty"},
        {"[{\"k\":\"chunk\",\"id\":1,\"len\":5,\"pos\":3}]", "", ":2: segments[0].pos: unknown key"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[1024], args[600];
        snprintf(text, sizeof text,
                 "{\"timestamp\": 0, \"output_length\": 1, \"segments\": [{\"k\":\"chunk\",\"id\":1,\"len\":5}]}\n"
                 "{\"timestamp\": 1, \"output_length\": 1%s, \"segments\": %s}\n",
                 cases[i].input, cases[i].segments);
        char *path = tu_write_temp(text);
        snprintf(args, sizeof args, "trace stats %s", path);
        tu_expect_exit(args, 2, cases[i].needle);
        snprintf(args, sizeof args, "hitrate --pic mepic --trace %s", path);
        tu_expect_exit(args, 2, cases[i].needle);
        /* a run that failed on its trace leaves nothing in its results DB */
        snprintf(args, sizeof args, "run --set trace.path='\"%s\"' --set kvstore.pic='\"mepic\"' --db %s.db", path,
                 path);
        tu_expect_exit(args, 2, cases[i].needle);
        snprintf(args, sizeof args, "%s.db", path);
        sqlite3 *db;
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_open(args, &db), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM runs", -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_int_equal(sqlite3_column_int(st, 0), 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        unlink(args);
        tu_remove_temp(path);
    }
}

static void test_hitrate_pic_errors(void **state)
{
    char *path = tu_write_temp(hand_trace), args[600];
    snprintf(args, sizeof args, "hitrate --pic lru --trace %s", path);
    tu_expect_exit(args, 2, "--pic: 'lru' is not a PIC policy");
    snprintf(args, sizeof args, "hitrate --pic mepic --trace %s --window 0", path);
    tu_expect_exit(args, 2, "--window");
    snprintf(args, sizeof args, "hitrate --pic mepic --trace %s --capacity-tokens 1e5 --capacity-blocks 3", path);
    tu_expect_exit(args, 2, "give one of");
    snprintf(args, sizeof args, "hitrate --pic cacheblend --trace %s --cacheblend-ratio 1.5", path);
    tu_expect_exit(args, 2, "kvsim hitrate: --cacheblend-ratio: 1.5 is not in [0, 1]\n");
    /* one policy's knob with another policy was taken and changed nothing */
    snprintf(args, sizeof args, "hitrate --pic mepic --trace %s --cacheblend-ratio 0.5", path);
    tu_expect_exit(args, 2,
                   "kvsim hitrate: --cacheblend-ratio has no effect with --pic mepic: only cacheblend "
                   "recomputes a share of a reused chunk (drop it, or --pic cacheblend)\n");
    snprintf(args, sizeof args, "hitrate --pic cacheblend --trace %s --epic-tokens 8", path);
    tu_expect_exit(args, 2,
                   "kvsim hitrate: --epic-tokens has no effect with --pic cacheblend: only epic recomputes "
                   "a fixed count of a reused chunk's leading tokens (drop it, or --pic epic)\n");
    tu_expect_exit("hitrate --pic mepic --trace traces/default.jsonl", 2, "no request has \"segments\"");
    tu_remove_temp(path);
}

/* kvsim hitrate --pic checks its block size as kvsim run checks
 * kvstore.pic_block_tokens (kv_pic_params_check, one check for both): a
 * block that does not divide the trace's 512-token hash_ids blocks exits 2
 * (it was replayed, with recompute fractions that mean nothing: 10.24 with
 * padding at 1,024); a divisor is replayed. */
static void test_hitrate_pic_block_tokens(void **state)
{
    char *path = tu_write_temp(hand_trace), args[600];
    const struct {
        int block;
        const char *err;
    } bad[] = {
        {24, "kvsim hitrate: --block-tokens: 24 does not divide the trace's hash_ids blocks (512): a block of the "
             "trace must be whole HBM blocks; use a divisor of 512 such as 16\n"},
        {1024, "kvsim hitrate: --block-tokens: 1024 does not divide the trace's hash_ids blocks (512): a block of the "
               "trace must be whole HBM blocks; use a divisor of 512 such as 512\n"},
        {500, "kvsim hitrate: --block-tokens: 500 does not divide the trace's hash_ids blocks (512): a block of the "
              "trace must be whole HBM blocks; use a divisor of 512 such as 256\n"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "hitrate --pic mepic --trace %s --block-tokens %d", path, bad[i].block);
        tu_expect_exit(args, 2, bad[i].err);
    }
    snprintf(args, sizeof args, "hitrate --pic mepic --trace %s --block-tokens 0", path);
    tu_expect_exit(args, 2, "--block-tokens: 0 is not in [1, 1048576]");
    snprintf(args, sizeof args, "hitrate --pic mepic --trace %s --block-tokens 32", path);
    tu_expect_stdout(args, "32-token blocks");
    snprintf(args, sizeof args, "hitrate --pic mepic --trace %s --block-tokens 512", path);
    tu_expect_stdout(args, "512-token blocks");
    tu_expect_exit("run --set kvstore.pic='\"mepic\"' --set kvstore.pic_block_tokens=1024", 2,
                   "kvsim run: kvstore.pic_block_tokens: 1024 does not divide trace.block_tokens (512): a block of "
                   "the trace must be whole HBM blocks; use a divisor of 512 such as 512\n");
    tu_remove_temp(path);
}

/* JSON names scripts rely on (docs/pic.md). */
static void test_hitrate_pic_json(void **state)
{
    char *path = tu_write_temp(hand_trace), args[600];
    snprintf(args, sizeof args, "hitrate --pic mepic --window 1 --trace %s --capacity-tokens 96,inf --json", path);
    json_t *j = tu_kvsim_json(args);
    json_t *p0 = json_array_get(json_object_get(j, "points"), 0), *p1 = json_array_get(json_object_get(j, "points"), 1);
    assert_int_equal(json_integer_value(json_object_get(p0, "capacity_blocks")), 6);
    assert_string_equal(json_string_value(json_object_get(p1, "capacity_blocks")), "inf");
    assert_double_equal(json_real_value(json_object_get(p1, "recompute_fraction")), 147 / 331.0, 1e-9);
    assert_double_equal(json_real_value(json_object_get(p1, "chunk_hit_rate")), 0.6, 1e-12);
    assert_int_equal(json_integer_value(json_object_get(p1, "peak_footprint_blocks")), 10);
    json_decref(j);
    tu_remove_temp(path);
}

/* The timed run: two requests of 1,000 unique tokens arrive together on
 * one prefill instance whose HBM holds 100 blocks (1,600 tokens): each
 * needs 63 blocks, so the second waits for the first to finish; a request
 * of 2,000 tokens (125 blocks) could never fit and is rejected. */
static void test_run_hbm_admission(void **state)
{
    const char *text =
        "{\"timestamp\": 0, \"output_length\": 2, \"segments\": [{\"k\":\"prompt\",\"id\":null,\"len\":1000}]}\n"
        "{\"timestamp\": 0, \"output_length\": 2, \"segments\": [{\"k\":\"prompt\",\"id\":null,\"len\":1000}]}\n"
        "{\"timestamp\": 0, \"output_length\": 2, \"segments\": [{\"k\":\"prompt\",\"id\":null,\"len\":2000}]}\n";
    char *path = tu_write_temp(text), args[1024];
    /* 100 blocks of 16 tokens of llama3-70b KV (327,680 bytes/token) */
    snprintf(args, sizeof args,
             "run --json --set trace.path='\"%s\"' --set kvstore.pic='\"mepic\"' --set cluster.prefill=1 "
             "--set cluster.decode=1 --set kvstore.hbm_bytes=524288000",
             path);
    json_t *j = tu_kvsim_json(args);
    assert_int_equal(json_integer_value(json_object_get(j, "pic_capacity_blocks")), 100);
    assert_int_equal(json_integer_value(json_object_get(j, "pic_waited")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "pic_rejected")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "completed")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "peak_footprint_blocks")), 63);
    assert_double_equal(json_real_value(json_object_get(j, "recompute_fraction")), 1.0, 1e-12);
    json_decref(j);
    tu_expect_exit("run --set kvstore.pic='\"blend\"'", 2, "kvstore.pic: unknown cache model 'blend'");
    tu_expect_exit("run --set kvstore.pic='\"mepic\"' --set kvstore.pic_block_tokens=24", 2,
                   "kvstore.pic_block_tokens: 24 does not divide");
    tu_remove_temp(path);
}

/* The cell of run `run`'s row of the report's comparison table that holds
 * exactly `text` (a value cell, best or not). */
static bool row_has_cell(const char *html, int run, const char *text)
{
    char tr[64], a[96], b[112];
    snprintf(tr, sizeof tr, "<tr data-run=\"%d\">", run);
    snprintf(a, sizeof a, "<td>%s</td>", text);
    snprintf(b, sizeof b, "<td class=\"best\">%s</td>", text);
    const char *row = strstr(html, tr), *end = row ? strstr(row, "</tr>") : NULL;
    if (!end) return false;
    const char *x = strstr(row, a), *y = strstr(row, b);
    return (x && x < end) || (y && y < end);
}

/* A report of PIC runs shows MEPIC's own metrics beside TTFT: the mean
 * end-to-end latency (checked against the mean of the requests table's
 * e2e_ms, computed by SQLite) and the peak HBM KV in GiB (peak blocks × 16
 * tokens × 327,680 bytes of llama3-70b KV per token / 2^30), and the
 * pic_latency figure; a report without a PIC run shows neither. */
static void test_report_pic_columns(void **state)
{
    if (!tu_have_gnuplot()) skip();
    char *dir = su_tempdir(), args[2048], db[600], q[400];
    snprintf(db, sizeof db, "%s/p.db", dir);
    snprintf(args, sizeof args, "trace gen --workload rag --requests 40 --seed 3 -o %s/rag.jsonl", dir);
    tu_expect_stdout(args, NULL);
    snprintf(args, sizeof args,
             "sweep --trace %s/rag.jsonl --set cluster.prefill=1 --set cluster.decode=1 --grid "
             "'kvstore.pic=epic,mepic' --db %s",
             dir, db);
    tu_expect_stdout(args, NULL);
    snprintf(args, sizeof args, "report --db %s -o %s/rep", db, dir);
    tu_expect_stdout(args, "kvsim report: ");
    char *html = su_read_in(dir, "rep/index.html");
    assert_non_null(strstr(html, "<th>E2E mean ms</th>"));
    assert_non_null(strstr(html, "<th>peak HBM KV GiB</th>"));
    assert_non_null(strstr(html, "id=\"pic_latency\""));
    for (int run = 1; run <= 2; run++) {
        snprintf(q, sizeof q,
                 "SELECT printf('%%.1f', avg(e2e_ms)) FROM requests WHERE run_id = %d AND status = "
                 "'completed'",
                 run);
        char *e2e = tu_sql_text(db, q);
        snprintf(q, sizeof q,
                 "SELECT printf('%%.2f', json_extract(summary_json, '$.peak_footprint_blocks') * 16 * "
                 "327680 / 1073741824.0) FROM runs WHERE id = %d",
                 run);
        char *peak = tu_sql_text(db, q);
        if (!row_has_cell(html, run, e2e) || !row_has_cell(html, run, peak))
            fail_msg("run %d: no cell %s (E2E) or %s (peak GiB)", run, e2e, peak);
        free(e2e);
        free(peak);
    }
    free(html);
    /* the same trace without PIC: no such column or figure */
    snprintf(args, sizeof args, "sweep --trace traces/default.jsonl --grid 'trace.speed=1' --db %s/plain.db", dir);
    tu_expect_stdout(args, NULL);
    snprintf(args, sizeof args, "report --db %s/plain.db -o %s/plain", dir, dir);
    tu_expect_stdout(args, "kvsim report: ");
    html = su_read_in(dir, "plain/index.html");
    assert_null(strstr(html, "E2E mean ms"));
    assert_null(strstr(html, "pic_latency"));
    free(html);
    su_rmrf(dir);
    free(dir);
}

/* kvstore.hbm_bytes under a PIC policy (issue 27 item 5). "inf" is an
 * unbounded store: on 200 generated RAG requests it gives what 1e18 bytes
 * (190,734,863,281 pages, which no run fills) gives, every request served,
 * where the int64 cast of inf once rejected all 200. A store too small
 * for any request fails the run (exit 2) with the arithmetic instead of
 * rejecting everything: with llama3-70b's 327,680 bytes of KV a token, a
 * 16-token page is 5,242,880 bytes; unique prompts of 1,000 and 2,000
 * tokens need 63 and 125 pages, and 62 pages (325,058,560 bytes) hold
 * neither. 1 byte and 1 MB hold no page at all. 63 pages serve the first. */
static void test_run_hbm_inf_and_too_small(void **state)
{
    char *rag = tu_temp_path(), args[1024];
    snprintf(args, sizeof args, "trace gen --workload rag --requests 200 --seed 5 -o %s", rag);
    tu_expect_exit(args, 0, NULL);
    json_t *j[2];
    for (int inf = 0; inf < 2; inf++) {
        snprintf(args, sizeof args, "run --json --trace %s --set kvstore.pic=mepic --set kvstore.hbm_bytes=%s", rag,
                 inf ? "inf" : "1e18");
        j[inf] = tu_kvsim_json(args);
        assert_int_equal(tu_int_field(j[inf], "completed"), 200);
        assert_int_equal(tu_int_field(j[inf], "pic_rejected"), 0);
    }
    assert_int_equal(tu_int_field(j[0], "pic_capacity_blocks"), 190734863281);
    static const char *const same[] = {"recompute_fraction", "chunk_hit_rate", "peak_footprint_blocks", "pic_waited"};
    for (size_t k = 0; k < sizeof same / sizeof same[0]; k++)
        assert_true(json_equal(json_object_get(j[0], same[k]), json_object_get(j[1], same[k])));
    json_decref(j[0]);
    json_decref(j[1]);
    tu_remove_temp(rag);
    const char *text =
        "{\"timestamp\": 0, \"output_length\": 2, \"segments\": [{\"k\":\"prompt\",\"id\":null,\"len\":1000}]}\n"
        "{\"timestamp\": 0, \"output_length\": 2, \"segments\": [{\"k\":\"prompt\",\"id\":null,\"len\":2000}]}\n";
    char *path = tu_write_temp(text);
    static const struct {
        const char *bytes, *held;
    } small[] = {{"325058560", "325058560 bytes per instance holds 62 pages"},
                 {"1", "1 bytes per instance holds 0 pages"},
                 {"1MB", "1000000 bytes per instance holds 0 pages"}};
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) {
        snprintf(args, sizeof args,
                 "run --trace %s --set kvstore.pic=mepic --set cluster.prefill=1 --set cluster.decode=1 "
                 "--set kvstore.hbm_bytes=%s",
                 path, small[i].bytes);
        const char *want[] = {small[i].held, "of 16 tokens (5242880 bytes of llama3-70b KV a page)",
                              "the smallest, request 0 (line 1), needs 63 pages (330301440 bytes)",
                              "all 2 that reached the store were rejected",
                              "Raise kvstore.hbm_bytes to at least 330301440"};
        cli_result r = tu_kvsim(args);
        assert_int_equal(r.status, 2);
        for (size_t w = 0; w < sizeof want / sizeof want[0]; w++)
            if (!strstr(r.err, want[w])) fail_msg("kvsim %s: stderr '%s' lacks '%s'", args, r.err, want[w]);
        tu_free(&r);
    }
    snprintf(args, sizeof args,
             "run --json --trace %s --set kvstore.pic=mepic --set cluster.prefill=1 --set cluster.decode=1 "
             "--set kvstore.hbm_bytes=330301440",
             path);
    json_t *one = tu_kvsim_json(args);
    assert_int_equal(tu_int_field(one, "completed"), 1);
    assert_int_equal(tu_int_field(one, "pic_rejected"), 1);
    json_decref(one);
    tu_remove_temp(path);
}

/* docs/pic.md: reusable fraction (infinite cache, W = 1) = 1 − recompute
 * fraction; trace stats and hitrate --pic reach it by separate paths. */
static void test_reusable_identity(void **state)
{
    char *path = tu_temp_path(), args[600];
    snprintf(args, sizeof args, "trace gen --workload rag --requests 200 --seed 5 -o %s", path);
    tu_expect_exit(args, 0, NULL);
    snprintf(args, sizeof args, "trace stats --json %s", path);
    json_t *st = tu_kvsim_json(args);
    snprintf(args, sizeof args, "hitrate --json --pic mepic --window 1 --trace %s", path);
    json_t *hr = tu_kvsim_json(args);
    snprintf(args, sizeof args, "hitrate --json --pic prefix --window 1 --trace %s", path);
    json_t *hp = tu_kvsim_json(args);
    double pic = json_real_value(json_object_get(st, "reusable_fraction_pic"));
    double pre = json_real_value(json_object_get(st, "reusable_fraction_prefix"));
    json_t *p0 = json_array_get(json_object_get(hr, "points"), 0),
           *q0 = json_array_get(json_object_get(hp, "points"), 0);
    assert_double_equal(pic, 1 - json_real_value(json_object_get(p0, "recompute_fraction")), 1e-9);
    assert_double_equal(pre, 1 - json_real_value(json_object_get(q0, "recompute_fraction")), 1e-9);
    assert_true(pic > pre);
    json_decref(st);
    json_decref(hr);
    json_decref(hp);
    tu_remove_temp(path);
}

/* The RAGPulse sample: chunks per request and the share of repeated chunk
 * occurrences, counted independently from the raw 0_trace.jsonl (passage
 * ids; a passage's length is fixed by its table, so id = content). */
static void test_ragpulse_sample_stats(void **state)
{
    const char *dir = RAGPULSE_SAMPLE;
    gzFile f = gzopen(RAGPULSE_SAMPLE "/0_trace.jsonl.gz", "rb");
    assert_non_null(f);
    static char line[65536];
    int64_t reqs = 0, occ = 0, distinct = 0;
    json_t *seen = json_object();
    while (gzgets(f, line, sizeof line)) {
        json_t *o = json_loads(line, 0, NULL);
        json_t *ids = json_object_get(json_object_get(o, "hash_ids"), "passages_ids");
        for (size_t i = 0; i < json_array_size(ids); i++) {
            char key[32];
            snprintf(key, sizeof key, "%lld", (long long)json_integer_value(json_array_get(ids, i)));
            occ++;
            if (!json_object_get(seen, key)) distinct++, json_object_set_new(seen, key, json_true());
        }
        reqs++;
        json_decref(o);
    }
    gzclose(f);
    json_decref(seen);
    char *out = tu_temp_path(), args[600];
    snprintf(args, sizeof args, "trace import ragpulse %s -o %s", dir, out);
    tu_expect_exit(args, 0, NULL);
    snprintf(args, sizeof args, "trace stats --json --sort %s", out);
    json_t *st = tu_kvsim_json(args);
    assert_int_equal(json_integer_value(json_object_get(st, "segment_requests")), reqs);
    assert_double_equal(json_real_value(json_object_get(st, "chunks_per_request")), (double)occ / (double)reqs, 1e-9);
    assert_double_equal(json_real_value(json_object_get(st, "chunk_repeat_share")),
                        (double)(occ - distinct) / (double)occ, 1e-9);
    assert_true(json_real_value(json_object_get(st, "reusable_fraction_pic")) >
                json_real_value(json_object_get(st, "reusable_fraction_prefix")));
    json_decref(st);
    tu_remove_temp(out);
}

/* The hit rate of a timed PIC run counts the tokens the store's reuse
 * spared, as the summary's recompute fraction does, disaggregated and
 * aggregated alike (disaggregated runs reported 0). Two requests of a
 * 320-token chunk and a 32-token prompt, 10 s apart: the second reuses the
 * chunk but its first 16-token block (mepic): 304 tokens of 704. */
static void test_run_hit_rate_counts_reuse(void **state)
{
    const char *text =
        "{\"timestamp\": 0, \"output_length\": 2, \"segments\": [{\"k\":\"chunk\",\"id\":7,\"len\":320},"
        "{\"k\":\"prompt\",\"id\":null,\"len\":32}]}\n"
        "{\"timestamp\": 10000, \"output_length\": 2, \"segments\": [{\"k\":\"chunk\",\"id\":7,\"len\":320},"
        "{\"k\":\"prompt\",\"id\":null,\"len\":32}]}\n";
    char *path = tu_write_temp(text), args[1024];
    static const char *const modes[] = {"--set cluster.prefill=1 --set cluster.decode=1",
                                        "--set cluster.mode=aggregated --set cluster.instances=1"};
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "run --json --set trace.path='\"%s\"' --set kvstore.pic=mepic %s", path, modes[i]);
        json_t *j = tu_kvsim_json(args);
        assert_int_equal(json_integer_value(json_object_get(j, "completed")), 2);
        assert_double_equal(json_real_value(json_object_get(j, "hit_rate_tokens")), 304.0 / 704, 1e-9);
        assert_double_equal(json_real_value(json_object_get(j, "recompute_fraction")), 400.0 / 704, 1e-9);
        json_decref(j);
    }
    unlink(path);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_worked_policies),      cmocka_unit_test(test_mepic_zero_capacity_window),
        cmocka_unit_test(test_mepic_peak_overlapping),    cmocka_unit_test(test_prefix_evicts_chain_tail_first),
        cmocka_unit_test(test_referenced_objects_stay),   cmocka_unit_test(test_every_policy_on_rag),
        cmocka_unit_test(test_segments_without_hash_ids), cmocka_unit_test(test_bad_segments),
        cmocka_unit_test(test_hitrate_pic_errors),        cmocka_unit_test(test_hitrate_pic_block_tokens),
        cmocka_unit_test(test_hitrate_pic_json),          cmocka_unit_test(test_run_hbm_inf_and_too_small),
        cmocka_unit_test(test_run_hbm_admission),         cmocka_unit_test(test_run_peak_fields),
        cmocka_unit_test(test_reusable_identity),         cmocka_unit_test(test_run_hit_rate_counts_reuse),
        cmocka_unit_test(test_ragpulse_sample_stats),     cmocka_unit_test(test_report_pic_columns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
