/* sim/config/scope.h — cluster.scope: which nodes' caches serve a prefill
 * node. A value type of the config, used by the store that implements it
 * (sim/store) and by everything that prints or parses it.
 *   global (Mooncake Store): a block resident on any node serves any node
 *          over the NIC, stored once across the pool;
 *   local: a node sees only its own tiers. */
#ifndef SIM_CONFIG_SCOPE_H
#define SIM_CONFIG_SCOPE_H

typedef enum kv_scope { KV_SCOPE_GLOBAL = 0, KV_SCOPE_LOCAL } kv_scope;

/* "global" / "local", and back: 0, or −1 for any other name. */
const char *kv_scope_name(kv_scope s);
int kv_scope_from_name(const char *name, kv_scope *out);

#endif
