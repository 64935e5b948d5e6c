/* tests/testutil.h — helpers shared by the cmocka test files: run the kvsim
 * binary and capture what it printed, name the public traces bundled under
 * traces/, make temp files.
 *
 * Include after <cmocka.h> (and its prerequisites). Header-only: every
 * function is static so each test binary gets its own copy. */
#ifndef TESTS_TESTUTIL_H
#define TESTS_TESTUTIL_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>
#include <xxhash.h>

/* cmocka 1.1 compares floats only; kvsim's expected values need doubles. */
#define assert_double_equal(a, b, eps)                                                                                 \
    do {                                                                                                               \
        double a_ = (a), b_ = (b), e_ = (eps);                                                                         \
        if (!(fabs(a_ - b_) <= e_)) fail_msg("%s = %.12g, expected %.12g ± %g", #a, a_, b_, e_);                       \
    } while (0)

/* The public traces bundled under traces/ (their READMEs say where from):
 * Mooncake's FAST'25 synthetic and conversation traces and the RAGPulse
 * sample directory. Every test that uses them runs. */
#define MOONCAKE_TRACE        "traces/mooncake/mooncake_synthetic_trace.jsonl.gz"
#define MOONCAKE_CONVERSATION "traces/mooncake/conversation_trace.jsonl.gz"
#define RAGPULSE_SAMPLE       "traces/ragpulse-sample"
/* `kvsim plan slo` options for a test that does not check confirmation:
 * the answer re-run once, on the search's own seed and trace, a run the
 * search already has (tests/test_plan_confirm.c checks what the default
 * eight decide). */
#define TU_ONE_CONFIRMATION   "--confirm-seeds 1 --confirm-resample none "

typedef struct cli_result {
    int status; /* exit code, or 128+signal */
    char *out;  /* captured stdout (NUL-terminated, caller frees) */
    char *err;  /* captured stderr */
} cli_result;

static inline char *tu_slurp(FILE *f)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t k;
    rewind(f);
    while ((k = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (cap - n < 2) buf = realloc(buf, cap *= 2);
    }
    buf[n] = 0;
    return buf;
}

/* The whole file at path (caller frees); fails the test when unreadable. */
static inline char *tu_slurp_path(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("cannot read %s", path);
    char *s = tu_slurp(f);
    fclose(f);
    return s;
}

/* Run a shell command line, capturing its stdout and stderr. */
static inline cli_result tu_shell(const char *cmdline)
{
    char cmd[8192 + 64]; /* room for the redirections after an 8 KiB command */
    FILE *o = tmpfile(), *e = tmpfile();
    snprintf(cmd, sizeof cmd, "%s >/dev/fd/%d 2>/dev/fd/%d", cmdline, fileno(o), fileno(e));
    int st = system(cmd);
    cli_result r;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.out = tu_slurp(o);
    r.err = tu_slurp(e);
    fclose(o);
    fclose(e);
    return r;
}

/* The kvsim binary under test: $KVSIM_BIN, else the sanitizer build's
 * (make test sets the optimized build; make test-san the sanitizer's). */
static inline const char *tu_kvsim_bin(void)
{
    const char *bin = getenv("KVSIM_BIN");
    return bin ? bin : "build/san/kvsim";
}

/* The sanitizer build's kvsim, for command lines whose point is a memory
 * error or a crash (the fuzz corpus): $KVSIM_SAN_BIN, else build/san/kvsim. */
static inline const char *tu_kvsim_san_bin(void)
{
    const char *bin = getenv("KVSIM_SAN_BIN");
    return bin ? bin : "build/san/kvsim";
}

/* Run `$KVSIM_BIN args` (args is a shell-quoted string). */
static inline cli_result tu_kvsim(const char *args)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s %s", tu_kvsim_bin(), args);
    return tu_shell(cmd);
}

/* The first column of the first row of query on the database at path, as
 * text (caller frees; "" for no row or NULL). Through SQLite's C API, so
 * tests need no sqlite3 command-line tool. */
static inline char *tu_sql_text(const char *path, const char *query)
{
    sqlite3 *db;
    sqlite3_stmt *st = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, query, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s: %s", path, query, sqlite3_errmsg(db));
    const unsigned char *t = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_text(st, 0) : NULL;
    char *out = strdup(t ? (const char *)t : "");
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
}

