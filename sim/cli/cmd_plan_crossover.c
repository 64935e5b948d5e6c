/* sim/cli/cmd_plan_crossover.c — `kvsim plan crossover`: for a model and
 * hardware (a run's config), the context length above which loading a KV
 * chunk beats recomputing it, for each tier the LMCache layer loads from
 * (LMCache §7.7; the per-chunk rule of kvstore.load = "adaptive",
 * sim/serving/agg/lmcache.c); with --whole-context, loading an entire
 * cached context of length L at bandwidth B against prefilling it (the
 * form of LMCache Fig. 12). This file parses and prints; the search is
 * sim_cost_crossover_tokens, the prefill sim_cost_context_prefill_s
 * (sim/cost/cost.c). */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sim/cli/cli.h"
#include "sim/config/config.h"
#include "sim/cost/cost.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: kvsim plan crossover [--config FILE] [--set key=value]... [--json]\n"
               "                            [--whole-context [--context LIST] [--gbps LIST]]\n\n"
               "For the config's model and hardware, the context position from which loading a KV\n"
               "chunk (kvstore.chunk_tokens) into HBM takes less time than recomputing it, per\n"
               "tier and transfer granularity: CPU memory over the host link (chunk transfers,\n"
               "and 16-token page transfers as vLLM's native offload makes them), local disk,\n"
               "and the remote store over kvstore.remote.Gbps. Below it, recomputing is faster.\n\n"
               "  --config FILE      config merged over configs/default.json (a run's config: the\n"
               "                     keys the crossover does not read are left as they are)\n"
               "  --set KEY=VALUE    override one key (as kvsim run); a key the crossover does not\n"
               "                     read there exits 2 saying what to set instead: trace.*,\n"
               "                     policy.*, slo.*, metrics.*, decode.*, the cluster's size and\n"
               "                     layout, the store's capacities and rules, prices; the\n"
               "                     per-pass overheads without --whole-context; kvstore.* and the\n"
               "                     host link, disk and transfer latency with it\n"
               "  --whole-context    instead: load an entire cached context of L tokens\n"
               "                     (L × KV bytes per token at B) against prefilling it alone\n"
               "                     (passes of engine.max_num_batched_tokens, overheads in),\n"
               "                     and the bandwidth at which the two take as long\n"
               "  --context LIST     with --whole-context: context lengths in tokens (default\n"
               "                     1024,2048,...,131072)\n"
               "  --gbps LIST        with --whole-context: link bandwidths in Gbit/s (default\n"
               "                     1,2.5,5,10,25,50,100,200,400)\n"
               "  --json             one JSON object\n"
               "  -h, --help         this text\n");
}

typedef struct path_cost {
    const char *name, *what;
    double chunk_s;
} path_cost;

/* Per tier: one chunk's load time, as the loader charges it. */
static int paths(const sim_cost *c, const sim_config *cfg, path_cost *out)
{
    double kvb = c->kv_bytes_per_token, chunk = cfg->lmc.chunk_tokens * kvb;
    double page = cfg->pic_block_tokens * kvb / cfg->model.layers; /* one layer's page */
    double pages = (double)cfg->lmc.chunk_tokens / cfg->pic_block_tokens * cfg->model.layers;
    double remote = cfg->lmc.remote_latency_s + chunk / cfg->lmc.remote_Bps + sim_cost_h2d_s(c, chunk);
    out[0] = (path_cost){"cpu", "CPU memory, chunk transfers", sim_cost_h2d_s(c, chunk)};
    out[1] = (path_cost){"cpu_pages", "CPU memory, per-layer page copies", sim_cost_h2d_pages_s(c, page, pages)};
    out[2] = (path_cost){"disk", "local disk", sim_cost_ssd_read_s(c, chunk) + sim_cost_h2d_s(c, chunk)};
    out[3] = (path_cost){"remote", "remote store", remote};
    return 4;
}

