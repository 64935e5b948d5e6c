/* tests/test_trace_import.c — `kvsim trace import azure|burstgpt` (length-
 * only CSV traces → Mooncake JSONL, sim/trace/csvimport.c) and
 * `kvsim trace rechunk` (coarser hash blocks, sim/trace/rechunk.c), with
 * the block-size line and warning of `kvsim trace stats`.
 *
 * The CSV fixtures (tests/fixtures/csv) are hand-made and their expected
 * lines worked out by hand: Azure rows 2023-11-16 18:15:46.6805900 and
 * 18:15:50.9950700 are 4,314.48 ms apart, BurstGPT rows at 5 s and 45 s
 * 40,000 ms apart; ids are fresh, ceil(input / 512) per request. The
 * rechunk of the bundled conversation trace is checked against an
 * independent count: a trie of 512-token id prefixes (no XXH3 chaining),
 * where a 1,024-token block is the trie node at its last fine id. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <zlib.h>

#define AZURE    "tests/fixtures/csv/azure-mini.csv"
#define BURSTGPT "tests/fixtures/csv/burstgpt-mini.csv"

static const char azure_expected[] =
    "{\"timestamp\": 0, \"input_length\": 4808, \"output_length\": 10, \"hash_ids\": [0, 1, 2, 3, 4, 5, 6, 7, 8, "
    "9]}\n"
    "{\"timestamp\": 4314.48, \"input_length\": 3180, \"output_length\": 8, \"hash_ids\": [10, 11, 12, 13, 14, 15, "
    "16]}\n"
    /* 14 days + 23:59:59.9999999 − 18:15:46.6805900 later; then 0.2 µs */
    "{\"timestamp\": 1230253319.4099, \"input_length\": 512, \"output_length\": 1, \"hash_ids\": [17]}\n"
    "{\"timestamp\": 1230253319.4101, \"input_length\": 513, \"output_length\": 300, \"hash_ids\": [18, 19]}\n";

static const char burstgpt_expected[] =
    "{\"timestamp\": 0, \"input_length\": 472, \"output_length\": 18, \"hash_ids\": [0]}\n"
    "{\"timestamp\": 40000, \"input_length\": 1026, \"output_length\": 221, \"hash_ids\": [1, 2, 3]}\n"
    "{\"timestamp\": 55500, \"input_length\": 2048, \"output_length\": 100, \"hash_ids\": [4, 5, 6, 7]}\n";

static void expect_import(const char *args, const char *out, const char *const *err_needles)
{
    cli_result r = tu_kvsim(args);
    if (r.status != 0) fail_msg("%s: exit %d: %s", args, r.status, r.err);
    assert_string_equal(r.out, out);
    for (; *err_needles; err_needles++)
        if (!strstr(r.err, *err_needles)) fail_msg("%s: stderr lacks '%s':\n%s", args, *err_needles, r.err);
    tu_free(&r);
}

static void test_azure(void **state)
{
    (void)state;
    const char *notes[] = {"wrote 4 requests from 6 azure row(s)",
                           "1 row(s) of 0 input tokens skipped (the first: " AZURE ":4)",
                           "1 failed row(s) (0 output tokens) skipped (the first: " AZURE ":5)",
                           "20 fresh hash blocks of 512 tokens",
                           "no prefix information, so no block is shared",
                           NULL};
    expect_import("trace import azure " AZURE " -o -", azure_expected, notes);
    /* --limit 2: the first two requests; --block-tokens 1024: ceil(4808 / 1024) = 5 */
    const char *limited[] = {"wrote 2 requests", "(stopped at --limit)", NULL};
    expect_import("trace import azure " AZURE " -o - --limit 2 --block-tokens 1024",
                  "{\"timestamp\": 0, \"input_length\": 4808, \"output_length\": 10, \"hash_ids\": [0, 1, 2, 3, 4]}\n"
                  "{\"timestamp\": 4314.48, \"input_length\": 3180, \"output_length\": 8, \"hash_ids\": [5, 6, 7, "
                  "8]}\n",
                  limited);
}

