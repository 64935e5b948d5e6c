/* sim/slo/plan_slo.c — `kvsim plan slo` (sim/slo/plan_slo.h): checking
 * the options, the plan's setup (the resolved config, the sets every point
 * shares, the DRAM levels, the results database, a temporary one removed
 * at the end unless --db names one), the steps in order (floor.c,
 * search.c) and the `kvsim run` line that reproduces the cheapest point.
 * The targets' names are targets.c, the JSON of a result result.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/config/config.h"
#include "sim/config/scope.h"
#include "sim/outfile.h"
#include "sim/slo/slo_int.h"
#include "sim/trace/trace.h"

/* The keys the search sets itself may not come through --set. */
static int check_sets(const sim_slo_opts *o, sim_err *err)
{
    static const char *const searched[] = {"cluster.prefill",   "cluster.decode", "kvstore.dram_bytes", "cluster.scope",
                                           "cluster.cpp_group", "trace.path",     "trace.speed"};
    for (int i = 0; i < o->nsets; i++)
        for (size_t k = 0; k < sizeof searched / sizeof searched[0]; k++) {
            size_t n = strlen(searched[k]);
            if (!strncmp(o->sets[i], searched[k], n) && o->sets[i][n] == '=')
                return sim_errf(err,
                                "--set %s: plan slo sets %s itself (use --trace, --speed, --max-instances, "
                                "--dram, --scopes, --cpp)",
                                o->sets[i], searched[k]);
        }
    return 0;
}

