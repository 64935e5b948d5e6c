/* tests/test_calib.c — transfer-cost calibration: the weighted least-squares
 * fit recovers known alpha and beta from synthetic samples, calibration files
 * load (and bad ones are refused naming file and field), and `kvsim
 * calibrate` turns probe JSON into a file the simulator loads — from a
 * hand-made probe document and from a real (tiny) probe run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>

#include "sim/cost/calib.h"
#include "tests/testutil.h"

static void assert_rel(double got, double want, double tol)
{
    if (fabs(got - want) > tol * fabs(want)) fail_msg("got %.9g, want %.9g (±%.2g relative)", got, want, tol);
}

/* Sizes of 16..1024-token chunks of a 40 KiB/token and a 128 KiB/token model. */
static size_t synthetic(double alpha, double beta, double noise, gsl_rng *r, double *x, double *y)
{
    const double per_token[] = {40960, 131072};
    size_t n = 0;
    for (int m = 0; m < 2; m++)
        for (int tokens = 16; tokens <= 1024; tokens *= 2)
            for (int rep = 0; rep < 3; rep++, n++) {
                x[n] = tokens * per_token[m];
                y[n] = (alpha + x[n] / beta) * (1 + (r ? gsl_ran_gaussian(r, noise) : 0));
            }
    return n;
}

static void test_fit_exact_samples(void **state)
{
    double x[64], y[64];
    size_t n = synthetic(20e-6, 12e9, 0, NULL, x, y);
    sim_curve_fit f;
    sim_err err;
    assert_int_equal(sim_curve_fit_samples(x, y, n, &f, &err), 0);
    assert_rel(f.curve.alpha_s, 20e-6, 1e-9);
    assert_rel(f.curve.beta_Bps, 12e9, 1e-9);
    assert_rel(f.r2, 1, 1e-12);
    assert_true(f.max_rel_residual < 1e-9);
    assert_int_equal(f.points, 42); /* 2 models × 7 sizes × 3 reps */
    assert_int_equal(f.alpha_clamped, 0);
}

/* With 0.1% Gaussian timing noise (seeded), alpha = 50 µs and beta = 10 GB/s
 * come back within 1%: the smallest transfer (640 KiB) takes 115.5 µs, so
 * its noise is ~0.12 µs against a 50 µs intercept. */
static void test_fit_recovers_alpha_beta_with_noise(void **state)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 2024);
    double x[64], y[64];
    size_t n = synthetic(50e-6, 10e9, 0.001, r, x, y);
    sim_curve_fit f;
    sim_err err;
    assert_int_equal(sim_curve_fit_samples(x, y, n, &f, &err), 0);
    assert_rel(f.curve.alpha_s, 50e-6, 0.01);
    assert_rel(f.curve.beta_Bps, 10e9, 0.01);
    assert_true(f.r2 > 0.999);
    assert_true(f.max_rel_residual < 0.005);
    gsl_rng_free(r);
}

static void test_fit_clamps_negative_alpha_and_refuses_bad_input(void **state)
{
    /* t = bytes / 1e9 − 5 µs: the free fit's intercept is −5 µs. */
    double x[] = {1e6, 2e6, 4e6, 8e6}, y[4];
    for (int i = 0; i < 4; i++) y[i] = x[i] / 1e9 - 5e-6;
    sim_curve_fit f;
    sim_err err;
    assert_int_equal(sim_curve_fit_samples(x, y, 4, &f, &err), 0);
    assert_int_equal(f.alpha_clamped, 1);
    assert_true(f.curve.alpha_s == 0);
    assert_true(f.curve.beta_Bps > 1e9); /* through the origin the line is a bit steeper */
    double one[] = {1e6, 1e6}, t1[] = {1e-3, 1.1e-3};
    assert_int_equal(sim_curve_fit_samples(one, t1, 2, &f, &err), -1);
    assert_non_null(strstr(err.msg, "two or more sizes"));
    double zero[] = {1e-3, 0};
    assert_int_equal(sim_curve_fit_samples(x, zero, 2, &f, &err), -1);
    assert_non_null(strstr(err.msg, "sample 1"));
    double falling[] = {4e-3, 3e-3, 2e-3, 1e-3};
    assert_int_equal(sim_curve_fit_samples(x, falling, 4, &f, &err), -1);
    assert_non_null(strstr(err.msg, "does not grow with size"));
}

static void test_curve_time(void **state)
{
    /* 10 µs + 1 GB at 1 GB/s = 1.00001 s; 0 bytes = alpha. */
    sim_curve c = {.alpha_s = 10e-6, .beta_Bps = 1e9};
    assert_rel(sim_curve_time(&c, 1e9), 1.00001, 1e-12);
    assert_rel(sim_curve_time(&c, 0), 10e-6, 1e-12);
}

