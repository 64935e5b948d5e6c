/* tests/sweep_testutil.h — helpers shared by test_sweep.c and test_report.c:
 * a small deterministic trace, a scratch directory, one-number SQL queries,
 * and a canonical text dump of a results database for row-by-row
 * comparison (exit-status and output checks are tests/testutil.h's).
 * Include after tests/testutil.h. Header-only (static). */
#ifndef TESTS_SWEEP_TESTUTIL_H
#define TESTS_SWEEP_TESTUTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include <jansson.h>
#include <sqlite3.h>

/* n requests, one every gap_ms; 4 "system prompts" of 6 shared blocks, the
 * rest unique; inputs 3,000–9,000 tokens, outputs 1–60. Written to path. */
static inline void su_write_trace(const char *path, int n, int gap_ms)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    int64_t next_id = 1000;
    for (int i = 0; i < n; i++) {
        int prompt = (i * 7) % 4, input = 3000 + (i * 997) % 6001, output = 1 + (i * 31) % 60;
        fprintf(f, "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": %d, \"hash_ids\": [", i * gap_ms,
                input, output);
        for (int b = 0; b < (input + 511) / 512; b++)
            fprintf(f, "%s%lld", b ? ", " : "", b < 6 ? (long long)(prompt * 10 + b) : (long long)next_id++);
        fputs("]}\n", f);
    }
    fclose(f);
}

/* A fresh scratch directory (caller frees the path; su_rmrf removes it). */
static inline char *su_tempdir(void)
{
    char *dir = strdup("/tmp/kvsim-test-XXXXXX");
    assert_non_null(mkdtemp(dir));
    return dir;
}

static inline void su_rmrf(const char *dir)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static inline sqlite3 *su_open(const char *path)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL), SQLITE_OK);
    /* a sweep's worker killed with its parent (SIGKILL) can hold a lock for
     * the moment it takes to die: wait for it, as kvsim's own readers do */
    sqlite3_busy_timeout(db, 10000);
    return db;
}

/* One number from a query on the database at path (-1 when no row). */
static inline double su_num(const char *path, const char *sql)
{
    sqlite3 *db = su_open(path);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    double v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_double(st, 0) : -1;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static inline void su_exec(const char *path, const char *sql)
{
    sqlite3 *db = su_open(path);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

static inline void su_append(char **buf, size_t *len, size_t *cap, const char *s)
{
    size_t n = strlen(s);
    while (*len + n + 2 > *cap) *buf = realloc(*buf, *cap *= 2);
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[(*len)++] = '|';
    (*buf)[*len] = 0;
}

/* A summary without the fields that legitimately differ between two
 * executions of the same run: wall time and run id. Caller frees. */
static inline char *su_stable_summary(const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    json_object_del(j, "wall_seconds");
    json_object_del(j, "run_id");
    char *out = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    return out;
}

/* Every row of runs (minus created time and wall time), requests and
 * samples, in id order, as text: equal dumps = equal databases. */
static inline char *su_dump(const char *path)
{
    static const char *const queries[] = {
        "SELECT id, kvsim_version, config_json, config_hash, trace_path, trace_fingerprint, seed, summary_json"
        " FROM runs ORDER BY id",
        "SELECT rowid, * FROM requests ORDER BY run_id, id", /* rowid: the order a scan without ORDER BY sees */
        "SELECT rowid, * FROM samples ORDER BY run_id, t_ms, instance",
        "SELECT rowid, * FROM replicas ORDER BY rowid",
    };
    sqlite3 *db = su_open(path);
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    out[0] = 0;
    for (size_t q = 0; q < sizeof queries / sizeof queries[0]; q++) {
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(db, queries[q], -1, &st, NULL), SQLITE_OK);
        while (sqlite3_step(st) == SQLITE_ROW)
            for (int c = 0; c < sqlite3_column_count(st); c++) {
                const char *v = (const char *)sqlite3_column_text(st, c);
                bool summary = q == 0 && c == 7;
                char *stable = summary && v ? su_stable_summary(v) : NULL;
                su_append(&out, &len, &cap, stable ? stable : v ? v : "NULL");
                free(stable);
            }
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return out;
}

static inline off_t su_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

static inline char *su_slurp_path(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *text = tu_slurp(f);
    fclose(f);
    return text;
}

/* The text of file `name` in folder d (caller frees); fails the test
 * when it is missing. */
static inline char *su_read_in(const char *d, const char *name)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", d, name);
    char *text = su_slurp_path(path);
    if (!text) fail_msg("%s missing", path);
    return text;
}

static inline int su_count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

/* A file of text that SQLite must refuse as a database. */
static inline void su_write_garbage(const char *path)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < 64; i++) fputs("not a database, plain text padding ", f);
    fclose(f);
}

#endif
