/* tests/test_validate.c — `kvsim validate` (sim/replay/validate.h) on a
 * hand-made measurements file (tests/fixtures/validate/): its predictions
 * against the closed form of the engine cost model for one request alone,
 * the errors and their medians computed by hand, an experiment kvsim cannot
 * express, and the messages of bad files. */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "sim/config/model.h"
#include "sim/replay/validate.h"
#include "tests/testutil.h"

#define MEAS "tests/fixtures/validate/meas.json"
#define SETS "--set engine.frontend_ms=10 --set engine.iter_overhead_ms=1 --set engine.seq_overhead_ms=0.5"

/* The tiny model on the round hardware, one request of 100 prompt tokens
 * and 5 output tokens, nothing else running: every iteration is memory
 * bound (a decode's 2 · 1e9 FLOPs take 4.4 µs at 1e15 × 0.45 FLOP/s, its
 * weights 2 ms at 1e12 B/s) and takes (W_pass + kv · 256 B) / 1e12 B/s
 * + 1 ms + 0.5 ms for its one sequence, where W_pass = 2e9 B of weights less
 * the 1000 × 64 × 2 B input embedding, and kv = the tokens whose KV the
 * step reads: the prompt's 100 in the prefill, 100 + k in the k-th decode
 * step. TTFT = 10 ms front end + the prefill; E2E adds the 4 decode steps;
 * the measured itl_ms is inference-perf's normalized time per output token,
 * E2E over the 5 output tokens; tpot_ms the decode steps' mean. */
static void hand(double *ttft, double *e2e, double *itl)
{
    double w = 2e9 - 1000.0 * 64 * 2, B = 1e12, fixed = 1.5e-3;
    double prefill = (w + 100 * 256.0) / B + fixed, decode = 0;
    for (int k = 1; k <= 4; k++) decode += (w + (100 + k) * 256.0) / B + fixed;
    *ttft = (10e-3 + prefill) * 1e3;
    *e2e = (10e-3 + prefill + decode) * 1e3;
    *itl = *e2e / 5;
}

static double hand_tpot(double e2e, double ttft) { return (e2e - ttft) / 4; }

static json_t *run_json(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "validate --measurements %s %s --json", MEAS, args);
    cli_result r = tu_kvsim(cmd);
    assert_int_equal(r.status, 0);
    json_error_t je;
    json_t *j = json_loads(r.out, 0, &je);
    if (!j) fail_msg("validate --json: %s\n%s", je.text, r.err);
    tu_free(&r);
    return j;
}

static double at(const json_t *row, const char *part, const char *metric, const char *stat)
{
    return json_number_value(json_object_get(json_object_get(json_object_get(row, part), metric), stat));
}

static void test_predictions_by_hand(void **state)
{
    double ttft, e2e, itl;
    hand(&ttft, &e2e, &itl);
    json_t *j = run_json(SETS);
    const json_t *a = json_array_get(json_object_get(j, "experiments"), 0);
    assert_string_equal(json_string_value(json_object_get(a, "id")), "a");
    assert_string_equal(json_string_value(json_object_get(a, "status")), "ok");
    /* event times are whole nanoseconds: 6 iterations round by < 6e-6 ms */
    assert_double_equal(at(a, "predicted", "ttft_ms", "mean"), ttft, 1e-5);
    assert_double_equal(at(a, "predicted", "e2e_ms", "mean"), e2e, 1e-5);
    assert_double_equal(at(a, "predicted", "e2e_ms", "p90"), e2e, 1e-5);
    assert_double_equal(at(a, "predicted", "itl_ms", "mean"), itl, 1e-5);
    assert_double_equal(at(a, "predicted", "tpot_ms", "mean"), hand_tpot(e2e, ttft), 1e-5);
    /* ape = |p − m| / m · 100, mpe the signed one, against measured 20 / 10 / 2 */
    assert_double_equal(at(a, "mpe", "e2e_ms", "mean"), (e2e - 20) / 20 * 100, 1e-4);
    assert_double_equal(at(a, "ape", "ttft_ms", "mean"), fabs(ttft - 10) / 10 * 100, 1e-4);
    assert_double_equal(at(a, "mpe", "itl_ms", "mean"), (itl - 2) / 2 * 100, 1e-4);
    json_decref(j);
}

/* The median of the three expressible experiments' ape (b and c measured
 * other values for the same prediction); "off" is listed, not counted. */
static void test_median_and_not_expressible(void **state)
{
    double ttft, e2e, itl;
    hand(&ttft, &e2e, &itl);
    json_t *j = run_json(SETS);
    const json_t *xs = json_object_get(j, "experiments"), *off = json_array_get(xs, 3);
    assert_int_equal(json_array_size(xs), 4);
    assert_string_equal(json_string_value(json_object_get(off, "status")), "not expressible");
    assert_non_null(strstr(json_string_value(json_object_get(off, "why")), "engine.dtype is not a 16-bit type"));
    assert_null(json_object_get(off, "ape"));
    double v[3] = {fabs(itl - 2) / 2 * 100, fabs(itl - 4) / 4 * 100, fabs(itl - 3) / 3 * 100};
    double sorted_mid = v[0] + v[1] + v[2] - fmax(v[0], fmax(v[1], v[2])) - fmin(v[0], fmin(v[1], v[2]));
    assert_double_equal(at(j, "median_ape", "itl_ms", "mean"), sorted_mid, 1e-4);
    double t[3] = {fabs(ttft - 10) / 10 * 100, fabs(ttft - 12) / 12 * 100, fabs(ttft - 20) / 20 * 100};
    double tmid = t[0] + t[1] + t[2] - fmax(t[0], fmax(t[1], t[2])) - fmin(t[0], fmin(t[1], t[2]));
    assert_double_equal(
        json_number_value(json_object_get(json_object_get(json_object_get(j, "median_ape"), "ttft_ms"), "mean")), tmid,
        1e-4);
    /* tpot_ms has a median too: a's alone measures it */
    assert_double_equal(at(j, "median_ape", "tpot_ms", "mean"), fabs(hand_tpot(e2e, ttft) - 2) / 2 * 100, 1e-4);
    json_decref(j);
}

static void test_median_helper(void **state)
{
    double a[] = {3, 1, 2}, b[] = {4, 1, 3, 2};
    assert_double_equal(sim_validate_median(a, 3), 2, 0);
    assert_double_equal(sim_validate_median(b, 4), 2.5, 0);
    assert_true(isnan(sim_validate_median(b, 0)));
}

static void test_only_and_text(void **state)
{
    cli_result r = tu_kvsim("validate --measurements " MEAS " --only b " SETS);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "b\n"));
    assert_null(strstr(r.out, "\na\n"));
    assert_non_null(strstr(r.out, "median absolute error"));
    tu_free(&r);
    r = tu_kvsim("validate --measurements " MEAS " --only nosuch");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "no experiment has id 'nosuch'"));
    tu_free(&r);
}

/* A copy of the fixture with one edit (a python-free sed on one line). */
static cli_result edited(const char *sed)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "(d=$(mktemp -d) && sed '%s' " MEAS " > $d/m.json && %s validate --measurements $d/m.json --only a; "
             "rc=$?; rm -rf $d; exit $rc)",
             sed, tu_kvsim_bin());
    return tu_shell(cmd);
}

typedef struct edit_case {
    const char *sed, *want;
} edit_case;

/* Each edited fixture exits with status, saying want (on stdout when it
 * succeeds, else on stderr). */
static void expect_edits(const edit_case *cases, size_t n, int status)
{
    for (size_t i = 0; i < n; i++) {
        cli_result r = edited(cases[i].sed);
        if (r.status != status || !strstr(status ? r.err : r.out, cases[i].want))
            fail_msg("case %zu: exit %d, stdout: %s, stderr: %s (want: %s)", i, r.status, r.out, r.err, cases[i].want);
        tu_free(&r);
    }
}

