/* sim/sweep/parts.c — a sweep's part databases: every worker writes its own
 * database in DB.parts/ (one transaction a run, so a crash loses at most the
 * running points), merged into DB at the end of a sweep, or at the start of
 * the next one when a crash left some behind. The directory is locked
 * (flock) so that two sweeps never share one database. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "sim/results/merge.h"
#include "sim/results/results.h"
#include "sim/sweep/sweep.h"
#include "sim/sweep/sweep_int.h"

static void remove_db_files(const char *path)
{
    char side[PATH_MAX + 8];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

/* Does the part at path hold a runs table yet? A worker killed as it began
 * (its sweep died: PR_SET_PDEATHSIG) can leave a database without one. */
static bool part_has_runs(const char *path)
{
    sqlite3 *db;
    sqlite3_stmt *st = NULL;
    bool yes = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
               sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name='runs'", -1, &st,
                                  NULL) == SQLITE_OK &&
               sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return yes;
}

static void add_stats(sim_merge_stats *st, const sim_merge_stats *one)
{
    st->runs += one->runs;
    st->skipped += one->skipped;
    if (one->runs && !st->first_run) st->first_run = one->first_run;
    if (one->runs) st->last_run = one->last_run;
}

/* A part that held a completed run (merged now, or already in db) is
 * removed; one without (or without even its tables) is left alone: its
 * point may still be running elsewhere. */
int sim_sweep_merge_part(sim_results *db, const char *path, sim_merge_stats *st, bool *landed, sim_err *err)
{
    sim_merge_stats one = {0};
    *landed = false;
    if (access(path, F_OK) != 0 || !part_has_runs(path)) return 0;
    if (sim_merge_db(db, path, true, &one, err)) return -1;
    *landed = one.runs + one.skipped > 0;
    if (*landed) remove_db_files(path);
    add_stats(st, &one);
    return 0;
}

/* Merge every part database into db (name order = grid order), skipping runs
 * already there (sim_sweep_merge_part). */
int sim_sweep_merge_parts(const sim_sweep *s, sim_results *db, sim_merge_stats *st, sim_err *err)
{
    char pattern[PATH_MAX + 8];
    glob_t g;
    snprintf(pattern, sizeof pattern, "%s/*.db", s->parts);
    if (glob(pattern, 0, NULL, &g) != 0) return 0;
    int rc = 0;
    bool landed;
    for (size_t i = 0; i < g.gl_pathc && rc == 0; i++) rc = sim_sweep_merge_part(db, g.gl_pathv[i], st, &landed, err);
    globfree(&g);
    return rc;
}

/* The parts directory, locked so that two sweeps never share one database. */
int sim_sweep_lock_parts(const sim_sweep *s, int *fd, sim_err *err)
{
    if (mkdir(s->parts, 0777) != 0 && errno != EEXIST)
        return sim_errf(err, "cannot create %s: %s", s->parts, strerror(errno));
    *fd = open(s->parts, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* never inherited by a worker */
    if (*fd < 0) return sim_errf(err, "cannot open %s: %s", s->parts, strerror(errno));
    if (flock(*fd, LOCK_EX | LOCK_NB) != 0)
        return sim_errf(err, "another kvsim sweep is using %s (wait for it to end, or give another --db)", s->opt.db);
    return 0;
}
