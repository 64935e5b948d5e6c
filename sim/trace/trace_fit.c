/* sim/trace/trace_fit.c — how a trace's hash_ids fit a block size (issue 40
 * item 2): the fit gathered line by line, its words, and the warning a
 * replay or `kvsim trace stats` gives when the ids were cut for another size. */
#include <inttypes.h>
#include <stdio.h>

#include "sim/trace/trace_int.h"

const sim_block_fit *sim_trace_block_fit(const sim_trace *t) { return &t->fit; }

void sim_block_fit_add(sim_block_fit *f, int64_t input, int64_t n, int block_tokens, int64_t line)
{
    f->requests++;
    if (n < (input + block_tokens - 1) / block_tokens && f->short_ids++ == 0) f->first_short_line = line;
    if (n == 0) {
        f->without_ids += input > 0;
        return;
    }
    int64_t lo = (input + n - 1) / n, hi = n > 1 ? (input + n - 2) / (n - 1) - 1 : INT64_MAX;
    if (lo > f->lo) f->lo = lo;
    if (hi < f->hi) f->hi = hi;
}

bool sim_block_fit_wrong(const sim_block_fit *f, int block_tokens)
{
    return f->short_ids > 0 && f->lo <= f->hi && (block_tokens < f->lo || block_tokens > f->hi);
}

const char *sim_block_fit_text(const sim_block_fit *f, char *buf, size_t n)
{
    if (f->lo > f->hi) snprintf(buf, n, "no one block size fits every request (some tails are uncacheable?)");
    else if (f->lo == f->hi) snprintf(buf, n, "blocks of %" PRId64 " tokens fit every request", f->lo);
    else if (f->hi == INT64_MAX) snprintf(buf, n, "its blocks may be %" PRId64 " tokens or more", f->lo);
    else snprintf(buf, n, "blocks of %" PRId64 " to %" PRId64 " tokens fit every request", f->lo, f->hi);
    return buf;
}

const char *sim_trace_block_warning(const sim_trace *t, const char *advice, char *buf, size_t n)
{
    return sim_block_fit_warning(&t->fit, t->name, t->opts.block_tokens, advice, buf, n);
}

const char *sim_block_fit_warning(const sim_block_fit *f, const char *name, int bt, const char *advice, char *buf,
                                  size_t n)
{
    if (!sim_block_fit_wrong(f, bt)) return NULL;
    char fits[128];
    int64_t good = 1; /* the smallest power of two that fits, else the smallest size */
    while (good < f->lo) good *= 2;
    if (good > f->hi) good = f->lo;
    snprintf(buf, n,
             "%s: %" PRId64 " requests have fewer hash_ids than ceil(input_length / %d) (the first: line %" PRId64
             "): the trace's blocks are not %d tokens; %s (%s%" PRId64 ")",
             name, f->short_ids, bt, f->first_short_line, bt, sim_block_fit_text(f, fits, sizeof fits), advice, good);
    return buf;
}

const char *sim_block_fit_empty_warning(const sim_block_fit *f, const char *name, char *buf, size_t n)
{
    if (f->requests == 0 || f->without_ids < f->requests) return NULL;
    snprintf(buf, n,
             "%s: none of its %" PRId64 " requests has hash_ids, so no prompt can match another's blocks: its hit "
             "rates are 0 by construction, not a result; `kvsim trace import` gives a lengths-only trace unique ids "
             "and `kvsim trace gen` writes traces with reuse (docs/trace.md)",
             name, f->requests);
    return buf;
}

const char *sim_trace_hash_warning(const sim_trace *t, char *buf, size_t n)
{
    return sim_block_fit_empty_warning(&t->fit, t->name, buf, n);
}
