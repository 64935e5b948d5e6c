/* sim/sweep/pool.c — a sweep's worker processes: each point to run is a
 * fork + exec of this very binary (/proc/self/exe) as `kvsim run ... --db
 * PART`, at most opt.jobs at a time, so a crash of one point loses only
 * that point. SIGINT, SIGTERM and SIGHUP reach the workers too, and a
 * worker whose sweep dies (even by SIGKILL) gets SIGTERM. When all
 * have finished, the parts not merged yet are merged into the sweep's
 * database (each is merged as soon as every point before it has ended).
 * sim_sweep_run hands the points to a Slurm job array instead under
 * opt.slurm (slurm.c). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/sweep/sweep.h"
#include "sim/sweep/sweep_int.h"

static int spawn(const sim_sweep *s, sim_sweep_point *p, sim_err *err)
{
    char **argv = sim_sweep_run_argv(s, p);
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) {
        /* A worker dies with its sweep, even one killed by SIGKILL, which
         * no handler sees: an orphan would run on, writing its part. */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() != parent) _exit(127);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, STDOUT_FILENO);
        execv("/proc/self/exe", argv);
        _exit(127); /* only a failed exec gets here, in the child */
    }
    free(argv);
    if (pid < 0) return sim_errf(err, "fork: %s", strerror(errno));
    p->pid = pid;
    p->state = PT_RUNNING;
    p->t0 = sim_wall_seconds();
    return 0;
}

static sim_sweep_point *by_pid(sim_sweep *s, pid_t pid)
{
    for (int64_t i = 0; i < s->n; i++)
        if (s->pts[i].state == PT_RUNNING && s->pts[i].pid == pid) return &s->pts[i];
    return NULL;
}

/* A stop signal (stop.c) stops the sweep: the running workers get the same
 * signal (their open transactions roll back) and the sweep reports what is
 * left for the next run instead of leaving workers behind. */
static int stop_workers(sim_sweep *s, sim_err *err)
{
    for (int64_t i = 0; i < s->n; i++)
        if (s->pts[i].state == PT_RUNNING) kill(s->pts[i].pid, sim_sweep_stop_signal());
    for (int64_t i = 0; i < s->n; i++)
        if (s->pts[i].state == PT_RUNNING) waitpid(s->pts[i].pid, NULL, 0);
    if (s->opt.tty) fputc('\n', stderr);
    return sim_errf(err, "stopped by signal %d: %lld of %lld points done; run the same sweep again to finish",
                    sim_sweep_stop_signal(), (long long)(s->finished - s->failed), (long long)s->todo);
}

/* A finished point's part is merged while later points run, in grid order
 * (run ids follow the grid, as when every part was merged at the end):
 * after each point ends and the next ones have started, the parts of the
 * leading run of ended points not merged yet. A merge is mostly a wait
 * for its commit to reach the disk; left to the end, the 8 merges of the
 * 8-point sweep of `make bench` were a quarter of its wall time at
 * --jobs 1 and the part no second worker could share at --jobs 2
 * (docs/reports.md). */
static int merge_ended(sim_sweep *s, int64_t *upto, sim_err *err)
{
    bool landed;
    for (; *upto < s->n; ++*upto) {
        sim_sweep_point *p = &s->pts[*upto];
        if (p->state == PT_TODO || p->state == PT_RUNNING) break;
        if (p->state == PT_DONE && sim_sweep_merge_part(s->db, p->part, &s->merged, &landed, err)) return -1;
    }
    return 0;
}

/* Keep `jobs` points running until every point has finished. */
static int run_points(sim_sweep *s, sim_err *err)
{
    int64_t next = 0, merged = 0;
    int running = 0;
    sim_sweep_catch_stop();
    if (s->opt.tty) sim_sweep_draw_bar(s, 0);
    for (;;) {
        for (; running < s->opt.jobs && next < s->n && !sim_sweep_stop_signal(); next++) {
            if (s->pts[next].state != PT_TODO) continue;
            if (spawn(s, &s->pts[next], err)) return -1;
            running++;
        }
        if (sim_sweep_stop_signal()) return stop_workers(s, err);
        if (merge_ended(s, &merged, err)) return -1;
        if (!running) break;
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0 && errno == EINTR) continue;
        if (pid < 0) return sim_errf(err, "waitpid: %s", strerror(errno));
        sim_sweep_point *p = by_pid(s, pid);
        if (!p) continue;
        running--;
        s->finished++;
        bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        p->state = ok ? PT_DONE : PT_FAILED;
        s->failed += !ok;
        sim_sweep_report_point(s, p, status, running);
    }
    if (s->opt.tty) fputc('\n', stderr);
    return 0;
}

int sim_sweep_run(sim_sweep *s, sim_err *err)
{
    if (s->opt.slurm.on ? sim_sweep_run_slurm(s, err) : run_points(s, err)) {
        s->stop_signal = sim_sweep_stop_signal();
        return -1;
    }
    if (sim_sweep_merge_parts(s, s->db, &s->merged, err)) return -1;
    rmdir(s->parts);
    return 0;
}
