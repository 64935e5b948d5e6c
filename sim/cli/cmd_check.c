/* sim/cli/cmd_check.c — `kvsim check`: the CI regression check (format in
 * sim/replay/check.h).
 *
 *   kvsim check --baseline FILE            re-run every measurement FILE names;
 *                                          exit 3 with a table of expected / got /
 *                                          delta when a number moved beyond its
 *                                          tolerance
 *   kvsim check --baseline FILE --write-baseline OUT
 *                                          re-record FILE's measurements into OUT
 *   kvsim check --write-baseline OUT --trace T [--policies L] [--capacity-tokens L]
 *                                          record a new baseline: every policy × capacity
 */
#include "sim/replay/check.h"
#include "sim/cli/cli.h"
#include "sim/replay/hitrate.h"
#include "sim/store/evict/registry.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- measurement kinds -------------------------------------------------- */

static const sim_check_kind kinds[] = {
    {"hitrate", "cache-only replay hit rate at one capacity (kvsim hitrate)", sim_check_hitrate},
};

#define NKINDS (sizeof kinds / sizeof kinds[0])

static const sim_check_kind *kind_lookup(const char *name)
{
    for (size_t i = 0; i < NKINDS; i++)
        if (!strcmp(kinds[i].name, name)) return &kinds[i];
    return NULL;
}

/* Traces are loaded once per check run, keyed by path and block size. */
typedef struct loaded_trace {
    kv_replay_trace t;
    int block_tokens;
} loaded_trace;

struct sim_check_ctx {
    loaded_trace *traces;
    int ntraces;
};

static void ctx_free(sim_check_ctx *ctx)
{
    for (int i = 0; i < ctx->ntraces; i++) kv_replay_free(&ctx->traces[i].t);
    free(ctx->traces);
}

static int ctx_trace(sim_check_ctx *ctx, const char *path, int block_tokens, kv_replay_trace **out, sim_err *err)
{
    for (int i = 0; i < ctx->ntraces; i++)
        if (ctx->traces[i].block_tokens == block_tokens && !strcmp(ctx->traces[i].t.path, path)) {
            *out = &ctx->traces[i].t;
            return 0;
        }
    kv_replay_trace t;
    if (kv_replay_load(&t, path, block_tokens, err)) return -1;
    ctx->traces = sim_xrealloc(ctx->traces, (size_t)(ctx->ntraces + 1) * sizeof *ctx->traces);
    ctx->traces[ctx->ntraces] = (loaded_trace){.t = t, .block_tokens = block_tokens};
    *out = &ctx->traces[ctx->ntraces++].t;
    return 0;
}

int sim_check_hitrate(sim_check_ctx *ctx, const json_t *args, json_t **got, sim_err *err)
{
    kv_hitrate_spec spec;
    kv_hitrate_spec_init(&spec);
    const char *key;
    const json_t *value;
    int rc = 0;
    json_object_foreach((json_t *)args, key, value) {
        if (rc == 0) rc = kv_hitrate_set_json(&spec, key, value, err);
    }
    if (rc == 0) rc = kv_hitrate_finish(&spec, err);
    if (rc == 0 && spec.ncapacity != 1) rc = sim_errf(err, "capacity_tokens: a hitrate measurement takes one value");
    kv_replay_trace *t;
    kv_replay_result r;
    if (rc == 0) rc = ctx_trace(ctx, spec.trace, spec.block_tokens, &t, err);
    if (rc == 0) rc = kv_hitrate_point(t, &spec, spec.capacity[0], &r, err);
    if (rc == 0)
        *got = json_pack("{s:f, s:f}", "hit_rate_blocks", r.hit_rate_blocks, "hit_rate_tokens", r.hit_rate_tokens);
    kv_hitrate_spec_free(&spec);
    return rc;
}

/* ---- the check ---------------------------------------------------------- */

typedef struct check_totals {
    int numbers, moved;
} check_totals;

static void print_table_header(void)
{
    printf("%-36s %-16s %10s %10s %10s %9s  %s\n", "measurement", "metric", "expected", "got", "delta", "tolerance",
           "status");
}

static void print_row(const char *name, const char *metric, const json_t *expected, double got, double tol, bool ok)
{
    if (!expected) {
        printf("%-36s %-16s %10s %10.6f %10s %9s  %s\n", name, metric, "-", got, "-", "-", "recorded");
        return;
    }
    double e = json_number_value(expected), delta = fabs(got - e) < 5e-7 ? 0 : got - e;
    printf("%-36s %-16s %10.6f %10.6f %+10.6f %9.4g  %s\n", name, metric, e, got, delta, tol, ok ? "ok" : "FAIL");
}

/* Compare one measurement's numbers with its "expect" object and print its
 * rows; when recording, update expect's numbers with what was got (or, with
 * no expect yet, record every number). */
