/* tests/test_profile.c — the cost model's profile-table mode and the GPU
 * calibration made from recorded probe JSON (configs/calibration/h100.*):
 * interpolation checked by hand on a small table; the compute section's
 * whole-model times, decode lines, FLOP rate and page-copy cost recomputed
 * here from the raw JSON by second, simpler implementations; the cost model
 * using the tables on the H100 preset and refusing them on an 8-GPU node;
 * `kvsim calibrate --layers-json` errors naming file and point. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>

#include "sim/config/config.h"
#include "sim/cost/cost.h"
#include "sim/cost/profile.h"
#include "sim/cost/profile_fit.h"
#include "tests/testutil.h"

#define H100_LAYERS "configs/calibration/h100.layers.json"
#define H100_PROBE  "configs/calibration/h100.probe.json"

static void assert_rel(double got, double want, double tol)
{
    if (fabs(got - want) > tol * fabs(want)) fail_msg("got %.9g, want %.9g (±%.2g relative)", got, want, tol);
}

/* 2 new sizes × 2 cached sizes, 2 batch lines: every lookup by hand. */
static sim_profile small_profile(void)
{
    sim_profile p = {.gpus = 1, .n_new = 2, .n_cached = 2, .n_batch = 2, .flops_per_s = 1e14};
    p.new_tokens[0] = 100, p.new_tokens[1] = 200;
    p.cached_tokens[0] = 0, p.cached_tokens[1] = 1000;
    p.prefill_s[0][0] = 1.0, p.prefill_s[0][1] = 2.0; /* cached 0 */
    p.prefill_s[1][0] = 3.0, p.prefill_s[1][1] = 5.0; /* cached 1000 */
    p.batch[0] = 1, p.batch[1] = 9;
    p.base_s[0] = 0.010, p.per_token_s[0] = 1e-6;
    p.base_s[1] = 0.018, p.per_token_s[1] = 3e-6;
    return p;
}

static void test_interpolation_by_hand(void **state)
{
    sim_profile p = small_profile();
    assert_double_equal(sim_profile_prefill_s(&p, 100, 0), 1.0, 1e-12);
    assert_double_equal(sim_profile_prefill_s(&p, 200, 1000), 5.0, 1e-12);
    assert_double_equal(sim_profile_prefill_s(&p, 150, 0), 1.5, 1e-12);    /* halfway along new */
    assert_double_equal(sim_profile_prefill_s(&p, 150, 500), 2.75, 1e-12); /* (1.5 + 4) / 2 */
    assert_double_equal(sim_profile_prefill_s(&p, 50, 0), 1.0, 1e-12);     /* below the grid: flat */
    assert_double_equal(sim_profile_prefill_s(&p, 300, 0), 3.0, 1e-12);    /* past it: slope 1 per 100 */
    assert_double_equal(sim_profile_prefill_s(&p, 100, 2000), 5.0, 1e-12); /* cached past: slope 2 per 1000 */
    /* decode: batch 5 is halfway between the lines: base 0.014, per token 2e-6 */
    assert_double_equal(sim_profile_decode_s(&p, 1, 1000), 0.011, 1e-12);
    assert_double_equal(sim_profile_decode_s(&p, 5, 1000), 0.016, 1e-12);
    /* past batch 9: base goes on (+0.001 per request), per token stays 3e-6 */
    assert_double_equal(sim_profile_decode_s(&p, 17, 1000), 0.026 + 0.003, 1e-12);
    assert_double_equal(sim_profile_decode_s(&p, 0, 1000), 0, 0);
}

/* The layer probe's value of `key` for the first point of `kind` whose
 * integer fields a and b equal va and vb, read with jansson here. */
static double probe_ms(json_t *doc, const char *model, const char *kind, const char *a, long va, const char *b, long vb)
{
    size_t i, j;
    json_t *m, *pt;
    json_array_foreach(json_object_get(doc, "models"), i, m)
    {
        if (strcmp(json_string_value(json_object_get(m, "name")), model)) continue;
        json_array_foreach(json_object_get(m, kind), j, pt)
        {
            if (json_integer_value(json_object_get(pt, a)) != va) continue;
            if (b && json_integer_value(json_object_get(pt, b)) != vb) continue;
            return json_number_value(json_object_get(pt, "ms"));
        }
    }
    fail_msg("no %s point %s=%ld in %s", kind, a, va, model);
    return 0;
}

