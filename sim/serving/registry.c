/* sim/serving/registry.c — name → serving model table (cluster.mode; see
 * sim/serving/serving.h). Adding a serving model = one folder under
 * sim/serving/ + one line here. */
#include "sim/serving/serving.h"

#include <string.h>

/* The models (one folder each under sim/serving/). */
extern const sim_serving_ops sim_serving_disagg, sim_serving_agg;

static const sim_serving_ops *const models[] = {
    &sim_serving_disagg,
    &sim_serving_agg,
};

SIM_REGISTRY(sim_serving, sim_serving_ops, models)
