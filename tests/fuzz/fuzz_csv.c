/* tests/fuzz/fuzz_csv.c — libFuzzer entry point for the length-only CSV
 * importers (sim/trace/csvimport.c, `kvsim trace import azure|burstgpt`):
 * the input bytes are one CSV file, imported three ways — as Azure, as
 * BurstGPT, and as BurstGPT with --model ChatGPT --log-type "API log"
 * --limit 2 (a seed's header suits one format; the other refuses it).
 *
 * The invariants, per import: it fails with a message naming the file
 * ("FILE: problem" or "FILE:LINE: ..."), or it writes a trace that the
 * trace reader (strict, unsorted, 512-token blocks, as `kvsim run` reads
 * it) accepts whole, with as many requests as the importer counted, the
 * first at timestamp 0, each with ceil(input / 512) fresh ids numbered 0,
 * 1, 2, … across the file (st.blocks in all), at most --limit of them; and
 * every data row is counted once: written, filtered, of 0 input tokens or
 * failed (unless the limit stopped the import).
 *
 *   make fuzz && build/fuzz/fuzz_csv -max_total_time=60 build/fuzz/corpus/csv tests/fuzz/corpus/csv
 *
 * tests/test_fuzz.c includes this file with FUZZ_NO_ENTRY defined and runs
 * fuzz_csv_check on a fixed set of mutations of the same corpus. */
#include "sim/trace/csvimport.h"
#include "sim/trace/trace.h"
#include "tests/fuzz/fuzz.h"

/* One request of the written trace against the import's rule; *next_id
 * is the next fresh id expected. */
static fuzz_verdict fuzz_csv_request(const sim_request *r, int64_t n, int64_t *next_id)
{
    if (n == 0 && r->timestamp_ms != 0) return fuzz_broken("the first request is at %.17g ms, not 0", r->timestamp_ms);
    if (r->nblocks != (r->input_len + 511) / 512)
        return fuzz_broken("request %lld: %d ids for %d input tokens", (long long)n, r->nblocks, r->input_len);
    for (int32_t i = 0; i < r->nblocks; i++)
        if (r->hash_ids[i] != (*next_id)++)
            return fuzz_broken("request %lld: id %lld where a fresh id %lld was due", (long long)n,
                               (long long)r->hash_ids[i], (long long)*next_id - 1);
    return FUZZ_ACCEPTED;
}

/* The written trace through the reader. */
static fuzz_verdict fuzz_csv_read_back(const char *path, const sim_csv_import_stats *st, int64_t limit)
{
    sim_trace_opts o = sim_trace_default_opts();
    sim_trace *t;
    sim_err err = {{0}};
    if (sim_trace_open(&t, path, &o, &err)) return fuzz_broken("sim_trace_open of the import: %s", err.msg);
    int64_t n = 0, next_id = 0;
    sim_request *r;
    int rc;
    fuzz_verdict v = FUZZ_ACCEPTED;
    while (v == FUZZ_ACCEPTED && (rc = sim_trace_next(t, &r, &err)) == 1) {
        v = fuzz_csv_request(r, n++, &next_id);
        sim_request_free(r);
    }
    sim_trace_close(t);
    if (v != FUZZ_ACCEPTED) return v;
    if (rc < 0) return fuzz_broken("the trace reader refuses what the import wrote: %s", err.msg);
    if (n != st->requests || next_id != st->blocks)
        return fuzz_broken("the import counted %lld requests and %lld ids, the reader reads %lld and %lld",
                           (long long)st->requests, (long long)st->blocks, (long long)n, (long long)next_id);
    if (limit && n > limit) return fuzz_broken("%lld requests past --limit %lld", (long long)n, (long long)limit);
    if (!st->limited && st->rows != st->requests + st->filtered + st->zero_input + st->failed)
        return fuzz_broken("%lld rows but %lld written + %lld filtered + %lld zero-input + %lld failed",
                           (long long)st->rows, (long long)st->requests, (long long)st->filtered,
                           (long long)st->zero_input, (long long)st->failed);
    return FUZZ_ACCEPTED;
}

/* msg names the file: "PATH: problem" or "PATH:LINE: ...". */
static bool fuzz_csv_names_file(const char *msg, const char *path)
{
    size_t n = strlen(path);
    if (strncmp(msg, path, n) || msg[n] != ':') return false;
    const char *p = msg + n + 1;
    if (*p == ' ') return p[1] != 0;
    if (*p < '1' || *p > '9') return false;
    while (*p >= '0' && *p <= '9') p++;
    return p[0] == ':' && p[1] == ' ' && p[2];
}

/* One import of the file at path into a fresh memfd, judged. */
static fuzz_verdict fuzz_csv_import(const char *path, const sim_csv_format *fmt, const sim_csv_import_opts *o)
{
    char out_path[64];
    int out_fd = fuzz_memfd(NULL, 0, out_path, sizeof out_path);
    FILE *out = out_fd >= 0 ? fdopen(dup(out_fd), "w") : NULL;
    if (!out) {
        if (out_fd >= 0) close(out_fd);
        return fuzz_broken("cannot open an output memfd");
    }
    sim_csv_import_stats st;
    sim_err err = {{0}};
    int rc = sim_csv_import(fmt, path, o, out, out_path, &st, &err);
    fclose(out);
    fuzz_verdict v = rc == 0 ? fuzz_csv_read_back(out_path, &st, o->limit) : FUZZ_REJECTED;
    if (rc != 0 && !fuzz_csv_names_file(err.msg, path))
        v = fuzz_broken("the %s import's message names no file: '%s'", fmt->name, err.msg);
    close(out_fd);
    return v;
}

static fuzz_verdict fuzz_csv_on_file(const char *path, const void *ctx)
{
    (void)ctx;
    sim_csv_import_opts plain = sim_csv_import_default_opts(), picky = plain;
    picky.model = "ChatGPT", picky.log_type = "API log", picky.limit = 2;
    const struct {
        const sim_csv_format *fmt;
        const sim_csv_import_opts *o;
    } runs[] = {{&sim_csv_azure, &plain}, {&sim_csv_burstgpt, &plain}, {&sim_csv_burstgpt, &picky}};
    fuzz_verdict all = FUZZ_REJECTED;
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        fuzz_verdict v = fuzz_csv_import(path, runs[i].fmt, runs[i].o);
        if (v == FUZZ_BROKEN) return v;
        if (v == FUZZ_ACCEPTED) all = FUZZ_ACCEPTED;
    }
    return all;
}

static fuzz_verdict fuzz_csv_check(const uint8_t *data, size_t size)
{
    return fuzz_on_file(data, size, fuzz_csv_on_file, NULL);
}

FUZZ_ENTRY(fuzz_csv_check)
