/* sim/results/export.c — `kvsim export`: a results table as CSV or TSV (see
 * export.h). Reads the database read-only; the runs table's JSON columns
 * are flattened with jansson. */
#include "sim/results/export.h"
#include "sim/results/results.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sqlite3.h>

/* ---- cells ---------------------------------------------------------------- */

/* A cell a spreadsheet would run as a formula: one that starts with =, +,
 * -, @, a tab or a carriage return and is not a number ("-3.5", "+1e3"
 * stay numbers). OWASP's CSV-injection guidance: prefix it with ' so that
 * it is read as text (issue 40 item 5). */
static bool formula_like(const char *s)
{
    if (!*s || !strchr("=+-@\t\r", *s)) return false;
    char *end;
    strtod(s, &end);
    return end == s || *end;
}

static void put_cell(FILE *f, bool tsv, const char *s)
{
    if (!s) return;
    if (formula_like(s)) {
        char *t = sim_xmalloc(strlen(s) + 2);
        t[0] = '\'';
        strcpy(t + 1, s);
        put_cell(f, tsv, t);
        free(t);
        return;
    }
    if (tsv) {
        for (; *s; s++) fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, f);
        return;
    }
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void put_sep(FILE *f, bool tsv, int i)
{
    if (i) fputc(tsv ? '\t' : ',', f);
}

/* ---- the runs table: config and summary leaves as columns ----------------- */

/* A leaf as a cell: strings as they are, anything else as compact JSON. */
static char *cell_text(const json_t *v)
{
    if (!v || json_is_null(v)) return NULL;
    if (json_is_string(v)) return sim_xstrdup(json_string_value(v));
    return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(10));
}

static const char *const run_fields[] = {"id",         "created",           "kvsim_version", "config_hash",
                                         "trace_path", "trace_fingerprint", "seed",          "wall_seconds"};
#define NRUN_FIELDS (sizeof run_fields / sizeof run_fields[0])

static bool selected(const sim_export_opts *o, int64_t id)
{
    if (!o->runs) return true;
    for (int i = 0; i < o->nruns; i++)
        if (o->runs[i] == id) return true;
    return false;
}

/* One run as a flat object: its fields, config leaves, summary.* leaves;
 * NULL with err when its config or summary is not a JSON object (as
 * kvsim report, export refuses the run rather than blank its columns). */
static json_t *run_row(const char *db, sqlite3_stmt *st, sim_err *err)
{
    json_t *config, *summary;
    if (sim_results_run_json(db, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, NRUN_FIELDS),
                             (const char *)sqlite3_column_text(st, NRUN_FIELDS + 1), &config, &summary, err))
        return NULL;
    json_t *row = json_object();
    for (int c = 0; c < (int)NRUN_FIELDS; c++) {
        const char *t = (const char *)sqlite3_column_text(st, c);
        if (t) json_object_set_new(row, run_fields[c], json_string(t));
    }
    sim_json_flatten(config, "", row);
    sim_json_flatten(summary, "summary", row);
    json_decref(config);
    json_decref(summary);
    return row;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The header: the run fields, then every other column of any row, sorted. */
static const char **run_columns(json_t *rows, size_t *n)
{
    json_t *seen = json_object();
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        const char *key;
        json_t *v;
        json_object_foreach(row, key, v) json_object_set_new(seen, key, json_true());
    }
    for (size_t f = 0; f < NRUN_FIELDS; f++) json_object_del(seen, run_fields[f]);
    size_t extra = json_object_size(seen), k = 0;
    const char **cols = sim_xcalloc(NRUN_FIELDS + extra + 1, sizeof *cols);
    for (size_t f = 0; f < NRUN_FIELDS; f++) cols[k++] = run_fields[f];
    const char *key;
    json_t *v;
    json_object_foreach(seen, key, v) cols[k++] = sim_xstrdup(key);
    qsort(cols + NRUN_FIELDS, extra, sizeof *cols, cmp_str);
    json_decref(seen);
    *n = k;
    return cols;
}

static void write_runs(const sim_export_opts *o, FILE *f, json_t *rows)
{
    size_t ncols, i;
    const char **cols = run_columns(rows, &ncols);
    for (size_t c = 0; c < ncols; c++) put_sep(f, o->tsv, (int)c), put_cell(f, o->tsv, cols[c]);
    fputc('\n', f);
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        for (size_t c = 0; c < ncols; c++) {
            char *t = cell_text(json_object_get(row, cols[c]));
            put_sep(f, o->tsv, (int)c);
            put_cell(f, o->tsv, t);
            free(t);
        }
        fputc('\n', f);
    }
    for (size_t c = NRUN_FIELDS; c < ncols; c++) free((char *)cols[c]);
    free(cols);
}

