/* sim/infile.c — plain or gzip input files behind one reader (sim/infile.h).
 *
 * The file's first bytes decide (never its name): gzip's magic (1f 8b)
 * means zlib's inflate decodes it, zstd's (28 b5 2f fd) is refused, and
 * anything else is copied through, so the code above sees text either way.
 * The inflate loop is here rather than zlib's gzread because gzread hides
 * where a gzip member ends: it reads a following member as more of the same
 * stream (as gzip -d does, and so does this loop) but silently drops any
 * other bytes after a member, which would read a damaged file, or two files
 * joined, as a shorter trace. Here those bytes are an error giving the byte
 * where the gzip data stops. Input that runs out inside a member (a
 * truncated file) and inflate's own errors (a bad CRC, a bad block) are
 * errors too, each checked before a partial last line could pass for a
 * short trace. On top sit a 64 KiB buffer of text and a line splitter that
 * keeps NUL bytes and exact lengths (as getline does), so the trace
 * reader's messages about odd bytes stay true. */
#include "sim/infile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <unistd.h>
#include <zlib.h>

#define INFILE_BUF (1 << 16)
#define INFILE_RAW (1 << 17)

enum { IN_UNKNOWN, IN_PLAIN, IN_GZIP }; /* what the first bytes said */
enum { GZ_MEMBER, GZ_END, GZ_GARBAGE }; /* where a gzip file's reading is */

struct sim_infile {
    int fd;
    char *name;                    /* as messages name it */
    int mode;                      /* IN_* */
    z_stream z;                    /* next_in/avail_in: raw bytes not yet used */
    unsigned char raw[INFILE_RAW]; /* bytes as read from the file */
    uint64_t raw_read;             /* file bytes read so far */
    bool raw_eof;                  /* the file has no more */
    int gz;                        /* GZ_*, in gzip mode */
    uint64_t gz_stop;              /* GZ_GARBAGE: where the gzip data stops */
    char buf[INFILE_BUF];          /* text not yet handed out */
    size_t pos, end;               /* buf[pos, end) is pending */
    char *line;                    /* the line sim_infile_getline returned */
    size_t line_cap;               /* its allocation */
    int64_t lines;                 /* lines returned so far, for messages */
    bool by_line;                  /* messages name a line */
    bool eof;                      /* end reached */
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
    int fd = is_stdin ? dup(STDIN_FILENO) : open(path, O_RDONLY);
    if (fd < 0) {
        if (errno == ENOENT)
            return sim_errf(err,
                            "%s: cannot open: %s (check the path; the bundled public traces are in "
                            "traces/mooncake/ and traces/ragpulse-sample/, described in traces/README.md)",
                            name, strerror(errno));
        return sim_errf(err, "%s: cannot open: %s", name, strerror(errno));
    }
    sim_infile *f = sim_xcalloc(1, sizeof *f);
    f->fd = fd;
    f->name = sim_xstrdup(name);
    f->z.next_in = f->raw;
    *out = f;
    return 0;
}

