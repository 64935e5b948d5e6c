/* sim/sweep/emit.c — a sweep as a job file instead of a run: one
 * self-contained shell line per point to run (`cd DIR && KVSIM run ... --db
 * DB.parts/PART`), for GNU parallel or a Slurm array on machines that share
 * the file system; `kvsim merge` gathers the part databases afterwards. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/outfile.h"
#include "sim/sweep/sweep.h"
#include "sim/sweep/sweep_int.h"

/* A word for sh (sim_sh_word), after a space. */
static void put_word(FILE *f, const char *w)
{
    char *q = sim_sh_word(w);
    fprintf(f, " %s", q);
    free(q);
}

/* A job file is one command per line for a runner whose sh may not read
 * $'...' quotes (dash): an argument with a newline or another control byte
 * is refused, named in those quotes (issue 40 item 4). */
static int check_words(const sim_sweep *s, sim_err *err)
{
    for (int64_t i = 0; i < s->n; i++) {
        if (s->pts[i].state != PT_TODO) continue;
        char **argv = sim_sweep_run_argv(s, &s->pts[i]);
        int rc = 0;
        for (int k = 1; argv[k] && !rc; k++) {
            if (!sim_has_control(argv[k])) continue;
            char *q = sim_sh_word(argv[k]);
            rc = sim_errf(err,
                          "--emit-jobs: the argument %s holds a newline or another control character: a job file "
                          "is one command per line, run by a shell that may not read $'...' quotes; remove it (or "
                          "run the sweep here, without --emit-jobs)",
                          q);
            free(q);
        }
        free(argv);
        if (rc) return rc;
    }
    return 0;
}

int sim_sweep_emit(const sim_sweep *s, sim_err *err)
{
    if (check_words(s, err)) return -1;
    char cwd[PATH_MAX], exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (!getcwd(cwd, sizeof cwd) || n <= 0) return sim_errf(err, "cannot find the working directory or kvsim binary");
    exe[n] = 0;
    if (mkdir(s->parts, 0777) != 0 && errno != EEXIST)
        return sim_errf(err, "cannot create %s: %s", s->parts, strerror(errno));
    sim_outfile out;
    if (sim_outfile_open(&out, s->opt.emit, err)) return -1;
    FILE *f = out.f;
    for (int64_t i = 0; i < s->n; i++) {
        if (s->pts[i].state != PT_TODO) continue;
        char **argv = sim_sweep_run_argv(s, &s->pts[i]);
        fputs("cd", f);
        put_word(f, cwd);
        fputs(" &&", f);
        put_word(f, exe);
        for (int k = 1; argv[k]; k++) put_word(f, argv[k]);
        fputc('\n', f);
        free(argv);
    }
    return sim_outfile_close(&out, err);
}
