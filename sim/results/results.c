/* sim/results/results.c — SQLite schema, prepared inserts and the summary of
 * a run (see sim/results/results.h).
 *
 * The summary is tallied in memory as rows arrive, never queried back: counts
 * and integer sums directly; means and exact percentiles from per-request
 * arrays indexed by request id. The means add the values in id order, the
 * order in which SQLite's AVG() visited them when the summary was computed
 * by SQL (through the (run_id, id) index), so that summaries did not move by
 * a bit when the SQL went away (tests/test_summaries.c).
 *
 * Long runs (docs/run.md, "Long traces"): the arrays are a window of ids.
 * Up to SIM_RESULTS_MEMORY_IDS requests it is all of them, as it always
 * was. Past that, the window's lowest ids whose rows are all in are
 * written to temporary columns (sim/results/spill.h) and the window
 * slides, so memory follows the requests in flight: means still add in id
 * order, percentiles are still exact (radix selection over the columns),
 * and the steady-state window is found online (sim_steady_acc), which the
 * summary's "streamed" key says. */
#include "sim/results/results.h"
#include "sim/results/results_int.h"
#include "sim/results/dynamics.h"
#include "sim/results/spill.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#ifndef KVSIM_GIT
#define KVSIM_GIT "unknown"
#endif

const char *const sim_stage_names[SIM_NSTAGES] = {
    [SIM_STAGE_NONE] = NULL,
    [SIM_STAGE_AT_ARRIVAL] = "at_arrival",
    [SIM_STAGE_AFTER_PREFILL] = "after_prefill",
    [SIM_STAGE_TTFT_SLO] = "ttft_slo",
    [SIM_STAGE_LOST] = "lost",
};

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS runs(id INTEGER PRIMARY KEY, created TEXT, kvsim_version TEXT,"
    " config_json TEXT, config_hash TEXT, trace_path TEXT, trace_fingerprint TEXT, seed INTEGER,"
    " wall_seconds REAL, summary_json TEXT);"
    "CREATE TABLE IF NOT EXISTS requests(run_id INTEGER, id INTEGER, line INTEGER, arrival_ms REAL,"
    " input_len INTEGER, output_len INTEGER, blocks INTEGER, prefill_inst INTEGER, decode_inst INTEGER,"
    " hit_blocks INTEGER, hit_tokens INTEGER, remote_blocks INTEGER, prefill_start_ms REAL,"
    " first_token_ms REAL, done_ms REAL, ttft_ms REAL, tbt_ms REAL, e2e_ms REAL, prefill_gpu_s REAL,"
    " tokens INTEGER, retries INTEGER, status TEXT, stage TEXT, effective INTEGER, itl_ms REAL, preemptions INTEGER,"
    " PRIMARY KEY(run_id, id));"
    "CREATE TABLE IF NOT EXISTS samples(run_id INTEGER, t_ms REAL, instance INTEGER, role TEXT, state TEXT,"
    " queue_len INTEGER, load REAL, batch INTEGER, kv_used REAL, running INTEGER, preemptions INTEGER);"
    "CREATE TABLE IF NOT EXISTS replicas(run_id INTEGER, t_ms REAL, key TEXT, count INTEGER);"
    "CREATE TABLE IF NOT EXISTS hitrate(id INTEGER, created TEXT, kvsim_version TEXT, trace_path TEXT,"
    " trace_fingerprint TEXT, block_tokens INTEGER, policy TEXT, setup TEXT, capacity_tokens REAL,"
    " hit_rate_blocks REAL, hit_rate_tokens REAL, model TEXT, kv_bytes_per_token REAL);"
    "CREATE TABLE IF NOT EXISTS ladder(id INTEGER, created TEXT, kvsim_version TEXT, trace_path TEXT,"
    " trace_fingerprint TEXT, trace_block_tokens INTEGER, block_tokens INTEGER, full_blocks INTEGER,"
    " max_model_len INTEGER, nodes INTEGER, policy TEXT, router TEXT, setup TEXT, rung TEXT,"
    " hit_rate_blocks REAL, hit_rate_tokens REAL, prefill_tokens_saved INTEGER, tokens INTEGER,"
    " loss_tokens REAL, ttft_p90_ms REAL, hbm_tokens REAL, dram_tokens REAL, ssd_tokens REAL, remote_tokens REAL);";

/* Indexes for the readers (kvsim report reads samples run by run and
 * instance by instance), created when a run commits: a first run's bulk
 * insert does not maintain them row by row. */
static const char index_sql[] = "CREATE INDEX IF NOT EXISTS samples_by_run ON samples(run_id, instance, t_ms);"
                                "CREATE INDEX IF NOT EXISTS replicas_by_run ON replicas(run_id);";

static const char insert_request_sql[] =
    "INSERT INTO requests "
    "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26)";
static const char insert_sample_sql[] =
    "INSERT INTO samples(run_id, t_ms, instance, role, state, queue_len, load, batch, kv_used, running, preemptions)"
    " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)";
static const char insert_replica_sql[] = "INSERT INTO replicas VALUES(?1,?2,?3,?4)";

/* One value per request id (NAN = NULL in the requests table). */
typedef struct by_id {
    double *v;
} by_id;

/* What the summary needs of the run's requests rows. */
typedef struct tally {
    int64_t n, done, lost, eff, retries, tokens, stage[SIM_NSTAGES];
    int64_t pre_blocks, pre_hit, pre_input, pre_hit_tokens, pre_remote; /* over prefill-started rows */
    int64_t cap;                                                        /* ids the arrays hold */
    by_id ttft, tbt, gpu, e2e, itl;                                     /* gpu: NAN unless the prefill started */
    by_id arrival, left, fate; /* the steady-state window: ms, ms, stage × 2 + effective */
    /* The arrays hold ids [base, base + cap); below base, in the columns. */
    int64_t base, max_id;
    bool streamed;
    sim_spill col[6]; /* COL_*: ttft, tbt, e2e, itl, arrival, fate, once streamed */
    double gpu_sum;   /* Σ gpu of the ids below base, in id order, and their count */
    int64_t gpu_n;
    sim_steady_acc steady; /* every run: the window online, used once streamed */
} tally;

enum { COL_TTFT, COL_TBT, COL_E2E, COL_ITL, COL_ARRIVAL, COL_FATE, NCOLS };

struct sim_results {
    sqlite3 *db;
    sqlite3_stmt *ins_request, *ins_sample, *ins_replica;
    int64_t run_id;
    bool temp;                        /* the private temporary database: nobody reads its rows */
    char *part;                       /* a sweep part: its name once the run commits (written at part.tmp) */
    bool landed;                      /* the part is renamed into place */
    bool keep_requests, keep_samples; /* this run's rows (never in the temporary database) */
    int64_t rows;                     /* rows this run wrote */
    int64_t memory_ids;               /* requests the summary keeps in memory (SIM_RESULTS_MEMORY_IDS) */
    tally t;
    sim_head head; /* the first requests' latencies, when asked for (results_int.h) */
};

/* ---- the tally ------------------------------------------------------------------- */

/* The window's arrays, in the order tally_grow and slide walk them. */
#define TALLY_ARRAYS(t)                                                                                                \
    {                                                                                                                  \
        &(t)->ttft, &(t)->tbt, &(t)->gpu, &(t)->e2e, &(t)->itl, &(t)->arrival, &(t)->left, &(t)->fate                  \
    }
#define NARRAYS 8

static void tally_reset(tally *t)
{
    by_id *arrays[] = TALLY_ARRAYS(t);
    for (int a = 0; a < NARRAYS; a++) free(arrays[a]->v);
    for (int c = 0; c < NCOLS; c++) sim_spill_close(&t->col[c]);
    sim_steady_acc_free(&t->steady);
    *t = (tally){.max_id = -1};
}

/* The window's array that column c is written from. */
static const by_id *col_array(const tally *t, int c)
{
    const by_id *a[NCOLS] = {&t->ttft, &t->tbt, &t->e2e, &t->itl, &t->arrival, &t->fate};
    return a[c];
}

/* Write the window's first k ids to the columns, then slide it by k. */
static void slide(tally *t, int64_t k)
{
    by_id *arrays[] = TALLY_ARRAYS(t);
    for (int c = 0; c < NCOLS; c++) sim_spill_put_many(&t->col[c], col_array(t, c)->v, k);
    for (int64_t i = 0; i < k; i++)
        if (!isnan(t->gpu.v[i])) t->gpu_sum += t->gpu.v[i], t->gpu_n++;
    for (int a = 0; a < NARRAYS; a++) {
        memmove(arrays[a]->v, arrays[a]->v + k, (size_t)(t->cap - k) * sizeof(double));
        for (int64_t i = t->cap - k; i < t->cap; i++) arrays[a]->v[i] = NAN;
    }
    t->base += k;
}

/* The window full at memory_ids: stream from now on, and write out the
 * ids whose rows are all in (every row sets its arrival). */
static int spill_done_ids(tally *t, sim_err *err)
{
    for (int c = 0; !t->streamed && c < NCOLS; c++)
        if (sim_spill_open(&t->col[c], err)) return -1;
    t->streamed = true;
    int64_t k = 0;
    while (k < t->cap && !isnan(t->arrival.v[k])) k++;
    slide(t, k);
    return 0;
}

/* A streamed run's window written out whole: every id up to the last row. */
static void finish_stream(tally *t)
{
    if (t->streamed) slide(t, t->max_id + 1 - t->base);
}

/* Room for request id; new slots are NAN (no value). */
static int tally_grow(tally *t, int64_t id, int64_t memory_ids, sim_err *err)
{
    if (id - t->base < t->cap) return 0;
    if (t->cap >= memory_ids && spill_done_ids(t, err)) return -1;
    if (id - t->base < t->cap) return 0;
    int64_t cap = t->cap ? t->cap : 1024;
    while (cap <= id - t->base) cap *= 2;
    by_id *arrays[] = TALLY_ARRAYS(t);
    for (int a = 0; a < NARRAYS; a++) {
        arrays[a]->v = sim_xrealloc(arrays[a]->v, (size_t)cap * sizeof(double));
        for (int64_t i = t->cap; i < cap; i++) arrays[a]->v[i] = NAN;
    }
    t->cap = cap;
    return 0;
}

static int tally_add(tally *t, const sim_request_row *w, int64_t memory_ids, sim_err *err)
{
    if (tally_grow(t, w->id, memory_ids, err)) return -1;
    int64_t i = w->id - t->base;
    if (w->id > t->max_id) t->max_id = w->id;
    sim_steady_change(&t->steady, w->left_ms, -1);
    t->n++;
    t->done += w->stage == SIM_STAGE_NONE;
    t->lost += w->stage == SIM_STAGE_LOST;
    t->stage[w->stage]++;
    t->eff += w->effective;
    t->retries += w->retries;
    if (w->stage == SIM_STAGE_NONE) t->tokens += w->tokens;
    if (w->ttft_ms >= 0) t->ttft.v[i] = w->ttft_ms;
    if (w->tbt_ms >= 0) t->tbt.v[i] = w->tbt_ms;
    if (w->e2e_ms >= 0) t->e2e.v[i] = w->e2e_ms;
    if (w->itl_ms >= 0) t->itl.v[i] = w->itl_ms;
    t->arrival.v[i] = w->arrival_ms;
    t->left.v[i] = w->left_ms;
    t->fate.v[i] = (double)(w->stage * 2 + (w->effective != 0));
    if (w->prefill_start_ms < 0) return 0;
    t->pre_blocks += w->blocks;
    t->pre_hit += w->hit_blocks;
    t->pre_input += w->input_len;
    t->pre_hit_tokens += w->hit_tokens;
    t->pre_remote += w->remote_blocks;
    t->gpu.v[i] = w->prefill_gpu_s;
    return 0;
}

int sim_results_reopen_immutable(const char *path, sqlite3 **db, sim_err *err)
{
    char wal[PATH_MAX], uri[3 * PATH_MAX + 32], *u = uri;
    struct stat st;
    snprintf(wal, sizeof wal, "%s-wal", path);
    if (stat(wal, &st) == 0 && st.st_size > 0)
        return sim_errf(err,
                        "%s: read-only, with an unfinished write-ahead log (%s): open it once where it is "
                        "writable (e.g. sqlite3 %s 'PRAGMA wal_checkpoint') or copy both files somewhere writable",
                        path, wal, path);
    u += sprintf(u, "file:");
    for (const char *p = path; *p && u < uri + sizeof uri - 16; p++) /* a URI path escapes %, ? and # */
        u += strchr("%?#", *p) ? sprintf(u, "%%%02X", (unsigned char)*p) : sprintf(u, "%c", *p);
    snprintf(u, sizeof uri - (size_t)(u - uri), "?immutable=1");
    sqlite3_close(*db);
    if (sqlite3_open_v2(uri, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) != SQLITE_OK)
        return sim_errf(err, "cannot open %s read-only: %s", path, sqlite3_errmsg(*db));
    return 0;
}

/* Whether the runs table exists: SQLITE_ROW, SQLITE_DONE, or the error code. */
static int probe_runs(sqlite3 *db)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name='runs'", -1, &st, NULL);
    if (rc != SQLITE_OK) return sqlite3_extended_errcode(db);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? rc : sqlite3_extended_errcode(db);
}