static void test_fit_recorded_h100(void **state)
{
    json_error_t je;
    json_t *doc = json_load_file(H100_LAYERS, 0, &je);
    assert_non_null(doc);
    sim_profile_fitting f;
    sim_err err;
    if (sim_profile_fit(&f, H100_LAYERS, "h100x1", &err)) fail_msg("%s", err.msg);
    assert_int_equal(f.nrows, 3 * (32 + 34) + 2); /* 3 models × (32 prefill + 34 decode) + one e2e pair */
    /* llama3.1-8b prefill of 4096 after 8192 cached: 32 layers + the head on one token */
    double want = (32 * probe_ms(doc, "llama3.1-8b", "prefill", "new", 4096, "cached", 8192) +
                   probe_ms(doc, "llama3.1-8b", "head", "batch", 1, NULL, 0)) /
                  1e3;
    int seen = 0;
    for (size_t i = 0; i < f.nrows; i++) {
        const sim_profile_row *r = &f.rows[i];
        if (strcmp(r->model, "llama3.1-8b") || strcmp(r->kind, "prefill") || r->x != 4096 || r->y != 8192) continue;
        assert_rel(r->measured_s, want, 1e-12);
        assert_rel(r->calibrated_s, want, 1e-12); /* a grid point comes back as measured */
        assert_true(r->analytic_s > 0);
        seen++;
    }
    assert_int_equal(seen, 1);
    sim_profile_fitting_free(&f);
    json_decref(doc);
}

/* Weighted (1/t²) least squares by the normal equations, written out. */
static void wls(const double *x, const double *t, int n, double *a, double *b)
{
    double sw = 0, sx = 0, st = 0, sxx = 0, sxt = 0;
    for (int i = 0; i < n; i++) {
        double w = 1 / (t[i] * t[i]);
        sw += w, sx += w * x[i], st += w * t[i], sxx += w * x[i] * x[i], sxt += w * x[i] * t[i];
    }
    *b = (sw * sxt - sx * st) / (sw * sxx - sx * sx);
    *a = (st - *b * sx) / sw;
}

/* The batch-16 decode line of llama3.1-8b in the written calibration file,
 * recomputed from the four raw points. */
static void test_decode_line_second_implementation(void **state)
{
    json_error_t je;
    json_t *doc = json_load_file(H100_LAYERS, 0, &je), *cal = json_load_file("configs/calibration/h100.json", 0, &je);
    assert_non_null(doc);
    assert_non_null(cal);
    const long ctx[] = {512, 2048, 8192, 32768};
    double x[4], t[4], a, b, head = probe_ms(doc, "llama3.1-8b", "head", "batch", 16, NULL, 0);
    for (int i = 0; i < 4; i++) {
        x[i] = 16.0 * ctx[i];
        t[i] = (32 * probe_ms(doc, "llama3.1-8b", "decode", "batch", 16, "context", ctx[i]) + head) / 1e3;
    }
    wls(x, t, 4, &a, &b);
    sim_profile p;
    sim_err err;
    assert_int_equal(sim_profile_from_json("h100.json", cal, "llama3.1-8b", &p, &err), 1);
    int k = 0;
    while (k < p.n_batch && p.batch[k] != 16) k++;
    assert_true(k < p.n_batch);
    assert_rel(p.base_s[k], a, 1e-6);
    assert_rel(p.per_token_s[k], b, 1e-6);
    json_decref(doc);
    json_decref(cal);
}

/* The H100 preset's profile, asked for by name: a one-chunk prefill is
 * the measured grid point, a two-chunk one the sum of its two passes plus
 * two chunk overheads, a decode step the table plus
 * cost.decode_overhead_ms. Under auto the preset's measured tables price
 * the same disaggregated run instead (docs/measured.md). */
