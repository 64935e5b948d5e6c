/* sim/results/compare.h — A-vs-B differences with 95% intervals between
 * groups of runs in a results database (`kvsim compare`, issue 30 item 3).
 *
 * Runs are grouped by the value of one config key (`--by policy.router`).
 * Within that, runs are matched on everything else that varies: the load
 * axis (`trace.speed`) gives one row per load, and any other differing key
 * (and the trace) splits the runs into contexts compared separately. For
 * each value other than the baseline, each metric and each load, the
 * difference of means (value − baseline) gets a 95% interval: a paired t
 * interval over the seeds both groups have (two or more), else Welch's
 * interval, else none (one seed a side). Seeds vary only what the seed
 * drives (the estimators' noise, the random policies), so the interval
 * covers that variability only, not the workload's. */
#ifndef SIM_COMPARE_H
#define SIM_COMPARE_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "sim/util.h"

typedef struct sim_compare_opts {
    const char *db;       /* results database path */
    const char *by;       /* the dotted config key whose values form the groups */
    const char *baseline; /* the value the others are compared with (NULL: the first run's) */
    const char **metrics; /* dotted summary paths (NULL: sim_compare_default_metrics) */
    int nmetrics;
    const double *speeds; /* keep only runs at these trace.speed values (NULL: all) */
    int nspeeds;
    const int64_t *ids; /* keep only these runs (a report's selection; NULL: every completed run) */
    int nids;
} sim_compare_opts;

extern const char *const sim_compare_default_metrics[];
extern const int sim_compare_ndefault_metrics;

/* The comparison as one JSON object (the caller's): db, by, baseline,
 * values, speeds, metrics, interval (what it covers) and contexts, each with
 * its label and comparisons (value, metric, better: "lower"|"higher"|null,
 * rows per speed with baseline and value means, diff, lo, hi, rel_pct,
 * n, method "paired"|"welch"|"none", verdict, and flips: a sentence saying
 * where the order changes with load). Errors (unreadable database, no
 * completed run, unknown key, one value only, unknown baseline or metric,
 * no run at --speed) name what and what to do. */
int sim_compare(const sim_compare_opts *o, json_t **out, sim_err *err);
/* The comparison as the text tables `kvsim compare` prints. */
void sim_compare_print(FILE *f, const json_t *cmp);

#endif
