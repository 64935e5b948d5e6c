/* reports/output.c — what every figure of `kvsim report` writes with: the
 * report's files (opened under its directory), the gnuplot script around a
 * figure's body (SVG, PNG and PDF terminals in one script), the figure's
 * section on the page with the provenance of its runs, and escaping for
 * HTML and gnuplot strings. At the bottom of reports/: calls nothing there. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reports/report_int.h"

FILE *rep_open(rep *r, const char *name, sim_err *err)
{
    FILE *f = sim_file_create(r->stage_fd, name, NULL);
    if (f) return f;
    r->unwritable = true;
    sim_errf(err, "cannot write %s/%s: %s", r->dir, name, strerror(errno));
    return NULL;
}

int rep_close(rep *r, FILE *f, const char *name, bool keep, sim_err *err)
{
    if (!keep) {
        fclose(f);
        unlinkat(r->stage_fd, name, 0);
        return 0;
    }
    int e = fflush(f) ? errno : ferror(f) ? EIO : 0;
    if (fclose(f) && !e) e = errno;
    if (!e) return 0;
    r->unwritable = true;
    return sim_errf(err, "cannot write %s/%s: %s", r->dir, name, strerror(e));
}

/* Text from a database (config values, trace paths, policy names) reaches
 * gnuplot only as a single-quoted literal: inside one gnuplot expands no
 * backquotes, no macros and no backslash escapes, and a ' is written ''.
 * A newline would end the command, so control characters become spaces
 * (these are display labels; the page keeps the exact text). */
char *rep_gp_quote(const char *s)
{
    size_t n = 3;
    for (const char *c = s; *c; c++) n += *c == '\'' ? 2 : 1;
    char *out = sim_xmalloc(n), *o = out;
    *o++ = '\'';
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\'') *o++ = '\'';
        *o++ = c < 0x20 || c == 0x7f ? ' ' : (char)c;
    }
    strcpy(o, "'");
    return out;
}

void rep_gp_string(FILE *f, const char *s)
{
    char *q = rep_gp_quote(s);
    fputs(q, f);
    free(q);
}

/* A data file is read as data, never run, but its lines and columns must
 * survive: a newline would start a row, a tab a column, and a " (gnuplot's
 * quoted field) would swallow the tabs up to the next one. */
void rep_dat_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        fputc(c < 0x20 || c == 0x7f ? ' ' : c == '"' ? '\'' : c, f);
    }
}

const json_t *rep_json_at(const json_t *root, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *save, *tok = strtok_r(buf, ".", &save); tok && root; tok = strtok_r(NULL, ".", &save))
        root = json_object_get(root, tok);
    return root;
}

char *rep_config_text(const json_t *config, const char *path, const char *absent)
{
    const json_t *v = rep_json_at(config, path);
    if (!v) return sim_xstrdup(absent);
    if (json_is_string(v)) return sim_xstrdup(json_string_value(v));
    return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
}

