/* sched/lengths.c — the output lengths of finished requests, as the
 * conductor has seen them: how many exceeded a length k, in O(log n), for
 * early_reject_predict's expected remaining lengths (docs/definitions-decode.md,
 * "Predicted decode load"). A Fenwick tree of counts over lengths 1 …
 * SCHED_LENGTHS_CAP; a longer output counts at the cap. */
#include "sched/sched.h"

#include <stdlib.h>

struct sched_lengths {
    int64_t n;     /* lengths added */
    int64_t *tree; /* tree[i]: Fenwick partial count, lengths 1 … CAP */
};

sched_lengths *sched_lengths_new(void)
{
    sched_lengths *l = sim_xcalloc(1, sizeof *l);
    l->tree = sim_xcalloc(SCHED_LENGTHS_CAP + 1, sizeof *l->tree);
    return l;
}

void sched_lengths_free(sched_lengths *l)
{
    if (!l) return;
    free(l->tree);
    free(l);
}

void sched_lengths_add(sched_lengths *l, int64_t len)
{
    if (!l) return;
    if (len < 1) len = 1;
    if (len > SCHED_LENGTHS_CAP) len = SCHED_LENGTHS_CAP;
    l->n++;
    for (int64_t i = len; i <= SCHED_LENGTHS_CAP; i += i & -i) l->tree[i]++;
}

int64_t sched_lengths_n(const sched_lengths *l) { return l ? l->n : 0; }

/* Lengths ≤ k: the Fenwick prefix sum. */
static int64_t at_most(const sched_lengths *l, int64_t k)
{
    if (k > SCHED_LENGTHS_CAP) k = SCHED_LENGTHS_CAP;
    int64_t s = 0;
    for (int64_t i = k; i > 0; i -= i & -i) s += l->tree[i];
    return s;
}

int64_t sched_lengths_above(const sched_lengths *l, double k) { return k < 1 ? l->n : l->n - at_most(l, (int64_t)k); }
