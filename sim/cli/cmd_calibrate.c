/* sim/cli/cmd_calibrate.c — `kvsim calibrate`: turn the data-path probe's raw
 * measurements into the calibration file the cost model reads (sim/cost/calib.h).
 * This file parses the options and prints the fit table; grouping, fitting
 * t(bytes) = alpha + bytes/beta, choosing the methods and writing the file
 * are sim/cost/calib_fit.c, running the probe sim/cost/calib_probe.c; the
 * compute section from the GPU layer probe (--layers-json) and its
 * comparison with the analytic model are sim/cost/profile_fit.c. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cost/calib.h"
#include "sim/cost/calib_fit.h"
#include "sim/cost/profile_fit.h"
#include "sim/cli/cli.h"
#include "sim/outfile.h"

#define CAL_CMD "calibrate"

static const char usage_text[] =
    "usage: kvsim calibrate (--probe-json FILE | --run-probe) --out FILE [options]\n"
    "Fit t(bytes) = alpha + bytes/beta to data-path probe samples and write a calibration file.\n\n"
    "  --probe-json FILE   raw JSON written by build/kvsim-probe\n"
    "  --run-probe         run the probe now (beside this binary, or $KVSIM_PROBE); its raw\n"
    "                      JSON is kept next to --out as NAME.probe.json\n"
    "  --probe-args ARGS   extra probe arguments with --run-probe, space separated\n"
    "                      (e.g. \"--shapes llama3.1-8b --reps 5\")\n"
    "  --out FILE          calibration file to write (e.g. configs/calibration/NAME.json)\n"
    "  --label TEXT        label (default: the probe's backend label, e.g. \"cpu: <model>\")\n"
    "  --shape NAME        fit one model shape only (default: pool every shape)\n"
    "  --layers-json FILE  also the compute section: measured prefill and decode times\n"
    "                      (datapath/probe/layer_probe.py on a GPU) as the cost model's\n"
    "                      profile tables; prints every point beside the analytic model\n"
    "  --hardware NAME     with --layers-json: the one-GPU preset whose analytic model the\n"
    "                      points are compared with (h100x1, h200x1)\n"
    "  --help              this text\n";

/* ---- printing ----------------------------------------------------------------- */

static void print_fits(const sim_calib_fitting *s)
{
    printf("%-9s %-4s %-16s %-7s %10s %10s %8s %8s %6s\n", "direction", "tier", "method", "backend", "alpha_us",
           "beta_GB/s", "r2", "max_rel", "points");
    for (int i = 0; i < s->ngroups; i++) {
        const sim_calib_group *g = &s->groups[i];
        if (!g->fitted) {
            printf("%-9s %-4s %-16s %-7s  not fitted: %s\n", g->direction, g->tier, g->method, g->backend, g->why.msg);
            continue;
        }
        printf("%-9s %-4s %-16s %-7s %10.2f %10.3f %8.4f %7.1f%% %6zu%s\n", g->direction, g->tier, g->method,
               g->backend, g->fit.curve.alpha_s * 1e6, g->fit.curve.beta_Bps / 1e9, g->fit.r2,
               100 * g->fit.max_rel_residual, g->fit.points, g->fit.alpha_clamped ? "  (alpha<0 refit: alpha=0)" : "");
    }
}

static double rel(double model, double measured) { return 100 * (model - measured) / measured; }

/* Every measured point beside the analytic model and the profile tables,
 * then per model and kind the median and largest |error| of each. */
static void print_points(const sim_profile_fitting *f)
{
    printf("compute: %zu points from %s (times in ms, errors against the measurement)\n", f->nrows, f->path);
    printf("%-12s %-12s %7s %7s %11s %11s %8s %11s %8s\n", "model", "kind", "new|b", "cached|c", "measured", "analytic",
           "err", "calibrated", "err");
    for (size_t i = 0; i < f->nrows; i++) {
        const sim_profile_row *r = &f->rows[i];
        printf("%-12s %-12s %7ld %7ld %11.4f %11.4f %7.1f%% %11.4f %7.1f%%\n", r->model, r->kind, r->x, r->y,
               1e3 * r->measured_s, 1e3 * r->analytic_s, rel(r->analytic_s, r->measured_s), 1e3 * r->calibrated_s,
               rel(r->calibrated_s, r->measured_s));
    }
}

/* Fit, print the table and the chosen methods, write the calibration file. */
static int calibrate(sim_calib_fitting *s, const char *probe_json, const char *out, const char *label, sim_err *err)
{
    printf("kvsim calibrate: %d curves from %s\n", s->ngroups, probe_json);
    sim_calib_fit_groups(s);
    print_fits(s);
    if (sim_calib_choose(s, err)) return -1;
    char *text = sim_calib_use_text(s);
    printf("use: %s\n", text);
    free(text);
    return sim_calib_write(s, out, label, err);
}