/* What kvsim cannot express is a row saying why, not the end of the file:
 * a key it does not read, a model or hardware without a preset, a workload
 * or load it does not generate. */
static void test_not_expressible_rows(void **state)
{
    static const edit_case cases[] = {
        {"0,/\"cpu_offload_gib\"/s/\"cpu_offload_gib\"/\"cpu_offload_gb\"/",
         "a: not expressible: unknown engine key 'cpu_offload_gb': kvsim does not read it"},
        {"0,/model.json/s|tests/fixtures/validate/model.json|nosuch-model|",
         "a: not expressible: model 'nosuch-model' has no preset in configs/models/ (kvsim model import"},
        {"0,/hw.json/s|tests/fixtures/validate/hw.json|tpu-v5|",
         "a: not expressible: no hardware preset 'tpu-v5' for tp = 1"},
        {"0,/inference-perf shared_prefix/s/inference-perf shared_prefix/sharegpt/",
         "a: not expressible: workload.kind 'sharegpt' is not a workload kvsim generates"},
        {"0,/\"type\": \"constant\"/s/constant/bursty/",
         "a: not expressible: workload.load.type 'bursty': kvsim generates constant and poisson loads"},
        {"0,/\"id\": \"a\",/s//\"id\": \"a\", \"pp\": 2,/", "a: not expressible: unknown experiment key 'pp'"},
        {"0,/\"id\": \"a\",/s//\"id\": \"a\", \"notes\": \"x\",/", "a\n  metric"}, /* free text is no setting */
        {"0,/\"name\": \"vLLM 0.15.1 (hand-computed)\",/s//&  \"comment\": \"x\",/", "a\n  metric"},
        /* kvsim models vLLM: another engine is not expressible, another
         * vLLM release is replayed and said (its CPU work may differ) */
        {"0,/\"vLLM 0.15.1 (hand-computed)\"/s//\"SGLang 0.5.2\"/",
         "a: not expressible: engine.name 'SGLang 0.5.2' is not vLLM: kvsim models vLLM's engine"},
        {"0,/\"vLLM 0.15.1 (hand-computed)\"/s//\"vLLM 0.16.0\"/",
         "a\n  engine 'vLLM 0.16.0' is not the vLLM 0.15 its CPU constants were fitted on"},
        {"0,/\"vLLM 0.15.1 (hand-computed)\"/s||\"vllm/vllm-openai:v0.15.1\"|", "a\n  metric"},
        /* vLLM without prefix caching or chunked prefill: expressed
         * (engine.prefix_caching, engine.chunked_prefill; tests/test_agg.c) */
        {"0,/\"enable_prefix_caching\": true/s//\"enable_prefix_caching\": false/", "a\n  metric"},
        {"0,/\"enable_chunked_prefill\": true/s//\"enable_chunked_prefill\": false/", "a\n  metric"},
        {"0,/\"ttft_ms\"/s/\"ttft_ms\"/\"tbt_ms\"/", /* a metric of another study: listed, not judged */
         "  measured, not predicted by kvsim: tbt_ms (kvsim predicts e2e_ms, ttft_ms, itl_ms, tpot_ms: mean, p50, "
         "p90, p99)"},
        {"0,/\"requests\": 1/s/\"requests\": 1/\"requests\": 5/", "a: not replayed: " /* the file's path, then */},
        {"0,/\"requests\": 1/s/\"requests\": 1/\"requests\": 5/",
         "experiment 'a': its load stages send 1 requests, fewer than measured.requests (5)"},
    };
    expect_edits(cases, sizeof cases / sizeof cases[0], 0);
}

/* The rest of the file runs past one experiment kvsim cannot express or
 * replay: a model no preset names, then one too large for its hardware
 * (its replay fails inside the results database's transaction, which used
 * to leave the next run unable to begin). */
static void test_file_runs_past_an_experiment(void **state)
{
    static const char *const seds[] = {
        "0,/model.json/s|tests/fixtures/validate/model.json|nosuch-model|",
        "0,/model.json/s|tests/fixtures/validate/model.json|llama3-70b|",
    };
    for (size_t i = 0; i < 2; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd,
                 "(d=$(mktemp -d) && sed '%s' " MEAS " > $d/m.json && %s validate --measurements $d/m.json " SETS
                 " --json; rc=$?; rm -rf $d; exit $rc)",
                 seds[i], tu_kvsim_bin());
        cli_result r = tu_shell(cmd);
        assert_int_equal(r.status, 0);
        json_t *j = json_loads(r.out, 0, NULL);
        const json_t *xs = json_object_get(j, "experiments");
        assert_int_equal(json_array_size(xs), 4);
        assert_string_equal(json_string_value(json_object_get(json_array_get(xs, 0), "status")),
                            i ? "not replayed" : "not expressible");
        for (size_t k = 1; k < 3; k++)
            assert_string_equal(json_string_value(json_object_get(json_array_get(xs, k), "status")), "ok");
        if (i) assert_non_null(strstr(r.err, "experiment 'a': model 'llama3-70b' ("));
        if (i) assert_non_null(strstr(r.err, "does not fit in hardware"));
        json_decref(j);
        tu_free(&r);
    }
}

static void test_errors(void **state)
{
    static const edit_case cases[] = {
        {"1s/^/x/", "m.json:1: '[' or '{' expected near 'x' (docs/validation.md has the format)"},
    };
    expect_edits(cases, sizeof cases / sizeof cases[0], 2);
    cli_result r = tu_kvsim("validate");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--measurements FILE is required"));
    tu_free(&r);
}

/* A model name that is no preset is read as the one preset it means:
 * the same name without case and separators, else the preset whose about
 * names the file's hf_model; the run says which. An id no preset's about
 * names is no match. */
static void test_model_names(void **state)
{
    static const edit_case found[] = {
        {"0,/model.json/s|tests/fixtures/validate/model.json|Qwen3_14B|",
         "model 'Qwen3_14B' read as the preset qwen3-14b (the same name without case, separators and fine-tune "
         "suffixes)"},
        {"0,/model.json/s|\"tests/fixtures/validate/model.json\"|\"q14\", \"hf_model\": \"Qwen/Qwen3-14B\"|",
         "model 'q14' read as the preset qwen3-14b (its Hugging Face id, fine-tune suffixes aside)"},
    };
    static const edit_case hw[] = {
        /* a GPU's name is its preset at the experiment's tp; h200 is no h20 */
        {"0,/hw.json/s|tests/fixtures/validate/hw.json|NVIDIA H100 80GB HBM3|",
         "hardware 'NVIDIA H100 80GB HBM3' read as the preset h100x1 (its GPU, tp = 1)"},
        {"0,/hw.json/s|tests/fixtures/validate/hw.json|H200-SXM|", "read as the preset h200x1"},
        {"0,/hw.json/s|tests/fixtures/validate/hw.json|H20|", /* only h20x8: one of its GPUs */
         "hardware 'H20' read as the preset h20x8 (its GPU), tp = 1 of its 8"},
        {"0,/hw.json/s|tests/fixtures/validate/hw.json|TPU v5e|",
         "a: not expressible: no hardware preset 'TPU v5e' for tp = 1"},
    };
    expect_edits(hw, sizeof hw / sizeof hw[0], 0);
    static const edit_case none[] = {
        {"0,/model.json/s|\"tests/fixtures/validate/model.json\"|\"q14\", \"hf_model\": \"Qwen/Qwen9\"|",
         "a: not expressible: model 'q14' has no preset"},
    };
    expect_edits(found, sizeof found / sizeof found[0], 0);
    expect_edits(none, 1, 0);
}

