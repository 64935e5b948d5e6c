/* reports/groups.c — how a report groups and styles its runs.
 *
 * Runs whose resolved configs are equal once `seed` is removed form one
 * group: the figures draw a group as one line (or bar) with a band (or error
 * bar) over its seeds, and the tables give its mean and interval.
 *
 * The grouping keys are the config keys that differ between runs, seed
 * excepted. Two of them carry style: the colour key (colour of each group's
 * line or bar) and the facet key (one panel per value in the CDFs, adjacent
 * rows in the bar charts). By default the colour key is the grouping key
 * with the most distinct values and the facet key the one with the next
 * most (ties: the first in sorted order), so that a 4 router x 3 admission
 * grid gives 3 panels of 4 colours; `--color-by` and `--facet-by` override.
 * A group is labelled by its grouping keys only ("router=kvcentric").
 *
 * Colours are Okabe and Ito's eight, chosen to stay distinct under the
 * common colour-vision deficiencies; past eight, a colour repeats with a
 * point marker on its line. The grouping keys other than the colour and
 * facet keys set a line's dash type (solid, dashed, dotted, ...), so groups
 * that share a colour and a panel (chunk vs page transfers at one speed)
 * differ by dash, and a reader without colour still tells them apart. Two groups whose runs have identical summaries
 * (wall-clock times aside) are flagged so that the later one is labelled
 * "identical to ..." instead of silently hiding under the earlier. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

#include "reports/report_int.h"

static const char *const palette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                      "#E69F00", "#56B4E9", "#000000", "#F0E442"};
#define NPALETTE ((int)(sizeof palette / sizeof palette[0]))

const char *rep_color(int slot) { return palette[(slot < 0 ? 0 : slot) % NPALETTE]; }

int rep_marker(int slot) { return slot < NPALETTE ? 0 : 1 + (slot / NPALETTE - 1) % 12; }

rep_stat rep_stat_of(const double *x, int n)
{
    rep_stat s = {.mean = 0, .lo = INFINITY, .hi = -INFINITY, .n = n, .ci = n >= 3};
    for (int i = 0; i < n; i++) {
        s.mean += x[i] / n;
        s.lo = fmin(s.lo, x[i]);
        s.hi = fmax(s.hi, x[i]);
    }
    if (!s.ci) return s;
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (x[i] - s.mean) * (x[i] - s.mean);
    double half = gsl_cdf_tdist_Pinv(0.975, n - 1) * sqrt(ss / (n - 1)) / sqrt(n);
    s.lo = s.mean - half;
    s.hi = s.mean + half;
    return s;
}

rep_stat rep_group_stat(const rep *r, const rep_group *g, const char *summary_path)
{
    double *x = sim_xcalloc((size_t)g->n + 1, sizeof *x);
    int n = 0;
    for (int i = 0; i < g->n; i++) {
        const json_t *v = rep_json_at(r->runs[g->runs[i]].summary, summary_path);
        if (json_is_number(v)) x[n++] = json_number_value(v);
    }
    rep_stat s = n ? rep_stat_of(x, n) : (rep_stat){NAN, NAN, NAN, 0, false};
    free(x);
    return s;
}

/* The config without seed, as canonical text: equal for runs of one group. */
static char *group_identity(const json_t *config)
{
    json_t *c = json_deep_copy(config);
    json_object_del(c, "seed");
    char *s = json_dumps(c, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(c);
    return s;
}

/* The summaries of a group's runs without wall-clock fields and caveats
 * (which name the hardware and model, not a result): equal for groups
 * with identical results. */
static char *result_identity(const rep *r, const rep_group *g)
{
    json_t *all = json_array();
    for (int i = 0; i < g->n; i++) {
        json_t *s = json_deep_copy(r->runs[g->runs[i]].summary);
        json_object_del(s, "wall_seconds");
        json_object_del(s, "run_id");
        json_object_del(s, "caveats");
        json_array_append_new(all, s);
    }
    char *text = json_dumps(all, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(all);
    return text;
}

/* Slot of a run's value of `key` among the values of runs 0..run, in
 * first-appearance order (the sweep's grid order); *n counts the values. */
static int value_slot(const rep *r, int run, const char *key, int *n)
{
    json_t *seen = json_object(); /* value text -> slot */
    int slot = 0;
    for (int i = 0; i <= run; i++) {
        char *v = rep_config_text(r->runs[i].config, key, "-");
        json_t *s = json_object_get(seen, v);
        if (!s) json_object_set_new(seen, v, s = json_integer((json_int_t)json_object_size(seen)));
        if (i == run) slot = (int)json_integer_value(s);
        free(v);
    }
    if (n && (int)json_object_size(seen) > *n) *n = (int)json_object_size(seen);
    json_decref(seen);
    return slot;
}

static int distinct_values(const rep *r, const char *key)
{
    int n = 1;
    for (int i = 0; i < r->nruns; i++) value_slot(r, i, key, &n);
    return n;
}

/* The grouping key with the most distinct values, `skip` excepted. */
static const char *busiest_key(const rep *r, const char *skip)
{
    const char *best = NULL;
    int most = 1;
    size_t k;
    json_t *key;
    json_array_foreach(r->group_keys, k, key)
    {
        const char *name = json_string_value(key);
        int n = skip && !strcmp(skip, name) ? 0 : distinct_values(r, name);
        if (n > most) best = name, most = n;
    }
    return best;
}

static bool is_group_key(const rep *r, const char *name)
{
    size_t k;
    json_t *key;
    json_array_foreach(r->group_keys, k, key) if (!strcmp(json_string_value(key), name)) return true;
    return false;
}

/* "key=value ..." over the grouping keys (last path component), `skip`
 * excepted, and when `other` is given only those where its value differs;
 * "all runs" when nothing is left. */
static char *label_of(const rep *r, const rep_run *run, const char *skip, const rep_run *other)
{
    char label[512] = "";
    size_t k, n = 0;
    json_t *key;
    json_array_foreach(r->group_keys, k, key)
    {
        const char *path = json_string_value(key), *dot = strrchr(path, '.');
        if ((skip && !strcmp(path, skip)) || n >= sizeof label) continue;
        if (other && json_equal(rep_json_at(run->config, path), rep_json_at(other->config, path))) continue;
        char *v = rep_config_text(run->config, path, "-");
        n += (size_t)snprintf(label + n, sizeof label - n, "%s%s=%s", n ? " " : "", dot ? dot + 1 : path, v);
        free(v);
    }
    return sim_xstrdup(n ? label : "all runs");
}

static char *group_label(const rep *r, const rep_run *run, const char *skip) { return label_of(r, run, skip, NULL); }

/* Dash slots: each group's values of the grouping keys other than the
 * colour and facet keys, numbered in first-appearance order. */
static void assign_dashes(rep *r)
{
    json_t *seen = json_object();
    for (int g = 0; g < r->ngroups; g++) {
        const rep_run *run = &r->runs[r->groups[g].runs[0]];
        char rest[512] = "";
        size_t k, n = 0;
        json_t *key;
        json_array_foreach(r->group_keys, k, key)
        {
            const char *path = json_string_value(key);
            bool styled = (r->color_by && !strcmp(path, r->color_by)) || (r->facet_by && !strcmp(path, r->facet_by));
            if (styled || n >= sizeof rest) continue;
            char *v = rep_config_text(run->config, path, "-");
            n += (size_t)snprintf(rest + n, sizeof rest - n, "%s=%s;", path, v);
            free(v);
        }
        json_t *slot = json_object_get(seen, rest);
        if (!slot) json_object_set_new(seen, rest, slot = json_integer((json_int_t)json_object_size(seen)));
        r->groups[g].dash = (int)json_integer_value(slot);
    }
    json_decref(seen);
    /* A group identical to an earlier one is drawn on top of it: a dash of
     * its own keeps the earlier visible beneath. */
    for (int g = 0; g < r->ngroups; g++) {
        const rep_group *same = r->groups[g].same_as >= 0 ? &r->groups[r->groups[g].same_as] : NULL;
        if (same && same->dash == r->groups[g].dash) r->groups[g].dash++;
    }
}

int rep_panel_groups(const rep *r, int p, int npanels)
{
    int n = 0;
    for (int g = 0; g < r->ngroups; g++) n += npanels <= 1 || r->groups[g].facet == p;
    return n;
}

/* The group of run i, a new one when no earlier run shares its identity. */
static void place_run(rep *r, int i, char **ids)
{
    ids[i] = group_identity(r->runs[i].config);
    int g = 0;
    while (g < r->ngroups && strcmp(ids[r->groups[g].runs[0]], ids[i])) g++;
    if (g == r->ngroups) {
        rep_group *ng = &r->groups[r->ngroups++];
        *ng = (rep_group){.runs = sim_xcalloc((size_t)r->nruns, sizeof(int)), .same_as = -1};
        ng->label = group_label(r, &r->runs[i], NULL);
        ng->short_label = group_label(r, &r->runs[i], r->facet_by);
        if (r->color_by) ng->color = value_slot(r, i, r->color_by, &r->ncolors);
        if (r->facet_by) ng->facet = value_slot(r, i, r->facet_by, &r->nfacets);
    }
    r->groups[g].runs[r->groups[g].n++] = i;
    r->runs[i].group = g;
}

static void mark_identical(rep *r)
{
    char **res = sim_xcalloc((size_t)r->ngroups + 1, sizeof *res);
    for (int g = 0; g < r->ngroups; g++) {
        res[g] = result_identity(r, &r->groups[g]);
        for (int h = 0; h < g && r->groups[g].same_as < 0; h++)
            if (r->groups[h].same_as < 0 && !strcmp(res[g], res[h])) {
                r->groups[g].same_as = h;
                r->groups[g].same_as_diff =
                    label_of(r, &r->runs[r->groups[h].runs[0]], NULL, &r->runs[r->groups[g].runs[0]]);
            }
    }
    for (int g = 0; g < r->ngroups; g++) free(res[g]);
    free(res);
}

static int check_option(const rep *r, const char *opt, const char *name, sim_err *err)
{
    if (!name || is_group_key(r, name)) return 0;
    char *keys = json_dumps(r->group_keys, JSON_COMPACT);
    sim_errf(err, "%s %s: not a config key that differs between the selected runs (those are: %s)", opt, name,
             json_array_size(r->group_keys) ? keys : "none");
    free(keys);
    return -1;
}

int rep_groups_build(rep *r, const char *color_by, const char *facet_by, sim_err *err)
{
    r->group_keys = json_array();
    size_t k;
    json_t *key;
    json_array_foreach(r->diff_keys, k, key) if (strcmp(json_string_value(key), "seed"))
        json_array_append(r->group_keys, key);
    if (check_option(r, "--color-by", color_by, err) || check_option(r, "--facet-by", facet_by, err)) return -1;
    if (color_by && facet_by && !strcmp(color_by, facet_by))
        return sim_errf(err, "--color-by and --facet-by name the same key (%s)", color_by);
    r->color_by = color_by ? color_by : busiest_key(r, facet_by);
    r->facet_by = facet_by ? facet_by : color_by ? busiest_key(r, color_by) : busiest_key(r, r->color_by);
    r->ncolors = r->nfacets = 1;
    r->groups = sim_xcalloc((size_t)r->nruns + 1, sizeof *r->groups);
    char **ids = sim_xcalloc((size_t)r->nruns + 1, sizeof *ids);
    for (int i = 0; i < r->nruns; i++) place_run(r, i, ids);
    for (int i = 0; i < r->nruns; i++) free(ids[i]);
    free(ids);
    mark_identical(r);
    assign_dashes(r);
    return 0;
}

void rep_groups_free(rep *r)
{
    for (int g = 0; g < r->ngroups; g++) {
        free(r->groups[g].runs);
        free(r->groups[g].label);
        free(r->groups[g].short_label);
        free(r->groups[g].same_as_diff);
    }
    free(r->groups);
    json_decref(r->group_keys);
}

void rep_facet_title(const rep *r, int p, char *buf, size_t size)
{
    snprintf(buf, size, "%s", r->facet_by ? r->facet_by : "");
    for (int g = 0; g < r->ngroups && r->facet_by; g++)
        if (r->groups[g].facet == p) {
            const char *dot = strrchr(r->facet_by, '.');
            char *v = rep_config_text(r->runs[r->groups[g].runs[0]].config, r->facet_by, "-");
            snprintf(buf, size, "%s=%s", dot ? dot + 1 : r->facet_by, v);
            free(v);
            return;
        }
}

void rep_figure_title(const rep *r, const char *what, const char *spread, char *buf, size_t size)
{
    int most = 1;
    for (int g = 0; g < r->ngroups; g++) most = r->groups[g].n > most ? r->groups[g].n : most;
    if (most == 1) snprintf(buf, size, "%s", what);
    else if (!spread) snprintf(buf, size, "%s (mean of %d seeds)", what, most);
    else snprintf(buf, size, "%s (mean of %d seeds; %s: %s)", what, most, spread, most >= 3 ? "95% CI" : "min-max");
}

/* ---- styles and panels of the figures ---------------------------------------------- */

void rep_line_style(const rep_group *g, char *buf, size_t size)
{
    int marker = rep_marker(g->color);
    if (marker)
        snprintf(buf, size, "linespoints linewidth 2 pointtype %d pointnumber 8 linecolor rgb \"%s\"", marker,
                 rep_color(g->color));
    else snprintf(buf, size, "lines linewidth 2 linecolor rgb \"%s\"", rep_color(g->color));
    snprintf(buf + strlen(buf), size - strlen(buf), " dashtype %d", 1 + g->dash % 5);
}

void rep_band_clause(rep_body *b, const char *file, int index, const rep_group *g)
{
    char style[128];
    snprintf(style, sizeof style, "filledcurves closed fillstyle transparent solid 0.2 noborder linecolor rgb \"%s\"",
             rep_color(g->color));
    rep_body_clause(b, file, index, "1:2", style, NULL);
}

void rep_panels(rep_body *b, const rep *r, rep_body *panel, int npanels)
{
    int cols = npanels < 3 ? npanels : 3, rows = (npanels + cols - 1) / cols;
    if (npanels > 1) fprintf(b->f, "set multiplot layout %d,%d title figure_title\n", rows, cols);
    else fputs("set title figure_title\n", b->f);
    for (int p = 0; p < npanels; p++) {
        fclose(panel[p].f);
        if (npanels > 1) {
            char title[256];
            rep_facet_title(r, p, title, sizeof title);
            fputs("set title ", b->f);
            rep_gp_string(b->f, title);
            fputc('\n', b->f);
        }
        fprintf(b->f, "%s\n", panel[p].len ? panel[p].text : "plot NaN notitle");
        free(panel[p].text);
    }
    if (npanels > 1) fputs("unset multiplot\n", b->f);
}

/* How many runs used a PIC cache model (their summary names "pic"). */
static int pic_runs(const rep *r)
{
    int n = 0;
    for (int i = 0; i < r->nruns; i++) n += json_is_string(json_object_get(r->runs[i].summary, "pic"));
    return n;
}

bool rep_every_run_pic(const rep *r) { return r->nruns > 0 && pic_runs(r) == r->nruns; }
bool rep_any_run_pic(const rep *r) { return pic_runs(r) > 0; }