static int export_runs(const sim_export_opts *o, sqlite3 *db, FILE *f, int64_t *nrows, sim_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT id, created, kvsim_version, config_hash, trace_path, trace_fingerprint, seed,"
                           " wall_seconds, config_json, summary_json FROM runs WHERE summary_json IS NOT NULL"
                           " ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        return sim_errf(err, "%s: %s", o->db, sqlite3_errmsg(db));
    json_t *rows = json_array(), *row = rows;
    while (row && sqlite3_step(st) == SQLITE_ROW)
        if (selected(o, sqlite3_column_int64(st, 0)) && (row = run_row(o->db, st, err)))
            json_array_append_new(rows, row);
    sqlite3_finalize(st);
    *nrows = (int64_t)json_array_size(rows);
    if (row) write_runs(o, f, rows);
    json_decref(rows);
    return row ? 0 : -1;
}

/* ---- any other table, as stored ------------------------------------------- */

static const char *const plain_tables[] = {"requests", "samples", "replicas", "hitrate"};

static int export_plain(const sim_export_opts *o, sqlite3 *db, FILE *f, int64_t *nrows, sim_err *err)
{
    char sql[128];
    const char *id_col = strcmp(o->table, "hitrate") ? "run_id" : "id";
    snprintf(sql, sizeof sql, "SELECT * FROM %s ORDER BY %s, rowid", o->table, id_col);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return sim_errf(err, "%s: table %s: %s", o->db, o->table, sqlite3_errmsg(db));
    int ncols = sqlite3_column_count(st), idc = 0;
    for (int c = 0; c < ncols; c++) {
        if (!strcmp(sqlite3_column_name(st, c), id_col)) idc = c;
        put_sep(f, o->tsv, c), put_cell(f, o->tsv, sqlite3_column_name(st, c));
    }
    fputc('\n', f);
    *nrows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (!selected(o, sqlite3_column_int64(st, idc))) continue;
        for (int c = 0; c < ncols; c++)
            put_sep(f, o->tsv, c), put_cell(f, o->tsv, (const char *)sqlite3_column_text(st, c));
        fputc('\n', f);
        ++*nrows;
    }
    sqlite3_finalize(st);
    return 0;
}

/* --where: the runs it keeps (of --runs' when both are given) become the
 * selection, a list of its own (o->runs is then not the caller's). */
static int narrow(sim_export_opts *o, sqlite3 *db, sim_err *err)
{
    if (!o->where) return 0;
    if (!strcmp(o->table, "hitrate")) return sim_errf(err, "--where selects runs; the hitrate table has none");
    int64_t *ids;
    int n;
    if (sim_results_select_runs(db, o->where, 0, &ids, &n, err)) return -1;
    if (o->runs) sim_results_keep_ids(ids, &n, o->runs, o->nruns);
    o->runs = ids ? ids : sim_xcalloc(1, sizeof *ids);
    o->nruns = n;
    return 0;
}

int sim_export(const sim_export_opts *o, FILE *f, int64_t *rows, sim_err *err)
{
    const char *table = o->table ? o->table : "runs";
    bool known = !strcmp(table, "runs");
    for (size_t i = 0; i < sizeof plain_tables / sizeof plain_tables[0]; i++) known |= !strcmp(table, plain_tables[i]);
    char names[128] = "runs";
    for (size_t i = 0, at = 4; i < sizeof plain_tables / sizeof plain_tables[0]; i++)
        at += (size_t)snprintf(names + at, sizeof names - at, ", %s", plain_tables[i]);
    if (!known)
        return sim_errf(err, "--table: unknown table '%s' (%s)%s", table, names,
                        sim_did_you_mean(table, plain_tables, sizeof plain_tables / sizeof plain_tables[0]));
    sqlite3 *db;
    if (sim_results_open_read(o->db, &db, err)) {
        sqlite3_close(db);
        return -1;
    }
    sim_export_opts one = *o;
    one.table = table;
    int rc = narrow(&one, db, err);
    if (rc == 0)
        rc = strcmp(table, "runs") ? export_plain(&one, db, f, rows, err) : export_runs(&one, db, f, rows, err);
    if (one.runs != o->runs) free(one.runs);
    sqlite3_close(db);
    return rc;
}
