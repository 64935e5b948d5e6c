/* sim/config/grid.c — parsing and expanding sweep grids (see sim/config/grid.h). */
#include "sim/config/grid.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Trim leading and trailing white space in place. */
static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

/* Whether two grid values are one: the same text, or the same number
 * written two ways (1 and 1.0: one config, one run). */
static bool same_value(const char *a, const char *b)
{
    if (!strcmp(a, b)) return true;
    char *ea, *eb;
    double x = strtod(a, &ea), y = strtod(b, &eb);
    return ea != a && eb != b && !*ea && !*eb && x == y;
}

static int parse_values(sim_grid_axis *a, char *list, const char *entry, sim_err *err)
{
    for (char *v; (v = strsep(&list, ",")) != NULL;) {
        v = trim(v);
        if (!*v) return sim_errf(err, "--grid: empty value in '%s'", entry);
        for (int i = 0; i < a->nvalues; i++) /* it once ran the point twice and listed its run twice */
            if (same_value(a->values[i], v))
                return strcmp(a->values[i], v) ? sim_errf(err, "--grid: values '%s' and '%s' are one number in '%s'",
                                                          a->values[i], v, entry)
                                               : sim_errf(err, "--grid: value '%s' appears twice in '%s'", v, entry);
        a->values = sim_xrealloc(a->values, (size_t)(a->nvalues + 1) * sizeof *a->values);
        a->values[a->nvalues++] = sim_xstrdup(v);
    }
    return 0;
}

/* One "key=v1,v2" entry (already trimmed, not empty). */
static int parse_entry(sim_grid *g, char *entry, sim_err *err)
{
    char copy[512];
    snprintf(copy, sizeof copy, "%s", entry);
    char *eq = strchr(entry, '=');
    if (!eq) return sim_errf(err, "--grid: '%s' is not key=v1,v2,...", copy);
    *eq = 0;
    char *key = trim(entry);
    if (!*key || strpbrk(key, " \t")) return sim_errf(err, "--grid: bad key in '%s'", copy);
    for (int i = 0; i < g->naxes; i++)
        if (!strcmp(g->axes[i].key, key)) return sim_errf(err, "--grid: key '%s' appears twice", key);
    g->axes = sim_xrealloc(g->axes, (size_t)(g->naxes + 1) * sizeof *g->axes);
    sim_grid_axis *a = &g->axes[g->naxes++];
    *a = (sim_grid_axis){.key = sim_xstrdup(key)};
    if (parse_values(a, eq + 1, copy, err)) return -1;
    if (g->npoints > SIM_GRID_MAX_POINTS / a->nvalues)
        return sim_errf(err, "--grid: more than %d points", SIM_GRID_MAX_POINTS);
    g->npoints *= a->nvalues;
    return 0;
}

int sim_grid_parse(const char *spec, sim_grid *g, sim_err *err)
{
    *g = (sim_grid){.npoints = 1};
    char *text = sim_xstrdup(spec), *rest = text;
    int rc = 0;
    for (char *entry; rc == 0 && (entry = strsep(&rest, ";")) != NULL;) {
        entry = trim(entry);
        if (*entry) rc = parse_entry(g, entry, err);
    }
    free(text);
    if (rc == 0 && g->naxes == 0) rc = sim_errf(err, "--grid: '%s' names no key", spec);
    if (rc) sim_grid_free(g);
    return rc;
}

void sim_grid_point_sets(const sim_grid *g, int64_t i, char **sets)
{
    for (int k = g->naxes - 1; k >= 0; k--) {
        const sim_grid_axis *a = &g->axes[k];
        const char *v = a->values[i % a->nvalues];
        i /= a->nvalues;
        size_t n = strlen(a->key) + strlen(v) + 2;
        sets[k] = sim_xmalloc(n);
        snprintf(sets[k], n, "%s=%s", a->key, v);
    }
}

void sim_grid_free(sim_grid *g)
{
    for (int i = 0; i < g->naxes; i++) {
        for (int j = 0; j < g->axes[i].nvalues; j++) free(g->axes[i].values[j]);
        free(g->axes[i].values);
        free(g->axes[i].key);
    }
    free(g->axes);
    *g = (sim_grid){0};
}
