/* sim/results/merge.c — copy the runs of one results database into another with
 * run ids remapped (see sim/results/merge.h).
 *
 * The input is ATTACHed as "src". Tables are discovered, not listed: every
 * source table with a run_id column is copied run by run, so a table a later
 * kvsim adds merges without an edit here; a table the target lacks is created
 * from the source's own CREATE statement, and only the columns both sides
 * have are copied (an older target keeps working). Values move with
 * INSERT ... SELECT inside SQLite; identifiers are quoted with %w. */
#include "sim/results/merge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

typedef struct merge_ctx {
    sqlite3 *db;
    const char *in;
    bool skip_existing;
    sim_merge_stats *st;
    sqlite3_stmt **per_run; /* one INSERT ... SELECT per table with a run_id column */
    int nper_run;
    sqlite3_stmt *hitrate; /* NULL when the source has no hitrate table */
    sim_err *err;
} merge_ctx;

static int fail(merge_ctx *m, const char *what)
{
    char msg[256];
    return sim_errf(m->err, "%s: %s: %s", m->in, what, sim_results_errmsg(m->db, msg, sizeof msg));
}

static int exec(merge_ctx *m, const char *sql, const char *what)
{
    return sqlite3_exec(m->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : fail(m, what);
}

/* "a","b",... : the columns of `table` present in both src and main, in the
 * source's order, leaving out `key` (the column that gets a new value). */
static char *shared_columns(merge_ctx *m, const char *table, const char *key)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(m->db,
                           "SELECT s.name FROM pragma_table_info(?1,'src') s"
                           " JOIN pragma_table_info(?1,'main') t ON t.name = s.name WHERE s.name <> ?2 ORDER BY s.cid",
                           -1, &st, NULL) != SQLITE_OK)
        return NULL;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_TRANSIENT);
    sqlite3_str *cols = sqlite3_str_new(m->db);
    for (int n = 0; sqlite3_step(st) == SQLITE_ROW; n++)
        sqlite3_str_appendf(cols, "%s\"%w\"", n ? "," : "", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return sqlite3_str_finish(cols);
}

/* INSERT INTO main.T(key, cols) SELECT ?1, cols FROM src.T WHERE key = ?2 */
static sqlite3_stmt *copy_stmt(merge_ctx *m, const char *table, const char *key)
{
    char *cols = shared_columns(m, table, key);
    if (!cols) return NULL;
    char *sql = sqlite3_mprintf("INSERT INTO main.\"%w\"(\"%w\"%s%s) SELECT ?1%s%s FROM src.\"%w\" WHERE \"%w\" = ?2",
                                table, key, *cols ? "," : "", cols, *cols ? "," : "", cols, table, key);
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(m->db, sql, -1, &st, NULL);
    sqlite3_free(sql);
    sqlite3_free(cols);
    return st;
}

static bool has_column(merge_ctx *m, const char *table, const char *column)
{
    sqlite3_stmt *st;
    bool found = false;
    if (sqlite3_prepare_v2(m->db, "SELECT 1 FROM pragma_table_info(?1,'src') WHERE name = ?2", -1, &st, NULL) !=
        SQLITE_OK)
        return false;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, column, -1, SQLITE_TRANSIENT);
    found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

/* Create a source table in the target from the source's CREATE statement. */
static int ensure_table(merge_ctx *m, const char *table, const char *create_sql)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(m->db, "SELECT 1 FROM main.sqlite_master WHERE type='table' AND name=?1", -1, &st, NULL) !=
        SQLITE_OK)
        return fail(m, "read schema");
    sqlite3_bind_text(st, 1, table, -1, SQLITE_TRANSIENT);
    bool exists = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return exists ? 0 : exec(m, create_sql, "create table");
}

