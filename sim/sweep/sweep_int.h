/* sim/sweep/sweep_int.h — what the files of sim/sweep share and nobody else
 * sees: a point's state, and the functions one file of the room calls in
 * another. Calls go one way only: pool.c calls sweep.c, parts.c, stop.c,
 * slurm.c and progress.c; slurm.c calls sweep.c, parts.c, stop.c, tool.c,
 * task.c and progress.c; task.c calls sweep.c; emit.c calls sweep.c; sweep.c calls parts.c; none calls back. */
#ifndef SIM_SWEEP_INT_H
#define SIM_SWEEP_INT_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "sim/results/merge.h"
#include "sim/results/results.h"
#include "sim/sweep/sweep.h"
#include "sim/util.h"

typedef enum point_state { PT_TODO, PT_RECORDED, PT_DUPLICATE, PT_RUNNING, PT_DONE, PT_FAILED } point_state;

struct sim_sweep_point {
    char **sets;       /* the base sets (borrowed) then the grid sets (owned) */
    char *label;       /* the grid sets, space-separated */
    uint64_t hash, fp; /* config hash, trace fingerprint */
    char part[PATH_MAX + 64];
    point_state state;
    pid_t pid;
    double t0;
    long long job; /* under Slurm: its array job and task, 0 before it is submitted */
    int task;
    int gone; /* looks at the queue that did not find it, its part not landed */
};

/* sweep.c: argv of `kvsim run` for one point (free the array, not its strings). */
char **sim_sweep_run_argv(const sim_sweep *s, const sim_sweep_point *p);

/* parts.c: lock DB.parts (created if missing) against a second sweep. */
int sim_sweep_lock_parts(const sim_sweep *s, int *fd, sim_err *err);
/* parts.c: merge every part database into db, skipping runs already there. */
int sim_sweep_merge_parts(const sim_sweep *s, sim_results *db, sim_merge_stats *st, sim_err *err);

/* parts.c: merge the part at path into db if it holds a completed run
 * (then removed); *landed tells whether it did. */
int sim_sweep_merge_part(sim_results *db, const char *path, sim_merge_stats *st, bool *landed, sim_err *err);

/* stop.c: catch SIGINT, SIGTERM, SIGHUP; the one caught since, or 0. */
void sim_sweep_catch_stop(void);
int sim_sweep_stop_signal(void);

/* tool.c: run argv (argv[0] from PATH, no shell), its standard output into
 * *out (the caller frees, also on error); its exit status, or -1 with err
 * when it could not start (127) or was killed. */
int sim_sweep_tool(char *const argv[], char **out, sim_err *err);

/* task.c: the job file of array tasks 0..n-1 = points idx[0..n-1]. */
int sim_sweep_write_jobfile(const sim_sweep *s, const int64_t *idx, int n, const char *cwd, const char *path,
                            sim_err *err);

/* slurm.c: run the points to run as Slurm job arrays, merging their parts
 * as they land (finished, failed). */
int sim_sweep_run_slurm(sim_sweep *s, sim_err *err);

/* progress.c: the progress bar (opt.tty), and one point's end. */
void sim_sweep_draw_bar(const sim_sweep *s, int running);
void sim_sweep_report_point(const sim_sweep *s, const sim_sweep_point *p, int status, int running);

#endif
