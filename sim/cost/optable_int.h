/* sim/cost/optable_int.h — what the files of the measured tables share and
 * nothing above them calls (sim/cost/optable.h is the public side):
 *
 *   optable.c          loading the CSVs into curves, and the lookups
 *   optable_glitch.c   dropping a curve's isolated glitches (below)
 *   optable_cache.c    parsed tables kept between processes (below) */
#ifndef SIM_OPTABLE_INT_H
#define SIM_OPTABLE_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "sim/index/keymap.h"

enum { MAX_KEY = 8, MAX_BRACKET = 2 };

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

/* How one CSV becomes curves: the key columns, the x column (and one more
 * column added to it: generation attention's context is isl + step), and
 * the key columns whose distinct values the lookups bracket. */
typedef struct table_spec {
    const char *name;
    const char *keys[MAX_KEY];
    const char *x, *x_plus;
    int bracket[MAX_BRACKET]; /* indices into keys, -1 = none */
    const char *zero;         /* a column that, where the table has it, must be 0 (sliding window) */
} table_spec;

/* One CSV's curves, sorted by key once loaded. */
typedef struct table {
    const table_spec *spec;
    curve *c;
    int n, cap;
    double *vals[MAX_BRACKET]; /* distinct values of each bracket column, ascending */
    int nvals[MAX_BRACKET];
    sim_keymap index; /* while loading: XXH3 of a curve's key → its index in c */
} table;

/* ---- the cache (optable_cache.c) --------------------------------------------
 *
 * The slot of the CSV at path, for a parser whose identity is parser (it
 * changes when the parsing code does), into slot (n bytes): false when
 * caching is off or the file cannot be read. Then a table loaded whole
 * from a slot's file (sorted, its bracket values found, no glitch dropped
 * yet): true, or false leaving t as it was (no file, or one of another
 * version, size or checksum). A table parsed and finished is saved to its
 * slot (written whole under a temporary name; a failure is silent). */
bool sim_optable_cache_slot(const char *path, const char *spec, const char *parser, char *slot, size_t n);
bool sim_optable_cache_read(table *t, const char *slot);
void sim_optable_cache_write(const table *t, const char *slot);

#endif
