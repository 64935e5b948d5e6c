/* sim/cost/calib_probe.c — finding and running the data-path probe
 * (datapath/probe, built as kvsim-probe) for `kvsim calibrate --run-probe`:
 * the probe is its own binary (libc and the CUDA runtime only), so the
 * simulator runs it as a child process and reads the raw JSON it writes. */
#include "sim/cost/calib_fit.h"

#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* $KVSIM_PROBE, else kvsim-probe in this binary's directory or a parent
 * (build/kvsim → build/kvsim-probe; build/san/kvsim → build/kvsim-probe). */
int sim_calib_find_probe(char *buf, size_t n, sim_err *err)
{
    const char *env = getenv("KVSIM_PROBE");
    if (env && *env) return snprintf(buf, n, "%s", env), 0;
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = 0;
        for (char *slash; (slash = strrchr(exe, '/')) != NULL;) {
            *slash = 0;
            if (snprintf(buf, n, "%s/kvsim-probe", exe) < (int)n && access(buf, X_OK) == 0) return 0;
        }
    }
    return sim_errf(err, "cannot find kvsim-probe (build it with `make probe`, or set KVSIM_PROBE)");
}

int sim_calib_run_probe(const char *probe, const char *json_out, const char *extra, sim_err *err)
{
    char args[2048];
    snprintf(args, sizeof args, "%s", extra ? extra : "");
    char *argv[64] = {(char *)probe, "--out", (char *)json_out};
    int argc = 3;
    for (char *save, *tok = strtok_r(args, " ", &save); tok && argc < 63; tok = strtok_r(NULL, " ", &save))
        argv[argc++] = tok;
    argv[argc] = NULL;
    pid_t pid;
    int st;
    if (posix_spawn(&pid, probe, NULL, NULL, argv, environ)) return sim_errf(err, "cannot run %s", probe);
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
        return sim_errf(err, "%s did not finish (killed by a signal?)", probe);
    if (WEXITSTATUS(st)) sim_errf(err, "%s failed (exit status %d; its message is above)", probe, WEXITSTATUS(st));
    return WEXITSTATUS(st);
}