int sim_results_check_open(const char *path, sqlite3 **db, sim_err *err)
{
    int rc = probe_runs(*db);
    if ((rc & 0xff) == SQLITE_CANTOPEN || (rc & 0xff) == SQLITE_READONLY) {
        /* a WAL database on a read-only file system or folder cannot make its -shm file (issue 40 item 8) */
        if (sim_results_reopen_immutable(path, db, err)) return -1;
        rc = probe_runs(*db);
    }
    if (rc == SQLITE_ROW) return 0;
    if (rc == SQLITE_DONE)
        return sim_errf(err, "%s: not a kvsim results database (no runs table; " SIM_RESULTS_HOW ")", path);
    if ((rc & 0xff) == SQLITE_NOTADB) return sim_errf(err, "%s: not a SQLite database (" SIM_RESULTS_HOW ")", path);
    return sim_errf(err, "%s: cannot read: %s", path, sqlite3_errmsg(*db));
}

int sim_results_open_read(const char *path, sqlite3 **db, sim_err *err)
{
    *db = NULL;
    if (access(path, R_OK) != 0)
        return sim_errf(err, "cannot read %s: %s (" SIM_RESULTS_HOW ")", path, strerror(errno));
    if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        return sim_errf(err, "cannot open %s: %s", path, sqlite3_errmsg(*db));
    return sim_results_check_open(path, db, err);
}

