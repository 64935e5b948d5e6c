/* sim/trace/trace.h — Mooncake-format JSONL traces: streaming reader, validation,
 * replay speed and sampling, fingerprint, statistics and a synthetic generator.
 *
 * Format (docs/trace.md), one request per line:
 *   {"timestamp": ms, "input_length": tokens, "output_length": tokens,
 *    "hash_ids": [..]}  plus optional "session", "turn", "think_ms", "cache",
 *    "slo_ttft_ms", "slo_tbt_ms".
 * Each hash_id names one block of `block_tokens` tokens; a request has
 * exactly ceil(input_length / block_tokens) blocks at most (fewer hash_ids
 * than blocks is allowed: the tail is then uncacheable).
 *
 * Block keys: the cache never sees raw hash_ids. keys[i] is the XXH3-64 of
 * hash_ids[i] seeded with keys[i-1] (keys[-1] = 0), so a key names a block
 * *and its whole prefix*, as Mooncake Store's keys do (§3.2.1). */
#ifndef SIM_TRACE_H
#define SIM_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/util.h"

typedef enum sim_cache_class {
    SIM_CACHE_DEFAULT = 0, /* no "cache" field */
    SIM_CACHE_EPHEMERAL,   /* "cache": "ephemeral" — not worth admitting (§5.2) */
    SIM_CACHE_CONTEXT,     /* "cache": "context"   — never dropped from the hierarchy */
} sim_cache_class;

/* A segment of a segment trace's prompt (docs/pic.md, docs/trace.md):
 * the prompt is its segments in order, packed back to back. */
typedef enum sim_seg_kind {
    SIM_SEG_PREFIX = 0, /* a chain of block_tokens-token content blocks (ids in seg_ids) */
    SIM_SEG_CHUNK,      /* a reusable passage, identified by id */
    SIM_SEG_PROMPT,     /* request-specific text: id names its content, or unique */
    SIM_SEG_NKINDS
} sim_seg_kind;

typedef struct sim_segment {
    sim_seg_kind kind;
    int32_t len;         /* tokens, ≥ 1 */
    bool unique;         /* prompt with "id": null: matches nothing */
    int64_t id;          /* chunk / named prompt content id */
    int32_t first, nids; /* prefix: its block ids are seg_ids[first, first + nids) */
} sim_segment;

typedef struct sim_request {
    int64_t index;       /* 0-based position in the replayed stream (after sort/sample) */
    int64_t line;        /* 1-based line number in the file */
    double timestamp_ms; /* as in the file */
    int64_t arrival_ns;  /* timestamp_ms × 1e6 / speed, rounded */
    int32_t input_len;
    int32_t output_len;
    int32_t nblocks;   /* number of hash_ids */
    uint64_t *keys;    /* nblocks chained block keys (see above) */
    int64_t *hash_ids; /* nblocks raw ids as in the file */
    int64_t session;   /* -1 when absent */
    int64_t turn;      /* -1 when absent: the turn's number in its session (closed replay checks the order) */
    double think_ms;   /* -1 when absent: the user's time between the previous turn's end and this one */
    sim_cache_class cache;
    double slo_ttft_ms; /* 0 when absent: the config's SLO applies */
    double slo_tbt_ms;  /* 0 when absent */
    /* Segment traces only (nsegs = 0 otherwise). Without "hash_ids", keys
     * and hash_ids are derived from the segments (sim_segments_keys). */
    int32_t nsegs;
    sim_segment *segs;
    int64_t *seg_ids; /* the prefix segment's block ids */
} sim_request;

/* The longest prompt or answer a trace line may give, in tokens: 16× the
 * longest context of any current model. A bound keeps one mistyped length
 * (2147483647) from asking for gigabytes of block keys. */
#define SIM_TRACE_MAX_TOKENS   (1 << 24)
/* The longest think time a line may give: a year, in ms. */
#define SIM_TRACE_MAX_THINK_MS 3.1536e10

/* trace.resample (sim/trace/resample.c): what the seed redraws. */
typedef enum sim_resample { SIM_RESAMPLE_NONE = 0, SIM_RESAMPLE_POISSON, SIM_RESAMPLE_SESSIONS } sim_resample;

