/* tests/test_gzip.c — gzip-compressed traces (sim/infile.h) and the public
 * traces bundled under traces/.
 *
 * A gzip copy of a trace must be the same trace to every command that
 * reads one — `trace stats`, `run`, `hitrate`, `trace gen --arrivals-from`,
 * `trace import ragpulse`, a pipe on stdin — with the same fingerprint (the
 * decompressed text's XXH64). Compression is recognised by content: the
 * copies here are named without ".gz". A corrupt or truncated gzip file,
 * or one with bytes after its gzip stream that are not another member,
 * exits 2 naming the file, never reads as a shorter trace; members one
 * after another read as one stream; a zstd file is refused, saying how to
 * decompress it. The bundled conversation trace has
 * Mooncake's published 12,031 requests (FAST'25 Table 3); its block counts
 * were computed by a separate Python reading of the file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <sys/stat.h>
#include <zlib.h>

#include "tests/testutil.h"

#define DEFAULT_TRACE "traces/default.jsonl"
#define DEFAULT_FP    "0210c303cbfa5e1b" /* XXH64 of traces/default.jsonl (traces/README.md) */
#define MINI          "tests/fixtures/ragpulse-mini"

/* ---- helpers ------------------------------------------------------------ */

static char *slurp_path(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("%s: cannot open", path);
    char *buf = tu_slurp(f);
    *n = (size_t)ftell(f);
    fclose(f);
    return buf;
}

