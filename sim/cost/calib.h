/* sim/cost/calib.h — transfer-cost curves measured by the data-path probe and
 * fitted by `kvsim calibrate` (docs/cost-model.md, docs/datapath.md): the simulator's DRAM→HBM,
 * HBM→DRAM and SSD transfer times come from here when a hardware preset
 * names a calibration file ("calibration": "configs/calibration/NAME.json").
 *
 * A curve is t(bytes) = alpha_s + bytes / beta_Bps: alpha is the fixed cost
 * of one transfer (launch, synchronisation, syscall), beta the streaming
 * bandwidth. The calibration file holds one curve per (direction, tier,
 * method) the probe measured, and a "use" object naming the method whose
 * curve the simulator takes for each of its four transfers. */
#ifndef SIM_CALIB_H
#define SIM_CALIB_H

#include <stddef.h>

#include "sim/util.h"

typedef struct sim_curve {
    double alpha_s;
    double beta_Bps;
} sim_curve; /* t(bytes) = alpha_s + bytes / beta_Bps */

/* vLLM-style page-by-page copies (the probe's per_page method): one copy
 * per 16-token page, layer and K/V half, so the cost of moving `bytes` in
 * `copies` copies is copies × per_copy_s + bytes / beta_Bps. */
typedef struct sim_page_cost {
    double per_copy_s;
    double beta_Bps;
} sim_page_cost;

typedef struct sim_calib {
    char label[128];      /* e.g. "cpu: <cpu model>", "cuda: NVIDIA H200" */
    char backend[16];     /* "cpu" | "cuda" */
    sim_curve load_dram;  /* DRAM → HBM (H2D scatter; CPU: host→host scatter) */
    sim_curve store_dram; /* HBM → DRAM (D2H gather) */
    sim_curve load_ssd;   /* SSD → DRAM */
    sim_curve store_ssd;  /* DRAM → SSD */
    int has_pages;        /* the file has "page_copies" (a GPU probe's per_page method) */
    sim_page_cost load_pages, store_pages;
} sim_calib;

struct json_t; /* jansson's */

/* Read a calibration file; errors name the file and the field at fault. */
int sim_calib_load(const char *path, sim_calib *out, sim_err *err);
/* The same in two steps, for a reader that wants more of the file (the
 * compute section, sim/cost/profile.h): the parsed document (NULL, err set,
 * when it cannot be read), then its curves. */
struct json_t *sim_calib_read(const char *path, sim_err *err);
int sim_calib_from_json(const char *path, const struct json_t *root, sim_calib *out, sim_err *err);
/* Seconds to move `bytes` along curve c. */
double sim_curve_time(const sim_curve *c, double bytes);

/* A fitted curve and how well it fits its samples. */
typedef struct sim_curve_fit {
    sim_curve curve;
    double r2;               /* coefficient of determination of t */
    double max_rel_residual; /* max over samples of |fit − t| / t */
    size_t points;
    int alpha_clamped; /* the free fit gave alpha < 0; refitted through the origin */
} sim_curve_fit;

/* Weighted least squares of t = alpha + bytes/beta over n samples (GSL).
 * Needs two distinct sizes and a time that grows with size. */
int sim_curve_fit_samples(const double *bytes, const double *secs, size_t n, sim_curve_fit *out, sim_err *err);

/* The four curves of sim_calib by their "use" key, for loaders and tools. */
typedef struct sim_calib_slot {
    const char *key;       /* "load_dram", ... */
    const char *direction; /* "load" | "store" */
    const char *tier;      /* "dram" | "ssd" */
    size_t offset;         /* of the sim_curve in sim_calib */
} sim_calib_slot;
const sim_calib_slot *sim_calib_slots(size_t *n);

#endif
