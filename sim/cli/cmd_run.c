/* sim/cli/cmd_run.c — `kvsim run`: replay a trace through the simulated cluster
 * and record the run (config, fingerprints, per-request rows, samples,
 * summary) in a SQLite database. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched/registry.h"
#include "sim/cli/cli.h"
#include "sim/serving/serving.h"
#include "sim/config/config.h"
#include "sim/config/schema.h"
#include "sim/cost/cost.h"
#include "sim/results/results.h"

static const char run_usage[] =
    "usage: kvsim run [--trace FILE] [--config FILE] [--set key.path=value]... [--seed N]\n"
    "                 [--speed X] [--sample F] [--skip-bad [--verbose]] [--sort] [--db FILE] [--json]\n"
    "                 [--engine-bound] [--part]\n"
    "\n"
    "Replay a Mooncake-format trace through the simulated prefill/decode cluster.\n"
    "With no arguments: the bundled trace (traces/default.jsonl), default config.\n"
    "\n"
    "  --trace FILE       trace to replay (sets trace.path)\n"
    "  --config FILE      config file merged over configs/default.json (presets in configs/)\n"
    "  --set KEY=VALUE    override one config key, e.g. --set cluster.prefill=8\n"
    "                     --set policy.router=random --set kvstore.dram_bytes=512GiB\n"
    "  --seed N           RNG seed (sets seed)\n"
    "  --speed X          replay speed factor, 2 = arrivals twice as dense (trace.speed)\n"
    "  --sample F         keep each request with probability F (trace.sample)\n"
    "  --skip-bad         skip malformed trace lines (counted) instead of failing\n"
    "  -v, --verbose      list every skipped line (the first 100) with its line number\n"
    "  --sort             accept unsorted timestamps by sorting the trace first\n"
    "  --db FILE          results database (SQLite); default: a temporary one\n"
    "  --json             print the summary as one JSON object\n"
    "  --engine-bound     also time the run's event-heap pushes and pops alone, with no model behind\n"
    "                     them: summary key engine_bound (the event-loop bound; 8 bytes of memory\n"
    "                     per push or pop, so use a trace of at most a few million events)\n"
    "  --part             write --db FILE as a part for kvsim merge (what kvsim sweep's workers\n"
    "                     do): a new file for this one run, written without journal or sync as\n"
    "                     FILE.tmp and renamed to FILE when the run commits (removed if it fails)\n"
    "  -h, --help         this help\n"
    "\n"
    "Exit status: 0 ok; 2 bad arguments/config/trace, a results file that cannot be written\n"
    "(disk full, file-size limit) or a run stopped by limits.event_budget (message on stderr);\n"
    "1 internal error.\n";

typedef struct run_args {
    const char *config, *db;
    bool part; /* --part: write db as a sweep part */
    char **sets;
    int nsets;
    bool json, verbose, engine_bound;
} run_args;

/* Append a --set whose value is the JSON encoding of a string. */
static void add_string_set(run_args *a, const char *key, const char *value)
{
    a->sets[a->nsets++] = sim_cli_string_set(key, value);
}

static void add_set(run_args *a, const char *key, const char *value)
{
    size_t n = strlen(key) + strlen(value) + 2;
    a->sets[a->nsets] = sim_xmalloc(n);
    snprintf(a->sets[a->nsets++], n, "%s=%s", key, value);
}

