/* sim/infile.c — plain or gzip input files behind one reader (sim/infile.h).
 *
 * zlib's gz* functions do the recognising: gzread inflates a file that
 * starts with gzip's magic bytes and copies any other file through, so the
 * code above sees text either way. On top of gzread sits a 64 KiB buffer
 * and a line splitter that keeps NUL bytes and exact lengths (as getline
 * does), so the trace reader's messages about odd bytes stay true. zlib
 * reports a stream that stops before its end (a truncated file) as
 * Z_BUF_ERROR once the input is used up; that is checked at every end of
 * file, before a partial last line could pass for a short trace. */
#include "sim/infile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <unistd.h>
#include <zlib.h>

#define INFILE_BUF (1 << 16)

struct sim_infile {
    gzFile gz;
    char *name;           /* as messages name it */
    char buf[INFILE_BUF]; /* decompressed bytes not yet handed out */
    size_t pos, end;      /* buf[pos, end) is pending */
    char *line;           /* the line sim_infile_getline returned */
    size_t line_cap;      /* its allocation */
    int64_t lines;        /* lines returned so far, for messages */
    bool by_line;         /* messages name a line */
    bool eof, first;      /* end reached; the first read is still to come */
};

int sim_infile_open(sim_infile **out, const char *path, const char *name, sim_err *err)
{
    *out = NULL;
    bool is_stdin = !strcmp(path, "-");
    if (!name) name = is_stdin ? "<stdin>" : path;
    struct stat st;
    if (!is_stdin && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return sim_errf(err,
                        "%s: a folder, not a file (a trace is one JSONL file, plain or gzip; a RAGPulse folder "
                        "converts with kvsim trace import ragpulse FOLDER -o FILE)",
                        name);
    errno = 0;
    int fd = is_stdin ? dup(STDIN_FILENO) : -1;
    gzFile gz = is_stdin ? (fd >= 0 ? gzdopen(fd, "rb") : NULL) : gzopen(path, "rb");
    if (!gz) {
        if (fd >= 0) close(fd);
        if (errno == ENOENT)
            return sim_errf(err,
                            "%s: cannot open: %s (check the path; the bundled public traces are in "
                            "traces/mooncake/ and traces/ragpulse-sample/, described in traces/README.md)",
                            name, strerror(errno));
        return sim_errf(err, "%s: cannot open: %s", name, errno ? strerror(errno) : "out of memory");
    }
    gzbuffer(gz, 1 << 17);
    sim_infile *f = sim_xcalloc(1, sizeof *f);
    f->gz = gz;
    f->name = sim_xstrdup(name);
    f->first = true;
    *out = f;
    return 0;
}

void sim_infile_close(sim_infile *f)
{
    if (!f) return;
    gzclose_r(f->gz);
    free(f->line);
    free(f->name);
    free(f);
}

/* "NAME:LINE: read error: what" (line mode) or "NAME: read error: what". */
static int read_err(const sim_infile *f, sim_err *err, const char *what)
{
    if (f->by_line) return sim_errf(err, "%s:%" PRId64 ": read error: %s", f->name, f->lines + 1, what);
    return sim_errf(err, "%s: read error: %s", f->name, what);
}

/* zstd's frame magic (28 b5 2f fd) read through as if it were text. */
static bool zstd_magic(const sim_infile *f)
{
    static const unsigned char magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
    return gzdirect(f->gz) && f->end >= 4 && !memcmp(f->buf, magic, 4);
}

/* Refill buf: 1 with bytes pending, 0 at a clean end, -1 on an error. */
static int fill(sim_infile *f, sim_err *err)
{
    if (f->eof) return 0;
    int k = gzread(f->gz, f->buf, INFILE_BUF);
    int zerr;
    const char *msg = gzerror(f->gz, &zerr);
    if (k < 0) {
        if (zerr == Z_ERRNO) return read_err(f, err, strerror(errno ? errno : EIO));
        /* zlib's message is "PATH: what"; the caller names the file */
        for (const char *p = strstr(msg, ": "); p; p = strstr(msg, ": ")) msg = p + 2;
        char what[300];
        snprintf(what, sizeof what, "corrupt gzip data (%s)", msg);
        return read_err(f, err, what);
    }
    f->pos = 0;
    f->end = (size_t)k;
    if (f->first && zstd_magic(f))
        return sim_errf(err, "%s: zstd-compressed; kvsim reads plain and gzip files: decompress it first (zstd -d)",
                        f->name);
    f->first = false;
    if (k > 0) return 1;
    f->eof = true;
    if (zerr == Z_BUF_ERROR) return read_err(f, err, "the gzip data ends early (a truncated file?)");
    return 0;
}

int sim_infile_getline(sim_infile *f, char **line, size_t *len, sim_err *err)
{
    size_t n = 0;
    f->by_line = true;
    for (;;) {
        if (f->pos == f->end) {
            int rc = fill(f, err);
            if (rc < 0) return -1;
            if (rc == 0) break;
        }
        const char *at = f->buf + f->pos, *nl = memchr(at, '\n', f->end - f->pos);
        size_t take = nl ? (size_t)(nl - at) + 1 : f->end - f->pos;
        if (n + take + 1 > f->line_cap) {
            while (n + take + 1 > f->line_cap) f->line_cap = f->line_cap ? 2 * f->line_cap : 4096;
            f->line = sim_xrealloc(f->line, f->line_cap);
        }
        memcpy(f->line + n, at, take);
        n += take;
        f->pos += take;
        if (nl) break;
    }
    if (n == 0) return 0;
    f->line[n] = 0;
    f->lines++;
    *line = f->line;
    *len = n;
    return 1;
}

ssize_t sim_infile_read(sim_infile *f, void *buf, size_t n, sim_err *err)
{
    if (f->pos == f->end) {
        int rc = fill(f, err);
        if (rc <= 0) return rc;
    }
    size_t k = f->end - f->pos < n ? f->end - f->pos : n;
    memcpy(buf, f->buf + f->pos, k);
    f->pos += k;
    return (ssize_t)k;
}
