/* sim/trace/trace_stats.c — `kvsim trace stats`: lengths and their quantiles,
 * arrival rate, blocks and the infinite-cache prefix hit rate of a trace
 * (docs/definitions.md), read in one streaming pass. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>

#include "sim/index/keyset.h"
#include "sim/trace/trace.h"

/* ---- statistics --------------------------------------------------------- */

/* The lengths of every request, for their mean and quantiles, as counts
 * by value (lengths are whole tokens): 8 bytes a distinct length below
 * LEN_DENSE rather than 8 a request; longer ones are kept one by one. The
 * mean and the quantiles are GSL's on the sorted lengths
 * (gsl_stats_mean, gsl_stats_quantile_from_sorted_data), computed over the
 * counts in the same order, so they come out as they did from a sorted
 * array of every length. */
enum { LEN_DENSE = 1 << 20 };

typedef struct lengths {
    int64_t *count; /* count[v]: requests of length v < LEN_DENSE */
    int64_t ncount, n;
    double *big; /* lengths of LEN_DENSE and over */
    size_t nbig, capbig;
} lengths;

static void lengths_add(lengths *l, int32_t v)
{
    l->n++;
    if (v >= LEN_DENSE) {
        if (l->nbig == l->capbig)
            l->big = sim_xrealloc(l->big, (l->capbig = l->capbig ? 2 * l->capbig : 64) * sizeof *l->big);
        l->big[l->nbig++] = v;
        return;
    }
    if (v >= l->ncount) {
        int64_t grown = l->ncount ? l->ncount : 1024;
        while (grown <= v) grown *= 2;
        l->count = sim_xrealloc(l->count, (size_t)grown * sizeof *l->count);
        memset(l->count + l->ncount, 0, (size_t)(grown - l->ncount) * sizeof *l->count);
        l->ncount = grown;
    }
    l->count[v]++;
}

/* The k-th smallest length (0-based). */
static double lengths_at(const lengths *l, int64_t k)
{
    for (int64_t v = 0; v < l->ncount; v++)
        if ((k -= l->count[v]) < 0) return (double)v;
    return l->big[k];
}

/* gsl_stats_quantile_from_sorted_data's rule: the line between the order
 * statistics at f·(n−1). */
static double lengths_quantile(const lengths *l, double f)
{
    double index = f * (double)(l->n - 1);
    int64_t lhs = (int64_t)index;
    double delta = index - (double)lhs;
    if (lhs == l->n - 1) return lengths_at(l, lhs);
    return (1 - delta) * lengths_at(l, lhs) + delta * lengths_at(l, lhs + 1);
}

static void summarize(lengths *l, double *mean, double *p50, double *p99)
{
    *mean = *p50 = *p99 = 0;
    if (!l->n) return;
    gsl_sort(l->big, 1, l->nbig);
    long double m = 0; /* gsl_stats_mean's recurrence, in sorted order */
    int64_t i = 0;
    for (int64_t v = 0; v < l->ncount; v++)
        for (int64_t c = 0; c < l->count[v]; c++, i++) m += ((double)v - m) / (i + 1);
    for (size_t k = 0; k < l->nbig; k++, i++) m += (l->big[k] - m) / (i + 1);
    *mean = (double)m;
    *p50 = lengths_quantile(l, 0.50);
    *p99 = lengths_quantile(l, 0.99);
}

static void lengths_free(lengths *l)
{
    free(l->count);
    free(l->big);
}

typedef struct stats_acc {
    sim_keyset seen;
    lengths input, output;
    int64_t first_ns, last_ns;
    int64_t hit_blocks;
    double tokens, hit_tokens;
} stats_acc;

/* docs/definitions.md against an infinite cache: the prefix hit is the leading run of
 * keys already seen; then every key of the request enters the cache. */
