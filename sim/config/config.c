/* sim/config/config.c — loading, merging, validating and typing the run config.
 *
 * The JSON tree is merged first (defaults ← file ← presets ← --set), then
 * read once into the typed struct sim_config through tables of typed fields,
 * so every key's type error names the key. */
#include "sim/config/config.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "sim/config/schema.h"

/* ---- JSON paths ---------------------------------------------------------- */

static json_t *json_path_get(const json_t *root, const char *path) { return (json_t *)sim_config_path_get(root, path); }

/* Keys below these paths are free-form (validated by their consumers). */
/* path is prefix or lies below it ("modelfoo" is not below "model"). */
static bool is_under(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);
    return !strncmp(path, prefix, n) && (path[n] == 0 || path[n] == '.');
}

static bool is_free_form(const char *path)
{
    return is_under(path, "policy.params") || is_under(path, "model") || is_under(path, "hardware");
}

/* Every dotted key path of the schema (the defaults), for "did you mean". */
static void schema_paths(const json_t *obj, const char *prefix, char ***out, size_t *n, size_t *cap)
{
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)obj, key, val)
    {
        char path[256];
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", key);
        if (*n == *cap) *out = sim_xrealloc(*out, (*cap = *cap ? 2 * *cap : 128) * sizeof **out);
        (*out)[(*n)++] = sim_xstrdup(path);
        if (json_is_object(val)) schema_paths(val, path, out, n, cap);
    }
}

/* "unknown config key 'PATH' (did you mean ...?)", or, with no key close
 * enough to suggest, where the keys are listed. */
static int unknown_key(const char *origin, const json_t *root_schema, const char *path, sim_err *err)
{
    char **paths = NULL;
    size_t n = 0, cap = 0;
    schema_paths(root_schema, "", &paths, &n, &cap);
    const char *mean = sim_did_you_mean(path, (const char *const *)paths, n);
    int rc = sim_errf(err, "%s: unknown config key '%s'%s", origin, path,
                      *mean ? mean : " (kvsim config --schema lists the keys)");
    for (size_t i = 0; i < n; i++) free(paths[i]);
    free(paths);
    return rc;
}

/* Merge src into dst; every key of src must exist in schema (the defaults). */
static int merge_checked(json_t *dst, const json_t *src, const json_t *schema, const json_t *root_schema,
                         const char *prefix, const char *origin, sim_err *err)
{
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)src, key, val)
    {
        char path[256];
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", key);
        const json_t *sch = schema ? json_object_get(schema, key) : NULL;
        if (!sch && !is_free_form(path)) return unknown_key(origin, root_schema, path, err);
        json_t *cur = json_object_get(dst, key);
        if (json_is_object(val) && json_is_object(cur) && strcmp(path, "model") && strcmp(path, "hardware")) {
            if (merge_checked(cur, val, sch, root_schema, path, origin, err)) return -1;
        } else {
            json_object_set_new(dst, key, json_deep_copy(val));
        }
    }
    return 0;
}

/* Set root[path] = value, creating the objects on the way that are free-form
 * (policy.params, model, hardware) or the schema's (an earlier --set may have
 * replaced their parent by an object without them). */
static int set_path(json_t *root, const json_t *schema, const char *path, json_t *value, sim_err *err)
{
    char prefix[256];
    json_t *parent = root;
    const char *leaf = path;
    for (const char *dot; (dot = strchr(leaf, '.')) != NULL; leaf = dot + 1) {
        snprintf(prefix, sizeof prefix, "%.*s", (int)(dot - path), path);
        const char *tok = prefix + (leaf - path);
        json_t *next = json_object_get(parent, tok);
        if (!next && (is_free_form(prefix) || json_is_object(json_path_get(schema, prefix))))
            if (json_object_set_new(parent, tok, next = json_object())) next = NULL; /* it was freed */
        if (!json_is_object(next)) {
            json_decref(value);
            return unknown_key("--set", schema, path, err);
        }
        parent = next;
    }
    if (!json_path_get(schema, path) && !is_free_form(path)) {
        json_decref(value);
        return unknown_key("--set", schema, path, err);
    }
    if (json_object_set_new(parent, leaf, value)) return sim_errf(err, "--set '%s': cannot set this key", path);
    return 0;
}

/* Valid UTF-8 (JSON keys and strings must be): jansson's own check. */
static bool is_utf8(const char *s)
{
    json_t *j = json_string(s);
    json_decref(j);
    return j != NULL;
}

static int apply_set(json_t *root, const json_t *schema, const char *set, sim_err *err)
{
    const char *eq = strchr(set, '=');
    if (!eq || eq == set) return sim_errf(err, "--set '%s': expected key.path=value", set);
    if (!is_utf8(set)) return sim_errf(err, "--set '%s': not valid UTF-8", set);
    char path[256];
    if (eq - set >= (ptrdiff_t)sizeof path) return sim_errf(err, "--set: key longer than %zu bytes", sizeof path - 1);
    snprintf(path, sizeof path, "%.*s", (int)(eq - set), set);
    if (path[0] == '.' || path[strlen(path) - 1] == '.' || strstr(path, ".."))
        return sim_errf(err, "--set '%s': '%s' has an empty key (key.path=value)", set, path);
    json_t *value = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
    if (!value) value = json_string(eq + 1);
    return set_path(root, schema, path, value, err);
}

/* A config, default config or preset file as a JSON object; a file that
 * cannot be read says where one comes from. */
