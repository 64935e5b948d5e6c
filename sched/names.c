/* sched/names.c — names the config gives the policies, checked against
 * every registry with a "did you mean" for slips: policy names per kind,
 * and the keys of policy.params, which must each be a parameter some
 * registered policy declares (sched/ kinds and eviction policies), so a
 * misspelt parameter is an error instead of a silent default. A parameter
 * of a policy not selected in this run is accepted (a sweep may vary the
 * policy while keeping its parameters), and `kvsim run` says it has no
 * effect (sched_params_unselected). */
#include <string.h>

#include <jansson.h>

#include "sched/registry.h"
#include "sim/config/param.h"
#include "sim/store/evict/registry.h"

#define MAX_NAMES 128

typedef struct names {
    const char *v[MAX_NAMES];
    char buf[4096];
    size_t n, used;
} names;

static void add_name(names *ns, const char *s, size_t len)
{
    if (ns->n == MAX_NAMES || ns->used + len + 1 > sizeof ns->buf) return;
    char *p = ns->buf + ns->used;
    memcpy(p, s, len);
    p[len] = 0;
    ns->used += len + 1;
    ns->v[ns->n++] = p;
}

/* The parameter names of a params string "a=1: ...; b=2 (...); c=[..]". */
static void add_params(names *ns, const char *params)
{
    const char *name;
    size_t len;
    for (const char *at = params; sim_param_next(&at, &name, &len);) add_name(ns, name, len);
}

static void all_params(names *ns)
{
    for (size_t i = 0; sched_router_at(i); i++) add_params(ns, sched_router_at(i)->params);
    for (size_t i = 0; sched_decode_at(i); i++) add_params(ns, sched_decode_at(i)->params);
    for (size_t i = 0; sched_admission_at(i); i++) add_params(ns, sched_admission_at(i)->params);
    for (size_t i = 0; sched_pd_at(i); i++) add_params(ns, sched_pd_at(i)->params);
    for (size_t i = 0; i < kv_evict_count(); i++) add_params(ns, kv_evict_at(i)->params);
}

int sched_params_check(const json_t *params, sim_err *err)
{
    names ns = {0};
    all_params(&ns);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)params, key, v)
    {
        bool known = false;
        for (size_t i = 0; i < ns.n && !known; i++) known = !strcmp(ns.v[i], key);
        if (!known)
            return sim_errf(err, "policy.params.%s: no policy has this parameter%s (see kvsim policies)", key,
                            sim_did_you_mean(key, ns.v, ns.n));
    }
    return 0;
}

/* The parameters of the policies a run selects (an unknown name adds
 * nothing: the run refuses it elsewhere). */
static void selected_params(names *ns, const char *const sel[5])
{
    const sched_router_ops *r = sched_router_lookup(sel[0]);
    const sched_decode_ops *d = sched_decode_lookup(sel[1]);
    const sched_admission_ops *a = sched_admission_lookup(sel[2]);
    const sched_pd_ops *p = sched_pd_lookup(sel[3]);
    const kv_evict_entry *e = kv_evict_lookup(sel[4]);
    if (r) add_params(ns, r->params);
    if (d) add_params(ns, d->params);
    if (a) add_params(ns, a->params);
    if (p) add_params(ns, p->params);
    if (e) add_params(ns, e->params);
}

const char *sched_params_unselected(const json_t *params, const char *const selected[5], char *buf, size_t n)
{
    names ns = {0};
    selected_params(&ns, selected);
    const char *key;
    const json_t *v;
    size_t u = 0;
    buf[0] = 0;
    json_object_foreach((json_t *)params, key, v)
    {
        bool taken = false;
        for (size_t i = 0; i < ns.n && !taken; i++) taken = !strcmp(ns.v[i], key);
        if (!taken && u < n) u += (size_t)snprintf(buf + u, n - u, "%s%s", u ? ", " : "", key);
    }
    return buf[0] ? buf : NULL;
}

const char *sched_suggest(sched_kind kind, const char *name)
{
    names ns = {0};
    for (size_t i = 0;; i++) {
        const char *n = kind == SCHED_KIND_ROUTER      ? (sched_router_at(i) ? sched_router_at(i)->name : NULL)
                        : kind == SCHED_KIND_DECODE    ? (sched_decode_at(i) ? sched_decode_at(i)->name : NULL)
                        : kind == SCHED_KIND_ADMISSION ? (sched_admission_at(i) ? sched_admission_at(i)->name : NULL)
                                                       : (sched_pd_at(i) ? sched_pd_at(i)->name : NULL);
        if (!n) break;
        add_name(&ns, n, strlen(n));
    }
    return sim_did_you_mean(name, ns.v, ns.n);
}
