/* sim/cli/cmd_validate.c — `kvsim validate`: predictions of measured runs of
 * a real engine, with their errors (sim/replay/validate.h,
 * docs/validation.md). Parses, calls sim_validate, prints. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cli/cli.h"
#include "sim/config/config.h"
#include "sim/replay/validate.h"

static const char validate_usage[] =
    "usage: kvsim validate --measurements FILE [--only ID] [--draws N] [--db FILE] [--set key=value]...\n"
    "                      [--by model|gpu|tp|workload] [--max-error PCT [--metric NAME.STAT]...] [--json]\n"
    "\n"
    "Replay each experiment of a measurements file (measured runs of a real serving\n"
    "engine; docs/validation.md has the format) on one simulated aggregated instance\n"
    "configured from its engine block, with cost.compute = auto (measured where the\n"
    "hardware preset names measured per-operation tables, else the production-engine\n"
    "model), and print predicted beside measured with the error of every measured\n"
    "metric, then the median absolute error per metric. The measured requests are\n"
    "the first of a load that goes on: the replay sends more and predicts from them.\n"
    "A measured run is one draw of its load generator (its shuffle and arrival\n"
    "gaps; the seed is not public): kvsim replays N draws of each workload (seeds\n"
    "1..N, or from the experiment's workload.seed), predicts each statistic as\n"
    "their mean and prints the range of the draws' own errors beside it.\n"
    "itl_ms is inference-perf's normalized time per output token (end-to-end latency\n"
    "over output tokens), tpot_ms the mean gap between a request's tokens.\n"
    "\n"
    "  --measurements FILE  the measurements (e.g. validation/vllm-h100-train.json)\n"
    "  --only ID            just this experiment\n"
    "  --draws N            workload draws per experiment (default 8; 1 = the first draw alone;\n"
    "                       a workload with no random element, vllm bench latency's, is one)\n"
    "  --db FILE            keep the runs in this results database (kvsim report reads\n"
    "                       it): a run per draw of each experiment, with its seed\n"
    "  --set KEY=VALUE      override a config key in every experiment (a what-if, e.g.\n"
    "                       --set engine.seq_overhead_ms=0)\n"
    "  --by KEY             also the median absolute error per group of experiments:\n"
    "                       model (preset), gpu (the hardware preset's GPU), tp\n"
    "                       (tensor-parallel GPUs) or workload\n"
    "  --max-error PCT      a gate for CI: exit 3 when an experiment's |error| on a\n"
    "                       --metric exceeds PCT percent, or an experiment is not\n"
    "                       expressible, not replayed or measures none of them;\n"
    "                       stderr names each (the report is printed as always)\n"
    "  --metric NAME.STAT   a metric the gate judges, e.g. ttft_ms.p90 (repeatable;\n"
    "                       default e2e_ms.mean and itl_ms.mean, those the file\n"
    "                       measures)\n"
    "  --json               the report as JSON: experiments[] (id, model, gpu, tp, workload,\n"
    "                       status, replayed, predicted, measured, ape, mpe, draws;\n"
    "                       caveats, not_predicted, moe_compiles, compile_band,\n"
    "                       fit_range, model_via, hardware_via and engine_note when\n"
    "                       there are)\n"
    "                       and median_ape; with --by also by: {by, groups[]}; with\n"
    "                       --max-error also gate: {max_error_pct, metrics, failures[]}\n"
    "  -h, --help           this help\n"
    "\n"
    "An experiment kvsim cannot express (an engine other than vLLM, a model or\n"
    "hardware without a preset, a key it does not read, a workload it does not\n"
    "generate) is listed as \"not expressible\" with the reason, one whose replay\n"
    "fails (a model that does not fit) as \"not replayed\" with the error; the\n"
    "other experiments still run. A vLLM release other than the one the CPU\n"
    "constants were fitted on (0.15) is replayed with a line saying so. A\n"
    "measured metric or statistic kvsim does not predict is listed, not judged.\n"
    "A replay that stalled on fused-MoE compiles is replayed again at the fastest\n"
    "and slowest compile a lent H200 host measured (460 and 980 ms), and the\n"
    "errors of its means at both are printed (compile_band; docs/validation.md),\n"
    "unless --set gives engine.measured.moe_jit_compile_ms.\n"
    "Exit status: 0 ok; 2 a file kvsim cannot read (a value of the wrong type or\n"
    "out of range; the message names it) or a bad option; 3 the --max-error gate\n"
    "failed.\n";

/* --max-error PCT: a percentage >= 0; exit status 2 naming it otherwise. */
static int max_error_arg(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (*s && !*end && v >= 0 && isfinite(v)) return *out = v, SIM_EXIT_OK;
    char msg[256];
    snprintf(msg, sizeof msg, "--max-error '%.100s': give a percentage >= 0, e.g. --max-error 10", s);
    return sim_usage_error("validate", msg);
}

