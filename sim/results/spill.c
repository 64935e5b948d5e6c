/* sim/results/spill.c — summary columns on disk and exact order statistics
 * over them in bounded memory (sim/results/spill.h).
 *
 * A run of more requests than the summary keeps in memory writes each
 * request's TTFT, TBT, E2E, ITL, arrival and fate to unlinked temporary
 * files once every lower id is final, so memory follows the requests in
 * flight, not the trace. The page cache holds the files, not the process.
 *
 * Order statistics are found by radix selection (the classic MSD radix
 * select; Knuth, TAOCP vol. 3 §5.2.5, applied to selection): a double maps
 * to a 64-bit key whose unsigned order is the numbers' order (flip every
 * bit of a negative, the sign bit of a positive). A pass over the column
 * counts the next 16 bits of the keys under a target's known prefix; the
 * bucket holding the wanted rank becomes the new prefix, and once at most
 * SPILL_GATHER values share it a last pass gathers them and
 * gsl_stats_select finds the rank among them. The value found is the same
 * order statistic the in-memory summary selects, so the percentile is the
 * same to the bit; memory is 2^16 counters and the gathered values per
 * rank. Usually three passes: two of counts, one gathering. */
#include "sim/results/spill.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_statistics_double.h>

#define SPILL_CHUNK   8192
#define SPILL_GATHER  ((int64_t)1 << 16)
#define SPILL_BUCKETS (1 << 16)

int sim_spill_open(sim_spill *s, sim_err *err)
{
    char path[4096];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/kvsim-summary-XXXXXX", dir && *dir ? dir : "/tmp");
    *s = (sim_spill){0};
    int fd = mkstemp(path);
    if (fd >= 0) unlink(path);
    s->f = fd >= 0 ? fdopen(fd, "w+b") : NULL;
    if (!s->f) {
        if (fd >= 0) close(fd);
        return sim_errf(err, "results: cannot make a temporary file for the summary in %s: %s (set TMPDIR)",
                        dir && *dir ? dir : "/tmp", strerror(errno));
    }
    return 0;
}

void sim_spill_put(sim_spill *s, double v)
{
    fwrite(&v, sizeof v, 1, s->f);
    s->ids++;
    if (isnan(v)) return;
    s->n++;
    s->sum += v;
}

void sim_spill_put_many(sim_spill *s, const double *v, int64_t k)
{
    fwrite(v, sizeof *v, (size_t)k, s->f);
    s->ids += k;
    for (int64_t i = 0; i < k; i++)
        if (!isnan(v[i])) s->n++, s->sum += v[i];
}

void sim_spill_close(sim_spill *s)
{
    if (s->f) fclose(s->f);
    *s = (sim_spill){0};
}

/* Back to the start for reading: 0, or -1 with err when a write failed. */
static int rewind_column(sim_spill *s, sim_err *err)
{
    if (fflush(s->f) != 0 || ferror(s->f) || fseek(s->f, 0, SEEK_SET) != 0)
        return sim_errf(err, "results: cannot write the summary's temporary file (disk full? set TMPDIR)");
    return 0;
}

/* The next chunk of the column into buf: the count read (0 at the end), or -1. */
static int64_t read_chunk(sim_spill *s, double *buf, sim_err *err)
{
    size_t k = fread(buf, sizeof *buf, SPILL_CHUNK, s->f);
    if (k < SPILL_CHUNK && ferror(s->f)) return sim_errf(err, "results: cannot read the summary's temporary file");
    return (int64_t)k;
}

/* The next chunk of every column: the ids read (the fewest), 0 at the end, or -1. */
static int64_t read_chunks(sim_spill **cols, int ncols, double *buf, sim_err *err)
{
    int64_t k = 0;
    for (int c = 0; c < ncols; c++) {
        int64_t got = read_chunk(cols[c], buf + (size_t)c * SPILL_CHUNK, err);
        if (got < 0) return -1;
        k = c == 0 || got < k ? got : k;
    }
    return k;
}

int sim_spill_scan(sim_spill **cols, int ncols, void (*fn)(void *ctx, int64_t id, const double *v), void *ctx,
                   sim_err *err)
{
    double *buf = sim_xmalloc((size_t)ncols * SPILL_CHUNK * sizeof *buf), v[4];
    int64_t id = 0, k = 0;
    int rc = 0;
    for (int c = 0; c < ncols && rc == 0; c++) rc = rewind_column(cols[c], err);
    while (rc == 0 && (k = read_chunks(cols, ncols, buf, err)) > 0)
        for (int64_t i = 0; i < k; i++) {
            for (int c = 0; c < ncols; c++) v[c] = buf[(size_t)c * SPILL_CHUNK + (size_t)i];
            fn(ctx, id++, v);
        }
    for (int c = 0; c < ncols; c++) fseek(cols[c]->f, 0, SEEK_END);
    free(buf);
    return rc || k < 0 ? -1 : 0;
}

