/* sim/store/pic_registry.c — name → PIC policy table (kvstore.pic values
 * other than "none"; sim/store/pic.h). Adding a policy = one file in
 * sim/store/ + one line here. */
#include <string.h>

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
