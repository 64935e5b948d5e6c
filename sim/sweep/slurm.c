/* sim/sweep/slurm.c — a sweep's points as Slurm job arrays instead of local
 * workers (`kvsim sweep --slurm`, `kvsim plan slo --slurm`), for machines
 * that share the file system with the submitting one (docs/slurm.md).
 *
 * The points to run go, in grid order, into arrays of at most max_array
 * tasks, task i of an array running point i of its job file (task.c),
 * at most opt.jobs at once (--array=0-N%jobs). Every Slurm command runs
 * from an argv array (tool.c), never a shell line. Then the sweep watches
 * the queue (squeue, which works without accounting) and, when a task has
 * left it (and the tasks of the points before it too: grid order), merges
 * the task's part database into the sweep's: its point is done when the
 * part holds a completed run; failed when, on two looks in a row (a shared
 * file system may show a file late), it does not. Looks
 * start every poll_s and slow to 10 s while nothing changes.
 *
 * Resuming: a failed point stays missing and the next sweep submits only
 * what is missing. A stop signal cancels the arrays (scancel). The array
 * jobs are listed in DB.parts/slurm-jobs until the sweep has seen them
 * out; a sweep that finds one of them still queued (its sweep was killed)
 * stops instead of submitting the same parts twice. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sim/sweep/sweep.h"
#include "sim/sweep/sweep_int.h"

typedef struct slurm_array {
    long long job;
    int64_t *pts; /* task i runs point pts[i] */
    int n;
} slurm_array;

typedef struct slurm_run {
    sim_sweep *s;
    slurm_array *arr;
    int narr;
    char cwd[PATH_MAX], exe[PATH_MAX], script[PATH_MAX + 32], jobs_file[PATH_MAX + 32];
    char *queued;   /* per point: 0 not in the queue, 1 pending, 2 running (the last look) */
    bool cancelled; /* scancel ran: no task will read the job files any more */
    int64_t next;   /* the first point not merged yet (land) */
} slurm_run;

/* ---- the queue ---------------------------------------------------------- */

static slurm_array *array_of(slurm_run *r, long long job)
{
    for (int i = 0; i < r->narr; i++)
        if (r->arr[i].job == job) return &r->arr[i];
    return NULL;
}

/* One look at this user's array tasks: r->queued, and the jobs of `stale`
 * (ids from an earlier sweep) still queued in *still (0 when none). */
static int look(slurm_run *r, const long long *stale, int nstale, long long *still, sim_err *err)
{
    char uid[32], *out;
    snprintf(uid, sizeof uid, "%u", (unsigned)getuid());
    char *argv[] = {"squeue", "--noheader", "--array", "--user", uid, "--format", "%F %K %T", NULL};
    int rc = sim_sweep_tool(argv, &out, err);
    if (rc > 0) rc = sim_errf(err, "squeue failed (exit %d)", rc);
    memset(r->queued, 0, (size_t)r->s->n);
    *still = 0;
    for (char *line = out, *next; rc == 0 && line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        long long job;
        int task;
        char state[32];
        if (sscanf(line, "%lld %d %31s", &job, &task, state) != 3) continue;
        for (int i = 0; i < nstale; i++)
            if (stale[i] == job) *still = job;
        slurm_array *a = array_of(r, job);
        if (a && task >= 0 && task < a->n) r->queued[a->pts[task]] = strcmp(state, "PENDING") ? 2 : 1;
    }
    free(out);
    return rc;
}

/* Stop when an array of an earlier sweep on this database is still queued. */
static int check_stale(slurm_run *r, sim_err *err)
{
    FILE *f = fopen(r->jobs_file, "r");
    if (!f) return 0;
    long long stale[256], still = 0;
    int n = 0;
    while (n < 256 && fscanf(f, "%lld", &stale[n]) == 1) n++;
    fclose(f);
    if (look(r, stale, n, &still, err)) return -1;
    if (still)
        return sim_errf(err,
                        "Slurm job %lld of an earlier sweep on %s is still queued: wait for it to finish (or scancel "
                        "%lld), then run the sweep again",
                        still, r->s->opt.db, still);
    return 0;
}

static void cancel_arrays(slurm_run *r)
{
    char **argv = sim_xcalloc((size_t)r->narr + 2, sizeof *argv), *out;
    argv[0] = "scancel";
    r->cancelled = true;
    int n = 1;
    for (int i = 0; i < r->narr; i++)
        if (r->arr[i].job > 0) {
            argv[n] = sim_xmalloc(32);
            snprintf(argv[n++], 32, "%lld", r->arr[i].job);
        }
    sim_err e = {{0}};
    if (n > 1) sim_sweep_tool(argv, &out, &e), free(out);
    for (int i = 1; i < n; i++) free(argv[i]);
    free(argv);
}