static int report(const sim_config *cfg, bool json)
{
    sim_cost c;
    sim_err err;
    if (sim_config_chunk_pages_check(cfg, &err) || sim_cost_init(&c, cfg, &err))
        return sim_usage_error("plan crossover", err.msg);
    path_cost p[4];
    int n = paths(&c, cfg, p);
    double chunk_bytes = cfg->lmc.chunk_tokens * c.kv_bytes_per_token;
    json_t *rows = json_array();
    if (!json)
        printf("%s on %s: %d-token chunks of %.0f bytes\n%-9s %-33s %14s %18s\n", cfg->model.name, cfg->hw.name,
               cfg->lmc.chunk_tokens, chunk_bytes, "tier", "path", "GB/s effective", "crossover tokens");
    for (int i = 0; i < n; i++) {
        int64_t x =
            sim_cost_crossover_tokens(&c, cfg->lmc.chunk_tokens, cfg->max_num_batched_tokens, p[i].chunk_s, 1 << 24);
        double gbs = chunk_bytes / p[i].chunk_s / 1e9;
        if (json)
            json_array_append_new(rows, json_pack("{s:s, s:s, s:f, s:f, s:I}", "tier", p[i].name, "path", p[i].what,
                                                  "chunk_load_s", p[i].chunk_s, "effective_GBps", gbs,
                                                  "crossover_tokens", (json_int_t)x));
        else if (x < 0) printf("%-9s %-33s %14.2f %18s\n", p[i].name, p[i].what, gbs, "never (below 16M)");
        else printf("%-9s %-33s %14.2f %18" PRId64 "\n", p[i].name, p[i].what, gbs, x);
    }
    if (json) {
        json_t *o = json_pack("{s:s, s:s, s:i, s:o}", "model", cfg->model.name, "hardware", cfg->hw.name,
                              "chunk_tokens", cfg->lmc.chunk_tokens, "tiers", rows);
        json_dumpf(o, stdout, JSON_REAL_PRECISION(10));
        putchar('\n');
        json_decref(o);
    } else {
        json_decref(rows);
    }
    return SIM_EXIT_OK;
}

/* ---- --whole-context (LMCache Fig. 12) -------------------------------------- */

enum { MAX_POINTS = 32 };

typedef struct whole_spec {
    double context[MAX_POINTS], gbps[MAX_POINTS];
    int ncontext, ngbps;
} whole_spec;

/* LIST: comma-separated positive numbers, at most MAX_POINTS; counts
 * (1K, 128K) when `counts`, else plain numbers. */
static int parse_list(const char *opt, const char *v, bool counts, double *out, int *n)
{
    char *copy = sim_xstrdup(v), *save = NULL;
    sim_err err;
    int rc = 0;
    *n = 0;
    for (char *item = strtok_r(copy, ",", &save); item && rc == 0; item = strtok_r(NULL, ",", &save)) {
        double x = 0;
        rc = *n == MAX_POINTS ? sim_errf(&err, "%s: at most %d values", opt, MAX_POINTS)
             : counts         ? sim_parse_count(item, opt, &x, &err)
                              : sim_parse_double(item, opt, &x, &err);
        if (rc == 0 && !(x > 0 && x <= (counts ? 1 << 24 : 1e6)))
            rc = sim_errf(&err, "%s: '%s' is out of range (0, %s]", opt, item, counts ? "16M tokens" : "1e6 Gbit/s");
        out[(*n)++] = x;
    }
    free(copy);
    if (rc == 0 && *n == 0) rc = sim_errf(&err, "%s: '%s' is not a comma-separated list", opt, v);
    return rc == 0 ? 0 : sim_usage_error("plan crossover", err.msg);
}

/* One context length's row: prefill time, the bandwidth at which its
 * load takes as long, and the load time at each bandwidth. */
