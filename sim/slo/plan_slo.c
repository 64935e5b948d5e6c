/* sim/slo/plan_slo.c — `kvsim plan slo` (sim/slo/plan_slo.h): checking
 * the options, the plan's setup (the resolved config, the sets every point
 * shares, the DRAM levels, the results database, a temporary one removed
 * at the end unless --db names one), the knobs of a probe, the steps in
 * order (floor.c, then search.c or, for an aggregated cluster,
 * search_agg.c) and the `kvsim run` line that reproduces the cheapest
 * point.
 * The targets' names are targets.c, the JSON of a result result.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/config/config.h"
#include "sim/config/scope.h"
#include "sim/outfile.h"
#include "sim/slo/slo_int.h"
#include "sim/trace/trace.h"

/* The keys the search sets itself may not come through --set: those of
 * a disaggregated search, or of an aggregated one (its disk, remote store
 * and load only when a list of them is searched). */
static int check_sets(const sim_slo_opts *o, bool agg, sim_err *err)
{
    static const char *const searched[] = {"cluster.prefill",   "cluster.decode", "kvstore.dram_bytes", "cluster.scope",
                                           "cluster.cpp_group", "trace.path",     "trace.speed"};
    const char *agg_keys[] = {"cluster.instances",
                              "kvstore.dram_bytes",
                              "trace.path",
                              "trace.speed",
                              o->nssd ? "kvstore.ssd_bytes" : NULL,
                              o->nremote ? "kvstore.remote.bytes" : NULL,
                              o->nload ? "kvstore.load" : NULL};
    const char *const *keys = agg ? agg_keys : searched;
    for (int i = 0; i < o->nsets; i++)
        for (size_t k = 0; k < sizeof searched / sizeof searched[0]; k++) {
            size_t n = keys[k] ? strlen(keys[k]) : 0;
            if (n && !strncmp(o->sets[i], keys[k], n) && o->sets[i][n] == '=')
                return sim_errf(err,
                                "--set %s: plan slo sets %s itself (use --trace, --speed, --max-instances, "
                                "--dram, %s)",
                                o->sets[i], keys[k], agg ? "--ssd, --remote, --loads" : "--scopes, --cpp");
        }
    return 0;
}

/* The options of the other mode's search are an error naming the mode. */
static int check_mode_opts(const sim_slo_opts *o, const char *mode, bool agg, sim_err *err)
{
    if (agg && o->disagg_opt)
        return sim_errf(err,
                        "%s: cluster.mode is '%s'; %s searches disaggregated clusters (an aggregated one's "
                        "knobs are --dram, --ssd, --remote, --loads)",
                        o->disagg_opt, mode, o->disagg_opt);
    const char *a = o->nssd            ? "--ssd"
                    : o->nremote       ? "--remote"
                    : o->nload         ? "--loads"
                    : o->dram_step > 0 ? "--dram-step"
                                       : NULL;
    if (!agg && a)
        return sim_errf(err,
                        "%s: cluster.mode is '%s'; %s searches aggregated (LMCache) clusters (set "
                        "cluster.mode=aggregated, e.g. --config configs/clusters/lmcache-cpu-offload.json)",
                        a, mode, a);
    return 0;
}

static int check_opts(const sim_slo_opts *o, sim_err *err)
{
    bool any = o->attainment > 0;
    for (int t = 0; t < SIM_SLO_NTARGETS; t++) any |= o->target[t] > 0;
    if (!any)
        return sim_errf(err,
                        "no target: give at least one of --ttft-p90-ms, --tbt-p99-ms, ... (see kvsim plan slo --help)");
    if (o->max_instances < 2 || o->max_instances > 4096)
        return sim_errf(err, "--max-instances: %d is not in [2, 4096]", o->max_instances);
    if (o->nscope < 1 || o->ncpp < 1) return sim_errf(err, "--scopes and --cpp need at least one value");
    if (o->confirm_seeds < 0 || o->confirm_seeds > SIM_SLO_MAX_SEEDS)
        return sim_errf(err, "--confirm-seeds: %d is not in [0, %d]", o->confirm_seeds, SIM_SLO_MAX_SEEDS);
    if (!(o->headroom >= 0 && o->headroom < 1)) return sim_errf(err, "--headroom: %g is not in [0, 1)", o->headroom);
    return 0;
}

/* "key=VALUE" with VALUE a JSON string, whatever it looks like (a path). */
static char *string_set(const char *key, const char *value)
{
    json_t *s = json_string(value); /* NULL when value is not UTF-8: then as it is */
    char *enc = s ? json_dumps(s, JSON_ENCODE_ANY) : sim_xstrdup(value);
    char *set = sim_xmalloc(strlen(key) + strlen(enc) + 2);
    sprintf(set, "%s=%s", key, enc);
    free(enc);
    json_decref(s);
    return set;
}