static json_t *load_json_file(const char *path, const char *what, sim_err *err)
{
    json_error_t je;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    const char *next = je.line > 0                      ? NULL
                       : !strcmp(what, "config")        ? "kvsim config prints a complete config to start from"
                       : strcmp(what, "default config") ? NULL
                                                        : "run kvsim from its repository, or make install, or set "
                                                          "KVSIM_CONFIG_DIR to a configs folder";
    if (!j) sim_json_file_errf(err, what, path, je.line, je.text, next);
    else if (!json_is_object(j)) {
        json_decref(j);
        j = NULL;
        sim_errf(err, "%s %s: expected a JSON object", what, path);
    }
    return j;
}

/* Replace a preset name at root[key] by the preset's object. */
static int resolve_preset(json_t *root, const char *key, const char *kind, sim_err *err)
{
    json_t *v = json_object_get(root, key);
    if (json_is_object(v)) return 0;
    if (!json_is_string(v)) return sim_errf(err, "config key '%s': expected a preset name or an object", key);
    char path[PATH_MAX];
    if (sim_preset_path(kind, json_string_value(v), path, sizeof path, err)) return -1;
    json_t *obj = load_json_file(path, kind, err);
    if (!obj) return -1;
    json_object_set_new(root, key, obj);
    return 0;
}

/* ---- typed reads ----------------------------------------------------------- */

int sim_json_size(const json_t *root, const char *path, double *out, sim_err *err)
{
    const json_t *v = json_path_get(root, path);
    if (json_is_number(v)) {
        *out = json_number_value(v);
        if (*out < 0) return sim_errf(err, "config key '%s': %g is negative", path, *out);
        return 0;
    }
    if (json_is_string(v)) return sim_parse_size(json_string_value(v), path, out, err);
    return sim_errf(err, "config key '%s': %s", path, v ? "expected a number or size" : "missing");
}

static int get_num(const json_t *root, const char *path, double *out, sim_err *err)
{
    const json_t *v = json_path_get(root, path);
    if (!json_is_number(v)) return sim_errf(err, "config key '%s': %s", path, v ? "expected a number" : "missing");
    *out = json_number_value(v);
    return 0;
}

/* An integer key (its range is the schema's, checked before). */
static int get_int(const json_t *root, const char *path, int64_t *out, sim_err *err)
{
    double d = 0;
    if (get_num(root, path, &d, err)) return -1;
    *out = (int64_t)d;
    return 0;
}

static int get_str(const json_t *root, const char *path, char *buf, size_t n, sim_err *err)
{
    const json_t *v = json_path_get(root, path);
    if (!json_is_string(v)) return sim_errf(err, "config key '%s': %s", path, v ? "expected a string" : "missing");
    if (strlen(json_string_value(v)) >= n) return sim_errf(err, "config key '%s': value too long", path);
    snprintf(buf, n, "%s", json_string_value(v));
    return 0;
}

static int get_bool(const json_t *root, const char *path, bool *out, sim_err *err)
{
    const json_t *v = json_path_get(root, path);
    if (!json_is_boolean(v))
        return sim_errf(err, "config key '%s': %s", path, v ? "expected true or false" : "missing");
    *out = json_is_true(v);
    return 0;
}

/* Tables of typed fields: one line per config key. */
typedef struct num_field {
    const char *path;
    size_t off;
    double scale; /* from the key's unit to the struct's (ms → s) */
} num_field;
typedef struct str_field {
    const char *path;
    size_t off;
    size_t len;
} str_field;

#define CF(field) offsetof(sim_config, field)
#define HF(field) offsetof(sim_hw, field)

static const num_field config_nums[] = {
    {"slo.ttft_ms", CF(slo_ttft_ms), 1},
    {"slo.tbt_ms", CF(slo_tbt_ms), 1},
    {"cost.prefill_mfu", CF(prefill_mfu), 1},
    {"cost.decode_overhead_ms", CF(decode_overhead_s), 1e-3},
    {"cost.prefill_chunk_overhead_ms", CF(chunk_overhead_s), 1e-3},
    {"cost.transfer_latency_us", CF(transfer_latency_s), 1e-6},
    {"engine.iter_overhead_ms", CF(iter_overhead_s), 1e-3},
    {"engine.seq_overhead_ms", CF(seq_overhead_s), 1e-3},
    {"engine.frontend_ms", CF(frontend_s), 1e-3},
    {"engine.measured.iter_overhead_ms", CF(m_iter_overhead_s), 1e-3},
    {"engine.measured.seq_overhead_ms", CF(m_seq_overhead_s), 1e-3},
    {"engine.measured.frontend_ms", CF(m_frontend_s), 1e-3},
    {"engine.measured.moe_jit_compile_ms", CF(moe_jit_compile_s), 1e-3},
    {"engine.measured.glitch_ratio", CF(glitch_ratio), 1},
    {"cost.noise", CF(noise), 1},
    {"cost.expert_imbalance", CF(expert_imbalance), 1},
    {"kvstore.pic_cacheblend_ratio", CF(pic_cacheblend_ratio), 1},
    {"cost.estimator_noise", CF(estimator_noise), 1},
    {"metrics.sample_period_ms", CF(sample_period_s), 1e-3},
    {"metrics.sample_rows_per_s", CF(sample_rows_per_s), 1},
    {"cluster.decode_hbm_frac", CF(decode_hbm_frac), 1},
    {"cluster.switch_ms", CF(switch_s), 1e-3},
    {"metrics.replica_period_ms", CF(replica_period_s), 1e-3},
    {"limits.event_budget", CF(event_budget), 1},
};

static const num_field hw_nums[] = {
    {"tflops_per_gpu", HF(flops), 1e12},         {"hbm_bytes_per_gpu", HF(hbm_bytes), 1},
    {"hbm_GBps_per_gpu", HF(hbm_Bps), 1e9},      {"h2d_GBps", HF(h2d_Bps), 1e9},
    {"nic_Gbps", HF(nic_Bps), 1e9 / 8},          {"dram_bytes", HF(dram_bytes), 1},
    {"ssd_read_GBps", HF(ssd_read_Bps), 1e9},    {"ssd_write_GBps", HF(ssd_write_Bps), 1e9},
    {"ssd_latency_us", HF(ssd_latency_s), 1e-6},
};