const char *sim_results_errmsg(struct sqlite3 *db, char *buf, size_t n)
{
    int code = sqlite3_errcode(db), e = sqlite3_system_errno(db);
    /* SQLite does not always keep the cause of a failed write (a WAL commit
     * loses it); the C library's errno still has it then. Only the causes a
     * write can have are taken from there, never a stale unrelated one. */
    if (!e && (code == SQLITE_IOERR || code == SQLITE_FULL) && (errno == EFBIG || errno == ENOSPC || errno == EDQUOT))
        e = errno;
    if ((code == SQLITE_IOERR || code == SQLITE_FULL || code == SQLITE_CANTOPEN) && e)
        snprintf(buf, n, "%s (%s)", sqlite3_errmsg(db), strerror(e));
    else snprintf(buf, n, "%s", sqlite3_errmsg(db));
    return buf;
}

static int db_error(sim_results *r, const char *what, sim_err *err)
{
    char m[256];
    return sim_errf(err, "results database: %s: %s", what, sim_results_errmsg(r->db, m, sizeof m));
}

static int exec(sim_results *r, const char *sql, sim_err *err)
{
    if (sqlite3_exec(r->db, sql, NULL, NULL, NULL) == SQLITE_OK) return 0;
    char m[256];
    return sim_errf(err, "results database: %s", sim_results_errmsg(r->db, m, sizeof m));
}

/* Columns added since a table was first written: a database from before
 * gets them (NULL in its old rows), so that old results files still open
 * and take new runs. */
static const struct {
    const char *table, *column, *alter;
} added_columns[] = {
    {"hitrate", "kv_bytes_per_token",
     "ALTER TABLE hitrate ADD COLUMN model TEXT; ALTER TABLE hitrate ADD COLUMN kv_bytes_per_token REAL"},
    {"samples", "running", "ALTER TABLE samples ADD COLUMN running INTEGER"},
    {"requests", "itl_ms", "ALTER TABLE requests ADD COLUMN itl_ms REAL"},
    {"requests", "preemptions", "ALTER TABLE requests ADD COLUMN preemptions INTEGER"},
    {"samples", "preemptions", "ALTER TABLE samples ADD COLUMN preemptions INTEGER"},
};

static int upgrade(sim_results *r, sim_err *err)
{
    for (size_t i = 0; i < sizeof added_columns / sizeof added_columns[0]; i++) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(r->db, "SELECT 1 FROM pragma_table_info(?1) WHERE name=?2", -1, &st, NULL) != SQLITE_OK)
            return db_error(r, "read table columns", err);
        sqlite3_bind_text(st, 1, added_columns[i].table, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, added_columns[i].column, -1, SQLITE_STATIC);
        bool has = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
        if (!has && exec(r, added_columns[i].alter, err)) return -1;
    }
    return 0;
}

/* Why path cannot be written, when its file or folder is on a read-only
 * file system or not writable (SQLite says only "unable to open database
 * file", and errno then names the -wal file it could not make); NULL when
 * it can be. */
static const char *unwritable(const char *path, char *buf, size_t n)
{
    if (access(path, F_OK) == 0) {
        if (access(path, W_OK) != 0) return snprintf(buf, n, "%s", strerror(errno)), buf;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) slash == dir ? (void)(slash[1] = 0) : (void)(*slash = 0);
    else snprintf(dir, sizeof dir, ".");
    if (access(dir, F_OK) == 0 && access(dir, W_OK) != 0)
        return snprintf(buf, n, "its folder %s: %s", dir, strerror(errno)), buf;
    return NULL;
}

/* The open's error: the read-only cause when there is one (issue 40 item 8). */
static int open_error(sim_results *r, const char *path, bool temp, sim_err *err)
{
    char m[256], why[PATH_MAX + 128];
    bool notadb = sqlite3_errcode(r->db) == SQLITE_NOTADB;
    if (!temp && !notadb && unwritable(path, why, sizeof why))
        return sim_errf(err, "cannot write results database '%s': %s (give --db a file where you can write)", path,
                        why);
    return sim_errf(err, "results database '%s': %s%s", temp ? "(temporary)" : path,
                    sim_results_errmsg(r->db, m, sizeof m),
                    notadb ? " (give --db a new file, or one kvsim wrote)" : "");
}

