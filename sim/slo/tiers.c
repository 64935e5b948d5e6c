/* sim/slo/tiers.c — `kvsim plan tiers`: for one cluster (the config's
 * instances, hardware and model), how the prefix hit rate, TTFT p90,
 * goodput and price move with the size of one KV tier — DRAM
 * (kvstore.dram_bytes) or disk (kvstore.ssd_bytes) per node — on a log
 * grid, and the knee of the curve.
 *
 * The grid: the largest size (--max, default the node's own memory or
 * disks, hardware.dram_bytes or hardware.ssd_bytes: nothing larger can be
 * bought with the node) and each half of it below, --points sizes in all,
 * plus 0 (no tier) as the reference; every size is a timed `kvsim run`,
 * one sweep into the results database as `plan slo` runs its probes
 * (sim/slo/probe.c: slo_sweep). A cache's hit rate rises with its size and
 * flattens once it holds the reuse the trace has (or falls off a cliff
 * below the size of a reuse cycle under LRU, docs/planning-tiers.md), so the
 * knee is the smallest size whose hit rate is within --knee (default 0.95)
 * of the best hit rate on the grid: past it, more of the tier buys at most
 * the remaining 5% of what the tier can give. Its price an hour is the
 * cluster's (sim_slo_price: GPUs, plus DRAM and disk per GB-hour when the
 * preset prices them). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/outfile.h"
#include "sim/slo/slo_int.h"
#include "sim/trace/trace.h"

void sim_slo_tiers_opts_init(sim_tiers_opts *o)
{
    sim_slo_opts_init(&o->slo);
    o->points = 8;
    o->knee = 0.95;
}

/* The tier's grid top (--max, or what an instance has) and the other
 * tier's fixed size within what an instance has (sim_config_node_dram). */
static int check_sizes(const sim_tiers_opts *o, const sim_config *cfg, const sim_tiers *t, double *hi, sim_err *err)
{
    double mem = sim_config_node_dram(cfg), disk = sim_config_node_disk(cfg);
    double node = o->ssd ? disk : mem, other = o->ssd ? mem : disk;
    *hi = o->max > 0 ? o->max : node;
    char text[512];
    const char *fixed_key = o->ssd ? "kvstore.dram_bytes" : "kvstore.ssd_bytes";
    if (other > 0 && t->fixed > other * (1 + 1e-12)) { /* it once fixed 1 TB of DRAM on a 500 GB node, unsaid */
        sim_config_over_text(cfg, o->ssd, fixed_key, t->fixed, other, text, sizeof text);
        return sim_errf(err, "%s; give at most that (--set %s=SIZE), or a hardware preset with more", text, fixed_key);
    }
    if (!(*hi > 0)) return sim_errf(err, "%s gives no disk size (hardware.ssd_bytes): give --max", cfg->hw.name);
    if (!(node > 0 && *hi > node * (1 + 1e-12))) return 0;
    sim_config_over_text(cfg, !o->ssd, "--max", *hi, node, text, sizeof text);
    return sim_errf(err, "%s", text);
}

/* The cluster and prices of the config into t->r, and the sizes. */
static int tiers_setup(const sim_tiers_opts *o, slo_plan *pl, sim_tiers *t, sim_err *err)
{
    sim_config cfg;
    sim_slo_result *r = &t->r;
    if (sim_config_load(&cfg, o->slo.config, pl->base, pl->nbase, err)) return -1;
    r->aggregated = !strcmp(cfg.mode, "aggregated");
    snprintf(r->trace, sizeof r->trace, "%s", cfg.trace_path);
    snprintf(r->model, sizeof r->model, "%s", cfg.model.name);
    snprintf(r->hardware, sizeof r->hardware, "%s", cfg.hw.name);
    r->prefill_gpus = cfg.prefill_hw.gpus, r->decode_gpus = cfg.decode_hw.gpus;
    r->prefill_price = cfg.prefill_hw.price_per_hour, r->decode_price = cfg.decode_hw.price_per_hour;
    r->dram_price = cfg.hw.dram_price_GBh, r->ssd_price = cfg.hw.ssd_price_GBh;
    r->ssd_bytes = cfg.ssd_bytes;
    r->kv_bytes_per_token = sim_model_kv_bytes_per_token(&cfg.model);
    r->instances_per_node = cfg.lmc.cpu_per_node ? cfg.instances_per_node : 1;
    t->P = r->aggregated ? cfg.n_instances : cfg.n_prefill, t->D = r->aggregated ? 0 : cfg.n_decode;
    t->fixed = o->ssd ? cfg.dram_bytes : cfg.ssd_bytes;
    double hi = 0;
    int rc = check_sizes(o, &cfg, t, &hi, err);
    sim_config_free(&cfg);
    if (rc) return -1;
    t->n = o->points + 1;
    t->size[0] = 0;
    for (int i = 1; i < t->n; i++) t->size[i] = hi / pow(2, t->n - 1 - i);
    if (o->ssd) r->dram[0] = t->fixed, r->ndram = 1, r->ssd_bytes = 0; /* each point's disk is its own */
    else memcpy(r->dram, t->size, (size_t)t->n * sizeof *r->dram), r->ndram = t->n;
    r->nlisted = r->ndram;
    return sim_trace_fingerprint(r->trace, &r->fingerprint, err);
}

