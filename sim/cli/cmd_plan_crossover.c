/* sim/cli/cmd_plan_crossover.c — `kvsim plan crossover`: for a model and
 * hardware (a run's config), the context length above which loading a KV
 * chunk beats recomputing it, for each tier the LMCache layer loads from
 * (LMCache §7.7, Fig. 12; the rule kvstore.load = "adaptive" applies per
 * chunk, sim/serving/agg/lmcache.c). This file parses and prints; the
 * search is sim_cost_crossover_tokens (sim/cost/cost.c). */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "sim/cli/cli.h"
#include "sim/config/config.h"
#include "sim/cost/cost.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: kvsim plan crossover [--config FILE] [--set key=value]... [--json]\n\n"
               "For the config's model and hardware, the context position from which loading a KV\n"
               "chunk (kvstore.chunk_tokens) into HBM takes less time than recomputing it, per\n"
               "tier and transfer granularity: CPU memory over the host link (chunk transfers,\n"
               "and 16-token page transfers as vLLM's native offload makes them), local disk,\n"
               "and the remote store over kvstore.remote.Gbps. Below it, recomputing is faster.\n\n"
               "  --config FILE      config merged over configs/default.json\n"
               "  --set KEY=VALUE    override one key (as kvsim run)\n"
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

int cmd_plan_crossover(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"set", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *config = NULL;
    char *sets[64];
    int nsets = 0, c;
    bool json = false;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'c') config = optarg;
        else if (c == 's' && nsets < 64) sets[nsets++] = optarg;
        else if (c == 'j') json = true;
        else if (c == 'h') return usage(stdout), SIM_EXIT_OK;
        else return sim_usage_error("plan crossover", "bad option (see --help)");
    }
    if (optind < argc) return sim_usage_error("plan crossover", "unexpected argument (see --help)");
    sim_config cfg;
    sim_err err;
    if (sim_config_load(&cfg, config, sets, nsets, &err)) return sim_usage_error("plan crossover", err.msg);
    int status = report(&cfg, json);
    sim_config_free(&cfg);
    return status;
}