/* The sets of every point: --set, the trace and speed, and no request or
 * sample rows (the search reads summaries only; a run re-made with the
 * printed command and --db has them). */
void slo_base_sets(slo_plan *pl)
{
    const sim_slo_opts *o = pl->o;
    pl->base = sim_xcalloc((size_t)o->nsets + 4, sizeof *pl->base);
    for (int i = 0; i < o->nsets; i++) pl->base[pl->nbase++] = sim_xstrdup(o->sets[i]);
    if (o->trace) pl->base[pl->nbase++] = string_set("trace.path", o->trace);
    if (o->speed) {
        pl->base[pl->nbase] = sim_xmalloc(strlen(o->speed) + 16);
        sprintf(pl->base[pl->nbase++], "trace.speed=%s", o->speed);
    }
    pl->base[pl->nbase++] = sim_xstrdup("metrics.request_rows=false");
    pl->base[pl->nbase++] = sim_xstrdup("metrics.sample_rows=false");
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* The DRAM levels, descending, each once: --dram, or the hardware
 * preset's DRAM (an aggregated cluster: the config's kvstore.dram_bytes)
 * × 1, 1/2, 1/4, 1/8. An aggregated cluster without LMCache has no CPU
 * tier (its instances keep their prefix caches in HBM: agg.c): its one
 * level is 0, neither priced nor set on its run lines (they once carried
 * the config's 1 TB, priced at hardware.dram_price_per_GB_hour, and a
 * --dram given was dropped without a word; it is said now). */
static void dram_levels(const sim_slo_opts *o, const sim_config *cfg, sim_slo_result *r)
{
    double top = r->aggregated && cfg->dram_bytes > 0 ? cfg->dram_bytes : cfg->hw.dram_bytes;
    for (int i = 0; i < o->ndram; i++) r->dram[r->ndram++] = o->dram[i];
    for (int i = 0; o->ndram == 0 && i < 4; i++) r->dram[r->ndram++] = top / (1 << i);
    if (slo_no_cpu_tier(r)) {
        if (o->ndram)
            fprintf(stderr, "kvsim plan slo: warning: --dram: the aggregated cluster has no CPU tier (kvstore.lmcache "
                            "off: each instance caches prefixes in HBM), so no DRAM is searched or priced; LMCache's "
                            "CPU offload: --config configs/clusters/lmcache-cpu-offload.json\n");
        r->dram[0] = 0, r->ndram = 1;
    }
    qsort(r->dram, (size_t)r->ndram, sizeof r->dram[0], cmp_desc);
    int k = 0;
    for (int i = 0; i < r->ndram; i++)
        if (i == 0 || r->dram[i] != r->dram[k - 1]) r->dram[k++] = r->dram[i];
    r->ndram = r->nlisted = k;
}

/* A budget over what an instance has: "--dram: 5000 GB of DRAM is more
 * than the 500 GB an instance of 1 GPU on 'h100x1' has (hardware.dram_bytes,
 * in proportion to its GPUs)". */
static int over_node(const sim_config *cfg, const char *opt, bool dram, double want, double have, sim_err *err)
{
    char text[512];
    sim_config_over_text(cfg, dram, opt, want, have, text, sizeof text);
    return sim_errf(err, "%s; give at most that, or a hardware preset with more", text);
}

/* Every DRAM level and disk budget within the node's memory and disks
 * (hardware.dram_bytes, hardware.ssd_bytes when given); an aggregated
 * cluster's node pool (kvstore.cpu_scope node) within its instances'. */
static int check_node(const sim_slo_opts *o, const sim_config *cfg, const sim_slo_result *r, sim_err *err)
{
    double mem = sim_config_node_dram(cfg);
    if (!sim_config_dram_used(cfg)) return 0; /* no CPU tier: kvstore.dram_bytes is not used */
    const char *dopt = o->ndram ? "--dram" : r->aggregated ? "kvstore.dram_bytes" : "--dram";
    for (int i = 0; i < r->ndram; i++)
        if (r->dram[i] > mem * (1 + 1e-12)) return over_node(cfg, dopt, true, r->dram[i], mem, err);
    double disk = sim_config_node_disk(cfg);
    if (!(disk > 0)) return 0;
    for (int i = 0; i < o->nssd; i++)
        if (o->ssd[i] > disk * (1 + 1e-12)) return over_node(cfg, "--ssd", false, o->ssd[i], disk, err);
    if (!o->nssd && cfg->ssd_bytes > disk * (1 + 1e-12))
        return over_node(cfg, "kvstore.ssd_bytes", false, cfg->ssd_bytes, disk, err);
    return 0;
}