static void write_bytes(const char *path, const char *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* Files a and b hold the same bytes. */
static void expect_same_bytes(const char *a, const char *b)
{
    size_t na, nb;
    char *x = slurp_path(a, &na), *y = slurp_path(b, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(x, y, na);
    free(x);
    free(y);
}

/* A gzip copy of src at dst (zlib, not kvsim, writes it). */
static void gzip_to(const char *src, const char *dst)
{
    size_t n;
    char *text = slurp_path(src, &n);
    gzFile g = gzopen(dst, "wb9");
    assert_non_null(g);
    assert_int_equal(gzwrite(g, text, (unsigned)n), (int)n);
    assert_int_equal(gzclose(g), Z_OK);
    free(text);
}

/* A temp file (no ".gz" in its name) holding a gzip copy of src. */
static char *gzip_temp(const char *src)
{
    char *path = tu_temp_path();
    gzip_to(src, path);
    return path;
}

/* `kvsim ARGS` as JSON with the keys that name the input or the moment
 * (trace, wall_seconds, run_id) removed, dumped with sorted keys. */
static char *json_without_names(const char *args)
{
    json_t *j = tu_kvsim_json(args);
    json_object_del(j, "trace");
    json_object_del(j, "wall_seconds");
    json_object_del(j, "run_id");
    char *s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(j);
    return s;
}

/* The same command on the plain trace and on its gzip copy (the "%s" in
 * fmt is the trace) prints the same JSON, the trace's name aside. */
static void expect_same_output(const char *fmt, const char *plain, const char *gz)
{
    char a[1024], b[1024];
    snprintf(a, sizeof a, fmt, plain);
    snprintf(b, sizeof b, fmt, gz);
    char *x = json_without_names(a), *y = json_without_names(b);
    if (strcmp(x, y)) fail_msg("kvsim %s\n  %s\nkvsim %s\n  %s", a, x, b, y);
    free(x);
    free(y);
}

/* ---- the same trace, compressed or not ------------------------------------ */

static void test_stats_same_and_fingerprint(void **state)
{
    char *gz = gzip_temp(DEFAULT_TRACE);
    expect_same_output("trace stats --json %s", DEFAULT_TRACE, gz);
    char args[600];
    snprintf(args, sizeof args, "trace stats --json %s", gz);
    json_t *j = tu_kvsim_json(args);
    assert_string_equal(json_string_value(json_object_get(j, "fingerprint")), DEFAULT_FP);
    assert_int_equal(tu_int_field(j, "requests"), 1500);
    json_decref(j);
    /* a pipe on stdin is spooled decompressed: same fingerprint again */
    snprintf(args, sizeof args, "cat %s | %s trace stats --json -", gz, tu_kvsim_bin());
    cli_result r = tu_shell(args);
    if (r.status != 0) fail_msg("%s: exit %d: %s", args, r.status, r.err);
    assert_non_null(strstr(r.out, "\"" DEFAULT_FP "\""));
    tu_free(&r);
    tu_remove_temp(gz);
}

static void test_run_same_and_fingerprint(void **state)
{
    char *gz = gzip_temp(DEFAULT_TRACE), *db = tu_temp_path(), args[600];
    expect_same_output("run --json --trace %s --set kvstore.dram_bytes=8GiB", DEFAULT_TRACE, gz);
    snprintf(args, sizeof args, "run --trace %s --db %s", gz, db);
    tu_expect_exit(args, 0, NULL);
    char *fp = tu_sql_text(db, "SELECT trace_fingerprint FROM runs");
    assert_string_equal(fp, DEFAULT_FP);
    free(fp);
    tu_remove_temp(db);
    tu_remove_temp(gz);
}

static void test_hitrate_and_plan_same(void **state)
{
    char *gz = gzip_temp(DEFAULT_TRACE);
    expect_same_output("hitrate --json --trace %s --capacity-tokens 1e5,1e6,inf", DEFAULT_TRACE, gz);
    expect_same_output("plan --json --trace %s --target 0.9", DEFAULT_TRACE, gz);
    tu_remove_temp(gz);
}

static void test_arrivals_from_gz(void **state)
{
    char *gz = gzip_temp(DEFAULT_TRACE), *a = tu_temp_path(), *b = tu_temp_path(), args[800];
    snprintf(args, sizeof args, "trace gen --requests 200 --arrivals-from %s -o %s", DEFAULT_TRACE, a);
    tu_expect_exit(args, 0, "wrote 200 requests");
    snprintf(args, sizeof args, "trace gen --requests 200 --arrivals-from %s -o %s", gz, b);
    tu_expect_exit(args, 0, "wrote 200 requests");
    expect_same_bytes(a, b);
    tu_remove_temp(a);
    tu_remove_temp(b);
    tu_remove_temp(gz);
}

/* The RAGPulse importer reads NAME or NAME.gz: the mini directory with
 * every file gzip'd (as NAME.gz) imports to the same bytes. */
static void test_ragpulse_gz_directory(void **state)
{
    static const char *const files[] = {"0_trace.jsonl",   "1_sys_prompt.jsonl", "2_passages.jsonl",
                                        "3_history.jsonl", "4_user_input.jsonl", "5_web_search.jsonl"};
    char dir[] = "/tmp/kvsim-gz-XXXXXX", src[600], dst[600], args[1200];
    assert_non_null(mkdtemp(dir));
    for (size_t i = 0; i < 6; i++) {
        snprintf(src, sizeof src, MINI "/%s", files[i]);
        snprintf(dst, sizeof dst, "%s/%s.gz", dir, files[i]);
        gzip_to(src, dst);
    }
    char *a = tu_temp_path(), *b = tu_temp_path();
    snprintf(args, sizeof args, "trace import ragpulse " MINI " -o %s", a);
    tu_expect_exit(args, 0, "wrote 5 requests");
    snprintf(args, sizeof args, "trace import ragpulse %s -o %s", dir, b);
    tu_expect_exit(args, 0, "wrote 5 requests");
    expect_same_bytes(a, b);
    /* a truncated member is an error naming it */
    snprintf(dst, sizeof dst, "%s/2_passages.jsonl.gz", dir);
    size_t n;
    char *bytes = slurp_path(dst, &n);
    write_bytes(dst, bytes, n / 2);
    free(bytes);
    snprintf(args, sizeof args, "trace import ragpulse %s -o %s", dir, b);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 2);
    if (!strstr(r.err, dst) || !strstr(r.err, "the gzip data ends early")) fail_msg("stderr: %s", r.err);
    tu_free(&r);
    for (size_t i = 0; i < 6; i++) {
        snprintf(dst, sizeof dst, "%s/%s.gz", dir, files[i]);
        unlink(dst);
    }
    rmdir(dir);
    tu_remove_temp(a);
    tu_remove_temp(b);
}

/* ---- damaged files --------------------------------------------------------- */

/* `kvsim ARGS` (with "%s" the file) exits 2, naming the file and saying what. */
static void expect_refused(const char *fmt, const char *path, const char *what)
{
    char args[800];
    snprintf(args, sizeof args, fmt, path);
    cli_result r = tu_kvsim(args);
    if (r.status != 2 || !strstr(r.err, path) || !strstr(r.err, what))
        fail_msg("kvsim %s: exit %d, stderr '%s' (want 2, the file and '%s')", args, r.status, r.err, what);
    tu_free(&r);
}

static void expect_refused_everywhere(const char *path, const char *what)
{
    expect_refused("trace stats %s", path, what);
    expect_refused("run --trace %s", path, what);
    expect_refused("hitrate --trace %s --capacity-tokens 1e6", path, what);
    /* all its 1,500 arrivals: the reader reaches the damage */
    expect_refused("trace gen --requests 1500 --arrivals-from %s -o /dev/null", path, what);
}

/* Cut in half: every line before the cut reads, then the end of the gzip
 * stream is missing. Not a 750-request trace. */
static void test_truncated_gz(void **state)
{
    char *gz = gzip_temp(DEFAULT_TRACE);
    size_t n;
    char *bytes = slurp_path(gz, &n);
    write_bytes(gz, bytes, n / 2);
    expect_refused_everywhere(gz, "read error: the gzip data ends early (a truncated file?)");
    /* cut right after the header: nothing inflates at all */
    write_bytes(gz, bytes, 12);
    expect_refused("trace stats %s", gz, "the gzip data ends early");
    free(bytes);
    tu_remove_temp(gz);
}

/* A wrong CRC in the trailer: every byte inflates and every line parses,
 * yet the data is not what was compressed. */
static void test_corrupt_gz(void **state)
{
    char *gz = gzip_temp(DEFAULT_TRACE);
    size_t n;
    char *bytes = slurp_path(gz, &n);
    bytes[n - 8] ^= 0x5a; /* the trailer: CRC-32, then the length */
    write_bytes(gz, bytes, n);
    expect_refused_everywhere(gz, "read error: corrupt gzip data (incorrect data check)");
    bytes[n - 8] ^= 0x5a;
    bytes[10] = 0x07; /* the first deflate block: final, type 3 (reserved) */
    write_bytes(gz, bytes, n);
    expect_refused("trace stats %s", gz, "read error: corrupt gzip data (invalid block type)");
    free(bytes);
    tu_remove_temp(gz);
}

/* Bytes after the gzip stream that are not another gzip member (a damaged
 * file, or a gzip file with another file joined after it) are an error
 * giving the byte where the gzip data stops: zlib's gzread read such a
 * file's first stream as the whole trace and dropped the rest unsaid. */
static void test_trailing_garbage_gz(void **state)
{
    static const char plain[] = "{\"timestamp\": 9e9, \"input_length\": 5, \"output_length\": 5, \"hash_ids\": [1]}\n";
    char *gz = gzip_temp(DEFAULT_TRACE), want[400], args[800];
    size_t n;
    char *bytes = slurp_path(gz, &n), *joined = malloc(2 * n + sizeof plain);
    memcpy(joined, bytes, n);
    memcpy(joined + n, plain, sizeof plain - 1); /* a plain trace line joined after it */
    write_bytes(gz, joined, n + sizeof plain - 1);
    snprintf(want, sizeof want,
             "read error: trailing garbage after the gzip stream at byte %zu: the file is damaged or two files were "
             "joined; recompress the trace, or keep the gzip part with head -c %zu",
             n, n);
    expect_refused("trace stats %s", gz, want);
    expect_refused("run --trace %s", gz, want);
    expect_refused("hitrate --trace %s --capacity-tokens 1e6", gz, want);
    /* past its 1,500 arrivals: the reader reaches the garbage */
    expect_refused("trace gen --requests 1501 --arrivals-from %s -o /dev/null", gz, want);
    /* the whole message, as trace stats prints it, and for a pipe */
    snprintf(args, sizeof args, "trace stats %s", gz);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, "");
    char line[1200];
    snprintf(line, sizeof line, "kvsim trace stats: %s: %s\n", gz, want);
    assert_string_equal(r.err, line);
    tu_free(&r);
    snprintf(args, sizeof args, "cat %s | %s run --trace -", gz, tu_kvsim_bin());
    r = tu_shell(args);
    if (r.status != 2 || !strstr(r.err, "kvsim run: <stdin>: ") || !strstr(r.err, want)) fail_msg("stderr: %s", r.err);
    tu_free(&r);
    /* one stray byte, even gzip's first magic byte, is garbage too */
    joined[n] = 0x1f;
    write_bytes(gz, joined, n + 1);
    expect_refused("trace stats %s", gz, want);
    /* after two whole members, the garbage starts past both */
    memcpy(joined + n, bytes, n);
    memcpy(joined + 2 * n, "\0\0\0\0", 4);
    write_bytes(gz, joined, 2 * n + 4);
    snprintf(want, sizeof want, "read error: trailing garbage after the gzip stream at byte %zu", 2 * n);
    expect_refused("trace stats %s", gz, want);
    free(joined);
    free(bytes);
    tu_remove_temp(gz);
}