/* Parse argv; returns -1 after printing help (status in *rc) or an error. */
static int parse_args(int argc, char **argv, run_args *a, int *rc)
{
    static const struct option opts[] = {
        {"trace", required_argument, 0, 't'},
        {"config", required_argument, 0, 'c'},
        {"set", required_argument, 0, 's'},
        {"seed", required_argument, 0, 'S'},
        {"speed", required_argument, 0, 'x'},
        {"sample", required_argument, 0, 'm'},
        {"skip-bad", no_argument, 0, 'k'},
        {"sort", no_argument, 0, 'o'},
        {"db", required_argument, 0, 'd'},
        {"json", no_argument, 0, 'j'},
        {"verbose", no_argument, 0, 'v'},
        {"engine-bound", no_argument, 0, 'e'},
        {"part", no_argument, 0, 'p'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    a->sets = sim_xcalloc((size_t)argc + 1, sizeof *a->sets);
    opterr = 0;
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "hv", opts, NULL)) != -1;) {
        switch (ch) {
        case 't': add_string_set(a, "trace.path", optarg); break;
        case 'c': a->config = optarg; break;
        case 's': a->sets[a->nsets++] = sim_xstrdup(optarg); break;
        case 'S': add_set(a, "seed", optarg); break;
        case 'x': add_set(a, "trace.speed", optarg); break;
        case 'm': add_set(a, "trace.sample", optarg); break;
        case 'k': add_set(a, "trace.skip_bad", "true"); break;
        case 'o': add_set(a, "trace.sort", "true"); break;
        case 'd': a->db = optarg; break;
        case 'j': a->json = true; break;
        case 'v': a->verbose = true; break;
        case 'e': a->engine_bound = true; break;
        case 'p': a->part = true; break;
        case 'h':
            fputs(run_usage, stdout);
            *rc = SIM_EXIT_OK;
            return -1;
        default:
            fprintf(stderr, "kvsim run: unknown or incomplete option '%s'\n%s", argv[optind - 1], run_usage);
            *rc = SIM_EXIT_USAGE;
            return -1;
        }
    }
    if (optind < argc) return *rc = sim_cli_unexpected_error("run", argv[optind], "--trace"), -1;
    if (a->part && !a->db) return *rc = sim_usage_error("run", "--part needs --db FILE (the part to write)"), -1;
    return 0;
}

static void print_dist(const char *name, const json_t *d)
{
    static const char *const stats[] = {"mean", "p50", "p90", "p99"};
    printf("%-10s", name);
    for (int i = 0; i < 4; i++) {
        char buf[64];
        printf("%s %s %s", i ? " " : "", stats[i],
               sim_cli_num(json_object_get(d, stats[i]), "%*.1f", 10, buf, sizeof buf));
    }
    putchar('\n');
}

#define J_INT(obj, key) ((long long)json_integer_value(json_object_get(obj, key)))
#define J_NUM(obj, key) json_number_value(json_object_get(obj, key))

/* What the peak HBM footprint of a PIC run was made of (docs/pic.md): the
 * requests in flight, the blocks they held counted once per request, the
 * same shared (each once), and their private blocks. */
static void print_peak(const json_t *s)
{
    long long shared = J_INT(s, "peak_shared_blocks");
    printf("at peak    %lld requests in flight: %lld held blocks stored once in %lld (%.2f requests each) + "
           "%lld private\n",
           J_INT(s, "peak_inflight_requests"), J_INT(s, "peak_held_blocks"), shared,
           shared > 0 ? (double)J_INT(s, "peak_held_blocks") / (double)shared : 0.0, J_INT(s, "peak_private_blocks"));
}

/* The cache, engine and MEPIC lines of a summary. */
static void print_cache(const json_t *s)
{
    char gpu[32];
    sim_cli_num(json_object_get(s, "prefill_gpu_s_mean"), "%*.3f", 1, gpu, sizeof gpu);
    if (json_object_get(s, "pic")) /* reuse is by chunk: no prefix block ever hits */
        printf("cache      %s chunks: hit rate %.3f, recompute fraction %.3f of prompt tokens; prefill GPU %s "
               "s/request\n",
               json_string_value(json_object_get(s, "pic")), J_NUM(s, "chunk_hit_rate"), J_NUM(s, "recompute_fraction"),
               gpu);
    else if (sim_serving_caveat(s, "no_block_hashes")) /* 0 by construction: no rate to print */
        printf("cache      no hit rate (the trace has no hash_ids); prefill GPU %s s/request\n", gpu);
    else
        printf("cache      hit rate %.3f blocks, %.3f tokens; %lld remote blocks; prefill GPU %s s/request\n",
               J_NUM(s, "hit_rate_blocks"), J_NUM(s, "hit_rate_tokens"), J_INT(s, "remote_blocks"), gpu);
    if (json_object_get(s, "instances"))
        printf("engine     %lld pages of %lld tokens per instance (%s cache): peak %lld; %lld preemptions; "
               "recompute fraction %.4f\n",
               J_INT(s, "hbm_pages"), J_INT(s, "page_tokens"), json_string_value(json_object_get(s, "gpu_cache")),
               J_INT(s, "peak_pages"), J_INT(s, "preemptions"), J_NUM(s, "recompute_fraction"));
    if (json_object_get(s, "instances") && strcmp(json_string_value(json_object_get(s, "gpu_cache")), "prefix"))
        print_peak(s);
    if (json_object_get(s, "pic")) {
        printf("pic        %s: peak HBM KV %lld blocks (%.2f GiB) of %lld; %lld waited for HBM, %lld rejected\n",
               json_string_value(json_object_get(s, "pic")), J_INT(s, "peak_footprint_blocks"),
               J_NUM(s, "peak_footprint_bytes") / 1073741824.0, J_INT(s, "pic_capacity_blocks"), J_INT(s, "pic_waited"),
               J_INT(s, "pic_rejected"));
        print_peak(s);
    }
}