static void test_cost_uses_profile_on_h100(void **state)
{
    char *sets[] = {"hardware=h100x1", "model=llama3.1-8b", "cost.compute=profile"};
    sim_config cfg;
    sim_cost c;
    sim_err err;
    if (sim_config_load(&cfg, NULL, sets, 3, &err) || sim_cost_init(&c, &cfg, &err)) fail_msg("%s", err.msg);
    assert_true(c.profiled);
    json_error_t je;
    json_t *doc = json_load_file(H100_LAYERS, 0, &je);
    double head = probe_ms(doc, "llama3.1-8b", "head", "batch", 1, NULL, 0);
    double p0 = (32 * probe_ms(doc, "llama3.1-8b", "prefill", "new", 8192, "cached", 0) + head) / 1e3;
    double p1 = (32 * probe_ms(doc, "llama3.1-8b", "prefill", "new", 8192, "cached", 8192) + head) / 1e3;
    assert_rel(sim_cost_prefill_s(&c, 8192, 0), p0, 1e-12);
    assert_rel(sim_cost_prefill_s(&c, 16384, 0), p0 + p1 + 2 * cfg.chunk_overhead_s, 1e-12);
    sim_decode_terms t = sim_cost_decode_terms(&c, 16, 16 * 2048);
    assert_true(t.profiled);
    assert_rel(t.total_s, sim_profile_decode_s(&c.profile, 16, 16 * 2048.0) + cfg.decode_overhead_s, 1e-12);
    json_decref(doc);
    sim_config_free(&cfg);
    if (sim_config_load(&cfg, NULL, sets, 2, &err) || sim_cost_init(&c, &cfg, &err)) fail_msg("%s", err.msg);
    assert_false(c.profiled);
    assert_non_null(c.measured);
    sim_config_free(&cfg);
}

/* Measured on one GPU, the tables do not apply to an 8-GPU node: analytic
 * (when the measured tables are not asked for), and `kvsim cost` says
 * why; under auto the preset's measured tables price it, and the profile
 * is not mentioned. */
static void test_profile_not_used_on_other_gpu_count(void **state)
{
    char *sets[] = {"hardware=h100x8", "model=llama3.1-8b", "hardware.calibration=\"configs/calibration/h100.json\"",
                    "cost.compute=analytic"};
    sim_config cfg;
    sim_cost c;
    sim_err err;
    if (sim_config_load(&cfg, NULL, sets, 4, &err) || sim_cost_init(&c, &cfg, &err)) fail_msg("%s", err.msg);
    assert_false(c.profiled);
    assert_true(c.profile_gpus_mismatch);
    sim_config_free(&cfg);
    tu_expect_stdout("cost --set hardware=h100x8 --set model=llama3.1-8b "
                     "--set 'hardware.calibration=\"configs/calibration/h100.json\"' --set cost.compute=analytic",
                     "compute: analytic (configs/calibration/h100.json was measured on 1 GPU, this hardware has 8)");
    tu_expect_ok_without("cost --set hardware=h100x8 --set model=llama3.1-8b "
                         "--set 'hardware.calibration=\"configs/calibration/h100.json\"'",
                         "compute: analytic", NULL);
}

/* Page copies: t = copies × a + bytes / beta refitted here by the 2×2
 * normal equations over the probe's per_page load samples. */
static void test_page_copies_second_implementation(void **state)
{
    json_error_t je;
    json_t *probe = json_load_file(H100_PROBE, 0, &je), *cal = json_load_file("configs/calibration/h100.json", 0, &je);
    assert_non_null(probe);
    double s11 = 0, s12 = 0, s22 = 0, s1t = 0, s2t = 0;
    size_t i;
    json_t *smp;
    json_array_foreach(json_object_get(probe, "samples"), i, smp)
    {
        if (strcmp(json_string_value(json_object_get(smp, "method")), "per_page") ||
            strcmp(json_string_value(json_object_get(smp, "direction")), "load"))
            continue;
        const char *shape = json_string_value(json_object_get(smp, "shape"));
        double layers = !strcmp(shape, "llama3.1-8b") ? 32 : !strcmp(shape, "llama3-70b-tp8") ? 80 : 64;
        double x1 = json_number_value(json_object_get(smp, "tokens")) / 16 * layers * 2;
        double x2 = json_number_value(json_object_get(smp, "bytes"));
        double t = json_number_value(json_object_get(smp, "median_s")), w = 1 / (t * t);
        s11 += w * x1 * x1, s12 += w * x1 * x2, s22 += w * x2 * x2, s1t += w * x1 * t, s2t += w * x2 * t;
    }
    double det = s11 * s22 - s12 * s12, a = (s1t * s22 - s12 * s2t) / det, inv_b = (s11 * s2t - s12 * s1t) / det;
    const json_t *load = json_object_get(json_object_get(cal, "page_copies"), "load");
    assert_rel(json_number_value(json_object_get(load, "per_copy_s")), a, 1e-6);
    assert_rel(json_number_value(json_object_get(load, "beta_Bps")), 1 / inv_b, 1e-6);
    json_decref(probe);
    json_decref(cal);
}

