/* sim/slo/result.c — a `kvsim plan slo` result as one JSON object
 * (`kvsim plan slo --json`; the keys are listed in its --help). */
#include <math.h>
#include <stdio.h>

#include "sim/config/scope.h"
#include "sim/slo/plan_slo.h"

/* {"ttft_ms.p90": v, ...} of the targets given, from v[t]. */
static json_t *by_target(const sim_slo_opts *o, const double *v)
{
    json_t *j = json_object();
    for (int t = 0; t < SIM_SLO_NTARGETS; t++) {
        char key[32];
        snprintf(key, sizeof key, "%s.%s", sim_slo_metric_key(t), sim_slo_stat_key(t));
        if (o->target[t] > 0) json_object_set_new(j, key, json_real(v[t]));
    }
    return j;
}

static json_t *floor_json(const sim_slo_opts *o, const sim_slo_floor *f)
{
    return json_pack("{s:i, s:i, s:o, s:f, s:b}", "cpp_group", f->cpp, "cpp_threshold", f->threshold, "floor",
                     by_target(o, f->value), "max_slo_attainment", f->attainment, "blocks", f->blocks);
}

static json_t *point_json(const sim_slo_opts *o, const sim_slo_result *r, const sim_slo_point *p)
{
    json_t *m = json_object();
    for (int t = 0; t < SIM_SLO_NTARGETS; t++) {
        json_t *k = json_object_get(m, sim_slo_metric_key(t));
        if (!k) json_object_set_new(m, sim_slo_metric_key(t), k = json_object());
        json_object_set_new(k, sim_slo_stat_key(t), isnan(p->value[t]) ? json_null() : json_real(p->value[t]));
    }
    const char *const *loads = sim_load_names;
    json_t *j = r->aggregated
                    ? json_pack("{s:i, s:i, s:I, s:f, s:I, s:I, s:s}", "probe", p->probe, "instances", p->prefill,
                                "dram_bytes", (json_int_t)r->dram[p->dram_level], "dram_tokens",
                                r->dram[p->dram_level] / r->kv_bytes_per_token, "ssd_bytes", (json_int_t)p->ssd,
                                "remote_bytes", (json_int_t)p->remote, "load", loads[p->load])
                    : json_pack("{s:i, s:i, s:i, s:f, s:f, s:s, s:i}", "probe", p->probe, "prefill", p->prefill,
                                "decode", p->decode, "dram_bytes", r->dram[p->dram_level], "dram_tokens",
                                r->dram[p->dram_level] / r->kv_bytes_per_token, "scope",
                                kv_scope_name((kv_scope)p->scope), "cpp_group", p->cpp);
    json_object_update_new(j, json_pack("{s:i, s:b, s:I, s:I}", "gpus", sim_slo_gpus(r, p), "ran", p->ran, "run_id",
                                        (json_int_t)p->run_id, "rejected", (json_int_t)p->rejected));
    json_object_update_new(j, m);
    if (sim_slo_price(r, p) > 0) {
        json_object_set_new(j, "price_per_hour", json_real(sim_slo_price(r, p)));
        json_object_set_new(j, "tier_price_per_hour", json_real(sim_slo_tier_price(r, p)));
        json_object_set_new(j, "price_per_million_output_tokens", json_real(sim_slo_price_per_mtok(r, p)));
    }
    json_object_update_new(j, json_pack("{s:f, s:f, s:f}", "hit_rate_tokens", p->hit_rate, "output_tokens", p->tokens,
                                        "sim_seconds", p->sim_seconds));
    json_object_update_new(j, json_pack("{s:f, s:b, s:s, s:f, s:b}", "slo_attainment", p->attainment, "overloaded",
                                        p->overloaded, "busiest", p->busiest, "busiest_utilisation", p->busiest_util,
                                        "feasible", p->feasible));
    return j;
}