static void print_summary(const sim_config *cfg, const json_t *s)
{
    const json_t *rej = json_object_get(s, "rejected");
    if (!strcmp(cfg->mode, "aggregated"))
        printf("kvsim run: %s — %s, %d aggregated instances, router %s\n", cfg->trace_path, cfg->model.name,
               cfg->n_instances, cfg->router);
    else
        printf("kvsim run: %s — %s, %dP%dD %s scope, router %s, admission %s\n", cfg->trace_path, cfg->model.name,
               cfg->n_prefill, cfg->n_decode, kv_scope_name(cfg->scope), cfg->router, cfg->admission);
    if (cfg->hetero)
        printf("hardware   prefill %s (%d GPUs), decode %s (%d GPUs)\n", cfg->prefill_hw.name, cfg->prefill_hw.gpus,
               cfg->decode_hw.name, cfg->decode_hw.gpus);
    if (J_INT(s, "skipped_lines") > 0)
        printf("trace      %lld bad lines skipped (trace.skip_bad; --verbose lists them)\n", J_INT(s, "skipped_lines"));
    const json_t *rp = json_object_get(s, "replay"), *sh = json_object_get(rp, "arrival_shift_ms");
    if (rp && J_INT(rp, "sessions") == 0)
        printf("sessions   none in the trace: trace.replay = closed replayed every request at its recorded time\n");
    else if (rp)
        printf("sessions   %lld, %lld later turns replayed closed-loop: arrivals moved by mean %.1f ms, p99 %.1f ms, "
               "max %.1f ms from recorded\n",
               J_INT(rp, "sessions"), J_INT(rp, "follow_up_turns"), J_NUM(sh, "mean"), J_NUM(sh, "p99"),
               J_NUM(sh, "max"));
    printf("requests   %lld   completed %lld   rejected %lld (at_arrival %lld, after_prefill %lld, ttft_slo %lld)",
           J_INT(s, "requests"), J_INT(s, "completed"), J_INT(rej, "total"), J_INT(rej, "at_arrival"),
           J_INT(rej, "after_prefill"), J_INT(rej, "ttft_slo"));
    /* under faults: the line adds up (it once left the lost out) */
    if (J_INT(s, "lost") > 0) printf("   lost %lld", J_INT(s, "lost"));
    if (J_INT(s, "retries") > 0) printf("   retries %lld", J_INT(s, "retries"));
    putchar('\n');
    print_dist("TTFT ms", json_object_get(s, "ttft_ms"));
    print_dist("TBT ms", json_object_get(s, "tbt_ms"));
    if (!strcmp(cfg->mode, "aggregated")) {
        print_dist("ITL ms", json_object_get(s, "itl_ms"));
        print_dist("E2E ms", json_object_get(s, "e2e_ms"));
    } else if (json_object_get(s, "pic")) /* MEPIC's own latency metric, beside TTFT */
        print_dist("E2E ms", json_object_get(s, "e2e_ms"));
    printf("SLO        TTFT ≤ %.10g ms, TBT ≤ %.10g ms", cfg->slo_ttft_ms, cfg->slo_tbt_ms);
    if (J_INT(s, "slo_own_requests") > 0) /* the label once stood alone over them */
        printf(" (%lld requests by their own from the trace)", J_INT(s, "slo_own_requests"));
    printf(": attainment %.3f, goodput %.3f req/s\n", J_NUM(s, "slo_attainment"), J_NUM(s, "goodput_rps"));
    print_cache(s);
    char why[1024];
    sim_serving_explain(cfg, s, why, sizeof why);
    if (why[0]) printf("diagnosis  %s\n", why);
    printf("simulated  %.1f s in %.3f s wall, %lld events\n", J_NUM(s, "sim_seconds"), J_NUM(s, "wall_seconds"),
           J_INT(s, "events"));
}