typedef struct sim_trace_opts {
    int block_tokens; /* tokens per hash block; 512 */
    double speed;     /* replay speed factor; 2 = arrivals twice as dense */
    bool skip_bad;    /* bad lines become a counted warning instead of an error */
    bool sort;        /* accept non-monotonic timestamps by sorting (loads the file) */
    double sample;    /* keep each request with this probability, (0,1]; 1 = all */
    uint64_t seed;    /* RNG seed for sampling and resampling */
    int resample;     /* sim_resample: redraw arrivals or sessions from seed (loads the file, as sort does) */
    int64_t limit;    /* stop after this many requests; 0 = no limit */
    const char *name; /* the trace in messages when not its path (a pipe's temporary copy); NULL = path */
} sim_trace_opts;

/* Defaults: block_tokens 512, speed 1, no skip, no sort, sample 1, seed 1. */
sim_trace_opts sim_trace_default_opts(void);

typedef struct sim_trace sim_trace;

/* Open a trace file ("-" = stdin), plain or gzip, recognised by content
 * (sim/infile.h). Errors name the file. */
int sim_trace_open(sim_trace **out, const char *path, const sim_trace_opts *opts, sim_err *err);

/* Next request: returns 1 with *req set (caller owns it: sim_request_free),
 * 0 at end of trace, -1 on a bad line (err = "FILE:LINE: FIELD: problem").
 * With skip_bad, bad lines are counted and skipped, never returned as -1;
 * a fault of the file itself still is ("FILE:LINE: read error: ..." for a
 * read error or a corrupt or truncated gzip stream, "FILE: zstd-compressed;
 * ..."). */
int sim_trace_next(sim_trace *t, sim_request **req, sim_err *err);

/* Lines skipped under skip_bad so far, and the first skip's message. */
int64_t sim_trace_skipped(const sim_trace *t);
const char *sim_trace_first_skip(const sim_trace *t);
/* The i-th skipped line's message ("FILE:LINE: FIELD: problem"); the first
 * SIM_TRACE_SKIPS_KEPT are kept, NULL past them or past the count. */
#define SIM_TRACE_SKIPS_KEPT 100
const char *sim_trace_skip_message(const sim_trace *t, int64_t i);
/* After a read that returned no request: true when skip_bad skipped every
 * line that was not blank, err then saying so ("FILE: all N lines were
 * skipped as bad (--skip-bad), leaving no requests; the first, line L:
 * FIELD: problem ..."), the cause a bare "no requests" would hide. False
 * when some line read as a request (sampling left none) or none was
 * skipped. */
bool sim_trace_all_skipped(const sim_trace *t, sim_err *err);
/* The trace as messages name it: opts.name, "<stdin>" or the path. */
const char *sim_trace_name(const sim_trace *t);

void sim_trace_close(sim_trace *t);
/* The first bad line of the trace at path when read without skip_bad
 * (what skip_bad skipped first): true with err = "FILE:LINE: FIELD:
 * problem", false when every line reads (or the file does not open). */
bool sim_trace_first_bad_line(const char *path, const sim_trace_opts *opts, sim_err *err);
void sim_request_free(sim_request *r);
/* Requests allocated by readers and not yet freed, process-wide, and the
 * most at once since sim_request_live_reset: a streamed replay's memory
 * follows them (docs/run.md, "Long traces"; tests/test_stream.c). */
int64_t sim_request_live(void);
int64_t sim_request_live_peak(void);
void sim_request_live_reset(void);

/* XXH64 (seed 0) of the file's text, decompressed when the file is gzip
 * (sim/infile.h): the trace fingerprint recorded with every run, the same
 * for a trace and its compressed copy. */
int sim_trace_fingerprint(const char *path, uint64_t *out, sim_err *err);
/* The trace at path as a file that can be read twice (fingerprint, then
 * replay) and its fingerprint: path itself when it is a regular file; for
 * "-", /dev/stdin or a pipe, a copy of its (decompressed) text written to
 * a temporary file while hashing (out gets its path, *spooled = true: the
 * caller unlinks it). */
int sim_trace_materialize(const char *path, char *out, size_t n, bool *spooled, uint64_t *fp, sim_err *err);

/* Block key chaining, exposed for tests and generators. */
uint64_t sim_block_key(uint64_t prev_key, int64_t hash_id);

/* Content keys of the first nblocks blocks of B tokens of a segment
 * request's packed prompt, cut at token `limit` (the last block may be
 * short): keys[i] names block i's content and the whole prompt before it
 * (chained as sim_block_key chains), so equal keys mean an equal token
 * prefix. A block's content is the segment pieces it covers: a prefix
 * block's piece is its chain key (over prefix_tokens-token blocks) and its
 * offsets, a chunk's or named prompt's piece is its id and offsets, a
 * unique prompt's piece matches nothing (request line and segment number).
 * raw, when not NULL, gets each block's unchained content hash. */