/* How each kind of file is written. A results file is in WAL mode, so that
 * a reader (kvsim report) sees the last committed run while a sweep merges
 * into it, with synchronous=NORMAL: in WAL mode a commit then writes the log
 * without waiting for the disk, and only a checkpoint syncs; the file stays
 * consistent through a crash, and a power loss can lose at most the last
 * commits (SQLite, "Write-Ahead Logging", §Performance Considerations). A
 * sweep part (sim_results_open_part) is a scratch file that one merge reads
 * and deletes: no journal and no sync, because it is only renamed into place
 * once its run has committed, so a part that exists is whole. The private
 * temporary database sorts in memory. */
static int configure(sim_results *r, sim_err *err)
{
    if (r->temp) return exec(r, "PRAGMA temp_store=MEMORY", err);
    if (r->part) return exec(r, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF", err);
    return exec(r, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL", err);
}

/* Open path (NULL: temporary) as a results database; a part when part is set. */
static int open_file(sim_results **out, const char *path, const char *part, sim_err *err)
{
    sim_results *r = sim_xcalloc(1, sizeof *r);
    bool temp = !path || !*path;
    *out = NULL;
    if (part) r->part = sim_xstrdup(part);
    /* One thread per database: no SQLite mutexes. */
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(temp ? "" : path, &r->db, flags, NULL) != SQLITE_OK) {
        open_error(r, path, temp, err);
        sim_results_close(r);
        return -1;
    }
    sqlite3_busy_timeout(r->db, 10000);
    r->temp = temp;
    r->memory_ids = SIM_RESULTS_MEMORY_IDS;
    r->t.max_id = -1;
    /* A results file's big sorts (the samples index at commit) spill to a
     * temporary file: memory stays bounded by the page cache. */
    if (configure(r, err) || exec(r, schema_sql, err) || upgrade(r, err) ||
        sqlite3_prepare_v2(r->db, insert_request_sql, -1, &r->ins_request, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(r->db, insert_sample_sql, -1, &r->ins_sample, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(r->db, insert_replica_sql, -1, &r->ins_replica, NULL) != SQLITE_OK) {
        open_error(r, path, temp, err);
        sim_results_close(r);
        return -1;
    }
    *out = r;
    return 0;
}

int sim_results_open(sim_results **out, const char *path, sim_err *err) { return open_file(out, path, NULL, err); }

int sim_results_open_part(sim_results **out, const char *path, sim_err *err)
{
    char tmp[PATH_MAX + 8];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) return sim_errf(err, "%s: name too long", path);
    if (access(path, F_OK) == 0) /* the rename would replace it: never a results file by mistake */
        return sim_errf(err,
                        "%s exists: --part writes a new file and would replace it (merge it with kvsim merge, "
                        "or remove it)",
                        path);
    if (unlink(tmp) != 0 && errno != ENOENT) /* what a killed worker left */
        return sim_errf(err, "cannot remove %s: %s", tmp, strerror(errno));
    return open_file(out, tmp, path, err);
}

int sim_results_begin_run(sim_results *r, const sim_run_info *info, int64_t *run_id, sim_err *err)
{
    if (exec(r, "BEGIN", err)) return -1;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db,
                           "INSERT INTO runs(created, kvsim_version, config_json, config_hash, trace_path,"
                           " trace_fingerprint, seed) VALUES(datetime('now'),?1,?2,?3,?4,?5,?6)",
                           -1, &st, NULL) != SQLITE_OK)
        return db_error(r, "insert run", err);
    char hash[17], fp[17];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)info->config_hash);
    snprintf(fp, sizeof fp, "%016llx", (unsigned long long)info->trace_fingerprint);
    sqlite3_bind_text(st, 1, KVSIM_VERSION "+" KVSIM_GIT, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, info->config_json, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, info->trace_path, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, fp, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)info->seed);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return db_error(r, "insert run", err);
    *run_id = r->run_id = sqlite3_last_insert_rowid(r->db);
    r->keep_requests = !r->temp && !info->no_request_rows;
    r->keep_samples = !r->temp && !info->no_sample_rows;
    r->rows = 0;
    tally_reset(&r->t);
    sim_head_reset(&r->head);
    return 0;
}

/* Bind a value that may be undefined (negative) as NULL. */
static void bind_opt(sqlite3_stmt *st, int i, double v)
{
    if (v < 0) sqlite3_bind_null(st, i);
    else sqlite3_bind_double(st, i, v);
}

static void bind_inst(sqlite3_stmt *st, int i, int inst)
{
    if (inst < 0) sqlite3_bind_null(st, i);
    else sqlite3_bind_int(st, i, inst);
}

static int step_reset(sim_results *r, sqlite3_stmt *st, const char *what, sim_err *err)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    r->rows++;
    return rc == SQLITE_DONE ? 0 : db_error(r, what, err);
}

int64_t sim_results_rows(const sim_results *r) { return r->rows; }

void sim_results_set_memory_ids(sim_results *r, int64_t ids) { r->memory_ids = ids < 1024 ? 1024 : ids; }

void sim_results_arrival(sim_results *r, double arrival_ms)
{
    sim_steady_change(&r->t.steady, arrival_ms, +1);
    sim_head_arrival(&r->head, arrival_ms);
}

void sim_results_keep_head(sim_results *r, int64_t n) { sim_head_init(&r->head, n); }

int sim_results_head(sim_results *r, json_t **out, double *left_ms, double *last_arrival_ms, sim_err *err)
{
    *left_ms = r->head.left_ms;
    *last_arrival_ms = r->head.last_arrival;
    return sim_head_json(&r->head, out, err);
}

/* Mean TTFT (ms) of the requests with one among ids [lo, hi); NAN if none. */
static double ttft_mean(const tally *t, int64_t lo, int64_t hi)
{
    double sum = 0;
    int64_t n = 0;
    for (int64_t i = lo; i < hi && i < t->cap; i++)
        if (!isnan(t->ttft.v[i])) sum += t->ttft.v[i], n++;
    return n ? sum / (double)n : NAN;
}

/* The same over a streamed run's TTFT column: both tenths in one pass. */
typedef struct trend_acc {
    int64_t tenth, n;
    double sum[2];
    int64_t cnt[2];
} trend_acc;