/* Lines --skip-bad dropped: how many, and the first (--verbose: each kept). */
static void warn_skipped(const json_t *s, bool verbose)
{
    long long n = J_INT(s, "skipped_lines");
    if (n <= 0) return;
    fprintf(stderr, "kvsim run: warning: skipped %lld bad trace line%s (trace.skip_bad)", n, n == 1 ? "" : "s");
    if (!verbose) {
        fprintf(stderr, "; the first: %s\n", json_string_value(json_object_get(s, "first_skip")));
        return;
    }
    fputs(":\n", stderr);
    const json_t *all = json_object_get(s, "skips"), *m;
    size_t i;
    json_array_foreach(all, i, m) fprintf(stderr, "  %s\n", json_string_value(m));
    if ((long long)json_array_size(all) < n)
        fprintf(stderr, "  ... and %lld more (the first %zu are listed)\n", n - (long long)json_array_size(all),
                json_array_size(all));
}

/* An overloaded run says so, with its bottleneck (sim/serving/diagnose.c). */
static void warn_overload(const json_t *s, bool disaggregated)
{
    const json_t *d = json_object_get(s, "diagnosis"), *sat = json_object_get(d, "saturated"), *e;
    if (!json_is_true(json_object_get(d, "overloaded"))) return;
    char ratio[48] = "every arrival at one instant"; /* it printed "(0.00x)" */
    if (json_is_number(json_object_get(d, "span_ratio")))
        snprintf(ratio, sizeof ratio, "%.2fx", J_NUM(d, "span_ratio"));
    fprintf(stderr, "kvsim run: warning: overloaded: %.0f s simulated for %.0f s of arrivals (%s), SLO attainment %.3f",
            J_NUM(d, "sim_span_s"), J_NUM(d, "trace_span_s"), ratio, J_NUM(d, "slo_attainment"));
    if (json_is_true(json_object_get(d, "queues_grew")))
        fprintf(stderr, "; queues grew: mean TTFT %.1f s for the last tenth of requests vs %.1f s for the first",
                J_NUM(d, "ttft_last_tenth_ms") / 1e3, J_NUM(d, "ttft_first_tenth_ms") / 1e3);
    size_t i;
    json_array_foreach(sat, i, e)
    {
        fprintf(stderr, "%s %s busy %.2f", i ? ";" : "; saturated:", json_string_value(json_object_get(e, "kind")),
                J_NUM(e, "utilisation"));
        if (json_object_get(e, "Gbps_for_0.8")) fprintf(stderr, " (about %g Gbps for 0.8)", J_NUM(e, "Gbps_for_0.8"));
        else fprintf(stderr, " (about %lld instances for 0.8)", J_INT(e, "instances_for_0.8"));
    }
    if (json_array_size(sat) == 0 && json_object_get(d, "bottleneck"))
        fprintf(stderr, "; busiest: %s %.2f", json_string_value(json_object_get(d, "bottleneck")),
                J_NUM(d, "utilisation"));
    if (disaggregated) fputs("; kvsim plan slo finds the smallest cluster that meets the SLOs", stderr);
    fputc('\n', stderr);
}

/* A PIC run over requests without segments computed them in full: say so. */
static void warn_unsegmented(const json_t *s)
{
    long long n = J_INT(s, "pic_unsegmented_requests");
    if (n > 0)
        fprintf(stderr,
                "kvsim run: warning: %lld of %lld requests have no \"segments\"; kvstore.pic = \"%s\" computes "
                "them in full (a segment trace: docs/trace.md)\n",
                n, J_INT(s, "requests"), json_string_value(json_object_get(s, "pic")));
}

/* What the run's model has not been validated on (sim/serving/caveats.c);
 * not when KVSIM_CAVEATS_SAID is set: `kvsim plan slo` sets it for its
 * worker runs, having said it once itself. The summary keeps them always. */
static void warn_caveats(const json_t *s)
{
    if (!getenv("KVSIM_CAVEATS_SAID")) sim_cli_warn_caveats("run", json_object_get(s, "caveats"), NULL);
}

/* Once per key: a key the user set that this run does not read (the
 * serving model's, the cost model's and the config's own idle keys), and why. */
