/* sim/serving/tbt.c — the exact TBT of docs/definitions.md without a log of every token.
 *
 * TBT is the mean of the k = max(1, floor(intervals/10)) largest
 * inter-token intervals. A request keeps a buffer of candidates and a
 * threshold: an interval no larger than the threshold cannot be among the
 * k largest and is dropped at once. When the buffer is full, a selection
 * (quickselect, O(buffer)) keeps its k largest and raises the threshold to
 * the smallest of them; of a non-decreasing run at the buffer's end only
 * the last k can count, so the selection skips the rest of the run. The
 * buffer holds min(intervals, 8k + 16) values: most requests select once,
 * at their last token, and a long one at most once every 7k + 16 kept
 * intervals — O(1) amortised per token even when every interval is a new
 * maximum (decode iterations grow with context, so a lone request's
 * intervals are increasing: the case that made a heap cost O(log k) per
 * token).
 *
 * Intervals are integer nanoseconds (the engine's clock) and their sum is
 * exact (they are disjoint spans of one request's life, so it cannot
 * overflow): the TBT depends on the intervals only, not on the order they
 * came in, and is converted to seconds once. */
#include "sim/serving/serving.h"

#include <stdlib.h>
#include <string.h>

void sim_topk_init(sim_topk *t, int32_t intervals)
{
    t->k = intervals / 10 > 1 ? intervals / 10 : 1;
    t->cap = intervals < 8 * t->k + 16 ? intervals : 8 * t->k + 16;
    if (t->cap <= t->k) t->cap = t->k + 1;
    t->n = t->run = 0;
    t->min = INT64_MIN;
    t->v = sim_xmalloc((size_t)t->cap * sizeof *t->v);
}

static void swap(int64_t *a, int64_t *b)
{
    int64_t x = *a;
    *a = *b;
    *b = x;
}

/* Rearrange v[0..n) so that v[0..k) are its k largest values (k < n):
 * Hoare partitions around a median of three, descending, narrowing to the
 * side that holds position k. */
static void select_largest(int64_t *v, int32_t n, int32_t k)
{
    int32_t lo = 0, hi = n - 1;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (v[mid] > v[lo]) swap(&v[mid], &v[lo]);
        if (v[hi] > v[lo]) swap(&v[hi], &v[lo]);
        if (v[hi] > v[mid]) swap(&v[hi], &v[mid]);
        int64_t pivot = v[mid]; /* v[lo] >= pivot >= v[hi] */
        int32_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] > pivot) i++;
            while (v[j] < pivot) j--;
            if (i <= j) swap(&v[i++], &v[j--]);
        }
        /* now v[lo..j] >= pivot >= v[i..hi], and v[j+1..i-1] == pivot */
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return;
    }
}

/* Keep the k largest candidates and raise the threshold to their minimum.
 * The candidates from t->run on are non-decreasing: when there are k or
 * more of them only their last k can count, so the selection looks at
 * v[0..run) and those k — usually none or one value before the run (a
 * request's first interval, the KV transfer), not the whole buffer. */
static void compact(sim_topk *t)
{
    if (t->n <= t->k) return;
    int32_t m = t->n;
    if (t->n - t->run >= t->k) {
        memmove(t->v + t->run, t->v + t->n - t->k, (size_t)t->k * sizeof *t->v);
        m = t->run + t->k;
    }
    if (m > t->k) {
        select_largest(t->v, m, t->k);
        t->run = t->k; /* v[0..k) in no order: a run starts with the next value */
    }
    t->n = t->k;
    int64_t low = t->v[0];
    for (int32_t i = 1; i < t->n; i++)
        if (t->v[i] < low) low = t->v[i];
    t->min = low;
}

void sim_topk_insert(sim_topk *t, int64_t x)
{
    compact(t);
    if (x > t->min) sim_topk_add(t, x); /* there is room now: cap > k */
}

double sim_topk_mean_s(sim_topk *t)
{
    compact(t);
    int64_t sum = 0; /* exact: disjoint spans of one request's life on an int64 clock */
    for (int32_t i = 0; i < t->n; i++) sum += t->v[i];
    return t->n ? (double)sum / t->n / 1e9 : 0;
}

void sim_topk_free(sim_topk *t)
{
    free(t->v);
    t->v = NULL;
}
