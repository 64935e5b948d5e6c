/* sim/serving/registry.c — name → serving model table (cluster.mode; see
 * sim/serving/serving.h). Adding a serving model = one folder under
 * sim/serving/ + one line here. */
#include "sim/serving/serving.h"

#include <string.h>

/* The models (one folder each under sim/serving/). */
extern const sim_serving_ops sim_serving_disagg;

static const sim_serving_ops *const models[] = {
    &sim_serving_disagg,
};

#define N_MODELS (sizeof models / sizeof models[0])

size_t sim_serving_count(void) { return N_MODELS; }

const sim_serving_ops *sim_serving_at(size_t i) { return i < N_MODELS ? models[i] : NULL; }

const sim_serving_ops *sim_serving_lookup(const char *name)
{
    for (size_t i = 0; i < N_MODELS; i++)
        if (!strcmp(models[i]->name, name)) return models[i];
    return NULL;
}