/* The shell command that runs `kvsim validate ARGS` on measurements file
 * src as the command edit (sed or jq with its script) leaves it, in a
 * scratch folder removed after; into cmd (n bytes). */
static const char *edited_cmd(char *cmd, size_t n, const char *edit, const char *src, const char *args)
{
    snprintf(cmd, n,
             "(d=$(mktemp -d) && %s %s > $d/m.json && %s validate --measurements $d/m.json %s; rc=$?; rm -rf $d; "
             "exit $rc)",
             edit, src, tu_kvsim_bin(), args);
    return cmd;
}

/* The last --set of key in an experiment's config (its "config" array). */
static const char *last_set(const json_t *x, const char *key)
{
    const char *found = NULL;
    size_t i, n = strlen(key);
    const json_t *v;
    json_array_foreach(json_object_get(x, "config"), i, v)
    {
        const char *s = json_string_value(v);
        if (s && !strncmp(s, key, n) && s[n] == '=') found = s + n + 1;
    }
    return found;
}

/* vLLM schedules asynchronously by default only since v0.14.0 (#27614): a
 * measurement of an earlier release is replayed without, a later one with. */
static void test_async_by_release(void **state)
{
    (void)state;
    static const struct {
        const char *name, *want;
    } cases[] = {{"vLLM 0.13.0", "false"}, {"vLLM 0.14.1", "true"}, {"vLLM 0.15.1", "true"}, {"vLLM", "true"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char cmd[1024], edit[160];
        snprintf(edit, sizeof edit, "sed '0,/\"vLLM 0.15.1 (hand-computed)\"/s//\"%s\"/'", cases[i].name);
        cli_result r = tu_shell(edited_cmd(cmd, sizeof cmd, edit, MEAS, "--only a --draws 1 --json"));
        assert_int_equal(r.status, 0);
        json_t *j = json_loads(r.out, 0, NULL);
        assert_non_null(j);
        const char *got = last_set(json_array_get(json_object_get(j, "experiments"), 0), "engine.async_scheduling");
        if (!got || strcmp(got, cases[i].want)) fail_msg("%s: async_scheduling %s", cases[i].name, got ? got : "-");
        json_decref(j);
        tu_free(&r);
    }
}

/* `kvsim validate --json` of the training measurements as the jq filter
 * leaves them (no single quote in it), parsed. */
static json_t *validate_jq(const char *filter)
{
    char cmd[1024], edit[512];
    snprintf(edit, sizeof edit, "jq '%s'", filter);
    return tu_shell_json(edited_cmd(cmd, sizeof cmd, edit, "validation/vllm-h100-train.json", "--json"));
}

/* --by workload groups by the load too: a run at 20 req/s and one at 8
 * then 20 were one group ("shared_prefix 547 in, 248 out"), one median. */
static void test_workload_groups_by_load(void **state)
{
    (void)state;
    char cmd[1024];
    json_t *j = tu_shell_json(edited_cmd(cmd, sizeof cmd,
                                         "jq '.experiments[2] as $e | .experiments = [$e, ($e | .id = \"rate20\" | "
                                         ".workload.load.stages = [{rate_rps: 20, duration_s: 600}])]'",
                                         "validation/vllm-h100-train.json", "--draws 1 --by workload --json"));
    const json_t *g = json_object_get(json_object_get(j, "by"), "groups");
    assert_int_equal(json_array_size(g), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(g, 0), "group")),
                        "shared_prefix 100+447 in, 248 out, constant 8,20 req/s");
    assert_string_equal(json_string_value(json_object_get(json_array_get(g, 1), "group")),
                        "shared_prefix 100+447 in, 248 out, constant 20 req/s");
    json_decref(j);
}

/* Another part of a GPU family is not its preset: an H100 PCIe (2.0 TB/s)
 * and an A100 of 40 GB were read as the SXM 80 GB presets, "its GPU". */
static void test_other_part_of_the_family(void **state)
{
    (void)state;
    static const char *const hw[] = {"NVIDIA H100 PCIe", "A100-SXM4-40GB", "A100-SXM4-80GB"};
    static const char *const why[] = {
        "'NVIDIA H100 PCIe' is a PCIe card and the preset h100x1 is not (its HBM bandwidth and clocks differ)",
        "'A100-SXM4-40GB' has 40 GB of HBM a GPU and the preset a100x1 80 GiB", NULL};
    for (int i = 0; i < 3; i++) {
        char edit[256], cmd[1024];
        snprintf(edit, sizeof edit, "jq '.experiments[2].hardware = \"%s\" | .experiments |= .[2:3]'", hw[i]);
        json_t *j =
            tu_shell_json(edited_cmd(cmd, sizeof cmd, edit, "validation/vllm-h100-train.json", "--draws 1 --json"));
        const json_t *e = json_array_get(json_object_get(j, "experiments"), 0);
        const char *status = json_string_value(json_object_get(e, "status"));
        if (why[i]) {
            assert_string_equal(status, "not expressible");
            assert_non_null(strstr(json_string_value(json_object_get(e, "why")), why[i]));
        } else assert_string_equal(status, "ok"); /* the same part: read as its preset, as before */
        json_decref(j);
    }
}

/* An experiment's tp on a hardware preset of larger nodes is tensor
 * parallelism over tp of a node's GPUs (cluster.gpus_per_instance): the
 * Llama run at tp 2 on h100x8 predicts what it predicts on h100x2; a tp
 * that does not divide the node's GPUs is not expressible. */
static void test_tp_on_larger_node(void **state)
{
    static const char *const hw[] = {"h100x8", "h100x2", "h100x8"};
    static const int tp[] = {2, 2, 3};
    double itl[2] = {0};
    for (int i = 0; i < 3; i++) {
        char filter[256];
        snprintf(filter, sizeof filter,
                 ".experiments[0].tp = %d | .experiments[0].hardware = \"%s\" | .experiments |= .[0:1]", tp[i], hw[i]);
        json_t *j = validate_jq(filter);
        const json_t *row = json_array_get(json_object_get(j, "experiments"), 0);
        char *cfg = json_dumps(json_object_get(row, "config"), 0);
        if (i < 2) {
            itl[i] = at(row, "predicted", "itl_ms", "mean");
            assert_true((strstr(cfg, "cluster.gpus_per_instance=2") != NULL) == (i == 0));
        } else
            assert_string_equal(json_string_value(json_object_get(row, "why")),
                                "tp = 3 does not split hardware 'h100x8''s nodes of 8 GPUs evenly: give a tp that "
                                "divides 8");
        free(cfg);
        json_decref(j);
    }
    assert_double_equal(itl[0], itl[1], 0);
}

/* engine.kv_cache_dtype: fp8 is model.kv_dtype=fp8, whose KV reads are half
 * the bytes (the Llama run's decode steps get shorter); auto keeps the
 * weights' type; fp8_inc is not expressible. */
static void test_kv_cache_dtype(void **state)
{
    static const char *const kv[] = {"auto", "fp8", "fp8_inc"};
    double itl[2] = {0};
    for (int i = 0; i < 3; i++) {
        char filter[256];
        snprintf(filter, sizeof filter, ".experiments[0].engine.kv_cache_dtype = \"%s\" | .experiments |= .[0:1]",
                 kv[i]);
        json_t *j = validate_jq(filter);
        const json_t *row = json_array_get(json_object_get(j, "experiments"), 0);
        char *cfg = json_dumps(json_object_get(row, "config"), 0);
        assert_true((strstr(cfg, "\"model.kv_dtype=fp8\"") != NULL) == (i == 1));
        if (i < 2) itl[i] = at(row, "predicted", "itl_ms", "mean");
        else assert_non_null(strstr(json_string_value(json_object_get(row, "why")), "engine.kv_cache_dtype"));
        free(cfg);
        json_decref(j);
    }
    assert_true(itl[1] < itl[0]);
}