static inline void tu_free(cli_result *r)
{
    free(r->out);
    free(r->err);
}

/* Whether gnuplot is on PATH (make test's deps install it; a machine with
 * no package registry may lack it): report tests skip, saying why, when not. */
static inline bool tu_have_gnuplot(void)
{
    if (system("command -v gnuplot >/dev/null 2>&1") == 0) return true;
    printf("skip: gnuplot not installed (apt-get install gnuplot-nox): tests that render reports are skipped\n");
    return false;
}

/* The one test a binary runs when what all its tests need is absent. */
static inline void tu_skipped(void **state)
{
    (void)state;
    skip();
}

/* Write text to a fresh temp file; returns its path (static buffer per call site
 * is not enough, so the caller frees). */
static inline char *tu_write_temp(const char *text)
{
    char *path = strdup("/tmp/kvsim-test-XXXXXX");
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

/* One Mooncake trace line: a request at at_ms of `input` tokens and `output`
 * output tokens whose ⌈input / 512⌉ blocks are keys first_key, first_key + 1, … */
static inline void tu_trace_request(FILE *f, double at_ms, int input, int output, int first_key)
{
    fprintf(f, "{\"timestamp\": %.0f, \"input_length\": %d, \"output_length\": %d, \"hash_ids\": [", at_ms, input,
            output);
    for (int b = 0; b < (input + 511) / 512; b++) fprintf(f, "%s%d", b ? ", " : "", first_key + b);
    fputs("]}\n", f);
}

/* Run `$KVSIM_BIN args`; fail the test unless it exits with `status` and its
 * stderr contains `needle` (NULL = anything). */
static inline void tu_expect_exit(const char *args, int status, const char *needle)
{
    cli_result r = tu_kvsim(args);
    if (r.status != status || (needle && !strstr(r.err, needle)))
        fail_msg("kvsim %s: exit %d, stderr '%s' (want %d and '%s')", args, r.status, r.err, status,
                 needle ? needle : "");
    tu_free(&r);
}

/* Run `$KVSIM_BIN args`; fail the test unless it exits 0 and its stdout
 * contains `needle` (NULL = anything). */
static inline void tu_expect_stdout(const char *args, const char *needle)
{
    cli_result r = tu_kvsim(args);
    if (r.status != 0 || (needle && !strstr(r.out, needle)))
        fail_msg("kvsim %s: exit %d, stdout '%s', stderr '%s' (want 0 and '%s')", args, r.status, r.out, r.err,
                 needle ? needle : "");
    tu_free(&r);
}

/* Run `$KVSIM_BIN args`; fail the test unless it exits 0 and neither its
 * stdout holds out_absent nor its stderr err_absent (NULL = not checked). */
static inline void tu_expect_ok_without(const char *args, const char *out_absent, const char *err_absent)
{
    cli_result r = tu_kvsim(args);
    if (r.status != 0 || (out_absent && strstr(r.out, out_absent)) || (err_absent && strstr(r.err, err_absent)))
        fail_msg("kvsim %s: exit %d, stdout '%s', stderr '%s' (want 0, without '%s' / '%s')", args, r.status, r.out,
                 r.err, out_absent ? out_absent : "", err_absent ? err_absent : "");
    tu_free(&r);
}

/* Run `$KVSIM_BIN args`; fail the test unless it exits with `status` and
 * prints a JSON value on stdout, which is returned (caller decrefs). */
static inline json_t *tu_kvsim_json_status(const char *args, int status)
{
    cli_result r = tu_kvsim(args);
    if (r.status != status) fail_msg("kvsim %s: exit %d (want %d): %s", args, r.status, status, r.err);
    json_t *j = json_loads(r.out, 0, NULL);
    if (!j) fail_msg("kvsim %s: not JSON: %s", args, r.out);
    tu_free(&r);
    return j;
}

/* A shell command's stdout as JSON; the test fails unless it exits 0. */
static inline json_t *tu_shell_json(const char *cmd)
{
    cli_result r = tu_shell(cmd);
    if (r.status != 0) fail_msg("%s: exit %d: %s", cmd, r.status, r.err);
    json_t *j = json_loads(r.out, 0, NULL);
    if (!j) fail_msg("%s: not JSON: %s", cmd, r.out);
    tu_free(&r);
    return j;
}

/* tu_kvsim_json_status expecting exit 0. */
static inline json_t *tu_kvsim_json(const char *args) { return tu_kvsim_json_status(args, 0); }

/* tu_kvsim_json with printf-style arguments. */
static inline json_t *tu_kvsim_jsonf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline json_t *tu_kvsim_jsonf(const char *fmt, ...)
{
    char args[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return tu_kvsim_json(args);
}

/* A fresh temp path with no file behind it (for --db, -o); caller frees. */
static inline char *tu_temp_path(void)
{
    char *p = tu_write_temp("");
    unlink(p);
    return p;
}

/* The bytes `kvsim trace gen ARGS -o -` writes (caller frees); fails the
 * test unless it exits 0 and reports what it wrote. */
static inline char *tu_gen_text(const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "trace gen %s -o -", args);
    cli_result r = tu_kvsim(cmd);
    if (r.status != 0 || !strstr(r.err, "kvsim trace gen: wrote "))
        fail_msg("kvsim %s: exit %d: %s", cmd, r.status, r.err);
    free(r.err);
    return r.out;
}

/* That trace in a temp file: its path (tu_remove_temp it). */
static inline char *tu_gen_trace(const char *args)
{
    char *text = tu_gen_text(args), *path = tu_write_temp(text);
    free(text);
    return path;
}

/* The number at o.a (or o.a.b when b is given); fails the test otherwise. */
static inline double tu_num_at(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    if (b) v = json_object_get(v, b);
    if (!json_is_number(v)) fail_msg("%s.%s: not a number", a, b ? b : "");
    return json_number_value(v);
}

/* An integer field of a JSON object; fails the test otherwise. */
static inline int64_t tu_int_field(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) fail_msg("%s: not an integer", key);
    return json_integer_value(v);
}

