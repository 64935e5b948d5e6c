/* tests/test_tracegen_mqa.c — `kvsim trace gen --workload multiround-qa`
 * (sim/trace/tracegen_mqa.c, sim/cli/cmd_trace.c): LMCache §7.2's
 * multi-round QA as a Mooncake-format trace.
 *
 * Checked on the written bytes with jansson: determinism; the trace reader
 * takes every line (`kvsim trace stats`); per session, each request starts
 * with the previous request's full blocks and gives fresh ids to the rest;
 * round-robin turns and the staggered first users; sessions about one
 * document share its blocks (round-robin and Zipf assignment); the
 * infinite-cache hit rate of `trace stats --json` equals a second
 * implementation here (a trie of seen prefixes); option misuse exits 2
 * naming the option; --help lists the options and defaults. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <inttypes.h>
#include <stdbool.h>

/* ---- helpers ------------------------------------------------------------ */

/* The bytes of `kvsim trace gen --workload multiround-qa ARGS -o -` (caller frees). */
static char *gen_text(const char *args)
{
    char all[1024];
    snprintf(all, sizeof all, "--workload multiround-qa %s", args);
    return tu_gen_text(all);
}

/* One request as written. */
typedef struct req {
    int64_t input, output, session;
    double ts;
    int64_t *ids;
    size_t n;
} req;

/* Every line of `text` (consumed) as a request; *n gets the count. */
static req *parse_reqs(char *text, int *n)
{
    int cap = 1024;
    req *v = malloc((size_t)cap * sizeof *v);
    *n = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_error_t je;
        json_t *o = json_loads(line, 0, &je);
        if (!o) fail_msg("line %d: %s: %s", *n + 1, je.text, line);
        if (*n == cap) v = realloc(v, (size_t)(cap *= 2) * sizeof *v);
        req *r = &v[(*n)++];
        r->input = tu_int_field(o, "input_length");
        r->output = tu_int_field(o, "output_length");
        r->session = tu_int_field(o, "session");
        r->ts = json_number_value(json_object_get(o, "timestamp"));
        const json_t *ids = json_object_get(o, "hash_ids");
        r->n = json_array_size(ids);
        r->ids = malloc((r->n ? r->n : 1) * sizeof *r->ids);
        for (size_t j = 0; j < r->n; j++) r->ids[j] = json_integer_value(json_array_get(ids, j));
        json_decref(o);
    }
    return v;
}

static void free_reqs(req *v, int n)
{
    for (int i = 0; i < n; i++) free(v[i].ids);
    free(v);
}

/* Generate with ARGS and parse (caller frees with free_reqs). */
static req *gen_reqs(const char *args, int *n)
{
    char *text = gen_text(args);
    req *v = parse_reqs(text, n);
    free(text);
    return v;
}

/* The previous line of the same session, per line (−1: a session's first). */
static int *prev_of_session(const req *v, int n)
{
    int64_t max_session = 0;
    for (int i = 0; i < n; i++)
        if (v[i].session > max_session) max_session = v[i].session;
    int *last = malloc((size_t)(max_session + 1) * sizeof *last), *prev = malloc((size_t)n * sizeof *prev);
    for (int64_t s = 0; s <= max_session; s++) last[s] = -1;
    for (int i = 0; i < n; i++) {
        assert_true(v[i].session >= 0);
        prev[i] = last[v[i].session];
        last[v[i].session] = i;
    }
    free(last);
    return prev;
}

/* ---- tests ---------------------------------------------------------------- */

static void test_deterministic(void **state)
{
    char *a = gen_text("--requests 300 --seed 5");
    char *b = gen_text("--seed 5 --requests 300");
    char *c = gen_text("--requests 300 --seed 6");
    assert_true(strlen(a) > 10000);
    assert_string_equal(a, b);
    assert_true(strcmp(a, c) != 0);
    free(a), free(b), free(c);
}

/* Every line is valid for the trace reader: `trace stats` exits 0 and counts them all. */
static void check_stats_reads(const char *gen_args, const char *stats_args, int64_t want)
{
    char *path = tu_temp_path(), cmd[1024];
    snprintf(cmd, sizeof cmd, "trace gen --workload multiround-qa %s -o %s", gen_args, path);
    tu_expect_exit(cmd, 0, "kvsim trace gen: wrote ");
    snprintf(cmd, sizeof cmd, "trace stats --json %s %s", stats_args, path);
    json_t *j = tu_kvsim_json(cmd);
    assert_int_equal(tu_int_field(j, "requests"), want);
    assert_int_equal(tu_int_field(j, "skipped"), 0);
    json_decref(j);
    tu_remove_temp(path);
}