/* The resolved config's setup into r. */
static int setup(slo_plan *pl, sim_config *cfg, sim_err *err)
{
    const sim_slo_opts *o = pl->o;
    sim_slo_result *r = pl->r;
    slo_base_sets(pl);
    if (sim_config_load(cfg, o->config, pl->base, pl->nbase, err)) return -1;
    pl->agg = r->aggregated = !strcmp(cfg->mode, "aggregated");
    if (!pl->agg && strcmp(cfg->mode, "disaggregated"))
        return sim_errf(err,
                        "cluster.mode is '%s': plan slo sizes disaggregated and aggregated clusters (set "
                        "cluster.mode=disaggregated or aggregated)",
                        cfg->mode);
    if (check_mode_opts(o, cfg->mode, pl->agg, err) || check_sets(o, pl->agg, err)) return -1;
    snprintf(r->trace, sizeof r->trace, "%s", cfg->trace_path);
    snprintf(r->model, sizeof r->model, "%s", cfg->model.name);
    if (cfg->hetero)
        snprintf(r->hardware, sizeof r->hardware, "%.20s prefill + %.20s decode", cfg->prefill_hw.name,
                 cfg->decode_hw.name);
    else snprintf(r->hardware, sizeof r->hardware, "%s", cfg->hw.name);
    r->prefill_gpus = cfg->prefill_hw.gpus, r->decode_gpus = cfg->decode_hw.gpus;
    r->prefill_price = cfg->prefill_hw.price_per_hour, r->decode_price = cfg->decode_hw.price_per_hour;
    r->dram_price = cfg->hw.dram_price_GBh, r->ssd_price = cfg->hw.ssd_price_GBh;
    r->ssd_bytes = cfg->ssd_bytes, r->hw_ssd_bytes = cfg->hw.ssd_bytes;
    r->speed = cfg->trace.speed;
    r->gpus_per_instance = cfg->hw.gpus;
    r->tp = cfg->hw.tp, r->pp = cfg->hw.pp;
    r->kv_bytes_per_token = sim_model_kv_bytes_per_token(&cfg->model);
    r->hw_dram_bytes = cfg->hw.dram_bytes;
    r->block_tokens = cfg->block_tokens;
    r->cpp_threshold = cfg->cpp_threshold;
    r->slo_ttft_ms = cfg->slo_ttft_ms;
    r->slo_tbt_ms = cfg->slo_tbt_ms;
    r->lmcache = cfg->lmc.on;
    r->instances_per_node = cfg->lmc.cpu_per_node ? cfg->instances_per_node : 1;
    r->dram_step = o->dram_step > 0 ? o->dram_step : 1e9;
    pl->load0 = cfg->lmc.load;
    pl->seed = cfg->seed;
    dram_levels(o, cfg, r);
    if (check_node(o, cfg, r, err)) return -1;
    return sim_trace_fingerprint(cfg->trace_path, &r->fingerprint, err);
}

/* The grid's axis "key=v1,v2" of n numbers (%.17g), or of names, after a ';'. */
static size_t axis(char *g, size_t used, size_t cap, const char *key, const double *v, const char *const *names, int n)
{
    used += (size_t)snprintf(g + used, used < cap ? cap - used : 0, "%s%s=", used ? ";" : "", key);
    for (int i = 0; i < n; i++)
        if (names) used += (size_t)snprintf(g + used, used < cap ? cap - used : 0, "%s%s", i ? "," : "", names[i]);
        else used += (size_t)snprintf(g + used, used < cap ? cap - used : 0, "%s%.17g", i ? "," : "", v[i]);
    return used;
}

/* The knobs of a disaggregated probe and their grid, the sweep running
 * the last axis fastest: CPP, then scope, so that a probe's first feasible
 * point is the one with the least pipeline parallelism. */
static void disagg_knobs(slo_plan *pl)
{
    const sim_slo_opts *o = pl->o;
    double cpp[SIM_SLO_MAX_LIST];
    const char *scopes[2];
    for (int k = 0; k < o->nscope; k++) scopes[k] = kv_scope_name((kv_scope)o->scope[k]);
    for (int i = 0; i < pl->ncpp; i++) {
        cpp[i] = pl->cpp[i];
        for (int k = 0; k < o->nscope; k++) pl->knob[pl->nknob++] = (slo_knob){.cpp = pl->cpp[i], .scope = o->scope[k]};
    }
    size_t u = axis(pl->grid, 0, sizeof pl->grid, "cluster.cpp_group", cpp, NULL, pl->ncpp);
    axis(pl->grid, u, sizeof pl->grid, "cluster.scope", NULL, scopes, o->nscope);
}

/* The knobs of an aggregated probe: disk, then remote store (least
 * first, as given), then kvstore.load. A list not given is not an axis
 * (the config's value); the load always is one (a grid needs an axis). */