static void test_calibrate_layers_errors(void **state)
{
    tu_expect_exit("calibrate --probe-json " H100_PROBE " --out /tmp/kvsim-never.json --layers-json " H100_LAYERS, 2,
                   "--layers-json and --hardware go together");
    tu_expect_exit("calibrate --probe-json " H100_PROBE " --out /tmp/kvsim-never.json --layers-json " H100_LAYERS
                   " --hardware h100x8",
                   2, "hardware 'h100x8' has 8 GPUs per node; the layer probe measures one GPU");
    tu_expect_exit("calibrate --probe-json " H100_PROBE " --out /tmp/kvsim-never.json --layers-json " H100_PROBE
                   " --hardware h100x1",
                   2, H100_PROBE ": kind: expected \"kvsim-layer-probe\"");
    /* a layer probe document with one prefill point removed: the grid has a hole */
    char *path = tu_write_temp(
        "{\"kind\": \"kvsim-layer-probe\", \"version\": 1, \"models\": [{\"name\": \"llama3.1-8b\", \"layers\": "
        "32, \"head\": [{\"batch\": 1, \"ms\": 0.3}], \"prefill\": [{\"new\": 512, \"cached\": "
        "0, \"ms\": 1}, {\"new\": 1024, \"cached\": 0, \"ms\": 2}, {\"new\": 512, \"cached\": "
        "2048, \"ms\": 3}], \"decode\": [{\"batch\": 1, \"context\": 512, \"ms\": 0.2}]}]}");
    char args[1024];
    snprintf(args, sizeof args,
             "calibrate --probe-json " H100_PROBE " --out /tmp/kvsim-never.json --layers-json %s --hardware h100x1",
             path);
    tu_expect_exit(args, 2,
                   "model llama3.1-8b: prefill: no point for new = 1024, cached = 2048 (the grid must be full)");
    tu_remove_temp(path);
}

/* The committed calibration file regenerates byte for byte from the
 * committed measurements with the documented command (docs/gpu-calibration.md).
 * Its comparison rows' analytic_s is the analytic model's time: before the
 * fix, `auto` priced them from the h100x1 preset's measured tables once the
 * preset named tables, so the "analytic" column (and
 * docs/data/gpu-calibration-tables.md) silently became another model. */
static void test_calibrate_regenerates_committed(void **state)
{
    (void)state;
    char *out = tu_temp_path(), args[1024];
    snprintf(args, sizeof args,
             "calibrate --probe-json " H100_PROBE " --layers-json " H100_LAYERS " --hardware h100x1 --out %s "
             "--label 'cuda: NVIDIA H100 80GB HBM3 (PCIe Gen5 x16)'",
             out);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    char *got = tu_slurp_path(out), *want = tu_slurp_path("configs/calibration/h100.json");
    assert_non_null(got);
    assert_non_null(want);
    if (strcmp(got, want)) fail_msg("kvsim %s: the output differs from configs/calibration/h100.json", args);
    free(got), free(want);
    tu_free(&r);
    unlink(out);
    free(out);
}

/* Without PyTorch or a visible GPU the layer probe says why and succeeds
 * (CUDA_VISIBLE_DEVICES is emptied, so a GPU machine answers the same). */