/* engine.enable_expert_parallel (vLLM's --enable-expert-parallel) is
 * cost.expert_parallel: the Mixtral run with it replays with the experts
 * split across its two GPUs. */
static void test_expert_parallel(void **state)
{
    json_t *j = validate_jq(".experiments[3].engine.enable_expert_parallel = true | .experiments |= [.[3]]");
    const json_t *row = json_array_get(json_object_get(j, "experiments"), 0);
    char *cfg = json_dumps(json_object_get(row, "config"), 0);
    assert_non_null(strstr(cfg, "\"cost.expert_parallel=true\""));
    assert_string_equal(json_string_value(json_object_get(row, "status")), "ok");
    free(cfg);
    json_decref(j);
}

/* Each row names its own replay's caveats: Mixtral's (its MoE, its compiles,
 * the router GEMM no table holds), and none for the Llama run after it in
 * the same process, whose notes used to carry Mixtral's over. */
static void test_caveats_per_experiment(void **state)
{
    json_t *j = validate_jq(".experiments |= [.[3], .[0]]");
    const json_t *xs = json_object_get(j, "experiments");
    char *mixtral = json_dumps(json_object_get(json_array_get(xs, 0), "caveats"), JSON_COMPACT);
    assert_string_equal(mixtral, "[\"moe\",\"moe_compiles\",\"not_measured\"]");
    assert_null(json_object_get(json_array_get(xs, 1), "caveats"));
    free(mixtral);
    json_decref(j);
}

/* Fine-tune suffixes name the same shape: each name or id against the
 * preset read by hand from configs/models/ (NULL: none, or two). */
static void test_model_keys(void **state)
{
    static const struct {
        const char *name, *hf, *want;
        bool by_hf;
    } cases[] = {
        {"Llama-3.1-8B-Instruct", NULL, "llama3.1-8b", false},
        {"mixtral_8x7b_instruct_v0.1", NULL, "mixtral-8x7b", false},
        {"m", "mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b", true},
        {"m", "meta-llama/Meta-Llama-3-70B-Instruct", "llama3-70b", true},
        {"m", "meta-llama/Llama-2-70b-chat-hf", "llama-2-70b", true},
        {"m", "codellama/CodeLlama-34b-Instruct-hf", "codellama-34b", true},
        {"m", "Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3-30b-a3b", true},
        {"m", "Qwen/Qwen2.5-32B-Instruct", "qwen2.5-32b", true},
        {"m", "meta-llama/Llama-3.1-70B-Instruct", "llama3.1-70b", true}, /* the preset's own name */
        {"m", "meta-llama/Llama-3.3-70B-Instruct", "llama3.1-70b", true}, /* the id its about names */
        {"Llama-3.1-405B-Instruct", "meta-llama/Llama-3.1-405B-Instruct", NULL, false},
        {"m", "meta-llama/Meta-Llama-3.1-8B-Instruct", "llama3.1-8b", true},
        {"Instruct", NULL, NULL, false},                         /* a name is never reduced to nothing */
        {"mixtral", NULL, NULL, false},                          /* a family is no preset */
        {"DeepSeek-V2", "deepseek-ai/DeepSeek-V2", NULL, false}, /* a generation is no release */
        {"m", "deepseek-ai/DeepSeek-V3-0324", "deepseek-v3", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[64] = "";
        bool by_hf = false;
        int rc = sim_model_preset_match(cases[i].name, cases[i].hf, out, sizeof out, &by_hf);
        if (!cases[i].want ? rc != -1 : rc || strcmp(out, cases[i].want) || by_hf != cases[i].by_hf)
            fail_msg("case %zu (%s, %s): rc %d, %s, by_hf %d", i, cases[i].name, cases[i].hf ? cases[i].hf : "-", rc,
                     out, by_hf);
    }
}

/* Degenerate files (issue 40 item 7) used to pass: an empty experiments
 * list, two experiments with one id, an engine.dtype vLLM has not, an id
 * with terminal escape bytes (printed raw); a --metric given twice printed
 * each failure twice. And what the fuzz target of this reader found: an
 * experiment without workload.load exited 2 with an empty message. */
static void test_degenerate_files(void **state)
{
    static const struct {
        const char *sed, *want;
    } cases[] = {
        {"0,/\"dtype\": \"float16\"/s//\"dtype\": \"int3\"/",
         "experiment 'a': engine.dtype 'int3' is not one of auto, half, float16, bfloat16, float, float32"},
        {"s/\"id\": \"b\"/\"id\": \"a\"/", "m.json: experiments 1 and 2 have the same id 'a': give each its own"},
        {"0,/\"load\": {/s//\"load\": null, \"request_order\": {/", /* found by tests/fuzz/fuzz_validate.c: exit 2 with no message */
         "experiment 'a': workload.load: expected an object with type and stages"},
        {"s/\"id\": \"c\"/\"id\": \"\\\\u001b[31mc\"/",
         "m.json: experiment id $'\\033[31mc' holds a control character: give a printable id"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_result r = edited(cases[i].sed);
        if (r.status != 2 || !strstr(r.err, cases[i].want))
            fail_msg("case %zu: exit %d, stderr: %s (want: %s)", i, r.status, r.err, cases[i].want);
        if (strchr(r.err, 033)) fail_msg("case %zu: a raw escape byte on stderr", i);
        tu_free(&r);
    }
    char *empty = tu_write_temp("{\"experiments\": []}"), args[512];
    snprintf(args, sizeof args, "validate --measurements %s", empty);
    tu_expect_exit(args, 2, ": \"experiments\" is empty: nothing to validate");
    tu_remove_temp(empty);
    cli_result r = tu_kvsim("validate --measurements validation/vllm-h100-train.json --max-error 5 --metric "
                            "e2e_ms.mean --metric e2e_ms.mean");
    assert_int_equal(r.status, 3);
    const char *line = "mixtral-8x7b-tp2-general-mnbt2048-run56: e2e_ms.mean error", *first = strstr(r.err, line);
    if (!first || strstr(first + 1, line)) fail_msg("the failure is not said once:\n%s", r.err);
    tu_free(&r);
}

/* --max-error: a CI gate. On the bundled measurements at 10% all four
 * runs pass on the default metrics (mean e2e and ITL); on mean TTFT at 20%
 * only the Mixtral run fails, with docs/validation.md's −33.8%, the report
 * printed as always; on ttft_ms.p90 at 10% three runs fail (−15.6%,
 * −25.0%, +34.2%). An experiment not expressible fails the gate; a metric
 * no experiment has measured and predicted, or --metric alone, is exit 2. */
static void test_gate(void **state)
{
    (void)state;
    /* seed 1's draw alone (--draws 1) keeps the test short; docs/validation.md
     * runs the gate on the default draws */
    const char *v = "validate --measurements validation/vllm-h100-train.json --draws 1";
    char args[512];
    snprintf(args, sizeof args, "%s --max-error 10", v);
    tu_expect_stdout(args, "median absolute error");
    snprintf(args, sizeof args, "%s --max-error 20 --metric ttft_ms.mean", v);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 3);
    assert_string_equal(r.err, "kvsim validate: mixtral-8x7b-tp2-general-mnbt2048-run56: ttft_ms.mean error -33.8% "
                               "exceeds --max-error 20%\n");
    assert_non_null(strstr(r.out, "median absolute error")); /* the report as always */
    tu_free(&r);
    snprintf(args, sizeof args, "%s --max-error 10 --metric ttft_ms.p90 --json", v);
    r = tu_kvsim(args);
    assert_int_equal(r.status, 3);
    json_t *j = json_loads(r.out, 0, NULL), *g = json_object_get(j, "gate");
    assert_int_equal(json_array_size(json_object_get(g, "failures")), 3); /* run16, qwen3, mixtral */
    assert_string_equal(json_string_value(json_array_get(json_object_get(g, "metrics"), 0)), "ttft_ms.p90");
    json_decref(j);
    tu_free(&r);
    /* both defaults are judged: the loop once stopped at e2e_ms.mean, and an
     * ITL error over the gate passed it (run16's -3.2% a 3% gate). On seed
     * 1's draw Qwen3's ITL error (-0.24%) is over a 0.2% gate its e2e error
     * (-0.13%) passes */
    snprintf(args, sizeof args, "%s --only qwen3-14b-tp1-general-mnbt2048-run13 --max-error 0.2 --json", v);
    r = tu_kvsim(args);
    assert_int_equal(r.status, 3);
    j = json_loads(r.out, 0, NULL), g = json_object_get(j, "gate");
    assert_int_equal(json_array_size(json_object_get(g, "metrics")), 2);
    assert_string_equal(json_string_value(json_array_get(json_object_get(g, "metrics"), 1)), "itl_ms.mean");
    const json_t *f = json_array_get(json_object_get(g, "failures"), 0);
    assert_string_equal(json_string_value(json_object_get(f, "metric")), "itl_ms.mean");
    double want = json_number_value(json_object_get(
        json_object_get(json_object_get(json_array_get(json_object_get(j, "experiments"), 0), "mpe"), "itl_ms"),
        "mean"));
    assert_double_equal(json_number_value(json_object_get(f, "error_pct")), want, 1e-9);
    assert_true(want < -0.2);
    assert_int_equal(json_array_size(json_object_get(g, "failures")), 1);
    json_decref(j);
    tu_free(&r);
    /* an experiment measuring none of the judged metrics was judged on
     * nothing and passed: it fails, saying so */
    char edited[1024];
    r = tu_shell(edited_cmd(edited, sizeof edited,
                            "jq '.experiments[2] as $e | .experiments = [$e, ($e | .id = \"ttft_only\" | .measured "
                            "= {requests: 300, ttft_ms: {mean: 10}})]'",
                            "validation/vllm-h100-train.json", "--draws 1 --max-error 1000 > /dev/null"));
    assert_int_equal(r.status, 3);
    assert_string_equal(r.err, "kvsim validate: ttft_only: not judged (it measures none of the judged metrics, "
                               "e2e_ms.mean, itl_ms.mean; name what it measures with --metric): the gate counts it "
                               "as failed\n");
    tu_free(&r);
    snprintf(args, sizeof args, "validate --measurements %s %s --max-error 1000", MEAS, SETS);
    tu_expect_exit(args, 3, "off: not expressible (");
    snprintf(args, sizeof args, "%s --max-error 10 --metric itl_ms.p99", v);
    tu_expect_exit(args, 2, "--metric itl_ms.p99: no experiment has it measured and predicted");
    snprintf(args, sizeof args, "%s --metric itl_ms.mean", v);
    tu_expect_exit(args, 2, "give --max-error too");
    snprintf(args, sizeof args, "%s --max-error -1", v);
    tu_expect_exit(args, 2, "--max-error '-1': give a percentage >= 0");
}

/* The runs go into --db, one per draw of each experiment replayed, with
 * their requests; each run carries its draw's workload seed. */
static void test_db(void **state)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "d=$(mktemp -d) && %s validate --measurements " MEAS " --draws 2 --db $d/v.db > /dev/null && "
             "echo $d",
             tu_kvsim_bin());
    cli_result r = tu_shell(cmd);
    assert_int_equal(r.status, 0);
    r.out[strcspn(r.out, "\n")] = 0;
    char db[600], q[] = "SELECT COUNT(*) || ',' || (SELECT COUNT(*) FROM requests) || ',' || group_concat(seed, ' ') "
                        "FROM runs";
    snprintf(db, sizeof db, "%s/v.db", r.out);
    char *got = tu_sql_text(db, q);
    assert_string_equal(got, "6,6,1 2 1 2 1 2");
    free(got);
    char rm[700];
    snprintf(rm, sizeof rm, "rm -rf %s", r.out);
    assert_int_equal(system(rm), 0);
    tu_free(&r);
}