#define CURVE(dir, tier, method, a, b)                                                                                 \
    "{\"direction\": \"" dir "\", \"tier\": \"" tier "\", \"method\": \"" method "\", \"alpha_s\": " a                 \
    ", \"beta_Bps\": " b "}"
#define GOOD_CURVES                                                                                                    \
    "[" CURVE("load", "dram", "cpu", "2e-6", "8e9") ", " CURVE("store", "dram", "cpu", "3e-6", "9e9") ", " CURVE(      \
        "load", "ssd", "file", "1e-4", "2e9") ", " CURVE("store", "ssd", "file", "2e-4", "1e9") "]"
#define GOOD_USE "{\"load_dram\": \"cpu\", \"store_dram\": \"cpu\", \"load_ssd\": \"file\", \"store_ssd\": \"file\"}"

static void test_calib_load_ok(void **state)
{
    char *path = tu_write_temp("{\"kvsim_calibration\": 1, \"label\": \"cpu: test\", \"backend\": \"cpu\", "
                               "\"curves\": " GOOD_CURVES ", \"use\": " GOOD_USE "}");
    sim_calib c;
    sim_err err;
    if (sim_calib_load(path, &c, &err)) fail_msg("%s", err.msg);
    assert_string_equal(c.label, "cpu: test");
    assert_string_equal(c.backend, "cpu");
    assert_true(c.load_dram.alpha_s == 2e-6 && c.load_dram.beta_Bps == 8e9);
    assert_true(c.store_dram.alpha_s == 3e-6 && c.store_dram.beta_Bps == 9e9);
    assert_true(c.load_ssd.alpha_s == 1e-4 && c.load_ssd.beta_Bps == 2e9);
    assert_true(c.store_ssd.alpha_s == 2e-4 && c.store_ssd.beta_Bps == 1e9);
    unlink(path);
    free(path);
}

typedef struct bad_case {
    const char *text;
    const char *expect;
} bad_case;

