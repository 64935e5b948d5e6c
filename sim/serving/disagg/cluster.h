/* sim/cluster.h — the simulated PD-disaggregated cluster (DESIGN §1, §5).
 *
 * N prefill + M decode instances (one instance = one node of g GPUs, Mooncake
 * §7.1) replay a trace on the event engine: arrival → routing, decode
 * selection and admission by the sched/ policies → prefill queue → prefix load
 * (DRAM → HBM, SSD, remote over the NIC) and prefill compute → new blocks
 * stored into the node's cache → KV streamed to the decode node → continuous
 * batching until output_length tokens. One call runs a whole replay and
 * writes its rows into the results database. */
#ifndef SIM_CLUSTER_H
#define SIM_CLUSTER_H

#include <jansson.h>

#include "sim/config/config.h"
#include "sim/results/results.h"

/* Replay cfg's trace. Writes request and sample rows into db (inside the run
 * begun by the caller) and returns the run's summary (caller owns it).
 * Trace errors (bad lines) fail the run with the reader's message. */
int sim_cluster_run(const sim_config *cfg, sim_results *db, json_t **summary, sim_err *err);

/* Every policy name in cfg exists in its registry (errors name the key). */
int sim_cluster_check_policies(const sim_config *cfg, sim_err *err);

/* TBT of DESIGN §4: the mean of the longest 10% (at least one) of a request's
 * inter-token intervals. Kept exactly without storing every interval: a
 * min-heap of the k = max(1, floor(intervals/10)) largest seen so far. */
typedef struct sim_topk {
    int32_t k, n;
    double *v; /* min-heap of the n ≤ k largest intervals */
} sim_topk;

void sim_topk_init(sim_topk *t, int32_t intervals);
void sim_topk_add(sim_topk *t, double x);
double sim_topk_mean(const sim_topk *t);
void sim_topk_free(sim_topk *t);

#endif