static void test_layer_probe_skips_without_gpu(void **state)
{
    if (system("command -v python3 >/dev/null 2>&1") != 0) {
        printf("skip: python3 not installed\n");
        skip();
    }
    cli_result r = tu_shell("(CUDA_VISIBLE_DEVICES= python3 datapath/probe/layer_probe.py "
                            "--out /tmp/kvsim-layer-probe-never.json 2>&1; echo exit=$?)");
    int ok = strstr(r.out, "skip: layer_probe needs") && strstr(r.out, "exit=0");
    if (!ok) printf("layer probe said: %s\n", r.out);
    tu_free(&r);
    assert_true(ok);
}

/* The GPU probes of reports/ without a GPU (or without PyTorch, as on CI)
 * exit non-zero naming what they need; device_checks.sh refuses a check it
 * does not have with exit 2, naming the checks it has. */
static void test_gpu_probes_say_what_they_need(void **state)
{
    if (system("command -v python3 >/dev/null 2>&1") != 0) {
        printf("skip: python3 not installed\n");
        skip();
    }
    static const char *const probes[] = {"moe_probe", "attention_probe", "gemm_probe", "moe_compile_probe"};
    for (size_t i = 0; i < sizeof probes / sizeof *probes; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "(CUDA_VISIBLE_DEVICES= python3 reports/%s.py 2>&1; echo exit=$?)", probes[i]);
        cli_result r = tu_shell(cmd);
        int ok = (strstr(r.out, ": needs PyTorch") && strstr(r.out, "exit=2")) ||
                 (strstr(r.out, ": no CUDA GPU: run it on a GPU host") && strstr(r.out, "exit=1"));
        if (!ok) printf("%s said: %s\n", probes[i], r.out);
        tu_free(&r);
        assert_true(ok);
    }
    cli_result r = tu_shell("(OUT=/tmp/kvsim-device-never sh reports/device_checks.sh moe nosuch 2>&1; echo exit=$?)");
    assert_non_null(strstr(r.out, "'nosuch' is no check (checks: moe_compile gemm sampler"));
    assert_non_null(strstr(r.out, "exit=2"));
    tu_free(&r);
    assert_int_equal(access("/tmp/kvsim-device-never", F_OK), -1); /* refused before it wrote anything */
}

/* The MoE probe's routing and configs, by hand: AIConfigurator's balanced
 * rule gives token t of M the experts ⌊t·s/M + j·s⌋ mod 8 (s = ⌈8/2⌉ = 4)
 * below s tokens, (t + j·s) mod 8 from s on: 3 tokens are 0,4 1,5 2,6
 * (t·4/3 = 0, 1.33, 2.67), 5 tokens wrap to 4,0 for the fifth; vLLM takes
 * the config of the nearest batch key, the first of two as near: 384
 * tokens sit between the keys 256 and 512 and take 256, 100 takes 96. */
static void test_moe_probe_routing_by_hand(void **state)
{
    if (system("command -v python3 >/dev/null 2>&1") != 0) {
        printf("skip: python3 not installed\n");
        skip();
    }
    cli_result r = tu_shell("cd reports && python3 -c 'import moe_probe as m; "
                            "print(m.balanced(3), m.balanced(5)[8:], m.config(384)[0], m.config(100)[0], "
                            "m.config(1)[1][\"BLOCK_M\"])' 2>&1");
    if (!strstr(r.out, "[0, 4, 1, 5, 2, 6] [4, 0] 256 96 16")) printf("moe_probe said: %s\n", r.out);
    assert_non_null(strstr(r.out, "[0, 4, 1, 5, 2, 6] [4, 0] 256 96 16"));
    tu_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interpolation_by_hand),
        cmocka_unit_test(test_gpu_probes_say_what_they_need),
        cmocka_unit_test(test_moe_probe_routing_by_hand),
        cmocka_unit_test(test_fit_recorded_h100),
        cmocka_unit_test(test_decode_line_second_implementation),
        cmocka_unit_test(test_cost_uses_profile_on_h100),
        cmocka_unit_test(test_profile_not_used_on_other_gpu_count),
        cmocka_unit_test(test_page_copies_second_implementation),
        cmocka_unit_test(test_calibrate_layers_errors),
        cmocka_unit_test(test_calibrate_regenerates_committed),
        cmocka_unit_test(test_layer_probe_skips_without_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
