/* sim/cost/optable_cache.c — parsed measured tables kept between processes.
 *
 * Parsing a system's gzipped CSVs (inflating them, a strtod per latency, a
 * key per row) is most of a short measured run's start, and every sweep
 * point and plan probe is a process of its own that pays it again. So a
 * table, once parsed and finished (curves sorted, bracket values found,
 * before any glitch is dropped: the ratio is a setting), is saved as a
 * binary file of its curves, named by the table kind and the XXH3 hash of
 * the CSV file's bytes and of the parser's identity (the build's revision
 * and the time optable.c was compiled: a changed parser never reads an
 * older one's files). A later process whose CSV hashes the same reads that
 * file instead. The values are the doubles themselves, so prices are
 * bit-identical either way.
 *
 * A file of another version or size, or whose checksum (XXH3 of all before
 * it) does not match, is ignored and written anew; a folder that cannot be
 * made or written leaves parsing alone. Files are written whole under a
 * temporary name and renamed (sim/outfile.h), so concurrent sweep workers
 * each write a whole file and the last rename wins.
 *
 * The folder: $KVSIM_CACHE_DIR, else $XDG_CACHE_HOME/kvsim, else
 * $HOME/.cache/kvsim; KVSIM_CACHE_DIR set empty turns the cache off. A
 * file read is touched (its modification time set to now); each write
 * removes the folder's table files untouched for a week, so the folder
 * holds what the builds of the last week read (about 1 MB a system for
 * each build), not every build's.
 *
 * File: "kvsimot" and a version byte; u32 curves; u32 values per bracket
 * slot; each curve as u32 key length, u32 points, the key's bytes, x[] and
 * y[] (doubles); each slot's values; u64 checksum. Native byte order: the
 * parser identity names the build, and so the machine. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "sim/cost/optable_int.h"
#include "sim/outfile.h"
#include "sim/util.h"

static const char MAGIC[8] = {'k', 'v', 's', 'i', 'm', 'o', 't', 1};
static const char SUFFIX[] = ".optable";
enum { KEEP_S = 7 * 24 * 3600 }; /* a file untouched this long is removed */