/* The sweep's grid over the tier's key. */
static void tiers_grid(const sim_tiers *t, bool ssd, char *g, size_t n)
{
    size_t u = (size_t)snprintf(g, n, "%s=", ssd ? "kvstore.ssd_bytes" : "kvstore.dram_bytes");
    for (int i = 0; i < t->n; i++) u += (size_t)snprintf(g + u, u < n ? n - u : 0, "%s%.17g", i ? "," : "", t->size[i]);
}

/* slo_sweep's reader: each size's run. */
static int read_sizes(slo_plan *pl, sim_results *db, char **sets, int n, const void *ctx, sim_err *err)
{
    sim_tiers *t = (sim_tiers *)ctx;
    bool ssd = t->ssd;
    char set[96], **all = sim_xcalloc((size_t)n + 1, sizeof *all);
    memcpy(all, sets, (size_t)n * sizeof *all);
    all[n] = set;
    int rc = 0;
    for (int i = 0; i < t->n && rc == 0; i++) {
        snprintf(set, sizeof set, "%s=%.17g", ssd ? "kvstore.ssd_bytes" : "kvstore.dram_bytes", t->size[i]);
        sim_slo_point *p = &t->pt[i];
        *p = (sim_slo_point){.prefill = t->P, .decode = t->D, .dram_level = ssd ? 0 : i, .ssd = ssd ? t->size[i] : 0};
        rc = slo_read_point(pl, db, all, n + 1, p, err);
    }
    free(all);
    return rc;
}

bool sim_slo_tiers_knee_at_top(const sim_tiers *t) { return t->knee >= 1 && t->knee == t->n - 1; }

/* The knee: the smallest size within o->knee of the best hit rate. */
static void find_knee(const sim_tiers_opts *o, sim_tiers *t)
{
    t->best_hit = 0;
    for (int i = 0; i < t->n; i++)
        if (t->pt[i].ran && t->pt[i].hit_rate > t->best_hit) t->best_hit = t->pt[i].hit_rate;
    t->knee = -1;
    for (int i = 0; i < t->n && t->knee < 0; i++)
        if (t->pt[i].ran && t->pt[i].hit_rate >= o->knee * t->best_hit) t->knee = i;
}

int sim_slo_tiers(const sim_tiers_opts *o, sim_tiers *t, sim_err *err)
{
    memset(t, 0, sizeof *t);
    t->ssd = o->ssd;
    if (o->points < 1 || o->points > SIM_TIERS_MAX - 1)
        return sim_errf(err, "--points: %d is not in [1, %d]", o->points, SIM_TIERS_MAX - 1);
    if (!(o->knee > 0 && o->knee <= 1)) return sim_errf(err, "--knee: %g is not in (0, 1]", o->knee);
    slo_plan pl = {.o = &o->slo, .r = &t->r};
    char grid[4096];
    slo_base_sets(&pl);
    int rc = tiers_setup(o, &pl, t, err);
    if (rc == 0) {
        if (o->ssd) { /* the DRAM stays the config's: the fixed cluster */
            char *d = sim_xmalloc(64);
            snprintf(d, 64, "kvstore.dram_bytes=%.17g", t->fixed);
            pl.base = sim_xrealloc(pl.base, (size_t)(pl.nbase + 1) * sizeof *pl.base);
            pl.base[pl.nbase++] = d;
        }
        tiers_grid(t, o->ssd, grid, sizeof grid);
        rc = slo_open_db(&pl, err) || slo_sweep(&pl, pl.base, pl.nbase, grid, read_sizes, t, err) ? -1 : 0;
    }
    if (rc == 0) find_knee(o, t);
    t->r.stop_signal = pl.stop_signal;
    if (pl.tmpdir[0]) sim_remove_tree(pl.tmpdir);
    for (int i = 0; i < pl.nbase; i++) free(pl.base[i]);
    free(pl.base);
    return rc;
}
