/* sim/store/pic_registry.c — name → PIC policy table (kvstore.pic values
 * other than "none"; sim/store/pic.h). Adding a policy = one file in
 * sim/store/ + one line here. */
#include <string.h>

#include "sim/store/cache_model.h"
#include "sim/store/pic_int.h"

extern const kv_pic_policy kv_pic_prefix, kv_pic_epic, kv_pic_cacheblend, kv_pic_mepic;

static const kv_pic_policy *const policies[] = {
    &kv_pic_prefix,
    &kv_pic_epic,
    &kv_pic_cacheblend,
    &kv_pic_mepic,
};

SIM_REGISTRY(kv_pic_policy, kv_pic_policy, policies)

const char *kv_pic_policy_name(const kv_pic_policy *p) { return p->name; }
const char *kv_pic_policy_help(const kv_pic_policy *p) { return p->help; }

const char *kv_pic_suggest(const char *name)
{
    const char *names[32];
    size_t n = 0;
    for (size_t i = 0; i < kv_cache_model_count() && n < 16; i++) names[n++] = kv_cache_model_at(i)->name;
    for (size_t i = 0; i < kv_pic_policy_count() && n < 32; i++) names[n++] = kv_pic_policy_at(i)->name;
    return sim_did_you_mean(name, names, n);
}
