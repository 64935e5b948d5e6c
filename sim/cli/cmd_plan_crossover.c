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
               "  --config FILE      config merged over configs/default.json\n"
               "  --set KEY=VALUE    override one key (as kvsim run)\n"
               "  --whole-context    instead: load an entire cached context of L tokens\n"
               "                     (L × KV bytes per token at B) against prefilling it alone\n"
               "                     (passes of engine.max_num_batched_tokens, overheads in),\n"
               "                     and the bandwidth at which the two take as long\n"
               "  --context LIST     context lengths in tokens (default 1024,2048,...,131072)\n"
               "  --gbps LIST        link bandwidths in Gbit/s (default 1,2.5,5,10,25,50,100,200,400)\n"
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
    if (sim_cost_init(&c, cfg, &err)) return sim_usage_error("plan crossover", err.msg);
    path_cost p[4];
    int n = paths(&c, cfg, p);
    double chunk_bytes = cfg->lmc.chunk_tokens * c.kv_bytes_per_token;
    json_t *rows = json_array();
    if (!json)
        printf("%s on %s: %d-token chunks of %.0f bytes\n%-8s %-30s %14s %18s\n", cfg->model.name, cfg->hw.name,
               cfg->lmc.chunk_tokens, chunk_bytes, "tier", "path", "GB/s effective", "crossover tokens");
    for (int i = 0; i < n; i++) {
        int64_t x =
            sim_cost_crossover_tokens(&c, cfg->lmc.chunk_tokens, cfg->max_num_batched_tokens, p[i].chunk_s, 1 << 24);
        double gbs = chunk_bytes / p[i].chunk_s / 1e9;
        if (json)
            json_array_append_new(rows, json_pack("{s:s, s:s, s:f, s:f, s:I}", "tier", p[i].name, "path", p[i].what,
                                                  "chunk_load_s", p[i].chunk_s, "effective_GBps", gbs,
                                                  "crossover_tokens", (json_int_t)x));
        else if (x < 0) printf("%-8s %-30s %14.2f %18s\n", p[i].name, p[i].what, gbs, "never (below 16M)");
        else printf("%-8s %-30s %14.2f %18" PRId64 "\n", p[i].name, p[i].what, gbs, x);
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

int cmd_plan_crossover(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},  {"set", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},          {"whole-context", no_argument, NULL, 'w'},
        {"context", required_argument, NULL, 'L'}, {"gbps", required_argument, NULL, 'B'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    const char *config = NULL;
    char *sets[64];
    int nsets = 0, c;
    bool json = false, whole = false;
    whole_spec w = {.ncontext = 8, .ngbps = 9};
    for (int i = 0; i < w.ncontext; i++) w.context[i] = 1024 << i;
    memcpy(w.gbps, (const double[]){1, 2.5, 5, 10, 25, 50, 100, 200, 400}, 9 * sizeof *w.gbps);
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'c') config = optarg;
        else if (c == 's' && nsets < 64) sets[nsets++] = optarg;
        else if (c == 'j') json = true;
        else if (c == 'w') whole = true;
        else if (c == 'L' && parse_list("--context", optarg, true, w.context, &w.ncontext)) return SIM_EXIT_USAGE;
        else if (c == 'B' && parse_list("--gbps", optarg, false, w.gbps, &w.ngbps)) return SIM_EXIT_USAGE;
        else if (c == 'h') return usage(stdout), SIM_EXIT_OK;
        else if (c != 'L' && c != 'B')
            return sim_usage_error("plan crossover", "bad option (see kvsim plan crossover --help)");
    }
    if (optind < argc) return sim_cli_unexpected_error("plan crossover", argv[optind], "--config");
    sim_config cfg;
    sim_err err;
    if (sim_config_load(&cfg, config, sets, nsets, &err)) return sim_usage_error("plan crossover", err.msg);
    int status = whole ? report_whole(&cfg, &w, json) : report(&cfg, json);
    sim_config_free(&cfg);
    return status;
}
