/* sim/sweep/sweep_int.h — what the files of sim/sweep share and nobody else
 * sees: a point's state, and the functions one file of the room calls in
 * another. Calls go one way only: pool.c calls sweep.c, parts.c and
 * progress.c; emit.c calls sweep.c; sweep.c calls parts.c; none calls back. */
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
};

/* sweep.c: argv of `kvsim run` for one point (free the array, not its strings). */
char **sim_sweep_run_argv(const sim_sweep *s, const sim_sweep_point *p);

/* parts.c: lock DB.parts (created if missing) against a second sweep. */
int sim_sweep_lock_parts(const sim_sweep *s, int *fd, sim_err *err);
/* parts.c: merge every part database into db, skipping runs already there. */
int sim_sweep_merge_parts(const sim_sweep *s, sim_results *db, sim_merge_stats *st, sim_err *err);

/* progress.c: the progress bar (opt.tty), and one point's end. */
void sim_sweep_draw_bar(const sim_sweep *s, int running);
void sim_sweep_report_point(const sim_sweep *s, const sim_sweep_point *p, int status, int running);

#endif
