/* sim/config/param.h — policy.params, typed and range-checked: the one
 * reader every policy (sched/, sim/store/evict/) uses for its parameters, so
 * a bad value fails the same way whichever policy reads it. */
#ifndef SIM_CONFIG_PARAM_H
#define SIM_CONFIG_PARAM_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "sim/util.h"

/* params[name] as a number in [min, max]; `def` when params is NULL or has
 * no such key. A non-number or out-of-range value fails naming
 * policy.params.NAME. */
int sim_param_number(const json_t *params, const char *name, double def, double min, double max, double *out,
                     sim_err *err);

/* The next parameter a policy's params text ("a=1: meaning; b=2 (...)",
 * the registries' one-line form) declares from *at on: *name and *len are
 * its name, *at moves past it; false when none is left. */
bool sim_param_next(const char **at, const char **name, size_t *len);

#endif
