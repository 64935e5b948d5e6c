/* sim/cost/profile_fit.h — a calibration file's "compute" section
 * (sim/cost/profile.h) from the GPU layer probe's JSON
 * (datapath/probe/layer_probe.py): the engine of `kvsim calibrate
 * --layers-json` (sim/cli/cmd_calibrate.c parses and prints).
 *
 * Whole-model times are composed from one measured layer: a prefill pass is
 * layers × the layer's pass + the LM head on one token; a decode step is
 * layers × the layer's step + the head on the batch's tokens. The prefill
 * grid is kept as measured; each decode batch size gets its least-squares
 * line over its contexts (GSL gsl_fit_wlinear, weights 1/t², so relative
 * error is minimised); the prefill FLOP rate is fitted through the origin
 * (gsl_fit_mul) over the points of ≥ 1024 new tokens.
 *
 * Every measured point is then put beside the analytic model's time for
 * the same pass on `hardware` (a preset; its own calibration, if any, is
 * not used) and beside the profile's own interpolation: the rows the
 * command prints and the file keeps ("points"). A whole-model run in the
 * probe's JSON ("e2e": one request's prefill and one decode step) is
 * compared the same way, which checks the composition from one layer. */
#ifndef SIM_COST_PROFILE_FIT_H
#define SIM_COST_PROFILE_FIT_H

#include <stddef.h>

#include "sim/util.h"

struct json_t; /* jansson's */

typedef struct sim_profile_row {
    char model[64];
    const char *kind; /* "prefill", "decode", "e2e prefill", "e2e decode" */
    long x, y;        /* prefill: new, cached tokens; decode: batch, context per request */
    double measured_s, analytic_s, calibrated_s;
} sim_profile_row;

typedef struct sim_profile_fitting {
    const char *path;
    struct json_t *doc;     /* the layer probe's document */
    struct json_t *compute; /* the section built, for sim_calib_write */
    sim_profile_row *rows;
    size_t nrows, cap;
} sim_profile_fitting;

/* Read the layer probe's JSON at path and build the compute section and
 * the comparison rows against the analytic model on hardware preset
 * `hardware`. Errors name the file and the model or point at fault. */
int sim_profile_fit(sim_profile_fitting *f, const char *path, const char *hardware, sim_err *err);
void sim_profile_fitting_free(sim_profile_fitting *f);

#endif
