/* tests/test_ladder.c — `kvsim hitrate --ladder` (docs/hitrate-ladder.md)
 * and `kvsim trace gen --target-hit-rate`.
 *
 * The bundled conversation trace on 8 cache nodes: rungs non-increasing,
 * rung a equal to a count made here (a trie of prefixes, read with zlib and
 * jansson, not kvsim's trace reader) and rung c equal to Belady's MIN
 * written here (a lazy-deletion heap, with bypass). The engine view on a
 * hand-worked trace (full blocks, context cap, split blocks), coarsening
 * checked against `kvsim trace rechunk`, the block-size warnings, a
 * generated trace at X = 0.5, the regret table and bad values. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <zlib.h>

#include "tests/testutil.h"

/* ---- an independent count: the trace as a trie of prefixes ------------- */

typedef struct trie {
    uint64_t *key; /* (parent + 1) << 40 | id, 0 = empty */
    int32_t *node;
    size_t cap;
    int32_t nodes;
} trie;

static int32_t trie_node(trie *t, int32_t parent, int64_t id, bool *fresh)
{
    uint64_t k = ((uint64_t)(parent + 1) << 40) ^ (uint64_t)id ^ 0x8000000000000000ull;
    size_t i = (size_t)((k * 0x9E3779B97F4A7C15ull) >> 40) & (t->cap - 1);
    while (t->key[i] && t->key[i] != k) i = (i + 1) & (t->cap - 1);
    *fresh = !t->key[i];
    if (*fresh) {
        t->key[i] = k;
        t->node[i] = t->nodes++;
    }
    return t->node[i];
}

/* The trace as a stream of block numbers (trie nodes), per request. */
typedef struct stream {
    int32_t *block;
    int64_t n, cap;
    int64_t *off; /* per request */
    int32_t *input;
    int64_t nreq, reqcap;
    int32_t distinct;
} stream;

static void stream_add(stream *s, int32_t b)
{
    if (s->n == s->cap) s->block = realloc(s->block, (size_t)(s->cap = s->cap ? 2 * s->cap : 1024) * 4);
    s->block[s->n++] = b;
}

static void stream_read(const char *path, stream *s)
{
    trie t = {.cap = 1u << 22};
    t.key = calloc(t.cap, sizeof *t.key);
    t.node = calloc(t.cap, sizeof *t.node);
    *s = (stream){0};
    gzFile f = gzopen(path, "rb");
    assert_non_null(f);
    static char line[1 << 20];
    while (gzgets(f, line, sizeof line)) {
        json_t *o = json_loads(line, 0, NULL);
        assert_non_null(o);
        if (s->nreq + 1 >= s->reqcap) {
            s->reqcap = s->reqcap ? 2 * s->reqcap : 1024;
            s->off = realloc(s->off, (size_t)s->reqcap * sizeof *s->off);
            s->input = realloc(s->input, (size_t)s->reqcap * sizeof *s->input);
        }
        s->off[s->nreq] = s->n;
        s->input[s->nreq++] = (int32_t)json_integer_value(json_object_get(o, "input_length"));
        int32_t parent = -1;
        bool fresh;
        size_t i;
        json_t *id;
        json_array_foreach(json_object_get(o, "hash_ids"), i, id)
        {
            parent = trie_node(&t, parent, json_integer_value(id), &fresh);
            stream_add(s, parent);
        }
        json_decref(o);
    }
    s->off[s->nreq] = s->n;
    gzclose(f);
    s->distinct = t.nodes;
    free(t.key);
    free(t.node);
}

static void stream_free(stream *s)
{
    free(s->block);
    free(s->off);
    free(s->input);
}

/* Prefix hits of an infinite cache: blocks and tokens (min(hit × B, input)). */
static void count_ceiling(const stream *s, int bt, int64_t *hit_blocks, int64_t *hit_tokens)
{
    bool *seen = calloc((size_t)s->distinct, 1);
    *hit_blocks = *hit_tokens = 0;
    for (int64_t r = 0; r < s->nreq; r++) {
        int64_t hit = 0;
        bool leading = true;
        for (int64_t p = s->off[r]; p < s->off[r + 1]; p++) {
            leading = leading && seen[s->block[p]];
            hit += leading;
            seen[s->block[p]] = true;
        }
        *hit_blocks += hit;
        *hit_tokens += hit * bt < s->input[r] ? hit * bt : s->input[r];
    }
    free(seen);
}

/* ---- an independent Belady's MIN ---------------------------------------- */

typedef struct entry {
    int64_t next;
    int32_t block;
} entry;

