/* sim/trace/trace.c — the Mooncake JSONL trace reader's stream (docs/trace.md):
 * open and close, the order check, skip_bad, optional sort, sampling and
 * the limit, over the line parser of sim/trace/trace_parse.c.
 *
 * The reader sits on the hot path of every replay (`kvsim hitrate`,
 * `kvsim run`), so it keeps one reusable line buffer (sim/infile.h, which
 * also reads gzip files, recognised by content), parses one line at a time
 * and makes exactly one allocation per request (the struct with its key and
 * id arrays behind it). Memory does not grow with trace length, except under
 * `sort` or `resample`, which must see the whole file before they can
 * return the first request. The block-size fit is in trace_fit.c, the
 * fingerprint in trace_fp.c, `kvsim trace stats` in trace_stats.c. */
#include "sim/trace/trace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_rng.h>

#include "sim/infile.h"
#include "sim/trace/trace_int.h"

sim_trace_opts sim_trace_default_opts(void)
{
    return (sim_trace_opts){.block_tokens = 512, .speed = 1.0, .sample = 1.0, .seed = 1};
}

static int check_opts(const char *name, const sim_trace_opts *o, sim_err *err)
{
    if (o->block_tokens < 1) return sim_errf(err, "%s: block_tokens must be at least 1", name);
    if (!(o->speed > 0) || !isfinite(o->speed)) return sim_errf(err, "%s: speed must be a positive number", name);
    if (!(o->sample > 0 && o->sample <= 1)) return sim_errf(err, "%s: sample must be in (0, 1]", name);
    if (o->limit < 0) return sim_errf(err, "%s: limit must not be negative", name);
    if (o->resample < SIM_RESAMPLE_NONE || o->resample > SIM_RESAMPLE_SESSIONS)
        return sim_errf(err, "%s: resample must be none, poisson or sessions", name);
    return 0;
}

int sim_trace_open(sim_trace **out, const char *path, const sim_trace_opts *opts, sim_err *err)
{
    *out = NULL;
    bool is_stdin = strcmp(path, "-") == 0;
    const char *name = opts->name ? opts->name : is_stdin ? "<stdin>" : path;
    if (check_opts(name, opts, err)) return -1;
    sim_infile *f;
    if (sim_infile_open(&f, path, name, err)) return -1;
    sim_trace *t = sim_xcalloc(1, sizeof *t);
    t->opts = *opts;
    t->name = sim_xstrdup(name);
    t->f = f;
    t->fit = (sim_block_fit)SIM_BLOCK_FIT_INIT;
    t->ids.cap = 256;
    t->ids.v = sim_xmalloc(t->ids.cap * sizeof *t->ids.v);
    t->ids.k = sim_xmalloc(t->ids.cap * sizeof *t->ids.k);
    if (opts->sample < 1) {
        t->rng = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(t->rng, (unsigned long)opts->seed);
    }
    *out = t;
    return 0;
}

void sim_trace_close(sim_trace *t)
{
    if (!t) return;
    sim_infile_close(t->f);
    for (size_t i = t->next_sorted; i < t->nsorted; i++) sim_request_free(t->sorted[i]);
    free(t->sorted);
    if (t->rng) gsl_rng_free(t->rng);
    for (int64_t i = 0; t->skips && i < t->skipped && i < SIM_TRACE_SKIPS_KEPT; i++) free(t->skips[i]);
    free(t->skips);
    free(t->ids.v);
    free(t->ids.k);
    sim_seg_buf_free(&t->segs);
    free(t->name);
    free(t);
}

int64_t sim_trace_skipped(const sim_trace *t) { return t->skipped; }

const char *sim_trace_first_skip(const sim_trace *t) { return sim_trace_skip_message(t, 0); }

const char *sim_trace_skip_message(const sim_trace *t, int64_t i)
{
    return i >= 0 && i < t->skipped && i < SIM_TRACE_SKIPS_KEPT ? t->skips[i] : NULL;
}

const char *sim_trace_name(const sim_trace *t) { return t->name; }

/* Under skip_bad a bad line is counted (first message kept) and reading goes on. */
static bool absorb_bad_line(sim_trace *t, const sim_err *err)
{
    if (!t->opts.skip_bad) return false;
    if (!t->skipped) t->first_skip_line = t->lineno;
    if (t->skipped < SIM_TRACE_SKIPS_KEPT) {
        if (!t->skips) t->skips = sim_xcalloc(SIM_TRACE_SKIPS_KEPT, sizeof *t->skips);
        t->skips[t->skipped] = sim_xstrdup(err->msg);
    }
    t->skipped++;
    return true;
}

