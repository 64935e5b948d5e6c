/* sim/config/scope.c — cluster.scope names (see sim/config/scope.h). */
#include "sim/config/scope.h"

#include <string.h>

static const char *const scope_names[] = {[KV_SCOPE_GLOBAL] = "global", [KV_SCOPE_LOCAL] = "local"};

const char *kv_scope_name(kv_scope s) { return scope_names[s]; }

int kv_scope_from_name(const char *name, kv_scope *out)
{
    for (kv_scope s = KV_SCOPE_GLOBAL; s <= KV_SCOPE_LOCAL; s++)
        if (!strcmp(name, scope_names[s])) {
            *out = s;
            return 0;
        }
    return -1;
}