typedef struct lazy_heap {
    entry *v;
    int64_t n;
} lazy_heap;

static void lh_push(lazy_heap *h, entry e)
{
    int64_t i = h->n++;
    while (i > 0 && h->v[(i - 1) / 2].next < e.next) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = e;
}

static entry lh_pop(lazy_heap *h)
{
    entry top = h->v[0], last = h->v[--h->n];
    int64_t i = 0;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && h->v[c + 1].next > h->v[c].next) c++;
        if (h->v[c].next <= last.next) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n > 0) h->v[i] = last;
    return top;
}

/* The largest next use among residents, dropping stale heap entries. */
static int64_t lh_max(lazy_heap *h, const int64_t *cur)
{
    while (h->n > 0 && cur[h->v[0].block] != h->v[0].next) lh_pop(h);
    return h->n > 0 ? h->v[0].next : -1;
}

/* Belady with bypass at `cap` blocks: per request, the leading run of
 * resident blocks is its hit; every block is then accessed in order. cur[b]
 * is b's next use while resident, -1 when not. */
static void count_belady(const stream *s, int64_t cap, int bt, int64_t *hit_blocks, int64_t *hit_tokens)
{
    int64_t *next = malloc((size_t)s->n * sizeof *next), *later = malloc((size_t)s->distinct * sizeof *later);
    int64_t *cur = malloc((size_t)s->distinct * sizeof *cur);
    for (int32_t b = 0; b < s->distinct; b++) later[b] = INT64_MAX, cur[b] = -1;
    for (int64_t p = s->n - 1; p >= 0; p--) next[p] = later[s->block[p]], later[s->block[p]] = p;
    lazy_heap h = {malloc((size_t)(s->n + 1) * sizeof(entry)), 0};
    int64_t size = 0;
    *hit_blocks = *hit_tokens = 0;
    for (int64_t r = 0; r < s->nreq; r++) {
        int64_t hit = 0;
        bool leading = true;
        for (int64_t p = s->off[r]; p < s->off[r + 1]; p++) {
            int32_t b = s->block[p];
            leading = leading && cur[b] >= 0;
            hit += leading;
            if (cur[b] < 0 && size == cap) {
                if (cap == 0 || next[p] >= lh_max(&h, cur)) continue; /* bypass */
                cur[lh_pop(&h).block] = -1;
                size--;
            }
            size += cur[b] < 0;
            cur[b] = next[p];
            lh_push(&h, (entry){next[p], b});
        }
        *hit_blocks += hit;
        *hit_tokens += hit * bt < s->input[r] ? hit * bt : s->input[r];
    }
    free(h.v);
    free(next);
    free(later);
    free(cur);
}

/* ---- helpers ------------------------------------------------------------- */

static const json_t *rung(const json_t *l, const char *name)
{
    size_t i;
    const json_t *g;
    json_array_foreach(json_object_get(l, "rungs"), i,
                       g) if (!strcmp(json_string_value(json_object_get(g, "rung")), name)) return g;
    fail_msg("no rung %s", name);
    return NULL;
}

static double num(const json_t *o, const char *key) { return json_number_value(json_object_get(o, key)); }

/* 8 instances (6 prefill, 2 decode; the store pools every node's DRAM),
 * 100 GB of DRAM each, llama3-70b: 596 blocks of 512 tokens per node
 * (100e9 / (327680 x 512)), 4768 in the pool. */
#define CONV_ARGS                                                                                                      \
    "hitrate --ladder --json --trace " MOONCAKE_CONVERSATION " --set cluster.prefill=6 --set cluster.decode=2 "        \
    "--set kvstore.dram_bytes=100GB"
#define CONV_POOL 4768

