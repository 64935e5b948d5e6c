/* sim/serving/disagg/cluster.h — the disaggregated serving model
 * (cluster.mode = "disaggregated"; Mooncake §3, §4, §5).
 *
 * N prefill + M decode instances (one instance = one node of g GPUs, Mooncake
 * §7.1): arrival → routing, decode selection and admission by the sched/
 * policies → prefill queue → prefix load (DRAM → HBM, SSD, remote over the
 * NIC) and prefill compute → new blocks stored into the node's cache → KV
 * streamed to the decode node → continuous batching until output_length
 * tokens. A control plane samples instance loads, moves instances between
 * roles (PD-ratio controller) and fails and recovers them on schedule.
 *
 * Reached only through its ops (sim/serving/serving.h), registered in
 * sim/serving/registry.c. */
#ifndef SIM_SERVING_DISAGG_H
#define SIM_SERVING_DISAGG_H

#include "sim/serving/serving.h"

extern const sim_serving_ops sim_serving_disagg;

#endif
