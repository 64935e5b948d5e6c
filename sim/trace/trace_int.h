/* sim/trace/trace_int.h — private to sim/trace: the segment list parser
 * that sim/trace/trace.c calls for a line's "segments" (sim/trace/segments.c). */
#ifndef SIM_TRACE_INT_H
#define SIM_TRACE_INT_H

#include <jansson.h>

#include "sim/trace/trace.h"

/* The current line's segments and prefix block ids, reused across lines. */
typedef struct sim_seg_buf {
    sim_segment *segs;
    int64_t *ids;
    size_t nsegs, segs_cap, nids, ids_cap;
    int64_t total; /* Σ len */
} sim_seg_buf;

void sim_seg_buf_free(sim_seg_buf *b);

/* Parse a "segments" value into b: a non-empty array of segment objects,
 * the prefix (at most one) first, a prefix's hash_ids one per
 * prefix_tokens-token block. On error, err holds "segments[I].FIELD:
 * problem" (the caller adds file and line). */
int sim_seg_parse(const json_t *v, int prefix_tokens, sim_seg_buf *b, sim_err *err);

#endif