/* Gzip members one after another (what cat a.gz b.gz makes; gzip -d reads
 * them as one) are one stream: the trace cut mid-line into two members
 * with an empty member between them is the same trace as the plain file. */
static void test_multi_member_gz(void **state)
{
    size_t n;
    char *text = slurp_path(DEFAULT_TRACE, &n), *gz = tu_temp_path(), args[800];
    static const char *const modes[3] = {"wb9", "ab9", "ab1"};
    const size_t cut[4] = {0, n / 2, n / 2, n}; /* the middle member is empty */
    for (int i = 0; i < 3; i++) {
        gzFile g = gzopen(gz, modes[i]);
        assert_non_null(g);
        assert_int_equal(gzwrite(g, text + cut[i], (unsigned)(cut[i + 1] - cut[i])), (int)(cut[i + 1] - cut[i]));
        assert_int_equal(gzclose(g), Z_OK);
    }
    assert_true(text[n / 2 - 1] != '\n'); /* the cut is mid-line */
    expect_same_output("trace stats --json %s", DEFAULT_TRACE, gz);
    expect_same_output("hitrate --json --trace %s --capacity-tokens 1e5,inf", DEFAULT_TRACE, gz);
    snprintf(args, sizeof args, "cat %s | %s trace stats --json -", gz, tu_kvsim_bin());
    cli_result r = tu_shell(args);
    if (r.status != 0 || !strstr(r.out, "\"" DEFAULT_FP "\"")) fail_msg("%s: exit %d: %s", args, r.status, r.err);
    tu_free(&r);
    free(text);
    tu_remove_temp(gz);
}

