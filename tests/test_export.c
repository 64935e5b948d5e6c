/* tests/test_export.c — `kvsim export`: the runs table has one row per
 * completed run whose config and summary columns equal what the database
 * holds (json_extract, computed by SQLite independently of the export's
 * flattening); a list value (faults) is one CSV cell, quoted per RFC 4180,
 * and reads back as the same JSON; TSV and the other tables; --runs ranges;
 * --where (export and report); bad arguments exit 2 naming them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

/* Split one CSV record (RFC 4180) into at most max cells, in place. */
static int csv_cells(char *line, char **cells, int max)
{
    int n = 0;
    char *w = line, *r = line;
    while (n < max) {
        cells[n++] = w;
        bool quoted = *r == '"';
        if (quoted) r++;
        for (;; r++) {
            if (quoted && r[0] == '"' && r[1] == '"') *w++ = '"', r++;
            else if (quoted && r[0] == '"') quoted = false;
            else if (!quoted && (*r == ',' || *r == 0 || *r == '\n')) break;
            else *w++ = *r;
        }
        char end = *r;
        *w++ = 0;
        if (end != ',') break;
        r++;
    }
    return n;
}

static int su_lines(const char *text)
{
    int n = 0;
    for (; *text; text++) n += *text == '\n';
    return n;
}

static int column(char **cells, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(cells[i], name)) return i;
    fail_msg("no column %s", name);
    return -1;
}

static void test_runs_table(void **state)
{
    char *db = tu_temp_path(), args[1024];
    snprintf(args, sizeof args,
             "sweep --grid 'policy.router=random,least_loaded' --set 'faults=[{\"at_ms\": 5000, \"instance\": 1, "
             "\"down_ms\": 4000}]' --db %s",
             db);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    snprintf(args, sizeof args, "export --db %s", db);
    r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    char *rows[3], *save;
    rows[0] = strtok_r(r.out, "\n", &save);
    rows[1] = strtok_r(NULL, "\n", &save);
    rows[2] = strtok_r(NULL, "\n", &save);
    assert_non_null(rows[2]);
    assert_null(strtok_r(NULL, "\n", &save));
    char *head[512], *row[512];
    int nh = csv_cells(rows[0], head, 512);
    int ir = column(head, nh, "policy.router"), ip = column(head, nh, "summary.ttft_ms.p90"),
        ifa = column(head, nh, "faults"), iid = column(head, nh, "id");
    for (int k = 1; k <= 2; k++) {
        assert_int_equal(csv_cells(rows[k], row, 512), nh);
        char q[256];
        snprintf(q, sizeof q, "SELECT json_extract(config_json, '$.policy.router') FROM runs WHERE id=%s", row[iid]);
        char *want = tu_sql_text(db, q);
        assert_string_equal(row[ir], want);
        free(want);
        snprintf(q, sizeof q, "SELECT json_extract(summary_json, '$.ttft_ms.p90') FROM runs WHERE id=%s", row[iid]);
        want = tu_sql_text(db, q);
        assert_double_equal(atof(row[ip]), atof(want), 1e-9 * atof(want));
        free(want);
        json_t *faults = json_loads(row[ifa], 0, NULL);
        assert_int_equal(json_integer_value(json_object_get(json_array_get(faults, 0), "down_ms")), 4000);
        json_decref(faults);
    }
    tu_free(&r);
    /* TSV, another table, --runs, -o */
    char *out = tu_temp_path();
    snprintf(args, sizeof args, "export --db %s --table requests --format tsv --runs 2 -o %s", db, out);
    r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "kvsim export: 1500 rows to"));
    tu_free(&r);
    FILE *f = fopen(out, "r");
    char *text = tu_slurp(f);
    fclose(f);
    assert_true(!strncmp(text, "run_id\t", 7));
    assert_null(strstr(text, "\n1\t")); /* run 1 left out */
    free(text);
    tu_remove_temp(out);
    /* --where: an SQL expression over the runs table selects runs, for export and report */
    snprintf(args, sizeof args, "export --db %s --where \"json_extract(config_json, '$.policy.router') = 'random'\"",
             db);
    r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    assert_int_equal(su_lines(r.out), 2); /* the header and one run */
    assert_non_null(strstr(r.out, ",random,"));
    tu_free(&r);
    snprintf(args, sizeof args, "export --db %s --runs 1 --where 'id > 1'", db);
    r = tu_kvsim(args);
    assert_int_equal(su_lines(r.out), 1); /* both must hold: the header only */
    tu_free(&r);
    snprintf(args, sizeof args, "export --db %s --where 'nosuchcol = 1'", db);
    tu_expect_exit(args, 2, "--where 'nosuchcol = 1': no such column: nosuchcol");
    snprintf(args, sizeof args, "report --db %s --where 'nosuchcol = 1' -o %s.report", db, db);
    tu_expect_exit(args, 2, "--where 'nosuchcol = 1': no such column: nosuchcol");
    snprintf(args, sizeof args, "export --db %s --table sampels", db);
    tu_expect_exit(args, 2,
                   "unknown table 'sampels' (runs, requests, samples, replicas, hitrate) (did you mean 'samples'?)");
    snprintf(args, sizeof args, "export --db %s --runs 3-1", db);
    tu_expect_exit(args, 2, "--runs '3-1': expected ids and ranges such as 3,7,10-12");
    snprintf(args, sizeof args, "export --db %s --runs 1-2,2", db); /* a run named twice */
    tu_expect_exit(args, 2, "--runs '1-2,2': run 2 is named twice");
    snprintf(args, sizeof args, "export --db %s -o %s", db, db); /* it once replaced the database with CSV */
    tu_expect_exit(args, 2, "is the results database --db reads");
    snprintf(args, sizeof args, "export --db %s --format xls", db);
    tu_expect_exit(args, 2, "--format: expected csv or tsv");
    tu_expect_exit("export", 2, "--db FILE is required");
    tu_expect_exit("export --db /nonexistent-kvsim.db", 2,
                   "cannot read /nonexistent-kvsim.db: No such file or directory (kvsim run --db FILE or kvsim sweep "
                   "--db FILE writes one)");
    tu_remove_temp(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_runs_table)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