static const str_field config_strs[] = {
    {"cluster.mode", CF(mode), sizeof((sim_config *)0)->mode},
    {"kvstore.pic", CF(pic), sizeof((sim_config *)0)->pic},
    {"kvstore.eviction", CF(eviction), sizeof((sim_config *)0)->eviction},
    {"policy.router", CF(router), sizeof((sim_config *)0)->router},
    {"policy.decode", CF(decode_policy), sizeof((sim_config *)0)->decode_policy},
    {"policy.admission", CF(admission), sizeof((sim_config *)0)->admission},
    {"policy.pd_controller", CF(pd_controller), sizeof((sim_config *)0)->pd_controller},
    {"trace.path", CF(trace_path), sizeof((sim_config *)0)->trace_path},
};

static int read_nums(const json_t *root, const char *prefix, const num_field *f, size_t n, void *base, sim_err *err)
{
    for (size_t i = 0; i < n; i++) {
        char path[128];
        double v = 0;
        snprintf(path, sizeof path, "%s%s", prefix, f[i].path);
        if (get_num(root, path, &v, err)) return -1;
        *(double *)((char *)base + f[i].off) = v * f[i].scale;
    }
    return 0;
}

/* A number of the hardware object that may be absent (older inline objects):
 * def then. The schema has range-checked it when present. */
static double hw_opt(const json_t *h, const char *key, double def)
{
    const json_t *v = json_object_get(h, key);
    return json_is_number(v) ? json_number_value(v) : def;
}

/* The decode-cost keys of docs/cost-model.md; absent ones keep the older
 * model (peak HBM bandwidth, no all-reduce term). */
static int read_hw_optional(const json_t *h, sim_hw *hw, sim_err *err)
{
    hw->hbm_efficiency = hw_opt(h, "hbm_efficiency", 1);
    hw->link_peak_Bps = hw_opt(h, "nvlink_GBps_per_gpu", 0) * 1e9;
    hw->link_Bps = hw->link_peak_Bps * hw_opt(h, "nvlink_efficiency", 1);
    hw->allreduce_latency_s = hw_opt(h, "allreduce_latency_us", 0) * 1e-6;
    if (hw->hbm_efficiency <= 0 || hw->hbm_efficiency > 1)
        return sim_errf(err, "config key 'hardware.hbm_efficiency': %g is out of range (0, 1]", hw->hbm_efficiency);
    return 0;
}

static int read_hw(const json_t *root, sim_hw *hw, sim_err *err)
{
    const json_t *h = json_object_get(root, "hardware");
    int64_t gpus;
    memset(hw, 0, sizeof *hw);
    const char *hname = json_string_value(json_object_get(h, "name"));
    snprintf(hw->name, sizeof hw->name, "%s", hname ? hname : "inline");
    if (get_int(root, "hardware.gpus_per_node", &gpus, err)) return -1;
    if (read_nums(root, "hardware.", hw_nums, sizeof hw_nums / sizeof hw_nums[0], hw, err)) return -1;
    hw->price_per_hour = hw_opt(h, "price_per_hour", 0);
    hw->dram_price_GBh = hw_opt(h, "dram_price_per_GB_hour", 0);
    hw->ssd_price_GBh = hw_opt(h, "ssd_price_per_GB_hour", 0);
    hw->ssd_bytes = hw_opt(h, "ssd_bytes", 0);
    if (read_hw_optional(h, hw, err)) return -1;
    hw->gpus = (int)gpus;
    hw->flops *= gpus;
    hw->hbm_bytes *= gpus;
    hw->hbm_Bps *= gpus;
    const json_t *cal = json_object_get(h, "calibration");
    if (cal && !json_is_null(cal)) {
        if (!json_is_string(cal)) return sim_errf(err, "config key 'hardware.calibration': expected a path");
        snprintf(hw->calibration, sizeof hw->calibration, "%s", json_string_value(cal));
    }
    const json_t *tab = json_object_get(h, "optables");
    if (tab && !json_is_null(tab)) {
        if (!json_is_string(tab)) return sim_errf(err, "config key 'hardware.optables': expected a folder path");
        snprintf(hw->optables, sizeof hw->optables, "%s", json_string_value(tab));
    }
    hw->optables_transfer = json_is_true(json_object_get(h, "optables_transfer"));
    const json_t *ar = json_object_get(h, "allreduce_optables");
    if (ar && !json_is_null(ar)) {
        if (!json_is_string(ar))
            return sim_errf(err, "config key 'hardware.allreduce_optables': expected a folder path");
        snprintf(hw->allreduce_optables, sizeof hw->allreduce_optables, "%s", json_string_value(ar));
    }
    if (hw->allreduce_optables[0] && !hw->optables[0])
        return sim_errf(err, "config key 'hardware.allreduce_optables': needs hardware.optables, the tables that price "
                             "every other operation (docs/measured.md §1)");
    if (hw->optables_transfer && !hw->optables[0])
        return sim_errf(err, "config key 'hardware.optables_transfer': true needs hardware.optables, the folder of "
                             "another GPU's measured tables to scale to this hardware (docs/hardware.md §6)");
    return 0;
}

