/* sim/sweep/sweep.h — the engine of `kvsim sweep` (sim/cli/cmd_sweep.c parses
 * and prints): run a grid of config points (policies, capacities, replay
 * speeds, P:D ratios: any config key) as `kvsim run`s in parallel worker
 * processes and record them all in one results database.
 *
 * How a sweep stays cheap to interrupt and to repeat:
 *  - every point is resolved first (config, policies, trace fingerprint), so
 *    a bad grid or key fails before anything runs (sim_sweep_open);
 *  - a point whose (config hash, trace fingerprint) the database already
 *    holds is skipped: re-running a sweep runs only what is missing;
 *  - each point runs as its own process (fork + exec of this very binary,
 *    /proc/self/exe, `kvsim run ... --db PART`) writing its own part database
 *    in DB.parts/; a run commits as one transaction, so a crash (of a worker
 *    or of the sweep) loses at most the points that were running;
 *  - the parts are merged into DB at the end, and at the start of the next
 *    sweep on DB if a crash left some behind (skipping runs already there).
 * sim_sweep_emit writes the same points as self-contained shell command
 * lines instead, for GNU parallel or a Slurm array; `kvsim merge` gathers
 * their part databases.
 *
 * Use: sim_sweep_open, then either sim_sweep_emit or sim_sweep_run, then
 * sim_sweep_free (always, also after a failed open). The engine writes only
 * the progress of sim_sweep_run to stderr; everything else is in the
 * sim_sweep for the caller to print. The files: sweep.c (points and
 * opening), parts.c (part databases and the lock), pool.c (the worker
 * processes), slurm.c (the same points as Slurm job arrays), stop.c (stop
 * signals), progress.c (the progress display), emit.c (job lines). */
#ifndef SIM_SWEEP_H
#define SIM_SWEEP_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include <jansson.h>

#include "sim/config/grid.h"
#include "sim/results/merge.h"
#include "sim/results/results.h"
#include "sim/util.h"

/* Where the points run instead of local workers: a Slurm job array
 * (slurm.c). The strings are borrowed. */
typedef struct sim_sweep_slurm {
    bool on;
    const char *partition; /* sbatch --partition, or NULL: the cluster's default */
    char **sbatch_args;    /* more sbatch words, as given */
    int nsbatch_args;
    bool sbatch_args_open; /* --sbatch-args ended inside a quote (an error) */
    int max_array;         /* tasks per job array at most (more points: more arrays); 0 = 1000 */
    double poll_s;         /* first pause between two looks at the queue; 0 = 0.25 s */
} sim_sweep_slurm;

/* What to sweep; the strings are borrowed and must outlive the sweep. */
typedef struct sim_sweep_opts {
    const char *config;    /* config file merged over the default, or NULL */
    const char *db;        /* results database; part databases go to DB.parts/ */
    const char *emit;      /* job file for sim_sweep_emit, or NULL to run */
    const char *grid_spec; /* 'key=v1,v2;key2=a,b' (sim/config/grid.h) */
    char **base;           /* fixed "key=value" sets of every point, before the grid's */
    int nbase;
    int jobs;  /* worker processes, >= 1; under slurm.on the array tasks running at once (%N) */
    bool tty;  /* progress as a bar on a terminal, else one line per point */
    bool json; /* the command prints its results as JSON (the engine ignores it) */
    double t0; /* sim_wall_seconds() at the start, for elapsed times and ETA */
    sim_sweep_slurm slurm;
} sim_sweep_opts;

typedef struct sim_sweep_point sim_sweep_point; /* sim/sweep/sweep_int.h */

/* The last trace fingerprinted, and the file it was then (sweep.c). */
typedef struct sim_sweep_fp {
    bool valid;
    char path[PATH_MAX];
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    uint64_t fp;
} sim_sweep_fp;

typedef struct sim_sweep {
    sim_sweep_opts opt;
    int nsets; /* sets per point: opt.nbase + the grid's axes */
    sim_grid grid;
    sim_sweep_point *pts;
    int64_t n;                /* points in the grid */
    int64_t todo;             /* points to run: neither recorded nor a repeat */
    int64_t recorded;         /* points the database already held */
    int64_t recovered;        /* runs merged at open from parts a crashed sweep left */
    int64_t finished, failed; /* of the todo points, by sim_sweep_run */
    int64_t pending;          /* under slurm: array tasks waiting for a CPU */
    sim_merge_stats merged;   /* the final merge of sim_sweep_run */
    int stop_signal;          /* the signal that stopped sim_sweep_run, or 0 */
    char parts[PATH_MAX];     /* DB.parts */
    sim_results *db;
    int lock_fd;
    sim_sweep_fp fp; /* the trace fingerprint, hashed once (sweep.c) */
} sim_sweep;

/* Parse the grid, resolve every point as `kvsim run` will (errors name the
 * point), open the database, and mark the points it already records. To
 * run (opt.emit NULL) it also locks DB.parts against a second sweep on the
 * same database and merges parts a crashed sweep left (recovered). With
 * opt.emit and no database file yet, no database is created. */
int sim_sweep_open(sim_sweep *s, const sim_sweep_opts *o, sim_err *err);

/* Every point of the grid in order, as {"point": its grid sets as text,
 * "sets": {key: value}, "run_id", "summary"}: the newest completed run of
 * it in the database (absent when none, e.g. the point failed). After
 * sim_sweep_run; the caller owns *out. (table.c) */
int sim_sweep_results(const sim_sweep *s, json_t **out, sim_err *err);

/* Write one `cd DIR && KVSIM run ...` line per point to run, to opt.emit,
 * creating DB.parts/ for their part databases. */
int sim_sweep_emit(const sim_sweep *s, sim_err *err);

/* Keep opt.jobs workers running until every point to run has finished
 * (finished, failed), with progress on stderr, then merge the parts into the
 * database (merged) and remove DB.parts/ when empty. SIGINT, SIGTERM or
 * SIGHUP stop the workers too: -1 with stop_signal set and an error saying
 * how far it got. A failed point is counted, not an error. Under
 * opt.slurm the points run as Slurm array tasks instead (slurm.c): parts
 * are merged as each task leaves the queue, a signal cancels the arrays. */
int sim_sweep_run(sim_sweep *s, sim_err *err);

/* The points the database does not record yet (after sim_sweep_open,
 * which merged the parts that had landed): their count, and each one's
 * label in grid order to f when f is not NULL. */
int64_t sim_sweep_missing(const sim_sweep *s, FILE *f);

/* In a Slurm array task: run the point of the job file that
 * SLURM_ARRAY_TASK_ID names (exec of `kvsim run`; returns only on error). */
int sim_sweep_array_task(const char *file, sim_err *err);

/* Release the lock, the database and the points. */
void sim_sweep_free(sim_sweep *s);

#endif
