/* sim/slo/multi.c — `kvsim plan slo --hardware KIND,... --tp LIST`: one
 * whole search (sim_slo_plan) per GPU kind and GPUs per instance, and the
 * cheapest answer per kind and overall.
 *
 * A search's answer is its recommended point (confirm.c), or its cheapest
 * when confirmation is off. A kind ("h100") with GPUs per instance t is
 * the preset of a node of t such GPUs, configs/hardware/KINDxt.json (one
 * instance = one node, tensor parallel over its t GPUs); a preset name
 * ("h200x2") is that preset, with cluster.gpus_per_instance = t when --tp
 * is given. Without --hardware, --tp sets cluster.gpus_per_instance on the
 * config's hardware (a divisor of the node's GPUs is tensor parallel, a
 * multiple pipeline parallel). --modes repeats every search in each
 * cluster mode (cluster.mode: disaggregated P and D, or aggregated
 * instances). Answers are compared by their price an hour when every
 * answer is priced (GPUs, and DRAM and disk when those are:
 * hardware.*_price_per_GB_hour), else all by their GPUs (one kind without
 * a price once won on its GPU count against the others' dollars); ties go
 * to the earlier search (fewer GPUs per instance, kinds in the order given). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/config/model.h"
#include "sim/slo/plan_slo.h"

const sim_slo_point *sim_slo_answer(const sim_slo_result *r)
{
    if (r->status != SIM_SLO_FEASIBLE || r->cheapest < 0) return NULL;
    if (r->ncand) return r->recommended >= 0 ? &r->cand[r->recommended].run[0] : NULL;
    return &r->pts[r->cheapest];
}

/* A search of kind k (a preset name, or a kind: the preset KINDxt) with
 * t GPUs per instance (0: not given). */
static void add_variant(sim_slo_multi *m, const char *k, int t)
{
    sim_slo_variant *v = &m->v[m->n++];
    char path[4096];
    sim_err e = {{0}};
    memset(v, 0, sizeof *v);
    v->tp = t;
    if (!k) return;
    snprintf(v->kind, sizeof v->kind, "%s", k);
    if (!sim_preset_path("hardware", k, path, sizeof path, &e))
        return (void)snprintf(v->hardware, sizeof v->hardware, "%s", k);
    snprintf(v->hardware, sizeof v->hardware, "%.40sx%d", k, t ? t : 1);
    v->tp = 0; /* the node of t GPUs is the instance */
    if (sim_preset_path("hardware", v->hardware, path, sizeof path, &e))
        snprintf(v->why, sizeof v->why, "no preset %.60s: %.160s", v->hardware, e.msg);
}

/* The searches to run: kinds × GPU counts, or the GPU counts alone. */
static int variants(const char *hardware, const int *tp, int ntp, sim_slo_multi *m, sim_err *err)
{
    int nt = ntp ? ntp : 1;
    if (!hardware) {
        for (int i = 0; i < nt; i++) add_variant(m, NULL, ntp ? tp[i] : 0);
        return 0;
    }
    char *copy = sim_xstrdup(hardware), *rest = copy;
    int rc = 0;
    for (char *k; rc == 0 && (k = strsep(&rest, ",")) != NULL;)
        for (int i = 0; rc == 0 && i < nt; i++) {
            if (!*k) rc = sim_errf(err, "--hardware: empty value in '%s'", hardware);
            else if (m->n == SIM_SLO_MAX_VARIANTS)
                rc = sim_errf(err, "--hardware x --tp: more than %d searches", SIM_SLO_MAX_VARIANTS);
            else add_variant(m, k, ntp ? tp[i] : 0);
        }
    free(copy);
    return rc;
}

/* The searched keys may not come through --set. */
static int check_multi_sets(const sim_slo_opts *o, bool hardware, int ntp, const char *modes, sim_err *err)
{
    for (int i = 0; i < o->nsets; i++) {
        if (ntp && !strncmp(o->sets[i], "cluster.gpus_per_instance=", 26))
            return sim_errf(err, "--set %s: --tp sets cluster.gpus_per_instance itself", o->sets[i]);
        if (modes && !strncmp(o->sets[i], "cluster.mode=", 13))
            return sim_errf(err, "--set %s: --modes sets cluster.mode itself", o->sets[i]);
        if (hardware && (!strncmp(o->sets[i], "hardware=", 9) || !strncmp(o->sets[i], "hardware.", 9)))
            return sim_errf(err, "--set %s: --hardware sets the hardware itself", o->sets[i]);
    }
    return 0;
}