static json_t *whole_row(const sim_cost *c, const sim_config *cfg, const whole_spec *w, double L)
{
    double bytes = L * c->kv_bytes_per_token;
    double prefill = sim_cost_context_prefill_s(c, (int64_t)L, cfg->max_num_batched_tokens);
    json_t *loads = json_array();
    for (int j = 0; j < w->ngbps; j++) {
        double t = bytes * 8 / (w->gbps[j] * 1e9);
        json_array_append_new(loads, json_pack("{s:f, s:f, s:s}", "Gbps", w->gbps[j], "load_s", t, "faster",
                                               t < prefill ? "load" : "prefill"));
    }
    return json_pack("{s:I, s:f, s:f, s:f, s:o}", "tokens", (json_int_t)L, "kv_bytes", bytes, "prefill_s", prefill,
                     "break_even_Gbps", bytes * 8 / prefill / 1e9, "loads", loads);
}

static void print_whole(const sim_config *cfg, const whole_spec *w, double kvb, json_t *rows)
{
    printf("%s on %s: an entire cached context loaded at B (L x %.0f bytes / B) vs prefilled alone in passes "
           "of %d tokens\n%9s %9s %11s %15s",
           cfg->model.name, cfg->hw.name, kvb, cfg->max_num_batched_tokens, "tokens", "KV GB", "prefill s",
           "break-even Gbps");
    for (int j = 0; j < w->ngbps; j++) printf(" %8g Gbps", w->gbps[j]);
    putchar('\n');
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        printf("%9" JSON_INTEGER_FORMAT " %9.3f %11.4f %15.2f", json_integer_value(json_object_get(r, "tokens")),
               json_number_value(json_object_get(r, "kv_bytes")) / 1e9,
               json_number_value(json_object_get(r, "prefill_s")),
               json_number_value(json_object_get(r, "break_even_Gbps")));
        for (int j = 0; j < w->ngbps; j++) {
            const json_t *p = json_array_get(json_object_get(r, "loads"), (size_t)j);
            printf(" %11.4f%s", json_number_value(json_object_get(p, "load_s")),
                   !strcmp(json_string_value(json_object_get(p, "faster")), "load") ? "*" : " ");
        }
        putchar('\n');
    }
    printf("load seconds; * where loading beats prefilling\n");
}

static int report_whole(const sim_config *cfg, const whole_spec *w, bool json)
{
    sim_cost c;
    sim_err err;
    if (sim_cost_init(&c, cfg, &err)) return sim_usage_error("plan crossover", err.msg);
    json_t *rows = json_array();
    for (int i = 0; i < w->ncontext; i++) json_array_append_new(rows, whole_row(&c, cfg, w, w->context[i]));
    if (json) {
        json_t *o = json_pack("{s:s, s:s, s:i, s:o}", "model", cfg->model.name, "hardware", cfg->hw.name, "pass_tokens",
                              cfg->max_num_batched_tokens, "contexts", rows);
        json_dumpf(o, stdout, JSON_REAL_PRECISION(10));
        putchar('\n');
        json_decref(o);
        return SIM_EXIT_OK;
    }
    print_whole(cfg, w, c.kv_bytes_per_token, rows);
    json_decref(rows);
    return SIM_EXIT_OK;
}

/* ---- keys the crossover does not read ---------------------------------------- */

enum { CHUNKS = 1, WHOLE = 2, EITHER = 3 };

/* Why a key is not read, for the rows sharing one. */
#define WHY_CLUSTER                                                                                                    \
    "it prices one instance's loads and prefill, whatever the cluster's size and layout; drop it (kvsim run reads "    \
    "it)"
#define WHY_STORE                                                                                                      \
    "it prices loads and recomputes, whatever the store holds, keeps or evicts; drop it (kvsim run reads it)"
#define WHY_PRICE "it compares times, not prices (kvsim cost prices a run); drop it"
#define WHY_PASS                                                                                                       \
    "a chunk's recompute is what it adds to a prefill pass, so a pass's fixed overheads cancel out; they price the "   \
    "prefill of --whole-context"