static void test_burstgpt(void **state)
{
    (void)state;
    const char *notes[] = {"wrote 3 requests from 5 burstgpt row(s)",
                           "1 row(s) of 0 input tokens skipped (the first: " BURSTGPT ":5)",
                           "1 failed row(s) (0 output tokens) skipped (the first: " BURSTGPT ":3)", NULL};
    expect_import("trace import burstgpt " BURSTGPT " -o -", burstgpt_expected, notes);
    /* ChatGPT API log rows: line 5 (0 input, skipped) and line 6; the others filtered */
    const char *filtered[] = {"wrote 1 requests", "3 row(s) of another --model / --log-type left out", NULL};
    expect_import("trace import burstgpt " BURSTGPT " -o - --model ChatGPT --log-type 'API log'",
                  "{\"timestamp\": 0, \"input_length\": 2048, \"output_length\": 100, \"hash_ids\": [0, 1, 2, 3]}\n",
                  filtered);
}

/* What the importer writes, the trace reader reads: every block distinct,
 * an infinite-cache hit rate of 0, 55.5 s from first to last. */
static void test_reader_reads_it(void **state)
{
    (void)state;
    char *out = tu_temp_path(), args[512];
    snprintf(args, sizeof args, "%s trace import burstgpt " BURSTGPT " -o %s 2>/dev/null", tu_kvsim_bin(), out);
    cli_result r = tu_shell(args);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    snprintf(args, sizeof args, "trace stats --json %s", out);
    json_t *o = tu_kvsim_json(args);
    assert_int_equal(tu_int_field(o, "requests"), 3);
    assert_int_equal(tu_int_field(o, "blocks"), 8);
    assert_int_equal(tu_int_field(o, "distinct_blocks"), 8);
    assert_true(json_real_value(json_object_get(o, "max_hit_rate_blocks")) == 0);
    assert_true(json_real_value(json_object_get(o, "duration_s")) == 55.5);
    json_decref(o);
    unlink(out);
    free(out);
}

/* A gzip copy (zlib writes it) imports to the same lines. */
static void test_gzip_input(void **state)
{
    (void)state;
    char *path = tu_temp_path();
    FILE *f = fopen(BURSTGPT, "r");
    char *text = tu_slurp(f);
    fclose(f);
    gzFile g = gzopen(path, "wb");
    assert_int_equal(gzputs(g, text), (int)strlen(text));
    assert_int_equal(gzclose(g), Z_OK);
    char args[512];
    snprintf(args, sizeof args, "trace import burstgpt %s -o -", path);
    const char *none[] = {NULL};
    expect_import(args, burstgpt_expected, none);
    free(text);
    unlink(path);
    free(path);
}

/* A CSV of `text` imported as `format` exits 2 with `needle` (file:line: column: ...). */
static void expect_csv_error(const char *format, const char *text, const char *needle)
{
    char *path = tu_write_temp(text);
    char args[512], full[512];
    snprintf(args, sizeof args, "trace import %s %s -o /dev/null", format, path);
    snprintf(full, sizeof full, "%s%s", path, needle);
    tu_expect_exit(args, 2, full);
    unlink(path);
    free(path);
}

#define AZ_HEAD "TIMESTAMP,ContextTokens,GeneratedTokens\n"
#define BG_HEAD "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"

