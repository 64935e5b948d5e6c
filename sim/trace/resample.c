/* sim/trace/resample.c — trace.resample: a workload that varies with the
 * run's seed, so that the seeds of a group (kvsim report's bands, kvsim
 * compare's intervals) cover workload variability, not only the cost
 * model's noise (docs/trace-replay.md "Resampled workloads").
 *
 * The unit is a session: the requests of one "session" value, or a single
 * request without one. A unit starts at its first request's arrival and
 * each of its requests keeps its offset from that start, so a session's
 * order and think times are kept.
 *
 *   poisson   — the units' starts are redrawn as a Poisson process at the
 *               trace's rate of unit starts: the first stays, then
 *               exponential gaps of mean (last start − first start) /
 *               (units − 1), so the expected span and the number of
 *               requests are the trace's.
 *   sessions  — a bootstrap: the i-th start of the trace gets a unit drawn
 *               uniformly with replacement; the load's shape over time is
 *               kept, its content is resampled. A unit drawn again is
 *               another user saying the same: its blocks that no other
 *               unit has get fresh ids (id + k · (id range) for its k-th
 *               copy), its blocks shared with other units (a system
 *               prompt) stay shared, and it gets its own session number
 *               (the slot's). Segment requests are refused (their keys come
 *               from the segments' content).
 *
 * Both load the trace (as trace.sort does), draw from GSL's mt19937 seeded
 * with the run's seed, and end sorted by the new arrival, ties in the order
 * the units were placed. */
#include "sim/trace/trace_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "sim/index/keymap.h"

/* The requests grouped into units (v[first[u] .. first[u + 1]) of `order`
 * are unit u's, in trace order). */
typedef struct units {
    size_t n;
    size_t *first; /* n + 1 */
    size_t *order; /* request indices, grouped by unit */
    int64_t *start_ns;
} units;

static void units_free(units *u)
{
    free(u->first);
    free(u->order);
    free(u->start_ns);
}

/* Number the units in order of their first request, then lay the request
 * indices out unit by unit (a counting sort, stable). */
static void units_make(sim_request **v, size_t n, units *u)
{
    sim_keymap ids;
    sim_keymap_init(&ids, 1024);
    size_t *unit_of = sim_xmalloc((n ? n : 1) * sizeof *unit_of);
    u->n = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t s = v[i]->session, k = s < 0 ? SIM_KEYMAP_ABSENT : sim_keymap_get(&ids, (uint64_t)s);
        if (k == SIM_KEYMAP_ABSENT) {
            k = (int64_t)u->n++;
            if (s >= 0) sim_keymap_put(&ids, (uint64_t)s, k);
        }
        unit_of[i] = (size_t)k;
    }
    sim_keymap_free(&ids);
    u->first = sim_xcalloc(u->n + 1, sizeof *u->first);
    u->order = sim_xmalloc((n ? n : 1) * sizeof *u->order);
    u->start_ns = sim_xmalloc((u->n ? u->n : 1) * sizeof *u->start_ns);
    for (size_t i = 0; i < n; i++) u->first[unit_of[i] + 1]++;
    for (size_t k = 0; k < u->n; k++) u->first[k + 1] += u->first[k];
    size_t *fill = sim_xmalloc((u->n ? u->n : 1) * sizeof *fill);
    memcpy(fill, u->first, u->n * sizeof *fill);
    for (size_t i = 0; i < n; i++) u->order[fill[unit_of[i]]++] = i;
    for (size_t k = 0; k < u->n; k++) u->start_ns[k] = v[u->order[u->first[k]]]->arrival_ns;
    free(fill);
    free(unit_of);
}

/* New arrival = new start + the request's offset in its unit; err past
 * the clock's range. */
static int place(sim_request *r, int64_t old_start, int64_t new_start, const char *name, sim_err *err)
{
    double at = (double)new_start + (double)(r->arrival_ns - old_start);
    if (!(at >= 0 && at < 0x1p62))
        return sim_errf(err, "%s:%" PRId64 ": trace.resample moved this request past the trace clock's range", name,
                        r->line);
    r->arrival_ns = new_start + (r->arrival_ns - old_start);
    return 0;
}

static int poisson(sim_request **v, const units *u, gsl_rng *rng, const char *name, sim_err *err)
{
    if (u->n < 2 || u->start_ns[u->n - 1] <= u->start_ns[0]) return 0;
    double mean_gap = (double)(u->start_ns[u->n - 1] - u->start_ns[0]) / (double)(u->n - 1), t = (double)u->start_ns[0];
    for (size_t k = 0; k < u->n; k++) {
        if (k) t += gsl_ran_exponential(rng, mean_gap);
        int64_t start = t < 0x1p62 ? llround(t) : INT64_MAX;
        for (size_t j = u->first[k]; j < u->first[k + 1]; j++)
            if (place(v[u->order[j]], u->start_ns[k], start, name, err)) return -1;
    }
    return 0;
}

/* ---- sessions: the bootstrap ---------------------------------------------- */

/* Which raw ids more than one unit has (value u->n = shared, else the one
 * unit), and the ids' range. */
static void id_owners(sim_request **v, const units *u, sim_keymap *own, int64_t *lo, int64_t *hi)
{
    *lo = INT64_MAX, *hi = INT64_MIN;
    for (size_t k = 0; k < u->n; k++)
        for (size_t j = u->first[k]; j < u->first[k + 1]; j++) {
            const sim_request *r = v[u->order[j]];
            for (int32_t b = 0; b < r->nblocks; b++) {
                int64_t id = r->hash_ids[b], o = sim_keymap_get(own, (uint64_t)id);
                if (id < *lo) *lo = id;
                if (id > *hi) *hi = id;
                if (o == SIM_KEYMAP_ABSENT) sim_keymap_put(own, (uint64_t)id, (int64_t)k);
                else if (o != (int64_t)k) sim_keymap_put(own, (uint64_t)id, (int64_t)u->n);
            }
        }
}

