/* sim/store/cache_model.c — name → cache model table (kvstore.pic; see
 * sim/store/cache_model.h). Adding a cache model = one file in sim/store/
 * + one line here. */
#include "sim/store/cache_model.h"

#include <string.h>

extern const kv_cache_model kv_cache_prefix;

static const kv_cache_model *const models[] = {
    &kv_cache_prefix,
};

SIM_REGISTRY(kv_cache_model, kv_cache_model, models)
