/* sim/replay/check_run.c — measurement kind "run" of `kvsim check`
 * (sim/replay/check.h): a timed replay, as `kvsim run` makes it, whose
 * summary numbers CI guards — SLO attainment, goodput, TTFT and TBT mean
 * and percentiles, rejections, hit rates.
 *
 * args: {"trace": path, "config": path (optional), "set": {"key.path":
 * value, ...} (optional)}. The run has no results file (a private temporary
 * database). Its resolved config hash is returned beside the numbers so
 * that a baseline can tell a changed setup from a regression. */
#include <stdlib.h>
#include <string.h>

#include "sim/replay/check.h"
#include "sim/serving/serving.h"

/* "key.path=JSON" for each entry of set, then trace.path. */
static int make_sets(const json_t *args, char ***out, int *n, sim_err *err)
{
    const json_t *set = json_object_get(args, "set"), *trace = json_object_get(args, "trace");
    if (set && !json_is_object(set)) return sim_errf(err, "set: expected an object of config keys and values");
    if (!json_is_string(trace)) return sim_errf(err, "trace: expected a path");
    *out = sim_xcalloc(json_object_size(set) + 1, sizeof **out);
    *n = 0;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)set, key, v)
    {
        char *val = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        size_t len = strlen(key) + strlen(val) + 2;
        (*out)[*n] = sim_xmalloc(len);
        snprintf((*out)[(*n)++], len, "%s=%s", key, val);
        free(val);
    }
    char *path = json_dumps(trace, JSON_ENCODE_ANY);
    size_t len = strlen(path) + 12;
    (*out)[*n] = sim_xmalloc(len);
    snprintf((*out)[(*n)++], len, "trace.path=%s", path);
    free(path);
    return 0;
}

static void free_sets(char **sets, int n)
{
    for (int i = 0; i < n; i++) free(sets[i]);
    free(sets);
}

/* The guarded numbers of a summary, flat ("ttft_ms.p90"). */
static json_t *metrics(const json_t *s, uint64_t config_hash)
{
    static const char *const dists[] = {"ttft_ms", "tbt_ms"}, *const stats[] = {"mean", "p50", "p90", "p99"};
    json_t *m =
        json_pack("{s:O, s:O, s:O, s:O, s:O}", "slo_attainment", json_object_get(s, "slo_attainment"), "goodput_rps",
                  json_object_get(s, "goodput_rps"), "rejected",
                  json_object_get(json_object_get(s, "rejected"), "total"), "hit_rate_blocks",
                  json_object_get(s, "hit_rate_blocks"), "hit_rate_tokens", json_object_get(s, "hit_rate_tokens"));
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 4; k++) {
            char key[32];
            snprintf(key, sizeof key, "%s.%s", dists[d], stats[k]);
            json_object_set(m, key, json_object_get(json_object_get(s, dists[d]), stats[k]));
        }
    char hash[17];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)config_hash);
    json_object_set_new(m, SIM_CHECK_CONFIG_HASH, json_string(hash));
    return m;
}

int sim_check_run_config(sim_config *cfg, json_t **summary, sim_err *err)
{
    if (sim_serving_check(cfg, err)) return -1;
    sim_results *db = NULL;
    uint64_t fp;
    int64_t id;
    if (sim_trace_fingerprint(cfg->trace_path, &fp, err) || sim_results_open(&db, NULL, err)) return -1;
    char *config_json = json_dumps(cfg->root, JSON_SORT_KEYS | JSON_COMPACT);
    sim_run_info info = {config_json, cfg->hash, cfg->trace_path, fp, cfg->seed, true, true};
    int rc = sim_results_begin_run(db, &info, &id, err) || sim_serving_replay(cfg, db, summary, err) ? -1 : 0;
    free(config_json);
    sim_results_close(db);
    return rc;
}

/* The run's block-size finding (a trace whose ids fit another block size),
 * for the command to say as kvsim run says it (issue 40 item 2). */
static void add_block_size_warning(json_t *got, const json_t *summary)
{
    const json_t *c = sim_serving_caveat(summary, "block_size");
    if (!c) return;
    char warning[1024];
    snprintf(warning, sizeof warning, "warning: %s", json_string_value(json_object_get(c, "text")));
    json_t *w = json_object_get(got, SIM_CHECK_WARNINGS);
    if (!w) json_object_set_new(got, SIM_CHECK_WARNINGS, w = json_array());
    json_array_append_new(w, json_string(warning));
}

int sim_check_timed(sim_check_ctx *ctx, const json_t *args, json_t **got, sim_err *err)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)args, key, v)
    {
        if (strcmp(key, "trace") && strcmp(key, "config") && strcmp(key, "set"))
            return sim_errf(err, "%s: not a run argument (trace, config, set)", key);
    }
    const json_t *config = json_object_get(args, "config");
    if (config && !json_is_string(config)) return sim_errf(err, "config: expected a path");
    char **sets = NULL;
    int n = 0;
    if (make_sets(args, &sets, &n, err)) return -1;
    sim_config cfg;
    json_t *summary = NULL;
    int rc = sim_config_load(&cfg, json_string_value(config), sets, n, err);
    free_sets(sets, n);
    if (rc) return -1;
    if (sim_check_run_config(&cfg, &summary, err)) rc = -1;
    else {
        *got = metrics(summary, cfg.hash);
        add_block_size_warning(*got, summary);
    }
    json_decref(summary);
    sim_config_free(&cfg);
    return rc;
}
