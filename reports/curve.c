/* reports/curve.c — the figure of `kvsim plan tiers`: the prefix hit rate
 * and TTFT p90 of one cluster against the size of a KV tier, on a log x
 * axis, the knee marked. Written as FIG.png with its data (FIG.dat) and
 * gnuplot script (FIG.gp) beside it, so that it can be restyled and
 * re-rendered (`gnuplot FIG.gp`), as the report's figures are; every
 * string in the script goes through rep_gp_quote. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "reports/report.h"
#include "reports/report_int.h"

static int write_dat(const char *path, const rep_curve *c, sim_err *err)
{
    FILE *f = fopen(path, "w");
    if (!f) return sim_errf(err, "%s: cannot create it: %s", path, strerror(errno));
    fprintf(f, "# size_GB\thit_rate\tttft_p90_ms\n");
    for (int i = 0; i < c->n; i++)
        if (c->x[i] > 0) fprintf(f, "%.17g\t%.17g\t%.17g\n", c->x[i] / 1e9, c->hit[i], c->ttft[i]);
    return fclose(f) ? sim_errf(err, "%s: cannot write it: %s", path, strerror(errno)) : 0;
}

static int write_gp(const char *path, const char *dat, const char *png, const rep_curve *c, sim_err *err)
{
    FILE *f = fopen(path, "w");
    if (!f) return sim_errf(err, "%s: cannot create it: %s", path, strerror(errno));
    char xl[128];
    snprintf(xl, sizeof xl, "%s per node (GB, log scale)", c->tier);
    fputs("set terminal pngcairo size 900,560 font 'sans,11'\nset output ", f);
    rep_gp_string(f, png);
    fputs("\nset title ", f);
    rep_gp_string(f, c->title);
    fputs("\nset xlabel ", f);
    rep_gp_string(f, xl);
    fputs("\nset logscale x\nset ylabel 'prefix hit rate (tokens)'\nset yrange [0:1]\n"
          "set y2label 'TTFT p90 (ms, log scale)'\nset logscale y2\nset y2tics\nset ytics nomirror\n"
          "set grid\nset key outside below\n",
          f);
    if (c->knee > 0) {
        fprintf(f, "set arrow from %.17g, graph 0 to %.17g, graph 1 nohead dt 2 lc rgb 'gray40'\nset label ",
                c->knee / 1e9, c->knee / 1e9);
        char kl[64];
        snprintf(kl, sizeof kl, "knee %.4g GB", c->knee / 1e9);
        rep_gp_string(f, kl);
        fprintf(f, " at %.17g, graph 0.55 offset 1,0\n", c->knee / 1e9);
    }
    fputs("plot ", f);
    rep_gp_string(f, dat);
    fputs(" using 1:2 with linespoints lw 2 pt 7 title 'hit rate', ", f);
    rep_gp_string(f, dat);
    fputs(" using 1:3 axes x1y2 with linespoints lw 2 dt 2 pt 5 title 'TTFT p90'\n", f);
    return fclose(f) ? sim_errf(err, "%s: cannot write it: %s", path, strerror(errno)) : 0;
}

int rep_curve_png(const char *png, const rep_curve *c, sim_err *err)
{
    size_t n = strlen(png) + 8;
    char *dat = sim_xmalloc(n), *gp = sim_xmalloc(n);
    snprintf(dat, n, "%s.dat", png);
    snprintf(gp, n, "%s.gp", png);
    int rc = write_dat(dat, c, err) || write_gp(gp, dat, png, c, err) ? -1 : 0;
    if (rc == 0) {
        pid_t pid = fork();
        if (pid == 0) {
            execlp("gnuplot", "gnuplot", gp, (char *)NULL);
            _exit(127);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) < 0) rc = sim_errf(err, "cannot run gnuplot: %s", strerror(errno));
        else if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
            rc = sim_errf(err, "gnuplot not found (install the Debian package gnuplot-nox); the script is %s", gp);
        else if (!WIFEXITED(status) || WEXITSTATUS(status))
            rc = sim_errf(err, "gnuplot failed on %s (its message is above)", gp);
    }
    free(dat);
    free(gp);
    return rc;
}