static void trend_visit(void *ctx, int64_t id, const double *v)
{
    trend_acc *a = ctx;
    if (isnan(v[0])) return;
    if (id < a->tenth) a->sum[0] += v[0], a->cnt[0]++;
    if (id >= a->n - a->tenth && id < a->n) a->sum[1] += v[0], a->cnt[1]++;
}

void sim_results_ttft_trend(sim_results *r, double *first_ms, double *last_ms)
{
    int64_t n = r->t.n, tenth = n / 10 > 0 ? n / 10 : 1;
    if (!r->t.streamed) {
        *first_ms = ttft_mean(&r->t, 0, tenth);
        *last_ms = ttft_mean(&r->t, n - tenth, n);
        return;
    }
    finish_stream(&r->t);
    trend_acc a = {.tenth = tenth, .n = n};
    sim_spill *col = &r->t.col[COL_TTFT];
    sim_err err;
    *first_ms = *last_ms = NAN;
    if (sim_spill_scan(&col, 1, trend_visit, &a, &err)) return;
    if (a.cnt[0]) *first_ms = a.sum[0] / (double)a.cnt[0];
    if (a.cnt[1]) *last_ms = a.sum[1] / (double)a.cnt[1];
}

int sim_results_add_request(sim_results *r, const sim_request_row *w, sim_err *err)
{
    if (tally_add(&r->t, w, r->memory_ids, err)) return -1;
    sim_head_add(&r->head, w);
    if (!r->keep_requests) return 0;
    sqlite3_stmt *st = r->ins_request;
    sqlite3_bind_int64(st, 1, r->run_id);
    sqlite3_bind_int64(st, 2, w->id);
    sqlite3_bind_int64(st, 3, w->line);
    sqlite3_bind_double(st, 4, w->arrival_ms);
    sqlite3_bind_int(st, 5, w->input_len);
    sqlite3_bind_int(st, 6, w->output_len);
    sqlite3_bind_int(st, 7, w->blocks);
    bind_inst(st, 8, w->prefill_inst);
    bind_inst(st, 9, w->decode_inst);
    sqlite3_bind_int(st, 10, w->hit_blocks);
    sqlite3_bind_int(st, 11, w->hit_tokens);
    sqlite3_bind_int(st, 12, w->remote_blocks);
    bind_opt(st, 13, w->prefill_start_ms);
    bind_opt(st, 14, w->first_token_ms);
    bind_opt(st, 15, w->done_ms);
    bind_opt(st, 16, w->ttft_ms);
    bind_opt(st, 17, w->tbt_ms);
    bind_opt(st, 18, w->e2e_ms);
    sqlite3_bind_double(st, 19, w->prefill_gpu_s);
    sqlite3_bind_int(st, 20, w->tokens);
    sqlite3_bind_int(st, 21, w->retries);
    const char *status = w->stage == SIM_STAGE_NONE ? "completed" : w->stage == SIM_STAGE_LOST ? "lost" : "rejected";
    sqlite3_bind_text(st, 22, status, -1, SQLITE_STATIC);
    if (w->stage == SIM_STAGE_NONE) sqlite3_bind_null(st, 23);
    else sqlite3_bind_text(st, 23, sim_stage_names[w->stage], -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 24, w->effective);
    bind_opt(st, 25, w->itl_ms);
    sqlite3_bind_int(st, 26, w->preemptions);
    return step_reset(r, st, "insert request", err);
}

bool sim_results_keeps_samples(const sim_results *r) { return r->keep_samples; }

int sim_results_add_sample(sim_results *r, const sim_sample_row *w, sim_err *err)
{
    if (!r->keep_samples) return 0;
    sqlite3_stmt *st = r->ins_sample;
    sqlite3_bind_int64(st, 1, r->run_id);
    sqlite3_bind_double(st, 2, w->t_ms);
    sqlite3_bind_int(st, 3, w->instance);
    sqlite3_bind_text(st, 4, w->role, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, w->state, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 6, w->queue_len);
    sqlite3_bind_double(st, 7, w->load);
    sqlite3_bind_int(st, 8, w->batch);
    sqlite3_bind_double(st, 9, w->kv_used);
    sqlite3_bind_int(st, 10, w->running);
    sqlite3_bind_int64(st, 11, w->preemptions);
    return step_reset(r, st, "insert sample", err);
}

int sim_results_add_replica(sim_results *r, double t_ms, uint64_t key, int count, sim_err *err)
{
    if (!r->keep_samples) return 0;
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)key);
    sqlite3_stmt *st = r->ins_replica;
    sqlite3_bind_int64(st, 1, r->run_id);
    sqlite3_bind_double(st, 2, t_ms);
    sqlite3_bind_text(st, 3, hex, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 4, count);
    return step_reset(r, st, "insert replica", err);
}

/* ---- hit rate vs capacity ------------------------------------------------------ */

/* The next free id of a table of point sets (hitrate, ladder). */
static int next_set_id(sim_results *r, const char *sql, int64_t *id, sim_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK) return db_error(r, "next id", err);
    int rc = sqlite3_step(st);
    *id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : db_error(r, "next id", err);
}

int sim_results_hitrate_id(sim_results *r, int64_t *id, sim_err *err)
{
    return next_set_id(r, "SELECT COALESCE(MAX(id), 0) + 1 FROM hitrate", id, err);
}

/* A hit-rate or ladder row's first four columns: its set id, kvsim's
 * version and the trace's path and fingerprint (as 16 hex digits). */
static void bind_trace_head(sqlite3_stmt *st, int64_t id, const char *trace_path, uint64_t fingerprint)
{
    char fp[17];
    snprintf(fp, sizeof fp, "%016llx", (unsigned long long)fingerprint);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, KVSIM_VERSION "+" KVSIM_GIT, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, trace_path, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, fp, -1, SQLITE_TRANSIENT);
}

