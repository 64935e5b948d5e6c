/* sim/results/dynamics.c — a run's load dynamics: the steady-state window,
 * the bounded load series and its oscillation metrics (sim/results/dynamics.h,
 * docs/definitions.md "Steady state" and "Load oscillation"). */
#include "sim/results/dynamics.h"

#include <math.h>
#include <stdlib.h>

#include "sim/util.h"

/* ---- the steady-state window ------------------------------------------------ */

typedef struct change {
    double t;
    int delta; /* +1 arrival, −1 departure */
} change;

/* A stretch of time [t, t + dur) with n requests in the system. */
typedef struct stretch {
    double t, dur;
    int64_t n;
} stretch;

static int by_time(const void *a, const void *b)
{
    double x = ((const change *)a)->t, y = ((const change *)b)->t;
    return (x > y) - (x < y);
}

static int by_count(const void *a, const void *b)
{
    int64_t x = ((const stretch *)a)->n, y = ((const stretch *)b)->n;
    return (x > y) - (x < y);
}

/* The stretches of N(t) over [lo, hi] from the sorted changes; returns their count. */
static size_t stretches(const change *c, size_t nc, double lo, double hi, stretch *out)
{
    size_t ns = 0;
    int64_t n = 0;
    double t = lo;
    for (size_t k = 0; k < nc; k++) {
        if (c[k].t > t && t < hi) {
            double to = c[k].t < hi ? c[k].t : hi;
            out[ns++] = (stretch){t, to - t, n};
            t = to;
        }
        n += c[k].delta;
    }
    if (t < hi) out[ns++] = (stretch){t, hi - t, n};
    return ns;
}

/* The time-weighted median of N over the stretches (total time `total`). */
static int64_t median_count(const stretch *s, size_t ns, double total)
{
    stretch *sorted = sim_xmalloc((ns ? ns : 1) * sizeof *sorted);
    for (size_t k = 0; k < ns; k++) sorted[k] = s[k];
    qsort(sorted, ns, sizeof *sorted, by_count);
    double acc = 0;
    int64_t m = ns ? sorted[ns - 1].n : 0;
    for (size_t k = 0; k < ns; k++)
        if ((acc += sorted[k].dur) >= total / 2) {
            m = sorted[k].n;
            break;
        }
    free(sorted);
    return m;
}

bool sim_steady_window(const double *arrival, const double *left, size_t n, double *start, double *end)
{
    change *c = sim_xmalloc((2 * n + 1) * sizeof *c);
    size_t nc = 0;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (isnan(arrival[i])) continue;
        lo = fmin(lo, arrival[i]), hi = fmax(hi, arrival[i]);
        if (!(left[i] > arrival[i])) continue; /* rejected at arrival: never in the system */
        c[nc++] = (change){arrival[i], +1};
        c[nc++] = (change){left[i], -1};
    }
    *start = *end = isinf(lo) ? NAN : lo;
    if (!(hi > lo)) return free(c), false;
    qsort(c, nc, sizeof *c, by_time);
    stretch *s = sim_xmalloc((nc + 1) * sizeof *s);
    size_t ns = stretches(c, nc, lo, hi, s);
    int64_t m = median_count(s, ns, hi - lo);
    size_t k = 0;
    while (k + 1 < ns && !(s[k].n >= m && s[k].dur > 0)) k++;
    *start = ns ? s[k].t : lo;
    *end = hi;
    free(s);
    free(c);
    return true;
}

/* ---- the steady-state window, online ------------------------------------------ */

/* A stretch inside [first arrival, last arrival]: its time joins its value
 * of N, and its start is the first of that value when none was before. */
static void keep_stretch(sim_steady_acc *a, sim_steady_stretch s)
{
    if ((size_t)s.n >= a->levels) {
        size_t want = a->levels ? a->levels : 64;
        while (want <= (size_t)s.n) want *= 2;
        a->dur = sim_xrealloc(a->dur, want * sizeof *a->dur);
        a->first = sim_xrealloc(a->first, want * sizeof *a->first);
        for (size_t k = a->levels; k < want; k++) a->dur[k] = 0, a->first[k] = NAN;
        a->levels = want;
    }
    a->dur[s.n] += s.dur;
    if (isnan(a->first[s.n])) a->first[s.n] = s.t;
    a->last_start = s.t;
}

/* As stretches() does over the sorted changes: time passing from a->t to t
 * at the current N makes a stretch. One before an arrival lies inside the
 * window's span and is kept (with the pending ones before it); one after
 * the last arrival so far waits, since a later arrival may yet cover it. */
void sim_steady_change(sim_steady_acc *a, double t, int delta)
{
    if (!a->started) {
        if (delta < 0) return;
        a->started = true;
        a->lo = a->hi = a->t = t;
    }
    if (t > a->t) {
        if (a->npending == a->cap)
            a->pending = sim_xrealloc(a->pending, (a->cap = a->cap ? 2 * a->cap : 64) * sizeof *a->pending);
        a->pending[a->npending++] = (sim_steady_stretch){a->t, t - a->t, a->n};
        a->t = t;
    }
    a->n += delta;
    if (delta < 0) return;
    for (size_t k = 0; k < a->npending; k++) keep_stretch(a, a->pending[k]);
    a->npending = 0;
    a->hi = t;
}