/* Parallelism per instance (cluster.gpus_per_instance = g on nodes of G
 * GPUs; 0 or G: the whole node, as always). g < G, a divisor of G: tensor
 * parallel over g GPUs of a node, which gets g/G of the node's compute,
 * HBM and bandwidth and of its host links, NICs, DRAM and SSD (one PCIe
 * link and NIC per GPU, as the h100x2 preset). g > G, a multiple of G:
 * pipeline parallel over pp = g/G nodes, tensor parallel within each;
 * HBM, host links, NICs, DRAM and SSD of all pp nodes, but FLOP/s and HBM
 * bandwidth of one, since a batch passes the stages one after another
 * (kvsim interleaves no micro-batches: pipeline parallelism buys capacity,
 * not speed; the stage hops are the cost model's, sim/cost/cost.c). */
static int shape_instance(sim_hw *hw, int g, sim_err *err)
{
    int node = hw->gpus;
    hw->tp = node, hw->pp = 1;
    if (g == 0 || g == node) return 0;
    if (g < node ? node % g : g % node)
        return sim_errf(err,
                        "config key 'cluster.gpus_per_instance': %d GPUs on %s's nodes of %d: give a divisor of %d "
                        "(tensor parallel within a node) or a multiple of it (pipeline parallel across nodes)",
                        g, hw->name, node, node);
    double host = (double)g / node, dev = g < node ? host : 1;
    hw->flops *= dev, hw->hbm_Bps *= dev, hw->hbm_bytes *= host;
    hw->h2d_Bps *= host, hw->nic_Bps *= host, hw->dram_bytes *= host;
    hw->ssd_read_Bps *= host, hw->ssd_write_Bps *= host;
    hw->price_per_hour *= host, hw->ssd_bytes *= host;
    hw->gpus = g, hw->tp = g < node ? g : node, hw->pp = g < node ? 1 : g / node;
    return 0;
}

static int shape_instances(const json_t *root, sim_config *c, sim_err *err)
{
    int64_t g;
    if (get_int(root, "cluster.gpus_per_instance", &g, err)) return -1;
    return shape_instance(&c->hw, (int)g, err) || shape_instance(&c->prefill_hw, (int)g, err) ||
                   shape_instance(&c->decode_hw, (int)g, err)
               ? -1
               : 0;
}

/* One side of a disaggregated cluster (cluster.prefill_hardware or
 * cluster.decode_hardware): "" = the hardware; else a preset in
 * configs/hardware/ (or a path), its keys checked as `hardware`'s are and
 * read by read_hw. Errors name the key. */
static int read_side_hw(const json_t *root, const char *key, const sim_hw *base, sim_hw *out, sim_err *err)
{
    char name[PATH_MAX], path[PATH_MAX];
    if (get_str(root, key, name, sizeof name, err)) return -1;
    if (!name[0]) return *out = *base, 0;
    sim_err e = {{0}};
    json_t *obj = NULL, *tree = NULL;
    int rc = -1;
    if (!sim_preset_path("hardware", name, path, sizeof path, &e) && (obj = load_json_file(path, "hardware", &e))) {
        tree = json_pack("{s:o}", "hardware", obj);
        rc = sim_config_check_preset_keys(tree, "hardware", &e) || read_hw(tree, out, &e) ? -1 : 0;
    }
    json_decref(tree);
    return rc ? sim_errf(err, "config key '%s': %s", key, e.msg) : 0;
}

static int read_sides(const json_t *root, sim_config *c, sim_err *err)
{
    if (read_side_hw(root, "cluster.prefill_hardware", &c->hw, &c->prefill_hw, err) ||
        read_side_hw(root, "cluster.decode_hardware", &c->hw, &c->decode_hw, err))
        return -1;
    c->hetero = memcmp(&c->prefill_hw, &c->hw, sizeof c->hw) || memcmp(&c->decode_hw, &c->hw, sizeof c->hw);
    if (c->hetero && !strcmp(c->mode, "aggregated"))
        return sim_errf(err, "config keys 'cluster.prefill_hardware' and 'cluster.decode_hardware' split a "
                             "disaggregated cluster's hardware; cluster.mode 'aggregated' runs both phases on "
                             "`hardware`: leave them \"\" or use cluster.mode=disaggregated");
    return 0;
}

/* One of `names` (NULL-terminated) at path: its index. */
static int get_choice(const json_t *root, const char *path, const char *const *names, int *out, sim_err *err)
{
    char s[32], all[128] = "";
    if (get_str(root, path, s, sizeof s, err)) return -1;
    for (int i = 0; names[i]; i++) {
        if (!strcmp(s, names[i])) return *out = i, 0;
        snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", i ? "|" : "", names[i]);
    }
    return sim_errf(err, "config key '%s': '%s' is not one of %s", path, s, all);
}

const char *const sim_load_names[SIM_LOAD_N + 1] = {"always", "never", "adaptive", "balanced", NULL};