int sim_results_add_hitrate(sim_results *r, int64_t id, const sim_hitrate_row *w, sim_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(
            r->db,
            "INSERT INTO hitrate(id, created, kvsim_version, trace_path, trace_fingerprint, block_tokens, policy,"
            " setup, capacity_tokens, hit_rate_blocks, hit_rate_tokens, model, kv_bytes_per_token)"
            " VALUES(?1,datetime('now'),?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)",
            -1, &st, NULL) != SQLITE_OK)
        return db_error(r, "insert hitrate", err);
    bind_trace_head(st, id, w->trace_path, w->trace_fingerprint);
    sqlite3_bind_int(st, 5, w->block_tokens);
    sqlite3_bind_text(st, 6, w->policy, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 7, w->setup ? w->setup : "", -1, SQLITE_TRANSIENT);
    if (isinf(w->capacity_tokens)) sqlite3_bind_null(st, 8);
    else sqlite3_bind_double(st, 8, w->capacity_tokens);
    sqlite3_bind_double(st, 9, w->hit_rate_blocks);
    sqlite3_bind_double(st, 10, w->hit_rate_tokens);
    if (w->model) sqlite3_bind_text(st, 11, w->model, -1, SQLITE_TRANSIENT);
    if (w->kv_bytes_per_token > 0) sqlite3_bind_double(st, 12, w->kv_bytes_per_token);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_error(r, "insert hitrate", err);
}

/* ---- the hit-rate ladder ------------------------------------------------------ */

int sim_results_ladder_id(sim_results *r, int64_t *id, sim_err *err)
{
    return next_set_id(r, "SELECT COALESCE(MAX(id), 0) + 1 FROM ladder", id, err);
}

static void bind_optional(sqlite3_stmt *st, int i, double v)
{
    if (isnan(v)) sqlite3_bind_null(st, i);
    else sqlite3_bind_double(st, i, v);
}

int sim_results_add_ladder(sim_results *r, int64_t id, const sim_ladder_row *w, sim_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db,
                           "INSERT INTO ladder VALUES(?1,datetime('now'),?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,"
                           "?15,?16,?17,?18,?19,?20,?21,?22,?23)",
                           -1, &st, NULL) != SQLITE_OK)
        return db_error(r, "insert ladder", err);
    bind_trace_head(st, id, w->trace_path, w->trace_fingerprint);
    sqlite3_bind_int(st, 5, w->trace_block_tokens);
    sqlite3_bind_int(st, 6, w->block_tokens);
    sqlite3_bind_int(st, 7, w->full_blocks);
    sqlite3_bind_int64(st, 8, w->max_model_len);
    sqlite3_bind_int(st, 9, w->nodes);
    sqlite3_bind_text(st, 10, w->policy, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 11, w->router, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 12, w->setup ? w->setup : "", -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 13, w->rung, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 14, w->hit_rate_blocks);
    sqlite3_bind_double(st, 15, w->hit_rate_tokens);
    sqlite3_bind_int64(st, 16, w->prefill_tokens_saved);
    sqlite3_bind_int64(st, 17, w->tokens);
    sqlite3_bind_double(st, 18, w->loss_tokens);
    bind_optional(st, 19, w->ttft_p90_ms);
    for (int k = 0; k < 4; k++) bind_optional(st, 20 + k, w->tier_tokens[k]);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_error(r, "insert ladder", err);
}

int sim_results_has_run(sim_results *r, uint64_t config_hash, uint64_t trace_fingerprint, bool *found, sim_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db,
                           "SELECT 1 FROM runs WHERE config_hash=?1 AND trace_fingerprint=?2"
                           " AND summary_json IS NOT NULL LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return db_error(r, "look up run", err);
    char hash[17], fp[17];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)config_hash);
    snprintf(fp, sizeof fp, "%016llx", (unsigned long long)trace_fingerprint);
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, fp, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return db_error(r, "look up run", err);
    *found = rc == SQLITE_ROW;
    return 0;
}

struct sqlite3 *sim_results_handle(sim_results *r) { return r->db; }

/* ---- summary ---------------------------------------------------------------- */

/* The per-request latencies' {mean, p50, p90, p99}: sim/results/dist.c. */
static json_t *dist(const tally *t, const by_id *c) { return sim_results_dist(c->v, t->cap); }

/* dist() of a streamed column: the six order statistics in one selection. */
static json_t *dist_streamed(sim_spill *col, sim_err *err)
{
    int64_t n = col->n, ranks[6];
    double pos[3], v[6], at[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        pos[k] = sim_results_quantiles[k] * (double)(n - 1);
        ranks[2 * k] = (int64_t)floor(pos[k]);
        ranks[2 * k + 1] = ranks[2 * k] + 1 < n ? ranks[2 * k] + 1 : ranks[2 * k];
    }
    if (n > 0 && sim_spill_select(col, ranks, 6, v, err)) return NULL;
    for (int k = 0; k < 3 && n > 0; k++) at[k] = v[2 * k] + (v[2 * k + 1] - v[2 * k]) * (pos[k] - (double)ranks[2 * k]);
    return sim_results_dist_json(n, col->sum, at);
}

/* Mean of the values present, added in id order; null when none is. */
static json_t *mean(const tally *t, const by_id *c)
{
    double sum = 0;
    int64_t n = 0;
    for (int64_t i = 0; i < t->cap; i++)
        if (!isnan(c->v[i])) sum += c->v[i], n++;
    return n ? json_real(sum / (double)n) : json_null();
}

static double ratio(double a, double b) { return b > 0 ? a / b : 0; }

/* The requests that arrived in the steady-state window, by fate. */
typedef struct window_count {
    double start, end;
    int64_t n, eff, stage[SIM_NSTAGES];
} window_count;

static void count_in_window(window_count *w, double arrival, double fate_v)
{
    if (isnan(arrival) || arrival < w->start || arrival > w->end) return;
    int fate = (int)fate_v;
    w->n++, w->eff += fate % 2, w->stage[fate / 2]++;
}

static void window_visit(void *ctx, int64_t id, const double *v) { count_in_window(ctx, v[0], v[1]); }

static json_t *window_json(const window_count *w)
{
    json_t *rej = json_object();
    for (int s = SIM_STAGE_AT_ARRIVAL; s < SIM_STAGE_LOST; s++)
        json_object_set_new(rej, sim_stage_names[s], json_integer((json_int_t)w->stage[s]));
    json_object_set_new(rej, "total",
                        json_integer((json_int_t)(w->n - w->stage[SIM_STAGE_NONE] - w->stage[SIM_STAGE_LOST])));
    double span = (w->end - w->start) / 1e3;
    /* a window of no length (every arrival at one instant) has no rate:
     * null, not 0 (it read as no goodput with every request effective) */
    json_t *goodput = span > 0 || w->eff == 0 ? json_real(ratio((double)w->eff, span)) : json_null();
    return json_pack("{s:f, s:f, s:I, s:I, s:f, s:o, s:o}", "start_s", isnan(w->start) ? 0 : w->start / 1e3, "end_s",
                     isnan(w->end) ? 0 : w->end / 1e3, "requests", (json_int_t)w->n, "effective", (json_int_t)w->eff,
                     "slo_attainment", ratio((double)w->eff, (double)w->n), "goodput_rps", goodput, "rejected", rej);
}

