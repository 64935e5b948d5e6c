/* sim/trace/csvimport.c — the streaming CSV → Mooncake JSONL importer that
 * the length-only formats share (sim/trace/csvimport.h): the format table,
 * line splitting, the header check (column parsers: sim/trace/csvfield.c), the row rule
 * (filtered, zero input, failed) and the writer of fresh hash blocks.
 *
 * One pass, one line in memory: read a line (sim/infile.h: plain or gzip),
 * split it into columns, let the format turn it into (time, input, output),
 * apply the row rule, and write the request with the next
 * ceil(input / block_tokens) fresh ids. Times are integers (ns) throughout
 * and the written ms are printed from them digit by digit, so 4,314.48 ms
 * comes out as 4314.48, not as the nearest double. */
#include "sim/trace/csvimport.h"
#include "sim/trace/trace.h"
#include "sim/trace/trace_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "sim/infile.h"

static const sim_csv_format *const formats[] = {&sim_csv_azure, &sim_csv_burstgpt};
#define NFORMATS (sizeof formats / sizeof formats[0])

size_t sim_csv_format_count(void) { return NFORMATS; }
const sim_csv_format *sim_csv_format_at(size_t i) { return i < NFORMATS ? formats[i] : NULL; }

const sim_csv_format *sim_csv_format_find(const char *name)
{
    for (size_t i = 0; i < NFORMATS; i++)
        if (!strcmp(formats[i]->name, name)) return formats[i];
    return NULL;
}

sim_csv_import_opts sim_csv_import_default_opts(void)
{
    return (sim_csv_import_opts){.block_tokens = sim_trace_default_opts().block_tokens};
}

/* ---- lines and columns -------------------------------------------------- */

/* Split line (its end of line already cut) into columns in place, RFC 4180
 * style: a column in double quotes may hold commas, "" is a quote. Returns
 * the column count (at most cap), or -1 for a quote left open or text
 * after a closing quote. */
static long split_columns(char *line, char **col, size_t cap)
{
    size_t n = 0;
    char *r = line, *w = line;
    for (;;) {
        if (n == cap) return (long)cap + 1;
        col[n++] = w;
        if (*r == '"') {
            for (r++;; r++) {
                if (!*r) return -1;
                if (*r == '"' && r[1] != '"') break;
                if (*r == '"') r++;
                *w++ = *r;
            }
            r++;
            if (*r && *r != ',') return -1;
        } else {
            while (*r && *r != ',') *w++ = *r++;
        }
        if (!*r) break;
        *w++ = 0; /* w ≤ r: the comma's place or before */
        r++;
    }
    *w = 0;
    return (long)n;
}

/* Cut the end of line (\n, \r\n) and, on line 1, a UTF-8 byte order mark. */
static char *trim_line(char *line, size_t len, int64_t lineno)
{
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    if (lineno == 1 && len >= 3 && !memcmp(line, "\xEF\xBB\xBF", 3)) line += 3;
    return line;
}

#define MAX_COLS 16

typedef struct csv_reader {
    sim_infile *in;
    const char *path;
    int64_t lineno;
    char *col[MAX_COLS];
    long ncol;
} csv_reader;

/* The next non-blank line, split: 1, 0 at the end, -1 with err. */
static int next_row(csv_reader *r, const sim_csv_format *fmt, sim_err *err)
{
    char *line;
    size_t len;
    int rc;
    while ((rc = sim_infile_getline(r->in, &line, &len, err)) == 1) {
        r->lineno++;
        if (memchr(line, 0, len - (len && line[len - 1] == '\n')))
            return sim_errf(err, "%s:%" PRId64 ": a NUL byte (not a CSV text file?)", r->path, r->lineno);
        line = trim_line(line, len, r->lineno);
        if (!*line) continue;
        r->ncol = split_columns(line, r->col, MAX_COLS);
        if (r->ncol < 0)
            return sim_errf(err, "%s:%" PRId64 ": a quoted column is not closed, or text follows its closing quote",
                            r->path, r->lineno);
        if (r->ncol != (long)fmt->ncol)
            return sim_errf(err, "%s:%" PRId64 ": %ld column(s), but the %s format has %zu (%s, ...)", r->path,
                            r->lineno, r->ncol > MAX_COLS ? (long)MAX_COLS + 1 : r->ncol, fmt->name, fmt->ncol,
                            fmt->header[0]);
        return 1;
    }
    return rc;
}