double rep_config_num(const rep_run *run, const char *path)
{
    const json_t *v = rep_json_at(run->config, path);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

double rep_summary_num(const rep_run *run, const char *path)
{
    const json_t *v = rep_json_at(run->summary, path);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char script_head[] = "# %s.gp — ";
static const char script_head2[] = "\n# Written by kvsim report; plots %s.dat. Edit and re-run in this directory:\n"
                                   "#   gnuplot %s.gp        (writes %s.svg, %s.png and %s.pdf)\n"
                                   "reset session\n"
                                   "set datafile separator \"\\t\"\n"
                                   "set encoding utf8\n"
                                   "figure_title = ";

static const char script_loop[] =
    "\ndo for [fmt in \"svg png pdf\"] {\n"
    "if (fmt eq \"svg\") {\n"
    "    set terminal svg size %d,%d dynamic noenhanced font \"Helvetica,12\" background \"#ffffff\"\n"
    "} else { if (fmt eq \"png\") {\n"
    "    set terminal pngcairo size %d,%d noenhanced font \"Sans,10\" background \"#ffffff\"\n"
    "} else {\n"
    "    set terminal pdfcairo size %.2fin,%.2fin noenhanced font \"Sans,10\"\n"
    "} }\n"
    "set output ";

int rep_write_script(rep *r, const char *name, const char *title, const char *body, int width, int height, sim_err *err)
{
    char file[96];
    snprintf(file, sizeof file, "%s.gp", name);
    FILE *f = rep_open(r, file, err);
    if (!f) return -1;
    char out[96];
    snprintf(out, sizeof out, "%s.", name);
    fprintf(f, script_head, name);
    rep_dat_text(f, title); /* in a comment: kept on its line */
    fprintf(f, script_head2, name, name, name, name, name);
    rep_gp_string(f, title);
    fprintf(f, script_loop, width, height, width, height, width / 96.0,
            height / 96.0); /* PDF: the PNG's size at 96 dpi */
    rep_gp_string(f, out);
    fputs(" . fmt\n", f);
    fprintf(f, "%s", body);
    fputs("unset output\n}\n", f);
    if (rep_close(r, f, file, true, err)) return -1;
    r->scripts = sim_xrealloc(r->scripts, (size_t)(r->nscripts + 1) * sizeof *r->scripts);
    r->scripts[r->nscripts++] = sim_xstrdup(file);
    return 0;
}

/* Where the runs came from: trace (once when shared), config hash, seed. */
static void put_provenance(FILE *h, const rep *r, const rep_run *only)
{
    const rep_run *runs = only ? only : r->runs;
    int n = only ? 1 : r->nruns;
    bool one_trace = true;
    for (int i = 1; i < n; i++) one_trace = one_trace && !strcmp(runs[i].fp, runs[0].fp);
    if (one_trace && n) {
        fputs(" Trace ", h);
        sim_fput_xml(h, runs[0].trace_path);
        fputs(" (fingerprint <code>", h);
        sim_fput_xml(h, runs[0].fp);
        fputs("</code>).", h);
    }
    for (int i = 0; i < n; i++) {
        fprintf(h, "%s#%lld: config <code>", i ? "; " : " Runs: ", (long long)runs[i].id);
        sim_fput_xml(h, runs[i].hash);
        fprintf(h, "</code>, seed %lld", (long long)runs[i].seed);
        if (!one_trace) {
            fputs(", trace ", h);
            sim_fput_xml(h, runs[i].trace_path);
            fputs(" (<code>", h);
            sim_fput_xml(h, runs[i].fp);
            fputs("</code>)", h);
        }
    }
    if (n) fputc('.', h);
}

void rep_section(rep *r, const char *name, const char *title, const char *caption, const rep_run *run)
{
    FILE *h = r->html;
    fprintf(h, "<section class=\"figure\" id=\"%s\">\n<h2>", name);
    sim_fput_xml(h, title);
    /* onerror: a figure that fails to load says so on the browser console. */
    fprintf(h,
            "</h2>\n<a href=\"%s.png\"><img src=\"%s.svg\" onerror=\"console.error('kvsim report: cannot load ' + "
            "this.src)\" alt=\"",
            name, name);
    sim_fput_xml(h, title);
    fputs("\"></a>\n<p class=\"caption\">", h);
    sim_fput_xml(h, caption);
    if (strncmp(name, "hitrate", 7) && strncmp(name, "ladder", 6)) put_provenance(h, r, run); /* not from runs */
    fprintf(h,
            "</p>\n<p class=\"files\">Files: <a href=\"%s.svg\">%s.svg</a> · <a href=\"%s.png\">%s.png</a> · "
            "<a href=\"%s.pdf\">%s.pdf</a> · <a href=\"%s.dat\">%s.dat</a> · <a href=\"%s.gp\">%s.gp</a></p>\n"
            "</section>\n",
            name, name, name, name, name, name, name, name, name, name);
}

/* ---- figure bodies and plot clauses -------------------------------------------------- */

void rep_body_open(rep_body *b) { b->f = open_memstream(&b->text, &b->len); }

void rep_body_discard(rep_body *b)
{
    fclose(b->f);
    free(b->text);
}

int rep_body_finish(rep *r, rep_body *b, const char *name, const char *title, int width, int height, sim_err *err)
{
    fclose(b->f);
    int rc = rep_write_script(r, name, title, b->text, width, height, err);
    free(b->text);
    return rc;
}

sqlite3_stmt *rep_prepare(rep *r, const char *sql, sim_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
        sim_errf(err, "%s: query failed: %s", r->db_path, sqlite3_errmsg(r->db));
    return st;
}

int64_t rep_count(rep *r, const char *sql, int64_t run_id, const char *text)
{
    sqlite3_stmt *st = rep_prepare(r, sql, NULL);
    int64_t n = 0;
    if (!st) return 0;
    sqlite3_bind_int64(st, 1, run_id);
    if (text) sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

bool rep_table_exists(rep *r, const char *table)
{
    return rep_count(r, "SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name=?2", 0, table) > 0;
}

void rep_plot_clause(FILE *f, bool first, const char *file, int index, const char *using, const char *style,
                     const char *title)
{
    char *quoted = rep_gp_quote(file);
    fprintf(f, "%s%s index %d using %s with %s ", first ? "plot " : ", \\\n     ", quoted, index, using, style);
    free(quoted);
    if (title) {
        fputs("title ", f);
        rep_gp_string(f, title);
    } else {
        fputs("notitle", f);
    }
}

void rep_body_clause(rep_body *b, const char *file, int index, const char *using, const char *style, const char *title)
{
    fflush(b->f);
    rep_plot_clause(b->f, b->len == 0, file, index, using, style, title);
}

/* A tic label: "20", "0.5", "5k", "1M", "2G". */
static void tic_label(double v, char *buf, size_t n)
{
    if (v >= 1e9) snprintf(buf, n, "%gG", v / 1e9);
    else if (v >= 1e6) snprintf(buf, n, "%gM", v / 1e6);
    else if (v >= 1e4) snprintf(buf, n, "%gk", v / 1e3);
    else snprintf(buf, n, "%g", v);
}

void rep_log_tics(FILE *f, const char *axis, double lo, double hi)
{
    if (!(lo > 0) || !(hi > lo) || !isfinite(hi)) return;
    static const double steps[] = {1, 2, 5};
    double decades = log10(hi / lo), v[256];
    int every = decades > 6 ? 2 : 1, first = (int)floor(log10(lo)), last = (int)ceil(log10(hi)), n = 0;
    for (int e = first; e <= last && n < 250; e++)
        for (int k = 0; k < (decades <= 2 ? 3 : 1); k++) {
            double t = steps[k] * pow(10, e);
            if (t >= lo && t <= hi && (k > 0 || (e - first) % every == 0)) v[n++] = t;
        }
    if (n < 2) /* a range inside one 1-2-5 step: its ends */
        n = 2, v[0] = lo, v[1] = hi;
    fprintf(f, "set %stics (", axis);
    for (int i = 0; i < n; i++) {
        char label[32];
        tic_label(v[i], label, sizeof label);
        if (n == 2 && v[0] == lo) snprintf(label, sizeof label, "%.3g", v[i]);
        fprintf(f, "%s\"%s\" %.17g", i ? ", " : "", label, v[i]);
    }
    fputs(")\n", f);
}
