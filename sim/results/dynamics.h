/* sim/results/dynamics.h — a run's load dynamics (docs/definitions.md,
 * "Steady state" and "Load oscillation"; issue 42 items 2 and 3): the
 * steady-state window that leaves fill-up and drain out of goodput and
 * attainment, a sampled load series kept at bounded memory, and the
 * oscillation metrics of Mooncake §4.3.3 (std, peak-to-trough, corr(P, D)
 * and its best lag) over that series. Pure arithmetic: callers pass arrays. */
#ifndef SIM_RESULTS_DYNAMICS_H
#define SIM_RESULTS_DYNAMICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The steady-state window [*start, *end] of n requests, request i in the
 * system from arrival[i] to left[i] (it completed, was rejected or was
 * lost; NAN arrival = no such request). N(t) = the requests with
 * arrival ≤ t < left. Over [first arrival, last arrival], m = the
 * time-weighted median of N (the smallest value N stays at or under for
 * half that time); the window runs from the first time N reaches m to the
 * last arrival. false (and both the first arrival) when no request has
 * arrived, or the arrivals span no time. */
bool sim_steady_window(const double *arrival, const double *left, size_t n, double *start, double *end);

/* The same window found online, for runs whose requests are not all kept
 * (docs/run.md, "Long traces"): fed every arrival and departure in time
 * order (a request rejected at arrival may be fed as both, at one time),
 * it keeps the time N spent at each value and the first time it took it,
 * so memory follows the largest N, not the trace. The window is the same
 * by definition; the median's running sum adds the time per value of N
 * rather than stretch by stretch, so a median on the edge of half the
 * time may round the other way. */
typedef struct sim_steady_stretch {
    double t, dur;
    int64_t n;
} sim_steady_stretch;
typedef struct sim_steady_acc {
    bool started;
    double lo, hi, t; /* first arrival, last arrival, start of the current stretch */
    int64_t n;        /* requests in the system now */
    double *dur, *first;
    size_t levels;               /* room in dur and first (one per value of N) */
    double last_start;           /* start of the last stretch kept */
    sim_steady_stretch *pending; /* stretches after the last arrival so far */
    size_t npending, cap;
} sim_steady_acc;
void sim_steady_change(sim_steady_acc *a, double t, int delta);
bool sim_steady_acc_window(const sim_steady_acc *a, double *start, double *end);
void sim_steady_acc_free(sim_steady_acc *a);

/* A load series sampled every period_s, prefill (p) and decode (d) values
 * a sample, at most SIM_SERIES_CAP kept: when full, neighbouring samples
 * are averaged in pairs and the step (periods a sample) doubles. */
#define SIM_SERIES_CAP ((size_t)1 << 20)
typedef struct sim_series {
    double *p, *d;
    size_t n;
    int64_t step;        /* periods a kept sample averages (0 before the first add) */
    double period_s;     /* the sampling period, set by the caller */
    double t0_s;         /* time of the first period */
    double acc_p, acc_d; /* the sample being filled */
    int64_t acc_n;
} sim_series;
/* Add `times` periods of (p, d) (times > 1: a stretch of identical ticks). */
void sim_series_add(sim_series *s, double t_s, double p, double d, int64_t times);
void sim_series_free(sim_series *s);

typedef struct sim_oscillation {
    size_t n;                   /* samples */
    double std_p, std_d;        /* population standard deviations */
    double p2t_p, p2t_d;        /* peak-to-trough: max − min */
    double corr;                /* Pearson corr(P, D) at lag 0; NAN when either is constant */
    double best_lag, best_corr; /* lag (samples) of D behind P with the highest corr, and that corr */
} sim_oscillation;
/* The oscillation metrics of p[0..n), d[0..n): corr(P_t, D_t+k) over the
 * overlapping pairs for every lag k in [−max_lag, max_lag] (at most n/2);
 * NAN correlations (fewer than 3 samples, a constant side) are skipped. */
void sim_oscillation_of(const double *p, const double *d, size_t n, size_t max_lag, sim_oscillation *out);

#endif
