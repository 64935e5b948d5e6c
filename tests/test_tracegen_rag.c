/* tests/test_tracegen_rag.c — `kvsim trace gen --workload rag`
 * (sim/trace/tracegen_rag.c, sim/cli/cmd_trace.c): a seeded segment trace of
 * a RAG workload.
 *
 * Checked on the written bytes with jansson (not with the trace reader):
 * determinism, k distinct chunks a request, one length per passage, Zipf
 * skew, the prompt layout (system prefix, chunks, unique question) and
 * input_length = Σ lengths; option misuse exits 2 naming the option; the
 * conversation workload is untouched by --workload. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <inttypes.h>

/* ---- helpers ------------------------------------------------------------ */

/* Every line of `text` parsed; *n gets the count (caller frees each and the array). */
static json_t **parse_lines(char *text, int *n)
{
    int cap = 1024;
    json_t **v = malloc((size_t)cap * sizeof *v);
    *n = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_error_t je;
        json_t *o = json_loads(line, 0, &je);
        if (!o) fail_msg("line %d: %s: %s", *n + 1, je.text, line);
        if (*n == cap) v = realloc(v, (size_t)(cap *= 2) * sizeof *v);
        v[(*n)++] = o;
    }
    return v;
}

static void free_lines(json_t **v, int n)
{
    for (int i = 0; i < n; i++) json_decref(v[i]);
    free(v);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* ---- tests ---------------------------------------------------------------- */

static void test_deterministic(void **state)
{
    char *a = tu_gen_text("--workload rag --requests 200 --seed 5");
    char *b = tu_gen_text("--requests 200 --seed 5 --workload rag");
    char *c = tu_gen_text("--workload rag --requests 200 --seed 6");
    assert_true(strlen(a) > 10000);
    assert_string_equal(a, b);
    assert_true(strcmp(a, c) != 0);
    free(a), free(b), free(c);
}

/* Passages 0..P−1: k distinct chunks per request, each passage one length,
 * the layout prefix? chunk×k prompt(null), lengths summing to input_length,
 * non-decreasing integer timestamps, no hash_ids. */
static void check_structure(json_t **v, int n, int passages, int k, int system_tokens, int *count)
{
    int *len = malloc((size_t)passages * sizeof *len);
    for (int p = 0; p < passages; p++) len[p] = -1, count[p] = 0;
    double prev = 0;
    for (int i = 0; i < n; i++) {
        assert_null(json_object_get(v[i], "hash_ids"));
        double ts = json_number_value(json_object_get(v[i], "timestamp"));
        assert_true(ts >= prev && ts == floor(ts));
        prev = ts;
        const json_t *segs = json_object_get(v[i], "segments");
        size_t nseg = json_array_size(segs), first = system_tokens > 0;
        assert_int_equal(nseg, first + (size_t)k + 1);
        int64_t sum = 0;
        for (size_t j = 0; j < nseg; j++) sum += tu_int_field(json_array_get(segs, j), "len");
        assert_int_equal(sum, tu_int_field(v[i], "input_length"));
        if (first) {
            const json_t *pre = json_array_get(segs, 0);
            assert_string_equal(json_string_value(json_object_get(pre, "k")), "prefix");
            assert_int_equal(tu_int_field(pre, "len"), system_tokens);
            assert_int_equal(json_array_size(json_object_get(pre, "hash_ids")), (system_tokens + 511) / 512);
        }
        const json_t *q = json_array_get(segs, nseg - 1);
        assert_string_equal(json_string_value(json_object_get(q, "k")), "prompt");
        assert_true(json_is_null(json_object_get(q, "id")));
        for (size_t j = first; j < first + (size_t)k; j++) {
            const json_t *s = json_array_get(segs, j);
            assert_string_equal(json_string_value(json_object_get(s, "k")), "chunk");
            int64_t id = tu_int_field(s, "id"), l = tu_int_field(s, "len");
            assert_true(id >= 0 && id < passages && l >= 1);
            if (len[id] < 0) len[id] = (int)l;
            assert_int_equal(len[id], l);
            for (size_t m = first; m < j; m++) assert_true(tu_int_field(json_array_get(segs, m), "id") != id);
            count[id]++;
        }
    }
    free(len);
}

static void test_structure_and_zipf(void **state)
{
    char *text =
        tu_gen_text("--workload rag --requests 2000 --passages 50 --k 7 --zipf 1 --system-tokens 600 --seed 3");
    int n, count[50], sorted[50];
    json_t **v = parse_lines(text, &n);
    assert_int_equal(n, 2000);
    check_structure(v, n, 50, 7, 600, count);
    /* Zipf 1 over 50 passages, 7 distinct draws: passage 0 is in nearly
     * every request, the median one in far fewer. */
    memcpy(sorted, count, sizeof sorted);
    qsort(sorted, 50, sizeof *sorted, cmp_int);
    int median = sorted[25];
    if (!(count[0] > median)) fail_msg("most popular passage %d times, median %d", count[0], median);
    assert_int_equal(sorted[49], count[0]);
    free_lines(v, n);
    free(text);
}

/* k = P: every passage in every request (the scan fallback); no system prompt. */
static void test_k_equals_passages(void **state)
{
    char *text = tu_gen_text("--workload rag --requests 50 --passages 12 --k 12 --zipf 3 --system-tokens 0 --seed 9");
    int n, count[12];
    json_t **v = parse_lines(text, &n);
    assert_int_equal(n, 50);
    check_structure(v, n, 12, 12, 0, count);
    for (int p = 0; p < 12; p++) assert_int_equal(count[p], 50);
    free_lines(v, n);
    free(text);
}

/* zipf 0: uniform, so no passage is much more popular than another. */
static void test_uniform(void **state)
{
    char *text = tu_gen_text("--workload rag --requests 3000 --passages 20 --k 2 --zipf 0 --seed 4");
    int n, count[20];
    json_t **v = parse_lines(text, &n);
    check_structure(v, n, 20, 2, 64, count);
    /* 6000 picks over 20 passages: 300 ± 17 each; allow ±6 sd */
    for (int p = 0; p < 20; p++)
        if (count[p] < 200 || count[p] > 400) fail_msg("passage %d picked %d times", p, count[p]);
    free_lines(v, n);
    free(text);
}

static void test_defaults(void **state)
{
    char *text = tu_gen_text("--workload rag");
    int n, count[500];
    json_t **v = parse_lines(text, &n);
    assert_int_equal(n, 300);
    check_structure(v, n, 500, 10, 64, count);
    free_lines(v, n);
    free(text);
}

/* --workload conversation is the default generator, byte for byte. */
static void test_conversation_unchanged(void **state)
{
    char *a = tu_gen_text("--requests 300 --seed 2");
    char *b = tu_gen_text("--workload conversation --requests 300 --seed 2");
    assert_string_equal(a, b);
    assert_non_null(strstr(a, "\"hash_ids\": ["));
    free(a), free(b);
}

static void test_option_errors(void **state)
{
    static const struct {
        const char *args, *want;
    } cases[] = {
        {"--workload rag --k 0", "kvsim trace gen: --k must be at least 1"},
        {"--workload rag --passages 5 --k 6", "kvsim trace gen: --k (6) must not exceed --passages (5)"},
        {"--workload rag --passages 0", "kvsim trace gen: --passages must be in [1, "},
        {"--workload rag --passage-mean 0", "kvsim trace gen: --passage-mean must be positive"},
        {"--workload rag --question-sigma -1", "kvsim trace gen: --passage-sigma, --question-sigma and"},
        {"--workload rag --system-tokens -3", "kvsim trace gen: --system-tokens: '-3'"},
        {"--workload rag --zipf -1", "kvsim trace gen: --zipf must not be negative"},
        {"--workload rag --rate 0", "kvsim trace gen: --rate must be positive"},
        {"--workload rag --k x", "kvsim trace gen: --k: 'x'"},
        {"--passages 10", "kvsim trace gen: --passages does not apply to --workload conversation"},
        {"--k 3 --workload conversation", "kvsim trace gen: --k does not apply to --workload conversation"},
        {"--workload rag --prompts 3", "kvsim trace gen: --prompts does not apply to --workload rag"},
        {"--arrivals-from x --workload rag", "kvsim trace gen: --arrivals-from does not apply to --workload rag"},
        {"--workload chat",
         "kvsim trace gen: --workload: 'chat' is not a workload (conversation, rag, multiround-qa, shared-prefix)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[512];
        snprintf(args, sizeof args, "trace gen %s -o /dev/null", cases[i].args);
        tu_expect_exit(args, 2, cases[i].want);
    }
}

static void test_help(void **state)
{
    static const char *const want[] = {"--workload NAME", "--workload rag:", "--passages N",      "(default 500)",
                                       "--k N",           "(default 10)",    "--system-tokens N", "--question-mean X",
                                       "--prompts N",     "--session-prob X"};
    tu_expect_all("trace gen --help", want, sizeof want / sizeof want[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deterministic),     cmocka_unit_test(test_structure_and_zipf),
        cmocka_unit_test(test_k_equals_passages), cmocka_unit_test(test_uniform),
        cmocka_unit_test(test_defaults),          cmocka_unit_test(test_conversation_unchanged),
        cmocka_unit_test(test_option_errors),     cmocka_unit_test(test_help),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
