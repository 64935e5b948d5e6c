/* sim/cli/cmd_plan.c — `kvsim plan`: the smallest DRAM capacity per node that
 * reaches a target fraction of the achievable prefix hit rate, in tokens,
 * blocks and bytes for a model (Mooncake §7.3.1). This file parses the
 * options and prints; the bisection is sim/replay/plan.c. */
#include "sim/cli/cli.h"
#include "sim/replay/hitrate.h"
#include "sim/replay/plan.h"
#include "sim/config/model.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: kvsim plan --trace FILE [--target F] [--model NAME] [--hardware NAME] [--policy NAME]\n"
               "                  [--nodes N] [--scope global|local] [--placement RULE] [--tiers SPEC]\n"
               "                  [--block-tokens N] [--params JSON] [--json]\n\n"
               "Capacity planning by cache-only replay: bisects the DRAM capacity per node for\n"
               "the smallest one whose block hit rate reaches F x the hit rate the same setup\n"
               "gets with unbounded DRAM, and reports it in blocks, tokens and bytes, per node\n"
               "and in total, against the hardware preset's DRAM per node. A placement that\n"
               "loads one node with more than twice its share is warned about on stderr.\n"
               "(kvsim plan crossover --help: when loading KV beats recomputing it.)\n"
               "(kvsim plan slo --help: the smallest cluster whose runs meet latency targets.)\n"
               "(kvsim plan tiers --help: one cluster's hit rate, TTFT and price against its DRAM.)\n\n"
               "  --target F              fraction of the achievable hit rate, (0, 1] (default 0.9)\n"
               "  --model NAME            model preset or JSON file for KV bytes per token\n"
               "                          (default llama3-70b; presets in configs/models/)\n"
               "  --hardware NAME         hardware preset whose DRAM per node the answer is checked\n"
               "                          against (default a800x8; presets in configs/hardware/)\n");
    kv_hitrate_print_options(f, false);
    fprintf(f, "  --json                  one JSON object instead of the text\n"
               "  -h, --help              this text\n");
}

/* The hardware preset the answer is compared with: its DRAM per node. */
typedef struct plan_hw {
    const char *name;
    double dram_bytes;
} plan_hw;

static int load_hw(plan_hw *hw, sim_err *err)
{
    char path[4096];
    if (sim_preset_path("hardware", hw->name, path, sizeof path, err)) return -1;
    json_error_t je;
    json_t *o = json_load_file(path, 0, &je);
    if (!o) return sim_json_file_errf(err, "", path, je.line, je.text, NULL);
    const json_t *d = json_object_get(o, "dram_bytes");
    double v = json_is_string(d) ? 0 : json_number_value(d);
    int rc = json_is_string(d) ? sim_parse_size(json_string_value(d), "dram_bytes", &v, err) : 0;
    json_decref(o);
    if (rc == 0 && !(v > 0)) rc = sim_errf(err, "%s: dram_bytes: expected a size > 0", path);
    hw->dram_bytes = v;
    return rc;
}

static void print_text(const kv_hitrate_spec *s, const kv_replay_trace *t, const sim_model *m, double kvb,
                       double target, const kv_plan_result *p, const plan_hw *hw)
{
    char setup[512];
    kv_hitrate_describe(s, setup, sizeof setup);
    double tokens = (double)p->blocks * s->block_tokens, bytes = tokens * kvb;
    printf("trace     %s (%" PRId64 " requests)\n", t->path, t->nreq);
    printf("setup     %s\n", setup);
    printf("target    %.3g x achievable %.4f = block hit rate %.4f\n", target, p->max.hit_rate_blocks, p->goal);
    printf("capacity  %" PRId64 " blocks = %.0f tokens per node (hit rate %.4f blocks, %.4f tokens)\n", p->blocks,
           tokens, p->best.hit_rate_blocks, p->best.hit_rate_tokens);
    printf("model     %s: %.0f bytes/token -> %.3g TB DRAM per node, %.3g TB across %d node%s\n", m->name, kvb,
           bytes / 1e12, bytes * s->nodes / 1e12, s->nodes, s->nodes > 1 ? "s" : "");
    if (bytes <= hw->dram_bytes)
        printf("hardware  %s: %.3g TB DRAM per node: fits (%.0f%% of it)\n", hw->name, hw->dram_bytes / 1e12,
               100 * bytes / hw->dram_bytes);
    else
        printf("hardware  %s: %.3g TB DRAM per node: does NOT fit (needs %.3g TB, %.1fx)\n", hw->name,
               hw->dram_bytes / 1e12, bytes / 1e12, bytes / hw->dram_bytes);
    printf("replays   %d\n", p->replays);
}

static void print_json(const kv_hitrate_spec *s, const kv_replay_trace *t, const sim_model *m, double kvb,
                       double target, const kv_plan_result *p, const plan_hw *hw)
{
    double tokens = (double)p->blocks * s->block_tokens, bytes = tokens * kvb;
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:i, s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:f, s:f, s:f, s:i}", "trace", t->path,
                  "policy", s->policy, "scope", kv_scope_name(s->scope), "nodes", s->nodes, "model", m->name,
                  "kv_bytes_per_token", kvb, "target", target, "max_hit_rate_blocks", p->max.hit_rate_blocks,
                  "goal_hit_rate_blocks", p->goal, "hit_rate_blocks", p->best.hit_rate_blocks, "hit_rate_tokens",
                  p->best.hit_rate_tokens, "capacity_blocks", (json_int_t)p->blocks, "capacity_tokens", tokens,
                  "capacity_bytes", bytes, "total_bytes", bytes * s->nodes, "replays", p->replays);
    json_object_update_new(o, json_pack("{s:s, s:f, s:b, s:f}", "hardware", hw->name, "hardware_dram_bytes",
                                        hw->dram_bytes, "fits", bytes <= hw->dram_bytes, "busiest_node_share",
                                        p->best.busiest_share));
    json_dumpf(o, stdout, JSON_REAL_PRECISION(10));
    putchar('\n');
    json_decref(o);
}