/* `kvsim validate` of the training measurements with extra args, its --json
 * report and --db kept in a fresh folder: the report, the database's path
 * in db (600 bytes) and the folder in dir (512), for rm_dir. */
static json_t *train_into_dir(const char *args, char *db, char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "d=$(mktemp -d) && %s validate --measurements validation/vllm-h100-train.json %s --json --db $d/v.db "
             "> $d/out.json && echo $d",
             tu_kvsim_bin(), args);
    cli_result r = tu_shell(cmd);
    assert_int_equal(r.status, 0);
    r.out[strcspn(r.out, "\n")] = 0;
    char out[600];
    snprintf(dir, 512, "%s", r.out);
    snprintf(db, 600, "%s/v.db", r.out);
    snprintf(out, sizeof out, "%s/out.json", r.out);
    tu_free(&r);
    json_t *j = json_load_file(out, 0, NULL);
    assert_non_null(j);
    return j;
}

static void rm_dir(const char *dir)
{
    char rm[700];
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    assert_int_equal(system(rm), 0);
}

/* The fit range the CPU constants carry (sim_cost_fit_seqs: 51 for the
 * engine mode, fitted on the three dense runs, 121 for the measured mode,
 * on all four) is the most requests between prefill start and last token
 * at once in the training replays (every draw of each: the fit sees them
 * all, each in its own mode), recomputed here by SQL from their rows: at
 * each request's prefill start, the requests started and not done. The
 * training runs stay inside it (no fit_range in their rows); a long-output
 * load at max_num_seqs 128 goes beyond it and says so. */
#define PEAKS                                                                                                          \
    "SELECT group_concat(c, ',') FROM (SELECT MAX(c) AS c, MIN(r.id) AS first FROM (SELECT a.run_id, (SELECT "         \
    "COUNT(*) FROM requests b WHERE b.run_id = a.run_id AND b.prefill_start_ms <= a.prefill_start_ms AND "             \
    "b.done_ms > a.prefill_start_ms) AS c FROM requests a) x JOIN runs r ON r.id = x.run_id GROUP BY r.trace_path "    \
    "ORDER BY first)"
static void test_fit_seqs(void **state)
{
    char db[600], dir[512], cmd[1024];
    json_t *j = train_into_dir("", db, dir), *row;
    char *peaks = tu_sql_text(db, PEAKS);
    assert_string_equal(peaks, "37,37,50,121");
    free(peaks);
    size_t i;
    json_array_foreach(json_object_get(j, "experiments"), i, row) assert_null(json_object_get(row, "fit_range"));
    json_decref(j);
    rm_dir(dir);
    /* the engine mode's, on the dense runs (the file less Mixtral) */
    snprintf(cmd, sizeof cmd,
             "d=$(mktemp -d) && jq 'del(.experiments[3])' validation/vllm-h100-train.json > $d/m.json && %s validate "
             "--measurements $d/m.json --set cost.compute=engine --json --db $d/v.db > $d/out.json && echo $d",
             tu_kvsim_bin());
    cli_result r = tu_shell(cmd);
    assert_int_equal(r.status, 0);
    r.out[strcspn(r.out, "\n")] = 0;
    snprintf(db, sizeof db, "%s/v.db", r.out);
    snprintf(dir, sizeof dir, "%s", r.out);
    tu_free(&r);
    peaks = tu_sql_text(db, PEAKS);
    assert_string_equal(peaks, "37,37,51");
    free(peaks);
    snprintf(cmd, sizeof cmd, "%s/out.json", dir);
    j = json_load_file(cmd, 0, NULL);
    assert_non_null(j);
    json_array_foreach(json_object_get(j, "experiments"), i, row) assert_null(json_object_get(row, "fit_range"));
    json_decref(j);
    rm_dir(dir);
    r = tu_shell(edited_cmd(cmd, sizeof cmd, "sed 's/\"output_len\": 248/\"output_len\": 1500/'",
                            "validation/vllm-h100-train.json",
                            "--only llama3.1-8b-tp1-general-mnbt2048-run16 --draws 1"));
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "kvsim's iterations reached 128 sequences, beyond the 121 its CPU constants were "
                                  "fitted on; they make "));
    tu_free(&r);
}