static void test_conversation_ladder(void **state)
{
    json_t *l = tu_kvsim_jsonf("%s", CONV_ARGS);
    static const char *const names[] = {"ceiling", "engine", "belady", "policy", "routed"};
    assert_int_equal(json_integer_value(json_object_get(json_object_get(l, "pool_blocks"), "dram")), CONV_POOL);
    assert_int_equal(json_integer_value(json_object_get(l, "nodes")), 8);
    for (int i = 1; i < 5; i++) {
        const json_t *up = rung(l, names[i - 1]), *g = rung(l, names[i]);
        if (num(g, "hit_rate_tokens") > num(up, "hit_rate_tokens"))
            fail_msg("rung %s (%.6f tokens) above %s (%.6f)", names[i], num(g, "hit_rate_tokens"), names[i - 1],
                     num(up, "hit_rate_tokens"));
        assert_true(num(g, "hit_rate_blocks") <= num(up, "hit_rate_blocks"));
        assert_double_equal(num(g, "loss_tokens"), num(up, "hit_rate_tokens") - num(g, "hit_rate_tokens"), 1e-9);
    }
    stream s;
    stream_read(MOONCAKE_CONVERSATION, &s);
    int64_t hb, ht;
    count_ceiling(&s, 512, &hb, &ht);
    const json_t *a = rung(l, "ceiling"), *c = rung(l, "belady");
    assert_int_equal(tu_int_field(a, "blocks"), s.n);
    assert_int_equal(hb, (int64_t)llround(num(a, "hit_rate_blocks") * (double)s.n));
    assert_int_equal(ht, tu_int_field(a, "prefill_tokens_saved"));
    count_belady(&s, CONV_POOL, 512, &hb, &ht);
    assert_int_equal(ht, tu_int_field(c, "prefill_tokens_saved"));
    assert_int_equal(hb, (int64_t)llround(num(c, "hit_rate_blocks") * (double)s.n));
    assert_int_equal(ht, tu_int_field(json_object_get(c, "saved_by_tier"), "dram"));
    assert_true(num(c, "hit_rate_tokens") < num(a, "hit_rate_tokens")); /* the capacity binds */
    stream_free(&s);
    json_decref(l);
}

/* Two requests, 512-token blocks, 700 tokens each, the same ids [1, 2]:
 * the second hits both blocks (700 tokens) under the trace's own hashing;
 * 1 block (512) with full blocks only or a 512-token cap; split into
 * 256-token blocks, 3 blocks (700 tokens), or 2 (512) with full blocks. */
static const char *TWO = "{\"timestamp\": 0, \"input_length\": 700, \"output_length\": 1, \"hash_ids\": [1, 2]}\n"
                         "{\"timestamp\": 1, \"input_length\": 700, \"output_length\": 1, \"hash_ids\": [1, 2]}\n";

static void expect_engine(const char *trace, const char *extra, int64_t saved, int64_t blocks, int64_t hit_blocks)
{
    json_t *l = tu_kvsim_jsonf("hitrate --ladder --json --no-run --trace %s %s", trace, extra);
    const json_t *b = rung(l, "engine");
    assert_int_equal(tu_int_field(b, "prefill_tokens_saved"), saved);
    assert_int_equal(tu_int_field(b, "tokens"), 1400);
    assert_int_equal(tu_int_field(b, "blocks"), blocks);
    assert_int_equal((int64_t)llround(num(b, "hit_rate_blocks") * (double)blocks), hit_blocks);
    json_decref(l);
}

static void test_engine_view(void **state)
{
    char *t = tu_write_temp(TWO);
    expect_engine(t, "", 700, 4, 2);
    expect_engine(t, "--full-blocks", 512, 4, 1);
    expect_engine(t, "--max-model-len 512", 512, 4, 1);
    expect_engine(t, "--block-tokens 256", 700, 6, 3);
    expect_engine(t, "--block-tokens 256 --full-blocks", 512, 6, 2);
    expect_engine(t, "--block-tokens 1024", 700, 2, 1);
    expect_engine(t, "--block-tokens 1024 --full-blocks", 0, 2, 0);
    tu_remove_temp(t);
}

/* Rung b at 1024-token blocks is rung a of the trace `trace rechunk` writes. */
static void test_rechunk_agrees(void **state)
{
    char *out = tu_temp_path(), args[1024];
    snprintf(args, sizeof args, "trace rechunk %s --block-tokens 1024 -o %s", MOONCAKE_CONVERSATION, out);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    json_t *l =
        tu_kvsim_jsonf("hitrate --ladder --json --no-run --trace %s --block-tokens 1024", MOONCAKE_CONVERSATION);
    json_t *k = tu_kvsim_jsonf("hitrate --ladder --json --no-run --trace %s --set trace.block_tokens=1024 "
                               "--set kvstore.block_tokens=1024",
                               out);
    const json_t *b = rung(l, "engine"), *a = rung(k, "ceiling");
    assert_int_equal(tu_int_field(b, "blocks"), tu_int_field(a, "blocks"));
    assert_int_equal(tu_int_field(b, "prefill_tokens_saved"), tu_int_field(a, "prefill_tokens_saved"));
    assert_double_equal(num(b, "hit_rate_blocks"), num(a, "hit_rate_blocks"), 1e-12);
    json_decref(l);
    json_decref(k);
    tu_remove_temp(out);
}

