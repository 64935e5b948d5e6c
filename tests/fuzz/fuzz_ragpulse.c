/* tests/fuzz/fuzz_ragpulse.c — libFuzzer entry point for the RAGPulse
 * importer (sim/trace/ragpulse.c, `kvsim trace import ragpulse`): the input
 * bytes are a trace directory's six files, 0_trace.jsonl then the tables
 * 1_sys_prompt.jsonl .. 5_web_search.jsonl, separated by lines that are
 * exactly "%%" (the first five such lines; files past the last are empty).
 *
 * The invariant is the importer's round trip: it either fails with a
 * message naming a file ("FILE: problem", or "FILE:LINE: FIELD: problem"
 * for what a line holds) and writes nothing, or writes a trace that the
 * trace reader (sim_trace_open / sim_trace_next, strict, unsorted, with
 * configs/default.json's 512-token blocks, as `kvsim run` reads it)
 * accepts whole, with as many requests as the importer says it wrote.
 *
 *   make fuzz && build/fuzz/fuzz_ragpulse -max_total_time=60 build/fuzz/corpus/ragpulse tests/fuzz/corpus/ragpulse
 * (libFuzzer adds the inputs it finds to the first folder; the seeds here stay as written).
 *
 * tests/test_fuzz.c includes this file with FUZZ_NO_ENTRY defined and runs
 * fuzz_ragpulse_check on a fixed set of mutations of the same corpus. */
#include "sim/trace/ragpulse.h"
#include "sim/trace/trace.h"
#include "tests/fuzz/fuzz.h"

/* Where each of the six files lies in the input: split at the first five
 * lines that are exactly "%%"; the sixth file takes the rest. */
static void fuzz_ragpulse_split(const uint8_t *d, size_t n, size_t start[SIM_RAGPULSE_NFILES],
                                size_t len[SIM_RAGPULSE_NFILES])
{
    int f = 0;
    size_t s = 0;
    for (size_t pos = 0; pos < n && f < SIM_RAGPULSE_NFILES - 1;) {
        const uint8_t *nl = memchr(d + pos, '\n', n - pos);
        size_t end = nl ? (size_t)(nl - d) : n;
        if (end - pos == 2 && d[pos] == '%' && d[pos + 1] == '%') {
            start[f] = s, len[f] = pos - s, f++;
            s = end < n ? end + 1 : n;
        }
        pos = end + 1;
    }
    start[f] = s, len[f] = n - s;
    while (++f < SIM_RAGPULSE_NFILES) start[f] = n, len[f] = 0;
}

/* msg names one of the files: "PATH: problem" or "PATH:LINE: FIELD: problem". */
static bool fuzz_ragpulse_names_file(const char *msg, char paths[SIM_RAGPULSE_NFILES][32])
{
    for (int i = 0; i < SIM_RAGPULSE_NFILES; i++) {
        size_t n = strlen(paths[i]);
        if (strncmp(msg, paths[i], n) || msg[n] != ':') continue;
        const char *p = msg + n + 1;
        if (*p == ' ') return p[1] != 0;
        if (*p < '1' || *p > '9') return false;
        while (*p >= '0' && *p <= '9') p++;
        if (*p++ != ':' || *p++ != ' ') return false;
        const char *field = p;
        while (*p && *p != ':' && *p != ' ') p++;
        return p > field && p[0] == ':' && p[1] == ' ' && p[2];
    }
    return false;
}

/* The written trace through the reader: every request, and as many. */
static fuzz_verdict fuzz_ragpulse_read_back(const char *path, int64_t written)
{
    sim_trace_opts o = sim_trace_default_opts();
    sim_trace *t;
    sim_err err = {{0}};
    if (sim_trace_open(&t, path, &o, &err)) return fuzz_broken("sim_trace_open of the import: %s", err.msg);
    int64_t n = 0;
    sim_request *r;
    int rc;
    while ((rc = sim_trace_next(t, &r, &err)) == 1) {
        bool segs = r->nsegs > 0;
        sim_request_free(r);
        n++;
        if (!segs) rc = -2;
        if (rc != 1) break;
    }
    sim_trace_close(t);
    if (rc == -2) return fuzz_broken("request %lld of the import has no segments", (long long)n);
    if (rc < 0) return fuzz_broken("the trace reader refuses what the import wrote: %s", err.msg);
    if (n != written)
        return fuzz_broken("the import wrote %lld requests, the reader reads %lld", (long long)written, (long long)n);
    return FUZZ_ACCEPTED;
}

/* Import from the six memfds into a seventh, then judge. */
static fuzz_verdict fuzz_ragpulse_import(char paths[SIM_RAGPULSE_NFILES][32], int out_fd, const char *out_path)
{
    FILE *out = fdopen(dup(out_fd), "w");
    if (!out) return fuzz_broken("fdopen of the output memfd failed");
    const char *names[SIM_RAGPULSE_NFILES];
    for (int i = 0; i < SIM_RAGPULSE_NFILES; i++) names[i] = paths[i];
    sim_ragpulse_stats st;
    sim_err err = {{0}};
    int rc = sim_ragpulse_import_files(names, out, out_path, &st, &err);
    fclose(out);
    off_t size = lseek(out_fd, 0, SEEK_END);
    if (rc == 0) return fuzz_ragpulse_read_back(out_path, st.requests);
    if (!fuzz_ragpulse_names_file(err.msg, paths))
        return fuzz_broken("the import's message names no file: '%s'", err.msg);
    if (size != 0) return fuzz_broken("the import failed (%s) but wrote %lld bytes", err.msg, (long long)size);
    return FUZZ_REJECTED;
}

static fuzz_verdict fuzz_ragpulse_check(const uint8_t *data, size_t size)
{
    size_t start[SIM_RAGPULSE_NFILES], len[SIM_RAGPULSE_NFILES];
    fuzz_ragpulse_split(data, size, start, len);
    char paths[SIM_RAGPULSE_NFILES][32], out_path[32];
    int fds[SIM_RAGPULSE_NFILES], made = 0, out_fd = fuzz_memfd(NULL, 0, out_path, sizeof out_path);
    for (; made < SIM_RAGPULSE_NFILES && out_fd >= 0; made++)
        if ((fds[made] = fuzz_memfd(data + start[made], len[made], paths[made], sizeof paths[made])) < 0) break;
    fuzz_verdict v = made == SIM_RAGPULSE_NFILES ? fuzz_ragpulse_import(paths, out_fd, out_path)
                                                 : fuzz_broken("cannot put the input in memfds");
    while (made > 0) close(fds[--made]);
    if (out_fd >= 0) close(out_fd);
    return v;
}

FUZZ_ENTRY(fuzz_ragpulse_check)
