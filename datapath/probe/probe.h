/* datapath/probe/probe.h — the data-path probe: measures what moving KV
 * chunks costs on this machine, for the simulator's calibration.
 *
 * It sweeps chunk sizes (one 16-token page to 1024 tokens) × model shapes ×
 * directions (store = gather to host, load = scatter from host, D2D with the
 * chunk in HBM, host→SSD, SSD→host) × methods (every method of every
 * backend usable here, plus the backend's plain-copy reference), checks each
 * method's bytes against the CPU reference before timing it, then times it
 * the nvbandwidth way: warm-up runs, a monotonic clock around each
 * synchronous call, the median of N, bytes counted once (the KV payload).
 * Consecutive runs rotate over disjoint pages and buffers so small chunks
 * are not timed from a warm cache.
 *
 * Needs only libc and the CUDA runtime, so it builds on a GPU machine with
 * no package registry; it writes one JSON document by hand. */
#ifndef DP_PROBE_H
#define DP_PROBE_H

#include <stdbool.h>
#include <stdio.h>

#include "sim/util.h"

#define DP_PROBE_MAX_LIST    16
/* cpu backend worker threads at most (--threads) */
#define DP_PROBE_MAX_THREADS 256
#define DP_PROBE_STR_(x)     #x
#define DP_PROBE_STR(x)      DP_PROBE_STR_(x)

typedef struct dp_probe_shape {
    char name[32];
    int layers, kv_heads, head_dim, dtype_bytes;
} dp_probe_shape;

typedef struct dp_probe_opts {
    dp_probe_shape shapes[DP_PROBE_MAX_LIST];
    int nshapes;
    int tokens[DP_PROBE_MAX_LIST];
    int ntokens;
    char backends[DP_PROBE_MAX_LIST][16];
    int nbackends;
    int reps, warmup, threads;
    const char *ssd_dir; /* NULL: no SSD directions */
    bool quiet;          /* no table on the log stream */
} dp_probe_opts;

/* Defaults: the three model shapes, 16..1024 tokens, every backend, 9 reps
 * after 2 warm-ups, SSD files under build/probe-ssd. */
void dp_probe_defaults(dp_probe_opts *o);
/* A built-in name (llama3.1-8b, llama3-70b-tp8, qwen2.5-32b, tiny) or
 * LAYERSxKVHEADSxHEADDIMxDTYPEBYTES, e.g. 32x8x128x2. */
int dp_probe_parse_shape(const char *s, dp_probe_shape *out, sim_err *err);

/* Run the sweep: JSON to `json`, a human table to `log`. A method whose
 * bytes differ from the reference fails the run. */
int dp_probe_run(const dp_probe_opts *o, FILE *json, FILE *log, sim_err *err);

/* ---- the tiny JSON writer the probe uses (datapath/probe/json.c) ---- */

typedef struct dp_jw {
    FILE *f;
    int depth;
    bool first[32];   /* no member written yet at this depth */
    bool inline_[32]; /* members on one line */
} dp_jw;

void dp_jw_init(dp_jw *w, FILE *f);
/* key is NULL inside arrays. inline_ objects print on one line. */
void dp_jw_obj(dp_jw *w, const char *key, bool inline_);
void dp_jw_arr(dp_jw *w, const char *key);
void dp_jw_end(dp_jw *w, char close);
void dp_jw_str(dp_jw *w, const char *key, const char *v);
void dp_jw_num(dp_jw *w, const char *key, double v);
void dp_jw_int(dp_jw *w, const char *key, long long v);
void dp_jw_bool(dp_jw *w, const char *key, bool v);

#endif