void sim_infile_close(sim_infile *f)
{
    if (!f) return;
    if (f->mode == IN_GZIP) inflateEnd(&f->z);
    close(f->fd);
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

/* Read until at least want raw bytes are unused or the file ends, the
 * unused ones first moved to the front: 0, or -1 on a read error. */
static int raw_need(sim_infile *f, size_t want, sim_err *err)
{
    if (f->z.avail_in && f->z.next_in != f->raw) memmove(f->raw, f->z.next_in, f->z.avail_in);
    f->z.next_in = f->raw;
    while (f->z.avail_in < want && !f->raw_eof) {
        ssize_t k = read(f->fd, f->raw + f->z.avail_in, INFILE_RAW - f->z.avail_in);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return read_err(f, err, strerror(errno));
        f->raw_eof = k == 0;
        f->z.avail_in += (uInt)k;
        f->raw_read += (uint64_t)k;
    }
    return 0;
}

/* Unused raw bytes start with gzip's magic (1f 8b). */
static bool gzip_magic(const sim_infile *f)
{
    return f->z.avail_in >= 2 && f->z.next_in[0] == 0x1f && f->z.next_in[1] == 0x8b;
}

/* The first bytes decide how the file reads: gzip inflates, zstd is
 * refused, anything else is copied through. */
static int sniff(sim_infile *f, sim_err *err)
{
    static const unsigned char zstd[4] = {0x28, 0xb5, 0x2f, 0xfd};
    if (raw_need(f, 4, err)) return -1;
    if (f->z.avail_in >= 4 && !memcmp(f->z.next_in, zstd, 4))
        return sim_errf(err, "%s: zstd-compressed; kvsim reads plain and gzip files: decompress it first (zstd -d)",
                        f->name);
    f->mode = gzip_magic(f) ? IN_GZIP : IN_PLAIN;
    if (f->mode == IN_GZIP && inflateInit2(&f->z, 15 + 16) != Z_OK) { /* 16: gzip wrapper */
        f->mode = IN_PLAIN;                                           /* nothing to end at close */
        return read_err(f, err, "out of memory");
    }
    return 0;
}

/* Refill buf with raw bytes copied through: how many, 0 at the end. */
static int plain_fill(sim_infile *f, sim_err *err)
{
    if (!f->z.avail_in && raw_need(f, 1, err)) return -1;
    size_t k = f->z.avail_in < INFILE_BUF ? f->z.avail_in : INFILE_BUF;
    memcpy(f->buf, f->z.next_in, k);
    f->z.next_in += k;
    f->z.avail_in -= (uInt)k;
    return (int)k;
}

/* A gzip member ended: another may follow (gzip's multi-member files, as
 * cat a.gz b.gz makes: read as one stream), or the file's end; any other
 * bytes are garbage, reported once the text before them is handed out. */
static int member_end(sim_infile *f, sim_err *err)
{
    if (raw_need(f, 2, err)) return -1;
    if (gzip_magic(f)) return inflateReset(&f->z) == Z_OK ? 0 : read_err(f, err, "out of memory");
    f->gz = f->z.avail_in ? GZ_GARBAGE : GZ_END;
    f->gz_stop = f->raw_read - f->z.avail_in;
    return 0;
}

/* The gzip file's end, clean or not: 0, or -1 naming the first byte that
 * is not gzip. */
static int gz_end(sim_infile *f, sim_err *err)
{
    if (f->gz == GZ_END) return 0;
    char what[300];
    snprintf(what, sizeof what,
             "trailing garbage after the gzip stream at byte %" PRIu64
             ": the file is damaged or two files were joined; recompress the trace, or keep the gzip part with "
             "head -c %" PRIu64,
             f->gz_stop, f->gz_stop);
    return read_err(f, err, what);
}

/* Refill buf with inflated text: how many bytes, 0 at the end of the
 * last member, -1 on corrupt or truncated data or trailing garbage. */
static int gz_fill(sim_infile *f, sim_err *err)
{
    f->z.next_out = (Bytef *)f->buf;
    f->z.avail_out = INFILE_BUF;
    while (f->z.avail_out == INFILE_BUF && f->gz == GZ_MEMBER) {
        if (!f->z.avail_in && raw_need(f, 1, err)) return -1;
        if (!f->z.avail_in) return read_err(f, err, "the gzip data ends early (a truncated file?)");
        int rc = inflate(&f->z, Z_NO_FLUSH);
        if (rc == Z_STREAM_END && member_end(f, err)) return -1;
        if (rc == Z_MEM_ERROR) return read_err(f, err, "out of memory");
        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
            char what[300];
            snprintf(what, sizeof what, "corrupt gzip data (%s)", f->z.msg ? f->z.msg : "unknown error");
            return read_err(f, err, what);
        }
    }
    int k = (int)(INFILE_BUF - f->z.avail_out);
    return k ? k : gz_end(f, err);
}

/* Refill buf: 1 with bytes pending, 0 at a clean end, -1 on an error. */
static int fill(sim_infile *f, sim_err *err)
{
    if (f->eof) return 0;
    if (f->mode == IN_UNKNOWN && sniff(f, err)) return -1;
    int k = f->mode == IN_GZIP ? gz_fill(f, err) : plain_fill(f, err);
    if (k < 0) return -1;
    f->pos = 0;
    f->end = (size_t)k;
    f->eof = k == 0;
    return k > 0;
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
