/* sim/cost/optable_int.h — what the files of the measured tables share and
 * nothing above them calls (sim/cost/optable.h is the public side):
 *
 *   optable.c          loading the CSVs into curves, and the lookups
 *   optable_glitch.c   dropping a curve's isolated glitches (below) */
#ifndef SIM_OPTABLE_INT_H
#define SIM_OPTABLE_INT_H

/* One curve: the points of the rows that share every key column, ascending
 * in x once loaded, and the points dropped from it as glitches. */
typedef struct curve {
    char *key;
    double *x, *y;
    int n, cap;
    double *gx, *gy, *gv; /* dropped points: x, measured latency, factor off both neighbours */
    int gn;
} curve;

/* ---- glitches (optable_glitch.c) --------------------------------------------
 *
 * A point more than `ratio` times above both of its neighbours on a sorted
 * curve, or below both by that factor — or two neighbouring points, each
 * that far outside the two points around them — is dropped from the curve
 * (worst first, each test on what is left) and recorded in gx/gy/gv;
 * endpoints stay. ratio 0 drops nothing. Returns the number dropped. */
int sim_optable_curve_clean(curve *c, double ratio);
/* The dropped point a lookup between curve points lo and hi (lo < hi)
 * interpolates across, or -1: the first one inside (x[lo], x[hi]). */
int sim_optable_curve_glitch_in(const curve *c, int lo, int hi);

#endif