#define WHY_WHOLE                                                                                                      \
    "it loads the entire context at each --gbps bandwidth, with no chunks, pages, host link, disk or store; give the " \
    "bandwidths with --gbps, or drop --whole-context for the per-tier chunk crossover, which reads it"

/* A config key (and the keys under it) the crossover never reads in the
 * modes given, and what to do instead. Without --whole-context it reads the
 * model, the hardware's compute, host link and disk, a prefill pass's cost
 * keys, engine.max_num_batched_tokens, kvstore.chunk_tokens and
 * pic_block_tokens, kvstore.remote.Gbps and latency_us (paths, report);
 * with it, the model, the compute and the passes with their overheads
 * (report_whole). The cost model's and the config's idle keys (the
 * warnings of kvsim run) are refused too. */
static const struct unread {
    const char *key;
    int modes;
    const char *why;
} unread[] = {
    {"trace", EITHER,
     "it reads no trace (it prices a chunk from the model, hardware and cost keys); drop it (kvsim run reads it)"},
    {"policy", EITHER, "it schedules no requests; drop it (kvsim run reads it)"},
    {"slo", EITHER, "it times no requests against an SLO; drop it (kvsim run reads it)"},
    {"metrics", EITHER, "it records no run; drop it (kvsim run reads it)"},
    {"limits", EITHER, "it simulates no events; drop it (kvsim run reads it)"},
    {"faults", EITHER, "it runs no instance that could fail; drop it (kvsim run reads it)"},
    {"seed", EITHER, "it draws nothing at random; drop it (kvsim run reads it)"},
    {"decode", EITHER, "it prices no decode; drop it (kvsim run reads it)"},
    {"cost.decode_overhead_ms", EITHER, "it prices no decode; drop it (kvsim run reads it)"},
    {"cost.noise", EITHER, "its times are the cost model's, without noise; drop it (kvsim run reads it)"},
    {"cost.estimator_noise", EITHER, "it uses no estimator; drop it (kvsim run reads it)"},
    {"cost.estimator_samples", EITHER, "it uses no estimator; drop it (kvsim run reads it)"},
    {"cluster.prefill_hardware", EITHER, "it prices one aggregated instance on `hardware`; use --set hardware=NAME"},
    {"cluster.decode_hardware", EITHER, "it prices one aggregated instance on `hardware`; use --set hardware=NAME"},
    {"cluster.prefill_chunk", EITHER, "it prefills in passes of engine.max_num_batched_tokens; set that instead"},
    {"cluster.prefill", EITHER, WHY_CLUSTER},
    {"cluster.decode", EITHER, WHY_CLUSTER},
    {"cluster.instances", EITHER, WHY_CLUSTER},
    {"cluster.instances_per_node", EITHER, WHY_CLUSTER},
    {"cluster.scope", EITHER, WHY_CLUSTER},
    {"cluster.layerwise", EITHER, WHY_CLUSTER},
    {"cluster.switch_ms", EITHER, WHY_CLUSTER},
    {"cluster.cpp_group", EITHER, WHY_CLUSTER},
    {"cluster.cpp_threshold", EITHER, WHY_CLUSTER},
    {"cluster.on_failure", EITHER, WHY_CLUSTER},
    {"kvstore.transfer", EITHER,
     "it has a row for each granularity (cpu: chunk transfers, cpu_pages: page copies); drop it"},
    {"kvstore.load", EITHER, "it is the rule kvstore.load = \"adaptive\" applies to each chunk; drop it"},
    {"kvstore.block_tokens", EITHER, WHY_STORE},
    {"kvstore.pic", EITHER, WHY_STORE},
    {"kvstore.pic_cacheblend_ratio", EITHER, WHY_STORE},
    {"kvstore.pic_epic_tokens", EITHER, WHY_STORE},
    {"kvstore.eviction", EITHER, WHY_STORE},
    {"kvstore.hbm_bytes", EITHER, WHY_STORE},
    {"kvstore.dram_bytes", EITHER, WHY_STORE},
    {"kvstore.ssd_bytes", EITHER, WHY_STORE},
    {"kvstore.promote", EITHER, WHY_STORE},
    {"kvstore.lmcache", EITHER, WHY_STORE},
    {"kvstore.cpu_scope", EITHER, WHY_STORE},
    {"kvstore.prefetch", EITHER, WHY_STORE},
    {"kvstore.remote.bytes", EITHER, WHY_STORE},
    {"hardware.dram_bytes", EITHER, WHY_STORE},
    {"hardware.ssd_bytes", EITHER, WHY_STORE},
    {"hardware.ssd_write_GBps", EITHER, "it only reads from disk (hardware.ssd_read_GBps); drop it"},
    {"hardware.nic_Gbps", EITHER, "the remote store's link is kvstore.remote.Gbps; set that instead"},
    {"hardware.price_per_hour", EITHER, WHY_PRICE},
    {"hardware.dram_price_per_GB_hour", EITHER, WHY_PRICE},
    {"hardware.ssd_price_per_GB_hour", EITHER, WHY_PRICE},
    {"engine.async_scheduling", EITHER,
     "it prices a prefill alone, in passes of engine.max_num_batched_tokens; drop it"},
    {"engine.chunked_prefill", EITHER, "it prefills in passes of engine.max_num_batched_tokens; set that instead"},
    {"engine.prefix_caching", EITHER, "it prices a chunk's load or recompute, not the engine's cache; drop it"},
    {"engine.frontend_ms", EITHER, "no request passes the frontend; drop it (kvsim run reads it)"},
    {"engine.measured.frontend_ms", EITHER, "no request passes the frontend; drop it (kvsim run reads it)"},
    {"engine.measured.moe_jit_compile_ms", EITHER, "it prices warm passes; drop it (kvsim run reads it)"},
    {"engine.iter_overhead_ms", CHUNKS, WHY_PASS},
    {"engine.seq_overhead_ms", CHUNKS, WHY_PASS},
    {"engine.measured.iter_overhead_ms", CHUNKS, WHY_PASS},
    {"engine.measured.seq_overhead_ms", CHUNKS, WHY_PASS},
    {"cost.prefill_chunk_overhead_ms", CHUNKS, WHY_PASS},
    {"kvstore", WHOLE, WHY_WHOLE},
    {"hardware.h2d_GBps", WHOLE, WHY_WHOLE},
    {"hardware.ssd_read_GBps", WHOLE, WHY_WHOLE},
    {"hardware.ssd_latency_us", WHOLE, WHY_WHOLE},
    {"cost.transfer_latency_us", WHOLE, WHY_WHOLE},
};