/* ---- running the probe ---------------------------------------------------------- */

static int run_probe(const char *json_out, const char *extra, sim_err *err)
{
    char probe[PATH_MAX];
    if (sim_calib_find_probe(probe, sizeof probe, err)) return -1;
    fprintf(stderr, "kvsim calibrate: running %s --out %s%s%s\n", probe, json_out, extra ? " " : "",
            extra ? extra : "");
    return sim_calib_run_probe(probe, json_out, extra, err);
}

/* "kvsim calibrate: msg" on stderr, exit status 2. */
static int usage_error(const char *msg) { return sim_usage_error(CAL_CMD, msg); }

/* NAME.json → NAME.probe.json beside it. */
static void probe_path_for(const char *out, char *buf, size_t n)
{
    size_t len = strlen(out);
    if (len > 5 && !strcmp(out + len - 5, ".json")) snprintf(buf, n, "%.*s.probe.json", (int)(len - 5), out);
    else snprintf(buf, n, "%s.probe.json", out);
}

/* Fit the probe's rows (and the layer probe's, with --layers-json), write
 * the calibration and say where. */
static int fit_and_write(const char *probe_json, const char *shape, const char *layers, const char *hardware,
                         const char *out, const char *label)
{
    sim_err err;
    sim_calib_fitting s = {0};
    sim_profile_fitting pf = {0};
    int rc = layers && sim_profile_fit(&pf, layers, hardware, &err);
    rc = rc || sim_calib_read_probe(&s, probe_json, shape, &err);
    if (!rc) {
        s.compute = pf.compute;
        rc = calibrate(&s, probe_json, out, label, &err);
    }
    if (!rc && layers) print_points(&pf);
    sim_calib_fitting_free(&s);
    sim_profile_fitting_free(&pf);
    if (rc) return usage_error(err.msg);
    printf("wrote %s\n", out);
    return SIM_EXIT_OK;
}

int cmd_calibrate(int argc, char **argv)
{
    enum { O_PROBE_JSON = 1, O_RUN_PROBE, O_PROBE_ARGS, O_OUT, O_LABEL, O_SHAPE, O_LAYERS, O_HARDWARE };
    static const struct option opts[] = {
        {"probe-json", required_argument, 0, O_PROBE_JSON},
        {"run-probe", no_argument, 0, O_RUN_PROBE},
        {"probe-args", required_argument, 0, O_PROBE_ARGS},
        {"out", required_argument, 0, O_OUT},
        {"label", required_argument, 0, O_LABEL},
        {"shape", required_argument, 0, O_SHAPE},
        {"layers-json", required_argument, 0, O_LAYERS},
        {"hardware", required_argument, 0, O_HARDWARE},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *probe_json = NULL, *probe_args = NULL, *out = NULL, *label = NULL, *shape = NULL, *layers = NULL,
               *hardware = NULL;
    int run = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'h': fputs(usage_text, stdout); return SIM_EXIT_OK;
        case O_PROBE_JSON: probe_json = optarg; break;
        case O_RUN_PROBE: run = 1; break;
        case O_PROBE_ARGS: probe_args = optarg; break;
        case O_OUT: out = optarg; break;
        case O_LABEL: label = optarg; break;
        case O_SHAPE: shape = optarg; break;
        case O_LAYERS: layers = optarg; break;
        case O_HARDWARE: hardware = optarg; break;
        default: return usage_error("bad option (see kvsim calibrate --help)");
        }
    }
    if (optind < argc) return sim_cli_unexpected_error(CAL_CMD, argv[optind], NULL);
    if (!out) return usage_error("--out FILE is required");
    if (!!probe_json == run) return usage_error("give exactly one of --probe-json FILE and --run-probe");
    if (!!layers != !!hardware) return usage_error("--layers-json and --hardware go together");
    if (label && strlen(label) >= sizeof((sim_calib *)0)->label)
        return usage_error("--label: longer than 127 characters");
    char raw[PATH_MAX];
    sim_err err;
    if (sim_outfile_check_dir(out, &err)) return usage_error(err.msg); /* before a long probe */
    if (run) {
        probe_path_for(out, raw, sizeof raw);
        int st = run_probe(raw, probe_args, &err);
        if (st) {
            fprintf(stderr, "kvsim %s: %s\n", CAL_CMD, err.msg);
            return st == SIM_EXIT_USAGE ? SIM_EXIT_USAGE : SIM_EXIT_INTERNAL;
        }
        probe_json = raw;
    }
    return fit_and_write(probe_json, shape, layers, hardware, out, label);
}
