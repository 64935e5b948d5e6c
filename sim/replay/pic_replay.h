/* sim/replay/pic_replay.h — cache-only replay of a segment trace through a
 * PIC policy (docs/pic.md, "Replays"): the engine of `kvsim hitrate --pic`
 * and of the reusable fractions `kvsim trace stats` prints.
 *
 * Requests in trace order with a window of W in flight: request i − W is
 * released just before request i is admitted, and the last W are released
 * at the end (W = 1: one request at a time). No timing. The trace is loaded
 * once, so a capacity list replays it without parsing it again. */
#ifndef SIM_PIC_REPLAY_H
#define SIM_PIC_REPLAY_H

#include <stdint.h>

#include "sim/store/pic.h"
#include "sim/trace/trace.h"
#include "sim/util.h"

typedef struct kv_pic_trace {
    char *path;
    sim_request **req;
    int64_t n;
    int64_t segment_requests; /* requests that carry segments */
} kv_pic_trace;

/* Load a trace (opts.block_tokens: its prefix segments' block size). A
 * request without segments is admitted as one unique prompt (kv_pic_admit),
 * computed in full by every policy; the load fails if no request has
 * segments. */
int kv_pic_trace_load(kv_pic_trace *t, const char *path, const sim_trace_opts *opts, sim_err *err);
void kv_pic_trace_free(kv_pic_trace *t);
/* A loaded trace of requests read already (sim_trace_compute_stats_keep):
 * t owns req and its requests. */
void kv_pic_trace_adopt(kv_pic_trace *t, const char *path, sim_request **req, int64_t n);

typedef struct kv_pic_result {
    int64_t requests, input_tokens, computed_tokens, computed_positions;
    int64_t chunks, chunk_hits;
    int64_t peak_footprint_blocks, evictions;
    kv_pic_peak at_peak;       /* what the peak footprint was made of */
    double recompute_fraction; /* computed tokens / input tokens */
    double position_fraction;  /* computed positions (padding included) / input tokens */
    double chunk_hit_rate;     /* reused chunk occurrences / chunk occurrences (0 without chunks) */
} kv_pic_result;

/* One replay: params.capacity_blocks is C; window ≥ 1. */
void kv_pic_replay(const kv_pic_trace *t, const kv_pic_policy *pol, const kv_pic_params *params, int64_t window,
                   kv_pic_result *out);

/* What `kvsim trace stats` reports of a segment trace (docs/pic.md). */
typedef struct kv_pic_trace_stats {
    int64_t segment_requests;
    double chunks_per_request;       /* chunk occurrences per segment request */
    double chunk_repeat_share;       /* occurrences of a chunk seen before (this request included) / occurrences */
    double multi_position_share;     /* chunks occurring more than once that occur at more than one token offset */
    double reusable_fraction_prefix; /* 1 − recompute fraction: prefix policy, infinite cache, W = 1 */
    double reusable_fraction_pic;    /* the same under mepic */
} kv_pic_trace_stats;

void kv_pic_trace_stats_compute(const kv_pic_trace *t, int prefix_tokens, kv_pic_trace_stats *out);
/* A segment trace's statistics (`kvsim trace stats`), of the n requests
 * sim_trace_compute_stats_keep kept (adopted and freed here), or, when it
 * kept none, of the trace at path read again: 0, or -1 with err. */
int kv_pic_trace_stats_of(const char *path, const sim_trace_opts *opts, sim_request **kept, int64_t n,
                          kv_pic_trace_stats *out, sim_err *err);

#endif
