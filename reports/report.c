/* reports/report.c — the driver of `kvsim report` (reports/report.h): turn
 * a results database into a report directory: index.html (one
 * self-contained page, no network) with a table comparing every selected
 * run and the figures, each as SVG and PNG rendered by gnuplot from the .dat
 * and .gp files written beside it.
 *
 * The comparison shows only the config keys whose values differ between the
 * runs (configs are flattened to dotted paths first), and those keys also
 * label the runs in every legend. Every caption names what was run: trace
 * fingerprint, config hash and seed. Figures are in reports/figures.c.
 * Every file (gnuplot's images too) is written in a private folder inside
 * the directory and moved into it once the report is complete (make_stage,
 * sim_outdir_publish): a link planted in the directory is replaced, never
 * written through. A file that cannot be written (a full disk, a file-size
 * limit; an image gnuplot left cut included) fails the report with exit 2
 * and the errno's text, and nothing is moved into the directory. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "reports/report.h"
#include "reports/report_int.h"
#include "sim/results/results.h"

static const rep_figure_fn figures[] = {rep_fig_ttft,    rep_fig_tbt,      rep_fig_bars,
                                        rep_fig_compare, rep_fig_ttft_qps, rep_fig_hitrate,
                                        rep_fig_ladder,  rep_fig_dynamics, rep_fig_run_timelines};

/* ---- loading runs ---------------------------------------------------------------- */

static int open_db(rep *r, sim_err *err)
{
    if (access(r->db_path, R_OK) != 0)
        return sim_errf(err, "cannot read %s: %s (" SIM_RESULTS_HOW ")", r->db_path, strerror(errno));
    /* Read-write when allowed, so that closing removes the WAL files SQLite
     * creates beside a WAL database; the report only reads. */
    int flags = access(r->db_path, W_OK) == 0 ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY;
    if (sqlite3_open_v2(r->db_path, &r->db, flags, NULL) != SQLITE_OK)
        return sim_errf(err, "cannot open %s: %s", r->db_path, sqlite3_errmsg(r->db));
    return sim_results_check_open(r->db_path, &r->db, err);
}

static int load_run(rep *r, int64_t id, sim_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(
            r->db,
            "SELECT config_json, summary_json, config_hash, trace_fingerprint, trace_path, seed FROM runs"
            " WHERE id=?1 AND summary_json IS NOT NULL",
            -1, &st, NULL) != SQLITE_OK)
        return sim_errf(err, "%s: %s", r->db_path, sqlite3_errmsg(r->db));
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return sim_errf(err, "--runs: %s holds no completed run %lld (kvsim export --db %s lists its runs)", r->db_path,
                        (long long)id, r->db_path);
    }
    rep_run *run = &r->runs[r->nruns];
    *run = (rep_run){.id = id, .seed = sqlite3_column_int64(st, 5)};
    int rc = sim_results_run_json(r->db_path, id, (const char *)sqlite3_column_text(st, 0),
                                  (const char *)sqlite3_column_text(st, 1), &run->config, &run->summary, err);
    snprintf(run->hash, sizeof run->hash, "%s", (const char *)sqlite3_column_text(st, 2));
    snprintf(run->fp, sizeof run->fp, "%s", (const char *)sqlite3_column_text(st, 3));
    const char *trace = (const char *)sqlite3_column_text(st, 4);
    run->trace_path = sim_xstrdup(trace ? trace : "");
    sqlite3_finalize(st);
    r->nruns++;
    return rc;
}

