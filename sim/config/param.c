/* sim/config/param.c — policy.params readers (see sim/config/param.h). */
#include "sim/config/param.h"

#include <string.h>

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

bool sim_param_next(const char **at, const char **name, size_t *len)
{
    for (const char *p = *at; p && *p;) {
        while (*p == ' ' || *p == ';') p++;
        const char *start = p;
        size_t n = strcspn(p, "=;");
        p += strcspn(p, ";");
        if (start[n] == '=') {
            *name = start;
            *len = n;
            *at = p;
            return true;
        }
    }
    return false;
}