static void stats_add(stats_acc *a, sim_trace_stats *s, const sim_request *r, int block_tokens)
{
    if (s->requests == 0 || r->arrival_ns < a->first_ns) a->first_ns = r->arrival_ns;
    if (s->requests == 0 || r->arrival_ns > a->last_ns) a->last_ns = r->arrival_ns;
    s->requests++;
    s->segment_requests += r->nsegs > 0;
    lengths_add(&a->input, r->input_len);
    lengths_add(&a->output, r->output_len);
    int32_t hit = 0;
    while (hit < r->nblocks && sim_keyset_has(&a->seen, r->keys[hit])) hit++;
    for (int32_t i = hit; i < r->nblocks; i++) sim_keyset_add(&a->seen, r->keys[i]);
    s->blocks += r->nblocks;
    a->hit_blocks += hit;
    a->tokens += r->input_len;
    a->hit_tokens += fmin((double)hit * block_tokens, (double)r->input_len);
    if (r->nsegs == 0) sim_block_fit_add(&s->fit, r->input_len, r->nblocks, block_tokens, r->line);
}

static void stats_finish(stats_acc *a, sim_trace_stats *s)
{
    s->duration_s = s->requests ? sim_ns_to_s(a->last_ns - a->first_ns) : 0;
    s->arrival_rate = s->duration_s > 0 ? (double)s->requests / s->duration_s : 0;
    summarize(&a->input, &s->input_mean, &s->input_p50, &s->input_p99);
    summarize(&a->output, &s->output_mean, &s->output_p50, &s->output_p99);
    s->distinct_blocks = (int64_t)a->seen.count;
    s->max_hit_rate_blocks = s->blocks ? (double)a->hit_blocks / (double)s->blocks : 0;
    s->max_hit_rate_tokens = a->tokens > 0 ? a->hit_tokens / a->tokens : 0;
}

/* r joins the kept requests, or is freed: kept from the first request
 * on when it has segments. */
static void keep_or_free(sim_request ***kept, int64_t *n, int64_t *cap, sim_request *r)
{
    if (!kept || *n < 0 || (*n == 0 && r->nsegs == 0)) {
        if (kept && *n == 0) *n = -1; /* the first has no segments: keep none */
        sim_request_free(r);
        return;
    }
    if (*n == *cap) *kept = sim_xrealloc(*kept, (size_t)(*cap = *cap ? 2 * *cap : 1024) * sizeof **kept);
    (*kept)[(*n)++] = r;
}

int sim_trace_compute_stats(const char *path, const sim_trace_opts *opts, sim_trace_stats *out, sim_err *err)
{
    return sim_trace_compute_stats_keep(path, opts, out, NULL, NULL, err);
}

int sim_trace_compute_stats_keep(const char *path, const sim_trace_opts *opts, sim_trace_stats *out,
                                 sim_request ***kept, int64_t *nkept, sim_err *err)
{
    sim_trace *t;
    memset(out, 0, sizeof *out);
    out->block_tokens = opts->block_tokens;
    out->fit = (sim_block_fit)SIM_BLOCK_FIT_INIT;
    if (kept) *kept = NULL, *nkept = 0;
    if (sim_trace_open(&t, path, opts, err)) return -1;
    stats_acc acc = {0};
    sim_keyset_init_plain(&acc.seen, 1 << 15);
    sim_request *r;
    int rc;
    int64_t cap = 0;
    while ((rc = sim_trace_next(t, &r, err)) == 1) {
        stats_add(&acc, out, r, opts->block_tokens);
        keep_or_free(kept, nkept, &cap, r);
    }
    /* no request: its means, percentiles and hit rates are undefined (they
     * once printed as 0 with exit 0), refused as `kvsim run` refuses it */
    if (rc == 0 && out->requests == 0 && !sim_trace_all_skipped(t, err))
        rc = sim_errf(err, "trace %s: no requests (an empty file, or only blank lines)", sim_trace_name(t));
    else if (rc == 0 && out->requests == 0) rc = -1;
    if (rc == 0) {
        stats_finish(&acc, out);
        out->skipped = sim_trace_skipped(t);
    }
    if (kept && (rc != 0 || *nkept < 0)) {
        for (int64_t i = 0; i < *nkept; i++) sim_request_free((*kept)[i]);
        free(*kept);
        *kept = NULL, *nkept = 0;
    }
    sim_keyset_free(&acc.seen);
    lengths_free(&acc.input);
    lengths_free(&acc.output);
    sim_trace_close(t);
    return rc;
}