static int check_order(sim_trace *t, const sim_request *r, sim_err *err)
{
    if (t->opts.sort) return 0;
    if (t->have_prev && r->timestamp_ms < t->prev_ts)
        return sim_trace_line_err(t, err, "timestamp",
                                  "%.15g is before the previous request's %.15g (use --sort to reorder)",
                                  r->timestamp_ms, t->prev_ts);
    t->have_prev = true;
    t->prev_ts = r->timestamp_ms;
    return 0;
}

/* The next valid request in file order: 1, 0 at end of file, -1 on error. */
static int read_valid(sim_trace *t, sim_request **out, sim_err *err)
{
    for (;;) {
        size_t len;
        int got = sim_infile_getline(t->f, &t->line, &len, err);
        if (got <= 0) return got; /* a read error is an error, never a short trace */
        t->lineno++;
        int rc = sim_trace_parse_line(t, len, out, err);
        if (rc == 1 && check_order(t, *out, err)) {
            sim_request_free(*out);
            *out = NULL;
            rc = -1;
        }
        if (rc == 1) {
            t->parsed++;
            return 1;
        }
        if (rc < 0 && !absorb_bad_line(t, err)) return -1;
    }
}

/* Every line skip_bad skipped, none read: say so, with the first one's
 * line and reason (its kept message less the "FILE:LINE: " before them). */
bool sim_trace_all_skipped(const sim_trace *t, sim_err *err)
{
    if (t->parsed || !t->skipped || !t->skips) return false;
    char at[64];
    int n = snprintf(at, sizeof at, ":%lld: ", (long long)t->first_skip_line);
    const char *why = t->skips[0];
    size_t len = strlen(t->name);
    if (!strncmp(why, t->name, len) && !strncmp(why + len, at, (size_t)n)) why += len + (size_t)n;
    if (t->skipped == 1)
        sim_errf(err,
                 "%s: its only line, line %lld, was skipped as bad (--skip-bad), leaving no requests: %s "
                 "(docs/trace.md has the format)",
                 t->name, (long long)t->first_skip_line, why);
    else
        sim_errf(err,
                 "%s: all %lld lines were skipped as bad (--skip-bad), leaving no requests; the first, line %lld: "
                 "%s (docs/trace.md has the format)",
                 t->name, (long long)t->skipped, (long long)t->first_skip_line, why);
    return true;
}

/* ---- sort mode: load everything, stable-sort by timestamp -------------- */

/* Line numbers are unique, so ordering ties by line makes qsort stable. */
static int cmp_request_time(const void *a, const void *b)
{
    const sim_request *x = *(sim_request *const *)a, *y = *(sim_request *const *)b;
    if (x->timestamp_ms != y->timestamp_ms) return x->timestamp_ms < y->timestamp_ms ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

static int load_sorted(sim_trace *t, sim_err *err)
{
    size_t cap = 0;
    sim_request *r;
    int rc;
    t->loaded = true;
    while ((rc = read_valid(t, &r, err)) == 1) {
        if (t->nsorted == cap) t->sorted = sim_xrealloc(t->sorted, (cap = cap ? 2 * cap : 1024) * sizeof *t->sorted);
        t->sorted[t->nsorted++] = r;
    }
    if (rc < 0) return -1;
    if (t->nsorted) qsort(t->sorted, t->nsorted, sizeof *t->sorted, cmp_request_time);
    return sim_trace_resample(&t->sorted, &t->nsorted, &t->opts, t->name, err);
}

static int next_sorted(sim_trace *t, sim_request **out, sim_err *err)
{
    if (!t->loaded && load_sorted(t, err)) return -1;
    if (t->next_sorted == t->nsorted) return 0;
    *out = t->sorted[t->next_sorted++];
    return 1;
}

/* ---- the public stream: order, then sampling, then limit --------------- */

int sim_trace_next(sim_trace *t, sim_request **req, sim_err *err)
{
    *req = NULL;
    while (!t->opts.limit || t->emitted < t->opts.limit) {
        sim_request *r;
        int rc = t->opts.sort || t->opts.resample ? next_sorted(t, &r, err) : read_valid(t, &r, err);
        if (rc <= 0) return rc;
        if (t->rng && gsl_rng_uniform(t->rng) >= t->opts.sample) {
            sim_request_free(r);
            continue;
        }
        r->index = t->emitted++;
        *req = r;
        return 1;
    }
    return 0;
}

/* Read again without skipping, up to the line that fails: what --skip-bad
 * skipped first. */
bool sim_trace_first_bad_line(const char *path, const sim_trace_opts *opts, sim_err *err)
{
    sim_trace_opts o = *opts;
    sim_trace *t;
    sim_request *r;
    o.skip_bad = false;
    o.limit = 0;
    if (sim_trace_open(&t, path, &o, err)) return false;
    int rc;
    while ((rc = sim_trace_next(t, &r, err)) == 1) sim_request_free(r);
    sim_trace_close(t);
    return rc < 0;
}
