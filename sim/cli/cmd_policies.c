/* sim/cli/cmd_policies.c — `kvsim policies`: every registered plug-in of
 * every kind, with its one-line help and parameters, read by iterating the
 * registry tables (nothing here names a policy). */
#include <stdio.h>
#include <string.h>

#include "sched/registry.h"
#include "sim/cli/cli.h"
#include "sim/serving/serving.h"
#include "sim/store/cache_model.h"
#include "sim/store/evict/registry.h"
#include "sim/store/pic.h"

/* What kvsim policies prints of one registered entry. */
typedef struct entry {
    const char *name, *help, *params;
} entry;

static entry router(size_t i)
{
    const sched_router_ops *o = sched_router_at(i);
    return (entry){o->name, o->help, o->params};
}
static entry decoder(size_t i)
{
    const sched_decode_ops *o = sched_decode_at(i);
    return (entry){o->name, o->help, o->params};
}
static entry admission(size_t i)
{
    const sched_admission_ops *o = sched_admission_at(i);
    return (entry){o->name, o->help, o->params};
}
static entry pd(size_t i)
{
    const sched_pd_ops *o = sched_pd_at(i);
    return (entry){o->name, o->help, o->params};
}
static entry evict(size_t i)
{
    const kv_evict_entry *e = kv_evict_at(i);
    return (entry){e->name, e->help, e->params};
}
static entry serving(size_t i)
{
    const sim_serving_ops *o = sim_serving_at(i);
    return (entry){o->name, o->help, ""};
}
static entry cache(size_t i)
{
    const kv_cache_model *o = kv_cache_model_at(i);
    return (entry){o->name, o->help, ""};
}
static entry pic(size_t i)
{
    const kv_pic_policy *o = kv_pic_policy_at(i);
    return (entry){kv_pic_policy_name(o), kv_pic_policy_help(o), ""};
}

/* One row per plug-in kind: its title, the config key that selects it, and
 * its registry's count and entry. */
static const struct kind {
    const char *title, *key;
    size_t (*count)(void);
    entry (*at)(size_t i);
} kinds[] = {
    {"serving models", "cluster.mode", sim_serving_count, serving},
    {"cache models", "kvstore.pic", kv_cache_model_count, cache},
    {"position-independent caches", "kvstore.pic", kv_pic_policy_count, pic},
    {"prefill routers", "policy.router", sched_router_count, router},
    {"decode selectors", "policy.decode", sched_decode_count, decoder},
    {"admission", "policy.admission", sched_admission_count, admission},
    {"PD-ratio controllers", "policy.pd_controller", sched_pd_count, pd},
    {"eviction", "kvstore.eviction", kv_evict_count, evict},
};

static void print_kind(FILE *f, const struct kind *k)
{
    fprintf(f, "%s (%s):\n", k->title, k->key);
    for (size_t i = 0; i < k->count(); i++) {
        entry e = k->at(i);
        fprintf(f, "  %-22s %s\n", e.name, e.help);
        if (*e.params) fprintf(f, "  %-22s params: %s\n", "", e.params);
    }
}

int cmd_policies(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        puts("usage: kvsim policies\n\nList every registered plug-in (serving and cache models, routers, decode\n"
             "selectors, admission, PD-ratio controllers, eviction) with its help and parameters.\n"
             "Select them in the config: cluster.mode, kvstore.pic, policy.router,\n"
             "policy.decode, policy.admission, policy.pd_controller, kvstore.eviction;\n"
             "parameters go in policy.params.");
        return SIM_EXIT_OK;
    }
    if (argc > 1) return sim_usage_error("policies", "takes no arguments (see kvsim policies --help)");
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) print_kind(stdout, &kinds[i]);
    return SIM_EXIT_OK;
}
