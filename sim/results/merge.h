/* sim/results/merge.h — merging results databases (`kvsim merge`, `kvsim sweep`).
 *
 * A sweep's workers and a cluster's jobs each write their own database; a
 * merge copies every completed run of one database into another, with run
 * ids remapped: the runs row gets the next free id of the target, and every
 * table with a run_id column (requests, samples, replicas, and any table a
 * later kvsim adds) follows it. hitrate point sets get fresh ids too. One
 * transaction per input, so a failed merge leaves the target as it was. */
#ifndef SIM_MERGE_H
#define SIM_MERGE_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/results/results.h"
#include "sim/util.h"

typedef struct sim_merge_stats {
    int64_t runs;                /* runs copied */
    int64_t skipped;             /* runs left out: already in the target */
    int64_t hitrate_sets;        /* hitrate ids copied */
    int64_t hitrate_skipped;     /* hitrate ids left out: an identical set is in the target */
    int64_t first_run, last_run; /* target ids of the copied runs (0 = none) */
} sim_merge_stats;

/* Merge the database at in_path into out. With skip_existing, a run whose
 * (config_hash, trace_fingerprint) the target already holds is left out, and
 * so is a hitrate set whose rows (all but the id) equal one it holds.
 * Errors name in_path: missing, unreadable, not a kvsim results database,
 * or the target itself. Stats accumulate into *st. */
int sim_merge_db(sim_results *out, const char *in_path, bool skip_existing, sim_merge_stats *st, sim_err *err);

#endif