/* Goodput, SLO attainment and rejections of the requests that arrived in
 * the steady-state window (sim_steady_window; docs/definitions.md, "Steady
 * state"): what the run sustains, fill-up and drain left out. A streamed
 * run has its window from sim_steady_acc and counts from its columns. */
static json_t *steady_state(tally *t, sim_err *err)
{
    window_count w = {0};
    if (!t->streamed) {
        sim_steady_window(t->arrival.v, t->left.v, (size_t)t->cap, &w.start, &w.end);
        for (int64_t i = 0; i < t->cap; i++) count_in_window(&w, t->arrival.v[i], t->fate.v[i]);
        return window_json(&w);
    }
    sim_steady_acc_window(&t->steady, &w.start, &w.end);
    sim_spill *cols[2] = {&t->col[COL_ARRIVAL], &t->col[COL_FATE]};
    return sim_spill_scan(cols, 2, window_visit, &w, err) ? NULL : window_json(&w);
}

/* The keys a streamed run's summary adds to say so (docs/run.md, "Long traces"). */
static void note_streamed(const tally *t, json_t *out)
{
    if (!t->streamed) return;
    json_object_set_new(out, "streamed",
                        json_pack("{s:I, s:s}", "memory_requests", (json_int_t)t->cap, "note",
                                  "more requests than the summary keeps in memory: per-request values were written "
                                  "to temporary files as requests completed; means and percentiles are exact, the "
                                  "steady-state window was found online (its median load summed per load level)"));
}

/* ttft, tbt, e2e, itl of the run: in memory or from the columns. */
static json_t *dist_of(tally *t, int col, sim_err *err)
{
    const by_id *c[] = {&t->ttft, &t->tbt, &t->e2e, &t->itl};
    return t->streamed ? dist_streamed(&t->col[col], err) : dist(t, c[col]);
}

static json_t *gpu_mean(const tally *t)
{
    if (!t->streamed) return mean(t, &t->gpu);
    return t->gpu_n ? json_real(t->gpu_sum / (double)t->gpu_n) : json_null();
}

/* The keys after the first fifteen, in the order summaries always had them. */
static int summary_rest(tally *t, json_t *out, sim_err *err)
{
    json_object_set_new(out, "lost", json_integer((json_int_t)t->lost));
    json_object_set_new(out, "retries", json_integer((json_int_t)t->retries));
    json_t *e2e = dist_of(t, COL_E2E, err);
    if (!e2e) return -1;
    json_object_set_new(out, "e2e_ms", e2e);
    json_t *itl = dist_of(t, COL_ITL, err);
    if (!itl) return -1;
    json_object_set_new(out, "itl_ms", itl);
    json_t *st = steady_state(t, err);
    if (!st) return -1;
    json_object_set_new(out, "steady_state", st);
    note_streamed(t, out);
    return 0;
}

int sim_results_summary(sim_results *r, double sim_seconds, int64_t events, json_t **out, sim_err *err)
{
    tally *t = &r->t;
    finish_stream(t);
    json_t *rej = json_object();
    for (int s = SIM_STAGE_AT_ARRIVAL; s < SIM_STAGE_LOST; s++)
        json_object_set_new(rej, sim_stage_names[s], json_integer((json_int_t)t->stage[s]));
    json_object_set_new(rej, "total", json_integer((json_int_t)(t->n - t->done - t->lost)));
    double n = (double)t->n, eff = (double)t->eff;
    json_t *ttft = dist_of(t, COL_TTFT, err), *tbt = ttft ? dist_of(t, COL_TBT, err) : NULL;
    *out = tbt ? json_pack("{s:I, s:I, s:o, s:I, s:f, s:f, s:o, s:o, s:f, s:f, s:I, s:o, s:I, s:f, s:I}", "requests",
                           (json_int_t)t->n, "completed", (json_int_t)t->done, "rejected", rej, "effective",
                           (json_int_t)t->eff, "slo_attainment", ratio(eff, n), "goodput_rps", ratio(eff, sim_seconds),
                           "ttft_ms", ttft, "tbt_ms", tbt, "hit_rate_blocks",
                           ratio((double)t->pre_hit, (double)t->pre_blocks), "hit_rate_tokens",
                           ratio((double)t->pre_hit_tokens, (double)t->pre_input), "remote_blocks",
                           (json_int_t)t->pre_remote, "prefill_gpu_s_mean", gpu_mean(t), "tokens",
                           (json_int_t)t->tokens, "sim_seconds", sim_seconds, "events", (json_int_t)events)
               : NULL;
    if (!tbt) {
        json_decref(rej);
        json_decref(ttft);
        return -1;
    }
    if (!*out) return sim_errf(err, "results: building the summary failed");
    if (summary_rest(t, *out, err) == 0) return 0;
    json_decref(*out);
    *out = NULL;
    return -1;
}

int sim_results_finish_run(sim_results *r, const json_t *summary, double wall_seconds, sim_err *err)
{
    char *text = json_dumps(summary, JSON_COMPACT);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(r->db, "UPDATE runs SET wall_seconds=?1, summary_json=?2 WHERE id=?3", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_double(st, 1, wall_seconds);
        sqlite3_bind_text(st, 2, text, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 3, r->run_id);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
        sqlite3_finalize(st);
    }
    free(text);
    if (rc != SQLITE_OK) return db_error(r, "store summary", err);
    /* A part's indexes too: a merge copies its samples in index order. */
    if (exec(r, index_sql, err) || exec(r, "COMMIT", err)) return -1;
    if (!r->part) return 0;
    const char *tmp = sqlite3_db_filename(r->db, "main");
    if (rename(tmp, r->part) != 0) return sim_errf(err, "cannot rename %s to %s: %s", tmp, r->part, strerror(errno));
    r->landed = true;
    return 0;
}

void sim_results_abandon_run(sim_results *r)
{
    if (r && r->db && !sqlite3_get_autocommit(r->db)) sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
}

