/* datapath/ssd.c — chunk files: key → "<dir>/<16 hex digits>.kvc". */
#include "datapath/ssd.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datapath/chunk.h"
#include "datapath/fileio.h"

struct dp_ssd {
    char dir[PATH_MAX - 32];
    dp_shape shape;
    dp_ssd_stats stats;
};

/* Remove temporaries a crashed writer left behind. */
static int sweep_temps(const char *dir, sim_err *err)
{
    DIR *d = opendir(dir);
    if (!d) return sim_errf(err, "ssd tier: cannot open %s: %s", dir, strerror(errno));
    struct dirent *e;
    char path[PATH_MAX];
    while ((e = readdir(d)))
        if (dp_file_is_temp(e->d_name) && snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
            unlink(path);
    closedir(d);
    return 0;
}

int dp_ssd_open(dp_ssd **out, const char *dir, const dp_shape *shape, sim_err *err)
{
    if (strlen(dir) >= sizeof((dp_ssd *)0)->dir) {
        sim_errf(err, "ssd tier: directory name too long: %s", dir);
        return DP_EINVAL;
    }
    if (dp_mkdirs(dir, err) || sweep_temps(dir, err)) return DP_EIO;
    dp_ssd *d = sim_xcalloc(1, sizeof *d);
    snprintf(d->dir, sizeof d->dir, "%s", dir);
    d->shape = *shape;
    *out = d;
    return DP_OK;
}

void dp_ssd_close(dp_ssd *d) { free(d); }

void dp_ssd_path(const dp_ssd *d, uint64_t key, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%016llx.kvc", d->dir, (unsigned long long)key);
}

int dp_ssd_put(dp_ssd *d, uint64_t key, const void *image, size_t bytes, sim_err *err)
{
    char path[PATH_MAX];
    bool direct;
    dp_ssd_path(d, key, path, sizeof path);
    int rc = dp_file_write_atomic(path, image, bytes, &direct, err);
    if (rc) return rc;
    d->stats.puts++;
    d->stats.direct_ios += direct;
    return DP_OK;
}

int dp_ssd_get(dp_ssd *d, uint64_t key, void *image, size_t cap, int *tokens, sim_err *err)
{
    char path[PATH_MAX];
    bool direct;
    size_t got;
    dp_ssd_path(d, key, path, sizeof path);
    int rc = dp_file_read(path, image, cap, &got, &direct, err);
    sim_err why;
    if (rc == DP_OK && (rc = dp_chunk_check(image, got, &d->shape, key, tokens, &why)))
        sim_errf(err, "%s: %s", path, why.msg);
    d->stats.direct_ios += rc == DP_OK && direct;
    switch (rc) {
    case DP_OK: d->stats.hits++; break;
    case DP_MISS: d->stats.misses++; break;
    case DP_SHORT: d->stats.short_reads++; break;
    case DP_CORRUPT: d->stats.corrupt++; break;
    default: return rc;
    }
    if (rc == DP_SHORT || rc == DP_CORRUPT) unlink(path);
    return rc;
}

dp_ssd_stats dp_ssd_get_stats(const dp_ssd *d) { return d->stats; }