bool sim_steady_acc_window(const sim_steady_acc *a, double *start, double *end)
{
    *start = *end = a->started ? a->lo : NAN;
    if (!a->started || !(a->hi > a->lo)) return false;
    double acc = 0, total = a->hi - a->lo;
    size_t m = a->levels;
    for (size_t k = 0; k < a->levels; k++)
        if (!isnan(a->first[k])) {
            m = k; /* the largest value so far, as median_count's fallback */
            if ((acc += a->dur[k]) >= total / 2) break;
        }
    *start = a->lo;
    bool any = false;
    for (size_t k = m; k < a->levels; k++)
        if (!isnan(a->first[k]) && (!any || a->first[k] < *start)) *start = a->first[k], any = true;
    if (!any && a->levels) *start = a->last_start;
    *end = a->hi;
    return true;
}

void sim_steady_acc_free(sim_steady_acc *a)
{
    free(a->dur);
    free(a->first);
    free(a->pending);
    *a = (sim_steady_acc){0};
}

/* ---- the load series ---------------------------------------------------------- */

/* Full: average neighbouring samples in pairs, each now covering twice the periods. */
static void halve(sim_series *s)
{
    for (size_t i = 0; i < s->n / 2; i++) {
        s->p[i] = (s->p[2 * i] + s->p[2 * i + 1]) / 2;
        s->d[i] = (s->d[2 * i] + s->d[2 * i + 1]) / 2;
    }
    s->n /= 2;
    s->step *= 2;
}

static void push(sim_series *s)
{
    if ((s->n & (s->n - 1)) == 0) { /* 0, 1, 2, 4, …: grow to the next power of two */
        size_t cap = s->n ? 2 * s->n : 1;
        s->p = sim_xrealloc(s->p, cap * sizeof *s->p);
        s->d = sim_xrealloc(s->d, cap * sizeof *s->d);
    }
    s->p[s->n] = s->acc_p / (double)s->step;
    s->d[s->n++] = s->acc_d / (double)s->step;
    s->acc_p = s->acc_d = 0;
    s->acc_n = 0;
}

void sim_series_add(sim_series *s, double t_s, double p, double d, int64_t times)
{
    if (s->step == 0) s->step = 1, s->t0_s = t_s;
    while (times > 0) {
        int64_t take = s->step - s->acc_n < times ? s->step - s->acc_n : times;
        s->acc_p += p * (double)take;
        s->acc_d += d * (double)take;
        s->acc_n += take;
        times -= take;
        if (s->acc_n < s->step) return;
        if (s->n == SIM_SERIES_CAP) halve(s);
        if (s->acc_n == s->step) push(s);
    }
}

void sim_series_free(sim_series *s)
{
    free(s->p);
    free(s->d);
    *s = (sim_series){0};
}

/* ---- oscillation metrics --------------------------------------------------------- */

static void spread(const double *x, size_t n, double *std, double *p2t)
{
    double sum = 0, sq = 0, mn = INFINITY, mx = -INFINITY;
    for (size_t i = 0; i < n; i++) sum += x[i], mn = fmin(mn, x[i]), mx = fmax(mx, x[i]);
    double mean = n ? sum / (double)n : NAN;
    for (size_t i = 0; i < n; i++) sq += (x[i] - mean) * (x[i] - mean);
    *std = n ? sqrt(sq / (double)n) : NAN;
    *p2t = n ? mx - mn : NAN;
}

/* Pearson correlation of the pairs (p[t], d[t + k]) that exist. */
static double corr_at(const double *p, const double *d, size_t n, long k)
{
    size_t from = k < 0 ? (size_t)-k : 0, to = k > 0 ? n - (size_t)k : n;
    if (to < from + 3) return NAN;
    double m = (double)(to - from), sp = 0, sd = 0, cov = 0, vp = 0, vd = 0;
    for (size_t t = from; t < to; t++) sp += p[t], sd += d[(long)t + k];
    sp /= m, sd /= m;
    for (size_t t = from; t < to; t++) {
        double a = p[t] - sp, b = d[(long)t + k] - sd;
        cov += a * b, vp += a * a, vd += b * b;
    }
    return vp > 0 && vd > 0 ? cov / sqrt(vp * vd) : NAN;
}

void sim_oscillation_of(const double *p, const double *d, size_t n, size_t max_lag, sim_oscillation *out)
{
    *out = (sim_oscillation){.n = n, .best_lag = NAN, .best_corr = NAN};
    spread(p, n, &out->std_p, &out->p2t_p);
    spread(d, n, &out->std_d, &out->p2t_d);
    out->corr = corr_at(p, d, n, 0);
    if (max_lag > n / 2) max_lag = n / 2;
    /* lags 0, 1, −1, 2, −2, …: the smallest |k| wins ties (within rounding, 1e-12) */
    for (long j = 0; j <= 2 * (long)max_lag; j++) {
        long k = j % 2 ? (j + 1) / 2 : -j / 2;
        double r = corr_at(p, d, n, k);
        if (!isnan(r) && (isnan(out->best_corr) || r > out->best_corr + 1e-12))
            out->best_corr = r, out->best_lag = (double)k;
    }
}