static int agg_knobs(slo_plan *pl, sim_err *err)
{
    const char *const *names = sim_load_names;
    const sim_slo_opts *o = pl->o;
    int ns = o->nssd ? o->nssd : 1, nr = o->nremote ? o->nremote : 1, nl = o->nload ? o->nload : 1;
    if (ns * nr * nl > SLO_MAX_KNOBS)
        return sim_errf(err, "--ssd x --remote x --loads: %d points per probe, more than %d", ns * nr * nl,
                        SLO_MAX_KNOBS);
    const char *loads[3];
    for (int c = 0; c < nl; c++) loads[c] = names[o->nload ? o->load[c] : pl->load0];
    for (int a = 0; a < ns; a++)
        for (int b = 0; b < nr; b++)
            for (int c = 0; c < nl; c++)
                pl->knob[pl->nknob++] = (slo_knob){.ssd = o->nssd ? o->ssd[a] : 0,
                                                   .remote = o->nremote ? o->remote[b] : 0,
                                                   .load = o->nload ? o->load[c] : pl->load0};
    size_t u = 0, cap = sizeof pl->grid;
    if (o->nssd) u = axis(pl->grid, u, cap, "kvstore.ssd_bytes", o->ssd, NULL, o->nssd);
    if (o->nremote) u = axis(pl->grid, u, cap, "kvstore.remote.bytes", o->remote, NULL, o->nremote);
    axis(pl->grid, u, cap, "kvstore.load", NULL, loads, nl);
    return 0;
}

int slo_open_db(slo_plan *pl, sim_err *err)
{
    if (pl->o->db) return snprintf(pl->db, sizeof pl->db, "%s", pl->o->db), 0;
    const char *tmp = getenv("TMPDIR");
    snprintf(pl->tmpdir, sizeof pl->tmpdir, "%s/kvsim-plan-slo-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(pl->tmpdir)) {
        int rc = sim_errf(err, "temporary folder %s: cannot create it", pl->tmpdir);
        pl->tmpdir[0] = 0;
        return rc;
    }
    snprintf(pl->db, sizeof pl->db, "%s/plan.db", pl->tmpdir);
    return 0;
}

/* The `kvsim run` lines of the cheapest point and of the frontier's. */
static void reproduce(slo_plan *pl)
{
    sim_slo_result *r = pl->r;
    const sim_slo_point *p = &r->pts[r->cheapest];
    char *c = slo_command(pl, p->prefill, p->decode, p->dram_level, p->knob);
    snprintf(r->command, sizeof r->command, "%s", c);
    free(c);
    for (int lv = 0; lv < r->nlisted; lv++)
        if (r->frontier[lv] >= 0) {
            const sim_slo_point *f = &r->pts[r->frontier[lv]];
            r->frontier_command[lv] = slo_command(pl, f->prefill, f->decode, f->dram_level, f->knob);
        }
}

int sim_slo_plan(const sim_slo_opts *o, sim_slo_result *r, sim_err *err)
{
    *r = (sim_slo_result){.cheapest = -1, .cliff_pass = -1, .cliff_fail = -1, .recommended = -1};
    for (int i = 0; i < SIM_SLO_MAX_LEVELS; i++) r->frontier[i] = -1;
    slo_plan pl = {.o = o, .r = r};
    sim_config cfg = {0};
    double t0 = sim_wall_seconds();
    int rc = check_opts(o, err) || setup(&pl, &cfg, err) || slo_floor(&pl, &cfg, err) ? -1 : 0;
    sim_config_free(&cfg);
    if (rc == 0 && pl.agg) rc = agg_knobs(&pl, err);
    else if (rc == 0) disagg_knobs(&pl);
    if (rc == 0 && pl.ncpp > 0) rc = slo_open_db(&pl, err) || (pl.agg ? slo_search_agg : slo_search)(&pl, err) ? -1 : 0;
    if (rc == 0 && r->cheapest >= 0) reproduce(&pl);
    if (rc == 0 && r->cheapest >= 0) rc = slo_confirm(&pl, err);
    r->stop_signal = pl.stop_signal;
    if (pl.tmpdir[0]) sim_remove_tree(pl.tmpdir);
    for (int i = 0; i < pl.nbase; i++) free(pl.base[i]);
    free(pl.base);
    r->wall_seconds = sim_wall_seconds() - t0;
    return rc;
}

void sim_slo_free(sim_slo_result *r)
{
    for (int i = 0; i < SIM_SLO_MAX_LEVELS; i++) free(r->frontier_command[i]), r->frontier_command[i] = NULL;
    for (int i = 0; i < r->ncand; i++) free(r->cand[i].command);
    free(r->cand);
    r->cand = NULL;
    r->ncand = 0;
    free(r->pts);
    r->pts = NULL;
    r->npts = 0;
}