/* ---- radix selection ---- */

static uint64_t order_key(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b >> 63 ? ~b : b | (UINT64_C(1) << 63);
}

static double key_value(uint64_t key)
{
    uint64_t b = key >> 63 ? key & ~(UINT64_C(1) << 63) : ~key;
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

/* One rank being narrowed: the keys' top `bits` bits are `prefix`, and
 * `count` values share them, among which the wanted one is `rank`-th. */
typedef struct target {
    int64_t rank, count;
    uint64_t prefix;
    int bits;
    bool done;
    int64_t *hist; /* counts of the next 16 bits (a counting pass) */
    double *vals;  /* the values under the prefix (a gathering pass) */
    int64_t nv;
} target;

static bool gathers(const target *t) { return t->count <= SPILL_GATHER; }

/* Targets with the same prefix share one count or gathering: the first of
 * them (its leader) does it, the others read it. */
static void visit(target *t, const int *lead, int k, double v)
{
    uint64_t key = order_key(v);
    for (int j = 0; j < k; j++) {
        target *g = &t[j];
        if (g->done || lead[j] != j || (g->bits && key >> (64 - g->bits) != g->prefix)) continue;
        if (gathers(g)) g->vals[g->nv++] = v;
        else g->hist[(key >> (48 - g->bits)) & 0xffff]++;
    }
}

/* After a pass: a gathered target selects its value (from its leader's
 * values); a counted one moves its prefix to the bucket of its leader's
 * counts holding its rank (all 64 bits known: the value). */
static void settle(target *g, const target *l, double *out)
{
    if (gathers(g)) {
        *out = gsl_stats_select(l->vals, 1, (size_t)l->nv, (size_t)g->rank);
        g->done = true;
        return;
    }
    int64_t below = 0;
    int b = 0;
    while (below + l->hist[b] <= g->rank) below += l->hist[b++];
    g->rank -= below;
    g->count = l->hist[b];
    g->prefix = g->prefix << 16 | (uint64_t)b;
    g->bits += 16;
    if (g->bits == 64) {
        *out = key_value(g->prefix);
        g->done = true;
    }
}

/* Each target's leader: the first not done with the same prefix. */
static void find_leaders(const target *t, int k, int *lead)
{
    for (int j = 0; j < k; j++) {
        lead[j] = j;
        for (int i = 0; i < j && lead[j] == j; i++)
            if (!t[i].done && t[i].bits == t[j].bits && t[i].prefix == t[j].prefix) lead[j] = i;
    }
}

/* One pass over the column for every target not done: 0, or -1. */
static int pass(sim_spill *s, target *t, int k, double *out, sim_err *err)
{
    double buf[SPILL_CHUNK];
    int lead[SIM_SPILL_MAX_RANKS];
    find_leaders(t, k, lead);
    for (int j = 0; j < k; j++) {
        if (t[j].done || lead[j] != j) continue;
        t[j].nv = 0;
        if (gathers(&t[j])) t[j].vals = sim_xrealloc(t[j].vals, (size_t)(t[j].count ? t[j].count : 1) * sizeof(double));
        else memset(t[j].hist, 0, SPILL_BUCKETS * sizeof *t[j].hist);
    }
    int64_t n;
    if (rewind_column(s, err)) return -1;
    while ((n = read_chunk(s, buf, err)) > 0)
        for (int64_t i = 0; i < n; i++)
            if (!isnan(buf[i])) visit(t, lead, k, buf[i]);
    fseek(s->f, 0, SEEK_END);
    if (n < 0) return -1;
    for (int j = 0; j < k; j++)
        if (!t[j].done) settle(&t[j], &t[lead[j]], &out[j]);
    return 0;
}

int sim_spill_select(sim_spill *s, const int64_t *ranks, int k, double *out, sim_err *err)
{
    target t[SIM_SPILL_MAX_RANKS];
    for (int j = 0; j < k; j++) {
        t[j] = (target){.rank = ranks[j], .count = s->n};
        t[j].hist = sim_xmalloc(SPILL_BUCKETS * sizeof *t[j].hist);
    }
    int rc = 0;
    for (bool more = k > 0; more && rc == 0;) {
        rc = pass(s, t, k, out, err);
        more = false;
        for (int j = 0; j < k; j++) more = more || !t[j].done;
    }
    for (int j = 0; j < k; j++) free(t[j].hist), free(t[j].vals);
    return rc;
}