/* --draws N: an integer in [1, SIM_VALIDATE_MAX_DRAWS]; exit status 2 naming it otherwise. */
static int draws_arg(const char *s, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s && !*end && v >= 1 && v <= SIM_VALIDATE_MAX_DRAWS) return *out = (int)v, SIM_EXIT_OK;
    char msg[256];
    snprintf(msg, sizeof msg, "--draws '%.100s': give a whole number from 1 to %d, e.g. --draws 8", s,
             SIM_VALIDATE_MAX_DRAWS);
    return sim_usage_error("validate", msg);
}

static void print_metric(const char *metric, const char *stat, const json_t *row)
{
    double m = json_number_value(json_object_get(json_object_get(json_object_get(row, "measured"), metric), stat));
    double p = json_number_value(json_object_get(json_object_get(json_object_get(row, "predicted"), metric), stat));
    double e = json_number_value(json_object_get(json_object_get(json_object_get(row, "mpe"), metric), stat));
    const json_t *d = json_object_get(row, "draws"),
                 *r = json_object_get(json_object_get(json_object_get(d, "mpe"), metric), stat);
    printf("  %-8s %-5s %12.2f %12.2f %+11.2f %+8.1f%%  ", metric, stat, m, p, p - m, e);
    if (json_is_true(json_object_get(d, "fixed"))) printf("   one draw (fixed workload)\n");
    else
        printf("%+7.1f to %+.1f%%\n", json_number_value(json_array_get(r, 0)), json_number_value(json_array_get(r, 1)));
}

/* A MoE replay's fused-MoE compiles: their means over the draws and the
 * fewest and most one draw compiled. */
static void print_moe(const json_t *jit)
{
    long long lo = -1, hi = -1;
    size_t k;
    const json_t *d;
    json_array_foreach(json_object_get(jit, "by_draw"), k, d)
    {
        long long v = (long long)json_integer_value(json_object_get(d, "variants"));
        if (lo < 0 || v < lo) lo = v;
        if (v > hi) hi = v;
    }
    printf("  kvsim stalled %.1f s a draw for %.1f fused-MoE compile variants (%lld to %lld; "
           "engine.measured.moe_jit_compile_ms)\n",
           json_number_value(json_object_get(jit, "stall_s")), json_number_value(json_object_get(jit, "variants")), lo,
           hi);
}

/* A MoE replay's errors at the probe's fastest and slowest compile. */
static void print_band(const json_t *band)
{
    if (!band) return;
    const json_t *ms = json_object_get(band, "kernel_ms"), *m;
    const char *metric;
    printf("  at %lld and %lld ms a compile (a lent H200 host's fastest and slowest):",
           (long long)json_integer_value(json_array_get(ms, 0)), (long long)json_integer_value(json_array_get(ms, 1)));
    size_t k = 0;
    json_object_foreach(json_object_get(band, "mpe"), metric, m)
    {
        const json_t *mean = json_object_get(m, "mean");
        printf("%s %s mean %+.1f%% and %+.1f%%", k++ ? "," : "", metric, json_number_value(json_array_get(mean, 0)),
               json_number_value(json_array_get(mean, 1)));
    }
    putchar('\n');
}

