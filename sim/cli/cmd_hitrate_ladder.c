/* sim/cli/cmd_hitrate_ladder.c — `kvsim hitrate --ladder`: where a trace's
 * prefix hits go, from its ceiling to what the configured cluster gets
 * (docs/hitrate-ladder.md). This file parses, calls kv_ladder_build
 * (sim/replay/ladder.c) and prints; the routers of the regret table come
 * from the sched/ registry. */
#include "sim/cli/cli.h"
#include "sim/replay/ladder.h"
#include "sched/registry.h"

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ladder_usage[] =
    "usage: kvsim hitrate --ladder [--config FILE] [--set KEY=VALUE ...] [--trace FILE]\n"
    "                     [--block-tokens N] [--full-blocks] [--max-model-len N]\n"
    "                     [--no-run] [--regret] [--json] [--db FILE]\n\n"
    "The hit-rate ladder (docs/hitrate-ladder.md): a trace's prefix hit rate from its\n"
    "ceiling down to what the configured cluster gets, each rung in blocks and tokens,\n"
    "the prefill tokens it saves and its loss against the rung above:\n"
    "  a ceiling  one infinite cache, the trace's own blocks\n"
    "  b engine   the engine's block size, context cap and hashing\n"
    "  c belady   the offline optimum on one pool of the configured HBM + DRAM +\n"
    "             SSD (+ remote) capacity of every cache node, split by tier\n"
    "  d policy   kvstore.eviction on that pool: perfect routing\n"
    "  e routed   a timed run of the config (policy.router): what it gets\n\n"
    "  --config FILE       config (default: the built-in defaults)\n"
    "  --set KEY=VALUE     override a config key (repeatable)\n"
    "  --trace FILE        the trace (default: the config's trace.path)\n"
    "  --block-tokens N    the engine's block size for rungs b to d (default\n"
    "                      kvstore.block_tokens); it must divide the trace's blocks\n"
    "                      or be a multiple of them (coarsened as trace rechunk does)\n"
    "  --full-blocks       full-block-only hashing, as vLLM and SGLang: a partial\n"
    "                      last block never hits (rungs b to d)\n"
    "  --max-model-len N   the engine's context cap: tokens past it are not cached\n"
    "                      (rungs b to d; default none)\n"
    "  --no-run            skip rung e (no timed run)\n"
    "  --regret            also run every router on the same trace and cluster: hit\n"
    "                      rate and TTFT p90 against rung d\n"
    "  --json              one JSON object instead of the table\n"
    "  --db FILE           also store the rungs in the ladder table of a results\n"
    "                      database (kvsim report draws them as a bar chart)\n"
    "  -h, --help          this text\n";

typedef struct ladder_args {
    kv_ladder_opts o;
    char **sets;
    const char *db;
    bool json, regret;
} ladder_args;

static int parse_count(const char *opt, const char *v, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    long long n = strtoll(v, &end, 10);
    if (*v == 0 || *end || n < lo || n > hi) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s: '%s' is not a whole number in [%" PRId64 ", %" PRId64 "]", opt, v, lo, hi);
        return sim_usage_error("hitrate", msg);
    }
    *out = n;
    return 0;
}