static void test_errors(void **state)
{
    (void)state;
    expect_csv_error("azure", AZ_HEAD "2023-11-16 18:15:46.68,10,1\n\n2023-11-16 18:15:46.5,10,1\n",
                     ":4: TIMESTAMP: earlier than line 2's");
    expect_csv_error("azure", AZ_HEAD "2023-02-29 18:15:45,10,1\n",
                     ":2: TIMESTAMP: '2023-02-29 18:15:45' is not a time");
    expect_csv_error("azure", AZ_HEAD "2023-11-16 18:15:45.1234567890,10,1\n", ":2: TIMESTAMP:");
    expect_csv_error("azure", AZ_HEAD "2023-11-16 18:15:45,1x0,1\n", ":2: ContextTokens: '1x0' is not a token count");
    expect_csv_error("azure", AZ_HEAD "2023-11-16 18:15:45,10,99999999999\n", ":2: GeneratedTokens:");
    expect_csv_error("azure", AZ_HEAD "2023-11-16 18:15:45,10\n", ":2: 2 column(s), but the azure format has 3");
    /* Found by fuzzing (tests/fuzz/fuzz_csv.c): a year outside the int64 ns
     * clock's 1677..2262 overflowed the ns count (undefined behaviour) */
    expect_csv_error("azure", AZ_HEAD "1448-05-10 00:00:00,1,1\n",
                     ":2: TIMESTAMP: '1448-05-10 00:00:00' is before 1970");
    expect_csv_error("azure", AZ_HEAD "2024-05-10 00:00:00,1,1\n2263-01-01 00:00:00,1,1\n",
                     ":3: TIMESTAMP: '2263-01-01 00:00:00' is after 2262 (the ns clock's range)");
    expect_csv_error("azure", AZ_HEAD "9999-12-31 23:59:59.999999999,1,1\n",
                     ":2: TIMESTAMP: '9999-12-31 23:59:59.999999999' is after 2262");
    expect_csv_error("azure", "TIMESTAMP,Context,GeneratedTokens\n",
                     ":1: column 2 is 'Context', but the azure format's header names it 'ContextTokens'");
    expect_csv_error("azure", "", ": empty (expected the azure header line)");
    expect_csv_error("azure", AZ_HEAD "2023-11-16 18:15:45,0,1\n", ": no requests (1 row(s): 0 filtered, 1 of 0");
    expect_csv_error("burstgpt", BG_HEAD "1e3,ChatGPT,1,1,2,API log\n", ":2: Timestamp: '1e3' is not seconds");
    expect_csv_error("burstgpt", BG_HEAD "-1,ChatGPT,1,1,2,API log\n", ":2: Timestamp:");
    expect_csv_error("burstgpt", BG_HEAD "1,\"ChatGPT,1,1,2,API log\n", ":2: a quoted column is not closed");
    expect_csv_error("burstgpt", BG_HEAD "1,ChatGPT,1,1,,API log\n", ":2: Total tokens: empty");
    tu_expect_exit("trace import csv x -o -", 2, "unknown format 'csv' (supported: ragpulse, azure, burstgpt)");
    tu_expect_exit("trace import azure " AZURE " -o - --model GPT-4", 2, "--model and --log-type are for burstgpt");
    tu_expect_exit("trace import azure " AZURE " -o - --limit 0", 2, "--limit must be at least 1");
    tu_expect_exit("trace import ragpulse " RAGPULSE_SAMPLE " -o - --limit 3", 2, "are for the CSV formats");
}

/* Quoted columns (RFC 4180) hold commas and "" quotes. */
static void test_quoted(void **state)
{
    (void)state;
    char *path = tu_write_temp(BG_HEAD "1.5,\"GPT-4, \"\"x\"\"\",1,1,2,API log\n");
    char args[512];
    snprintf(args, sizeof args, "trace import burstgpt %s -o - --model 'GPT-4, \"x\"'", path);
    const char *none[] = {NULL};
    expect_import(args, "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [0]}\n", none);
    unlink(path);
    free(path);
}

/* Peak RSS (KiB) of `kvsim trace import azure path -o /dev/null`. */
static long import_rss(const char *path)
{
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1), dup2(null, 2);
        execl(tu_kvsim_bin(), "kvsim", "trace", "import", "azure", path, "-o", "/dev/null", (char *)NULL);
        _exit(127);
    }
    int status;
    struct rusage ru;
    assert_int_equal(wait4(pid, &status, 0, &ru), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return ru.ru_maxrss;
}

static char *big_csv(long rows)
{
    char *path = tu_temp_path();
    FILE *f = fopen(path, "w");
    fputs(AZ_HEAD, f);
    for (long i = 0; i < rows; i++)
        fprintf(f, "2024-05-10 %02ld:%02ld:%02ld.%07ld,%ld,%ld\n", i / 3600000 % 24, i / 60000 % 60, i / 1000 % 60,
                i % 1000 * 10000, 100 + i % 4000, 1 + i % 300);
    fclose(f);
    return path;
}

/* The import streams: 500,000 rows (17 MB of CSV) take no more memory than
 * 1,000 (within 4 MiB; holding even 24 bytes a row would take 12 MB). */
static void test_streams(void **state)
{
    (void)state;
    char *small = big_csv(1000), *big = big_csv(500000);
    long a = import_rss(small), b = import_rss(big);
    if (b - a > 4096) fail_msg("peak RSS %ld KiB for 500,000 rows vs %ld KiB for 1,000", b, a);
    unlink(small), unlink(big);
    free(small), free(big);
}

/* ---- trace rechunk ---------------------------------------------------------- */

/* The independent count: a trie of fine-id prefixes (node = (parent, id)),
 * in a plain open-addressing table. */
typedef struct trie {
    int64_t *parent, *id, *node;
    size_t cap, n;
} trie;