/* kvstore.lmcache and its keys (docs/lmcache.md). */
static int read_lmcache(const json_t *root, sim_config *c, sim_err *err)
{
    static const char *const scopes[] = {"instance", "node", NULL}, *const transfers[] = {"chunk", "page", NULL},
                             *const *const loads = sim_load_names;
    struct sim_lmcache_cfg *l = &c->lmc;
    int64_t chunk, per_node;
    int scope, transfer;
    double gbps = 0, lat = 0;
    if (get_bool(root, "kvstore.lmcache", &l->on, err) || get_bool(root, "kvstore.prefetch", &l->prefetch, err) ||
        get_int(root, "kvstore.chunk_tokens", &chunk, err) ||
        get_int(root, "cluster.instances_per_node", &per_node, err) ||
        get_choice(root, "kvstore.cpu_scope", scopes, &scope, err) ||
        get_choice(root, "kvstore.transfer", transfers, &transfer, err) ||
        get_choice(root, "kvstore.load", loads, &l->load, err) ||
        sim_json_size(root, "kvstore.remote.bytes", &l->remote_bytes, err) ||
        get_num(root, "kvstore.remote.Gbps", &gbps, err) || get_num(root, "kvstore.remote.latency_us", &lat, err))
        return -1;
    l->chunk_tokens = (int)chunk;
    c->instances_per_node = (int)per_node;
    l->cpu_per_node = scope == 1;
    l->page_transfer = transfer == 1;
    l->remote_Bps = gbps * 1e9 / 8;
    l->remote_latency_s = lat * 1e-6;
    if (!l->on) return 0;
    if (strcmp(c->mode, "aggregated"))
        return sim_errf(err, "config key 'kvstore.lmcache': the LMCache layer serves aggregated instances (set "
                             "cluster.mode = \"aggregated\")");
    if (sim_config_chunk_pages_check(c, err)) return -1;
    if (chunk % c->trace.block_tokens && c->trace.block_tokens % chunk)
        return sim_errf(err,
                        "config key 'kvstore.chunk_tokens': %lld and trace.block_tokens (%d) must divide one "
                        "another",
                        (long long)chunk, c->trace.block_tokens);
    return 0;
}

int sim_config_chunk_pages_check(const sim_config *c, sim_err *err)
{
    if (c->lmc.chunk_tokens % c->pic_block_tokens == 0) return 0;
    return sim_errf(err,
                    "config key 'kvstore.chunk_tokens': %d is not a multiple of the page size "
                    "(kvstore.pic_block_tokens = %d)",
                    c->lmc.chunk_tokens, c->pic_block_tokens);
}

static int read_scope(const json_t *root, kv_scope *out, sim_err *err)
{
    char s[16];
    if (get_str(root, "cluster.scope", s, sizeof s, err)) return -1;
    if (kv_scope_from_name(s, out)) return sim_errf(err, "config key 'cluster.scope': '%s' is not global or local", s);
    return 0;
}

static int read_ints(const json_t *root, sim_config *c, sim_err *err)
{
    int64_t p, d, chunk, batch, bt, tbt, samples, limit, seed, cpp, cpp_min, pbt, pet, ninst, budget, graph;
    if (get_int(root, "cluster.prefill", &p, err) || get_int(root, "cluster.decode", &d, err) ||
        get_int(root, "cluster.prefill_chunk", &chunk, err) || get_int(root, "cluster.decode_max_batch", &batch, err) ||
        get_int(root, "cluster.cpp_group", &cpp, err) || get_int(root, "cluster.cpp_threshold", &cpp_min, err) ||
        get_int(root, "kvstore.block_tokens", &bt, err) || get_int(root, "trace.block_tokens", &tbt, err) ||
        get_int(root, "kvstore.pic_block_tokens", &pbt, err) || get_int(root, "cluster.instances", &ninst, err) ||
        get_int(root, "engine.max_num_batched_tokens", &budget, err) ||
        get_int(root, "engine.measured.cuda_graph_max_tokens", &graph, err) ||
        get_int(root, "kvstore.pic_epic_tokens", &pet, err) || get_int(root, "cost.estimator_samples", &samples, err) ||
        get_int(root, "trace.limit", &limit, err) || get_int(root, "seed", &seed, err))
        return -1;
    c->n_prefill = (int)p;
    c->n_decode = (int)d;
    c->prefill_chunk = (int)chunk;
    c->cpp_group = (int)cpp;
    c->cpp_threshold = (int)cpp_min;
    c->decode_max_batch = (int)batch;
    c->block_tokens = (int)bt;
    c->pic_block_tokens = (int)pbt;
    c->n_instances = ninst ? (int)ninst : (int)(p + d);
    c->max_num_batched_tokens = (int)budget;
    /* vLLM's default capture limit (vllm/config/vllm.py, _set_cudagraph_sizes):
     * min(2 × max_num_seqs, 512), and no larger than the token budget */
    int64_t vllm_max = 2 * batch < 512 ? 2 * batch : 512;
    c->cuda_graph_max_tokens = (int)(graph ? graph : vllm_max < budget ? vllm_max : budget);
    c->pic_epic_tokens = (int)pet;
    c->trace.block_tokens = (int)tbt;
    c->estimator_samples = (int)samples;
    c->trace.limit = limit;
    c->seed = (uint64_t)seed;
    c->trace.seed = (uint64_t)seed;
    return 0;
}

static int read_fault(const json_t *f, size_t i, int instances, sim_fault *out, sim_err *err)
{
    const json_t *at = json_object_get(f, "at_ms"), *inst = json_object_get(f, "instance"),
                 *down = json_object_get(f, "down_ms");
    if (!json_is_object(f) || json_object_size(f) != 3 || !at || !inst || !down)
        return sim_errf(err, "config key 'faults[%zu]': expected {\"at_ms\": T, \"instance\": I, \"down_ms\": D}", i);
    if (!json_is_number(at) || json_number_value(at) < 0)
        return sim_errf(err, "config key 'faults[%zu].at_ms': expected a time >= 0", i);
    if (!json_is_integer(inst) || json_integer_value(inst) < 0 || json_integer_value(inst) >= instances)
        return sim_errf(err, "config key 'faults[%zu].instance': expected an instance 0..%d", i, instances - 1);
    if (!json_is_number(down) || json_number_value(down) <= 0)
        return sim_errf(err, "config key 'faults[%zu].down_ms': expected a duration > 0", i);
    *out = (sim_fault){json_number_value(at) / 1e3, (int)json_integer_value(inst), json_number_value(down) / 1e3};
    return 0;
}

