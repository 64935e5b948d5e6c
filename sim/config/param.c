/* sim/config/param.c — policy.params readers (see sim/config/param.h). */
#include "sim/config/param.h"

int sim_param_number(const json_t *params, const char *name, double def, double min, double max, double *out,
                     sim_err *err)
{
    const json_t *v = params ? json_object_get(params, name) : NULL;
    if (!v) {
        *out = def;
        return 0;
    }
    if (!json_is_number(v)) return sim_errf(err, "policy.params.%s: expected a number", name);
    double x = json_number_value(v);
    if (x < min || x > max) return sim_errf(err, "policy.params.%s: %g is outside [%g, %g]", name, x, min, max);
    *out = x;
    return 0;
}
