/* sim/outfile.c — write to PATH.tmp.PID, rename onto PATH on success. */
#include "sim/outfile.h"

#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The destination's folder exists and is a folder (else a clear error rather
 * than fopen's bare "No such file or directory" on a temporary name). */
int sim_outfile_check_dir(const char *path, sim_err *err)
{
    char *copy = sim_xstrdup(path);
    const char *dir = dirname(copy);
    struct stat st;
    int rc = 0;
    if (stat(dir, &st)) rc = sim_errf(err, "cannot write %s: folder %s: %s", path, dir, strerror(errno));
    else if (!S_ISDIR(st.st_mode)) rc = sim_errf(err, "cannot write %s: %s is not a folder", path, dir);
    free(copy);
    return rc;
}

/* Where the temporary goes: beside the file a symbolic link names (so the
 * rename replaces the file, not the link); none when the destination exists
 * and is not a regular file (/dev/null, a pipe): that is written in place. */
static void temp_name(sim_outfile *o, const char *path)
{
    struct stat st;
    char *real = NULL;
    if (stat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode)) return;
        real = realpath(path, NULL);
    }
    o->dest = real ? real : sim_xstrdup(path);
    size_t n = strlen(o->dest) + 32;
    o->tmp = sim_xmalloc(n);
    snprintf(o->tmp, n, "%s.tmp.%ld", o->dest, (long)getpid());
}

static void release(sim_outfile *o)
{
    free(o->tmp);
    free(o->dest);
    free(o->path);
    *o = (sim_outfile){0};
}

int sim_outfile_open(sim_outfile *o, const char *path, sim_err *err)
{
    *o = (sim_outfile){0};
    if (!path || !*path) return sim_errf(err, "empty output path");
    if (!strcmp(path, "-")) {
        o->f = stdout;
        o->path = sim_xstrdup("-");
        return 0;
    }
    if (sim_outfile_check_dir(path, err)) return -1;
    temp_name(o, path);
    o->f = fopen(o->tmp ? o->tmp : path, "w");
    if (!o->f) {
        int e = errno;
        release(o);
        return sim_errf(err, "cannot write %s: %s", path, strerror(e));
    }
    o->path = sim_xstrdup(path);
    return 0;
}

/* Flush and close, returning the first error seen (0 when none). */
static int finish(sim_outfile *o)
{
    int e = 0;
    if (fflush(o->f)) e = errno;
    if (ferror(o->f) && !e) e = errno ? errno : EIO;
    if (o->f != stdout) {
        if (!e && fsync(fileno(o->f)) && errno != EINVAL && errno != EROFS) e = errno;
        if (fclose(o->f) && !e) e = errno;
    }
    o->f = NULL;
    return e;
}

int sim_outfile_close(sim_outfile *o, sim_err *err)
{
    if (!o->f) return sim_errf(err, "%s: not open", o->path ? o->path : "output");
    int e = finish(o);
    if (!e && o->tmp && rename(o->tmp, o->dest)) e = errno;
    int rc = e ? sim_errf(err, "cannot write %s: %s", o->path, strerror(e)) : 0;
    if (e && o->tmp) unlink(o->tmp);
    release(o);
    return rc;
}

void sim_outfile_abort(sim_outfile *o)
{
    if (o->f && o->f != stdout) fclose(o->f);
    if (o->tmp) unlink(o->tmp);
    release(o);
}
