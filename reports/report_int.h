/* reports/report_int.h — private to reports/: the state of one report being
 * written, the figure signature, and the helpers figures use.
 *
 * Call order (no circles): report.c (the driver: runs, page, rendering, the
 * figure table) → tables.c (the page's tables) and the figures (fig_cdf.c,
 * fig_bars.c, fig_qps.c, fig_compare.c, fig_ladder.c, fig_dynamics.c, figures.c) → groups.c (grouping, colours, panels)
 * → output.c (files, gnuplot scripts, page sections, escaping). */
#ifndef REPORT_INT_H
#define REPORT_INT_H

#include <limits.h>
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
    int group; /* index of its group in rep.groups */
} rep_run;

/* Runs whose configs differ only in `seed` form a group: one line, bar or
 * table row, with a band or error bar over its seeds (reports/groups.c). */
typedef struct rep_group {
    int *runs; /* indices into rep.runs, in run order */
    int n;
    char *label;        /* "router=kvcentric admission=none" over the grouping keys; "all runs" when none */
    char *short_label;  /* the label without the facet key (the panel names it) */
    int color;          /* slot of its color-by value (0 when no color key) */
    int facet;          /* slot of its facet-by value (0 when no facet key) */
    int dash;           /* slot of its values of the other grouping keys: its line's dash type */
    int same_as;        /* an earlier group with identical results, or -1 */
    char *same_as_diff; /* that group's label over the keys where the two differ */
} rep_group;

/* The mean of n values with a 95% confidence interval (Student t, n >= 3)
 * or the min-max range (n < 3); ci says which. */
typedef struct rep_stat {
    double mean, lo, hi;
    int n;
    bool ci;
} rep_stat;