static void test_trace_reader_accepts(void **state)
{
    check_stats_reads("", "", 1000);
    check_stats_reads("--requests 777 --block-tokens 256 --doc-sigma 0.8 --answer-sigma 1 --seed 3",
                      "--block-tokens 256", 777);
    check_stats_reads("--requests 50 --users 1 --rounds 50 --doc-tokens 1", "", 50);
}

/* Per session: ids = ceil(input / B); a request's prompt is the previous one
 * + its answer + a question; it starts with the previous request's FULL
 * blocks and every later id is fresh (in no earlier request of the trace). */
static void check_prefix_relation(const req *v, int n, int64_t block)
{
    int *prev = prev_of_session(v, n);
    int64_t max_id = -1;
    for (int i = 0; i < n; i++) {
        const req *r = &v[i];
        assert_int_equal(r->n, (r->input + block - 1) / block);
        size_t keep = 0;
        if (prev[i] >= 0) {
            const req *p = &v[prev[i]];
            assert_true(r->input > p->input + p->output);
            keep = (size_t)(p->input / block);
            for (size_t j = 0; j < keep; j++)
                if (r->ids[j] != p->ids[j])
                    fail_msg("line %d: id %zu is %" PRId64 ", not the previous round's", i, j, r->ids[j]);
            if (keep < p->n) assert_true(r->ids[keep] != p->ids[keep]); /* the partial block changed */
        }
        for (size_t j = prev[i] >= 0 ? keep : r->n; j < r->n; j++) {
            if (r->ids[j] <= max_id) fail_msg("line %d: id %" PRId64 " at %zu is not fresh", i, r->ids[j], j);
            max_id = r->ids[j];
        }
        for (size_t j = 0; j < r->n; j++)
            if (r->ids[j] > max_id) max_id = r->ids[j];
    }
    free(prev);
}

/* Users take turns round-robin: a session's requests are `users` lines
 * apart; slot k's first user asks R − ⌊k·R/U⌋ questions, later users R
 * (fewer only when the trace ends first). */
static void check_turns(const req *v, int n, int users, int rounds)
{
    int *prev = prev_of_session(v, n), *first = malloc((size_t)n * sizeof *first),
        *count = calloc((size_t)n, sizeof *count);
    for (int i = 0; i < n; i++) {
        if (prev[i] >= 0) assert_int_equal(i - prev[i], users);
        first[i] = prev[i] < 0 ? i : first[prev[i]];
        count[first[i]]++;
    }
    for (int i = 0; i < n; i++) {
        if (first[i] != i) continue;
        int want = i < users ? rounds - (int)((int64_t)i * rounds / users) : rounds;
        bool cut = i + (int64_t)(want - 1) * users >= n; /* its last turn is past the end */
        if (cut ? count[i] > want : count[i] != want)
            fail_msg("session %" PRId64 " (line %d): %d requests, want %d", v[i].session, i, count[i], want);
    }
    free(prev), free(first), free(count);
}

static void test_prefix_and_turns(void **state)
{
    int n;
    req *v = gen_reqs("", &n);
    assert_int_equal(n, 1000);
    check_prefix_relation(v, n, 512);
    check_turns(v, n, 40, 5);
    for (int i = 1; i < n; i++) assert_true(v[i].ts >= v[i - 1].ts);
    free_reqs(v, n);
    v = gen_reqs("--requests 700 --block-tokens 256 --documents 5 --doc-tokens 3000 --doc-sigma 0.6 --users 7 "
                 "--rounds 9 --question-tokens 300 --question-sigma 1 --answer-tokens 200 --answer-sigma 0.8 --seed 4",
                 &n);
    check_prefix_relation(v, n, 256);
    check_turns(v, n, 7, 9);
    free_reqs(v, n);
    v = gen_reqs("--requests 60 --users 3 --rounds 1 --doc-tokens 1024 --question-tokens 1 --answer-tokens 1", &n);
    check_prefix_relation(v, n, 512);
    check_turns(v, n, 3, 1);
    free_reqs(v, n);
}

/* Round-robin assignment, fixed-length documents of `nfull` full blocks:
 * session s starts with document s mod D's ids [s mod D · nfull, … + nfull),
 * so sessions about one document share them and others share none. */
