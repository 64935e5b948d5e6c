/* sim/results/export.h — a results database as CSV or TSV (`kvsim export`),
 * for spreadsheets, pandas and R.
 *
 * The runs table (the default) becomes one row per completed run: its id,
 * provenance (created, kvsim_version, config_hash, trace_path,
 * trace_fingerprint, seed, wall_seconds), then every leaf of its resolved
 * config as a column named by its key path (cluster.prefill, ...), then
 * every leaf of its summary as summary.PATH (summary.ttft_ms.p90, ...).
 * Columns are the union over the selected runs, in sorted order; a run
 * without a key has an empty cell; a list (faults, a tide) is one cell of
 * compact JSON. Any other table (requests, samples, replicas, hitrate) is
 * written as stored, its columns as SQLite names them.
 *
 * CSV follows RFC 4180 (a cell with a comma, quote or line break is quoted,
 * quotes doubled); TSV has no quoting, so a tab or line break inside a cell
 * becomes a space. */
#ifndef SIM_RESULTS_EXPORT_H
#define SIM_RESULTS_EXPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/util.h"

typedef struct sim_export_opts {
    const char *db;    /* results database (read only) */
    const char *table; /* runs (default), requests, samples, replicas, hitrate */
    bool tsv;          /* tab-separated instead of comma-separated */
    int64_t *runs;     /* run ids to keep (hitrate: its set ids); NULL = all */
    int nruns;
    const char *where; /* SQL expression over the runs table (not for hitrate), or NULL */
} sim_export_opts;

/* Write the table to f; 0, or -1 with err naming the database, table or id. */
int sim_export(const sim_export_opts *o, FILE *f, int64_t *rows, sim_err *err);

#endif