/* 0, or an exit status (help printed, or a usage error). */
static int parse(int argc, char **argv, ladder_args *a)
{
    static const struct option opts[] = {
        {"ladder", no_argument, 0, 'L'},
        {"config", required_argument, 0, 'c'},
        {"set", required_argument, 0, 's'},
        {"trace", required_argument, 0, 't'},
        {"block-tokens", required_argument, 0, 'b'},
        {"full-blocks", no_argument, 0, 'f'},
        {"max-model-len", required_argument, 0, 'M'},
        {"no-run", no_argument, 0, 'n'},
        {"regret", no_argument, 0, 'r'},
        {"json", no_argument, 0, 'j'},
        {"db", required_argument, 0, 'd'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    a->sets = sim_xcalloc((size_t)argc + 1, sizeof *a->sets);
    a->o.sets = a->sets;
    a->o.run = true;
    opterr = 0;
    optind = 1;
    int64_t n;
    for (int ch; (ch = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        switch (ch) {
        case 'L': break;
        case 'c': a->o.config = optarg; break;
        case 's': a->sets[a->o.nsets++] = optarg; break;
        case 't': a->o.trace = optarg; break;
        case 'b':
            if (parse_count("--block-tokens", optarg, 1, 1 << 20, &n)) return SIM_EXIT_USAGE;
            a->o.block_tokens = (int)n;
            break;
        case 'f': a->o.full_blocks = true; break;
        case 'M':
            if (parse_count("--max-model-len", optarg, 1, INT32_MAX, &n)) return SIM_EXIT_USAGE;
            a->o.max_model_len = n;
            break;
        case 'n': a->o.run = false; break;
        case 'r': a->regret = true; break;
        case 'j': a->json = true; break;
        case 'd': a->db = optarg; break;
        case 'h': fputs(ladder_usage, stdout); return SIM_EXIT_OK;
        default: return sim_cli_bad_option("hitrate", argv[optind - 1]);
        }
    }
    if (optind < argc) return sim_cli_unexpected_error("hitrate", argv[optind], "--trace");
    return -1; /* parsed: go on */
}

static void print_tiers(const kv_ladder *l, const kv_rung *g)
{
    if (!g->has_tiers) return;
    printf("    saved by tier:");
    for (int k = 0; k < KV_LADDER_NTIERS; k++)
        if (l->tier_blocks[k] > 0) printf(" %s %.0f", kv_ladder_tier_names[k], g->tier_tokens[k]);
    putchar('\n');
}

static void print_ladder(const kv_ladder *l)
{
    printf("trace     %s (%d-token blocks)\n", l->trace, l->trace_block_tokens);
    printf("engine    %d-token blocks%s, context cap ", l->block_tokens, l->full_blocks ? ", full blocks only" : "");
    if (l->max_model_len > 0) printf("%" PRId64 " tokens\n", l->max_model_len);
    else printf("none\n");
    printf("pool      %d cache node%s, eviction %s, router %s; capacity in blocks:", l->nodes, l->nodes == 1 ? "" : "s",
           l->policy, l->router);
    for (int k = 0; k < KV_LADDER_NTIERS; k++)
        if (l->tier_blocks[k] >= SIM_COUNT_UNBOUNDED) printf(" %s inf", kv_ladder_tier_names[k]);
        else if (l->tier_blocks[k] > 0) printf(" %s %" PRId64, kv_ladder_tier_names[k], l->tier_blocks[k]);
    printf("\n\n%-12s %15s %15s %14s %12s %12s\n", "rung", "hit_rate_blocks", "hit_rate_tokens", "tokens_saved",
           "loss_tokens", "ttft_p90_ms");
    for (int i = 0; i < KV_NRUNGS; i++) {
        const kv_rung *g = &l->rung[i];
        if (!g->done) continue;
        char name[24], ttft[32] = "-";
        snprintf(name, sizeof name, "%c %s", 'a' + i, kv_rung_names[i]);
        if (i == KV_RUNG_ROUTED) snprintf(ttft, sizeof ttft, "%.1f", g->ttft_p90_ms);
        printf("%-12s %15.4f %15.4f %14" PRId64 " %12.4f %12s\n", name, g->rate_blocks, g->rate_tokens, g->hit_tokens,
               kv_ladder_loss(l, i), ttft);
        print_tiers(l, g);
    }
}

static void print_regret(const kv_ladder *l)
{
    printf("\nrouting regret against rung d (%.4f tokens)\n", l->rung[KV_RUNG_POLICY].rate_tokens);
    printf("%-20s %15s %15s %12s %13s\n", "router", "hit_rate_blocks", "hit_rate_tokens", "ttft_p90_ms",
           "regret_tokens");
    for (int i = 0; i < l->nregret; i++) {
        const kv_ladder_regret *x = &l->regret[i];
        printf("%-20s %15.4f %15.4f %12.1f %13.4f\n", x->router, x->rate_blocks, x->rate_tokens, x->ttft_p90_ms,
               x->regret_tokens);
    }
}

static int build(ladder_args *a, kv_ladder *l, sim_err *err)
{
    if (kv_ladder_build(&a->o, l, err)) return -1;
    if (!a->regret) return 0;
    int n = (int)sched_router_count();
    const char **names = sim_xcalloc((size_t)n, sizeof *names);
    for (int i = 0; i < n; i++) names[i] = sched_router_at((size_t)i)->name;
    int rc = kv_ladder_regret_add(&a->o, l, names, n, err);
    free(names);
    return rc;
}

/* The rungs into the results database, when --db names one. */
static int record(const ladder_args *a, const kv_ladder *l, sim_err *err)
{
    int64_t id;
    return a->db ? kv_ladder_db_write(l, a->db, &id, err) : 0;
}

int cmd_hitrate_ladder(int argc, char **argv)
{
    ladder_args a = {0};
    int status = parse(argc, argv, &a);
    if (status >= 0) {
        free(a.sets);
        return status;
    }
    kv_ladder l;
    sim_err err;
    status = SIM_EXIT_OK;
    if (build(&a, &l, &err) || record(&a, &l, &err)) status = sim_usage_error("hitrate", err.msg);
    for (int i = 0; status == SIM_EXIT_OK && i < l.nwarnings; i++)
        fprintf(stderr, "kvsim hitrate: warning: %s\n", l.warning[i]);
    if (status == SIM_EXIT_OK && a.json) {
        json_t *o = kv_ladder_json(&l);
        json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        putchar('\n');
        json_decref(o);
    } else if (status == SIM_EXIT_OK) {
        print_ladder(&l);
        if (l.nregret) print_regret(&l);
    }
    kv_ladder_free(&l);
    free(a.sets);
    return status;
}
