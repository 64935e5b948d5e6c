/* sim/config/param.h — policy.params, typed and range-checked: the one
 * reader every policy (sched/, sim/store/evict/) uses for its parameters, so
 * a bad value fails the same way whichever policy reads it. */
#ifndef SIM_CONFIG_PARAM_H
#define SIM_CONFIG_PARAM_H

#include <jansson.h>

#include "sim/util.h"

/* params[name] as a number in [min, max]; `def` when params is NULL or has
 * no such key. A non-number or out-of-range value fails naming
 * policy.params.NAME. */
int sim_param_number(const json_t *params, const char *name, double def, double min, double max, double *out,
                     sim_err *err);

#endif