static int64_t trie_child(trie *t, int64_t parent, int64_t id)
{
    if (2 * (t->n + 1) > t->cap) {
        trie old = *t;
        t->cap = old.cap ? 2 * old.cap : 1 << 16;
        t->parent = malloc(t->cap * sizeof *t->parent), t->id = malloc(t->cap * sizeof *t->id);
        t->node = malloc(t->cap * sizeof *t->node);
        for (size_t b = 0; b < t->cap; b++) t->node[b] = -1;
        t->n = 0;
        for (size_t b = 0; b < old.cap; b++)
            if (old.node[b] >= 0) {
                size_t h = ((uint64_t)old.parent[b] * 1000003u ^ (uint64_t)old.id[b]) * 0x9E3779B97F4A7C15ull >> 20;
                for (h &= t->cap - 1; t->node[h] >= 0; h = (h + 1) & (t->cap - 1)) {
                }
                t->parent[h] = old.parent[b], t->id[h] = old.id[b], t->node[h] = old.node[b], t->n++;
            }
        free(old.parent), free(old.id), free(old.node);
    }
    size_t h = ((uint64_t)parent * 1000003u ^ (uint64_t)id) * 0x9E3779B97F4A7C15ull >> 20;
    for (h &= t->cap - 1; t->node[h] >= 0; h = (h + 1) & (t->cap - 1))
        if (t->parent[h] == parent && t->id[h] == id) return t->node[h];
    t->parent[h] = parent, t->id[h] = id, t->node[h] = (int64_t)t->n++;
    return t->node[h];
}

/* Read a JSONL trace (plain or gzip) line by line. */
static json_t *next_line(gzFile g, char *buf, size_t n)
{
    if (!gzgets(g, buf, (int)n)) return NULL;
    assert_non_null(strchr(buf, '\n'));
    json_t *o = json_loads(buf, 0, NULL);
    assert_non_null(o);
    return o;
}

/* The conversation trace (512-token ids) rechunked to 1,024: every coarse
 * id must be the first-appearance number of the trie node ending its fine
 * ids (the last, partial block: the request's last fine id), and the
 * reuse (blocks seen before) must be the trie's. */