static int select_runs(rep *r, const rep_options *a, sim_err *err)
{
    int64_t *ids = NULL;
    int n = 0;
    int rc = a->runs ? sim_results_parse_ids(a->runs, &ids, &n, err)
                     : sim_results_select_runs(r->db, a->where, a->last, &ids, &n, err);
    if (rc == 0 && a->runs && a->where) { /* --runs, of them those --where holds for */
        int64_t *keep;
        int nkeep;
        rc = sim_results_select_runs(r->db, a->where, 0, &keep, &nkeep, err);
        if (rc == 0) sim_results_keep_ids(ids, &n, keep, nkeep);
        free(keep);
    }
    r->runs = sim_xcalloc((size_t)n + 1, sizeof *r->runs);
    for (int i = 0; i < n && rc == 0; i++) rc = load_run(r, ids[i], err);
    free(ids);
    if (rc == 0 && r->nruns == 0 && (a->runs || a->where))
        return sim_errf(err, "%s: no completed run matches %s (kvsim export --db %s lists the runs)", r->db_path,
                        a->runs ? "--runs" : "--where", r->db_path);
    bool points = (rep_table_exists(r, "hitrate") && rep_count(r, "SELECT COUNT(*) FROM hitrate", 0, NULL) > 0) ||
                  (rep_table_exists(r, "ladder") && rep_count(r, "SELECT COUNT(*) FROM ladder", 0, NULL) > 0);
    if (rc == 0 && r->nruns == 0 && !points)
        return sim_errf(err,
                        "%s holds no completed run, no hitrate point and no ladder: nothing to report (kvsim run --db "
                        "FILE, kvsim sweep --db FILE or kvsim hitrate [--ladder] --db FILE writes one)",
                        r->db_path);
    return rc;
}

/* ---- config differences and labels ---------------------------------------------- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* The dotted keys whose values are not the same in every run, sorted. */
static json_t *differing_keys(const rep *r)
{
    json_t **flat = sim_xcalloc((size_t)r->nruns + 1, sizeof *flat), *all = json_object();
    for (int i = 0; i < r->nruns; i++) {
        flat[i] = json_object();
        sim_json_flatten(r->runs[i].config, "", flat[i]);
        json_object_update(all, flat[i]);
    }
    const char **keys = sim_xcalloc(json_object_size(all) + 1, sizeof *keys);
    size_t nkeys = 0;
    const char *key;
    json_t *val;
    json_object_foreach(all, key, val)
    {
        bool differ = false;
        for (int i = 1; i < r->nruns && !differ; i++) {
            const json_t *a = json_object_get(flat[0], key), *b = json_object_get(flat[i], key);
            differ = !(a && b && json_equal(a, b)) && (a || b);
        }
        if (differ) keys[nkeys++] = key;
    }
    qsort(keys, nkeys, sizeof *keys, cmp_str);
    json_t *out = json_array();
    for (size_t i = 0; i < nkeys; i++) json_array_append_new(out, json_string(keys[i]));
    free(keys);
    json_decref(all);
    for (int i = 0; i < r->nruns; i++) json_decref(flat[i]);
    free(flat);
    return out;
}

/* ---- the page ----------------------------------------------------------------------- */

static const char page_head[] =
    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n<style>\n"
    "body { font-family: sans-serif; margin: 1em; color: #222; }\n"
    "p, h1, h2, ul { max-width: 1100px; }\n"
    "table { border-collapse: collapse; font-size: 0.85em; width: 100%%; }\n"
    "th, td { border: 1px solid #ccc; padding: 0.25em 0.4em; text-align: right; }\n"
    "th { background: #f0f0f0; overflow-wrap: normal; word-break: keep-all; hyphens: manual; }\n"
    "td { white-space: nowrap; }\n"
    "td.text { text-align: left; white-space: normal; overflow-wrap: break-word; }\n"
    "td.label { min-width: 14em; } code { overflow-wrap: anywhere; }\n"
    "td.best { background: #d9f0d9; font-weight: bold; }\n"
    ".scroll { overflow-x: auto; } img { max-width: 100%%; height: auto; border: 1px solid #ddd; }\n"
    ".caption { max-width: 1100px; } .files { font-size: 0.85em; color: #555; }\n"
    "code { font-size: 0.95em; }\n</style>\n</head>\n<body>\n";

static int write_figures(rep *r, sim_err *err)
{
    int made = 0;
    for (size_t i = 0; i < sizeof figures / sizeof figures[0]; i++) {
        int rc = figures[i](r, err);
        if (rc < 0) return -1;
        made += rc;
    }
    return made;
}

/* ---- rendering: gnuplot writes the images in the staging folder; each must
 * end as its format ends before anything moves into DIR, so a full disk or a
 * file-size limit (gnuplot reports no write error) fails the report with the
 * cause instead of publishing an empty or cut image ------------------------ */

static const char *const image_exts[] = {"svg", "png", "pdf"};

