/* sim/store/cache_model.c — name → cache model table (kvstore.pic; see
 * sim/store/cache_model.h). Adding a cache model = one file in sim/store/
 * + one line here. */
#include "sim/store/cache_model.h"

#include <string.h>

extern const kv_cache_model kv_cache_prefix;

static const kv_cache_model *const models[] = {
    &kv_cache_prefix,
};

#define N_MODELS (sizeof models / sizeof models[0])

size_t kv_cache_model_count(void) { return N_MODELS; }

const kv_cache_model *kv_cache_model_at(size_t i) { return i < N_MODELS ? models[i] : NULL; }

const kv_cache_model *kv_cache_model_lookup(const char *name)
{
    for (size_t i = 0; i < N_MODELS; i++)
        if (!strcmp(models[i]->name, name)) return models[i];
    return NULL;
}
