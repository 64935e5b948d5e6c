/* sim/trace/trace_int.h — private to sim/trace: the reader's state (shared by
 * the stream, sim/trace/trace.c, and the line parser, sim/trace/trace_parse.c)
 * and the segment list parser it calls for a line's "segments"
 * (sim/trace/segments.c); and how the trace writers (generators, imports)
 * put a hash id. */
#ifndef SIM_TRACE_INT_H
#define SIM_TRACE_INT_H

#include <endian.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>
#include <xxhash.h>

#include <gsl/gsl_rng.h>

#include "sim/infile.h"
#include "sim/trace/trace.h"

/* The current line's segments and prefix block ids, reused across lines. */
typedef struct sim_seg_buf {
    sim_segment *segs;
    int64_t *ids;
    size_t nsegs, segs_cap, nids, ids_cap;
    int64_t total; /* Σ len */
} sim_seg_buf;

void sim_seg_buf_free(sim_seg_buf *b);

/* The current line's hash ids and their chained keys, reused across lines. */
typedef struct id_buf {
    int64_t *v;
    uint64_t *k;
    size_t n, cap;
} id_buf;

struct sim_trace {
    sim_trace_opts opts;
    char *name;       /* file name used in messages ("<stdin>" for "-") */
    sim_infile *f;    /* plain or gzip (sim/infile.h) */
    char *line;       /* the current line, the reader's buffer */
    id_buf ids;       /* the current line's hash_ids */
    sim_seg_buf segs; /* the current line's segments */
    int64_t lineno;
    bool have_prev; /* previous accepted timestamp, for the order check */
    double prev_ts;
    gsl_rng *rng; /* sampling draws; NULL when sample == 1 */
    int64_t emitted;
    sim_block_fit fit; /* how the hash_ids read fit opts.block_tokens */
    int64_t parsed;    /* lines read as a request (before sampling and the limit) */
    int64_t skipped;
    int64_t first_skip_line; /* the first skipped line's number */
    char **skips;            /* the first SIM_TRACE_SKIPS_KEPT skipped lines' messages */
    /* sort mode: every valid request, loaded on the first sim_trace_next */
    bool loaded;
    sim_request **sorted;
    size_t nsorted, next_sorted;
};

/* The reader's current line (t->line, len bytes) as a request: 1 with *out,
 * 0 for a blank line, -1 when bad (err says why) (sim/trace/trace_parse.c). */
int sim_trace_parse_line(sim_trace *t, size_t len, sim_request **out, sim_err *err);

/* "FILE:LINE: FIELD: problem" at the reader's current line; returns -1. */
__attribute__((format(printf, 4, 5))) int sim_trace_line_err(const sim_trace *t, sim_err *err, const char *field,
                                                             const char *fmt, ...);

/* "PATH:LINE: FIELD: problem" into err (the form of every trace input
 * error); returns -1. */
int sim_line_verrf(sim_err *err, const char *path, int64_t line, const char *field, const char *fmt, va_list ap);

/* "an integer", "a string", ...: a JSON value's type in messages. */
const char *sim_json_type_name(const json_t *v);

/* sim_block_key's chaining, inline for the reader's hot path (sim/trace/
 * trace.c compiles XXH3 inline; other files call the library). */
static inline uint64_t sim_chain_key(uint64_t prev_key, int64_t id)
{
    uint64_t le = htole64((uint64_t)id);
    return XXH3_64bits_withSeed(&le, sizeof le, prev_key);
}

/* Parse a "segments" value into b: a non-empty array of segment objects,
 * the prefix (at most one) first, a prefix's hash_ids one per
 * prefix_tokens-token block. On error, err holds "segments[I].FIELD:
 * problem" (the caller adds file and line). */
int sim_seg_parse(const json_t *v, int prefix_tokens, sim_seg_buf *b, sim_err *err);
/* Append a checked segment (its len added to the total), or a prefix
 * segment's block id: the parser's steps, shared with the reader's
 * recognizer of flat segment lists (sim/trace/trace.c). */
void sim_seg_push(sim_seg_buf *b, const sim_segment *s);
void sim_seg_push_id(sim_seg_buf *b, int64_t id);

/* A request in one allocation: the struct (from fields), then n keys and
 * n raw ids, nids prefix-segment ids and nsegs segments, the pointers set
 * and the arrays not filled (sim_request_free frees it whole). Counted in
 * sim_request_live (sim/trace/trace.c). */
sim_request *sim_request_new(const sim_request *fields, size_t n, size_t nids, size_t nsegs);

/* trace.resample over the loaded, time-sorted requests v[0..n) (which it
 * may replace: the bootstrap copies): new arrivals drawn from o->seed,
 * then sorted by them (sim/trace/resample.c). name: the trace in messages. */
int sim_trace_resample(sim_request ***v, size_t *n, const sim_trace_opts *o, const char *name, sim_err *err);

/* sep, then v in decimal, as fprintf(out, "%s%" PRId64, sep, v) writes
 * them: the trace writers' hash ids (tens of thousands a trace) without a
 * format string parsed for each. */
static inline void sim_trace_put_id(FILE *out, const char *sep, int64_t v)
{
    char b[24], *p = b + sizeof b;
    uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
    do *--p = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0) *--p = '-';
    while (*sep) putc_unlocked(*sep++, out); /* a macro: a pointer bumped in the stream's buffer */
    while (p < b + sizeof b) putc_unlocked(*p++, out);
}

#endif
