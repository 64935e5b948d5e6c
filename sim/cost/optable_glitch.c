/* sim/cost/optable_glitch.c — isolated glitches in a measured curve.
 *
 * An operation's latency along its curve's axis (tokens, sequence length,
 * context, message size) grows with the work, give or take the choice of
 * kernel. A point more than `ratio` (engine.measured.glitch_ratio, 2 by
 * default) times above both of its neighbours stands above even the
 * neighbour that does more work; one below both by that factor stands
 * below even the one that does less. That is not noise: where the
 * collector measured one shape twice, the two agree within 16% 99 times in
 * 100 on the H100, and the one repeat that is twice the other is a
 * measurement that failed (docs/measured.md §2, reports/optable_glitches.py).
 * Nor is it the kernel choice a size can really cost, which moves a curve
 * by less or as a step that stays. Such a point is dropped from its curve,
 * and lookups interpolate across it as between any two measured points
 * (the linear rule of sim/cost/optable.h).
 *
 * Two neighbouring points that both stand that far outside the points
 * around them are dropped together (0.16, 0.91, 0.69, 0.16 ms); a longer
 * run is taken as the curve's shape. The worst run goes first, and the
 * test is repeated on what is left: a spike makes its neighbour look like
 * a dip (0.61, 4.41, 1.21, 2.06 ms: once 4.41 is gone, 1.21 lies between
 * 0.61 and 2.06). An endpoint has one neighbour and stays. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cost/optable_int.h"

/* The longest run of neighbouring points dropped together. */
enum { MAX_RUN = 2 };

/* How far the run of points i..i+len-1 stands outside the two points
 * around it: the least of y / the larger of those two when every point of
 * the run is above both, of the smaller / y when every one is below both;
 * 1 otherwise. */
static double off_by(const curve *c, int i, int len)
{
    double a = c->y[i - 1], b = c->y[i + len];
    double hi = a > b ? a : b, lo = a < b ? a : b, up = INFINITY, down = INFINITY;
    for (int k = i; k < i + len; k++) {
        double y = c->y[k];
        up = y > hi ? fmin(up, hi > 0 ? y / hi : INFINITY) : 1;
        down = y < lo ? fmin(down, y > 0 ? lo / y : INFINITY) : 1;
    }
    return fmax(up, down);
}

static void drop(curve *c, int i, double v)
{
    c->gx = realloc(c->gx, (size_t)(c->gn + 1) * sizeof *c->gx);
    c->gy = realloc(c->gy, (size_t)(c->gn + 1) * sizeof *c->gy);
    c->gv = realloc(c->gv, (size_t)(c->gn + 1) * sizeof *c->gv);
    c->gx[c->gn] = c->x[i], c->gy[c->gn] = c->y[i], c->gv[c->gn] = v, c->gn++;
    memmove(c->x + i, c->x + i + 1, (size_t)(c->n - i - 1) * sizeof *c->x);
    memmove(c->y + i, c->y + i + 1, (size_t)(c->n - i - 1) * sizeof *c->y);
    c->n--;
}

int sim_optable_curve_clean(curve *c, double ratio)
{
    int dropped = 0;
    while (ratio > 0) {
        int worst = 0, len = 0;
        double most = ratio;
        for (int l = 1; l <= MAX_RUN; l++)
            for (int i = 1; i + l < c->n; i++) {
                double v = off_by(c, i, l);
                if (v > most) most = v, worst = i, len = l;
            }
        if (!worst) break;
        for (int k = 0; k < len; k++) drop(c, worst, most);
        dropped += len;
    }
    return dropped;
}

int sim_optable_curve_glitch_in(const curve *c, int lo, int hi)
{
    for (int g = 0; g < c->gn; g++)
        if (c->gx[g] > c->x[lo] && c->gx[g] < c->x[hi]) return g;
    return -1;
}