static int compare(json_t *m, const char *name, json_t *got, double tol, bool record, check_totals *tot,
                   sim_err *err)
{
    json_t *expect = json_object_get(m, "expect");
    if (expect && !json_is_object(expect)) return sim_errf(err, "measurement %s: \"expect\" must be an object", name);
    if (!expect && !record)
        return sim_errf(err, "measurement %s: no \"expect\" numbers (record them with --write-baseline)", name);
    const char *metric;
    json_t *value;
    json_object_foreach(expect ? expect : got, metric, value) {
        json_t *g = json_object_get(got, metric);
        if (!g) return sim_errf(err, "measurement %s: no metric '%s'", name, metric);
        if (expect && !json_is_number(value))
            return sim_errf(err, "measurement %s: expect.%s must be a number", name, metric);
        double delta = json_number_value(g) - (expect ? json_number_value(value) : 0);
        bool ok = !expect || fabs(delta) <= tol + 1e-12;
        print_row(name, metric, expect ? value : NULL, json_number_value(g), tol, ok);
        tot->numbers++;
        tot->moved += !ok;
        if (record && expect) json_object_set(expect, metric, g);
    }
    if (record && !expect) json_object_set(m, "expect", got);
    return 0;
}

static int run_measurement(sim_check_ctx *ctx, json_t *m, size_t i, double default_tol, bool record,
                           check_totals *tot, sim_err *err)
{
    char fallback[32];
    snprintf(fallback, sizeof fallback, "#%zu", i);
    const char *name = json_string_value(json_object_get(m, "name"));
    if (!name) name = fallback;
    const char *kind_name = json_string_value(json_object_get(m, "kind"));
    const sim_check_kind *kind = kind_name ? kind_lookup(kind_name) : NULL;
    const json_t *args = json_object_get(m, "args"), *tol = json_object_get(m, "tolerance");
    if (!kind) return sim_errf(err, "measurement %s: unknown or missing kind '%s'", name, kind_name ? kind_name : "");
    if (!json_is_object(args)) return sim_errf(err, "measurement %s: \"args\" must be an object", name);
    if (tol && (!json_is_number(tol) || json_number_value(tol) < 0))
        return sim_errf(err, "measurement %s: tolerance must be a non-negative number", name);
    json_t *got;
    sim_err why;
    if (kind->measure(ctx, args, &got, &why)) return sim_errf(err, "measurement %s: %s", name, why.msg);
    int rc = compare(m, name, got, tol ? json_number_value(tol) : default_tol, record, tot, err);
    json_decref(got);
    return rc;
}

static int run_all(json_t *baseline, bool record, check_totals *tot, sim_err *err)
{
    json_t *ms = json_object_get(baseline, "measurements");
    const json_t *tol = json_object_get(baseline, "tolerance");
    if (!json_is_array(ms)) return sim_errf(err, "baseline: \"measurements\" must be an array");
    sim_check_ctx ctx = {0};
    print_table_header();
    size_t i;
    json_t *m;
    int rc = 0;
    json_array_foreach(ms, i, m) {
        if (rc == 0) rc = json_is_object(m) ? run_measurement(&ctx, m, i, tol ? json_number_value(tol) : 0, record, tot, err)
                                            : sim_errf(err, "baseline: measurement #%zu is not an object", i);
    }
    ctx_free(&ctx);
    return rc;
}

/* ---- a new baseline ----------------------------------------------------- */

typedef struct new_baseline_opts {
    const char *trace, *policies, *capacities;
    double tolerance;
} new_baseline_opts;

/* Every policy × capacity as hitrate measurements on one trace. */
static int new_baseline(const new_baseline_opts *o, json_t **out, sim_err *err)
{
    if (!o->trace) return sim_errf(err, "--write-baseline without --baseline needs --trace FILE");
    json_t *ms = json_array();
    char *pols = sim_xstrdup(o->policies), *caps = NULL, *sp = NULL, *sc = NULL;
    int rc = 0;
    for (char *p = strtok_r(pols, ",", &sp); p && rc == 0; p = strtok_r(NULL, ",", &sp)) {
        const kv_evict_entry *e;
        rc = kv_evict_find(p, &e, err);
        free(caps);
        caps = sim_xstrdup(o->capacities);
        for (char *c = strtok_r(caps, ",", &sc); c && rc == 0; c = strtok_r(NULL, ",", &sc)) {
            char name[96];
            snprintf(name, sizeof name, "%s %s", p, c);
            json_array_append_new(ms, json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "name", name, "kind", "hitrate",
                                                "args", "trace", o->trace, "policy", p, "capacity_tokens", c));
        }
    }
    free(pols);
    free(caps);
    *out = json_pack("{s:i, s:f, s:o}", "kvsim_baseline", 1, "tolerance", o->tolerance, "measurements", ms);
    return rc;
}

