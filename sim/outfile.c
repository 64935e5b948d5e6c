/* sim/outfile.c — create every output file new (never through a link), write
 * it under PATH.tmp.PID and rename it onto PATH on success; move a staged
 * folder's files into place entry by entry. */
#include "sim/outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How many temporary names to try before giving up (each taken one is a
 * leftover of a crashed run with the same pid, or something planted). */
enum { TEMP_TRIES = 100 };

/* The destination's folder exists and is a folder (else a clear error rather
 * than fopen's bare "No such file or directory" on a temporary name). */
int sim_outfile_check_dir(const char *path, sim_err *err)
{
    char *copy = sim_xstrdup(path);
    const char *dir = dirname(copy);
    struct stat st;
    int rc = 0;
    if (stat(dir, &st) && errno == ENOENT)
        rc = sim_errf(err, "cannot write %s: folder %s: %s (create it first: mkdir -p %s)", path, dir, strerror(errno),
                      dir);
    else if (stat(dir, &st)) rc = sim_errf(err, "cannot write %s: folder %s: %s", path, dir, strerror(errno));
    else if (!S_ISDIR(st.st_mode)) rc = sim_errf(err, "cannot write %s: %s is not a folder", path, dir);
    free(copy);
    return rc;
}

/* A new file at path, mode 0666 less the umask. O_EXCL makes open fail with
 * EEXIST on anything already at the name, a link (even a dangling one)
 * included, so nothing is followed or truncated. NULL with errno set. */
static FILE *create_new(int dir, const char *path)
{
    int fd = openat(dir, path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        unlinkat(dir, path, 0);
        errno = e;
    }
    return f;
}

FILE *sim_file_create(int dir, const char *path, sim_err *err)
{
    FILE *f = create_new(dir, path);
    int e = errno;
    if (!f) sim_errf(err, "cannot write %s: %s", path, strerror(e));
    errno = e;
    return f;
}

/* Where the temporary is renamed to: the destination, or the file a
 * symbolic link at the destination names (so the rename replaces the file,
 * not the link). False when the destination exists and is not a regular
 * file (/dev/null, a pipe): that is written in place. */
static bool rename_target(sim_outfile *o, const char *path)
{
    struct stat st;
    char *real = NULL;
    if (stat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode)) return false;
        real = realpath(path, NULL);
    }
    o->dest = real ? real : sim_xstrdup(path);
    return true;
}

/* Create the temporary beside o->dest: DEST.tmp.PID, or, when that name is
 * taken, DEST.tmp.PID.1, .2, ... NULL with errno set when none could be. */
static FILE *create_temp(sim_outfile *o)
{
    size_t n = strlen(o->dest) + 48;
    o->tmp = sim_xmalloc(n);
    for (unsigned i = 0; i < TEMP_TRIES; i++) {
        int len = snprintf(o->tmp, n, "%s.tmp.%ld", o->dest, (long)getpid());
        if (i) snprintf(o->tmp + len, n - (size_t)len, ".%u", i);
        FILE *f = create_new(AT_FDCWD, o->tmp);
        if (f || errno != EEXIST) return f;
    }
    return NULL;
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
    o->f = rename_target(o, path) ? create_temp(o) : fopen(path, "w");
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
    if (o->f == stdout && e) clearerr(stdout); /* reported by the caller: main need not say it again */
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
    if (o->f == stdout) clearerr(stdout); /* the caller says why it gave up: main need not add a word */
    if (o->f && o->f != stdout) fclose(o->f);
    if (o->tmp) unlink(o->tmp);
    release(o);
}

/* ---- a staged folder moved into place ------------------------------------------------ */

/* The names in the open folder fd but . and .. (read whole before anything
 * is moved out of it); *n says how many. */
static char **list_names(int fd, size_t *n)
{
    char **names = NULL;
    *n = 0;
    int dup_fd = dup(fd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d && dup_fd >= 0) close(dup_fd);
    if (d) rewinddir(d); /* the offset is shared with fd */
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        names = sim_xrealloc(names, (*n + 1) * sizeof *names);
        names[(*n)++] = sim_xstrdup(e->d_name);
    }
    if (d) closedir(d);
    return names;
}

/* Empty the open folder fd: files and links are unlinked (a link itself,
 * never what it names), subfolders emptied and removed. */
static void clear_folder(int fd)
{
    size_t n;
    char **names = list_names(fd, &n);
    for (size_t i = 0; i < n; i++) {
        if (unlinkat(fd, names[i], 0) != 0) {
            int sub = openat(fd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) {
                clear_folder(sub);
                close(sub);
                unlinkat(fd, names[i], AT_REMOVEDIR);
            }
        }
        free(names[i]);
    }
    free(names);
}

