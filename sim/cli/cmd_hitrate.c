/* sim/cli/cmd_hitrate.c — `kvsim hitrate`: prefix hit rate vs cache capacity by
 * cache-only replay (docs/store.md; Mooncake Fig. 16 for one pool, Fig. 17
 * for global vs local pools over N nodes, §5.2 for tiers and cache classes).
 *
 * The trace is parsed once; each capacity in the list is one replay. This
 * file parses the options and prints; the replay and the --db rows are
 * sim/replay (hitrate.c, hitrate_db.c). */
#include "sim/cli/cli.h"
#include "sim/config/model.h"
#include "sim/replay/hitrate.h"

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const tier_names[KV_NTIERS] = {"hbm", "dram", "ssd"};

static void usage(FILE *f)
{
    fprintf(f, "usage: kvsim hitrate --trace FILE [--capacity-tokens LIST] [--policy NAME]\n"
               "                     [--scope global|local] [--nodes N] [--placement RULE]\n"
               "                     [--tiers SPEC] [--block-tokens N] [--params JSON]\n"
               "                     [--no-promote] [--no-semantics] [--model NAME] [--json] [--db FILE]\n\n"
               "Cache-only replay (docs/store.md): requests in trace order, no timing; each\n"
               "request's prefix hit is counted, then all its blocks are accessed in order.\n"
               "Prints the block and token prefix hit rate for each DRAM capacity, and the\n"
               "trace's maximum (an infinite cache). With --pic, a segment trace through a\n"
               "position-independent cache instead (kvsim hitrate --pic mepic --help). With\n"
               "--ladder, the hit-rate ladder from the trace's ceiling down to what a config's\n"
               "cluster gets (kvsim hitrate --ladder --help).\n\n");
    kv_hitrate_print_options(f, true);
    fprintf(f, "  --model NAME            model preset or JSON file whose KV bytes per token turn\n"
               "                          capacities into bytes (default llama3-70b)\n"
               "  --json                  one JSON object instead of the table\n"
               "  --db FILE               also store the points in the hitrate table of a results\n"
               "                          database (kvsim report draws them; the infinite cache is\n"
               "                          stored once, as the trace maximum)\n"
               "  -h, --help              this text\n");
}

/* Exact integers as integers, infinity as the string "inf". */
static json_t *tokens_json(double tokens)
{
    if (isinf(tokens)) return json_string("inf");
    if (tokens == floor(tokens) && tokens < 9e15) return json_integer((json_int_t)tokens);
    return json_real(tokens);
}

static json_t *tiers_json(const kv_replay_result *r)
{
    json_t *o = json_object();
    for (kv_tier t = 0; t < KV_NTIERS; t++) {
        const kv_cache_stats *s = &r->tier[t];
        if (s->hits + s->misses + s->inserts == 0) continue;
        json_object_set_new(o, tier_names[t],
                            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "hits", (json_int_t)s->hits, "misses",
                                      (json_int_t)s->misses, "inserts", (json_int_t)s->inserts, "evictions",
                                      (json_int_t)s->evictions, "full_events", (json_int_t)s->full_events,
                                      "not_admitted", (json_int_t)s->not_admitted));
    }
    return o;
}

/* A capacity and the model it is measured for: tokens, KV bytes per token. */
typedef struct capacity_unit {
    int block_tokens;
    const sim_model *model;
    double kv_bytes_per_token;
} capacity_unit;

/* The bytes of the whole blocks a node of `tokens` capacity holds (a
 * cache holds whole blocks: the text's GB/node once was the nominal
 * capacity, up to a block more than the blocks/node beside it). */
static double held_bytes(double tokens, const capacity_unit *u)
{
    return (double)kv_tokens_to_blocks(tokens, u->block_tokens) * u->block_tokens * u->kv_bytes_per_token;
}

