/* sim/trace/trace_int.h — private to sim/trace: the segment list parser
 * that sim/trace/trace.c calls for a line's "segments" (sim/trace/segments.c). */
#ifndef SIM_TRACE_INT_H
#define SIM_TRACE_INT_H

#include <endian.h>
#include <stdarg.h>

#include <jansson.h>
#include <xxhash.h>

#include "sim/trace/trace.h"

/* The current line's segments and prefix block ids, reused across lines. */
typedef struct sim_seg_buf {
    sim_segment *segs;
    int64_t *ids;
    size_t nsegs, segs_cap, nids, ids_cap;
    int64_t total; /* Σ len */
} sim_seg_buf;

void sim_seg_buf_free(sim_seg_buf *b);

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

/* A copy of r in one allocation, as the reader makes them. */
sim_request *sim_request_clone(const sim_request *r);

/* trace.resample over the loaded, time-sorted requests v[0..n) (which it
 * may replace: the bootstrap copies): new arrivals drawn from o->seed,
 * then sorted by them (sim/trace/resample.c). name: the trace in messages. */
int sim_trace_resample(sim_request ***v, size_t *n, const sim_trace_opts *o, const char *name, sim_err *err);

#endif
