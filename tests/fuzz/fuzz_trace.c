/* tests/fuzz/fuzz_trace.c — libFuzzer entry point for the trace reader
 * (sim/trace/trace.c, segments.c): the input bytes are a trace file, read
 * through sim_trace_open / sim_trace_next / sim_trace_close three times, as
 * `kvsim run` reads it: strict, with skip_bad, and with skip_bad and sort.
 *
 * Besides "0, or -1 with a message" and no sanitizer report, the check holds
 * the reader to what trace.h documents: every request it returns has
 * lengths ≥ 1, a finite non-negative timestamp, at most ceil(input_length /
 * block_tokens) blocks whose keys chain its hash_ids (sim_block_key),
 * segments summing to input_length, and timestamps in order; under skip_bad
 * it never returns -1 but for a fault of the file itself (a read error, a
 * corrupt or truncated gzip stream, zstd); a strict read that succeeds skips nothing under
 * skip_bad; and sorting changes the order, never how many lines are read
 * (requests + skipped lines agree between the two skip_bad passes). A
 * segment request's keys are also walked at PIC's 16-token pages.
 *
 *   make fuzz && build/fuzz/fuzz_trace -max_total_time=60 build/fuzz/corpus/trace tests/fuzz/corpus/trace
 * (libFuzzer adds the inputs it finds to the first folder; the seeds here stay as written).
 *
 * tests/test_fuzz.c includes this file with FUZZ_NO_ENTRY defined and runs
 * fuzz_trace_check on a fixed set of mutations of the same corpus. */
#include <math.h>

#include "sim/trace/trace.h"
#include "tests/fuzz/fuzz.h"

#define FUZZ_BLOCK 512 /* trace.block_tokens of configs/default.json */

typedef struct fuzz_trace_pass {
    int64_t requests, skipped;
    double prev_ts;
    bool file_fault; /* the read stopped at a fault of the file itself */
} fuzz_trace_pass;

/* Segments: in range, a prefix only first, lengths summing to input_len;
 * then the 16-token page keys PIC derives (sim/store/pic_store.c). */
static fuzz_verdict fuzz_trace_segments(const sim_request *r)
{
    int64_t total = 0;
    for (int32_t i = 0; i < r->nsegs; i++) {
        const sim_segment *s = &r->segs[i];
        if (s->kind < SIM_SEG_PREFIX || s->kind >= SIM_SEG_NKINDS || s->len < 1)
            return fuzz_broken("line %lld: segment %d has kind %d, len %d", (long long)r->line, (int)i, (int)s->kind,
                               (int)s->len);
        if (s->kind == SIM_SEG_PREFIX && (i != 0 || s->nids != ((int64_t)s->len + FUZZ_BLOCK - 1) / FUZZ_BLOCK))
            return fuzz_broken("line %lld: prefix segment %d with %d ids", (long long)r->line, (int)i, (int)s->nids);
        total += s->len;
    }
    if (r->nsegs && total != r->input_len)
        return fuzz_broken("line %lld: segments sum to %lld, input_length %d", (long long)r->line, (long long)total,
                           (int)r->input_len);
    uint64_t pages[64];
    int64_t n = ((int64_t)r->input_len + 15) / 16;
    if (r->nsegs) sim_segments_keys(r, FUZZ_BLOCK, 16, r->input_len, (int32_t)(n < 64 ? n : 64), pages, NULL);
    return FUZZ_ACCEPTED;
}