static void test_calib_load_errors(void **state)
{
    const bad_case cases[] = {
        {"{\"kvsim_calibration\": 1,", ":1:"},
        {"{\"kvsim_calibration\": 2, \"label\": \"x\", \"backend\": \"cpu\", \"curves\": [], \"use\": {}}",
         "kvsim_calibration: expected 1"},
        {"{\"kvsim_calibration\": 1, \"backend\": \"cpu\", \"curves\": [], \"use\": {}}", "label: missing"},
        {"{\"kvsim_calibration\": 1, \"label\": \"x\", \"backend\": \"tpu\", \"curves\": [], \"use\": {}}",
         "backend: \"tpu\" is not"},
        {"{\"kvsim_calibration\": 1, \"label\": \"x\", \"backend\": \"cpu\", \"curves\": {}, \"use\": {}}",
         "curves: missing or not an array"},
        {"{\"kvsim_calibration\": 1, \"label\": \"x\", \"backend\": \"cpu\", \"curves\": " GOOD_CURVES
         ", \"use\": {\"load_dram\": \"cpu\", \"store_dram\": \"cpu\", \"load_ssd\": \"file\"}}",
         "use.store_ssd: missing or not a string"},
        {"{\"kvsim_calibration\": 1, \"label\": \"x\", \"backend\": \"cpu\", \"curves\": " GOOD_CURVES
         ", \"use\": {\"load_dram\": \"warp\", \"store_dram\": \"cpu\", \"load_ssd\": \"file\", \"store_ssd\": "
         "\"file\"}}",
         "use.load_dram: no curve with direction \"load\", tier \"dram\", method \"warp\""},
        {"{\"kvsim_calibration\": 1, \"label\": \"x\", \"backend\": \"cpu\", \"curves\": [" CURVE(
             "load", "dram", "cpu", "1e-6", "-5") "], \"use\": " GOOD_USE "}",
         "curves[0].beta_Bps: must be a positive number"},
        {"{\"kvsim_calibration\": 1, \"label\": \"x\", \"backend\": \"cpu\", \"curves\": [{\"tier\": \"dram\"}], "
         "\"use\": " GOOD_USE "}",
         "curves[0]: needs string fields direction, tier and method"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *path = tu_write_temp(cases[i].text);
        sim_calib c;
        sim_err err;
        assert_int_equal(sim_calib_load(path, &c, &err), -1);
        if (!strstr(err.msg, cases[i].expect) || !strstr(err.msg, path))
            fail_msg("case %zu: '%s' lacks '%s' or the path", i, err.msg, cases[i].expect);
        unlink(path);
        free(path);
    }
    sim_calib c;
    sim_err err;
    assert_int_equal(sim_calib_load("/nonexistent/cal.json", &c, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/cal.json: unable to open"));
}

/* ---- kvsim calibrate on hand-made probe documents --------------------------------- */

/* A probe document whose samples lie exactly on known lines:
 * (backend, method, direction, tier, alpha, beta) at 4 sizes each. */
typedef struct line {
    const char *backend, *method, *dir, *tier;
    double alpha, beta;
} line;

static char *probe_doc(const line *lines, size_t n, const char *peak_method, const char *label_backend)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    len +=
        (size_t)snprintf(buf + len, cap - len,
                         "{\"kvsim_probe\": 1, \"host\": {\"cpu\": \"Test CPU\"}, \"backends\": [{\"name\": \"%s\", "
                         "\"available\": true, \"label\": \"%s: Test Device\"}], \"peaks\": [{\"backend\": \"%s\", "
                         "\"method\": \"%s\", \"direction\": \"load\", \"bytes\": 1, \"median_s\": 1}], \"samples\": [",
                         label_backend, label_backend, label_backend, peak_method);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 4; k++) {
            double bytes = (double)(2 << 20) * (1 << (2 * k));
            len +=
                (size_t)snprintf(buf + len, cap - len,
                                 "%s{\"backend\": \"%s\", \"shape\": \"m\", \"direction\": \"%s\", \"tier\": \"%s\", "
                                 "\"method\": \"%s\", \"tokens\": 16, \"bytes\": %.17g, \"median_s\": %.17g}",
                                 i + k ? ", " : "", lines[i].backend, lines[i].dir, lines[i].tier, lines[i].method,
                                 bytes, lines[i].alpha + bytes / lines[i].beta);
        }
    snprintf(buf + len, cap - len, "]}");
    return buf;
}

static sim_calib calibrate_doc(const char *doc, const char *extra, int want_status, const char *want_text)
{
    char *in = tu_write_temp(doc), *out = tu_write_temp(""), args[1024];
    snprintf(args, sizeof args, "calibrate --probe-json %s --out %s %s", in, out, extra);
    cli_result r = tu_kvsim(args);
    if (r.status != want_status || (!strstr(r.out, want_text) && !strstr(r.err, want_text)))
        fail_msg("status %d (want %d); stdout: %s; stderr: %s (want '%s')", r.status, want_status, r.out, r.err,
                 want_text);
    sim_calib c;
    memset(&c, 0, sizeof c);
    sim_err err;
    if (want_status == 0 && sim_calib_load(out, &c, &err)) fail_msg("%s", err.msg);
    tu_free(&r);
    unlink(in);
    unlink(out);
    free(in);
    free(out);
    return c;
}

static void test_calibrate_cpu_document(void **state)
{
    /* memcpy is faster than cpu but is the reference: "use" must pick cpu. */
    const line lines[] = {
        {"cpu", "memcpy", "load", "dram", 1e-6, 20e9},  {"cpu", "cpu", "load", "dram", 4e-6, 9e9},
        {"cpu", "memcpy", "store", "dram", 1e-6, 20e9}, {"cpu", "cpu", "store", "dram", 6e-6, 7e9},
        {"host", "file", "load", "ssd", 80e-6, 2e9},    {"host", "file", "store", "ssd", 150e-6, 1.5e9},
    };
    char *doc = probe_doc(lines, 6, "memcpy", "cpu");
    sim_calib c = calibrate_doc(doc, "", 0, "use: {\"load_dram\":\"cpu\",\"store_dram\":\"cpu\"");
    assert_string_equal(c.backend, "cpu");
    assert_string_equal(c.label, "cpu: Test Device");
    assert_rel(c.load_dram.alpha_s, 4e-6, 0.01);
    assert_rel(c.load_dram.beta_Bps, 9e9, 0.01);
    assert_rel(c.store_dram.beta_Bps, 7e9, 0.01);
    assert_rel(c.load_ssd.alpha_s, 80e-6, 0.01);
    assert_rel(c.store_ssd.beta_Bps, 1.5e9, 0.01);
    calibrate_doc(doc, "--label 'my box'", 0, "wrote");
    free(doc);
}

static void test_calibrate_cuda_document(void **state)
{
    /* With GPU samples the calibration is cuda's: the per-page baseline is
     * slower, the cpu method (fastest here) is another backend. */
    const line lines[] = {
        {"cuda", "per_page", "load", "dram", 900e-6, 20e9},  {"cuda", "kernel_zerocopy", "load", "dram", 12e-6, 45e9},
        {"cuda", "per_page", "store", "dram", 900e-6, 20e9}, {"cuda", "kernel_dma", "store", "dram", 15e-6, 50e9},
        {"cpu", "cpu", "load", "dram", 1e-6, 90e9},          {"cpu", "cpu", "store", "dram", 1e-6, 90e9},
        {"host", "file", "load", "ssd", 80e-6, 2e9},         {"host", "file", "store", "ssd", 150e-6, 1.5e9},
    };
    char *doc = probe_doc(lines, 8, "cuda_memcpy", "cuda");
    sim_calib c = calibrate_doc(doc, "", 0, "\"load_dram\":\"kernel_zerocopy\",\"store_dram\":\"kernel_dma\"");
    assert_string_equal(c.backend, "cuda");
    assert_string_equal(c.label, "cuda: Test Device");
    assert_rel(c.load_dram.beta_Bps, 45e9, 0.01);
    assert_rel(c.store_dram.alpha_s, 15e-6, 0.01);
    free(doc);
}

static void test_calibrate_errors(void **state)
{
    const line no_ssd[] = {{"cpu", "cpu", "load", "dram", 4e-6, 9e9}, {"cpu", "cpu", "store", "dram", 6e-6, 7e9}};
    char *doc = probe_doc(no_ssd, 2, "memcpy", "cpu");
    calibrate_doc(doc, "", 2,
                  "no fitted cpu curve for load_ssd (direction load, tier ssd); run the probe with its SSD");
    calibrate_doc(doc, "--shape other", 2, "no samples for shape other");
    free(doc);
    calibrate_doc("{\"samples\": []}", "", 2, "kvsim_probe: expected 1");
    calibrate_doc("{\"kvsim_probe\": 1, \"samples\": [{\"backend\": \"cpu\"}]}", "", 2, "samples[0].shape: missing");
    tu_expect_exit("calibrate --probe-json x.json", 2, "kvsim calibrate: --out FILE is required");
    tu_expect_exit("calibrate --probe-json x.json --run-probe --out y.json", 2, "exactly one of");
    tu_expect_exit("calibrate --probe-json /nonexistent/p.json --out /tmp/kvsim-never.json", 2, "/nonexistent/p.json");
    tu_expect_stdout("calibrate --help", "usage: kvsim calibrate");
}

/* The real probe (CPU backend, tiny shape) through --run-probe: the raw
 * JSON lands beside the calibration file and the result loads. */
/* The probe's sizes span 256x (64 to 16,384 tokens of the tiny shape): over
 * 64-1,024 tokens the SSD times, a few hundred microseconds through the page
 * cache, could fall with size on a loaded machine and leave no fitted curve. */
static void test_calibrate_run_probe(void **state)
{
    const char *probe = getenv("KVSIM_PROBE") ? getenv("KVSIM_PROBE") : "build/kvsim-probe";
    if (access(probe, X_OK)) {
        printf("skip: %s not built (make probe)\n", probe);
        skip();
    }
    char dir[] = "/tmp/kvsim-cal-XXXXXX", args[2048], path[256];
    assert_non_null(mkdtemp(dir));
    snprintf(args, sizeof args,
             "calibrate --run-probe --probe-args '--backends cpu --shapes tiny --tokens 64,1024,16384 --reps 5 "
             "--warmup 1 --quiet --ssd-dir %s/ssd' --out %s/cal.json",
             dir, dir);
    tu_expect_exit(args, 0, NULL);
    snprintf(path, sizeof path, "%s/cal.probe.json", dir);
    assert_int_equal(access(path, R_OK), 0);
    snprintf(path, sizeof path, "%s/cal.json", dir);
    sim_calib c;
    sim_err err;
    if (sim_calib_load(path, &c, &err)) fail_msg("%s", err.msg);
    assert_string_equal(c.backend, "cpu");
    assert_memory_equal(c.label, "cpu: ", 5);
    assert_true(c.load_dram.beta_Bps > 0 && c.store_ssd.beta_Bps > 0);
    snprintf(args, sizeof args, "rm -rf %s", dir);
    assert_int_equal(system(args), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_exact_samples),
        cmocka_unit_test(test_fit_recovers_alpha_beta_with_noise),
        cmocka_unit_test(test_fit_clamps_negative_alpha_and_refuses_bad_input),
        cmocka_unit_test(test_curve_time),
        cmocka_unit_test(test_calib_load_ok),
        cmocka_unit_test(test_calib_load_errors),
        cmocka_unit_test(test_calibrate_cpu_document),
        cmocka_unit_test(test_calibrate_cuda_document),
        cmocka_unit_test(test_calibrate_errors),
        cmocka_unit_test(test_calibrate_run_probe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