/* One variant's search, its sets appended to a copy of the options'. */
static int plan_variant(const sim_slo_opts *o, sim_slo_variant *v, sim_slo_hook before, void *ctx, sim_err *err)
{
    char hw[96], tp[64], mode[48];
    sim_slo_opts vo = *o;
    vo.sets = sim_xcalloc((size_t)o->nsets + 4, sizeof *vo.sets);
    memcpy(vo.sets, o->sets, (size_t)o->nsets * sizeof *vo.sets);
    if (v->mode[0]) snprintf(mode, sizeof mode, "cluster.mode=%s", v->mode), vo.sets[vo.nsets++] = mode;
    if (!strcmp(v->mode, "aggregated")) vo.disagg_opt = NULL; /* --scopes, --cpp: the disaggregated searches' */
    if (v->hardware[0]) snprintf(hw, sizeof hw, "hardware=%s", v->hardware), vo.sets[vo.nsets++] = hw;
    if (v->tp) snprintf(tp, sizeof tp, "cluster.gpus_per_instance=%d", v->tp), vo.sets[vo.nsets++] = tp;
    if (before) before(&vo, ctx);
    int rc = 0;
    if (sim_slo_plan(&vo, &v->r, err)) { /* e.g. the model does not fit so few GPUs: that search is out */
        rc = v->r.stop_signal ? -1 : 0;
        snprintf(v->why, sizeof v->why, "%.255s", err->msg);
        v->r.status = SIM_SLO_INFEASIBLE_FLOOR;
    }
    free(vo.sets);
    return rc;
}

/* Each search of m once per mode of the list (the searches grow by that factor). */
static int with_modes(const char *modes, sim_slo_multi *m, sim_err *err)
{
    char *copy = sim_xstrdup(modes), *rest = copy;
    int n0 = m->n, rc = 0, k = 0;
    sim_slo_variant *base = sim_xmalloc((size_t)(n0 ? n0 : 1) * sizeof *base);
    memcpy(base, m->v, (size_t)n0 * sizeof *base);
    for (char *md; rc == 0 && (md = strsep(&rest, ",")) != NULL;) {
        if (strcmp(md, "disaggregated") && strcmp(md, "aggregated"))
            rc = sim_errf(err, "--modes: '%s' is not disaggregated or aggregated", md);
        for (int i = 0; rc == 0 && i < n0; i++, k++) {
            if (k == SIM_SLO_MAX_VARIANTS) rc = sim_errf(err, "--modes: more than %d searches", SIM_SLO_MAX_VARIANTS);
            else m->v[k] = base[i], snprintf(m->v[k].mode, sizeof m->v[k].mode, "%s", md);
        }
    }
    m->n = k;
    free(base);
    free(copy);
    return rc;
}

int sim_slo_plan_multi(const sim_slo_opts *o, const char *hardware, const int *tp, int ntp, const char *modes,
                       sim_slo_hook before, void *ctx, sim_slo_multi *m, sim_err *err)
{
    *m = (sim_slo_multi){.best = -1};
    m->v = sim_xcalloc(SIM_SLO_MAX_VARIANTS, sizeof *m->v);
    if (check_multi_sets(o, hardware != NULL, ntp, modes, err) || variants(hardware, tp, ntp, m, err)) return -1;
    if (modes && with_modes(modes, m, err)) return -1;
    for (int i = 0; i < m->n; i++) {
        sim_slo_variant *v = &m->v[i];
        if (v->why[0]) continue;
        if (plan_variant(o, v, before, ctx, err)) return m->stop_signal = v->r.stop_signal, -1;
        const sim_slo_point *a = sim_slo_answer(&v->r);
        if (a && !(sim_slo_price(&v->r, a) > 0)) m->by_gpus = true;
    }
    for (int i = 0; i < m->n; i++)
        if (!m->v[i].why[0] && sim_slo_answer(&m->v[i].r) &&
            (m->best < 0 || sim_slo_multi_cost(m, i) < sim_slo_multi_cost(m, m->best)))
            m->best = i;
    return 0;
}

double sim_slo_multi_cost(const sim_slo_multi *m, int i)
{
    const sim_slo_point *a = sim_slo_answer(&m->v[i].r);
    return m->by_gpus ? sim_slo_gpus(&m->v[i].r, a) : sim_slo_cost(&m->v[i].r, a);
}

int sim_slo_multi_best_of(const sim_slo_multi *m, const char *kind)
{
    int best = -1;
    for (int i = 0; i < m->n; i++) {
        if (m->v[i].why[0] || !sim_slo_answer(&m->v[i].r) || strcmp(m->v[i].kind, kind)) continue;
        if (best < 0 || sim_slo_multi_cost(m, i) < sim_slo_multi_cost(m, best)) best = i;
    }
    return best;
}

void sim_slo_multi_free(sim_slo_multi *m)
{
    for (int i = 0; m->v && i < m->n; i++) sim_slo_free(&m->v[i].r);
    free(m->v);
    m->v = NULL;
}