static void print_row(const json_t *row)
{
    printf("%s", json_string_value(json_object_get(row, "id")));
    if (strcmp(json_string_value(json_object_get(row, "status")), "ok")) {
        printf(": %s: %s\n\n", json_string_value(json_object_get(row, "status")),
               json_string_value(json_object_get(row, "why")));
        return;
    }
    printf("%s\n", json_is_true(json_object_get(row, "overloaded")) ? " (kvsim: overloaded)" : "");
    static const char *const via[] = {"model_via", "hardware_via", "engine_note"};
    for (size_t k = 0; k < 3; k++)
        if (json_object_get(row, via[k])) printf("  %s\n", json_string_value(json_object_get(row, via[k])));
    printf("  %-8s %-5s %12s %12s %11s %9s  %s\n", "metric", "stat", "measured", "kvsim", "error", "error %",
           "draws' error");
    const char *metric, *stat;
    const json_t *m, *v;
    json_object_foreach(json_object_get(row, "measured"), metric, m)
    {
        if (!json_is_object(m)) continue;
        const json_t *pred = json_object_get(json_object_get(row, "predicted"), metric);
        json_object_foreach((json_t *)m, stat, v) if (json_object_get(pred, stat)) print_metric(metric, stat, row);
    }
    const json_t *jit = json_object_get(row, "moe_compiles");
    if (jit) print_moe(jit);
    print_band(json_object_get(row, "compile_band"));
    const json_t *skip = json_object_get(row, "not_predicted"), *cv = json_object_get(row, "caveats"), *name;
    size_t s;
    json_array_foreach(skip, s, name)
        printf("%s%s", s ? ", " : "  measured, not predicted by kvsim: ", json_string_value(name));
    if (json_array_size(skip)) printf(" (kvsim predicts e2e_ms, ttft_ms, itl_ms, tpot_ms: mean, p50, p90, p99)\n");
    size_t k;
    json_array_foreach(cv, k, name) printf("%s%s", k ? ", " : "  caveats: ", json_string_value(name));
    if (json_array_size(cv)) printf(" (the run's summary has their text; docs/validation.md)\n");
    const json_t *fit = json_object_get(row, "fit_range");
    if (fit)
        printf("  kvsim's iterations reached %lld sequences, beyond the %lld its CPU constants were fitted on; "
               "they make %.0f%% of such a step (extrapolated)\n",
               (long long)json_integer_value(json_object_get(fit, "peak_seqs")),
               (long long)json_integer_value(json_object_get(fit, "fitted_seqs")),
               100 * json_number_value(json_object_get(fit, "overhead_share")));
    putchar('\n');
}

static void print_medians(const json_t *median_ape)
{
    const json_t *stats, *v;
    const char *metric, *stat;
    json_object_foreach((json_t *)median_ape, metric, stats)
    {
        json_object_foreach((json_t *)stats, stat, v) printf("  %-8s %-5s %6.1f%%\n", metric, stat, json_real_value(v));
    }
}

static void print_groups(const json_t *by)
{
    size_t i;
    const json_t *g;
    json_array_foreach(json_object_get(by, "groups"), i, g)
    {
        long long n = (long long)json_integer_value(json_object_get(g, "experiments"));
        printf("\nmedian absolute error, %s %s (%lld experiment%s):\n", json_string_value(json_object_get(by, "by")),
               json_string_value(json_object_get(g, "group")), n, n == 1 ? "" : "s");
        print_medians(json_object_get(g, "median_ape"));
    }
}

/* The draws' footer: their count and seeds, when every experiment with a
 * random workload replayed the same (else --json has each experiment's);
 * a workload with no random element is one draw (validate_run.c). */
static void print_draws(const json_t *rows)
{
    size_t i;
    const json_t *row, *first = NULL;
    bool same = true, fixed = false;
    json_array_foreach(rows, i, row)
    {
        const json_t *d = json_object_get(row, "draws");
        if (!d) continue;
        if (json_is_true(json_object_get(d, "fixed"))) {
            fixed = true;
            continue;
        }
        if (!first) first = d;
        same &= json_equal(json_object_get(d, "seeds"), json_object_get(first, "seeds"));
    }
    if (!first && fixed)
        printf("kvsim: one draw of each workload: none has a random element (one batch of fixed lengths, as vllm "
               "bench latency\nsends it), so every draw would be the same run\n\n");
    if (!first) return;
    long long n = (long long)json_integer_value(json_object_get(first, "n"));
    const json_t *seeds = json_object_get(first, "seeds");
    printf("kvsim: the mean over %lld draw%s of each workload", n, n == 1 ? "" : "s");
    long long s0 = (long long)json_integer_value(json_array_get(seeds, 0)),
              s1 = (long long)json_integer_value(json_array_get(seeds, 1));
    if (same && s0 == s1) printf(" (generator seed %lld)", s0);
    else if (same) printf(" (generator seeds %lld to %lld)", s0, s1);
    else printf(" (generator seeds per experiment: --json, draws.seeds)");
    printf("; draws' error: the range\nof the draws' own errors (one measured run is one draw: docs/validation.md, "
           "section 2)%s\n\n",
           fixed ? "; one draw of a workload with no random element" : "");
}