static void test_rechunk_conversation(void **state)
{
    (void)state;
    char *out = tu_temp_path(), args[512];
    snprintf(args, sizeof args, "trace rechunk " MOONCAKE_CONVERSATION " --block-tokens 1024 -o %s", out);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    gzFile in = gzopen(MOONCAKE_CONVERSATION, "rb"), co = gzopen(out, "rb");
    static char a[1 << 20], b[1 << 20];
    trie t = {0};
    int64_t *number = calloc(1 << 20, sizeof *number), next = 0, blocks = 0, reused = 0, lines = 0;
    json_t *x, *y;
    while ((x = next_line(in, a, sizeof a))) {
        assert_non_null(y = next_line(co, b, sizeof b));
        json_t *fine = json_object_get(x, "hash_ids"), *coarse = json_object_get(y, "hash_ids");
        size_t n = json_array_size(fine), k = 0;
        assert_int_equal(json_array_size(coarse), (n + 1) / 2);
        int64_t node = -1;
        for (size_t i = 0; i < n; i++) {
            node = trie_child(&t, node, json_integer_value(json_array_get(fine, i)));
            if (i % 2 == 0 && i + 1 < n) continue;
            assert_true(node < 1 << 20);
            if (number[node]) reused++;
            else number[node] = ++next;
            assert_int_equal(json_integer_value(json_array_get(coarse, k++)), number[node] - 1);
            blocks++;
        }
        assert_int_equal(json_integer_value(json_object_get(y, "input_length")),
                         json_integer_value(json_object_get(x, "input_length")));
        json_decref(x), json_decref(y);
        lines++;
    }
    assert_null(next_line(co, b, sizeof b));
    /* the figures kvsim trace rechunk and stats print for it */
    assert_int_equal(lines, 12031);
    assert_int_equal(blocks, 147055);
    assert_int_equal(next, 98916);
    assert_int_equal(reused, 147055 - 98916);
    gzclose(in), gzclose(co);
    free(number), free(t.parent), free(t.id), free(t.node);
    unlink(out);
    free(out);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* --ids key shares exactly the blocks that the first-appearance numbering
 * shares: line by line and id by id, the two outputs map one to one (each
 * number always gets the same key id, and no two numbers share one); every
 * other field is the same, and the counts are said not to be counted. */
static void test_rechunk_key_ids(void **state)
{
    (void)state;
    char *first = tu_temp_path(), *key = tu_temp_path(), args[512];
    snprintf(args, sizeof args, "trace rechunk " MOONCAKE_CONVERSATION " --block-tokens 1024 -o %s", first);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    snprintf(args, sizeof args, "trace rechunk " MOONCAKE_CONVERSATION " --block-tokens 1024 --ids key -o %s", key);
    r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "288500 blocks of 512 tokens became 147055 blocks of 1024 tokens (ids: chained "
                                  "keys; distinct blocks not counted)"));
    tu_free(&r);
    gzFile a = gzopen(first, "rb"), b = gzopen(key, "rb");
    static char la[1 << 20], lb[1 << 20];
    enum { NUMBERS = 98916 };
    int64_t *of = calloc(NUMBERS, sizeof *of), blocks = 0;
    bool *seen = calloc(NUMBERS, sizeof *seen);
    json_t *x, *y;
    while ((x = next_line(a, la, sizeof la))) {
        assert_non_null(y = next_line(b, lb, sizeof lb));
        json_t *n = json_object_get(x, "hash_ids"), *k = json_object_get(y, "hash_ids");
        assert_int_equal(json_array_size(k), json_array_size(n));
        for (size_t i = 0; i < json_array_size(n); i++, blocks++) {
            int64_t num = json_integer_value(json_array_get(n, i)), id = json_integer_value(json_array_get(k, i));
            assert_true(num >= 0 && num < NUMBERS && id >= 0);
            if (seen[num]) assert_int_equal(of[num], id);
            seen[num] = true, of[num] = id;
        }
        json_object_del(x, "hash_ids"), json_object_del(y, "hash_ids");
        assert_true(json_equal(x, y));
        json_decref(x), json_decref(y);
    }
    assert_null(next_line(b, lb, sizeof lb));
    assert_int_equal(blocks, 147055);
    qsort(of, NUMBERS, sizeof *of, cmp_i64); /* one to one: NUMBERS distinct key ids */
    for (int i = 0; i < NUMBERS; i++) assert_true(seen[i] && (i == 0 || of[i] != of[i - 1]));
    gzclose(a), gzclose(b);
    free(of), free(seen);
    unlink(first), unlink(key);
    free(first), free(key);
}

/* 512 → 1024 → 2048 gives the same bytes as 512 → 2048; 512 → 512 keeps
 * the trace's block structure (the same distinct count as trace stats). */
static void test_rechunk_compose(void **state)
{
    (void)state;
    char *p1 = tu_temp_path(), *p2 = tu_temp_path(), *p3 = tu_temp_path(), args[1024];
    snprintf(args, sizeof args,
             "(%1$s trace rechunk " MOONCAKE_TRACE " --block-tokens 1024 -o %2$s && "
             "%1$s trace rechunk %2$s --from-block-tokens 1024 --block-tokens 2048 -o %3$s && "
             "%1$s trace rechunk " MOONCAKE_TRACE " --block-tokens 2048 -o %4$s) 2>/dev/null && cmp %3$s %4$s",
             tu_kvsim_bin(), p1, p2, p3);
    cli_result r = tu_shell(args);
    if (r.status) fail_msg("%s: %s", args, r.err);
    tu_free(&r);
    snprintf(args, sizeof args, "trace rechunk " MOONCAKE_TRACE " --block-tokens 512 -o -");
    r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "121877 blocks of 512 tokens (43924 distinct) became 121877 blocks of 512 tokens "
                                  "(43924 distinct)"));
    tu_free(&r);
    unlink(p1), unlink(p2), unlink(p3);
    free(p1), free(p2), free(p3);
}

/* A partial last coarse block stays distinct from a full one; other
 * fields are kept; a request whose ids stop short keeps only full blocks. */
