/* sim/cli/cmd_hitrate_pic.c — `kvsim hitrate --pic POLICY`: recompute
 * fraction, chunk hit rate and peak HBM footprint vs store capacity by
 * cache-only replay of a segment trace (docs/pic.md). This file parses
 * the options and prints; the replay is sim/replay/pic_replay.c. */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sim/cli/cli.h"
#include "sim/config/model.h"
#include "sim/replay/pic_replay.h"

typedef enum cap_unit { CAP_TOKENS, CAP_BLOCKS, CAP_BYTES } cap_unit;

typedef struct pic_opts {
    const char *trace, *model, *caps;
    cap_unit unit;
    const kv_pic_policy *pol;
    kv_pic_params params;
    int64_t window;
    bool json;
    bool epic_given, ratio_given; /* --epic-tokens, --cacheblend-ratio */
} pic_opts;

static void usage(FILE *f)
{
    fprintf(f, "usage: kvsim hitrate --pic POLICY --trace FILE [--window W]\n"
               "                     [--capacity-tokens LIST | --capacity-blocks LIST | --capacity-bytes LIST]\n"
               "                     [--block-tokens B] [--model NAME] [--json]\n\n"
               "Cache-only replay of a segment trace through a position-independent cache\n"
               "(docs/pic.md): requests in trace order, W in flight; prints for each\n"
               "store capacity the recompute fraction (tokens computed / input tokens), the\n"
               "chunk hit rate and the peak HBM KV footprint.\n\n"
               "  --pic POLICY            ");
    for (size_t i = 0; kv_pic_policy_at(i); i++)
        fprintf(f, "%s%s", i ? "|" : "", kv_pic_policy_name(kv_pic_policy_at(i)));
    fprintf(f, "\n  --trace FILE            segment trace (docs/trace.md)\n"
               "  --window W              requests in flight (default 1)\n"
               "  --capacity-tokens LIST  store capacities in tokens, e.g. 1e5,1e6,inf (default inf)\n"
               "  --capacity-blocks LIST  ... in blocks of B tokens\n"
               "  --capacity-bytes LIST   ... in bytes of KV of --model, e.g. 8GiB,inf\n"
               "  --block-tokens B        tokens per HBM block (default 16); it must divide the\n"
               "                          trace's 512-token hash_ids blocks, as kvstore.pic_block_tokens\n"
               "                          must divide trace.block_tokens in kvsim run\n"
               "  --cacheblend-ratio X    share of a reused chunk CacheBlend recomputes (default 0.15;\n"
               "                          --pic cacheblend only)\n"
               "  --epic-tokens N         leading tokens of a reused chunk EPIC recomputes (default 16;\n"
               "                          --pic epic only)\n"
               "  --model NAME            model preset for bytes (default llama3-70b)\n"
               "  --json                  one JSON object instead of the table\n"
               "  -h, --help              this text\n\nPolicies:\n");
    for (size_t i = 0; kv_pic_policy_at(i); i++)
        fprintf(f, "  %-11s %s\n", kv_pic_policy_name(kv_pic_policy_at(i)), kv_pic_policy_help(kv_pic_policy_at(i)));
}

static int set_int(const char *what, const char *v, int64_t lo, int64_t hi, int64_t *out, sim_err *err)
{
    if (sim_parse_i64(v, what, out, err)) return -1;
    if (*out < lo || *out > hi) return sim_errf(err, "%s: %s is not in [%" PRId64 ", %" PRId64 "]", what, v, lo, hi);
    return 0;
}

static int set_opt(pic_opts *o, int c, const char *v, sim_err *err)
{
    int64_t n;
    switch (c) {
    case 'p':
        if (!(o->pol = kv_pic_policy_lookup(v))) {
            char names[256];
            size_t at = 0;
            names[0] = 0;
            for (size_t i = 0; i < kv_pic_policy_count() && at < sizeof names; i++)
                at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", i ? ", " : "",
                                       kv_pic_policy_name(kv_pic_policy_at(i)));
            return sim_errf(err, "--pic: '%s' is not a PIC policy (known: %s)", v, names);
        }
        return 0;
    case 't': o->trace = v; return 0;
    case 'w': return set_int("--window", v, 1, INT32_MAX, &o->window, err);
    case 'b':
        if (set_int("--block-tokens", v, 1, 1 << 20, &n, err)) return -1;
        o->params.block_tokens = (int)n;
        return 0;
    case 'e':
        if (set_int("--epic-tokens", v, 0, INT32_MAX, &n, err)) return -1;
        o->params.epic_tokens = (int)n;
        o->epic_given = true;
        return 0;
    case 'r': o->ratio_given = true; return sim_parse_double(v, "--cacheblend-ratio", &o->params.cacheblend_ratio, err);
    case 'm': o->model = v; return 0;
    case 'j': o->json = true; return 0;
    }
    if (o->caps) return sim_errf(err, "give one of --capacity-tokens, --capacity-blocks, --capacity-bytes");
    o->caps = v;
    o->unit = c == 'T' ? CAP_TOKENS : c == 'B' ? CAP_BLOCKS : CAP_BYTES;
    return 0;
}

