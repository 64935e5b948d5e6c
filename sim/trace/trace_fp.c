/* sim/trace/trace_fp.c — the trace fingerprint (XXH64 of the decompressed
 * text) and a pipe's spooled copy, so that a trace read from stdin can be
 * fingerprinted and then replayed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "sim/infile.h"
#include "sim/trace/trace.h"

/* ---- fingerprint -------------------------------------------------------- */

/* The fingerprint is of the decompressed text, so a trace and its gzip
 * copy are the same trace to every record (run rows, baselines, sweep
 * dedup). f is hashed to its end; with o, every byte is also copied there. */
static int hash_text(sim_infile *f, FILE *o, uint64_t *fp, bool *wbad, sim_err *err)
{
    XXH64_state_t *st = XXH64_createState();
    XXH64_reset(st, 0);
    char buf[1 << 16];
    ssize_t k;
    while ((k = sim_infile_read(f, buf, sizeof buf, err)) > 0) {
        XXH64_update(st, buf, (size_t)k);
        if (o) *wbad = *wbad || fwrite(buf, 1, (size_t)k, o) != (size_t)k;
    }
    *fp = XXH64_digest(st);
    XXH64_freeState(st);
    return k < 0 ? -1 : 0;
}

int sim_trace_fingerprint(const char *path, uint64_t *out, sim_err *err)
{
    sim_infile *f;
    if (sim_infile_open(&f, path, NULL, err)) return -1;
    int rc = hash_text(f, NULL, out, NULL, err);
    sim_infile_close(f);
    return rc;
}

/* Copy f's text to a new temporary file (its path into out) while hashing. */
static int spool(sim_infile *f, const char *name, char *out, size_t n, uint64_t *fp, sim_err *err)
{
    const char *dir = getenv("TMPDIR");
    snprintf(out, n, "%s/kvsim-trace-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(out);
    FILE *o = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!o) return sim_errf(err, "%s: cannot make a temporary copy in %s: %s", name, out, strerror(errno));
    bool wbad = false;
    int rc = hash_text(f, o, fp, &wbad, err);
    wbad = fclose(o) != 0 || wbad;
    if (rc == 0 && wbad) rc = sim_errf(err, "%s: cannot write its temporary copy (disk full?)", name);
    if (rc) unlink(out);
    return rc;
}

int sim_trace_materialize(const char *path, char *out, size_t n, bool *spooled, uint64_t *fp, sim_err *err)
{
    struct stat sb;
    bool is_stdin = !strcmp(path, "-");
    *spooled = false;
    if (!is_stdin && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
        snprintf(out, n, "%s", path);
        return sim_trace_fingerprint(path, fp, err);
    }
    sim_infile *f;
    if (sim_infile_open(&f, path, NULL, err)) return -1;
    int rc = spool(f, is_stdin ? "<stdin>" : path, out, n, fp, err);
    sim_infile_close(f);
    *spooled = rc == 0;
    return rc;
}