static json_t *point_json(double tokens, const capacity_unit *u, const kv_replay_result *r)
{
    int block_tokens = u->block_tokens;
    json_t *p = json_pack("{s:o, s:f, s:f, s:I, s:I, s:o}", "capacity_tokens", tokens_json(tokens), "hit_rate_blocks",
                          r->hit_rate_blocks, "hit_rate_tokens", r->hit_rate_tokens, "hit_blocks",
                          (json_int_t)r->hit_blocks, "blocks", (json_int_t)r->blocks, "tiers", tiers_json(r));
    if (!isinf(tokens)) {
        json_object_set_new(p, "capacity_blocks", json_integer((json_int_t)kv_tokens_to_blocks(tokens, block_tokens)));
        json_object_set_new(p, "capacity_bytes", json_real(tokens * u->kv_bytes_per_token));
        json_object_set_new(p, "held_bytes", json_real(held_bytes(tokens, u)));
    }
    return p;
}

static void print_header(const kv_hitrate_spec *s, const kv_replay_trace *t, const capacity_unit *u,
                         const kv_replay_result *max)
{
    char setup[512];
    kv_hitrate_describe(s, setup, sizeof setup);
    printf("trace     %s (%" PRId64 " requests, %" PRId64 " blocks)\n", t->path, t->nreq, t->nblocks);
    printf("setup     %s\n", setup);
    printf("model     %s: %.0f KV bytes/token\n", u->model->name, u->kv_bytes_per_token);
    printf("max       %.4f blocks, %.4f tokens (the trace's bound: one infinite cache of every block)\n\n",
           max->hit_rate_blocks, max->hit_rate_tokens);
    printf("%16s %12s %10s %16s %16s %7s\n", "capacity_tokens", "blocks/node", "GB/node", "hit_rate_blocks",
           "hit_rate_tokens", "of_max");
}

static void print_row(double tokens, const capacity_unit *u, const kv_replay_result *r, const kv_replay_result *max)
{
    char cap[32] = "inf", blocks[32] = "inf", gb[32] = "inf";
    if (!isinf(tokens)) {
        snprintf(cap, sizeof cap, "%.0f", tokens);
        snprintf(blocks, sizeof blocks, "%" PRId64, kv_tokens_to_blocks(tokens, u->block_tokens));
        snprintf(gb, sizeof gb, "%.4g", held_bytes(tokens, u) / 1e9);
    }
    double of_max = max->hit_rate_blocks > 0 ? r->hit_rate_blocks / max->hit_rate_blocks : 0;
    printf("%16s %12s %10s %16.4f %16.4f %7.3f\n", cap, blocks, gb, r->hit_rate_blocks, r->hit_rate_tokens, of_max);
}

/* Replay every capacity and print; 0 or an exit status. */
static int run_points(const kv_hitrate_spec *s, kv_replay_trace *t, const capacity_unit *u, bool json,
                      kv_hitrate_db *sink)
{
    sim_err err;
    kv_replay_result max, r;
    /* the database's infinite-cache row is this setup's (nodes, scope, the
     * trace's cache semantics), not the trace's bound: it once stored the
     * bound, 0.6323 where 4 local nodes reach 0.4730 */
    if (kv_hitrate_max(t, &max, &err) || (sink && kv_hitrate_point(t, s, INFINITY, &r, &err)) ||
        kv_hitrate_db_put_max(sink, &r, &err))
        return sim_usage_error("hitrate", err.msg);
    json_t *points = json_array();
    bool skew_said = false;
    if (!json) print_header(s, t, u, &max);
    for (int i = 0; i < s->ncapacity; i++) {
        if (kv_hitrate_point(t, s, s->capacity[i], &r, &err) || kv_hitrate_db_put(sink, s->capacity[i], &r, &err)) {
            json_decref(points);
            return sim_usage_error("hitrate", err.msg);
        }
        if (json) json_array_append_new(points, point_json(s->capacity[i], u, &r));
        else print_row(s->capacity[i], u, &r, &max);
        if (json && s->nodes > 1)
            json_object_set_new(json_array_get(points, (size_t)i), "busiest_node_share", json_real(r.busiest_share));
        if (kv_replay_skewed(&r, s->nodes) && !skew_said) {
            char note[512];
            kv_replay_skew_note(s, &r, note, sizeof note);
            fprintf(stderr, "kvsim hitrate: warning: %s\n", note);
            skew_said = true;
        }
    }
    if (json) {
        json_t *o =
            json_pack("{s:s, s:s, s:s, s:i, s:i, s:s, s:f, s:f, s:f, s:o}", "trace", t->path, "policy", s->policy,
                      "scope", kv_scope_name(s->scope), "nodes", s->nodes, "block_tokens", s->block_tokens, "model",
                      u->model->name, "kv_bytes_per_token", u->kv_bytes_per_token, "max_hit_rate_blocks",
                      max.hit_rate_blocks, "max_hit_rate_tokens", max.hit_rate_tokens, "points", points);
        json_dumpf(o, stdout, JSON_REAL_PRECISION(10));
        putchar('\n');
        json_decref(o);
    } else {
        json_decref(points);
    }
    return SIM_EXIT_OK;
}