static int read_faults(sim_config *c, sim_err *err)
{
    const json_t *arr = json_object_get(c->root, "faults");
    if (!json_is_array(arr)) return sim_errf(err, "config key 'faults': expected an array");
    c->n_faults = (int)json_array_size(arr);
    c->faults = sim_xcalloc((size_t)c->n_faults + 1, sizeof *c->faults);
    for (size_t i = 0; i < json_array_size(arr); i++)
        if (read_fault(json_array_get(arr, i), i, c->n_prefill + c->n_decode, &c->faults[i], err)) return -1;
    return 0;
}

static int read_on_failure(const json_t *root, bool *retry, sim_err *err)
{
    char s[16];
    if (get_str(root, "cluster.on_failure", s, sizeof s, err)) return -1;
    if (strcmp(s, "retry") && strcmp(s, "lose"))
        return sim_errf(err, "config key 'cluster.on_failure': '%s' is not retry or lose", s);
    *retry = !strcmp(s, "retry");
    return 0;
}

/* decode.kv_allocation, decode.preemption, decode.kv_receive (sim/serving/disagg/flow.c). */
static int read_decode(const json_t *root, sim_config *c, sim_err *err)
{
    static const char *const allocs[] = {"reserve", "incremental", NULL};
    static const char *const preempts[] = {"recompute", "swap", NULL}, *const receives[] = {"hbm", "dram", NULL};
    int alloc, preempt, receive;
    if (get_choice(root, "decode.kv_allocation", allocs, &alloc, err) ||
        get_choice(root, "decode.preemption", preempts, &preempt, err) ||
        get_choice(root, "decode.kv_receive", receives, &receive, err))
        return -1;
    static const char *const firsts[] = {"prefill", "decode", NULL};
    int first;
    if (get_choice(root, "metrics.first_token", firsts, &first, err)) return -1;
    c->first_token_decode = first == 1;
    c->decode_kv_dram = receive == 1;
    c->decode_incremental = alloc == 1;
    c->decode_swap = preempt == 1;
    return 0;
}

/* A tier budget that holds not one block is almost surely a size given
 * without its unit (kvstore.dram_bytes=250 meaning 250GB): refused, naming
 * the block's bytes (issue 40 item 10). 0 keeps its meaning (tier absent).
 * (kvstore.hbm_bytes too small for one page has its own message, which
 * names the smallest request: sim/serving/disagg/pic.c.) */
static int check_tier_bytes(const sim_config *c, sim_err *err)
{
    const struct {
        const char *key;
        double bytes;
    } tiers[] = {{"kvstore.dram_bytes", c->dram_bytes},
                 {"kvstore.ssd_bytes", c->ssd_bytes},
                 {"kvstore.remote.bytes", c->lmc.remote_bytes}};
    int tokens = c->lmc.on && c->lmc.chunk_tokens < c->block_tokens ? c->lmc.chunk_tokens : c->block_tokens;
    double block = sim_model_kv_bytes_per_token(&c->model) * tokens;
    for (size_t i = 0; i < sizeof tiers / sizeof *tiers; i++)
        if (tiers[i].bytes > 0 && tiers[i].bytes < block)
            return sim_errf(err,
                            "config key '%s': %.17g bytes hold no block (a block of %d tokens of %s is %.17g bytes): "
                            "a missing unit? give e.g. %.17gGB (or 0 for no such tier)",
                            tiers[i].key, tiers[i].bytes, tokens, c->model.name, block, tiers[i].bytes);
    return 0;
}

static int read_typed(sim_config *c, sim_err *err)
{
    const json_t *root = c->root;
    if (sim_config_check_schema(root, err)) return -1;
    if (sim_model_from_json(json_object_get(root, "model"), &c->model, err)) return -1;
    if (read_hw(root, &c->hw, err) || read_ints(root, c, err) || read_scope(root, &c->scope, err)) return -1;
    if (read_nums(root, "", config_nums, sizeof config_nums / sizeof config_nums[0], c, err)) return -1;
    for (size_t i = 0; i < sizeof config_strs / sizeof config_strs[0]; i++)
        if (get_str(root, config_strs[i].path, (char *)c + config_strs[i].off, config_strs[i].len, err)) return -1;
    if (get_bool(root, "cluster.layerwise", &c->layerwise, err) ||
        get_bool(root, "kvstore.promote", &c->promote, err) ||
        get_bool(root, "trace.skip_bad", &c->trace.skip_bad, err) ||
        get_bool(root, "trace.sort", &c->trace.sort, err) ||
        get_bool(root, "metrics.request_rows", &c->request_rows, err) ||
        get_bool(root, "metrics.sample_rows", &c->sample_rows, err) ||
        get_bool(root, "engine.async_scheduling", &c->async_scheduling, err) ||
        get_bool(root, "engine.chunked_prefill", &c->chunked_prefill, err) ||
        get_bool(root, "engine.prefix_caching", &c->prefix_caching, err) ||
        get_bool(root, "cost.expert_parallel", &c->expert_parallel, err))
        return -1;
    if (sim_json_size(root, "kvstore.hbm_bytes", &c->hbm_bytes, err) ||
        sim_json_size(root, "kvstore.dram_bytes", &c->dram_bytes, err) ||
        sim_json_size(root, "kvstore.ssd_bytes", &c->ssd_bytes, err) ||
        get_num(root, "trace.speed", &c->trace.speed, err) || get_num(root, "trace.sample", &c->trace.sample, err))
        return -1;
    if (c->block_tokens != c->trace.block_tokens)
        return sim_errf(err,
                        "config keys 'kvstore.block_tokens' (%d) and 'trace.block_tokens' (%d) must agree: set "
                        "kvstore.block_tokens to the trace's (--set kvstore.block_tokens=%d)",
                        c->block_tokens, c->trace.block_tokens, c->trace.block_tokens);
    static const char *const computes[] = {"auto", "analytic", "profile", "engine", "measured", NULL};
    static const char *const replays[] = {"open", "closed", NULL};
    static const char *const resamples[] = {"none", "poisson", "sessions", NULL};
    static const char *const dists[] = {"power_law_1.2", "power_law_1.01", "balanced", NULL};
    int replay = 0, dist = 0;
    if (read_faults(c, err) || read_on_failure(root, &c->retry_on_failure, err) || read_lmcache(root, c, err) ||
        read_decode(root, c, err) || get_choice(root, "cost.compute", computes, &c->compute, err) ||
        get_choice(root, "trace.replay", replays, &replay, err) ||
        get_choice(root, "trace.resample", resamples, &c->trace.resample, err) ||
        get_choice(root, "engine.measured.moe_distribution", dists, &dist, err))
        return -1;
    snprintf(c->moe_distribution, sizeof c->moe_distribution, "%s", dists[dist]);
    c->closed_replay = replay == 1;
    if (read_sides(root, c, err) || shape_instances(root, c, err)) return -1;
    c->params = json_path_get(root, "policy.params");
    if (!json_is_object(c->params)) return sim_errf(err, "config key 'policy.params': expected an object");
    return check_tier_bytes(c, err);
}