void sim_segments_keys(const sim_request *r, int prefix_tokens, int B, int64_t limit, int32_t nblocks, uint64_t *keys,
                       int64_t *raw);

/* How the hash_ids of a trace fit an assumed block size B (issue 40 item
 * 2): n ids fit B iff n = ceil(input / B), i.e. input / n ≤ B < input /
 * (n − 1). Over the hash_ids requests read (segment requests aside): how
 * many have fewer ids than ceil(input_length / B) (the first one's line),
 * and the block sizes [lo, hi] every request with ids fits (lo > hi: none). */
typedef struct sim_block_fit {
    int64_t short_ids, first_short_line;
    int64_t lo, hi;
    int64_t requests, without_ids; /* requests read; those with a prompt and no hash_ids */
} sim_block_fit;

#define SIM_BLOCK_FIT_INIT                                                                                             \
    {                                                                                                                  \
        .lo = 1, .hi = INT64_MAX                                                                                       \
    }
void sim_block_fit_add(sim_block_fit *f, int64_t input, int64_t nids, int block_tokens, int64_t line);
/* Whether the ids fit one block size range that excludes B: the trace was
 * cut into blocks of another size than the one it is read with. */
bool sim_block_fit_wrong(const sim_block_fit *f, int block_tokens);
/* "blocks of 512 tokens fit every request", "... of 358 to 536 tokens ...",
 * "its blocks may be 600 tokens or more" or "no one block size fits every
 * request (some tails are uncacheable?)", into buf. */
const char *sim_block_fit_text(const sim_block_fit *f, char *buf, size_t n);
/* The fit of the hash_ids requests read so far. */
const sim_block_fit *sim_trace_block_fit(const sim_trace *t);
/* When the fit is wrong for the trace's block size: one sentence naming
 * the trace, the first short request and the sizes that fit, advising
 * `advice` (e.g. "--set trace.block_tokens="), into buf; NULL otherwise. */
const char *sim_trace_block_warning(const sim_trace *t, const char *advice, char *buf, size_t n);
/* The same for a fit gathered elsewhere (trace rechunk), naming `name`. */
const char *sim_block_fit_warning(const sim_block_fit *f, const char *name, int block_tokens, const char *advice,
                                  char *buf, size_t n);
/* When every request read had a prompt and an empty hash_ids list: one
 * sentence naming the trace and saying that its hit rates are 0 by
 * construction, into buf; NULL otherwise. */
const char *sim_trace_hash_warning(const sim_trace *t, char *buf, size_t n);
/* The same for a fit gathered elsewhere (trace stats), naming `name`. */
const char *sim_block_fit_empty_warning(const sim_block_fit *f, const char *name, char *buf, size_t n);

/* ---- statistics (kvsim trace stats) ------------------------------------ */
typedef struct sim_trace_stats {
    int64_t requests;
    double duration_s;   /* last − first timestamp */
    double arrival_rate; /* requests / duration_s (0 if duration is 0) */
    double input_mean, input_p50, input_p99;
    double output_mean, output_p50, output_p99;
    int64_t blocks;             /* Σ nblocks */
    int64_t distinct_blocks;    /* distinct block keys */
    double max_hit_rate_blocks; /* infinite-cache prefix hit rate (docs/definitions.md) */
    double max_hit_rate_tokens;
    int64_t skipped;          /* lines skipped under skip_bad */
    int64_t segment_requests; /* requests with "segments" (sim/replay/pic_replay.h has their statistics) */
    /* The block size the statistics assume (opts.block_tokens) and how the
     * hash_ids fit it. */
    int block_tokens;
    sim_block_fit fit;
} sim_trace_stats;

/* `kvsim trace stats` and `kvsim trace rechunk` remember every distinct
 * block (the infinite cache; the coarse blocks' numbers): past this many
 * they say so on stderr, since their memory grew with the trace (docs/run.md,
 * "Long traces"). */
#define SIM_TRACE_WHOLE_BLOCKS ((int64_t)1 << 24)
int sim_trace_compute_stats(const char *path, const sim_trace_opts *opts, sim_trace_stats *out, sim_err *err);
/* The same, keeping the requests when the first one has segments (a
 * segment trace, which `kvsim trace stats` replays next, so that it is not
 * read twice): *kept gets them, in order (the caller frees each and the
 * array), *nkept their count; else *kept is NULL. Nothing is kept on an
 * error. */
int sim_trace_compute_stats_keep(const char *path, const sim_trace_opts *opts, sim_trace_stats *out,
                                 sim_request ***kept, int64_t *nkept, sim_err *err);

#endif