static int parse(int argc, char **argv, pic_opts *o, sim_err *err)
{
    static const struct option longopts[] = {
        {"pic", required_argument, NULL, 'p'},
        {"trace", required_argument, NULL, 't'},
        {"window", required_argument, NULL, 'w'},
        {"block-tokens", required_argument, NULL, 'b'},
        {"epic-tokens", required_argument, NULL, 'e'},
        {"cacheblend-ratio", required_argument, NULL, 'r'},
        {"model", required_argument, NULL, 'm'},
        {"json", no_argument, NULL, 'j'},
        {"capacity-tokens", required_argument, NULL, 'T'},
        {"capacity-blocks", required_argument, NULL, 'B'},
        {"capacity-bytes", required_argument, NULL, 'Y'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'h') return 1;
        if (c == '?') return sim_errf(err, "bad option (see kvsim hitrate pic --help)");
        if (set_opt(o, c, optarg, err)) return -1;
    }
    char msg[1024];
    if (optind < argc)
        return sim_errf(err, "%s", sim_cli_unexpected(msg, sizeof msg, "hitrate pic", argv[optind], "--trace"));
    if (!o->trace) return sim_errf(err, "--trace FILE is required");
    /* each knob is one policy's: with another it would be taken and change nothing */
    const char *pol = o->pol ? kv_pic_policy_name(o->pol) : NULL;
    if (o->epic_given && (!pol || strcmp(pol, "epic")))
        return sim_errf(err,
                        "--epic-tokens has no effect with --pic %s: only epic recomputes a fixed count of a "
                        "reused chunk's leading tokens (drop it, or --pic epic)",
                        pol ? pol : "(none)");
    if (o->ratio_given && (!pol || strcmp(pol, "cacheblend")))
        return sim_errf(err,
                        "--cacheblend-ratio has no effect with --pic %s: only cacheblend recomputes a share of "
                        "a reused chunk (drop it, or --pic cacheblend)",
                        pol ? pol : "(none)");
    static const kv_pic_names names = {"--block-tokens", "the trace's hash_ids blocks", "--cacheblend-ratio",
                                       "--epic-tokens"};
    return kv_pic_params_check(&o->params, &names, err);
}

/* The capacity list in blocks (SIM_COUNT_UNBOUNDED for inf); n items. */
static int capacities(const pic_opts *o, double kvb, int64_t **out, int *n, sim_err *err)
{
    static const char *const flag[] = {"--capacity-tokens", "--capacity-blocks", "--capacity-bytes"};
    const char *list = o->caps ? o->caps : "inf";
    size_t len = strlen(list);
    if (len == 0 || list[0] == ',' || list[len - 1] == ',' || strstr(list, ",,"))
        return sim_errf(err, "%s: '%s' is not a list of sizes (expected e.g. 1e6,inf)", flag[o->unit], list);
    char *copy = sim_xstrdup(list), *save = NULL;
    *out = sim_xmalloc((len / 2 + 1) * sizeof **out);
    *n = 0;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        double v;
        if ((o->unit == CAP_BYTES ? sim_parse_size : sim_parse_count)(item, flag[o->unit], &v, err)) {
            free(copy);
            return -1;
        }
        double blocks = o->unit == CAP_BLOCKS   ? v
                        : o->unit == CAP_TOKENS ? v / o->params.block_tokens
                                                : v / (kvb * o->params.block_tokens);
        (*out)[(*n)++] = sim_count_in(blocks, 1);
    }
    free(copy);
    return 0;
}