/* Prepare the copy statements of every source table but runs. */
static int prepare_tables(merge_ctx *m)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(m->db,
                           "SELECT name, sql FROM src.sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
                           " AND name <> 'runs' ORDER BY name",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(m, "read schema");
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        const char *table = (const char *)sqlite3_column_text(st, 0), *sql = (const char *)sqlite3_column_text(st, 1);
        bool is_hitrate = !strcmp(table, "hitrate");
        if (!is_hitrate && !has_column(m, table, "run_id")) continue; /* not per run: not ours to copy */
        if (ensure_table(m, table, sql)) rc = -1;
        sqlite3_stmt *copy = rc ? NULL : copy_stmt(m, table, is_hitrate ? "id" : "run_id");
        if (!rc && !copy) rc = fail(m, "prepare copy");
        if (rc) break;
        if (is_hitrate) {
            m->hitrate = copy;
        } else {
            m->per_run = sim_xrealloc(m->per_run, (size_t)(m->nper_run + 1) * sizeof *m->per_run);
            m->per_run[m->nper_run++] = copy;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* Run a copy statement from key old_id to key new_id (0 = a fresh rowid). */
static int run_copy(merge_ctx *m, sqlite3_stmt *st, int64_t new_id, int64_t old_id)
{
    if (new_id) sqlite3_bind_int64(st, 1, new_id);
    else sqlite3_bind_null(st, 1);
    sqlite3_bind_int64(st, 2, old_id);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : fail(m, "copy rows");
}

/* The summary names its run: rewrite run_id to the new id. */
static int fix_summary(merge_ctx *m, int64_t new_id, const char *summary)
{
    json_t *j = json_loads(summary, 0, NULL);
    if (!j) return sim_errf(m->err, "%s: run %lld: summary_json is not JSON", m->in, (long long)new_id);
    json_object_set_new(j, "run_id", json_integer(new_id));
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(m->db, "UPDATE main.runs SET summary_json=?1 WHERE id=?2", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, new_id);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
        sqlite3_finalize(st);
    }
    free(text);
    return rc == SQLITE_OK ? 0 : fail(m, "update summary");
}

static int already_there(merge_ctx *m, const char *hash, const char *fp, bool *found)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(m->db,
                           "SELECT 1 FROM main.runs WHERE config_hash=?1 AND trace_fingerprint=?2"
                           " AND summary_json IS NOT NULL",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(m, "look up run");
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, fp, -1, SQLITE_TRANSIENT);
    *found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return 0;
}

/* Copy one completed source run and its rows; *new_id = 0 when skipped. */
static int copy_run(merge_ctx *m, sqlite3_stmt *insert_run, sqlite3_stmt *src_row, int64_t *new_id)
{
    int64_t old_id = sqlite3_column_int64(src_row, 0);
    const char *hash = (const char *)sqlite3_column_text(src_row, 1),
               *fp = (const char *)sqlite3_column_text(src_row, 2);
    bool found = false;
    *new_id = 0;
    if (m->skip_existing && hash && fp && already_there(m, hash, fp, &found)) return -1;
    if (found) return 0;
    if (run_copy(m, insert_run, 0, old_id)) return -1;
    *new_id = sqlite3_last_insert_rowid(m->db);
    if (fix_summary(m, *new_id, (const char *)sqlite3_column_text(src_row, 3))) return -1;
    for (int i = 0; i < m->nper_run; i++)
        if (run_copy(m, m->per_run[i], *new_id, old_id)) return -1;
    return 0;
}

static int copy_runs(merge_ctx *m)
{
    sqlite3_stmt *insert_run = copy_stmt(m, "runs", "id"), *src_runs = NULL;
    if (!insert_run || sqlite3_prepare_v2(m->db,
                                          "SELECT id, config_hash, trace_fingerprint, summary_json FROM src.runs"
                                          " WHERE summary_json IS NOT NULL ORDER BY id",
                                          -1, &src_runs, NULL) != SQLITE_OK) {
        sqlite3_finalize(insert_run);
        return fail(m, "read runs");
    }
    int rc = 0;
    while (rc == 0 && sqlite3_step(src_runs) == SQLITE_ROW) {
        int64_t new_id;
        rc = copy_run(m, insert_run, src_runs, &new_id);
        if (rc || !new_id) {
            m->st->skipped += !rc;
            continue;
        }
        m->st->runs++;
        if (!m->st->first_run) m->st->first_run = new_id;
        m->st->last_run = new_id;
    }
    sqlite3_finalize(src_runs);
    sqlite3_finalize(insert_run);
    return rc;
}

/* A hitrate set's rows as one string, every column but id (created
 * included, so only a copy of the same set matches). */
#define HITRATE_SIG                                                                                                    \
    "group_concat(quote(created)||quote(kvsim_version)||quote(trace_path)||quote(trace_fingerprint)||"                 \
    "quote(block_tokens)||quote(policy)||quote(setup)||quote(capacity_tokens)||quote(hit_rate_blocks)||"               \
    "quote(hit_rate_tokens), '|')"