static int check_opts(const sim_slo_opts *o, sim_err *err)
{
    bool any = o->attainment > 0;
    for (int t = 0; t < SIM_SLO_NTARGETS; t++) any |= o->target[t] > 0;
    if (!any) return sim_errf(err, "no target: give at least one of --ttft-p90-ms, --tbt-p99-ms, ... (see --help)");
    if (o->max_instances < 2 || o->max_instances > 4096)
        return sim_errf(err, "--max-instances: %d is not in [2, 4096]", o->max_instances);
    if (o->nscope < 1 || o->ncpp < 1) return sim_errf(err, "--scopes and --cpp need at least one value");
    return check_sets(o, err);
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
static void base_sets(slo_plan *pl)
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

/* The resolved config's setup into r; the DRAM levels, descending. */
static int setup(slo_plan *pl, sim_config *cfg, sim_err *err)
{
    const sim_slo_opts *o = pl->o;
    sim_slo_result *r = pl->r;
    base_sets(pl);
    if (sim_config_load(cfg, o->config, pl->base, pl->nbase, err)) return -1;
    if (strcmp(cfg->mode, "disaggregated"))
        return sim_errf(err, "cluster.mode is '%s': plan slo sizes disaggregated clusters", cfg->mode);
    snprintf(r->trace, sizeof r->trace, "%s", cfg->trace_path);
    snprintf(r->model, sizeof r->model, "%s", cfg->model.name);
    if (cfg->hetero)
        snprintf(r->hardware, sizeof r->hardware, "%.20s prefill + %.20s decode", cfg->prefill_hw.name,
                 cfg->decode_hw.name);
    else snprintf(r->hardware, sizeof r->hardware, "%s", cfg->hw.name);
    r->prefill_gpus = cfg->prefill_hw.gpus, r->decode_gpus = cfg->decode_hw.gpus;
    r->prefill_price = cfg->prefill_hw.price_per_hour, r->decode_price = cfg->decode_hw.price_per_hour;
    r->speed = cfg->trace.speed;
    r->gpus_per_instance = cfg->hw.gpus;
    r->tp = cfg->hw.tp, r->pp = cfg->hw.pp;
    r->kv_bytes_per_token = sim_model_kv_bytes_per_token(&cfg->model);
    r->hw_dram_bytes = cfg->hw.dram_bytes;
    r->block_tokens = cfg->block_tokens;
    r->cpp_threshold = cfg->cpp_threshold;
    r->slo_ttft_ms = cfg->slo_ttft_ms;
    r->slo_tbt_ms = cfg->slo_tbt_ms;
    for (int i = 0; i < o->ndram; i++) r->dram[r->ndram++] = o->dram[i];
    for (int i = 0; o->ndram == 0 && i < 4; i++) r->dram[r->ndram++] = cfg->hw.dram_bytes / (1 << i);
    qsort(r->dram, (size_t)r->ndram, sizeof r->dram[0], cmp_desc);
    int k = 0; /* each level once */
    for (int i = 0; i < r->ndram; i++)
        if (i == 0 || r->dram[i] != r->dram[k - 1]) r->dram[k++] = r->dram[i];
    r->ndram = k;
    return sim_trace_fingerprint(cfg->trace_path, &r->fingerprint, err);
}

/* The knobs of every probe, CPP first so that a probe's first feasible
 * point is the one with the least pipeline parallelism. */
static void knob_grid(slo_plan *pl)
{
    size_t n = (size_t)snprintf(pl->grid, sizeof pl->grid, "cluster.cpp_group=");
    for (int i = 0; i < pl->ncpp; i++)
        n += (size_t)snprintf(pl->grid + n, sizeof pl->grid - n, "%s%d", i ? "," : "", pl->cpp[i]);
    n += (size_t)snprintf(pl->grid + n, sizeof pl->grid - n, ";cluster.scope=");
    for (int k = 0; k < pl->o->nscope; k++)
        n += (size_t)snprintf(pl->grid + n, sizeof pl->grid - n, "%s%s", k ? "," : "",
                              kv_scope_name((kv_scope)pl->o->scope[k]));
}

static int open_db(slo_plan *pl, sim_err *err)
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

/* Append arg to buf as a shell word (sim_sh_word), after a space. */
static size_t shell_arg(char *buf, size_t used, size_t n, const char *arg)
{
    if (used >= n) return used;
    char *q = sim_sh_word(arg);
    used += (size_t)snprintf(buf + used, n - used, " %s", q);
    free(q);
    return used;
}

/* The `kvsim run` line of the cheapest point. */
static void reproduce(slo_plan *pl)
{
    const sim_slo_opts *o = pl->o;
    sim_slo_result *r = pl->r;
    const sim_slo_point *p = &r->pts[r->cheapest];
    char *c = r->command, v[128];
    size_t n = sizeof r->command, u = (size_t)snprintf(c, n, "kvsim run");
    const char *fixed[] = {"--trace", o->trace ? o->trace : r->trace, "--config", o->config, "--speed", o->speed};
    for (int i = 0; i < 6; i += 2)
        if (fixed[i + 1]) u = shell_arg(c, shell_arg(c, u, n, fixed[i]), n, fixed[i + 1]);
    for (int i = 0; i < o->nsets; i++) u = shell_arg(c, shell_arg(c, u, n, "--set"), n, o->sets[i]);
    snprintf(v, sizeof v, " --set cluster.prefill=%d --set cluster.decode=%d --set kvstore.dram_bytes=%.17g",
             p->prefill, p->decode, r->dram[p->dram_level]);
    u += (size_t)snprintf(c + u, u < n ? n - u : 0, "%s", v);
    snprintf(c + u, u < n ? n - u : 0, " --set cluster.scope=%s --set cluster.cpp_group=%d",
             kv_scope_name((kv_scope)p->scope), p->cpp);
}

int sim_slo_plan(const sim_slo_opts *o, sim_slo_result *r, sim_err *err)
{
    *r = (sim_slo_result){.cheapest = -1};
    for (int i = 0; i < SIM_SLO_MAX_LIST; i++) r->frontier[i] = -1;
    slo_plan pl = {.o = o, .r = r};
    sim_config cfg = {0};
    double t0 = sim_wall_seconds();
    int rc = check_opts(o, err) || setup(&pl, &cfg, err) || slo_floor(&pl, &cfg, err) ? -1 : 0;
    sim_config_free(&cfg);
    knob_grid(&pl);
    if (rc == 0 && pl.ncpp > 0) rc = open_db(&pl, err) || slo_search(&pl, err) ? -1 : 0;
    if (rc == 0 && r->cheapest >= 0) reproduce(&pl);
    r->stop_signal = pl.stop_signal;
    if (pl.tmpdir[0]) sim_remove_tree(pl.tmpdir);
    for (int i = 0; i < pl.nbase; i++) free(pl.base[i]);
    free(pl.base);
    r->wall_seconds = sim_wall_seconds() - t0;
    return rc;
}

void sim_slo_free(sim_slo_result *r)
{
    free(r->pts);
    r->pts = NULL;
    r->npts = 0;
}
