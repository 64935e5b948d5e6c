/* tests/test_report_quoting.c — `kvsim report` on a database someone else
 * made: every string in it reaches gnuplot and the shell only quoted.
 *
 * A results database is shared (merged sweep parts, Slurm results, a
 * colleague's study), so its strings are not trusted. Gnuplot runs the
 * backquoted text of a double-quoted string, so a label written that way
 * runs a command when the report is drawn. Here every string field that
 * reaches a report holds a payload: backquotes, $(...), system("..."),
 * single and double quotes, a backslash, a gnuplot macro (@figure_title),
 * a newline and a tab. Config keys through `kvsim run --set` and the trace
 * file's name, in two databases so that a run's label (the keys that
 * differ, cut at 512 bytes) holds each whole: "names" (runs A and B ×
 * speed 1 and 2: model.name, hardware.name, the trace file) and "abouts"
 * (runs A and B: about, model.about, hardware.about). Into "names" go
 * the rows a crafted database can hold too: an instance's role, a replica
 * key, the hit-rate table's trace path, policy, setup and model, a config
 * hash. The report must run nothing, its .gp files must hold the text
 * only inside single-quoted gnuplot literals (' doubled, control
 * characters as spaces), its .dat files must keep their rows and columns,
 * the figures and the page must show the text, and the page's Reproduce
 * command, pasted into sh, must give back exactly its arguments for an
 * output folder named `rep 2 $(touch X) ...`. Programs run here without a
 * shell (posix_spawn), so no quoting of this file's own stands between the
 * payload and kvsim. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"
#include "tests/sweep_testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>

#include "sim/results/results.h"

/* The payload, and how it must read inside a gnuplot single-quoted
 * literal (worked out by hand: ' doubled, newline and tab as spaces,
 * nothing else touched), in a data file (" as ', control characters as
 * spaces) and in the page (XML-escaped, newline and tab kept). */
#define PAYLOAD "`touch pwn-bq`$(touch pwn-dollar) system(\"touch pwn-sys\") it's \"dq\" a\\b @figure_title\nnext\ttab"
#define GP_PAYLOAD                                                                                                     \
    "`touch pwn-bq`$(touch pwn-dollar) system(\"touch pwn-sys\") it''s \"dq\" a\\b @figure_title next tab"
#define DAT_PAYLOAD "`touch pwn-bq`$(touch pwn-dollar) system('touch pwn-sys') it's 'dq' a\\b @figure_title next tab"
#define HTML_PAYLOAD                                                                                                   \
    "`touch pwn-bq`$(touch pwn-dollar) system(&quot;touch pwn-sys&quot;) it's &quot;dq&quot; a\\b "                    \
    "@figure_title\nnext\ttab"
/* How it reads in gnuplot's SVG (noenhanced text; only < and & escaped). */
#define SVG_PAYLOAD                                                                                                    \
    "`touch pwn-bq`$(touch pwn-dollar) system(\"touch pwn-sys\") it's \"dq\" a\\b @figure_title next tab"

static const char *const markers[] = {"pwn-bq", "pwn-dollar", "pwn-sys", "pwn-repro", "pwn-repro2"};

static char *dir, db[512], rep[512], db2[512], rep2[512];
static int report_status[2]; /* kvsim report's exit status on names, abouts */

/* Run argv[0] (searched on PATH) with stdout into out_path (NULL:
 * discarded) and stderr into DIR/stderr.txt; returns its exit status. */
static int spawn(char *const argv[], const char *out_path)
{
    char err_path[600];
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", dir);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    extern char **environ;
    pid_t pid;
    int status = -1;
    if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) == 0) waitpid(pid, &status, 0);
    posix_spawn_file_actions_destroy(&fa);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* `kvsim ARGS...` (NULL-terminated): its exit status. */
static int kvsim_status(const char *first, va_list ap)
{
    char *argv[64] = {(char *)tu_kvsim_bin(), (char *)first};
    int n = 2;
    while (n < 63 && (argv[n] = va_arg(ap, char *)) != NULL) n++;
    return spawn(argv, NULL);
}