static bool is_preset_set(const char *set) { return !strncmp(set, "model=", 6) || !strncmp(set, "hardware=", 9); }

static int build_tree(json_t *root, const char *config_path, char *const *sets, int nsets, sim_err *err)
{
    json_t *schema = json_deep_copy(root);
    int rc = -1;
    if (config_path) {
        json_t *user = load_json_file(config_path, "config", err);
        if (!user) goto out;
        rc = merge_checked(root, user, schema, schema, "", config_path, err);
        json_decref(user);
        if (rc) goto out;
        rc = -1;
    }
    for (int i = 0; i < nsets; i++)
        if (is_preset_set(sets[i]) && apply_set(root, schema, sets[i], err)) goto out;
    if (resolve_preset(root, "model", "models", err) || resolve_preset(root, "hardware", "hardware", err)) goto out;
    for (int i = 0; i < nsets; i++)
        if (!is_preset_set(sets[i]) && apply_set(root, schema, sets[i], err)) goto out;
    rc = 0;
out:
    json_decref(schema);
    return rc;
}

/* The bundled trace is named relative to the project ("traces/default.jsonl");
 * run from elsewhere (an installed kvsim, another working directory) it is
 * found beside the configs folder instead: <configs>/../traces/. Only the
 * default's own value is looked up so; any other relative path means the
 * working directory. */
static void find_bundled(json_t *root, const char *bundled)
{
    const char *p = json_string_value(json_path_get(root, "trace.path"));
    if (!p || strcmp(p, bundled) || bundled[0] == '/' || access(p, R_OK) == 0) return;
    char there[PATH_MAX * 2];
    const char *dir = sim_config_dir();
    size_t n = strlen(dir);
    if (n > 8 && !strcmp(dir + n - 8, "/configs")) /* <root>/configs: <root>/traces/..., no "/.." in it */
        snprintf(there, sizeof there, "%.*s/%s", (int)(n - 8), dir, bundled);
    else snprintf(there, sizeof there, "%s/../%s", dir, bundled);
    if (access(there, R_OK) == 0) json_object_set_new(json_object_get(root, "trace"), "path", json_string(there));
}

/* Each number of c that default.json has written as the default writes
 * it (an integer where default.json has one and the value is whole, a
 * real where it has a real): `--set trace.speed=2` and `=2.0` are one
 * value, and a config written as the default writes it hashes as it
 * always did. Keys the default lacks (a preset's fields) keep their form:
 * changing it would change every stored hash of their presets. */
static void canonical_numbers(json_t *c, const json_t *dflt)
{
    const char *key;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(c, tmp, key, v)
    {
        const json_t *d = dflt ? json_object_get(dflt, key) : NULL;
        if (json_is_object(v)) canonical_numbers(v, json_is_object(d) ? d : NULL);
        if (!json_is_number(v)) continue;
        double x = json_number_value(v);
        bool whole = x == floor(x) && fabs(x) < 9.0e15;
        if (json_is_real(v) && whole && json_is_integer(d)) json_object_set_new(c, key, json_integer((json_int_t)x));
        else if (json_is_integer(v) && json_is_real(d)) json_object_set_new(c, key, json_real(x));
    }
}

/* XXH64 of the resolved config dumped with sorted keys, its numbers
 * written one way (canonical_numbers), its comments left out ("about" at
 * the top, in model and in hardware: the schema's only comment keys): a
 * comment changes nothing a run does. */
static uint64_t config_hash(const json_t *root, const json_t *dflt)
{
    json_t *c = json_deep_copy(root);
    canonical_numbers(c, dflt);
    json_object_del(c, "about");
    json_object_del(json_object_get(c, "model"), "about");
    json_object_del(json_object_get(c, "model"), "context_window"); /* it warns; no result reads it */
    json_object_del(json_object_get(c, "hardware"), "about");
    char *dump = json_dumps(c, JSON_SORT_KEYS | JSON_COMPACT);
    uint64_t h = XXH64(dump, strlen(dump), 0);
    free(dump);
    json_decref(c);
    return h;
}