static void test_zstd_refused(void **state)
{
    char *path = tu_temp_path();
    write_bytes(path, "\x28\xb5\x2f\xfd\x00\x58\x61\x00", 8);
    expect_refused("trace stats %s", path, "zstd-compressed; kvsim reads plain and gzip files");
    expect_refused("run --trace %s", path, "decompress it first (zstd -d)");
    tu_remove_temp(path);
}

/* ---- the bundled public traces --------------------------------------------- */

static void test_bundled_conversation_trace(void **state)
{
    json_t *j = tu_kvsim_json("trace stats --json " MOONCAKE_CONVERSATION);
    assert_int_equal(tu_int_field(j, "requests"), 12031);
    assert_int_equal(tu_int_field(j, "blocks"), 288500);
    assert_int_equal(tu_int_field(j, "distinct_blocks"), 182790);
    assert_int_equal(tu_int_field(j, "skipped"), 0);
    assert_double_equal(json_number_value(json_object_get(json_object_get(j, "input"), "mean")), 12035.061341534369,
                        1e-6);
    assert_double_equal(json_number_value(json_object_get(json_object_get(j, "output"), "mean")), 342.6189011719724,
                        1e-6);
    json_decref(j);
    tu_expect_stdout("trace stats " MOONCAKE_CONVERSATION, "requests         12031\n");
}

/* Every bundled file is gzip (by its magic bytes) and has its licence and
 * provenance README beside it. */
static void test_bundled_files(void **state)
{
    static const char *const paths[] = {MOONCAKE_TRACE, MOONCAKE_CONVERSATION, RAGPULSE_SAMPLE "/0_trace.jsonl.gz",
                                        RAGPULSE_SAMPLE "/5_web_search.jsonl.gz"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        size_t n;
        char *b = slurp_path(paths[i], &n);
        assert_true(n > 2 && (unsigned char)b[0] == 0x1f && (unsigned char)b[1] == 0x8b);
        free(b);
    }
    static const char *const beside[] = {"traces/mooncake/LICENSE-APACHE", "traces/mooncake/README.md",
                                         RAGPULSE_SAMPLE "/LICENSE", RAGPULSE_SAMPLE "/README.md"};
    for (size_t i = 0; i < sizeof beside / sizeof beside[0]; i++)
        if (access(beside[i], R_OK)) fail_msg("%s missing", beside[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats_same_and_fingerprint),
        cmocka_unit_test(test_run_same_and_fingerprint),
        cmocka_unit_test(test_hitrate_and_plan_same),
        cmocka_unit_test(test_arrivals_from_gz),
        cmocka_unit_test(test_ragpulse_gz_directory),
        cmocka_unit_test(test_truncated_gz),
        cmocka_unit_test(test_corrupt_gz),
        cmocka_unit_test(test_trailing_garbage_gz),
        cmocka_unit_test(test_multi_member_gz),
        cmocka_unit_test(test_zstd_refused),
        cmocka_unit_test(test_bundled_conversation_trace),
        cmocka_unit_test(test_bundled_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