static int kvsim_try(const char *first, ...)
{
    va_list ap;
    va_start(ap, first);
    int status = kvsim_status(first, ap);
    va_end(ap);
    return status;
}

/* `kvsim ARGS...` (NULL-terminated) must exit 0. */
static void kvsim(const char *first, ...)
{
    va_list ap;
    va_start(ap, first);
    int status = kvsim_status(first, ap);
    va_end(ap);
    if (status != 0) {
        char path[600];
        snprintf(path, sizeof path, "%s/stderr.txt", dir);
        char *text = su_slurp_path(path);
        fail_msg("kvsim %s ... exited %d: %s", first, status, text ? text : "");
    }
}

/* One run into `database`: each of keys[0..n) set to its value with the
 * payload after it (the value names the run: mA, hB...), the trace file
 * t<trace><payload>.jsonl, replayed at `speed`. */
static void run(const char *database, const char *const *keys, int n, const char *who, const char *trace_who,
                const char *speed)
{
    char trace[1024], set[3][512];
    snprintf(trace, sizeof trace, "%s/t%s" PAYLOAD ".jsonl", dir, trace_who);
    if (su_size(trace) <= 0) su_write_trace(trace, 80, 150);
    for (int k = 0; k < 3; k++) snprintf(set[k], sizeof set[k], "%s%s" PAYLOAD, keys[k < n ? k : 0], who);
    kvsim("run", "--trace", trace, "--set", "trace.limit=30", "--speed", speed, "--set", set[0], "--set", set[1],
          "--set", set[2], "--db", database, NULL);
}

/* sql on the database with ?1 bound to text (SQLite quotes it). */
static void exec_bound(const char *sql, const char *text)
{
    sqlite3 *h = su_open(db);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) fail_msg("%s: %s", sql, sqlite3_errmsg(h));
    sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE) fail_msg("%s: %s", sql, sqlite3_errmsg(h));
    sqlite3_finalize(st);
    sqlite3_close(h);
}

/* What a crafted database can hold beyond the configs. */
static void plant_rows(void)
{
    exec_bound("UPDATE samples SET role=?1 WHERE run_id=1 AND instance=0 AND t_ms>=1000", "rA" PAYLOAD);
    exec_bound("INSERT INTO replicas VALUES(1,0,?1,2),(1,1000,?1,3)", "kA" PAYLOAD);
    exec_bound("UPDATE runs SET config_hash=?1 WHERE id=4", "<i>h</i>");
    sim_results *r;
    sim_err err = {{0}};
    int64_t id;
    assert_int_equal(sim_results_open(&r, db, &err), 0);
    assert_int_equal(sim_results_hitrate_id(r, &id, &err), 0);
    static const double caps[] = {1e5, 1e6, INFINITY};
    static const char *const policies[] = {"pA" PAYLOAD, "pB" PAYLOAD};
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < 3; i++) {
            sim_hitrate_row row = {.trace_path = "hA" PAYLOAD,
                                   .trace_fingerprint = 0xfeed,
                                   .block_tokens = 512,
                                   .policy = policies[p],
                                   .setup = "sA" PAYLOAD,
                                   .capacity_tokens = caps[i],
                                   .hit_rate_blocks = 0.25 * (i + 1),
                                   .hit_rate_tokens = 0.25 * (i + 1),
                                   .model = "xA" PAYLOAD,
                                   .kv_bytes_per_token = 1024};
            assert_int_equal(sim_results_add_hitrate(r, id, &row, &err), 0);
        }
    sim_results_close(r);
}

static int setup(void **state)
{
    dir = su_tempdir();
    snprintf(db, sizeof db, "%s/names.db", dir);
    snprintf(rep, sizeof rep, "%s/names", dir);
    snprintf(db2, sizeof db2, "%s/abouts.db", dir);
    snprintf(rep2, sizeof rep2, "%s/abouts", dir);
    static const char *const names[] = {"model.name=m", "hardware.name=h"}, *const abouts[] = {"about=a",
                                                                                               "model.about=ma",
                                                                                               "hardware.about=ha"};
    run(db, names, 2, "A", "A", "1");
    run(db, names, 2, "A", "A", "2");
    run(db, names, 2, "B", "B", "1");
    run(db, names, 2, "B", "B", "2");
    plant_rows();
    /* Checked by test_nothing_runs, after it looked for what ran. */
    report_status[0] = kvsim_try("report", "--db", db, "-o", rep, NULL);
    run(db2, abouts, 3, "A", "A", "1");
    run(db2, abouts, 3, "B", "A", "1");
    report_status[1] = kvsim_try("report", "--db", db2, "-o", rep2, NULL);
    return 0;
}