/* ---- submitting --------------------------------------------------------- */

/* s with every % doubled: sbatch reads %A, %a ... in --output. */
static void pct_escape(const char *s, char *out, size_t n)
{
    size_t k = 0;
    for (; *s && k + 3 < n; s++) {
        if (*s == '%') out[k++] = '%';
        out[k++] = *s;
    }
    out[k] = 0;
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
    char buf[PATH_MAX * 2 + 128];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return sim_xstrdup(buf);
}

/* sbatch's argv for array a with job file `file` (free the strings from
 * index 2 up to *nown, then the array). */
static char **sbatch_argv(const slurm_run *r, const slurm_array *a, const char *file, int *nown)
{
    const sim_sweep_slurm *sl = &r->s->opt.slurm;
    char parts[PATH_MAX * 2];
    pct_escape(r->s->parts, parts, sizeof parts);
    char **argv = sim_xcalloc((size_t)sl->nsbatch_args + 16, sizeof *argv);
    int n = 0;
    argv[n++] = "sbatch";
    argv[n++] = "--parsable";
    argv[n++] = fmt("--array=0-%d%%%d", a->n - 1, r->s->opt.jobs);
    argv[n++] = fmt("--output=%s/slurm-%%A_%%a.log", parts);
    argv[n++] = fmt("--chdir=%s", r->cwd);
    argv[n++] = sim_xstrdup("--job-name=kvsim-sweep");
    if (sl->partition) argv[n++] = fmt("--partition=%s", sl->partition);
    *nown = n;
    for (int i = 0; i < sl->nsbatch_args; i++) argv[n++] = sl->sbatch_args[i];
    argv[n++] = (char *)r->script;
    argv[n++] = (char *)r->exe;
    argv[n++] = "sweep";
    argv[n++] = "--array-task";
    argv[n++] = (char *)file;
    return argv;
}

/* Submit array a (points pts, job file PARTS/array-K.json) and note its job id. */
static int submit(slurm_run *r, slurm_array *a, sim_err *err)
{
    char file[PATH_MAX + 64], *out;
    snprintf(file, sizeof file, "%s/array-%d.json", r->s->parts, (int)(a - r->arr));
    if (sim_sweep_write_jobfile(r->s, a->pts, a->n, r->cwd, file, err)) return -1;
    int nown;
    char **argv = sbatch_argv(r, a, file, &nown);
    int rc = sim_sweep_tool(argv, &out, err);
    for (int i = 2; i < nown; i++) free(argv[i]);
    free(argv);
    char *end;
    a->job = out ? strtoll(out, &end, 10) : 0;
    free(out);
    if (rc > 0 || (rc == 0 && a->job <= 0))
        return sim_errf(err, "sbatch failed (exit %d; its message is above): check --partition and --sbatch-args", rc);
    if (rc) return -1;
    FILE *f = fopen(r->jobs_file, "a");
    if (f) fprintf(f, "%lld\n", a->job), fclose(f);
    fprintf(stderr, "kvsim sweep: submitted Slurm array job %lld: %d points, at most %d at once\n", a->job, a->n,
            r->s->opt.jobs);
    for (int i = 0; i < a->n; i++) {
        sim_sweep_point *p = &r->s->pts[a->pts[i]];
        p->state = PT_RUNNING, p->job = a->job, p->task = i, p->t0 = sim_wall_seconds();
    }
    return 0;
}

static int write_script(slurm_run *r, sim_err *err)
{
    FILE *f = fopen(r->script, "w");
    if (!f) return sim_errf(err, "cannot write %s: %s", r->script, strerror(errno));
    fputs("#!/bin/sh\n# kvsim sweep --slurm: an array task runs its point as\n"
          "# KVSIM sweep --array-task JOBFILE, the arguments sbatch passes\nexec \"$@\"\n",
          f);
    return fclose(f) ? sim_errf(err, "cannot write %s: %s", r->script, strerror(errno)) : 0;
}

/* Split the points to run into arrays and submit them all. */
static int submit_all(slurm_run *r, sim_err *err)
{
    sim_sweep *s = r->s;
    int max = s->opt.slurm.max_array > 0 ? s->opt.slurm.max_array : 1000;
    ssize_t n = readlink("/proc/self/exe", r->exe, sizeof r->exe - 1);
    if (!getcwd(r->cwd, sizeof r->cwd) || n <= 0)
        return sim_errf(err, "cannot find the working directory or kvsim binary");
    r->exe[n] = 0;
    if (write_script(r, err)) return -1;
    r->arr = sim_xcalloc((size_t)(s->todo / max + 1), sizeof *r->arr);
    for (int64_t i = 0; i < s->n; i++) {
        if (s->pts[i].state != PT_TODO) continue;
        slurm_array *a = r->narr ? &r->arr[r->narr - 1] : NULL;
        if (!a || a->n == max) {
            a = &r->arr[r->narr++];
            a->pts = sim_xcalloc((size_t)max, sizeof *a->pts);
        }
        a->pts[a->n++] = i;
        if (a->n == max && submit(r, a, err)) return -1;
    }
    if (r->narr && r->arr[r->narr - 1].n < max && submit(r, &r->arr[r->narr - 1], err)) return -1;
    return 0;
}

