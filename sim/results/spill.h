/* sim/results/spill.h — private to sim/results: a per-request summary column
 * spilled to an unlinked temporary file, and exact order statistics over
 * it in bounded memory, for runs of more requests than the summary keeps in
 * memory (sim/results/results.c; docs/run.md, "Long traces"). */
#ifndef SIM_RESULTS_SPILL_H
#define SIM_RESULTS_SPILL_H

#include <stdint.h>
#include <stdio.h>

#include "sim/util.h"

/* One column: a double per request id, in id order (NAN = no value), and
 * the sum and count of the values present, added in id order (so equal, to
 * the bit, to a sum over the in-memory array). */
typedef struct sim_spill {
    FILE *f;
    int64_t ids; /* values written (present or not) */
    int64_t n;   /* values present */
    double sum;
} sim_spill;

/* A new column in $TMPDIR (or /tmp), its file already unlinked. */
int sim_spill_open(sim_spill *s, sim_err *err);
void sim_spill_put(sim_spill *s, double v);
/* The values of k consecutive ids at once (one write). */
void sim_spill_put_many(sim_spill *s, const double *v, int64_t k);
void sim_spill_close(sim_spill *s);

/* Read ncols (≤ 4) columns of as many ids back together, in id order:
 * fn(ctx, id, v) for every id, v[c] column c's value (NAN when absent).
 * 0, or -1 with err on a read or earlier write error. */
int sim_spill_scan(sim_spill **cols, int ncols, void (*fn)(void *ctx, int64_t id, const double *v), void *ctx,
                   sim_err *err);

/* The ranks[j]-th smallest (0-based) of the values present, for k ranks
 * at once, into out[j]: exact (the value gsl_stats_select would return on
 * the whole column) in bounded memory. 0, or -1 with err. */
#define SIM_SPILL_MAX_RANKS 8
int sim_spill_select(sim_spill *s, const int64_t *ranks, int k, double *out, sim_err *err);

#endif