static int teardown(void **state)
{
    su_rmrf(dir);
    free(dir);
    return 0;
}

/* No marker file in folder d (one found is removed, then the test fails). */
static void no_markers_in(const char *d)
{
    for (size_t i = 0; i < sizeof markers / sizeof markers[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", d, markers[i]);
        if (access(path, F_OK) == 0) {
            unlink(path);
            fail_msg("%s exists: a string from the database ran as a command", path);
        }
    }
}

/* ---- nothing runs ---------------------------------------------------------------- */

static void test_nothing_runs(void **state)
{
    no_markers_in(rep);
    no_markers_in(rep2);
    no_markers_in(dir);
    no_markers_in(".");
    assert_int_equal(report_status[0], 0);
    assert_int_equal(report_status[1], 0);
    /* Every figure with planted text was drawn (so gnuplot read it all). */
    static const char *const figs[] = {"ttft_cdf", "tbt_cdf",    "slo",          "ttft_qps",
                                       "hitrate",  "roles_run1", "replicas_run1"};
    for (size_t i = 0; i < sizeof figs / sizeof figs[0]; i++) {
        char svg[1024];
        snprintf(svg, sizeof svg, "%s/%s.svg", rep, figs[i]);
        if (su_size(svg) <= 0) fail_msg("%s missing", svg);
    }
}

/* ---- the .gp files ------------------------------------------------------------------ */

/* A line of gnuplot program text with its single-quoted literals removed
 * ('' inside one is a quote); fails when a literal is left open. */
static void strip_literals(const char *line, char *out, size_t size, const char *file)
{
    size_t n = 0;
    bool in = false;
    for (const char *p = line; *p && *p != '\n'; p++) {
        if (*p == '\'') {
            if (in && p[1] == '\'') p++;
            else in = !in;
        } else if (!in && n + 1 < size) {
            out[n++] = *p;
        }
    }
    out[n] = 0;
    if (in) fail_msg("%s: a quote left open on the line: %.200s", file, line);
}

/* Outside single-quoted literals a .gp file holds none of the payload. */
static void check_inert(const char *d, const char *name)
{
    char *gp = su_read_in(d, name), rest[8192];
    for (const char *line = gp; *line; line = strchr(line, '\n') + 1) {
        if (*line != '#') {
            strip_literals(line, rest, sizeof rest, name);
            if (strstr(rest, "touch") || strchr(rest, '`') || strstr(rest, "$(") || strstr(rest, "@figure"))
                fail_msg("%s: payload outside a single-quoted literal: %s", name, rest);
        }
        if (!strchr(line, '\n')) break;
    }
    free(gp);
}

static void expect_in_dir(const char *d, const char *name, const char *want)
{
    char *text = su_read_in(d, name);
    if (!strstr(text, want)) fail_msg("%s lacks '%s'", name, want);
    free(text);
}

static void expect_in(const char *name, const char *want) { expect_in_dir(rep, name, want); }

/* check_inert on every .gp of folder d; returns how many. */
static int check_folder(const char *d)
{
    DIR *h = opendir(d);
    assert_non_null(h);
    int scripts = 0;
    for (struct dirent *e; (e = readdir(h)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (n > 3 && !strcmp(e->d_name + n - 3, ".gp")) check_inert(d, e->d_name), scripts++;
    }
    closedir(h);
    return scripts;
}

static void test_gp_quoted(void **state)
{
    /* names: 2 CDFs, 3 bar charts, ttft_qps, hitrate, 4 load timelines,
     * roles and replicas of run 1, the pools' dynamics; abouts: 2 CDFs, 3
     * bar charts, 2 loads, the pools' dynamics. */
    assert_int_equal(check_folder(rep), 14);
    assert_int_equal(check_folder(rep2), 8);
    /* Each field's text is there, quoted: bar labels, legends, facet
     * titles, the qps curves, the trace path, role, policy, model. */
    static const char *const names[] = {"name=mA", "name=mB", "name=hA", "name=hB"};
    char want[1024];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(want, sizeof want, "%s" GP_PAYLOAD, names[i]);
        expect_in("slo.gp", want);
        expect_in("ttft_qps.gp", want);
    }
    expect_in("slo.gp", "set ytics ('name=hA" GP_PAYLOAD " name=mA" GP_PAYLOAD " path=");
    expect_in("ttft_cdf.gp", "set title 'name=mB" GP_PAYLOAD "'\n");
    expect_in("tbt_cdf.gp", "title 'name=hB" GP_PAYLOAD " path=");
    /* (B's trace has A's requests: identical results, "(= ...)".) */
    snprintf(want, sizeof want,
             "'name=hB" GP_PAYLOAD " name=mB" GP_PAYLOAD " path=%s/tB" GP_PAYLOAD ".jsonl speed=2 (= name=hA", dir);
    expect_in("slo.gp", want);
    expect_in("roles_run1.gp", "title 'rA" GP_PAYLOAD "'");
    expect_in("hitrate.gp", "title 'pB" GP_PAYLOAD "'");
    expect_in("hitrate.gp", "set x2label 'cache capacity per node (bytes of KV: xA" GP_PAYLOAD ", 1 KiB/token)'");
    expect_in_dir(rep2, "slo.gp",
                  "set ytics ('about=aA" GP_PAYLOAD " about=haA" GP_PAYLOAD " about=maA" GP_PAYLOAD "' 0, 'about=aB");
}

/* ---- the .dat files ------------------------------------------------------------------ */

/* gnuplot's own count of the rows of a data file (tab-separated). */
static int gnuplot_records(const char *name, int column)
{
    char script[1024], out[1024];
    snprintf(script, sizeof script,
             "set print '-'; set datafile separator \"\\t\"; stats '%s/%s' using %d nooutput; print STATS_records", rep,
             name, column);
    snprintf(out, sizeof out, "%s/records.txt", dir);
    char *argv[] = {"gnuplot", "-e", script, NULL};
    assert_int_equal(spawn(argv, out), 0);
    char *text = su_slurp_path(out);
    int n = atoi(text);
    free(text);
    return n;
}

static void test_dat_rows_and_columns(void **state)
{
    /* The bars: one row per group (4), 9 tab-separated columns each, the
     * label kept on its row; gnuplot reads 4 rows of numbers in column 4. */
    char *slo = su_read_in(rep, "slo.dat");
    int rows = 0;
    for (const char *line = slo; *line; line = strchr(line, '\n') + 1) {
        if (*line != '#' && *line != '\n') {
            int tabs = 0;
            for (const char *p = line; *p && *p != '\n'; p++) tabs += *p == '\t';
            if (tabs != 8) fail_msg("slo.dat: %d columns in: %.300s", tabs + 1, line);
            rows++;
        }
        if (!strchr(line, '\n')) break;
    }
    assert_int_equal(rows, 4);
    assert_non_null(strstr(slo, "\tname=hA" DAT_PAYLOAD " name=mA" DAT_PAYLOAD " path="));
    free(slo);
    assert_int_equal(gnuplot_records("slo.dat", 4), 4);
    assert_int_equal(gnuplot_records("slo.dat", 9), 4);
    /* Comments stay one line: the CDF's group headers, the replica key,
     * the hit-rate curve's trace path and setup. */
    char *cdf = su_read_in(rep, "ttft_cdf.dat");
    assert_int_equal(su_count(cdf, "# group: "), 4);
    assert_int_equal(su_count(cdf, " (runs #"), 4);
    free(cdf);
    expect_in("replicas_run1.dat", "# key ranked 1: kA" DAT_PAYLOAD "\n0\t2\n1000\t3\n");
    expect_in("hitrate.dat", "trace hA" DAT_PAYLOAD " (000000000000feed), sA" DAT_PAYLOAD "\n");
    expect_in("roles_run1.dat", "# instances in role rA" DAT_PAYLOAD "\n");
}

/* ---- what a reader sees ----------------------------------------------------------------- */

static void test_figures_and_page_show_the_text(void **state)
{
    expect_in("ttft_cdf.svg", "name=mA" SVG_PAYLOAD);
    expect_in("slo.svg", "name=hB" SVG_PAYLOAD);
    expect_in_dir(rep2, "slo.svg", "about=maB" SVG_PAYLOAD);
    expect_in("hitrate.svg", "pB" SVG_PAYLOAD);
    /* The page keeps the exact text, newline and tab included, escaped. */
    expect_in("index.html", "mA" HTML_PAYLOAD);
    expect_in_dir(rep2, "index.html", "haB" HTML_PAYLOAD);
    expect_in("index.html", "<code>&lt;i&gt;h&lt;/i&gt;</code>");
    char *page = su_read_in(rep, "index.html");
    assert_null(strstr(page, "<i>h</i>"));
    free(page);
}

/* ---- the Reproduce command ----------------------------------------------------------- */

/* The text of run 1's command on the page: tags dropped, entities read. */
static void reproduce_text(const char *page, char *out, size_t size)
{
    const char *p = strstr(page, "<li id=\"reproduce-1\">#1: <code>");
    assert_non_null(p);
    p = strchr(p, '>') + 1;
    p = strchr(p, '>') + 1;
    const char *end = strstr(p, "</code>");
    assert_non_null(end);
    static const char *const ents[][2] = {{"&quot;", "\""}, {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}};
    size_t n = 0;
    while (p < end && n + 1 < size) {
        if (*p == '<') {
            p = strchr(p, '>') + 1;
            continue;
        }
        size_t k = 0;
        while (k < 4 && strncmp(p, ents[k][0], strlen(ents[k][0]))) k++;
        out[n++] = k < 4 ? ents[k][1][0] : *p;
        p += k < 4 ? strlen(ents[k][0]) : 1;
    }
    out[n] = 0;
}

static void test_reproduce_round_trip(void **state)
{
    char out[1024], cmd[4096], script[4400], printed[1024], want[2048];
    snprintf(out, sizeof out, "%s/rep 2 $(touch pwn-repro) `touch pwn-repro2` it's \"q\" a\\b", dir);
    kvsim("report", "--db", db2, "--runs", "1", "-o", out, NULL);
    char *page = su_read_in(out, "index.html");
    reproduce_text(page, cmd, sizeof cmd);
    free(page);
    assert_int_equal(strncmp(cmd, "kvsim run --config ", 19), 0);
    /* Pasted into sh with printf for kvsim: one argument a line. */
    snprintf(script, sizeof script, "cd '%s' && printf '%%s\\n' %s", dir, cmd + strlen("kvsim "));
    snprintf(printed, sizeof printed, "%s/printed.txt", dir);
    char *argv[] = {"sh", "-c", script, NULL};
    int status = spawn(argv, printed);
    char *got = su_slurp_path(printed);
    snprintf(want, sizeof want, "run\n--config\n%s/configs/run1.json\n--db\nresults.db\n", out);
    if (status != 0 || strcmp(got, want))
        fail_msg("sh (exit %d) read the command\n%s\nas:\n%s\nnot:\n%s", status, cmd, got, want);
    free(got);
    no_markers_in(dir);
    no_markers_in(".");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nothing_runs),         cmocka_unit_test(test_gp_quoted),
        cmocka_unit_test(test_dat_rows_and_columns), cmocka_unit_test(test_figures_and_page_show_the_text),
        cmocka_unit_test(test_reproduce_round_trip),
    };
    if (!tu_have_gnuplot()) {
        const struct CMUnitTest none[] = {cmocka_unit_test(tu_skipped)};
        return cmocka_run_group_tests(none, NULL, NULL);
    }
    return cmocka_run_group_tests(tests, setup, teardown);
}