/* The k-th copy (k ≥ 1) of r: its unit's own ids moved by k · range, the
 * keys chained again. */
static int recopy(sim_request *r, int64_t k, int64_t range, const sim_keymap *own, int64_t unit, sim_err *err)
{
    int64_t shift;
    if (__builtin_mul_overflow(k, range, &shift))
        return sim_errf(err, "trace.resample = sessions: the hash ids' range is too wide to number copies");
    for (int32_t b = 0; b < r->nblocks; b++) {
        int64_t id = r->hash_ids[b];
        if (sim_keymap_get(own, (uint64_t)id) == unit && __builtin_add_overflow(id, shift, &r->hash_ids[b]))
            return sim_errf(err, "trace.resample = sessions: the hash ids' range is too wide to number copies");
        r->keys[b] = sim_chain_key(b ? r->keys[b - 1] : 0, r->hash_ids[b]);
    }
    return 0;
}

/* A copy of r in one allocation, as the reader makes them. */
static sim_request *clone(const sim_request *r)
{
    size_t nids = 0;
    for (int32_t i = 0; i < r->nsegs; i++)
        if (r->segs[i].kind == SIM_SEG_PREFIX) nids += (size_t)r->segs[i].nids;
    sim_request *c = sim_request_new(r, (size_t)r->nblocks, nids, (size_t)r->nsegs);
    memcpy(c->keys, r->keys, (size_t)r->nblocks * sizeof *c->keys);
    memcpy(c->hash_ids, r->hash_ids, (size_t)r->nblocks * sizeof *c->hash_ids);
    memcpy(c->seg_ids, r->seg_ids, nids * sizeof *c->seg_ids);
    memcpy(c->segs, r->segs, (size_t)r->nsegs * sizeof *c->segs);
    return c;
}

/* Slot i gets unit `pick` (its copy number *copies), placed at the slot's
 * start; the new requests are appended to out. */
static int fill_slot(sim_request **v, const units *u, size_t i, size_t pick, int64_t copy, const sim_keymap *own,
                     int64_t range, const char *name, sim_request **out, size_t *nout, sim_err *err)
{
    for (size_t j = u->first[pick]; j < u->first[pick + 1]; j++) {
        sim_request *r = clone(v[u->order[j]]);
        out[(*nout)++] = r;
        if (r->session >= 0) r->session = (int64_t)i;
        if (place(r, u->start_ns[pick], u->start_ns[i], name, err)) return -1;
        if (copy > 0 && recopy(r, copy, range, own, (int64_t)pick, err)) return -1;
    }
    return 0;
}

static int bootstrap(sim_request ***vp, size_t *np, const units *u, gsl_rng *rng, const char *name, sim_err *err)
{
    sim_request **v = *vp;
    for (size_t i = 0; i < *np; i++)
        if (v[i]->nsegs > 0)
            return sim_errf(err,
                            "%s:%" PRId64 ": trace.resample = sessions cannot copy a segment request (its keys come "
                            "from the segments' content); use poisson or none",
                            name, v[i]->line);
    sim_keymap own;
    sim_keymap_init(&own, 1024);
    int64_t lo, hi;
    id_owners(v, u, &own, &lo, &hi);
    int64_t range = 1, *copies = sim_xcalloc(u->n ? u->n : 1, sizeof *copies);
    size_t *picks = sim_xmalloc((u->n ? u->n : 1) * sizeof *picks), total = 0, nout = 0;
    for (size_t i = 0; i < u->n; i++) {
        picks[i] = (size_t)gsl_rng_uniform_int(rng, (unsigned long)u->n);
        total += u->first[picks[i] + 1] - u->first[picks[i]];
    }
    sim_request **out = sim_xmalloc((total ? total : 1) * sizeof *out);
    int rc = 0;
    if (hi >= lo && (__builtin_sub_overflow(hi, lo, &range) || range == INT64_MAX))
        rc = sim_errf(err, "trace.resample = sessions: the hash ids' range is too wide to number copies");
    else if (hi >= lo) range++;
    for (size_t i = 0; i < u->n && rc == 0; i++)
        rc = fill_slot(v, u, i, picks[i], copies[picks[i]]++, &own, range, name, out, &nout, err);
    for (size_t i = 0; i < *np; i++) free(v[i]); /* sim_request_free, one allocation */
    free(v);
    *vp = out, *np = nout;
    sim_keymap_free(&own);
    free(copies);
    free(picks);
    return rc;
}

/* New arrival order; ties keep the order the units were placed in (index). */
static int cmp_arrival(const void *a, const void *b)
{
    const sim_request *x = *(sim_request *const *)a, *y = *(sim_request *const *)b;
    if (x->arrival_ns != y->arrival_ns) return x->arrival_ns < y->arrival_ns ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

int sim_trace_resample(sim_request ***v, size_t *n, const sim_trace_opts *o, const char *name, sim_err *err)
{
    if (o->resample == SIM_RESAMPLE_NONE || *n == 0) return 0;
    units u;
    units_make(*v, *n, &u);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, (unsigned long)(o->seed ^ 0x7265736d706cull)); /* not the sampling draws' stream */
    int rc =
        o->resample == SIM_RESAMPLE_POISSON ? poisson(*v, &u, rng, name, err) : bootstrap(v, n, &u, rng, name, err);
    gsl_rng_free(rng);
    units_free(&u);
    if (rc) return -1;
    for (size_t i = 0; i < *n; i++) (*v)[i]->index = (int64_t)i;
    qsort(*v, *n, sizeof **v, cmp_arrival);
    return 0;
}