/* One returned request against trace.h's promises. */
static fuzz_verdict fuzz_trace_request(const sim_request *r, fuzz_trace_pass *p)
{
    long long line = (long long)r->line;
    if (r->index != p->requests || r->line < 1)
        return fuzz_broken("request %lld has index %lld, line %lld", (long long)p->requests, (long long)r->index, line);
    if (r->input_len < 1 || r->output_len < 1)
        return fuzz_broken("line %lld: input %d, output %d tokens", line, (int)r->input_len, (int)r->output_len);
    if (!isfinite(r->timestamp_ms) || r->timestamp_ms < 0 || r->arrival_ns < 0)
        return fuzz_broken("line %lld: timestamp %g, arrival %lld ns", line, r->timestamp_ms, (long long)r->arrival_ns);
    if (r->timestamp_ms < p->prev_ts)
        return fuzz_broken("line %lld: timestamp %g after %g", line, r->timestamp_ms, p->prev_ts);
    if (r->nblocks < 0 || r->nblocks > ((int64_t)r->input_len + FUZZ_BLOCK - 1) / FUZZ_BLOCK)
        return fuzz_broken("line %lld: %d blocks for %d tokens", line, (int)r->nblocks, (int)r->input_len);
    for (int32_t i = 0; i < r->nblocks; i++)
        if (r->keys[i] != sim_block_key(i ? r->keys[i - 1] : 0, r->hash_ids[i]))
            return fuzz_broken("line %lld: key %d does not chain hash_id %lld", line, (int)i,
                               (long long)r->hash_ids[i]);
    p->requests++;
    p->prev_ts = r->timestamp_ms;
    return fuzz_trace_segments(r);
}

/* Read the whole trace once; p gets the counts. */
static fuzz_verdict fuzz_trace_read(const char *path, bool skip_bad, bool sort, fuzz_trace_pass *p)
{
    sim_trace_opts o = sim_trace_default_opts();
    o.block_tokens = FUZZ_BLOCK;
    o.skip_bad = skip_bad;
    o.sort = sort;
    *p = (fuzz_trace_pass){.prev_ts = -INFINITY};
    sim_trace *t;
    sim_err err = {{0}};
    if (sim_trace_open(&t, path, &o, &err)) return fuzz_broken("sim_trace_open: %s", err.msg);
    sim_request *r;
    int rc = 0;
    fuzz_verdict v = FUZZ_ACCEPTED;
    while (v == FUZZ_ACCEPTED && (rc = sim_trace_next(t, &r, &err)) == 1) {
        v = fuzz_trace_request(r, p);
        sim_request_free(r);
    }
    /* skip_bad skips lines; the file's own faults (a read error, corrupt or
     * truncated gzip, zstd) still stop the read, naming the file */
    p->file_fault = rc < 0 && (strstr(err.msg, ": read error: ") || strstr(err.msg, ": zstd-compressed;"));
    if (v == FUZZ_ACCEPTED && rc < 0)
        v = skip_bad && !p->file_fault ? fuzz_broken("sim_trace_next returned -1 under skip_bad: %s", err.msg)
                                       : fuzz_rejected(&err, "sim_trace_next");
    p->skipped = sim_trace_skipped(t);
    const char *first = sim_trace_first_skip(t);
    if (v != FUZZ_BROKEN && (p->skipped > 0) != (first && first[0]))
        v = fuzz_broken("%lld lines skipped, first skip '%s'", (long long)p->skipped, first ? first : "(null)");
    sim_trace_close(t);
    return v;
}

/* The three passes and how their counts relate. */
static fuzz_verdict fuzz_trace_passes(const char *path, const void *ctx)
{
    fuzz_trace_pass strict, skip, sorted;
    fuzz_verdict v = fuzz_trace_read(path, false, false, &strict);
    if (v == FUZZ_BROKEN || fuzz_trace_read(path, true, false, &skip) == FUZZ_BROKEN ||
        fuzz_trace_read(path, true, true, &sorted) == FUZZ_BROKEN)
        return FUZZ_BROKEN;
    if (v == FUZZ_ACCEPTED && (skip.skipped != 0 || skip.requests != strict.requests))
        return fuzz_broken("strict read: %lld requests; skip_bad: %lld and %lld skipped", (long long)strict.requests,
                           (long long)skip.requests, (long long)skip.skipped);
    /* a file fault stops the sorted pass before it returns anything, the
     * streaming one only where the fault is: their counts differ */
    if (!skip.file_fault && skip.requests + skip.skipped != sorted.requests + sorted.skipped)
        return fuzz_broken("skip_bad: %lld requests + %lld skipped; with sort: %lld + %lld", (long long)skip.requests,
                           (long long)skip.skipped, (long long)sorted.requests, (long long)sorted.skipped);
    return v;
}

static fuzz_verdict fuzz_trace_check(const uint8_t *data, size_t size)
{
    return fuzz_on_file(data, size, fuzz_trace_passes, NULL);
}

FUZZ_ENTRY(fuzz_trace_check)
