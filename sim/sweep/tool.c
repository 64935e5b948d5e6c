/* sim/sweep/tool.c — running a Slurm command (sbatch, squeue, scancel) for
 * slurm.c: fork + execvp of an argv array, never a shell line, so no
 * partition name, path or user argument is ever parsed by a shell; its
 * standard output is read back whole, its standard error is left on ours
 * (sbatch's own error message is the clearest one for the user). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/sweep/sweep_int.h"

/* Read fd to its end into a growing NUL-terminated buffer. */
static char *read_all(int fd)
{
    size_t n = 0, cap = 4096;
    char *buf = sim_xmalloc(cap);
    for (ssize_t r; (r = read(fd, buf + n, cap - n - 1)) != 0;) {
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) break;
        n += (size_t)r;
        if (cap - n < 2) buf = sim_xrealloc(buf, cap *= 2);
    }
    buf[n] = 0;
    return buf;
}

int sim_sweep_tool(char *const argv[], char **out, sim_err *err)
{
    int fd[2];
    *out = NULL;
    if (pipe(fd)) return sim_errf(err, "pipe: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        close(fd[0]);
        close(fd[1]);
        execvp(argv[0], argv);
        _exit(127); /* only a failed exec gets here, in the child */
    }
    close(fd[1]);
    if (pid < 0) {
        close(fd[0]);
        return sim_errf(err, "fork: %s", strerror(errno));
    }
    *out = read_all(fd[0]);
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) continue;
    if (WIFSIGNALED(status)) return sim_errf(err, "%s was killed by signal %d", argv[0], WTERMSIG(status));
    if (WEXITSTATUS(status) == 127)
        return sim_errf(err, "cannot run %s: is Slurm installed here (its commands on PATH)?", argv[0]);
    return WEXITSTATUS(status);
}