static void test_block_size_warnings(void **state)
{
    char args[1024];
    /* the case: a 512-token trace read as 256-token blocks */
    snprintf(args, sizeof args,
             "hitrate --ladder --no-run --trace %s --set trace.block_tokens=256 --set kvstore.block_tokens=256",
             MOONCAKE_CONVERSATION);
    tu_expect_exit(args, 0, "the trace's blocks are not 256 tokens");
    tu_expect_exit(args, 0, "--set trace.block_tokens=N --set kvstore.block_tokens=N with N = 512");
    snprintf(args, sizeof args, "hitrate --ladder --no-run --trace %s --block-tokens 64", MOONCAKE_CONVERSATION);
    tu_expect_exit(args, 0, "the trace's blocks are 512 tokens and the engine's 64");
    snprintf(args, sizeof args, "hitrate --ladder --no-run --trace %s --block-tokens 300", MOONCAKE_CONVERSATION);
    tu_expect_exit(args, 2, "must divide them or be a multiple of them");
    snprintf(args, sizeof args, "hitrate --ladder --no-run --trace %s --max-model-len 100", MOONCAKE_CONVERSATION);
    tu_expect_exit(args, 2, "--max-model-len 100 is below one 512-token block");
    tu_expect_exit("hitrate --ladder --block-tokens x", 2, "--block-tokens: 'x' is not a whole number");
    tu_expect_exit("hitrate --ladder --set kvstore.eviction=nope --no-run", 2, "unknown eviction policy 'nope'");
}

/* A generated trace at X = 0.5: its ceiling, counted here, within 1 pp. */
static void test_target_hit_rate(void **state)
{
    const double xs[] = {0.5, 0.2, 0.8};
    for (int i = 0; i < 3; i++) {
        char *path = tu_temp_path(), args[512];
        snprintf(args, sizeof args, "trace gen --requests 3000 --seed 7 --target-hit-rate %g -o %s", xs[i], path);
        cli_result r = tu_kvsim(args);
        assert_int_equal(r.status, 0);
        tu_free(&r);
        stream s;
        stream_read(path, &s);
        int64_t hb, ht, total = 0;
        count_ceiling(&s, 512, &hb, &ht);
        for (int64_t q = 0; q < s.nreq; q++) total += s.input[q];
        double got = (double)ht / (double)total;
        if (fabs(got - xs[i]) > 0.01) fail_msg("target %g: ceiling %.4f", xs[i], got);
        json_t *l = tu_kvsim_jsonf("hitrate --ladder --json --no-run --trace %s", path);
        assert_int_equal(tu_int_field(rung(l, "ceiling"), "prefill_tokens_saved"), ht);
        json_decref(l);
        stream_free(&s);
        tu_remove_temp(path);
    }
    tu_expect_exit("trace gen --target-hit-rate 1 -o -", 2, "--target-hit-rate must be in [0, 0.99]");
}

/* Every router on the same trace and cluster, each against rung d. */
static void test_regret(void **state)
{
    json_t *l =
        tu_kvsim_jsonf("hitrate --ladder --json --regret --set cluster.prefill=8 --set kvstore.dram_bytes=20GB");
    const json_t *reg = json_object_get(l, "regret"), *d = rung(l, "policy");
    assert_int_equal(json_array_size(reg), 5);
    size_t i;
    const json_t *x;
    bool seen_configured = false;
    json_array_foreach(reg, i, x)
    {
        assert_double_equal(num(x, "regret_tokens"), num(d, "hit_rate_tokens") - num(x, "hit_rate_tokens"), 1e-9);
        assert_true(num(x, "ttft_p90_ms") > 0);
        if (!strcmp(json_string_value(json_object_get(x, "router")), "cache_aware_local")) {
            seen_configured = true; /* the configured router's row is rung e */
            assert_double_equal(num(x, "hit_rate_tokens"), num(rung(l, "routed"), "hit_rate_tokens"), 1e-9);
            assert_double_equal(num(x, "ttft_p90_ms"), num(rung(l, "routed"), "ttft_p90_ms"), 1e-9);
        }
    }
    assert_true(seen_configured);
    json_decref(l);
    tu_expect_stdout("hitrate --ladder --regret --no-run", "routing regret against rung d");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conversation_ladder), cmocka_unit_test(test_engine_view),
        cmocka_unit_test(test_rechunk_agrees),      cmocka_unit_test(test_block_size_warnings),
        cmocka_unit_test(test_target_hit_rate),     cmocka_unit_test(test_regret),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