/* ---- waiting ------------------------------------------------------------ */

/* Merge, in grid order, the parts of the tasks that have left the queue: a
 * point waits for the points before it, so that run ids follow the grid as
 * in a local sweep (and a plan's answer, run ids included, is the local
 * one). *changed when a point ended. */
static int land(slurm_run *r, bool *changed, sim_err *err)
{
    sim_sweep *s = r->s;
    int running = 0;
    s->pending = 0;
    for (int64_t i = 0; i < s->n; i++) {
        running += r->queued[i] == 2;
        s->pending += r->queued[i] == 1;
    }
    for (; r->next < s->n; r->next++) {
        sim_sweep_point *p = &s->pts[r->next];
        bool landed;
        if (p->state != PT_RUNNING) continue; /* recorded, a repeat */
        if (r->queued[r->next]) break;
        if (sim_sweep_merge_part(s->db, p->part, &s->merged, &landed, err)) return -1;
        if (!landed && ++p->gone < 2) break;
        p->state = landed ? PT_DONE : PT_FAILED;
        s->finished++;
        s->failed += !landed;
        *changed = true;
        char log[PATH_MAX + 64];
        snprintf(log, sizeof log, "%s/slurm-%lld_%d.log", s->parts, p->job, p->task);
        if (landed) unlink(log);
        sim_sweep_report_point(s, p, -1, running);
    }
    return 0;
}

static void pause_s(double sec)
{
    struct timespec ts = {.tv_sec = (time_t)sec, .tv_nsec = (long)((sec - (double)(time_t)sec) * 1e9)};
    nanosleep(&ts, NULL); /* a stop signal cuts it short */
}

/* Look at the queue and land parts until every point has ended. */
static int wait_all(slurm_run *r, sim_err *err)
{
    sim_sweep *s = r->s;
    double first = s->opt.slurm.poll_s > 0 ? s->opt.slurm.poll_s : 0.25, wait = first;
    int misses = 0;
    long long still;
    while (s->finished < s->todo) {
        if (sim_sweep_stop_signal()) break;
        sim_err e = {{0}};
        if (look(r, NULL, 0, &still, &e)) {
            if (++misses == 10) return sim_errf(err, "%s (10 times in a row); the arrays are still queued", e.msg);
            pause_s(wait);
            continue;
        }
        misses = 0;
        bool changed = false;
        if (land(r, &changed, err)) return -1;
        if (s->opt.tty) sim_sweep_draw_bar(s, (int)(s->todo - s->finished - s->pending));
        wait = changed ? first : (wait * 1.5 < 10 ? wait * 1.5 : 10);
        if (s->finished < s->todo) pause_s(wait);
    }
    if (s->opt.tty) fputc('\n', stderr);
    if (!sim_sweep_stop_signal()) return 0;
    cancel_arrays(r);
    return sim_errf(err,
                    "stopped by signal %d: %lld of %lld points done, the Slurm arrays cancelled; run the same sweep "
                    "again to finish",
                    sim_sweep_stop_signal(), (long long)(s->finished - s->failed), (long long)s->todo);
}

/* Free the run; its files too once no task can still read them. */
static void cleanup(slurm_run *r, bool done)
{
    char file[PATH_MAX + 64];
    for (int i = 0; i < r->narr; i++) {
        snprintf(file, sizeof file, "%s/array-%d.json", r->s->parts, i);
        if (done) unlink(file);
        free(r->arr[i].pts);
    }
    free(r->arr);
    free(r->queued);
    if (done) unlink(r->script), unlink(r->jobs_file);
}

int sim_sweep_run_slurm(sim_sweep *s, sim_err *err)
{
    slurm_run r = {.s = s, .queued = sim_xcalloc((size_t)s->n + 1, 1)};
    snprintf(r.script, sizeof r.script, "%s/slurm-task.sh", s->parts);
    snprintf(r.jobs_file, sizeof r.jobs_file, "%s/slurm-jobs", s->parts);
    sim_sweep_catch_stop();
    int rc = check_stale(&r, err);
    if (rc == 0) unlink(r.jobs_file);
    if (rc == 0 && (rc = submit_all(&r, err)) != 0) cancel_arrays(&r);
    if (rc == 0) rc = wait_all(&r, err);
    cleanup(&r, rc == 0 || r.cancelled);
    return rc;
}
