/* sim/infile.h — input files read alike whether plain or gzip-compressed:
 * every trace kvsim reads (the trace reader, `kvsim trace stats`, hitrate,
 * `--arrivals-from`, the RAGPulse importer, the trace fingerprint) goes
 * through here, so a `.jsonl.gz` works wherever a `.jsonl` does.
 *
 * Compression is recognised by content, never by name: a file starting with
 * gzip's magic bytes (1f 8b) is inflated by zlib, anything else read
 * through unchanged. A zstd file (magic 28 b5 2f fd) is refused with a
 * message that says how to decompress it. Gzip members one after another
 * (cat a.gz b.gz) read as one stream, as gzip -d reads them. A corrupt or
 * truncated gzip stream, or bytes after it that are not another member
 * (trailing garbage), is an error naming the file, never a short trace. */
#ifndef SIM_INFILE_H
#define SIM_INFILE_H

#include <stddef.h>
#include <sys/types.h>

#include "sim/util.h"

typedef struct sim_infile sim_infile;

/* Open path ("-" = standard input) for reading; name is what messages
 * call it (NULL: the path). Errors name the file. */
int sim_infile_open(sim_infile **out, const char *path, const char *name, sim_err *err);

/* The next line of the decompressed text, its '\n' included when present
 * and any NUL bytes kept: 1 with *line (NUL-terminated, valid until the next
 * call) and *len set, 0 at the end, -1 on a read or decompression error
 * ("NAME:LINE: read error: ..."). */
int sim_infile_getline(sim_infile *f, char **line, size_t *len, sim_err *err);

/* Up to n decompressed bytes into buf: how many (0 at the end), or -1 on
 * an error ("NAME: read error: ..."). */
ssize_t sim_infile_read(sim_infile *f, void *buf, size_t n, sim_err *err);

void sim_infile_close(sim_infile *f);

#endif