static void warn_idle_keys(const sim_config *cfg)
{
    const sim_idle_key *lists[] = {sim_serving_lookup(cfg->mode)->idle_keys, sim_cost_idle_keys(cfg),
                                   sim_config_idle_keys(cfg)};
    for (int l = 0; l < 3; l++)
        for (const sim_idle_key *k = lists[l]; k && k->key; k++) {
            bool said = false; /* an earlier list already named it: once per key */
            for (int e = 0; e < l; e++)
                for (const sim_idle_key *s = lists[e]; s && s->key; s++) said |= !strcmp(s->key, k->key);
            if (said || !sim_config_user_set(cfg, k->key)) continue;
            char *v = json_dumps(sim_config_path_get(cfg->root, k->key),
                                 JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(10));
            fprintf(stderr, "kvsim run: warning: %s = %s has no effect here: %s\n", k->key, v ? v : "?", k->why);
            free(v);
        }
    /* a parameter of a policy not selected (accepted: a sweep may vary the
     * policy and keep its parameters; it was taken without a word) */
    const char *const sel[5] = {cfg->router, cfg->decode_policy, cfg->admission, cfg->pd_controller, cfg->eviction};
    char unused[512];
    if (sched_params_unselected(cfg->params, sel, unused, sizeof unused))
        fprintf(stderr,
                "kvsim run: warning: policy.params %s: no effect here, no policy this run selects takes %s "
                "(router %s, decode %s, admission %s, pd %s, eviction %s; kvsim policies lists which do)\n",
                unused, strchr(unused, ',') ? "them" : "it", sel[0], sel[1], sel[2], sel[3], sel[4]);
}

/* Configure, replay, record. Returns an exit status. */
static int replay(const run_args *a)
{
    sim_err err = {{0}};
    sim_config cfg;
    sim_results *db = NULL;
    json_t *summary = NULL;
    int rc = SIM_EXIT_USAGE;
    double t0 = sim_wall_seconds();
    uint64_t fp;
    char given[PATH_MAX], local[PATH_MAX];
    bool spooled = false;
    if (sim_config_load(&cfg, a->config, a->sets, a->nsets, &err)) goto out_noconfig;
    if (a->verbose && !cfg.trace.skip_bad) /* it lists what --skip-bad skips: without it, nothing */
        fputs("kvsim run: warning: --verbose lists the lines --skip-bad skips, and trace.skip_bad is off: a bad "
              "line stops the run, named with its line number (add --skip-bad to skip and list them)\n",
              stderr);
    snprintf(given, sizeof given, "%s", cfg.trace_path);
    if (sim_serving_check(&cfg, &err) || sim_trace_materialize(given, local, sizeof local, &spooled, &fp, &err) ||
        (a->part ? sim_results_open_part(&db, a->db, &err) : sim_results_open(&db, a->db, &err)))
        goto out;
    snprintf(cfg.trace_path, sizeof cfg.trace_path, "%s", local); /* the copy of a pipe; given is recorded */
    cfg.trace.name = given;                                       /* and named in messages */
    char *config_json = json_dumps(cfg.root, JSON_SORT_KEYS | JSON_COMPACT);
    sim_run_info info = {config_json, cfg.hash, given, fp, cfg.seed, !cfg.request_rows, !cfg.sample_rows};
    int64_t run_id;
    int bad = sim_results_begin_run(db, &info, &run_id, &err) ||
              sim_serving_replay_bound(&cfg, db, &summary, a->engine_bound, &err);
    free(config_json);
    snprintf(cfg.trace_path, sizeof cfg.trace_path, "%s", given);
    if (bad) goto out;
    double wall = sim_wall_seconds() - t0;
    json_object_set_new(summary, "wall_seconds", json_real(wall));
    json_object_set_new(summary, "run_id", json_integer(run_id));
    if (sim_results_finish_run(db, summary, wall, &err)) goto out; /* e.g. disk full: exit 2 */
    rc = SIM_EXIT_OK;
    warn_idle_keys(&cfg);
    warn_unsegmented(summary);
    warn_caveats(summary);
    warn_overload(summary, strcmp(cfg.mode, "aggregated") != 0);
    warn_skipped(summary, a->verbose);
    if (a->json) {
        json_dumpf(summary, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        putchar('\n');
    } else {
        print_summary(&cfg, summary);
    }
out:
    if (spooled) unlink(local);
    sim_config_free(&cfg);
out_noconfig:
    if (rc != SIM_EXIT_OK) fprintf(stderr, "kvsim run: %s\n", err.msg);
    json_decref(summary);
    sim_results_close(db);
    return rc;
}

int cmd_run(int argc, char **argv)
{
    run_args a = {0};
    int rc = SIM_EXIT_OK;
    if (parse_args(argc, argv, &a, &rc) == 0) rc = replay(&a);
    for (int i = 0; i < a.nsets; i++) free(a.sets[i]);
    free(a.sets);
    return rc;
}