int sim_config_load(sim_config *out, const char *config_path, char *const *sets, int nsets, sim_err *err)
{
    memset(out, 0, sizeof *out);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/default.json", sim_config_dir());
    out->root = load_json_file(path, "default config", err);
    if (!out->root) return -1;
    json_t *dflt = json_deep_copy(out->root); /* its numbers' forms, for the hash */
    out->trace = sim_trace_default_opts();
    char bundled[PATH_MAX]; /* the default trace as default.json names it */
    snprintf(bundled, sizeof bundled, "%s", json_string_value(json_path_get(out->root, "trace.path")));
    if (build_tree(out->root, config_path, sets, nsets, err) || (find_bundled(out->root, bundled), 0) ||
        read_typed(out, err)) {
        json_decref(dflt);
        sim_config_free(out);
        return -1;
    }
    out->hash = config_hash(out->root, dflt);
    json_decref(dflt);
    return 0;
}

void sim_config_free(sim_config *c)
{
    json_decref(c->root);
    free(c->faults);
    c->root = NULL;
    c->faults = NULL;
}

/* The value of key without the user's settings, from a fresh read of
 * default.json or of the preset the resolved model/hardware names
 * (caller owns it; NULL when there is none). */
static json_t *base_value(const sim_config *cfg, const char *key)
{
    static const char *const presets[][2] = {{"model", "models"}, {"hardware", "hardware"}};
    char path[PATH_MAX];
    sim_err err;
    const char *sub = key;
    snprintf(path, sizeof path, "%s/default.json", sim_config_dir());
    for (int i = 0; i < 2; i++) {
        size_t n = strlen(presets[i][0]);
        if (strncmp(key, presets[i][0], n) || key[n] != '.') continue;
        const char *name = json_string_value(json_object_get(json_object_get(cfg->root, presets[i][0]), "name"));
        if (!name || sim_preset_path(presets[i][1], name, path, sizeof path, &err)) return NULL; /* inline */
        sub = key + n + 1;
    }
    json_t *file = load_json_file(path, "config", &err), *v = file ? json_incref(json_path_get(file, sub)) : NULL;
    json_decref(file);
    return v;
}

bool sim_config_user_set(const sim_config *cfg, const char *key)
{
    const json_t *now = json_path_get(cfg->root, key);
    json_t *base = base_value(cfg, key);
    bool same = base && now &&
                (json_is_number(base) && json_is_number(now) ? json_number_value(base) == json_number_value(now)
                                                             : json_equal(base, now));
    json_decref(base);
    return now && !same;
}

/* An aggregated cluster without LMCache: no tier below HBM (agg.c). */
#define AGG_NO_TIER                                                                                                    \
    "cluster.mode is aggregated and kvstore.lmcache is off: each instance caches prefixes in HBM, with no CPU or "     \
    "disk tier (LMCache's offload: configs/clusters/lmcache-cpu-offload.json)"

const sim_idle_key *sim_config_idle_keys(const sim_config *cfg)
{
    static const sim_idle_key ep = {"cost.expert_parallel",
                                    "the model is dense (no model.experts): there are no experts to split"},
                              ei = {"cost.expert_imbalance",
                                    "the model is dense (no model.experts): there are no routed tokens to skew"},
                              cpp = {"cluster.cpp_threshold",
                                     "cluster.cpp_group is 1: there is no prefill group for a long request to use"},
                              dram = {"kvstore.dram_bytes", AGG_NO_TIER}, ssd = {"kvstore.ssd_bytes", AGG_NO_TIER};
    static _Thread_local sim_idle_key out[6];
    int n = 0;
    bool no_tier = !strcmp(cfg->mode, "aggregated") && !cfg->lmc.on;
    if (cfg->model.experts <= 1) out[n++] = ep, out[n++] = ei;
    if (cfg->cpp_group <= 1) out[n++] = cpp;
    if (no_tier) out[n++] = dram, out[n++] = ssd;
    out[n] = (sim_idle_key){NULL, NULL};
    return out;
}

static int pool_instances(const sim_config *c) { return c->lmc.cpu_per_node ? c->instances_per_node : 1; }

/* The side whose DRAM bounds the store: an aggregated cluster's one kind,
 * else the side with less (prefill on a tie). */
static const sim_hw *dram_side(const sim_config *c)
{
    if (!strcmp(c->mode, "aggregated")) return &c->hw;
    return c->prefill_hw.dram_bytes <= c->decode_hw.dram_bytes ? &c->prefill_hw : &c->decode_hw;
}

double sim_config_node_dram(const sim_config *c)
{
    return dram_side(c)->dram_bytes * (!strcmp(c->mode, "aggregated") ? pool_instances(c) : 1);
}

double sim_config_node_disk(const sim_config *c)
{
    return c->hw.ssd_bytes * (!strcmp(c->mode, "aggregated") ? pool_instances(c) : 1);
}

int sim_config_over_text(const sim_config *c, bool dram, const char *what, double want, double have, char *buf,
                         size_t n)
{
    const sim_hw *hw = dram ? dram_side(c) : &c->hw;
    bool pooled = pool_instances(c) > 1 && !strcmp(c->mode, "aggregated");
    char who[96];
    if (pooled) snprintf(who, sizeof who, "a pool of %d instances of ", pool_instances(c));
    else snprintf(who, sizeof who, "an instance of ");
    return snprintf(buf, n,
                    "%s: %.6g GB of %s is more than the %.6g GB %s%d GPU%s on '%s' has (%s, in proportion to its GPUs)",
                    what, want / 1e9, dram ? "DRAM" : "disk", have / 1e9, who, hw->gpus, hw->gpus == 1 ? "" : "s",
                    hw->name, dram ? "hardware.dram_bytes" : "hardware.ssd_bytes");
}

bool sim_config_dram_used(const sim_config *c) { return strcmp(c->mode, "aggregated") || c->lmc.on; }

int64_t sim_config_blocks(const sim_config *c, double bytes)
{
    return sim_count_in(bytes, sim_model_kv_bytes_per_token(&c->model) * c->block_tokens);
}
