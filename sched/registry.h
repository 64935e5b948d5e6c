/* sched/registry.h — the conductor's policy registries: one table per
 * policy kind (routers, decode selectors, admission, PD-ratio controllers),
 * mapping a name from the config to its ops. Every ops struct carries its
 * name, one-line help and the parameters it reads.
 *
 * Adding a policy = one file in sched/ + one line in its table in
 * registry.c. Lookups are the only place names are compared; everything
 * that lists policies (kvsim policies, the tests that cover every policy)
 * iterates the tables with X_count() / X_at(i). */
#ifndef SCHED_REGISTRY_H
#define SCHED_REGISTRY_H

#include <stddef.h>

#include "sched/sched.h"

size_t sched_router_count(void);
const sched_router_ops *sched_router_at(size_t i); /* NULL past the end */
const sched_router_ops *sched_router_lookup(const char *name);

size_t sched_decode_count(void);
const sched_decode_ops *sched_decode_at(size_t i);
const sched_decode_ops *sched_decode_lookup(const char *name);

size_t sched_admission_count(void);
const sched_admission_ops *sched_admission_at(size_t i);
const sched_admission_ops *sched_admission_lookup(const char *name);

size_t sched_pd_count(void);
const sched_pd_ops *sched_pd_at(size_t i);
const sched_pd_ops *sched_pd_lookup(const char *name);

/* ---- names in the config (sched/names.c) ---- */
typedef enum sched_kind { SCHED_KIND_ROUTER, SCHED_KIND_DECODE, SCHED_KIND_ADMISSION, SCHED_KIND_PD } sched_kind;
/* " (did you mean 'X'?)" for an unknown name of that kind, or "". */
const char *sched_suggest(sched_kind kind, const char *name);
/* Every key of policy.params is a parameter some registered policy
 * declares; else an error naming it, with a suggestion. */
int sched_params_check(const json_t *params, sim_err *err);
/* The keys of policy.params that none of the selected policies (router,
 * decode, admission, PD controller, eviction, by name) declares, joined
 * with ", " into buf; NULL when every key is one of theirs. */
const char *sched_params_unselected(const json_t *params, const char *const selected[5], char *buf, size_t n);

#endif