static void print_report(const json_t *r)
{
    size_t i;
    const json_t *row;
    json_array_foreach(json_object_get(r, "experiments"), i, row) print_row(row);
    print_draws(json_object_get(r, "experiments"));
    printf("median absolute error over the experiments:\n");
    print_medians(json_object_get(r, "median_ape"));
    if (json_object_get(r, "by")) print_groups(json_object_get(r, "by"));
}

/* --max-error: the failures on stderr, and in a --json report. Returns the
 * exit status. */
static int gate(json_t *report, double max_pct, char **metrics, int n, bool json)
{
    /* the defaults a file measures (vLLM's CI latency file has no ITL: it
     * once failed the gate naming a --metric no one gave); a --metric
     * no experiment has is an error */
    static char *const fallback[] = {"e2e_ms.mean", "itl_ms.mean"};
    char *kept[2];
    char *const *m = n ? metrics : kept;
    bool dflt = !n; /* both defaults (the loop once stopped at the first: ITL was never judged) */
    for (int k = 0; dflt && k < 2; k++)
        if (sim_validate_has_metric(report, fallback[k])) kept[n++] = fallback[k];
    if (m == kept && !n)
        return sim_usage_error("validate", "--max-error: no experiment measures e2e_ms.mean or "
                                           "itl_ms.mean: name what to judge with --metric");
    json_t *fails = NULL, *f;
    sim_err err = {{0}};
    if (sim_validate_gate(report, max_pct, m, n, &fails, &err)) return sim_usage_error("validate", err.msg);
    size_t i;
    json_array_foreach(fails, i, f)
    {
        if (json_object_get(f, "why"))
            fprintf(stderr, "kvsim validate: %s: %s (%s): the gate counts it as failed\n",
                    json_string_value(json_object_get(f, "id")), json_string_value(json_object_get(f, "status")),
                    json_string_value(json_object_get(f, "why")));
        else
            fprintf(stderr, "kvsim validate: %s: %s error %+.1f%% exceeds --max-error %g%%\n",
                    json_string_value(json_object_get(f, "id")), json_string_value(json_object_get(f, "metric")),
                    json_number_value(json_object_get(f, "error_pct")), max_pct);
    }
    json_t *names = json_array();
    for (int k = 0; k < n; k++) json_array_append_new(names, json_string(m[k]));
    int rc = json_array_size(fails) ? SIM_EXIT_CHECK : SIM_EXIT_OK;
    if (json)
        json_object_set_new(
            report, "gate",
            json_pack("{s:f, s:o, s:o}", "max_error_pct", max_pct, "metrics", names, "failures", fails));
    else json_decref(names), json_decref(fails);
    return rc;
}

/* A --set no experiment could take (an unknown key, a wrong type, a value
 * out of range) exits 2 naming it, checked once on the default config: it
 * once failed every replay ("not replayed") and exited 0. Only an error
 * that names a key being set counts; the rest is each experiment's. */