/* Does the target hold a set identical to source set old_id? */
static int hitrate_there(merge_ctx *m, int64_t old_id, bool *found)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(m->db,
                           "SELECT 1 FROM (SELECT " HITRATE_SIG
                           " s FROM (SELECT * FROM main.hitrate ORDER BY id, rowid)"
                           " GROUP BY id) WHERE s = (SELECT " HITRATE_SIG " FROM (SELECT * FROM src.hitrate"
                           " WHERE id=?1 ORDER BY rowid))",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(m, "look up hitrate");
    sqlite3_bind_int64(st, 1, old_id);
    *found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return 0;
}

/* Each source hitrate id becomes the target's next free id (one the target
 * already holds is left out under skip_existing). */
static int copy_hitrate(merge_ctx *m, sim_results *out)
{
    sqlite3_stmt *ids;
    if (!m->hitrate) return 0;
    if (sqlite3_prepare_v2(m->db, "SELECT DISTINCT id FROM src.hitrate ORDER BY id", -1, &ids, NULL) != SQLITE_OK)
        return fail(m, "read hitrate");
    int rc = 0;
    while (rc == 0 && sqlite3_step(ids) == SQLITE_ROW) {
        int64_t new_id, old_id = sqlite3_column_int64(ids, 0);
        bool found = false;
        if (m->skip_existing && (rc = hitrate_there(m, old_id, &found)) == 0 && found) {
            m->st->hitrate_skipped++;
            continue;
        }
        rc = rc || sim_results_hitrate_id(out, &new_id, m->err) || run_copy(m, m->hitrate, new_id, old_id);
        m->st->hitrate_sets += !rc;
    }
    sqlite3_finalize(ids);
    return rc;
}

/* The input must exist (ATTACH would create it), differ from the target and
 * have a runs table. */
static int check_input(merge_ctx *m)
{
    struct stat a, b;
    const char *target = sqlite3_db_filename(m->db, "main");
    if (stat(m->in, &a) != 0 || access(m->in, R_OK) != 0)
        return sim_errf(m->err, "%s: cannot read: %s (" SIM_RESULTS_HOW ")", m->in, strerror(errno));
    if (!S_ISREG(a.st_mode)) return sim_errf(m->err, "%s: not a regular file", m->in);
    if (target && *target && stat(target, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        return sim_errf(m->err, "%s: is the target database itself", m->in);
    return 0;
}

static int has_runs_table(merge_ctx *m)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(m->db, "SELECT 1 FROM src.sqlite_master WHERE type='table' AND name='runs'", -1, &st,
                           NULL) != SQLITE_OK)
        return sim_errf(m->err, "%s: not a SQLite database (%s)", m->in, sqlite3_errmsg(m->db));
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW) return 0;
    if (rc == SQLITE_DONE)
        return sim_errf(m->err, "%s: not a kvsim results database (no runs table; " SIM_RESULTS_HOW ")", m->in);
    return sim_errf(m->err, "%s: not a SQLite database (%s)", m->in, sqlite3_errmsg(m->db));
}

static int attach(merge_ctx *m)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(m->db, "ATTACH ?1 AS src", -1, &st, NULL) != SQLITE_OK) return fail(m, "attach");
    sqlite3_bind_text(st, 1, m->in, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : sim_errf(m->err, "%s: cannot open: %s", m->in, sqlite3_errmsg(m->db));
}

int sim_merge_db(sim_results *out, const char *in_path, bool skip_existing, sim_merge_stats *st, sim_err *err)
{
    merge_ctx m = {.db = sim_results_handle(out), .in = in_path, .skip_existing = skip_existing, .st = st, .err = err};
    if (check_input(&m) || attach(&m)) return -1;
    sim_merge_stats before = *st;
    int rc = has_runs_table(&m);
    if (rc == 0) rc = exec(&m, "BEGIN", "begin");
    if (rc == 0) {
        rc = prepare_tables(&m) || copy_runs(&m) || copy_hitrate(&m, out) || exec(&m, "COMMIT", "commit");
        if (rc) {
            sqlite3_exec(m.db, "ROLLBACK", NULL, NULL, NULL);
            *st = before;
        }
    }
    for (int i = 0; i < m.nper_run; i++) sqlite3_finalize(m.per_run[i]);
    free(m.per_run);
    sqlite3_finalize(m.hitrate);
    sqlite3_exec(m.db, "DETACH src", NULL, NULL, NULL);
    return rc ? -1 : 0;
}