/* The measured requests are the head of a load that goes on: the replay
 * sends more (the Llama run: 300 measured, 450 replayed, all in --db), the
 * last measured request leaves before the last arrival, and each prediction
 * is over the measured requests alone, recomputed here from their rows by
 * SQL: mean end-to-end latency, and the normalized time per output token
 * (itl_ms as inference-perf and the study measure it) as the mean of
 * e2e / output tokens. */
static void test_load_runs_on(void **state)
{
    char db[600], dir[512];
    json_t *j = train_into_dir("--only llama3.1-8b-tp1-general-mnbt2048-run16 --draws 1", db, dir);
    const json_t *row = json_array_get(json_object_get(j, "experiments"), 0);
    assert_int_equal(json_integer_value(json_object_get(row, "replayed")), 450);
    char *got = tu_sql_text(db, "SELECT COUNT(*) || ',' || (SELECT COUNT(*) FROM requests) || ',' || "
                                "((SELECT MAX(done_ms) FROM requests WHERE id < 300) <= "
                                "(SELECT MAX(arrival_ms) FROM requests)) FROM runs");
    assert_string_equal(got, "1,450,1");
    free(got);
    got = tu_sql_text(db, "SELECT AVG(e2e_ms) || ' ' || AVG(e2e_ms / output_len) FROM requests WHERE id < 300");
    double e2e = 0, ntpot = 0;
    assert_int_equal(sscanf(got, "%lf %lf", &e2e, &ntpot), 2);
    free(got);
    assert_double_equal(at(row, "predicted", "e2e_ms", "mean"), e2e,
                        e2e * 1e-9); /* --json prints 10 significant digits */
    assert_double_equal(at(row, "predicted", "itl_ms", "mean"), ntpot, ntpot * 1e-9);
    json_decref(j);
    rm_dir(dir);
}

/* Draws: the Llama run at --draws 3 predicts each statistic as the mean of
 * its three runs' (seeds 1, 2, 3 in --db), recomputed here by SQL from their
 * measured requests' rows, and gives the range of the three runs' own
 * errors; workload.seed moves the first draw (seed 2 alone is the second
 * run), and the text says when experiments' seeds differ; --draws and
 * workload.seed out of range are errors naming them. */
static void test_draws(void **state)
{
    char db[600], dir[512];
    json_t *j = train_into_dir("--only llama3.1-8b-tp1-general-mnbt2048-run16 --draws 3", db, dir);
    const json_t *row = json_array_get(json_object_get(j, "experiments"), 0);
    char *got = tu_sql_text(db, "SELECT group_concat(seed || ' ' || e2e || ' ' || ttft, ' ') FROM (SELECT r.seed, "
                                "AVG(q.e2e_ms) AS e2e, AVG(q.ttft_ms) AS ttft FROM requests q JOIN runs r ON r.id = "
                                "q.run_id WHERE q.id < 300 GROUP BY r.id ORDER BY r.id)");
    double seed[3], e2e[3], ttft[3], sum = 0, lo = INFINITY, hi = -INFINITY, meas = 2118.61;
    assert_int_equal(sscanf(got, "%lf %lf %lf %lf %lf %lf %lf %lf %lf", &seed[0], &e2e[0], &ttft[0], &seed[1], &e2e[1],
                            &ttft[1], &seed[2], &e2e[2], &ttft[2]),
                     9);
    free(got);
    for (int k = 0; k < 3; k++) {
        assert_double_equal(seed[k], k + 1, 0);
        double pct = (e2e[k] - meas) / meas * 100;
        sum += e2e[k], lo = fmin(lo, pct), hi = fmax(hi, pct);
    }
    assert_true(lo < hi); /* the draws differ */
    assert_double_equal(at(row, "predicted", "e2e_ms", "mean"), sum / 3, sum / 3 * 1e-9);
    assert_double_equal(at(row, "predicted", "ttft_ms", "mean"), (ttft[0] + ttft[1] + ttft[2]) / 3, 1e-6);
    const json_t *d = json_object_get(row, "draws"),
                 *range = json_object_get(json_object_get(json_object_get(d, "mpe"), "e2e_ms"), "mean");
    assert_int_equal(json_integer_value(json_object_get(d, "n")), 3);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(d, "seeds"), 1)), 3);
    assert_double_equal(json_number_value(json_array_get(range, 0)), lo, 1e-6);
    assert_double_equal(json_number_value(json_array_get(range, 1)), hi, 1e-6);
    json_decref(j);
    rm_dir(dir);
    char cmd[1024];
    cli_result r = tu_shell(edited_cmd(cmd, sizeof cmd, "jq '.experiments[0].workload.seed = 2'",
                                       "validation/vllm-h100-train.json",
                                       "--only llama3.1-8b-tp1-general-mnbt2048-run16 --draws 1 --json"));
    assert_int_equal(r.status, 0);
    j = json_loads(r.out, 0, NULL);
    assert_non_null(j);
    assert_double_equal(at(json_array_get(json_object_get(j, "experiments"), 0), "predicted", "e2e_ms", "mean"), e2e[1],
                        e2e[1] * 1e-9);
    json_decref(j);
    tu_free(&r);
    tu_expect_exit("validate --measurements " MEAS " --draws 0", 2,
                   "--draws '0': give a whole number from 1 to 1000, e.g. --draws 8");
    tu_expect_exit("validate --measurements " MEAS " --draws 2x", 2, "--draws '2x': give a whole number");
    r = tu_shell(edited_cmd(cmd, sizeof cmd, "jq '.experiments[0].workload.seed = 7'", MEAS, SETS " --draws 2"));
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "kvsim: the mean over 2 draws of each workload (generator seeds per experiment: "
                                  "--json, draws.seeds)"));
    tu_free(&r);
    r = tu_shell(edited_cmd(cmd, sizeof cmd, "jq '.experiments[0].workload.seed = 1.5'", MEAS, ""));
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "experiment 'a': workload.seed: 1.5 is not a whole number"));
    tu_free(&r);
}

/* --by: experiment c's question shortened to 60 tokens makes it a
 * workload of its own; each group's median is the median of its members'
 * errors, read from the same report (a and b: the mean of two; c: its own). */