static int check_sets(char **sets, int n)
{
    if (!n) return SIM_EXIT_OK;
    /* the presets each experiment names are what it measured: --set model=
     * once replayed another model under the file's name, in the text, the
     * JSON and --by (an error of 86.6% labelled qwen3-14b on h100) */
    for (int i = 0; i < n; i++) {
        size_t k = strcspn(sets[i], "=");
        if ((k == 5 && !strncmp(sets[i], "model", 5)) || (k == 8 && !strncmp(sets[i], "hardware", 8))) {
            char msg[320];
            snprintf(msg, sizeof msg,
                     "--set %.*s: each experiment is replayed on the model and GPU it measured (its \"model\" "
                     "and \"hardware\"); to price another, use kvsim run or kvsim cost with --set %.*s=NAME",
                     (int)k, sets[i], (int)k, sets[i]);
            return sim_usage_error("validate", msg);
        }
    }
    sim_config cfg;
    sim_err err = {{0}};
    if (!sim_config_load(&cfg, NULL, sets, n, &err)) return sim_config_free(&cfg), SIM_EXIT_OK;
    for (int i = 0; i < n; i++) {
        char key[256], quoted[260];
        snprintf(key, sizeof key, "%.*s", (int)strcspn(sets[i], "="), sets[i]);
        snprintf(quoted, sizeof quoted, "'%s'", key);
        if (strstr(err.msg, quoted)) return sim_usage_error("validate", err.msg);
    }
    return SIM_EXIT_OK;
}

int cmd_validate(int argc, char **argv)
{
    static const struct option opts[] = {
        {"measurements", required_argument, 0, 'm'},
        {"only", required_argument, 0, 'o'},
        {"draws", required_argument, 0, 'n'},
        {"db", required_argument, 0, 'd'},
        {"set", required_argument, 0, 's'},
        {"json", no_argument, 0, 'j'},
        {"max-error", required_argument, 0, 'e'},
        {"metric", required_argument, 0, 'M'},
        {"by", required_argument, 0, 'b'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    sim_validate_opts o = {0};
    char **sets = sim_xcalloc((size_t)argc + 1, sizeof *sets),
         **metrics = sim_xcalloc((size_t)argc + 1, sizeof *metrics);
    int nmetrics = 0;
    const char *by = NULL;
    double max_pct = -1;
    bool json = false;
    static const char *const repeatable[] = {"set", "metric", NULL};
    int rc = sim_cli_once("validate", argc, argv, opts, repeatable);
    opterr = 0;
    optind = 1;
    for (int ch; rc == SIM_EXIT_OK && (ch = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        if (ch == 'm') o.measurements = optarg;
        else if (ch == 'o') o.only = optarg;
        else if (ch == 'n') rc = draws_arg(optarg, &o.draws);
        else if (ch == 'd') o.db = optarg;
        else if (ch == 's') sets[o.nsets++] = optarg;
        else if (ch == 'j') json = true;
        else if (ch == 'e') rc = max_error_arg(optarg, &max_pct);
        else if (ch == 'M') metrics[nmetrics++] = optarg;
        else if (ch == 'b') by = optarg;
        else if (ch == 'h') return free(sets), free(metrics), fputs(validate_usage, stdout), SIM_EXIT_OK;
        else rc = sim_cli_bad_option("validate", argv[optind - 1]);
    }
    if (rc == SIM_EXIT_OK && optind < argc) rc = sim_cli_unexpected_error("validate", argv[optind], "--measurements");
    if (rc == SIM_EXIT_OK && !o.measurements)
        rc = sim_usage_error("validate", "--measurements FILE is required (e.g. validation/vllm-h100-train.json)");
    if (rc == SIM_EXIT_OK && nmetrics && max_pct < 0)
        rc = sim_usage_error("validate", "--metric names what --max-error PCT judges: give --max-error too");
    if (rc == SIM_EXIT_OK) rc = check_sets(sets, o.nsets);
    o.sets = sets;
    json_t *report = NULL;
    sim_err err = {{0}};
    json_t *groups = NULL;
    if (rc == SIM_EXIT_OK && by && sim_validate_by_check(by, &err)) rc = sim_usage_error("validate", err.msg);
    if (rc == SIM_EXIT_OK && sim_validate(&o, &report, &err)) rc = sim_usage_error("validate", err.msg);
    if (report && by && !sim_validate_groups(report, by, &groups, &err)) json_object_set_new(report, "by", groups);
    int gated = report && max_pct >= 0 ? gate(report, max_pct, metrics, nmetrics, json) : SIM_EXIT_OK;
    if (report && json) {
        json_dumpf(report, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        putchar('\n');
    } else if (report) print_report(report);
    json_decref(report);
    free(sets);
    free(metrics);
    return rc != SIM_EXIT_OK ? rc : gated;
}