/* One gnuplot process, in the staging folder, for scripts first, first + step, ... */
static pid_t start_gnuplot(const rep *r, int first, int step)
{
    char **argv = sim_xcalloc((size_t)r->nscripts + 2, sizeof *argv);
    int n = 0;
    argv[n++] = "gnuplot";
    for (int i = first; i < r->nscripts; i += step) argv[n++] = r->scripts[i];
    pid_t pid = fork();
    if (pid == 0) {
        if (fchdir(r->stage_fd) == 0) execvp("gnuplot", argv);
        _exit(127); /* in the child: chdir or exec failed */
    }
    free(argv);
    return pid;
}

/* Whether image e (open as fd, size bytes) ends as its format ends: an SVG
 * with </svg>, a PNG with its IEND chunk, a PDF with %%EOF (a cut file does not). */
static bool image_whole(int fd, int e, off_t size)
{
    char tail[33] = "";
    ssize_t got = size > 0 ? pread(fd, tail, 32, size > 32 ? size - 32 : 0) : 0;
    size_t n = got > 0 ? (size_t)got : 0;
    while (e != 1 && n > 0 && strchr(" \r\n", tail[n - 1])) n--; /* text formats: trailing newlines */
    static const char *const ends[] = {"</svg>", "IEND\xae\x42\x60\x82", "%%EOF"};
    size_t k = strlen(ends[e]);
    return n >= k && memcmp(tail + n - k, ends[e], k) == 0;
}

/* Why gnuplot left an image of size bytes incomplete, which it does not
 * say: EFBIG at the file-size limit, ENOSPC on a full file system, else 0. */
static int cut_cause(const rep *r, off_t size)
{
    struct rlimit lim;
    struct statvfs fs;
    if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && (rlim_t)size >= lim.rlim_cur)
        return EFBIG;
    if (fstatvfs(r->stage_fd, &fs) == 0 && fs.f_bavail == 0) return ENOSPC;
    return 0;
}

/* Image e of script i in the staging folder: 0 when whole; -1 when missing,
 * -2 when cut (*cause: the errno that explains it, 0 when none does); err
 * names DIR/NAME.EXT. */
static int check_image(const rep *r, int i, int e, int *cause, sim_err *err)
{
    char name[PATH_MAX];
    struct stat st;
    snprintf(name, sizeof name, "%.*s.%s", (int)strlen(r->scripts[i]) - 3, r->scripts[i], image_exts[e]);
    int fd = openat(r->stage_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    bool found = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode), whole = found && image_whole(fd, e, st.st_size);
    if (fd >= 0) close(fd);
    if (!found) return sim_errf(err, "gnuplot did not write %s/%s", r->dir, name);
    if (whole) return 0;
    *cause = cut_cause(r, st.st_size);
    sim_errf(err, "cannot write %s/%s: %s (gnuplot wrote %lld bytes of it)", r->dir, name,
             *cause ? strerror(*cause) : "gnuplot stopped before its end (its message, if any, is above)",
             (long long)st.st_size);
    return -2;
}

/* Every figure's SVG, PNG and PDF: the first missing or cut one, as check_image. */
static int check_images(const rep *r, int *cause, sim_err *err)
{
    for (int i = 0; i < r->nscripts; i++)
        for (int e = 0; e < 3; e++) {
            int rc = check_image(r, i, e, cause, err);
            if (rc) return rc;
        }
    return 0;
}

/* Render the queued scripts with one gnuplot process per CPU, each taking
 * every n-th script (a process renders its scripts one after another), and
 * check every image. A cut image is an output that could not be written
 * (exit 2 with the cause), even when gnuplot then failed for it. */
static int render(rep *r, sim_err *err)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nproc = (int)(ncpu < 1 ? 1 : ncpu > r->nscripts ? r->nscripts : ncpu), started = 0, worst = 0;
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < nproc; i++) started += start_gnuplot(r, i, nproc) > 0;
    for (int i = 0; i < started; i++) {
        int status = 0;
        if (wait(&status) < 0) return sim_errf(err, "waiting for gnuplot: %s", strerror(errno));
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        if (code > worst) worst = code;
    }
    if (started < nproc) return sim_errf(err, "cannot start gnuplot: %s", strerror(errno));
    if (worst == 127) return sim_errf(err, "gnuplot not found (install the Debian package gnuplot-nox)");
    int cause = 0, bad = check_images(r, &cause, err);
    r->unwritable = bad == -2 && (cause || !worst);
    if (r->unwritable) return -1;
    r->keep_stage = worst != 0; /* the scripts and data stay where gnuplot failed on them, for a look */
    if (worst) return sim_errf(err, "gnuplot failed on the scripts in %s (its message is above)", r->stage);
    return bad ? -1 : 0;
}