static void test_by_groups(void **state)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "(d=$(mktemp -d) && sed '124s/68/60/' " MEAS " > $d/m.json && %s validate --measurements $d/m.json " SETS
             " --by workload --json; rc=$?; rm -rf $d; exit $rc)",
             tu_kvsim_bin());
    cli_result r = tu_shell(cmd);
    assert_int_equal(r.status, 0);
    json_error_t je;
    json_t *j = json_loads(r.out, 0, &je);
    if (!j) fail_msg("--by --json: %s\n%s", je.text, r.err);
    const json_t *xs = json_object_get(j, "experiments"), *by = json_object_get(j, "by");
    const json_t *g = json_object_get(by, "groups");
    assert_string_equal(json_string_value(json_object_get(by, "by")), "workload");
    assert_int_equal(json_array_size(g), 2);
    const json_t *g0 = json_array_get(g, 0), *g1 = json_array_get(g, 1);
    assert_string_equal(json_string_value(json_object_get(g0, "group")),
                        "shared_prefix 32+68 in, 5 out, constant 1 req/s");
    assert_string_equal(json_string_value(json_object_get(g1, "group")),
                        "shared_prefix 32+60 in, 5 out, constant 1 req/s");
    assert_int_equal(json_integer_value(json_object_get(g0, "experiments")), 2);
    assert_int_equal(json_integer_value(json_object_get(g1, "experiments")), 1);
    double a = at(json_array_get(xs, 0), "ape", "itl_ms", "mean"),
           b = at(json_array_get(xs, 1), "ape", "itl_ms", "mean");
    double c = at(json_array_get(xs, 2), "ape", "ttft_ms", "mean");
    assert_double_equal(at(g0, "median_ape", "itl_ms", "mean"), (a + b) / 2, 1e-6);
    assert_double_equal(at(g1, "median_ape", "ttft_ms", "mean"), c, 1e-6);
    assert_string_equal(json_string_value(json_object_get(json_array_get(xs, 2), "workload")),
                        "shared_prefix 32+60 in, 5 out, constant 1 req/s");
    json_decref(j);
    tu_free(&r);
    r = tu_kvsim("validate --measurements " MEAS " " SETS " --by model");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "median absolute error, model tests/fixtures/validate/model.json (3 experiments):"));
    tu_free(&r);
    r = tu_kvsim("validate --measurements " MEAS " " SETS " --by gpu");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "median absolute error, gpu hw (3 experiments):"));
    tu_free(&r);
    tu_expect_exit("validate --measurements " MEAS " --by cpu", 2, "--by 'cpu': group by model, gpu, tp or workload");
}

/* validation/vllm-ci-latency.json, vLLM's CI latency benchmark (one batch
 * of 8 prompts at once, docs/validation.md section 5): every experiment is
 * expressible and replays its batch whole (8 requests, no load behind it),
 * and the figures the caveats quote (sim/serving/caveats.c) are the ones
 * this replay gives: Llama-3-70B's error on each GPU, rounded, and a bound
 * on Mixtral's. */
static void test_ci_latency_in_the_caveats(void **state)
{
    json_t *j = tu_kvsim_json("validate --measurements validation/vllm-ci-latency.json --draws 1 --json");
    const json_t *xs = json_object_get(j, "experiments"), *x;
    char want[256], gpu[3][8] = {"", "", ""};
    int dense[3] = {0, 0, 0}, nd = 0;
    double moe = 0;
    size_t i;
    assert_int_equal(json_array_size(xs), 9);
    json_array_foreach(xs, i, x)
    {
        assert_string_equal(json_string_value(json_object_get(x, "status")), "ok");
        assert_int_equal(json_integer_value(json_object_get(x, "replayed")), 8);
        double e = at(x, "mpe", "e2e_ms", "mean");
        const char *model = json_string_value(json_object_get(x, "model"));
        if (!strcmp(model, "mixtral-8x7b")) moe = fmax(moe, fabs(e));
        if (strcmp(model, "llama3-70b")) continue;
        assert_true(e < 0); /* "kvsim is fast" */
        dense[nd] = (int)lround(-e);
        snprintf(gpu[nd++], sizeof gpu[0], "%s", json_string_value(json_object_get(x, "gpu")));
    }
    assert_int_equal(nd, 3);
    assert_string_equal(gpu[0], "h100"), assert_string_equal(gpu[1], "h200"), assert_string_equal(gpu[2], "a100");
    cli_result r = tu_kvsim("cost --set model=llama3-70b --set hardware=h100x4 --set cluster.mode=aggregated");
    snprintf(want, sizeof want, "by %d%% on H100, %d%% on H200 and %d%% on A100", dense[0], dense[1], dense[2]);
    if (!strstr(r.err, want)) fail_msg("the tensor_parallel caveat lacks '%s': %s", want, r.err);
    tu_free(&r);
    r = tu_kvsim("cost --set model=mixtral-8x7b --set hardware=h100x2 --set cluster.mode=aggregated");
    snprintf(want, sizeof want, "is within %d%% on two H100s, H200s and A100s", (int)ceil(moe));
    if (!strstr(r.err, want)) fail_msg("the moe caveat lacks '%s': %s", want, r.err);
    tu_free(&r);
    json_decref(j);
}

/* The workload kind `vllm bench latency` names what it lacks and what it
 * does not read, as every block does. */
static void test_latency_kind_errors(void **state)
{
    char cmd[1024];
    const char *file = "validation/vllm-ci-latency.json";
    cli_result r = tu_shell(edited_cmd(cmd, sizeof cmd, "jq 'del(.experiments[0].workload.batch_size)'", file, ""));
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "experiment 'latency_llama8B_tp1-h100-build9555': workload.batch_size: missing"));
    tu_free(&r);
    r = tu_shell(edited_cmd(cmd, sizeof cmd, "jq '.experiments[0].workload.n = 2'", file,
                            "--only latency_llama8B_tp1-h100-build9555"));
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "not expressible: unknown workload key 'n': kvsim does not read it (batch_size, "
                                  "input_len and output_len)"));
    tu_free(&r);
}

/* What a user got wrong exits 2 naming it, before any replay: a --set no
 * experiment can take (it once failed every replay and exited 0), a
 * measured value that is no positive number (the same). The gate judges
 * the default metrics a file measures: vLLM's CI latency file has no ITL,
 * and the gate once failed naming a --metric no one gave. */
