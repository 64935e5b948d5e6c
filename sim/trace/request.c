/* sim/trace/request.c — a trace request's one allocation (the struct, then
 * its key, id, prefix-id and segment arrays) and its release, counted: the
 * bottom of sim/trace, which every reader (trace_parse.c, resample.c) calls. */
#include <stdlib.h>

#include "sim/trace/trace_int.h"

/* Requests allocated and not freed, and the most at once: a replay frees
 * each request when it completes, so these follow the requests in flight
 * (tests/test_stream.c). One thread reads a trace. */
static int64_t nlive, nlive_peak;

sim_request *sim_request_new(const sim_request *fields, size_t n, size_t nids, size_t nsegs)
{
    sim_request *r = sim_xmalloc(sizeof *r + n * (sizeof *r->keys + sizeof *r->hash_ids) + nids * sizeof *r->seg_ids +
                                 nsegs * sizeof *r->segs);
    *r = *fields;
    r->nblocks = (int32_t)n;
    r->keys = (uint64_t *)(r + 1);
    r->hash_ids = (int64_t *)(r->keys + n);
    r->seg_ids = r->hash_ids + n;
    r->segs = (sim_segment *)(r->seg_ids + nids);
    r->nsegs = (int32_t)nsegs;
    if (++nlive > nlive_peak) nlive_peak = nlive;
    return r;
}

void sim_request_free(sim_request *r)
{
    if (!r) return;
    nlive--;
    free(r);
}

int64_t sim_request_live(void) { return nlive; }

int64_t sim_request_live_peak(void) { return nlive_peak; }

void sim_request_live_reset(void) { nlive_peak = nlive; }