static int write_page(rep *r, const rep_options *a, int *nfigures, sim_err *err)
{
    FILE *h = r->html = rep_open(r, "index.html", err);
    if (!h) return -1;
    fprintf(h, page_head, "kvsim report");
    fputs("<h1>", h);
    sim_fput_xml(h, a->title ? a->title : "kvsim report");
    fputs("</h1>\n<p>From <code>", h);
    sim_fput_xml(h, r->db_path);
    fprintf(h,
            "</code>: %d run%s; written by kvsim %s. Each figure links its PNG, its data and the gnuplot script "
            "that draws it (<code>gnuplot NAME.gp</code> in this directory redraws it).</p>\n",
            r->nruns, r->nruns == 1 ? "" : "s", KVSIM_VERSION);
    if (r->nruns) {
        rep_comparison_table(r);
        rep_groups_table(r);
        if (rep_reproduce(r, err)) return -1;
    }
    *nfigures = write_figures(r, err);
    fputs("</body>\n</html>\n", h);
    r->html = NULL;
    if (rep_close(r, h, "index.html", true, err) || *nfigures < 0 || render(r, err)) return -1;
    if (sim_outdir_publish(r->stage_fd, r->dir, "index.html", ".kvsim-manifest", err) == 0)
        return 0; /* the page last: its files are there */
    r->unwritable = true;
    return -1;
}

static void rep_free(rep *r)
{
    for (int i = 0; i < r->nruns; i++) {
        json_decref(r->runs[i].config);
        json_decref(r->runs[i].summary);
        free(r->runs[i].trace_path);
    }
    free(r->runs);
    for (int i = 0; i < r->nscripts; i++) free(r->scripts[i]);
    free(r->scripts);
    rep_groups_free(r);
    json_decref(r->diff_keys);
    if (r->html) fclose(r->html);
    if (r->stage_fd >= 0) close(r->stage_fd);
    if (r->stage[0] && !r->keep_stage) sim_remove_tree(r->stage); /* emptied by a publish; else nothing half-written */
    sqlite3_close(r->db);
}

/* ---- the call ----------------------------------------------------------------------- */

/* DIR (created when missing) and in it the private folder every file is
 * written in (DIR/.kvsim-report-XXXXXX, mode 0700): nothing planted in DIR
 * can redirect a file, nor gnuplot's output, and sim_outdir_publish moves
 * the finished files into DIR replacing, never following, what is there. */
static int make_stage(rep *r, sim_err *err)
{
    if (mkdir(r->dir, 0777) != 0 && errno != EEXIST)
        return sim_errf(err, "cannot create %s: %s", r->dir, strerror(errno));
    if (snprintf(r->stage, sizeof r->stage, "%s/.kvsim-report-XXXXXX", r->dir) >= (int)sizeof r->stage ||
        !mkdtemp(r->stage)) {
        int rc = sim_errf(err, "cannot write in %s: %s", r->dir, strerror(errno));
        r->stage[0] = 0;
        return rc;
    }
    r->stage_fd = open(r->stage, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return r->stage_fd < 0 ? sim_errf(err, "cannot write in %s: %s", r->dir, strerror(errno)) : 0;
}

rep_status rep_generate(const rep_options *a, int *nruns, int *nfigures, sim_err *err)
{
    rep r = {.db_path = a->db, .dir = a->dir, .stage_fd = -1, .baseline = a->baseline};
    rep_status rc = REP_BAD_INPUT;
    int written = 0;
    if (open_db(&r, err) || select_runs(&r, a, err) || make_stage(&r, err)) goto out;
    r.diff_keys = differing_keys(&r);
    if (rep_groups_build(&r, a->color_by, a->facet_by, err)) goto out;
    rc = REP_FAILED;
    if (write_page(&r, a, &written, err)) {
        if (r.unwritable) rc = REP_UNWRITABLE;
        else if (r.bad_option) rc = REP_BAD_INPUT;
        goto out;
    }
    *nruns = r.nruns;
    *nfigures = r.nscripts;
    rc = REP_OK;
out:
    rep_free(&r);
    return rc;
}