static json_t *point_json(int64_t cap, const pic_opts *o, double kvb, const kv_pic_result *r)
{
    double block_bytes = kvb * o->params.block_tokens;
    json_t *p =
        json_pack("{s:f, s:f, s:f, s:I, s:f, s:I, s:I, s:I, s:I, s:I}", "recompute_fraction", r->recompute_fraction,
                  "computed_positions_fraction", r->position_fraction, "chunk_hit_rate", r->chunk_hit_rate,
                  "peak_footprint_blocks", (json_int_t)r->peak_footprint_blocks, "peak_footprint_bytes",
                  (double)r->peak_footprint_blocks * block_bytes, "input_tokens", (json_int_t)r->input_tokens,
                  "computed_tokens", (json_int_t)r->computed_tokens, "chunks", (json_int_t)r->chunks, "chunk_hits",
                  (json_int_t)r->chunk_hits, "evictions", (json_int_t)r->evictions);
    kv_pic_peak_json(&r->at_peak, p);
    if (cap == SIM_COUNT_UNBOUNDED) {
        json_object_set_new(p, "capacity_blocks", json_string("inf"));
        json_object_set_new(p, "capacity_tokens", json_string("inf"));
    } else {
        json_object_set_new(p, "capacity_blocks", json_integer(cap));
        json_object_set_new(p, "capacity_tokens", json_integer(cap * o->params.block_tokens));
    }
    return p;
}

static void print_row(int64_t cap, const pic_opts *o, double kvb, const kv_pic_result *r)
{
    char c[32];
    if (cap == SIM_COUNT_UNBOUNDED) snprintf(c, sizeof c, "inf");
    else snprintf(c, sizeof c, "%" PRId64, cap);
    printf("%16s %18.4f %15.4f %14.4f %22" PRId64 " %12.3f\n", c, r->recompute_fraction, r->position_fraction,
           r->chunk_hit_rate, r->peak_footprint_blocks,
           (double)r->peak_footprint_blocks * kvb * o->params.block_tokens / 1073741824.0);
}

static int run_points(const pic_opts *o, const kv_pic_trace *t, const sim_model *m, const int64_t *caps, int n)
{
    double kvb = sim_model_kv_bytes_per_token(m);
    json_t *points = json_array();
    if (!o->json) {
        printf("trace     %s (%" PRId64 " requests, %" PRId64 " with segments)\n", t->path, t->n, t->segment_requests);
        printf("setup     pic %s, window %" PRId64 ", %d-token blocks, %s (%.0f KV bytes/token)\n\n",
               kv_pic_policy_name(o->pol), o->window, o->params.block_tokens, m->name, kvb);
        printf("%16s %18s %15s %14s %22s %12s\n", "capacity_blocks", "recompute_fraction", "with_padding",
               "chunk_hit_rate", "peak_footprint_blocks", "peak_GiB");
    }
    for (int i = 0; i < n; i++) {
        kv_pic_params p = o->params;
        p.capacity_blocks = caps[i];
        kv_pic_result r;
        kv_pic_replay(t, o->pol, &p, o->window, &r);
        if (o->json) json_array_append_new(points, point_json(caps[i], o, kvb, &r));
        else print_row(caps[i], o, kvb, &r);
    }
    if (o->json) {
        json_t *j =
            json_pack("{s:s, s:s, s:I, s:i, s:s, s:f, s:I, s:o}", "trace", t->path, "pic", kv_pic_policy_name(o->pol),
                      "window", (json_int_t)o->window, "block_tokens", o->params.block_tokens, "model", m->name,
                      "kv_bytes_per_token", kvb, "requests", (json_int_t)t->n, "points", points);
        json_dumpf(j, stdout, JSON_REAL_PRECISION(10));
        putchar('\n');
        json_decref(j);
    } else {
        json_decref(points);
    }
    return SIM_EXIT_OK;
}

int cmd_hitrate_pic(int argc, char **argv)
{
    pic_opts o = {.model = "llama3-70b", .window = 1};
    o.params = (kv_pic_params){.block_tokens = 16, .prefix_tokens = 512, .cacheblend_ratio = 0.15, .epic_tokens = 16};
    sim_err err;
    int rc = parse(argc, argv, &o, &err);
    if (rc > 0) {
        usage(stdout);
        return SIM_EXIT_OK;
    }
    if (rc) return sim_usage_error("hitrate", err.msg);
    sim_model m;
    int64_t *caps = NULL;
    int n = 0;
    kv_pic_trace t;
    if (sim_model_load(o.model, &m, &err) || capacities(&o, sim_model_kv_bytes_per_token(&m), &caps, &n, &err)) {
        free(caps);
        return sim_usage_error("hitrate", err.msg);
    }
    sim_trace_opts topts = sim_trace_default_opts();
    topts.block_tokens = o.params.prefix_tokens;
    if (kv_pic_trace_load(&t, o.trace, &topts, &err)) {
        kv_pic_trace_free(&t);
        free(caps);
        return sim_usage_error("hitrate", err.msg);
    }
    int status = run_points(&o, &t, &m, caps, n);
    kv_pic_trace_free(&t);
    free(caps);
    return status;
}