static void test_user_errors(void **state)
{
    char cmd[1024];
    const char *ci = "validation/vllm-ci-latency.json";
    tu_expect_exit("validate --measurements validation/vllm-ci-latency.json --set nosuch.key=1", 2,
                   "kvsim validate: --set: unknown config key 'nosuch.key'");
    tu_expect_exit("validate --measurements validation/vllm-ci-latency.json --set engine.measured.iter_overhead_ms=-1",
                   2, "config key 'engine.measured.iter_overhead_ms': -1 is out of range");
    /* a count that is no whole number is a broken file, as a fractional
     * seed was (a tp of 1.5 ran as 1) */
    cli_result t =
        tu_shell(edited_cmd(cmd, sizeof cmd, "jq '.experiments[2].tp = 1.5'", "validation/vllm-h100-train.json", ""));
    assert_int_equal(t.status, 2);
    assert_non_null(strstr(t.err, "experiment 'qwen3-14b-tp1-general-mnbt2048-run13': experiment.tp: 1.5 is not a "
                                  "whole number"));
    tu_free(&t);
    /* a replay's error names the experiment once (it was said twice) */
    t = tu_shell(edited_cmd(cmd, sizeof cmd,
                            "jq '.experiments[2].workload.load.stages = [{rate_rps: 8, duration_s: 10}] | .experiments "
                            "|= .[2:3]'",
                            "validation/vllm-h100-train.json", "--draws 1 > /dev/null"));
    const char *said = strstr(t.err, "experiment 'qwen3-14b-tp1-general-mnbt2048-run13': its load stages send 80");
    assert_non_null(said);
    assert_null(strstr(t.err, "experiment 'qwen3-14b-tp1-general-mnbt2048-run13': /"));
    tu_free(&t);
    /* another model or GPU was replayed under the file's names (an audit:
     * llama3.2-1b on b200x1 reported as qwen3-14b on h100) */
    tu_expect_exit("validate --measurements validation/vllm-ci-latency.json --set model=llama3.2-1b", 2,
                   "kvsim validate: --set model: each experiment is replayed on the model and GPU it measured");
    tu_expect_exit("validate --measurements validation/vllm-ci-latency.json --set hardware=b200x1", 2,
                   "kvsim validate: --set hardware: each experiment is replayed on the model and GPU it measured");
    /* the user's --set is in each experiment's config, after its own (and
     * before the replayed requests' trace.limit) */
    json_t *c = tu_kvsim_json("validate --measurements validation/vllm-ci-latency.json --draws 1 --set "
                              "engine.measured.seq_overhead_ms=0.06 --json");
    const json_t *cfg = json_object_get(json_array_get(json_object_get(c, "experiments"), 0), "config");
    assert_string_equal(json_string_value(json_array_get(cfg, json_array_size(cfg) - 2)),
                        "engine.measured.seq_overhead_ms=0.06");
    json_decref(c);
    /* engine.dtype is what vLLM computes in: model.torch_dtype (its all-reduce
     * dispatch differs for fp16); auto keeps the preset's */
    cli_result d = tu_shell(edited_cmd(
        cmd, sizeof cmd, "jq '.experiments[0].engine.dtype = \"half\" | .experiments[1].engine.dtype = \"bfloat16\"'",
        ci, "--draws 1 --json"));
    assert_int_equal(d.status, 0);
    c = json_loads(d.out, 0, NULL);
    const char *want[] = {"model.torch_dtype=float16", "model.torch_dtype=bfloat16", NULL};
    for (size_t k = 0; k < 3; k++) {
        char *text = json_dumps(json_object_get(json_array_get(json_object_get(c, "experiments"), k), "config"), 0);
        if (want[k]) assert_non_null(strstr(text, want[k]));
        else assert_null(strstr(text, "model.torch_dtype"));
        free(text);
    }
    json_decref(c);
    tu_free(&d);
    cli_result r =
        tu_shell(edited_cmd(cmd, sizeof cmd, "jq '.experiments[1].measured.e2e_ms.mean = \"fast\"'", ci, ""));
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "experiment 'latency_mixtral8x7B_tp2-h100-build9555': measured.e2e_ms.mean: "
                                  "expected a positive number"));
    tu_free(&r);
    r = tu_kvsim("validate --measurements validation/vllm-ci-latency.json --draws 1 --max-error 10 --json");
    assert_int_equal(r.status, 3);
    assert_null(strstr(r.err, "--metric"));
    json_t *j = json_loads(r.out, 0, NULL);
    tu_free(&r);
    const json_t *g = json_object_get(j, "gate");
    assert_int_equal(json_array_size(json_object_get(g, "metrics")), 1);
    assert_string_equal(json_string_value(json_array_get(json_object_get(g, "metrics"), 0)), "e2e_ms.mean");
    size_t i;
    const json_t *f;
    json_array_foreach(json_object_get(g, "failures"), i, f) /* the experiments over 10%, each */
    {
        const char *id = json_string_value(json_object_get(f, "id"));
        const json_t *x, *xs = json_object_get(j, "experiments");
        size_t k;
        json_array_foreach(xs, k, x) if (!strcmp(json_string_value(json_object_get(x, "id")), id))
            assert_true(fabs(at(x, "mpe", "e2e_ms", "mean")) > 10);
    }
    assert_true(json_array_size(json_object_get(g, "failures")) > 0);
    json_decref(j);
}

/* Two experiments of one system in one process: the second lost its
 * not_measured caveat (a price cached by the first skipped the lookup
 * that notes Mixtral's router GEMM, n = 8 below the tables' 32). Each
 * experiment now lists it, and both predict the same. */
static void test_same_system_twice(void **state)
{
    json_t *f = json_load_file("validation/vllm-h100-train.json", 0, NULL), *ex = json_object_get(f, "experiments");
    json_t *mx = json_deep_copy(json_array_get(ex, 3)), *copy = json_deep_copy(mx);
    json_object_set_new(copy, "id", json_string("mixtral-copy"));
    json_array_clear(ex);
    json_array_append_new(ex, mx);
    json_array_append_new(ex, copy);
    char *text = json_dumps(f, 0), *path = tu_write_temp(text), args[512];
    snprintf(args, sizeof args, "validate --measurements %s --draws 1 --json", path);
    json_t *r = tu_kvsim_json_status(args, 0), *rows = json_object_get(r, "experiments");
    assert_int_equal(json_array_size(rows), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *names = json_object_get(json_array_get(rows, i), "caveats"), *n;
        size_t k;
        bool said = false;
        json_array_foreach(names, k, n) said |= !strcmp(json_string_value(n), "not_measured");
        if (!said) fail_msg("experiment %zu: caveats %s", i, json_dumps(names, JSON_COMPACT));
    }
    assert_true(json_equal(json_object_get(json_array_get(rows, 0), "predicted"),
                           json_object_get(json_array_get(rows, 1), "predicted")));
    json_decref(r);
    json_decref(f);
    free(text);
    tu_remove_temp(path);
}

/* vLLM's latency benchmark is one batch of fixed lengths: no random
 * element, so its eight draws were one run eight times. It is one draw
 * (draws.n 1, draws.fixed), with the same prediction as the first of
 * eight; a random workload keeps its eight. */
static void test_fixed_workload_one_draw(void **state)
{
    (void)state;
    json_t *ci = tu_kvsim_json("validate --measurements validation/vllm-ci-latency.json --only "
                               "latency_llama8B_tp1-a100-build9523 --json");
    const json_t *row = json_array_get(json_object_get(ci, "experiments"), 0), *d = json_object_get(row, "draws");
    assert_int_equal(json_integer_value(json_object_get(d, "n")), 1);
    assert_true(json_is_true(json_object_get(d, "fixed")));
    json_t *one = tu_kvsim_json("validate --measurements validation/vllm-ci-latency.json --only "
                                "latency_llama8B_tp1-a100-build9523 --draws 1 --json");
    const json_t *first = json_array_get(json_object_get(one, "experiments"), 0);
    assert_double_equal(tu_num_at(json_object_get(row, "predicted"), "e2e_ms", "mean"),
                        tu_num_at(json_object_get(first, "predicted"), "e2e_ms", "mean"), 0);
    json_t *train = tu_kvsim_json("validate --measurements validation/vllm-h100-train.json --only "
                                  "llama3.1-8b-tp1-general-mnbt1024-run22 --json");
    d = json_object_get(json_array_get(json_object_get(train, "experiments"), 0), "draws");
    assert_int_equal(json_integer_value(json_object_get(d, "n")), 8);
    assert_true(json_is_false(json_object_get(d, "fixed")));
    json_decref(ci), json_decref(one), json_decref(train);
    tu_expect_stdout(
        "validate --measurements validation/vllm-ci-latency.json --only latency_llama8B_tp1-a100-build9523",
        "one draw (fixed workload)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_workload_one_draw),
        cmocka_unit_test(test_ci_latency_in_the_caveats),
        cmocka_unit_test(test_latency_kind_errors),
        cmocka_unit_test(test_user_errors),
        cmocka_unit_test(test_predictions_by_hand),
        cmocka_unit_test(test_draws),
        cmocka_unit_test(test_median_and_not_expressible),
        cmocka_unit_test(test_median_helper),
        cmocka_unit_test(test_only_and_text),
        cmocka_unit_test(test_not_expressible_rows),
        cmocka_unit_test(test_async_by_release),
        cmocka_unit_test(test_file_runs_past_an_experiment),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_model_names),
        cmocka_unit_test(test_model_keys),
        cmocka_unit_test(test_tp_on_larger_node),
        cmocka_unit_test(test_other_part_of_the_family),
        cmocka_unit_test(test_workload_groups_by_load),
        cmocka_unit_test(test_caveats_per_experiment),
        cmocka_unit_test(test_kv_cache_dtype),
        cmocka_unit_test(test_expert_parallel),
        cmocka_unit_test(test_db),
        cmocka_unit_test(test_load_runs_on),
        cmocka_unit_test(test_fit_seqs),
        cmocka_unit_test(test_gate),
        cmocka_unit_test(test_by_groups),
        cmocka_unit_test(test_degenerate_files),
        cmocka_unit_test(test_same_system_twice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
