/* reports/report_int.h — private to reports/: the state of one report being
 * written, the figure signature, and the helpers figures use.
 *
 * Call order (no circles): report.c (the driver: runs, page, rendering, the
 * figure table) → figures.c (one function per figure) → output.c (files,
 * gnuplot scripts, page sections, escaping). */
#ifndef REPORT_INT_H
#define REPORT_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>
#include <sqlite3.h>

#include "sim/outfile.h"
#include "sim/util.h"

typedef struct rep_run {
    int64_t id;
    json_t *config;  /* resolved config (owned) */
    json_t *summary; /* summary object (owned) */
    char hash[17], fp[17];
    char *trace_path;
    int64_t seed;
    char *label; /* "#ID key=value ..." over the keys that differ */
} rep_run;

typedef struct rep {
    sqlite3 *db;
    const char *db_path, *dir;
    rep_run *runs;
    int nruns;
    json_t *diff_keys; /* array of dotted config keys whose values differ */
    sim_outfile html;  /* the page being written (renamed into place last) */
    char **scripts;    /* .gp files written, in page order */
    int nscripts;
} rep;

/* A figure: 1 = written (its .gp queued, its section on the page), 0 = no
 * data for it in the database, -1 = error. */
typedef int (*rep_figure_fn)(rep *r, sim_err *err);

/* Figures over all selected runs, in page order. */
int rep_fig_ttft(rep *r, sim_err *err);
int rep_fig_tbt(rep *r, sim_err *err);
int rep_fig_bars(rep *r, sim_err *err);
int rep_fig_hitrate(rep *r, sim_err *err);
/* TTFT against offered load per configuration (reports/fig_qps.c). */
int rep_fig_ttft_qps(rep *r, sim_err *err);
/* Figures of one run (load, roles, replicas), for every selected run. */
int rep_fig_run_timelines(rep *r, sim_err *err);

/* ---- helpers shared by the figures (reports/output.c) ---------------------- */

/* fopen DIR/NAME for writing (errors name the path). */
FILE *rep_open(const rep *r, const char *name, sim_err *err);
/* Remove DIR/NAME (a data file of a figure that turned out empty). */
void rep_remove(const rep *r, const char *name);
/* Write NAME.gp: a header, the loop over the svg and png terminals (height
 * pixels high) around `body` (gnuplot commands; the string variable
 * figure_title holds the title), and queue it for rendering. */
int rep_write_script(rep *r, const char *name, const char *title, const char *body, int height, sim_err *err);
/* The figure's section: heading, image, caption text (HTML-escaped), the
 * provenance of `run` (or of every run when NULL) and links to its files. */
void rep_section(rep *r, const char *name, const char *title, const char *caption, const rep_run *run);
/* A gnuplot double-quoted string literal. */
void rep_gp_string(FILE *f, const char *s);
/* The value at a dotted path of a JSON object, or NULL. */
const json_t *rep_json_at(const json_t *root, const char *path);
/* A config value at a dotted path as a number (NAN when absent). */
double rep_config_num(const rep_run *run, const char *path);

#endif