void sim_results_close(sim_results *r)
{
    if (!r) return;
    sqlite3_finalize(r->ins_request);
    sqlite3_finalize(r->ins_sample);
    sqlite3_finalize(r->ins_replica);
    /* A part whose run did not commit is no part: removed, never merged. */
    char *unland = r->part && !r->landed && r->db ? sim_xstrdup(sqlite3_db_filename(r->db, "main")) : NULL;
    sqlite3_close(r->db);
    if (unland && *unland) unlink(unland);
    free(unland);
    free(r->part);
    tally_reset(&r->t);
    sim_head_free(&r->head);
    free(r);
}

void sim_json_flatten(const json_t *node, const char *prefix, json_t *out)
{
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)node, key, val)
    {
        char path[512];
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", key);
        if (json_is_object(val)) sim_json_flatten(val, path, out);
        else json_object_set(out, path, (json_t *)val);
    }
}

/* One JSON object column of a runs row, or NULL with err naming what is wrong. */
static json_t *run_object(const char *db, int64_t id, const char *column, const char *text, sim_err *err)
{
    json_error_t je;
    json_t *j = text ? json_loads(text, 0, &je) : NULL;
    if (!text) sim_errf(err, "%s: run %lld: %s is NULL", db, (long long)id, column);
    else if (!j)
        sim_errf(err, "%s: run %lld: %s is not JSON (%d:%d: %s)", db, (long long)id, column, je.line, je.column,
                 je.text);
    else if (!json_is_object(j)) {
        sim_errf(err, "%s: run %lld: %s is not a JSON object", db, (long long)id, column);
        json_decref(j);
        j = NULL;
    }
    return j;
}

int sim_results_run_json(const char *db, int64_t id, const char *config_text, const char *summary_text, json_t **config,
                         json_t **summary, sim_err *err)
{
    *summary = NULL;
    if (!(*config = run_object(db, id, "config_json", config_text, err))) return -1;
    if ((*summary = run_object(db, id, "summary_json", summary_text, err))) return 0;
    json_decref(*config);
    *config = NULL;
    return -1;
}

/* ---- run id lists (--runs 3,7,10-12) ------------------------------------------ */

static int parse_id(const char *s, const char *end, int64_t *out)
{
    char buf[32];
    if (end - s <= 0 || end - s >= (long)sizeof buf) return -1;
    memcpy(buf, s, (size_t)(end - s));
    buf[end - s] = 0;
    char *e;
    errno = 0;
    long long v = strtoll(buf, &e, 10);
    if (*e || errno || v < 1) return -1;
    *out = v;
    return 0;
}

static int cmp_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* A run named twice (`--runs 1,1`, `1-3,2`) is an error naming it: a
 * report once failed writing its config file a second time. */
static int no_repeat(const char *spec, int64_t *ids, int n, sim_err *err)
{
    int64_t *sorted = sim_xmalloc((size_t)n * sizeof *sorted);
    memcpy(sorted, ids, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_id);
    int64_t twice = 0;
    for (int i = 1; i < n && !twice; i++)
        if (sorted[i] == sorted[i - 1]) twice = sorted[i];
    free(sorted);
    if (!twice) return 0;
    return sim_errf(err, "--runs '%s': run %lld is named twice", spec, (long long)twice);
}

int sim_results_parse_ids(const char *spec, int64_t **out, int *n, sim_err *err)
{
    *out = NULL;
    *n = 0;
    int cap = 0;
    for (const char *p = spec;;) {
        const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p),
                   *dash = memchr(p, '-', (size_t)(end - p));
        int64_t a, b;
        if (parse_id(p, dash ? dash : end, &a) || (dash && parse_id(dash + 1, end, &b)) || (dash && b < a) ||
            (dash ? b - a : 0) > 1000000) {
            free(*out);
            *out = NULL;
            return sim_errf(err, "--runs '%s': expected ids and ranges such as 3,7,10-12", spec);
        }
        for (int64_t id = a; id <= (dash ? b : a); id++) {
            if (*n == cap) *out = sim_xrealloc(*out, (size_t)(cap = cap ? 2 * cap : 16) * sizeof **out);
            (*out)[(*n)++] = id;
        }
        if (!comma && no_repeat(spec, *out, *n, err)) {
            free(*out);
            *out = NULL, *n = 0;
            return -1;
        }
        if (!comma) return 0;
        p = comma + 1;
    }
}

/* ---- run selection (--where, --last) ------------------------------------------- */

int sim_results_select_runs(struct sqlite3 *db, const char *where, int64_t last, int64_t **ids, int *n, sim_err *err)
{
    char *sql = sqlite3_mprintf("SELECT id FROM (SELECT id FROM runs WHERE summary_json IS NOT NULL AND (%s)"
                                " ORDER BY id DESC LIMIT ?1) ORDER BY id",
                                where && *where ? where : "1");
    sqlite3_stmt *st = NULL;
    const char *tail = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, &tail);
    bool extra = rc == SQLITE_OK && tail && tail[strspn(tail, " \t\n;")]; /* tail points into sql */
    sqlite3_free(sql);
    if (rc != SQLITE_OK) return sim_errf(err, "--where '%s': %s", where ? where : "", sqlite3_errmsg(db));
    if (extra || !sqlite3_stmt_readonly(st)) {
        sqlite3_finalize(st);
        return sim_errf(err,
                        "--where '%s': one SQL expression over the runs table, e.g. "
                        "\"json_extract(config_json, '$.policy.router') = 'kvcentric'\"",
                        where);
    }
    sqlite3_bind_int64(st, 1, last > 0 ? last : -1);
    int cap = 0;
    *ids = NULL;
    *n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) *ids = sim_xrealloc(*ids, (size_t)(cap = cap ? 2 * cap : 16) * sizeof **ids);
        (*ids)[(*n)++] = sqlite3_column_int64(st, 0);
    }
    if (rc != SQLITE_DONE) sim_errf(err, "--where '%s': %s", where ? where : "", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

void sim_results_keep_ids(int64_t *ids, int *n, const int64_t *keep, int nkeep)
{
    int w = 0;
    for (int i = 0; i < *n; i++) {
        bool in = false;
        for (int k = 0; k < nkeep && !in; k++) in = keep[k] == ids[i];
        if (in) ids[w++] = ids[i];
    }
    *n = w;
}