static void test_documents_shared_round_robin(void **state)
{
    int n, docs = 6, nfull = 10000 / 512;
    req *v = gen_reqs("--documents 6 --users 10 --requests 600", &n);
    int *prev = prev_of_session(v, n), per_doc[6] = {0};
    for (int i = 0; i < n; i++) {
        if (prev[i] >= 0) continue;
        int64_t d = v[i].session % docs;
        assert_true(v[i].n > (size_t)nfull);
        for (int b = 0; b < nfull; b++) assert_int_equal(v[i].ids[b], d * nfull + b);
        assert_true(v[i].ids[nfull] >= docs * nfull); /* doc tail + question: not the document's */
        per_doc[d]++;
    }
    for (int d = 0; d < docs; d++) assert_true(per_doc[d] >= 2);
    free(prev);
    free_reqs(v, n);
}

/* Zipf assignment: every session starts with one document's blocks, and the
 * most popular document (id 0) has the most sessions. */
static void test_documents_zipf(void **state)
{
    int n, docs = 20, nfull = 4000 / 512, sessions[20] = {0};
    req *v = gen_reqs("--documents 20 --doc-tokens 4000 --doc-zipf 1.2 --users 30 --rounds 2 --requests 3000", &n);
    int *prev = prev_of_session(v, n);
    for (int i = 0; i < n; i++) {
        if (prev[i] >= 0) continue;
        int64_t d = v[i].ids[0] / nfull;
        assert_true(v[i].ids[0] % nfull == 0 && d < docs);
        for (int b = 0; b < nfull; b++) assert_int_equal(v[i].ids[b], d * nfull + b);
        sessions[d]++;
    }
    for (int d = 1; d < docs; d++)
        if (sessions[d] >= sessions[0])
            fail_msg("document %d: %d sessions, document 0: %d", d, sessions[d], sessions[0]);
    free(prev);
    free_reqs(v, n);
}

/* ---- the infinite-cache hit rate, a second implementation ------------------ */

/* A trie of seen prefixes: node (parent, id) → child, open addressing. */
typedef struct trie {
    int64_t *parent, *id, *child; /* slot arrays; child −1 = empty */
    size_t mask, nodes;
} trie;

static int64_t *trie_slot(trie *t, int64_t parent, int64_t id)
{
    size_t h = (size_t)((uint64_t)parent * 0x9E3779B97F4A7C15ull ^ (uint64_t)id * 0xC2B2AE3D27D4EB4Full) & t->mask;
    while (t->child[h] >= 0 && (t->parent[h] != parent || t->id[h] != id)) h = (h + 1) & t->mask;
    t->parent[h] = parent, t->id[h] = id;
    return &t->child[h];
}

/* Walk requests in order: hit = the leading run of ids whose prefix was seen
 * before; then every prefix of the request is seen. */
static void reference_hit_rates(const req *v, int n, int64_t block, double *blocks_rate, double *tokens_rate,
                                int64_t *distinct)
{
    size_t total = 0, cap = 1;
    for (int i = 0; i < n; i++) total += v[i].n;
    while (cap < 2 * total + 2) cap <<= 1;
    trie t = {malloc(cap * sizeof(int64_t)), malloc(cap * sizeof(int64_t)), malloc(cap * sizeof(int64_t)), cap - 1, 0};
    for (size_t s = 0; s < cap; s++) t.child[s] = -1;
    double hit_tokens = 0, tokens = 0, hit_blocks = 0;
    for (int i = 0; i < n; i++) {
        int64_t node = 0; /* the root, the empty prefix */
        size_t hit = 0;
        bool run = true;
        for (size_t j = 0; j < v[i].n; j++) {
            int64_t *c = trie_slot(&t, node, v[i].ids[j]);
            if (*c < 0) *c = (int64_t)++t.nodes, run = false;
            hit += run;
            node = *c;
        }
        hit_blocks += (double)hit;
        hit_tokens += fmin((double)hit * (double)block, (double)v[i].input);
        tokens += (double)v[i].input;
    }
    *blocks_rate = hit_blocks / (double)total;
    *tokens_rate = hit_tokens / tokens;
    *distinct = (int64_t)t.nodes;
    free(t.parent), free(t.id), free(t.child);
}

static void check_hit_rate(const char *gen_args, const char *stats_args, int64_t block)
{
    char *path = tu_temp_path(), cmd[1024];
    snprintf(cmd, sizeof cmd, "trace gen --workload multiround-qa %s -o %s", gen_args, path);
    tu_expect_exit(cmd, 0, NULL);
    FILE *f = fopen(path, "r");
    char *text = tu_slurp(f);
    fclose(f);
    int n;
    req *v = parse_reqs(text, &n);
    free(text);
    double want_blocks, want_tokens;
    int64_t want_distinct;
    reference_hit_rates(v, n, block, &want_blocks, &want_tokens, &want_distinct);
    snprintf(cmd, sizeof cmd, "trace stats --json %s %s", stats_args, path);
    json_t *j = tu_kvsim_json(cmd);
    assert_double_equal(json_real_value(json_object_get(j, "max_hit_rate_tokens")), want_tokens, 1e-9);
    assert_double_equal(json_real_value(json_object_get(j, "max_hit_rate_blocks")), want_blocks, 1e-9);
    assert_int_equal(tu_int_field(j, "distinct_blocks"), want_distinct);
    assert_true(want_tokens > 0.5 && want_tokens < 1);
    json_decref(j);
    free_reqs(v, n);
    tu_remove_temp(path);
}

