/* sim/config/grid.h — the parameter grid of `kvsim sweep --grid`.
 *
 * Syntax: 'key=v1,v2;key2=a,b' — entries separated by ';', each a config key
 * (any key `kvsim run --set` accepts) and its comma-separated values. The
 * points are the cartesian product, the last key varying fastest (nested
 * loops in the order written). Each point is a list of "key=value" --set
 * strings, resolved by sim_config_load exactly as `kvsim run --set` is. */
#ifndef SIM_GRID_H
#define SIM_GRID_H

#include <stdint.h>

#include "sim/util.h"

#define SIM_GRID_MAX_POINTS 1000000

typedef struct sim_grid_axis {
    char *key;
    char **values;
    int nvalues;
} sim_grid_axis;

typedef struct sim_grid {
    sim_grid_axis *axes;
    int naxes;
    int64_t npoints;
} sim_grid;

/* Parse a grid spec. Errors quote the entry at fault: an entry without '=',
 * an empty key or value, a key given twice, more than SIM_GRID_MAX_POINTS. */
int sim_grid_parse(const char *spec, sim_grid *g, sim_err *err);
/* Write point i's naxes "key=value" strings into sets[0..naxes) (caller frees each). */
void sim_grid_point_sets(const sim_grid *g, int64_t i, char **sets);
void sim_grid_free(sim_grid *g);

#endif