static void test_rechunk_hand(void **state)
{
    (void)state;
    char *in = tu_write_temp(
        "{\"timestamp\": 4314.48, \"input_length\": 1536, \"output_length\": 5, \"hash_ids\": [1, 2, 3], "
        "\"session\": 7}\n"
        "{\"timestamp\": 4315, \"input_length\": 1024, \"output_length\": 5, \"hash_ids\": [1, 2]}\n"
        "{\"timestamp\": 4316, \"input_length\": 2048, \"output_length\": 5, \"hash_ids\": [1, 2, 3, 4]}\n"
        "{\"timestamp\": 4317, \"input_length\": 2048, \"output_length\": 5, \"hash_ids\": [1, 2, 3]}\n");
    char args[512];
    snprintf(args, sizeof args, "trace rechunk %s --block-tokens 1024 -o -", in);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out,
                        "{\"timestamp\": 4314.48, \"input_length\": 1536, \"output_length\": 5, \"hash_ids\": "
                        "[0, 1], \"session\": 7}\n"
                        "{\"timestamp\": 4315, \"input_length\": 1024, \"output_length\": 5, \"hash_ids\": [0]}\n"
                        "{\"timestamp\": 4316, \"input_length\": 2048, \"output_length\": 5, \"hash_ids\": [0, "
                        "2]}\n"
                        "{\"timestamp\": 4317, \"input_length\": 2048, \"output_length\": 5, \"hash_ids\": "
                        "[0]}\n");
    tu_free(&r);
    unlink(in);
    free(in);
}

static void test_rechunk_refusals(void **state)
{
    (void)state;
    tu_expect_exit("trace rechunk " MOONCAKE_TRACE " --block-tokens 256 -o /dev/null", 2,
                   "--block-tokens 256 is finer than the trace's 512-token blocks: splitting a block would invent "
                   "prefix structure");
    tu_expect_exit("trace rechunk " MOONCAKE_TRACE " --block-tokens 768 -o /dev/null", 2,
                   "--block-tokens 768 is not a multiple of the trace's 512-token blocks");
    tu_expect_exit("trace rechunk " MOONCAKE_TRACE " --from-block-tokens 1024 --block-tokens 2048 -o /dev/null", 2,
                   MOONCAKE_TRACE ":1: hash_ids: 79 ids, but input_length 40160 makes ceil(40160 / 1024) = 40");
    tu_expect_exit("trace rechunk " MOONCAKE_TRACE " -o /dev/null", 2, "--block-tokens N is required");
    char *seg = tu_write_temp("{\"timestamp\": 0, \"input_length\": 3, \"output_length\": 1, \"segments\": "
                              "[{\"k\": \"chunk\", \"id\": 1, \"len\": 3}]}\n");
    char args[512], needle[512];
    snprintf(args, sizeof args, "trace rechunk %s --block-tokens 1024 -o /dev/null", seg);
    snprintf(needle, sizeof needle, "%s:1: segments: a segment trace", seg);
    tu_expect_exit(args, 2, needle);
    unlink(seg);
    free(seg);
}

/* trace stats says the block size it assumes and warns when ids do not fit it. */
static void test_stats_block_fit(void **state)
{
    (void)state;
    cli_result r = tu_kvsim("trace stats " MOONCAKE_TRACE);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "block size       512 tokens"));
    assert_null(strstr(r.err, "warning"));
    tu_free(&r);
    char *out = tu_temp_path(), args[512];
    snprintf(args, sizeof args,
             "%1$s trace rechunk " MOONCAKE_TRACE " --block-tokens 1024 -o %2$s 2>/dev/null && %1$s trace stats %2$s",
             tu_kvsim_bin(), out);
    r = tu_shell(args);
    assert_int_equal(r.status, 0);
    char needle[512];
    snprintf(needle, sizeof needle,
             "warning: 2886 of 3993 requests have fewer hash_ids than ceil(input_length / 512) (the first: %s:1): "
             "blocks of 1024 tokens fit every request: give --block-tokens 1024",
             out);
    if (!strstr(r.err, needle)) fail_msg("stderr lacks '%s':\n%s", needle, r.err);
    tu_free(&r);
    snprintf(args, sizeof args, "trace stats --block-tokens 1024 %s", out);
    r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "block size       1024 tokens"));
    assert_null(strstr(r.err, "warning"));
    tu_free(&r);
    unlink(out);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_azure),           cmocka_unit_test(test_burstgpt),
        cmocka_unit_test(test_reader_reads_it), cmocka_unit_test(test_gzip_input),
        cmocka_unit_test(test_errors),          cmocka_unit_test(test_quoted),
        cmocka_unit_test(test_streams),         cmocka_unit_test(test_rechunk_conversation),
        cmocka_unit_test(test_rechunk_key_ids), cmocka_unit_test(test_rechunk_compose),
        cmocka_unit_test(test_rechunk_hand),    cmocka_unit_test(test_rechunk_refusals),
        cmocka_unit_test(test_stats_block_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
