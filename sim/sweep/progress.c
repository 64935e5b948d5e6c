/* sim/sweep/progress.c — a running sweep's progress on stderr: a bar redrawn
 * in place on a terminal, one line per finished point otherwise (a log file
 * or CI keeps every line), with the time elapsed and an estimate of the
 * time left; under Slurm also the array tasks pending and the points
 * failed. */
#include <stdio.h>
#include <sys/wait.h>

#include "sim/sweep/sweep.h"
#include "sim/sweep/sweep_int.h"

static void fmt_duration(double sec, char *buf, size_t n)
{
    long t = (long)(sec + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, n, "%ld:%02ld", t / 60, t % 60);
}

/* Estimated time left: the elapsed time per finished point, times the rest. */
static void fmt_eta(const sim_sweep *s, char *buf, size_t n)
{
    if (!s->finished) snprintf(buf, n, "?");
    else fmt_duration((sim_wall_seconds() - s->opt.t0) / (double)s->finished * (double)(s->todo - s->finished), buf, n);
}

void sim_sweep_draw_bar(const sim_sweep *s, int running)
{
    char eta[32], elapsed[32], bar[41];
    int fill = s->todo ? (int)(40 * s->finished / s->todo) : 40;
    for (int i = 0; i < 40; i++) bar[i] = i < fill ? '#' : '.';
    bar[40] = 0;
    fmt_eta(s, eta, sizeof eta);
    fmt_duration(sim_wall_seconds() - s->opt.t0, elapsed, sizeof elapsed);
    fprintf(stderr, "\r\033[K[%s] %lld/%lld points  %d running  ", bar, (long long)s->finished, (long long)s->todo,
            running);
    if (s->opt.slurm.on) fprintf(stderr, "%lld pending  %lld failed  ", (long long)s->pending, (long long)s->failed);
    fprintf(stderr, "%s elapsed  ETA %s", elapsed, eta);
    fflush(stderr); /* no newline: stderr is line-buffered (sim/cli/main.c) */
}

void sim_sweep_report_point(const sim_sweep *s, const sim_sweep_point *p, int status, int running)
{
    char eta[32];
    fmt_eta(s, eta, sizeof eta);
    if (s->opt.tty && p->state == PT_DONE) return sim_sweep_draw_bar(s, running);
    if (s->opt.tty) fputs("\r\033[K", stderr);
    if (p->state == PT_DONE && s->opt.slurm.on)
        fprintf(stderr, "kvsim sweep: [%lld/%lld] done %s; %d running, %lld pending, %lld failed, ETA %s\n",
                (long long)s->finished, (long long)s->todo, p->label, running, (long long)s->pending,
                (long long)s->failed, eta);
    else if (p->state == PT_DONE)
        fprintf(stderr, "kvsim sweep: [%lld/%lld] done %s (%.1f s), ETA %s\n", (long long)s->finished,
                (long long)s->todo, p->label, sim_wall_seconds() - p->t0, eta);
    else if (s->opt.slurm.on)
        fprintf(stderr,
                "kvsim sweep: [%lld/%lld] FAILED %s (Slurm task %lld_%d left no run; its log: %s/slurm-%lld_%d.log)\n",
                (long long)s->finished, (long long)s->todo, p->label, p->job, p->task, s->parts, p->job, p->task);
    else
        fprintf(stderr, "kvsim sweep: [%lld/%lld] FAILED %s (%s %d)\n", (long long)s->finished, (long long)s->todo,
                p->label, WIFEXITED(status) ? "exit" : "signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    if (s->opt.tty) sim_sweep_draw_bar(s, running);
}