#undef WHY_CLUSTER
#undef WHY_STORE
#undef WHY_PRICE
#undef WHY_PASS
#undef WHY_WHOLE

/* key is `under` or a key below it. */
static bool key_in(const char *key, size_t len, const char *under)
{
    size_t n = strlen(under);
    return len >= n && !strncmp(key, under, n) && (len == n || key[n] == '.');
}

/* The rule of the unread table, or of the cost model's and the config's
 * idle keys (`idle`), that a --set KEY=VALUE falls under in this mode
 * (whole or not); NULL when the crossover reads the key. */
static const struct unread *unread_rule(const char *set, bool whole, const sim_idle_key *const idle[2],
                                        struct unread *scratch)
{
    size_t len = strcspn(set, "=");
    for (size_t i = 0; i < sizeof unread / sizeof unread[0]; i++)
        if ((unread[i].modes & (whole ? WHOLE : CHUNKS)) && key_in(set, len, unread[i].key)) return &unread[i];
    for (int l = 0; l < 2; l++)
        for (const sim_idle_key *k = idle[l]; k && k->key; k++)
            if (key_in(set, len, k->key)) return (*scratch = (struct unread){k->key, EITHER, k->why}, scratch);
    return NULL;
}

/* Exit 2 on an option the crossover would ignore: --context or --gbps
 * without --whole-context, a --set of a key it does not read (accepted
 * and ignored, it was a silent wrong answer); else 0. */