void sim_remove_tree(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); /* a link there is not followed */
    if (fd >= 0) {
        clear_folder(fd);
        close(fd);
    }
    rmdir(path);
}

static int move_entries(int from, int to, const char *where, const char *last, sim_err *err);

/* Merge the staged folder `name` into the real folder sub (open) of the
 * same name in `to`. */
static int merge_folder(int from, int sub, const char *name, const char *where, sim_err *err)
{
    char inner[PATH_MAX];
    snprintf(inner, sizeof inner, "%s/%s", where, name);
    int staged = openat(from, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int rc = staged < 0 ? sim_errf(err, "cannot write %s: %s", inner, strerror(errno))
                        : move_entries(staged, sub, inner, NULL, err);
    if (staged >= 0) close(staged);
    close(sub);
    return rc;
}

/* Move entry `name` of folder from into folder to. renameat replaces a file
 * or a link at the name (the entry itself: a link is never followed); a
 * folder goes into a real folder of its name, and replaces a link or file
 * standing where that folder belongs. */
static int move_entry(int from, int to, const char *name, const char *where, sim_err *err)
{
    struct stat st;
    if (fstatat(from, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
        int sub = openat(to, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) return merge_folder(from, sub, name, where, err);
        if (errno == ELOOP || errno == ENOTDIR) unlinkat(to, name, 0);
    }
    if (renameat(from, name, to, name) == 0) return 0;
    return sim_errf(err, "cannot write %s/%s: %s", where, name, strerror(errno));
}

/* Move every entry of from into to; the one named last (when not NULL)
 * after all the others. */
static int move_entries(int from, int to, const char *where, const char *last, sim_err *err)
{
    size_t n;
    char **names = list_names(from, &n);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (rc == 0 && !(last && !strcmp(names[i], last))) rc = move_entry(from, to, names[i], where, err);
        free(names[i]);
    }
    free(names);
    if (rc == 0 && last && faccessat(from, last, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        rc = move_entry(from, to, last, where, err);
    return rc;
}

/* The names of the manifest in the open folder fd, one a line (an empty
 * list when there is none); a name with a '/' or "." / ".." is skipped. */
static char **read_manifest(int fd, const char *manifest, size_t *n)
{
    char **names = NULL;
    *n = 0;
    int mf = openat(fd, manifest, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    FILE *f = mf >= 0 ? fdopen(mf, "r") : NULL;
    if (!f && mf >= 0) close(mf);
    char line[PATH_MAX];
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!line[0] || strchr(line, '/') || !strcmp(line, ".") || !strcmp(line, "..")) continue;
        names = sim_xrealloc(names, (*n + 1) * sizeof *names);
        names[(*n)++] = sim_xstrdup(line);
    }
    if (f) fclose(f);
    return names;
}

/* Write into the open folder stage the manifest of its entries, whose
 * names (*n of them) it returns in *names. */
static int write_manifest(int stage, const char *manifest, const char *dir, char ***names, size_t *n, sim_err *err)
{
    *names = list_names(stage, n);
    FILE *f = sim_file_create(stage, manifest, NULL);
    for (size_t i = 0; f && i < *n; i++) fprintf(f, "%s\n", (*names)[i]);
    if (f && fclose(f) == 0) return 0;
    return sim_errf(err, "cannot write %s/%s: %s", dir, manifest, strerror(errno));
}

/* Remove entry name of the open folder fd: a file or a link unlinked (the
 * link itself), a folder emptied and removed. */
static void remove_entry(int fd, const char *name)
{
    if (unlinkat(fd, name, 0) == 0) return;
    int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) return;
    clear_folder(sub);
    close(sub);
    unlinkat(fd, name, AT_REMOVEDIR);
}

static bool listed(char *const *names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(names[i], name)) return true;
    return false;
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

int sim_outdir_publish(int stage, const char *dir, const char *last, const char *manifest, sim_err *err)
{
    int to = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (to < 0) return sim_errf(err, "cannot write %s: %s", dir, strerror(errno));
    size_t nold = 0, nnew = 0;
    char **old = manifest ? read_manifest(to, manifest, &nold) : NULL, **now = NULL;
    int rc = manifest ? write_manifest(stage, manifest, dir, &now, &nnew, err) : 0;
    if (rc == 0) rc = move_entries(stage, to, dir, last, err);
    for (size_t i = 0; rc == 0 && i < nold; i++) /* the last publish's, not this one's: stale */
        if (!listed(now, nnew, old[i])) remove_entry(to, old[i]);
    free_names(old, nold);
    free_names(now, nnew);
    close(to);
    return rc;
}
