/* sim/results/results_int.h — what the files of sim/results share and
 * nothing above them calls (sim/results/results.h is the public side):
 *
 *   dist.c     a latency's distribution, for results.c and head.c
 *   head.c     the first requests' latencies (below) */
#ifndef SIM_RESULTS_INT_H
#define SIM_RESULTS_INT_H

#include <stdint.h>

#include <jansson.h>

#include "sim/results/results.h"

/* ---- a latency's distribution (dist.c) ------------------------------------ */

/* The quantiles every latency reports: p50, p90, p99. */
extern const double sim_results_quantiles[3];
/* {mean, p50, p90, p99} from n values, their sum and the three quantiles
 * (each null when n = 0). */
json_t *sim_results_dist_json(int64_t n, double sum, const double *at);
/* The same of the values of v[0..cap) that are not NAN, as the summary
 * gives every latency. */
json_t *sim_results_dist(const double *v, int64_t cap);

/* ---- the head of a run (head.c) ------------------------------------------
 *
 * A measurement often reports only the head of a longer load: the summary of
 * a run's first n requests while requests kept arriving behind them
 * (validation/README.md: the first 300 requests of a 600 s stage). Replaying
 * only those n would drain the engine at the end, the last of them running
 * in ever smaller batches. So `kvsim validate` replays the load past them
 * and reads their latencies here: each request with id < n (trace order) as
 * its row arrives, when the last of them left, and the run's last arrival,
 * which says whether the load ran on for as long as any of them was in
 * flight. Off (n = 0) unless sim_results_keep_head asks for it. */
enum { SIM_HEAD_E2E, SIM_HEAD_TTFT, SIM_HEAD_ITL, SIM_HEAD_NTPOT, SIM_HEAD_NCOLS };

typedef struct sim_head {
    int64_t n;                    /* requests kept: ids [0, n) */
    double *col[SIM_HEAD_NCOLS];  /* by id; NAN = undefined (not completed) */
    int64_t rows;                 /* rows of ids < n seen this run */
    double left_ms, last_arrival; /* the last of them to leave; the run's last arrival (-1 = none yet) */
} sim_head;

void sim_head_init(sim_head *h, int64_t n); /* n = 0: off */
void sim_head_reset(sim_head *h);           /* a new run: every value undefined */
void sim_head_free(sim_head *h);
void sim_head_add(sim_head *h, const sim_request_row *w);
void sim_head_arrival(sim_head *h, double arrival_ms);
int sim_head_json(const sim_head *h, json_t **out, sim_err *err);

#endif