static int check_effect(const sim_config *cfg, char **sets, int nsets, bool whole, const char *list_opt)
{
    static const char *const mode[] = {"", " without --whole-context", " with --whole-context", ""};
    char msg[1024];
    if (!whole && list_opt) {
        snprintf(msg, sizeof msg,
                 "%s has no effect without --whole-context: the per-tier crossover searches every context "
                 "position and loads at each tier's own bandwidth (the remote store's is kvstore.remote.Gbps); add "
                 "--whole-context for the table at these %s",
                 list_opt, !strcmp(list_opt, "--context") ? "context lengths" : "bandwidths");
        return sim_usage_error("plan crossover", msg);
    }
    const sim_idle_key *idle[2] = {nsets ? sim_cost_idle_keys(cfg) : NULL, nsets ? sim_config_idle_keys(cfg) : NULL};
    struct unread scratch;
    for (int i = 0; i < nsets; i++) {
        const struct unread *u = unread_rule(sets[i], whole, idle, &scratch);
        if (!u) continue;
        snprintf(msg, sizeof msg, "--set %.*s has no effect on the crossover%s: %s", (int)strcspn(sets[i], "="),
                 sets[i], mode[u->modes], u->why);
        return sim_usage_error("plan crossover", msg);
    }
    return 0;
}

int cmd_plan_crossover(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},  {"set", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},          {"whole-context", no_argument, NULL, 'w'},
        {"context", required_argument, NULL, 'L'}, {"gbps", required_argument, NULL, 'B'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    const char *config = NULL, *list_opt = NULL;
    char **sets = sim_xcalloc((size_t)argc + 1, sizeof *sets);
    int nsets = 0, c, status = -1;
    bool json = false, whole = false;
    whole_spec w = {.ncontext = 8, .ngbps = 9};
    for (int i = 0; i < w.ncontext; i++) w.context[i] = 1024 << i;
    memcpy(w.gbps, (const double[]){1, 2.5, 5, 10, 25, 50, 100, 200, 400}, 9 * sizeof *w.gbps);
    optind = 1;
    opterr = 0; /* the complaint names the option, as every command's (sim_cli_bad_option) */
    while (status < 0 && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'c') config = optarg;
        else if (c == 's') sets[nsets++] = optarg;
        else if (c == 'j') json = true;
        else if (c == 'w') whole = true;
        else if (c == 'L' || c == 'B') {
            list_opt = list_opt ? list_opt : c == 'L' ? "--context" : "--gbps";
            if (c == 'L' ? parse_list("--context", optarg, true, w.context, &w.ncontext)
                         : parse_list("--gbps", optarg, false, w.gbps, &w.ngbps))
                status = SIM_EXIT_USAGE;
        } else if (c == 'h') status = (usage(stdout), SIM_EXIT_OK);
        else status = sim_cli_bad_option("plan crossover", argv[optind - 1]);
    }
    if (status < 0 && optind < argc) status = sim_cli_unexpected_error("plan crossover", argv[optind], "--config");
    sim_config cfg;
    sim_err err;
    if (status < 0 && sim_config_load(&cfg, config, sets, nsets, &err))
        status = sim_usage_error("plan crossover", err.msg);
    else if (status < 0) {
        status = check_effect(&cfg, sets, nsets, whole, list_opt);
        if (status == 0) status = whole ? report_whole(&cfg, &w, json) : report(&cfg, json);
        sim_config_free(&cfg);
    }
    free(sets);
    return status;
}