static json_t *floors_json(const sim_slo_opts *o, const sim_slo_result *r)
{
    json_t *a = json_array();
    for (int i = 0; i < r->nfloor; i++) json_array_append_new(a, floor_json(o, &r->floor[i]));
    json_t *f =
        json_pack("{s:o, s:o, s:f, s:I, s:s, s:i, s:f, s:f, s:s}", "cpp", a, "cpp_8_threshold_0",
                  floor_json(o, &r->best_cpp), "achievable_hit_rate_tokens", r->hit_rate_tokens, "max_input",
                  (json_int_t)r->max_input, "prompt_quantile", r->prompt_q, "prompt_tokens", r->prompt_tokens,
                  "prompt_alone_ms", r->prompt_alone_ms, "prompt_alone_with_hit_ms", r->prompt_hit_ms, "note", r->note);
    return f;
}

static json_t *frontier_json(const sim_slo_opts *o, const sim_slo_result *r)
{
    json_t *a = json_array();
    for (int lv = 0; lv < r->nlisted; lv++) {
        int i = r->frontier[lv];
        json_t *e =
            i >= 0 ? point_json(o, r, &r->pts[i]) : json_pack("{s:f, s:b}", "dram_bytes", r->dram[lv], "feasible", 0);
        if (r->frontier_command[lv]) json_object_set_new(e, "command", json_string(r->frontier_command[lv]));
        json_array_append_new(a, e);
    }
    return a;
}

static json_t *candidate_json(const sim_slo_opts *o, const sim_slo_result *r, const sim_slo_candidate *c)
{
    json_t *margin = json_object(), *worst = json_object();
    for (int t = 0; t < SIM_SLO_NTARGETS; t++) {
        char key[32];
        snprintf(key, sizeof key, "%s.%s", sim_slo_metric_key(t), sim_slo_stat_key(t));
        if (!(o->target[t] > 0)) continue;
        json_object_set_new(worst, key, isfinite(c->worst[t]) ? json_real(c->worst[t]) : json_null());
        json_object_set_new(margin, key, isfinite(c->worst[t]) ? json_real(o->target[t] - c->worst[t]) : json_null());
    }
    return json_pack("{s:o, s:i, s:i, s:i, s:f, s:b, s:o, s:o, s:f, s:s, s:s}", "point", point_json(o, r, &c->run[0]),
                     "confirmations", c->nrun, "pass", c->pass, "pass_without_headroom", c->pass_bare, "share_pass",
                     c->nrun ? (double)c->pass / c->nrun : 0.0, "knife_edge", c->knife_edge, "worst", worst,
                     "margin_ms", margin, "worst_slo_attainment", c->worst_attainment, "first_miss", c->miss, "command",
                     c->command ? c->command : "");
}

static json_t *confirmation_json(const sim_slo_opts *o, const sim_slo_result *r)
{
    static const char *const wl[] = {"none", "poisson", "sessions"};
    json_t *a = json_array();
    for (int i = 0; i < r->ncand; i++) {
        json_t *c = candidate_json(o, r, &r->cand[i]), *runs = json_array();
        for (int k = 0; k < r->cand[i].nrun; k++) {
            const sim_slo_point *p = &r->cand[i].run[k];
            json_t *e = point_json(o, r, p);
            json_object_update_new(e, json_pack("{s:I, s:s, s:b}", "seed", (json_int_t)p->seed, "resample",
                                                wl[p->resample], "feasible_without_headroom", p->feasible_bare));
            json_array_append_new(runs, e);
        }
        json_object_set_new(c, "runs", runs);
        json_array_append_new(a, c);
    }
    json_t *j = json_pack("{s:i, s:s, s:f, s:o}", "seeds", o->confirm_seeds, "resample", wl[o->confirm_resample],
                          "headroom", o->headroom, "candidates", a);
    json_object_set_new(j, "recommended",
                        r->recommended >= 0 ? json_incref(json_array_get(a, (size_t)r->recommended)) : json_null());
    json_object_set_new(j, "note", r->confirm_note[0] ? json_string(r->confirm_note) : json_null());
    if (r->recommended >= 0) {
        int n = sim_slo_draws(&r->cand[r->recommended]);
        json_object_set_new(j, "resampled_draws", json_integer(n));
        json_object_set_new(j, "distinct_runs", json_integer(sim_slo_distinct(&r->cand[r->recommended])));
        json_object_set_new(j, "fail_rate_bound_95", n ? json_real(sim_slo_fail_bound(n)) : json_null());
    }
    return j;
}

