/* sim/serving/tbt.c — the exact TBT of docs/architecture.md §4 without a log of every token: a
 * request keeps a min-heap of the k = max(1, floor(intervals/10)) largest
 * inter-token intervals seen so far; TBT is their mean. */
#include "sim/serving/serving.h"

#include <stdlib.h>

void sim_topk_init(sim_topk *t, int32_t intervals)
{
    t->k = intervals / 10 > 1 ? intervals / 10 : 1;
    t->n = 0;
    t->min = 0;
    t->v = sim_xmalloc((size_t)t->k * sizeof *t->v);
}

/* Keep the k largest values seen: a min-heap whose root is the smallest kept. */
void sim_topk_insert(sim_topk *t, double x)
{
    int32_t i;
    if (t->n < t->k) {
        for (i = t->n++; i > 0 && t->v[(i - 1) / 2] > x; i = (i - 1) / 2) t->v[i] = t->v[(i - 1) / 2];
        t->v[i] = x;
        t->min = t->v[0];
        return;
    }
    if (x <= t->v[0]) return;
    /* Sift x down from the root. Which child is smaller is a coin flip the
     * branch predictor loses, so it is an add of a comparison instead (the
     * same child, the same heap). Nodes with both children come first. */
    for (i = 0; 2 * i + 2 < t->n;) {
        int32_t c = 2 * i + 1;
        c += t->v[c + 1] < t->v[c];
        if (t->v[c] >= x) goto place;
        t->v[i] = t->v[c];
        i = c;
    }
    if (2 * i + 1 < t->n && t->v[2 * i + 1] < x) { /* one child left */
        t->v[i] = t->v[2 * i + 1];
        i = 2 * i + 1;
    }
place:
    t->v[i] = x;
    t->min = t->v[0];
}

double sim_topk_mean(const sim_topk *t)
{
    double s = 0;
    for (int32_t i = 0; i < t->n; i++) s += t->v[i];
    return t->n ? s / t->n : 0;
}

void sim_topk_free(sim_topk *t)
{
    free(t->v);
    t->v = NULL;
}