static void test_max_hit_rate(void **state)
{
    check_hit_rate("", "", 512);
    check_hit_rate("--requests 800 --block-tokens 128 --doc-sigma 0.5 --doc-zipf 0.8 --users 12 --rounds 8 --seed 9",
                   "--block-tokens 128", 128);
}

/* ---- options ---------------------------------------------------------------- */

static void test_option_errors(void **state)
{
    static const struct {
        const char *args, *want;
    } cases[] = {
        {"--workload multiround-qa --rounds 0", "kvsim trace gen: --rounds must be in [1, 10000]"},
        {"--workload multiround-qa --rounds 10001", "kvsim trace gen: --rounds must be in [1, 10000]"},
        {"--workload multiround-qa --users 0", "kvsim trace gen: --users must be in [1, "},
        {"--workload multiround-qa --documents 0", "kvsim trace gen: --documents must be in [1, "},
        {"--workload multiround-qa --doc-tokens 0.5", "kvsim trace gen: --doc-tokens must be in [1, "},
        {"--workload multiround-qa --question-tokens 0", "kvsim trace gen: --question-tokens must be in [1, 32768]"},
        {"--workload multiround-qa --answer-tokens 40000", "kvsim trace gen: --answer-tokens must be in [1, 32768]"},
        {"--workload multiround-qa --doc-sigma -1", "kvsim trace gen: --doc-sigma, --question-sigma and"},
        {"--workload multiround-qa --doc-zipf -0.5", "kvsim trace gen: --doc-zipf must not be negative"},
        {"--workload multiround-qa --rate 0", "kvsim trace gen: --rate must be positive"},
        {"--workload multiround-qa --requests 0", "kvsim trace gen: --requests must be at least 1"},
        {"--workload multiround-qa --block-tokens 0", "kvsim trace gen: --block-tokens must be in [1, 2^30]"},
        {"--workload multiround-qa --users x", "kvsim trace gen: --users: 'x'"},
        {"--workload multiround-qa --passages 10",
         "kvsim trace gen: --passages does not apply to --workload multiround-qa"},
        {"--prompts 3 --workload multiround-qa",
         "kvsim trace gen: --prompts does not apply to --workload multiround-qa"},
        {"--documents 10", "kvsim trace gen: --documents does not apply to --workload conversation"},
        {"--workload rag --rounds 3", "kvsim trace gen: --rounds does not apply to --workload rag"},
        {"--workload multiqa",
         "kvsim trace gen: --workload: 'multiqa' is not a workload (conversation, rag, multiround-qa, shared-prefix)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[512];
        snprintf(args, sizeof args, "trace gen %s -o /dev/null", cases[i].args);
        tu_expect_exit(args, 2, cases[i].want);
    }
}

static void test_help(void **state)
{
    static const char *const want[] = {
        "conversation|rag|multiround-qa",
        "--workload multiround-qa:",
        "--documents N              documents (each user reads one) (default 40)",
        "--doc-tokens X             mean document tokens (drawn once each) (default 10000)",
        "--doc-zipf X               Zipf exponent of document popularity (0 = round-robin) (default 0)",
        "--users N                  concurrent users, taking turns round-robin (default 40)",
        "--rounds N                 questions per user (then a new user joins) (default 5)",
        "--question-tokens X        mean unique question tokens (default 20)",
        "--answer-tokens X          mean answer (output) tokens (default 100)",
        "--rate X                   Poisson arrival rate over all users, requests/s (QPS) (default 1)",
        "--passages N",
        "--session-prob X",
    };
    tu_expect_all("trace gen --help", want, sizeof want / sizeof want[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deterministic),    cmocka_unit_test(test_trace_reader_accepts),
        cmocka_unit_test(test_prefix_and_turns), cmocka_unit_test(test_documents_shared_round_robin),
        cmocka_unit_test(test_documents_zipf),   cmocka_unit_test(test_max_hit_rate),
        cmocka_unit_test(test_option_errors),    cmocka_unit_test(test_help),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
