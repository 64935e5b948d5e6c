/* sim/cost/calib_fit.h — making a calibration file (sim/cost/calib.h) from the
 * data-path probe's raw measurements: the engine of `kvsim calibrate`
 * (sim/cli/cmd_calibrate.c parses and prints).
 *
 * The probe's samples are grouped by (direction, tier, method) — pooled over
 * model shapes unless a shape is picked — and each group is fitted with
 * t(bytes) = alpha + bytes/beta (sim_curve_fit_samples: GSL weighted least
 * squares). The fit quality (R², worst relative residual) is kept with each
 * curve. Then "use" picks, for each of the simulator's four transfers, the
 * fastest real data-path method at a 32 MiB transfer (one 256-token
 * LLaMA3.1-8B chunk, LMCache's default chunk): on the backend the probe ran
 * (cuda when it had a GPU, else cpu), never a plain-copy reference (memcpy,
 * cuda_memcpy), which is a ceiling rather than a path.
 *
 * Use: sim_calib_read_probe, sim_calib_fit_groups, sim_calib_choose,
 * sim_calib_write, and sim_calib_fitting_free (always, also after a failed
 * read). Nothing here prints; calib_fit.c does the above, calib_probe.c
 * finds and runs the probe binary. */
#ifndef SIM_CALIB_FIT_H
#define SIM_CALIB_FIT_H

#include <stddef.h>

#include "sim/cost/calib.h"
#include "sim/util.h"

#define SIM_CALIB_MAX_GROUPS 64

struct json_t; /* jansson's */

/* The samples of one (direction, tier, method) and their fit. */
typedef struct sim_calib_group {
    const char *backend, *direction, *tier, *method; /* borrowed from the probe JSON */
    double *bytes, *secs;
    size_t n, cap;
    struct json_t *shapes; /* names of the model shapes sampled */
    sim_curve_fit fit;
    int fitted;
    sim_err why; /* when not fitted */
} sim_calib_group;

/* A probe document read into groups, fitted, and the methods chosen. */
typedef struct sim_calib_fitting {
    const char *probe_path;
    struct json_t *probe;
    sim_calib_group groups[SIM_CALIB_MAX_GROUPS];
    int ngroups;
    const char *backend;    /* the calibration's: "cuda" if the probe had a GPU */
    struct json_t *use;     /* sim_calib_choose: {"load_dram": METHOD, ...} */
    struct json_t *compute; /* borrowed: a "compute" section to write too, or NULL (sim/cost/profile_fit.h) */
} sim_calib_fitting;

/* Read the probe's raw JSON at path into groups; with only_shape, the
 * samples of that model shape only (and the shape-free SSD ones). Errors
 * name the file and the sample at fault, or say there were no samples. */
int sim_calib_read_probe(sim_calib_fitting *s, const char *path, const char *only_shape, sim_err *err);

/* Fit every group: fitted and fit, or why it could not be fitted. */
void sim_calib_fit_groups(sim_calib_fitting *s);

/* Choose the method for each of the four transfers (use); fails naming the
 * first transfer without a fitted curve. */
int sim_calib_choose(sim_calib_fitting *s, sim_err *err);

/* The chosen methods as compact JSON text (caller frees). */
char *sim_calib_use_text(const sim_calib_fitting *s);

/* Write the calibration file: every fitted curve, use, and what the probe
 * measured on (its host, config and a hash of its document). label NULL:
 * the probe's label for the chosen backend. */
int sim_calib_write(const sim_calib_fitting *s, const char *out, const char *label, sim_err *err);

void sim_calib_fitting_free(sim_calib_fitting *s);

/* Where a calibration came from: {"file": path, "xxh3_compact": the XXH3-64
 * of doc as compact JSON, and doc's values of keys[0..nkeys)}. */
struct json_t *sim_calib_source(const char *path, const struct json_t *doc, const char *const *keys, size_t nkeys);

/* The page-copy cost fitted to the probe's per_page samples on the
 * calibration's backend (sim/cost/calib_page.c), as the file's
 * "page_copies" object; NULL when there are none (a CPU probe). */
struct json_t *sim_calib_page_copies(const sim_calib_fitting *s);

/* The probe binary: $KVSIM_PROBE, else kvsim-probe in this binary's
 * directory or a parent (build/kvsim → build/kvsim-probe; build/san/kvsim →
 * build/kvsim-probe). */
int sim_calib_find_probe(char *buf, size_t n, sim_err *err);

/* Run the probe at probe with `--out json_out` and the space-separated
 * extra arguments (NULL for none). 0 when it exits 0; else -1 with err set,
 * or the probe's nonzero exit status (2: it rejected its arguments). */
int sim_calib_run_probe(const char *probe, const char *json_out, const char *extra, sim_err *err);

#endif