/* The first non-blank line must be the format's header, column for column. */
static int check_header(csv_reader *r, const sim_csv_format *fmt, sim_err *err)
{
    int rc = next_row(r, fmt, err);
    if (rc == 0) return sim_errf(err, "%s: empty (expected the %s header line)", r->path, fmt->name);
    if (rc < 0) return -1;
    for (size_t c = 0; c < fmt->ncol; c++)
        if (strcmp(r->col[c], fmt->header[c]))
            return sim_errf(err, "%s:%" PRId64 ": column %zu is '%.40s', but the %s format's header names it '%s'",
                            r->path, r->lineno, c + 1, r->col[c], fmt->name, fmt->header[c]);
    return 0;
}

/* ---- writing -------------------------------------------------------------- */

/* A ns count as ms, exactly: "4314.48", "40000". */
static void put_ms(FILE *out, int64_t ns)
{
    int64_t ms = ns / 1000000, frac = ns % 1000000;
    fprintf(out, "%" PRId64, ms);
    if (!frac) return;
    char digits[8];
    snprintf(digits, sizeof digits, "%06" PRId64, frac);
    for (int i = 5; digits[i] == '0'; i--) digits[i] = 0;
    fprintf(out, ".%s", digits);
}

static void write_request(FILE *out, int64_t ts_ns, const sim_csv_request *q, int block_tokens, int64_t *next_id)
{
    fputs("{\"timestamp\": ", out);
    put_ms(out, ts_ns);
    fprintf(out, ", \"input_length\": %" PRId64 ", \"output_length\": %" PRId64 ", \"hash_ids\": [", q->input,
            q->output);
    int64_t n = (q->input + block_tokens - 1) / block_tokens;
    for (int64_t i = 0; i < n; i++) sim_trace_put_id(out, i ? ", " : "", (*next_id)++);
    fputs("]}\n", out);
}

/* ---- the import ------------------------------------------------------------ */

typedef struct csv_import {
    const sim_csv_format *fmt;
    const sim_csv_import_opts *o;
    FILE *out;
    sim_csv_import_stats *st;
    int64_t first_ns, prev_ns, prev_line; /* prev_line 0: no row yet */
} csv_import;

/* The row rule (sim/trace/csvimport.h), then the write. */
static int take_row(csv_import *im, csv_reader *r, sim_err *err)
{
    sim_csv_row row = {r->path, r->lineno, im->fmt->header, r->col, (size_t)r->ncol};
    sim_csv_request q;
    int keep = im->fmt->parse(&row, im->o, &q, err);
    if (keep < 0) return -1;
    im->st->rows++;
    if (im->prev_line && q.ts_ns < im->prev_ns)
        return sim_csv_errf(&row, 0, err,
                            "earlier than line %" PRId64 "'s (rows must be in time order: the import streams; "
                            "sort the CSV by this column first)",
                            im->prev_line);
    im->prev_ns = q.ts_ns, im->prev_line = r->lineno;
    sim_csv_import_stats *st = im->st;
    if (!keep) {
        st->filtered++;
    } else if (q.input == 0) {
        if (st->zero_input++ == 0) st->zero_input_first_line = r->lineno;
    } else if (q.output == 0) {
        if (st->failed++ == 0) st->failed_first_line = r->lineno;
    } else {
        if (st->requests == 0) im->first_ns = q.ts_ns;
        if (q.ts_ns - im->first_ns >= (int64_t)0x1p62)
            return sim_csv_errf(&row, 0, err, "more than %.0f s after the first request (the trace clock's range)",
                                0x1p62 / 1e9);
        write_request(im->out, q.ts_ns - im->first_ns, &q, im->o->block_tokens, &st->blocks);
        st->requests++;
    }
    return 0;
}

int sim_csv_import(const sim_csv_format *fmt, const char *path, const sim_csv_import_opts *o, FILE *out,
                   const char *out_name, sim_csv_import_stats *st, sim_err *err)
{
    *st = (sim_csv_import_stats){0};
    csv_reader r = {.path = strcmp(path, "-") ? path : "<stdin>"};
    if (sim_infile_open(&r.in, path, r.path, err)) return -1;
    csv_import im = {.fmt = fmt, .o = o, .out = out, .st = st};
    int rc = check_header(&r, fmt, err);
    while (rc == 0 && !ferror(out)) {
        if (o->limit && st->requests == o->limit) {
            st->limited = true;
            break;
        }
        rc = next_row(&r, fmt, err);
        if (rc <= 0) break;
        rc = take_row(&im, &r, err);
    }
    sim_infile_close(r.in);
    if (rc < 0) return -1;
    if (st->requests == 0)
        return sim_errf(err,
                        "%s: no requests (%" PRId64 " row(s): %" PRId64 " filtered, %" PRId64
                        " of 0 input tokens, %" PRId64 " failed)",
                        r.path, st->rows, st->filtered, st->zero_input, st->failed);
    if (fflush(out) || ferror(out)) return sim_errf(err, "%s: write error: %s", out_name, strerror(errno));
    return 0;
}
