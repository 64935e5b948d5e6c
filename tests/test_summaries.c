/* tests/test_summaries.c — results must not move by a bit unless a change
 * means them to: every command line of tests/fixtures/summaries.cases is
 * re-run and compared with the output recorded in
 * tests/fixtures/summaries.jsonl.
 *
 * A `run` case is compared at full precision: its summary_json row in a
 * results DB (the printed summary rounds to 10 digits) and an XXH64 digest
 * of every requests row. Other commands are compared on their --json
 * output. wall_seconds and run_id are dropped before comparing.
 *
 * Re-record (only when a change is meant to move results):
 *   KVSIM_RECORD_SUMMARIES=1 build/san/tests/test_summaries */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "tests/testutil.h"

#define CASES    "tests/fixtures/summaries.cases"
#define RECORDED "tests/fixtures/summaries.jsonl"

/* Run one case; returns its normalized result (caller decrefs). */
static json_t *run_case(const char *args)
{
    json_t *res;
    if (!strncmp(args, "run ", 4)) {
        char *db = tu_write_temp("");
        unlink(db);
        char full[4200];
        snprintf(full, sizeof full, "%s --db %s", args, db);
        json_decref(tu_kvsim_json(full));
        res = tu_run_result(db);
        unlink(db);
        free(db);
    } else {
        res = tu_kvsim_json(args);
    }
    tu_drop_volatile(res);
    return res;
}

static char *canon(const json_t *j) { return json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17)); }

/* Cases as lines (comments and blanks dropped); returns the count. */
static int read_cases(char lines[][512], int max)
{
    FILE *f = fopen(CASES, "r");
    assert_non_null(f);
    int n = 0;
    char buf[512];
    while (fgets(buf, sizeof buf, f) && n < max) {
        buf[strcspn(buf, "\n")] = 0;
        if (buf[0] && buf[0] != '#') strcpy(lines[n++], buf);
    }
    fclose(f);
    return n;
}

static void record(char lines[][512], int n)
{
    FILE *out = fopen(RECORDED, "w");
    assert_non_null(out);
    for (int i = 0; i < n; i++) {
        json_t *r = run_case(lines[i]);
        json_t *row = json_pack("{s:s, s:o}", "case", lines[i], "result", r);
        char *s = canon(row);
        fprintf(out, "%s\n", s);
        free(s);
        json_decref(row);
    }
    fclose(out);
    printf("recorded %d cases into %s\n", n, RECORDED);
}

static void test_summaries_unchanged(void **state)
{
    static char lines[128][512];
    int n = read_cases(lines, 128);
    assert_true(n > 0);
    if (getenv("KVSIM_RECORD_SUMMARIES")) return record(lines, n);
    FILE *f = fopen(RECORDED, "r");
    assert_non_null(f);
    json_error_t je;
    int checked = 0;
    for (int i = 0; i < n; i++) {
        json_t *row = json_loadf(f, JSON_DISABLE_EOF_CHECK, &je);
        if (!row) fail_msg("%s: no recorded result for case %d '%s': %s", RECORDED, i + 1, lines[i], je.text);
        const char *c = json_string_value(json_object_get(row, "case"));
        if (!c || strcmp(c, lines[i]))
            fail_msg("%s: case %d is '%s', %s has '%s': re-record", RECORDED, i + 1, c, CASES, lines[i]);
        json_t *now = run_case(lines[i]);
        char *want = canon(json_object_get(row, "result")), *got = canon(now);
        if (strcmp(want, got)) fail_msg("kvsim %s:\n  recorded %s\n  now      %s", lines[i], want, got);
        free(want);
        free(got);
        json_decref(now);
        checked++;
        json_decref(row);
    }
    fclose(f);
    printf("%d of %d recorded summaries identical\n", checked, n);
}

/* Without --db the run writes no rows (its private database has no reader),
 * and with metrics.request_rows / sample_rows false a --db keeps only the
 * runs row; either way the summary is the same: printed output identical,
 * wall time and run id aside. */
static void test_summary_without_rows(void **state)
{
    const char *cases[] = {"run --json", "run --json --speed 4 --set policy.admission=baseline",
                           "run --json --set cluster.scope=local --set kvstore.dram_bytes=8GiB --set cost.noise=0.1"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *db = tu_write_temp(""), with_db[512], bare[512];
        unlink(db);
        snprintf(with_db, sizeof with_db, "%s --db %s", cases[i], db);
        snprintf(bare, sizeof bare, "%s --db %s --set metrics.request_rows=false --set metrics.sample_rows=false",
                 cases[i], db);
        json_t *a = tu_kvsim_json(cases[i]), *b = tu_kvsim_json(with_db), *c = tu_kvsim_json(bare);
        tu_drop_volatile(a);
        tu_drop_volatile(b);
        tu_drop_volatile(c);
        char *ta = canon(a), *tb = canon(b), *tc = canon(c);
        if (strcmp(ta, tb)) fail_msg("kvsim %s: without --db %s, with --db %s", cases[i], ta, tb);
        if (strcmp(ta, tc)) fail_msg("kvsim %s: without rows %s, with rows %s", cases[i], tc, tb);
        sqlite3 *h;
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(h,
                                            "SELECT (SELECT COUNT(*) FROM requests WHERE run_id=2),"
                                            " (SELECT COUNT(*) FROM samples WHERE run_id=2)",
                                            -1, &st, NULL),
                         SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_int_equal(sqlite3_column_int(st, 0), 0);
        assert_int_equal(sqlite3_column_int(st, 1), 0);
        sqlite3_finalize(st);
        sqlite3_close(h);
        free(ta), free(tb), free(tc);
        json_decref(a), json_decref(b), json_decref(c);
        unlink(db);
        free(db);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_summaries_unchanged),
        cmocka_unit_test(test_summary_without_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