/* `kvsim ARGS` exits 0 and its stdout holds every one of want[0..n). */
static inline void tu_expect_all(const char *args, const char *const *want, size_t n)
{
    cli_result r = tu_kvsim(args);
    if (r.status != 0) fail_msg("kvsim %s: exit %d: %s", args, r.status, r.err);
    for (size_t i = 0; i < n; i++)
        if (!strstr(r.out, want[i])) fail_msg("kvsim %s lacks '%s':\n%s", args, want[i], r.out);
    tu_free(&r);
}

/* Delete a file made by tu_write_temp and free its path. */
static inline void tu_remove_temp(char *path)
{
    unlink(path);
    free(path);
}

/* Drop what differs between two runs of the same thing (wall_seconds,
 * run_id), at every depth of a JSON value. */
static inline void tu_drop_volatile(json_t *j)
{
    if (!json_is_object(j)) return;
    json_object_del(j, "wall_seconds");
    json_object_del(j, "run_id");
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v) tu_drop_volatile(v);
}

/* XXH64 over every requests row of a results DB, in id order, as text
 * (caller frees). */
static inline char *tu_requests_digest(sqlite3 *db)
{
    sqlite3_stmt *st;
    XXH64_state_t *h = XXH64_createState();
    XXH64_reset(h, 0);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT * FROM requests ORDER BY id", -1, &st, NULL), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW)
        for (int c = 0; c < sqlite3_column_count(st); c++) {
            const unsigned char *t = sqlite3_column_text(st, c);
            XXH64_update(h, t ? (const char *)t : "NULL", t ? strlen((const char *)t) + 1 : 5);
        }
    sqlite3_finalize(st);
    char *out = malloc(17);
    snprintf(out, 17, "%016llx", (unsigned long long)XXH64_digest(h));
    XXH64_freeState(h);
    return out;
}

/* The full-precision result of the one run a results DB holds: its
 * summary_json and the digest of its requests rows, as {"summary",
 * "requests_xxh64"} (caller decrefs). */
static inline json_t *tu_run_result(const char *db_path)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT summary_json FROM runs", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    json_t *sum = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
    sqlite3_finalize(st);
    assert_non_null(sum);
    char *d = tu_requests_digest(db);
    sqlite3_close(db);
    json_t *out = json_pack("{s:o, s:s}", "summary", sum, "requests_xxh64", d);
    free(d);
    return out;
}

#endif