typedef struct rep {
    sqlite3 *db;
    const char *db_path, *dir; /* dir: where the report goes (pages and messages name it) */
    char stage[PATH_MAX];      /* where its files are written: a private folder in dir (mkdtemp) moved into dir last */
    int stage_fd;              /* that folder, open: every file is made relative to it */
    bool keep_stage;           /* gnuplot failed: the staged scripts stay for a look */
    rep_run *runs;
    int nruns;
    json_t *diff_keys;  /* array of dotted config keys whose values differ */
    json_t *group_keys; /* diff_keys but seed: the keys that name a group */
    rep_group *groups;
    int ngroups;
    const char *color_by, *facet_by; /* grouping keys drawn as colour and as panels (NULL: none) */
    const char *baseline;            /* --baseline: the compare figure's baseline value (NULL: the first run's) */
    int ncolors, nfacets;            /* distinct values of each (1 when none) */
    FILE *html;                      /* the page being written (index.html, staged) */
    bool unwritable;                 /* a file could not be written (disk full, size limit): exit 2 */
    bool bad_option;                 /* an option names what the runs do not have (--baseline): exit 2 */
    char **scripts;                  /* .gp files written, in page order */
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
/* The difference of each metric from a baseline value with its 95%
 * interval against load, and its table (reports/fig_compare.c). */
int rep_fig_compare(rep *r, sim_err *err);
/* The hit-rate ladders of `kvsim hitrate --ladder --db`, one bar chart
 * each (reports/fig_ladder.c). */
int rep_fig_ladder(rep *r, sim_err *err);
/* Prefill and decode pool load over time, one panel per configuration,
 * with its oscillation metrics (reports/fig_dynamics.c). */
int rep_fig_dynamics(rep *r, sim_err *err);
/* Figures of one run (load, roles, replicas), for every selected run. */
int rep_fig_run_timelines(rep *r, sim_err *err);

/* ---- grouping (reports/groups.c) --------------------------------------------- */

/* Form the groups, choose the colour and facet keys (the options when given:
 * they must be grouping keys; else the grouping key with the most distinct
 * values, then the next), assign palette slots and find groups with
 * identical results. Needs r->diff_keys and the runs' configs. */
int rep_groups_build(rep *r, const char *color_by, const char *facet_by, sim_err *err);
void rep_groups_free(rep *r);
/* The colour of slot i as "#rrggbb" (Okabe-Ito, for colour-blind readers;
 * slots past 8 reuse the colours and rep_marker says how to tell them apart). */
const char *rep_color(int slot);
/* A gnuplot style fragment distinguishing colour slots past the palette:
 * "" for slots 0-7, else a point type for linespoints. */
int rep_marker(int slot);
/* The mean and interval of x[0..n) (n >= 1). */
rep_stat rep_stat_of(const double *x, int n);
/* A summary value per run of group g, then its stat (NaN values skipped). */
rep_stat rep_group_stat(const rep *r, const rep_group *g, const char *summary_path);

/* Every run used a PIC cache model (its summary names "pic"): no prefix
 * block hits, the chunk hit rate is the cache's measure. */
bool rep_every_run_pic(const rep *r);
/* Some run used one: its tables show end-to-end latency and peak HBM too. */
bool rep_any_run_pic(const rep *r);

/* ---- the page's tables (reports/tables.c) ------------------------------------- */

/* Every run: the differing config keys, the summary, the best highlighted. */
void rep_comparison_table(rep *r);
/* Groups of several seeds: mean ± interval per summary column (nothing
 * when every group has one run). */
void rep_groups_table(rep *r);
/* Write DIR/configs/runID.json (each run's resolved config) and the page's
 * section with the command that replays each run. */
int rep_reproduce(rep *r, sim_err *err);

/* ---- helpers shared by the figures (reports/output.c) ---------------------- */

/* A gnuplot script body built in memory (open_memstream). */
typedef struct rep_body {
    char *text;
    size_t len;
    FILE *f;
} rep_body;

#define REP_WIDTH       960 /* pixels of a figure (wider with panels side by side) */
#define REP_HEIGHT      540 /* pixels of a one-panel figure */
#define REP_HEIGHT_TALL 760 /* two panels */

void rep_body_open(rep_body *b);
/* Close and free without writing. */
void rep_body_discard(rep_body *b);
/* Close, write NAME.gp around the body (rep_write_script), free. */
int rep_body_finish(rep *r, rep_body *b, const char *name, const char *title, int width, int height, sim_err *err);
/* A prepared statement on the report's database (errors name it). */
sqlite3_stmt *rep_prepare(rep *r, const char *sql, sim_err *err);
/* The count a query returns for ?1 = run_id (and ?2 = text, when given). */
int64_t rep_count(rep *r, const char *sql, int64_t run_id, const char *text);
bool rep_table_exists(rep *r, const char *table);
/* One plot clause: 'FILE' index I using U with STYLE title 'T' (notitle
 * when NULL; both quoted by rep_gp_quote), starting the plot command when
 * first. */
void rep_plot_clause(FILE *f, bool first, const char *file, int index, const char *using, const char *style,
                     const char *title);
/* The same, first when the body is still empty. */
void rep_body_clause(rep_body *b, const char *file, int index, const char *using, const char *style, const char *title);
/* The line style of a group: its colour, its dash type (by its values of
 * the grouping keys other than colour and facet, so that two groups of one
 * colour in one panel are told apart by dash too), and a point marker past
 * the palette's eight colours. */
void rep_line_style(const rep_group *g, char *buf, size_t size);
/* The band of a seed group (a closed polygon block), in its colour. */
void rep_band_clause(rep_body *b, const char *file, int index, const rep_group *g);
/* Append the panels to the body: one plot titled figure_title, or a
 * multiplot with one panel per facet value, titled by the value. */
void rep_panels(rep_body *b, const rep *r, rep_body *panel, int npanels);
/* `set Xtics (...)` for a log axis over [lo, hi]: 1, 2, 5 × each power of
 * ten inside it when it spans two decades or less, else the powers of ten
 * (every other one past six decades), labelled as people read them ("20",
 * "5k", "1M", never "1e+06"), so that a narrow log axis still has labels.
 * axis: "x" or "y". */
void rep_log_tics(FILE *f, const char *axis, double lo, double hi);
/* A figure title saying how seeds were aggregated, when they were, and
 * what the figure draws for their spread (`spread`: "band" or "error
 * bars"; NULL when it draws none, so that no title promises what is not
 * drawn). */
void rep_figure_title(const rep *r, const char *what, const char *spread, char *buf, size_t size);
/* The number of groups drawn in facet panel p (every group without panels). */
int rep_panel_groups(const rep *r, int p, int npanels);
/* "key=value" of the facet key for facet slot p. */
void rep_facet_title(const rep *r, int p, char *buf, size_t size);

/* Create NAME (e.g. "ttft.dat", "configs/run1.json") for writing in the
 * report's staging folder, as a new file; errors name DIR/NAME and the
 * cause, and mark the report's output unwritable. */
FILE *rep_open(rep *r, const char *name, sim_err *err);
/* Close a file rep_open gave, checking every write: when keep, 0, or -1
 * with err naming DIR/NAME and the errno text (a full disk, a file-size
 * limit) and the output marked unwritable; else the file is removed (a
 * figure whose data turned out empty; 0). */
int rep_close(rep *r, FILE *f, const char *name, bool keep, sim_err *err);
/* Write NAME.gp: a header, the loop over the svg and png terminals (height
 * pixels; the PDF the same size at 96 dpi) around `body` (gnuplot commands; the string variable
 * figure_title holds the title), and queue it for rendering. */
int rep_write_script(rep *r, const char *name, const char *title, const char *body, int width, int height,
                     sim_err *err);
/* The figure's section: heading, image, caption text (HTML-escaped), the
 * provenance of `run` (or of every run when NULL) and links to its files. */
void rep_section(rep *r, const char *name, const char *title, const char *caption, const rep_run *run);
/* Every string a report writes into gnuplot program text (titles, labels,
 * legends, file names) goes through rep_gp_quote: a single-quoted gnuplot
 * literal, ' doubled, control characters as spaces, which gnuplot never
 * evaluates (no backquotes, macros or escapes inside). Caller frees. */
char *rep_gp_quote(const char *s);
/* rep_gp_quote written to f. */
void rep_gp_string(FILE *f, const char *s);
/* Text in a data file (a label column, a # comment) or a .gp comment, kept
 * on its line and column: control characters as spaces, " as '. */
void rep_dat_text(FILE *f, const char *s);
/* The value at a dotted path of a JSON object, or NULL. */
const json_t *rep_json_at(const json_t *root, const char *path);
/* A config value at a dotted path as text: a string as is, anything else
 * as compact JSON, `absent` when missing; caller frees. */
char *rep_config_text(const json_t *config, const char *path, const char *absent);
/* A config value at a dotted path as a number (NAN when absent). */
double rep_config_num(const rep_run *run, const char *path);
/* A summary number of run at a dotted path; NaN when absent or null (a
 * statistic over no completed request is undefined, never 0). */
double rep_summary_num(const rep_run *run, const char *path);

#endif
