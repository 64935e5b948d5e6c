/* reports/report.h — `kvsim report` as a library call: turn a results
 * database into a report directory: index.html (one self-contained page, no
 * network) with a table comparing every selected run and the figures, each
 * as SVG and PNG rendered by gnuplot from the .dat and .gp files written
 * beside it. The .gp scripts stay beside the images so that a user can
 * restyle a plot by editing its script and running `gnuplot NAME.gp`.
 *
 * Files: report.c (driver), figures.c (figures), output.c (helpers);
 * their private interface is reports/report_int.h. */
#ifndef REPORT_H
#define REPORT_H

#include <stdint.h>

#include "sim/util.h"

typedef struct rep_options {
    const char *db;                  /* results database (read) */
    const char *dir;                 /* output directory (created when missing) */
    const char *runs;                /* "ID,..." or NULL = every completed run */
    int64_t last;                    /* > 0: the N most recent runs instead */
    const char *where;               /* SQL expression over the runs table, or NULL */
    const char *title;               /* page title, NULL = "kvsim report" */
    const char *color_by, *facet_by; /* grouping keys for colour and panels; NULL = chosen (reports/groups.c) */
    const char *baseline;            /* the compare figure's baseline value, as kvsim compare --baseline; NULL = the
                                        first run's (kvsim compare's default too) */
} rep_options;

typedef enum rep_status {
    REP_OK = 0,
    REP_BAD_INPUT,  /* unreadable database, unknown runs, output directory not creatable */
    REP_FAILED,     /* rendering failed (e.g. gnuplot missing) */
    REP_UNWRITABLE, /* an output file could not be written (disk full, file-size limit): err has the cause */
} rep_status;

/* Write the report; on success *nruns and *nfigures say what it holds. */
rep_status rep_generate(const rep_options *o, int *nruns, int *nfigures, sim_err *err);

/* The figure of `kvsim plan tiers` (reports/curve.c): hit rate and TTFT p90
 * against a tier's size, log x, the knee marked; png plus its .dat and .gp. */
typedef struct rep_curve {
    const char *title, *tier;     /* "DRAM" or "disk" */
    const double *x, *hit, *ttft; /* n sizes (bytes; 0 is left out of the log axis) and their values */
    int n;
    double knee; /* the knee's size (bytes), or 0 */
} rep_curve;
int rep_curve_png(const char *png, const rep_curve *c, sim_err *err);

#endif
