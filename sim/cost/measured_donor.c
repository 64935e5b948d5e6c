/* sim/cost/measured_donor.c — when a preset's measured tables lack a shape
 * the model needs (gb200 has no MLA rows, h100_sxm no fp8_block ones), the
 * refusal names the nearest other bundled tables that hold it and the two
 * --set that price the run from them, scaled to this GPU
 * (hardware.optables_transfer, docs/measured.md §2). Only on that failing
 * path: it loads the candidates' tables. */
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cost/measured.h"
#include "sim/cost/measured_int.h"

/* How far a system's GPU is from this hardware's, by the two rates the
 * transfer scales with (docs/hardware.md §6: HBM and the node's link),
 * read from its meta.json; INFINITY when it states them not. */
static double roof_distance(const char *dir, const sim_hw *hw, int tp)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    json_t *meta = json_load_file(path, 0, NULL);
    double bw = json_number_value(json_object_get(json_object_get(meta, "gpu"), "mem_bw"));
    double link = json_number_value(json_object_get(json_object_get(meta, "node"), "intra_node_bw"));
    json_decref(meta);
    if (!(bw > 0) || !(link > 0) || !(hw->hbm_Bps > 0) || !(hw->link_peak_Bps > 0)) return INFINITY;
    return fabs(log(bw / (hw->hbm_Bps / tp))) + fabs(log(link / hw->link_peak_Bps));
}

typedef struct donor {
    char dir[PATH_MAX];
    double dist;
} donor;

static int by_distance(const void *a, const void *b)
{
    double x = ((const donor *)a)->dist, y = ((const donor *)b)->dist;
    return (x > y) - (x < y);
}

/* Whether the tables in dir hold every shape of this pricing (scaled to
 * hw when key.to says so: hardware.optables_transfer). */
static bool can_price(const measured_key *key, const char *dir, const sim_hw *hw)
{
    sim_err scratch = {0};
    sim_optable *t = sim_measured_tables_get(dir, key->glitch_ratio, &scratch);
    if (!t) return false;
    sim_measured *m = malloc(sizeof *m);
    memset(m, 0, offsetof(sim_measured, lin));
    m->key = *key, m->t = m->ar = t; /* a donor prices its all-reduces from its own rows */
    bool ok = sim_measured_fill(m, hw, &scratch) == 0;
    free(m);
    return ok;
}

/* The nearest system beside key's tables (configs/optables/) whose tables
 * price the run scaled, in HBM and link distance; appended to err. */
static void suggest_donor(const measured_key *key, const sim_hw *hw, sim_err *err)
{
    char buf[PATH_MAX], parent[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", key->tables);
    snprintf(parent, sizeof parent, "%s", dirname(buf)); /* "." for a bare folder name */
    struct dirent **ents = NULL;
    int n = scandir(parent, &ents, NULL, alphasort), nd = 0;
    donor *d = calloc(n > 0 ? (size_t)n : 1, sizeof *d);
    for (int i = 0; i < n; i++) {
        char dir[PATH_MAX];
        int len = snprintf(dir, sizeof dir, "%s/%s", parent, ents[i]->d_name);
        if (ents[i]->d_name[0] != '.' && len < (int)sizeof dir && strcmp(dir, key->tables)) {
            snprintf(d[nd].dir, sizeof d[nd].dir, "%s", dir);
            d[nd].dist = roof_distance(dir, hw, key->tp);
            if (isfinite(d[nd].dist)) nd++;
        }
        free(ents[i]);
    }
    free(ents);
    qsort(d, (size_t)nd, sizeof *d, by_distance);
    for (int i = 0; i < nd; i++) {
        measured_key k = *key;
        snprintf(k.tables, sizeof k.tables, "%s", d[i].dir);
        sim_measured_roof_of(hw, k.tp, &k.to);
        if (!can_price(&k, d[i].dir, hw)) continue;
        /* a bundled folder as the presets name it (tables_path finds it beside the configs) */
        size_t used = strlen(err->msg), pl = strlen(parent);
        bool bundled = pl >= 16 && !strcmp(parent + pl - 16, "configs/optables");
        snprintf(err->msg + used, sizeof err->msg - used,
                 "; or price it from the nearest tables that hold it, scaled to this GPU (docs/hardware.md §6): "
                 "--set hardware.optables='\"%s%s\"' --set hardware.optables_transfer=true",
                 bundled ? "configs/optables/" : "", bundled ? basename(d[i].dir) : d[i].dir);
        break;
    }
    free(d);
}

/* A mixture of experts whose fused MoE the own tables lack at this TP may
 * be measured split by experts instead (AIConfigurator measures
 * Qwen3-30B-A3B's experts at TP 1 to 4 and EP 2 to 128): say so, with the
 * --set that prices it so. vLLM's --enable-expert-parallel is a choice of
 * the deployment, not a price of the same one, hence a suggestion. */
static void suggest_expert_parallel(const measured_key *key, const sim_hw *hw, sim_err *err)
{
    if (key->ep || key->tp < 2 || sim_model_moe_layers(&key->model) == 0) return;
    measured_key k = *key;
    k.ep = true;
    if (!can_price(&k, k.tables, hw)) return;
    size_t used = strlen(err->msg);
    snprintf(err->msg + used, sizeof err->msg - used,
             "; or split the experts across the %d GPUs, as these tables measure them (vLLM's "
             "--enable-expert-parallel): --set cost.expert_parallel=true",
             key->tp);
}

/* A mixture of experts whose routing the own tables lack may be measured
 * under another (the a100 and l40s tables hold only the power laws): say
 * which, with its --set. The routing is a choice of the model's load, not
 * a price of the same one, hence a suggestion. */
static void suggest_distribution(const measured_key *key, const sim_hw *hw, sim_err *err)
{
    static const char *const dists[] = {"power_law_1.2", "power_law_1.01", "balanced"};
    if (sim_model_moe_layers(&key->model) == 0) return;
    for (size_t i = 0; i < sizeof dists / sizeof dists[0]; i++) {
        measured_key k = *key;
        if (!strcmp(k.dist, dists[i])) continue;
        snprintf(k.dist, sizeof k.dist, "%s", dists[i]);
        if (!can_price(&k, k.tables, hw)) continue;
        size_t used = strlen(err->msg);
        snprintf(err->msg + used, sizeof err->msg - used,
                 "; or a routing these tables measure: --set engine.measured.moe_distribution=%s", dists[i]);
        return;
    }
}

void sim_measured_suggest(const sim_config *cfg, const sim_hw *hw, sim_err *err)
{
    if (!err || !hw->optables[0] || hw->pp > 1 || hw->optables_transfer) return;
    measured_key key;
    sim_measured_key_of(cfg, hw, &key);
    sim_err scratch = {0};
    /* only when the own tables load and lack a shape: a broken file is its own error */
    if (!sim_measured_tables_get(key.tables, key.glitch_ratio, &scratch) || can_price(&key, key.tables, hw)) return;
    suggest_expert_parallel(&key, hw, err);
    suggest_distribution(&key, hw, err);
    suggest_donor(&key, hw, err);
}