/* ---- command ------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "usage: kvsim check --baseline FILE [--write-baseline OUT]\n"
               "       kvsim check --write-baseline OUT --trace FILE [--policies LIST]\n"
               "                   [--capacity-tokens LIST] [--tolerance X]\n\n"
               "CI regression check. With --baseline, re-runs every measurement the baseline\n"
               "names and compares each expected number with the new one: exit 3 and FAIL\n"
               "rows when |got - expected| > tolerance, exit 0 otherwise. With\n"
               "--write-baseline, records the current numbers instead (into OUT; from\n"
               "--baseline's measurements, or new hitrate measurements of every policy x\n"
               "capacity on --trace).\n\n"
               "Baseline format (JSON): {\"kvsim_baseline\": 1, \"tolerance\": 0.002,\n"
               "  \"measurements\": [{\"name\": \"lru 3e6\", \"kind\": \"hitrate\",\n"
               "    \"args\": {\"trace\": \"traces/default.jsonl\", \"capacity_tokens\": \"3e6\"},\n"
               "    \"tolerance\": 0.002, \"expect\": {\"hit_rate_blocks\": 0.3094}}]}\n"
               "hitrate args are kvsim hitrate's options with _ for - (one capacity).\n\n"
               "  --baseline FILE         the baseline to check (or to re-record)\n"
               "  --write-baseline OUT    record current numbers into OUT and exit 0\n"
               "  --trace FILE            new baseline: the trace\n"
               "  --policies LIST         new baseline: policies (default: all registered)\n"
               "  --capacity-tokens LIST  new baseline: capacities (default inf)\n"
               "  --tolerance X           new baseline: absolute tolerance (default 0.002)\n"
               "  -h, --help              this text\n\nmeasurement kinds:\n");
    for (size_t i = 0; i < NKINDS; i++) fprintf(f, "  %-23s %s\n", kinds[i].name, kinds[i].help);
}

static char *all_policies(void)
{
    char buf[512] = "";
    for (size_t i = 0; i < kv_evict_count(); i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? "," : "", kv_evict_at(i)->name);
    return sim_xstrdup(buf);
}

static int load_or_create(const char *baseline_path, const new_baseline_opts *nb, json_t **root, sim_err *err)
{
    if (!baseline_path) return new_baseline(nb, root, err);
    json_error_t je;
    *root = json_load_file(baseline_path, 0, &je);
    if (!*root) return sim_errf(err, "%s:%d: %s", baseline_path, je.line, je.text);
    if (!json_is_object(*root)) return sim_errf(err, "%s: a baseline is a JSON object", baseline_path);
    return 0;
}

static int finish(json_t *root, const char *write_path, const check_totals *tot)
{
    if (write_path) {
        if (json_dump_file(root, write_path, JSON_INDENT(2) | JSON_REAL_PRECISION(6))) {
            fprintf(stderr, "kvsim check: cannot write %s\n", write_path);
            return SIM_EXIT_INTERNAL;
        }
        printf("kvsim check: recorded %d numbers into %s\n", tot->numbers, write_path);
        return SIM_EXIT_OK;
    }
    if (tot->moved) {
        printf("kvsim check: %d of %d numbers moved beyond tolerance\n", tot->moved, tot->numbers);
        fprintf(stderr, "kvsim check: %d of %d numbers moved beyond tolerance (FAIL rows above)\n", tot->moved,
                tot->numbers);
        return SIM_EXIT_CHECK;
    }
    printf("kvsim check: all %d numbers within tolerance\n", tot->numbers);
    return SIM_EXIT_OK;
}

int cmd_check(int argc, char **argv)
{
    kv_replay_keep_memory();
    static const struct option longopts[] = {
        {"baseline", required_argument, NULL, 'b'}, {"write-baseline", required_argument, NULL, 'w'},
        {"trace", required_argument, NULL, 't'},    {"policies", required_argument, NULL, 'p'},
        {"capacity-tokens", required_argument, NULL, 'c'}, {"tolerance", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    const char *baseline = NULL, *write_path = NULL;
    char *policies = all_policies();
    new_baseline_opts nb = {.policies = policies, .capacities = "inf", .tolerance = 0.002};
    sim_err err;
    int c, rc = 0;
    optind = 1;
    while (rc == 0 && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'b': baseline = optarg; break;
        case 'w': write_path = optarg; break;
        case 't': nb.trace = optarg; break;
        case 'p': nb.policies = optarg; break;
        case 'c': nb.capacities = optarg; break;
        case 'T':
            rc = sim_parse_double(optarg, "--tolerance", &nb.tolerance, &err);
            if (rc == 0 && nb.tolerance < 0) rc = sim_errf(&err, "--tolerance: %s is negative", optarg);
            break;
        case 'h': usage(stdout); free(policies); return SIM_EXIT_OK;
        default: usage(stderr); free(policies); return SIM_EXIT_USAGE;
        }
    }
    if (rc == 0 && optind < argc) rc = sim_errf(&err, "unexpected argument '%s' (see --help)", argv[optind]);
    if (rc == 0 && !baseline && !write_path) rc = sim_errf(&err, "give --baseline FILE or --write-baseline OUT");
    json_t *root = NULL;
    check_totals tot = {0};
    if (rc == 0) rc = load_or_create(baseline, &nb, &root, &err);
    if (rc == 0) rc = run_all(root, write_path != NULL, &tot, &err);
    int status = rc ? sim_usage_error("check", err.msg) : finish(root, write_path, &tot);
    json_decref(root);
    free(policies);
    return status;
}