/* One line on stderr when the deprecated --route was used. */
static void warn_deprecated(const kv_hitrate_spec *s)
{
    char note[256];
    if (kv_hitrate_deprecation(s, false, note, sizeof note)) fprintf(stderr, "kvsim hitrate: %s\n", note);
}

/* Read the trace, saying on stderr what its block size and whole-prompt
 * reuse mean for the rates. */
static int load_trace(kv_replay_trace *t, const kv_hitrate_spec *spec, sim_err *err)
{
    if (kv_replay_load(t, spec->trace, spec->block_tokens, err)) return -1;
    if (t->block_warning) fprintf(stderr, "kvsim hitrate: warning: %s\n", t->block_warning);
    char whole[512];
    if (kv_replay_whole_note(t, whole, sizeof whole)) fprintf(stderr, "kvsim hitrate: note: %s\n", whole);
    return 0;
}

int cmd_hitrate(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--pic") || !strncmp(argv[i], "--pic=", 6)) return cmd_hitrate_pic(argc, argv);
        else if (!strcmp(argv[i], "--ladder")) return cmd_hitrate_ladder(argc, argv);
    kv_replay_keep_memory();
    static const struct option longopts[] = {
        KV_HITRATE_LONGOPTS,
        {"json", no_argument, NULL, 'j'},
        {"model", required_argument, NULL, 'm'},
        {"db", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    kv_hitrate_spec spec;
    kv_hitrate_spec_init(&spec);
    bool json = false;
    const char *db = NULL, *model_name = "llama3-70b";
    sim_err err;
    int c, li, rc = 0;
    optind = 1;
    while (rc == 0 && (c = getopt_long(argc, argv, "h", longopts, &li)) != -1) {
        switch (c) {
        case 0: rc = kv_hitrate_set(&spec, longopts[li].name, optarg ? optarg : "", &err); break;
        case 'j': json = true; break;
        case 'd': db = optarg; break;
        case 'm': model_name = optarg; break;
        case 'h':
            usage(stdout);
            kv_hitrate_spec_free(&spec);
            return SIM_EXIT_OK;
        default:
            usage(stderr);
            kv_hitrate_spec_free(&spec);
            return SIM_EXIT_USAGE;
        }
    }
    warn_deprecated(&spec);
    char msg[1024];
    if (rc == 0 && optind < argc)
        rc = sim_errf(&err, "%s", sim_cli_unexpected(msg, sizeof msg, "hitrate", argv[optind], "--trace"));
    if (rc == 0) rc = kv_hitrate_finish(&spec, &err);
    sim_model model;
    if (rc == 0) rc = sim_model_load(model_name, &model, &err);
    capacity_unit unit = {spec.block_tokens, &model, rc == 0 ? sim_model_kv_bytes_per_token(&model) : 0};
    kv_replay_trace t;
    kv_hitrate_db *sink = NULL;
    if (rc == 0) rc = load_trace(&t, &spec, &err);
    if (rc == 0 && kv_hitrate_db_open(&sink, db, &spec, model.name, unit.kv_bytes_per_token, &err)) {
        kv_replay_free(&t);
        rc = -1;
    }
    if (rc) {
        kv_hitrate_spec_free(&spec);
        return sim_usage_error("hitrate", err.msg);
    }
    int status = run_points(&spec, &t, &unit, json, sink);
    kv_hitrate_db_close(sink);
    kv_replay_free(&t);
    kv_hitrate_spec_free(&spec);
    return status;
}