/* The cache folder, made if need be (its parent too); false when off. */
static bool cache_dir(char *dir, size_t n)
{
    const char *env = getenv("KVSIM_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char parent[PATH_MAX] = "";
    int len;
    if (env) len = *env ? snprintf(dir, n, "%s", env) : -1;
    else if (xdg && *xdg) len = snprintf(dir, n, "%s/kvsim", xdg);
    else if (home && *home && snprintf(parent, sizeof parent, "%s/.cache", home) < (int)sizeof parent)
        len = snprintf(dir, n, "%s/kvsim", parent);
    else len = -1;
    if (len < 0 || len >= (int)n) return false;
    if (parent[0] && mkdir(parent, 0755) && errno != EEXIST) return false;
    return !mkdir(dir, 0755) || errno == EEXIST;
}

/* The whole file at path, mapped read-only and read in at once (its pages
 * shared with the page cache: no copy, a fault per range rather than per
 * page), or NULL; unmap() it. An empty file maps to a static byte. A
 * mapped file shrunk under it would fault (SIGBUS): cache files are never
 * rewritten in place (written whole under a temporary name and renamed,
 * the mapping keeping the old file), nor are the bundled CSVs. */
static const unsigned char *map_file(const char *path, size_t *len)
{
    static const unsigned char empty[1];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    void *p = NULL;
    if (!fstat(fd, &st) && S_ISREG(st.st_mode)) {
        *len = (size_t)st.st_size;
        p = *len ? mmap(NULL, *len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0) : (void *)empty;
        if (p == MAP_FAILED) p = NULL;
    }
    close(fd);
    return p;
}

static void unmap(const unsigned char *p, size_t len)
{
    if (len) munmap((void *)p, len);
}

bool sim_optable_cache_slot(const char *path, const char *spec, const char *parser, char *slot, size_t n)
{
    char dir[PATH_MAX];
    size_t len;
    if (!cache_dir(dir, sizeof dir)) return false;
    const unsigned char *csv = map_file(path, &len);
    if (!csv) return false;
    uint64_t seed = XXH3_64bits_withSeed(spec, strlen(spec), XXH3_64bits(parser, strlen(parser)));
    uint64_t h = XXH3_64bits_withSeed(csv, len, seed);
    unmap(csv, len);
    return snprintf(slot, n, "%s/%s-%016llx%s", dir, spec, (unsigned long long)h, SUFFIX) < (int)n;
}

/* A bounded reader over a file's bytes: a read past the end sets bad. */
typedef struct cursor {
    const unsigned char *p, *end;
    bool bad;
} cursor;

static void take(cursor *c, void *out, size_t n)
{
    if (c->bad || (size_t)(c->end - c->p) < n) {
        c->bad = true;
        memset(out, 0, n);
        return;
    }
    memcpy(out, c->p, n);
    c->p += n;
}

static uint32_t take_u32(cursor *c)
{
    uint32_t v;
    take(c, &v, sizeof v);
    return v;
}

/* n doubles (a fresh array, at least one element), or NULL once bad. */
static double *take_doubles(cursor *c, uint32_t n)
{
    if (c->bad || (size_t)(c->end - c->p) / sizeof(double) < n) return c->bad = true, NULL;
    double *v = malloc((n ? n : 1) * sizeof *v);
    take(c, v, n * sizeof *v);
    return v;
}

static bool read_curve(cursor *c, curve *cv)
{
    uint32_t klen = take_u32(c), n = take_u32(c);
    if (c->bad || (size_t)(c->end - c->p) < klen) return false;
    cv->key = malloc(klen + 1);
    take(c, cv->key, klen);
    cv->key[klen] = '\0';
    cv->x = take_doubles(c, n);
    cv->y = take_doubles(c, n);
    cv->n = cv->cap = (int)n;
    return !c->bad && n <= INT_MAX;
}

/* Free what a failed read built (t->c's first n curves, the values). */
static bool read_failed(table *t, int n)
{
    for (int i = 0; i < n; i++) free(t->c[i].key), free(t->c[i].x), free(t->c[i].y);
    free(t->c);
    for (int s = 0; s < MAX_BRACKET; s++) free(t->vals[s]), t->vals[s] = NULL, t->nvals[s] = 0;
    t->c = NULL, t->n = t->cap = 0;
    return false;
}

static bool checksum_ok(const unsigned char *buf, size_t len)
{
    uint64_t sum;
    if (len < sizeof MAGIC + sizeof sum || memcmp(buf, MAGIC, sizeof MAGIC)) return false;
    memcpy(&sum, buf + len - sizeof sum, sizeof sum);
    return XXH3_64bits(buf, len - sizeof sum) == sum;
}

bool sim_optable_cache_read(table *t, const char *slot)
{
    size_t len;
    const unsigned char *buf = map_file(slot, &len);
    if (!buf) return false;
    bool ok = checksum_ok(buf, len);
    cursor c = {buf + sizeof MAGIC, buf + len - sizeof(uint64_t), !ok};
    uint32_t ncurves = take_u32(&c), nvals[MAX_BRACKET];
    for (int s = 0; s < MAX_BRACKET; s++) nvals[s] = take_u32(&c);
    int n = 0;
    if (!c.bad && ncurves <= (size_t)(c.end - c.p) / 8) { /* each curve takes 8 bytes at least */
        t->c = calloc(ncurves ? ncurves : 1, sizeof *t->c);
        t->n = t->cap = (int)ncurves;
        while (n < (int)ncurves && read_curve(&c, &t->c[n])) n++;
        if (n < (int)ncurves) n++, c.bad = true; /* the half-read curve is freed too */
    } else c.bad = true;
    for (int s = 0; s < MAX_BRACKET && !c.bad; s++)
        if (t->spec->bracket[s] >= 0) t->vals[s] = take_doubles(&c, nvals[s]), t->nvals[s] = (int)nvals[s];
    ok = !c.bad && c.p == c.end;
    unmap(buf, len);
    if (ok) utimensat(AT_FDCWD, slot, NULL, 0); /* in use: kept (prune) */
    return ok || read_failed(t, n);
}

/* A file being written and the checksum of what went into it. */
typedef struct writer {
    FILE *f;
    XXH3_state_t *sum;
} writer;

static void put(writer *w, const void *p, size_t n)
{
    if (!n) return;
    fwrite(p, 1, n, w->f);
    XXH3_64bits_update(w->sum, p, n);
}

static void put_u32(writer *w, size_t v)
{
    uint32_t u = (uint32_t)v;
    put(w, &u, sizeof u);
}

/* Remove the table files of slot's folder untouched for KEEP_S seconds. */
static void prune(const char *slot)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", slot);
    char *slash = strrchr(dir, '/');
    if (!slash) return;
    *slash = '\0';
    DIR *d = opendir(dir);
    if (!d) return;
    time_t now = time(NULL);
    size_t ls = strlen(SUFFIX);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        struct stat st;
        if (len > ls && !strcmp(e->d_name + len - ls, SUFFIX) &&
            !fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode) &&
            now - st.st_mtime > KEEP_S)
            unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}

void sim_optable_cache_write(const table *t, const char *slot)
{
    sim_outfile o;
    sim_err err = {0};
    if (sim_outfile_open(&o, slot, &err)) return;
    writer w = {o.f, XXH3_createState()};
    XXH3_64bits_reset(w.sum);
    put(&w, MAGIC, sizeof MAGIC);
    put_u32(&w, (size_t)t->n);
    for (int s = 0; s < MAX_BRACKET; s++) put_u32(&w, (size_t)t->nvals[s]);
    for (int i = 0; i < t->n; i++) {
        const curve *c = &t->c[i];
        put_u32(&w, strlen(c->key)), put_u32(&w, (size_t)c->n);
        put(&w, c->key, strlen(c->key));
        put(&w, c->x, (size_t)c->n * sizeof *c->x), put(&w, c->y, (size_t)c->n * sizeof *c->y);
    }
    for (int s = 0; s < MAX_BRACKET; s++)
        if (t->spec->bracket[s] >= 0) put(&w, t->vals[s], (size_t)t->nvals[s] * sizeof *t->vals[s]);
    uint64_t sum = XXH3_64bits_digest(w.sum);
    XXH3_freeState(w.sum);
    fwrite(&sum, sizeof sum, 1, o.f);
    if (!sim_outfile_close(&o, &err)) prune(slot);
}