/* A feasible search whose confirmation kept no candidate is "unconfirmed"
 * (exit 3 as the text's "no recommendation"; it once read "feasible", with
 * the rejected point's command beside it). */
static const char *status_name(const sim_slo_result *r)
{
    if (r->status == SIM_SLO_FEASIBLE) return r->ncand && r->recommended < 0 ? "unconfirmed" : "feasible";
    return r->status == SIM_SLO_INFEASIBLE_FLOOR ? "infeasible_floor" : "infeasible_max";
}

json_t *sim_slo_json(const sim_slo_opts *o, const sim_slo_result *r)
{
    json_t *pts = json_array();
    for (int i = 0; i < r->npts; i++) json_array_append_new(pts, point_json(o, r, &r->pts[i]));
    char fp[17];
    snprintf(fp, sizeof fp, "%016llx", (unsigned long long)r->fingerprint);
    json_t *j =
        json_pack("{s:s, s:s, s:I, s:f, s:s, s:s, s:i, s:f, s:i, s:o, s:s}", "trace", r->trace, "fingerprint", fp,
                  "requests", (json_int_t)r->requests, "speed", r->speed, "model", r->model, "hardware", r->hardware,
                  "gpus_per_instance", r->gpus_per_instance, "kv_bytes_per_token", r->kv_bytes_per_token,
                  "max_instances", o->max_instances, "targets", by_target(o, o->target), "status", status_name(r));
    json_object_set_new(j, "attainment", o->attainment > 0 ? json_real(o->attainment) : json_null());
    json_object_set_new(j, "allow_rejected", json_boolean(o->allow_rejected));
    const char *why = r->reason[0] ? r->reason : r->ncand && r->recommended < 0 ? r->confirm_note : "";
    json_object_set_new(j, "reason", why[0] ? json_string(why) : json_null());
    json_object_set_new(j, "floor", floors_json(o, r));
    json_object_set_new(j, "points", pts);
    json_object_set_new(j, "frontier", frontier_json(o, r));
    json_object_set_new(j, "cheapest", r->cheapest >= 0 ? point_json(o, r, &r->pts[r->cheapest]) : json_null());
    if (r->cheapest >= 0) json_object_set_new(json_object_get(j, "cheapest"), "command", json_string(r->command));
    json_object_set_new(j, "confirmation", r->ncand ? confirmation_json(o, r) : json_null());
    json_object_set_new(j, "mode", json_string(r->aggregated ? "aggregated" : "disaggregated"));
    if (r->aggregated)
        json_object_set_new(
            j, "cliff",
            json_pack("{s:o, s:o, s:I, s:s}", "pass",
                      r->cliff_pass >= 0 ? point_json(o, r, &r->pts[r->cliff_pass]) : json_null(), "fail",
                      r->cliff_fail >= 0 ? point_json(o, r, &r->pts[r->cliff_fail]) : json_null(), "step_bytes",
                      (json_int_t)r->dram_step, "dram_per", r->instances_per_node > 1 ? "node" : "instance"));
    json_object_set_new(j, "search",
                        json_pack("{s:i, s:I, s:I, s:I, s:i, s:f}", "probes", r->nprobes, "runs", (json_int_t)r->runs,
                                  "recorded", (json_int_t)r->recorded, "failed", (json_int_t)r->failed, "points",
                                  r->npts, "wall_seconds", r->wall_seconds));
    return j;
}

