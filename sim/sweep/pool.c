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
 * the next part not merged yet, once its point has ended. One part at a
 * time, and only after every ended worker has been replaced: a merge never
 * keeps a job slot empty (docs/run.md, "Sweeps"). Returns 1 when it merged
 * (or passed over) a point, 0 when the next one is still to run. */
static int merge_next(sim_sweep *s, int64_t *upto, sim_err *err)
{
    bool landed;
    if (*upto >= s->n) return 0;
    sim_sweep_point *p = &s->pts[*upto];
    if (p->state == PT_TODO || p->state == PT_RUNNING) return 0;
    if (p->state == PT_DONE && sim_sweep_merge_part(s->db, p->part, &s->merged, &landed, err)) return -1;
    ++*upto;
    return 1;
}

/* A worker ended with status: its point is done or failed. */
static void ended(sim_sweep *s, pid_t pid, int status, int *running)
{
    sim_sweep_point *p = by_pid(s, pid);
    if (!p) return;
    --*running;
    s->finished++;
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    p->state = ok ? PT_DONE : PT_FAILED;
    s->failed += !ok;
    sim_sweep_report_point(s, p, status, *running);
}

/* Keep `jobs` points running until every point has finished: start
 * workers, take every ended one without waiting, merge one part, and wait
 * only when there is nothing to merge. */
static int run_points(sim_sweep *s, sim_err *err)
{
    int64_t next = 0, merged = 0;
    int running = 0, status, m;
    sim_sweep_catch_stop();
    if (s->opt.tty) sim_sweep_draw_bar(s, 0);
    for (;;) {
        for (; running < s->opt.jobs && next < s->n && !sim_sweep_stop_signal(); next++) {
            if (s->pts[next].state != PT_TODO) continue;
            if (spawn(s, &s->pts[next], err)) return -1;
            running++;
        }
        if (sim_sweep_stop_signal()) return stop_workers(s, err);
        pid_t pid = running ? waitpid(-1, &status, WNOHANG) : 0;
        if (pid > 0) {
            ended(s, pid, status, &running);
            continue; /* its slot first */
        }
        if ((m = merge_next(s, &merged, err)) < 0) return -1;
        if (m) continue;
        if (!running) break;
        pid = waitpid(-1, &status, 0);
        if (pid < 0 && errno == EINTR) continue;
        if (pid < 0) return sim_errf(err, "waitpid: %s", strerror(errno));
        ended(s, pid, status, &running);
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