/* What the command line says besides the replay setup. */
typedef struct plan_args {
    double target;
    const char *model;
    plan_hw hw;
    bool json, help;
} plan_args;

/* Command-line parsing into spec and args; 0 or -1 with err. */
static int parse_args(int argc, char **argv, kv_hitrate_spec *spec, plan_args *a, sim_err *err)
{
    static const struct option longopts[] = {
        KV_HITRATE_LONGOPTS,
        {"target", required_argument, NULL, 't'},
        {"model", required_argument, NULL, 'm'},
        {"hardware", required_argument, NULL, 'w'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, li, rc = 0;
    optind = 1;
    while (rc == 0 && (c = getopt_long(argc, argv, "h", longopts, &li)) != -1) {
        switch (c) {
        case 0:
            if (!strcmp(longopts[li].name, "capacity-tokens"))
                return sim_errf(err, "plan searches the capacity: --capacity-tokens does not apply");
            rc = kv_hitrate_set(spec, longopts[li].name, optarg ? optarg : "", err);
            break;
        case 't':
            rc = sim_parse_double(optarg, "--target", &a->target, err);
            if (rc == 0 && !(a->target > 0 && a->target <= 1))
                rc = sim_errf(err, "--target: %s is not in (0, 1]", optarg);
            break;
        case 'm': a->model = optarg; break;
        case 'w': a->hw.name = optarg; break;
        case 'j': a->json = true; break;
        case 'h': a->help = true; return 0;
        default: return sim_errf(err, "bad option (see kvsim plan --help)");
        }
    }
    char note[256];
    if (kv_hitrate_deprecation(spec, false, note, sizeof note)) fprintf(stderr, "kvsim plan: %s\n", note);
    char msg[1024];
    if (rc == 0 && optind < argc)
        rc = sim_errf(err, "%s", sim_cli_unexpected(msg, sizeof msg, "plan", argv[optind], "--trace"));
    if (rc == 0 && spec->dram_in_tiers) /* it was once ignored: the search sets the DRAM tier */
        return sim_errf(err, "plan searches the DRAM capacity: --tiers dram= does not apply (give hbm= and ssd= only)");
    return rc ? rc : kv_hitrate_finish(spec, err);
}

/* The search, and its warnings (a skewed placement). */
static int plan_run(kv_replay_trace *t, const kv_hitrate_spec *spec, plan_args *a, sim_model *m, kv_plan_result *p,
                    sim_err *err)
{
    if (sim_model_load(a->model, m, err) || load_hw(&a->hw, err) ||
        kv_replay_load(t, spec->trace, spec->block_tokens, err) || kv_plan(t, spec, a->target, p, err))
        return -1;
    if (t->block_warning) fprintf(stderr, "kvsim plan: warning: %s\n", t->block_warning);
    char note[512];
    /* the goal comes from the unbounded replay: its skew matters as much */
    const kv_replay_result *r = kv_replay_skewed(&p->best, spec->nodes) ? &p->best : &p->max;
    if (kv_replay_skewed(r, spec->nodes)) {
        kv_replay_skew_note(spec, r, note, sizeof note);
        fprintf(stderr, "kvsim plan: warning: %s\n", note);
    }
    return 0;
}

int cmd_plan(int argc, char **argv)
{
    static const char *const subs[] = {"slo", "crossover", "tiers"};
    if (argc > 1 && !strcmp(argv[1], "crossover")) return cmd_plan_crossover(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "slo")) return cmd_plan_slo(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "tiers")) return cmd_plan_tiers(argc - 1, argv + 1);
    const char *mean = argc > 1 && argv[1][0] != '-' ? sim_did_you_mean(argv[1], subs, 3) : "";
    if (*mean) {
        fprintf(stderr, "kvsim plan: unknown subcommand '%s'%s\n", argv[1], mean);
        return SIM_EXIT_USAGE;
    }
    kv_replay_keep_memory();
    kv_hitrate_spec spec;
    kv_hitrate_spec_init(&spec);
    plan_args a = {.target = 0.9, .model = "llama3-70b", .hw = {.name = "a800x8"}};
    sim_model model;
    kv_replay_trace t = {0};
    kv_plan_result p;
    sim_err err;
    int status = SIM_EXIT_OK;
    if (parse_args(argc, argv, &spec, &a, &err) || (!a.help && plan_run(&t, &spec, &a, &model, &p, &err)))
        status = sim_usage_error("plan", err.msg);
    else if (a.help) usage(stdout);
    else if (a.json) print_json(&spec, &t, &model, sim_model_kv_bytes_per_token(&model), a.target, &p, &a.hw);
    else print_text(&spec, &t, &model, sim_model_kv_bytes_per_token(&model), a.target, &p, &a.hw);
    kv_replay_free(&t);
    kv_hitrate_spec_free(&spec);
    return status;
}