json_t *sim_slo_multi_json(const sim_slo_opts *o, const sim_slo_multi *m)
{
    json_t *list = json_array();
    for (int i = 0; i < m->n; i++) {
        const sim_slo_variant *v = &m->v[i];
        const sim_slo_point *a = v->why[0] ? NULL : sim_slo_answer(&v->r);
        json_t *e = json_pack("{s:s, s:s, s:s, s:i, s:b}", "kind", v->kind, "mode",
                              v->mode[0]        ? v->mode
                              : v->r.aggregated ? "aggregated"
                                                : "disaggregated",
                              "hardware", v->hardware[0] ? v->hardware : v->r.hardware, "gpus_per_instance",
                              v->why[0] ? v->tp : v->r.gpus_per_instance, "feasible", a != NULL);
        if (!v->why[0])
            json_object_update_new(e, json_pack("{s:f, s:f, s:f}", "price_per_instance_hour", v->r.prefill_price,
                                                "dram_price_per_GB_hour", v->r.dram_price, "ssd_price_per_GB_hour",
                                                v->r.ssd_price));
        if (a) json_object_set_new(e, "answer", point_json(o, &v->r, a));
        if (v->why[0]) json_object_set_new(e, "error", json_string(v->why));
        json_array_append_new(list, e);
    }
    json_t *j = json_pack("{s:o}", "searches", list);
    json_t *tp = json_array(); /* --tp alone: one entry per GPU count, as before --hardware */
    for (int i = 0; i < m->n && !m->v[0].kind[0]; i++) {
        const sim_slo_variant *v = &m->v[i];
        const sim_slo_point *a = v->why[0] ? NULL : sim_slo_answer(&v->r);
        json_t *e = json_pack("{s:i, s:b}", "gpus_per_instance", v->tp, "feasible", a != NULL);
        if (a) json_object_set_new(e, "gpus", json_integer(sim_slo_gpus(&v->r, a)));
        if (v->why[0]) json_object_set_new(e, "error", json_string(v->why));
        json_array_append_new(tp, e);
    }
    json_object_set_new(j, "tp", tp);
    json_t *picked = json_null();
    if (m->best >= 0)
        picked = m->v[m->best].kind[0] ? json_string(m->v[m->best].hardware) : json_integer(m->v[m->best].tp);
    json_object_set_new(j, "picked", picked);
    json_object_set_new(j, "compared_by", json_string(m->by_gpus ? "gpus" : "price"));
    int shown = m->best;
    for (int i = m->n - 1; shown < 0 && i >= 0; i--) shown = m->v[i].why[0] ? -1 : i;
    json_object_set_new(j, "plan", shown >= 0 ? sim_slo_json(o, &m->v[shown].r) : json_null());
    return j;
}

json_t *sim_slo_tiers_json(const sim_tiers_opts *o, const sim_tiers *t)
{
    json_t *a = json_array();
    for (int i = 0; i < t->n; i++) {
        const sim_slo_point *p = &t->pt[i];
        json_t *e = json_pack("{s:f, s:f, s:b}", "bytes", t->size[i], "tokens", t->size[i] / t->r.kv_bytes_per_token,
                              "ran", p->ran);
        if (p->ran)
            json_object_update_new(e,
                                   json_pack("{s:f, s:o, s:f, s:f, s:b, s:I, s:b}", "hit_rate_tokens", p->hit_rate,
                                             "ttft_p90_ms", isnan(p->value[2]) ? json_null() : json_real(p->value[2]),
                                             "goodput_rps", p->goodput, "slo_attainment", p->attainment, "overloaded",
                                             p->overloaded, "run_id", (json_int_t)p->run_id, "knee", i == t->knee));
        if (p->ran && sim_slo_price(&t->r, p) > 0) /* unpriced: no price keys, as plan slo's points */
            json_object_update_new(e, json_pack("{s:f, s:f}", "price_per_hour", sim_slo_price(&t->r, p),
                                                "price_per_million_output_tokens", sim_slo_price_per_mtok(&t->r, p)));
        json_array_append_new(a, e);
    }
    char fp[17];
    snprintf(fp, sizeof fp, "%016llx", (unsigned long long)t->r.fingerprint);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:f, s:f, s:f, s:o, s:o, s:b}", "trace", t->r.trace,
                     "fingerprint", fp, "model", t->r.model, "hardware", t->r.hardware, "tier", t->ssd ? "ssd" : "dram",
                     "prefill", t->P, "decode", t->D, "fixed_other_tier_bytes", t->fixed, "knee_share", o->knee,
                     "best_hit_rate", t->best_hit, "points", a, "knee",
                     t->knee >= 0 ? json_real(t->size[t->knee]) : json_null(), "knee_at_grid_top",
                     sim_slo_tiers_knee_at_top(t));
}
