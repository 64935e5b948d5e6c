/* tests/test_report.c — `kvsim report` end to end on a small sweep.
 *
 * The database: 4 runs of an 80-request trace (admission none / slo_reject
 * × replay speed 1 / 4, TTFT SLO 800 ms, so slo_reject rejects some), plus
 * data the spine does not write yet, added by hand: instance 0 of run 1
 * switching to decode at 2 s (a PD controller), replica samples for run 2
 * (key bb: 3 + 4 = 7 copies summed, ranked 1st; aa: 2 + 2 + 2 = 6, 2nd) and
 * hit-rate points (through sim_results_add_hitrate). The page must link
 * every figure file, each SVG/PNG must be real, each figure must appear only
 * with its data, the table must list every run with only the differing
 * config keys, and the data files must hold what the database holds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"
#include "tests/sweep_testutil.h"

#include <dirent.h>

#include "sim/results/results.h"

static char *dir, db[512], plain_db[512], rep[512], plain_rep[512], *html;

/* The hand-added data: role change, replicas, hit-rate curves. */
static void add_extras(const char *path)
{
    su_exec(path, "UPDATE samples SET role='decode' WHERE run_id=1 AND instance=0 AND t_ms>=2000;"
                  "INSERT INTO replicas VALUES(2,0,'00000000000000aa',2),(2,1000,'00000000000000aa',2),"
                  "(2,2000,'00000000000000aa',2),(2,0,'00000000000000bb',3),(2,2000,'00000000000000bb',4);");
    sim_results *r;
    sim_err err = {{0}};
    int64_t id;
    assert_int_equal(sim_results_open(&r, path, &err), 0);
    assert_int_equal(sim_results_hitrate_id(r, &id, &err), 0);
    static const double caps[] = {1e5, 1e6, 1e7, INFINITY}, rates[] = {0.125, 0.25, 0.5, 0.625};
    for (int i = 0; i < 4; i++) {
        sim_hitrate_row row = {.trace_path = "t.jsonl",
                               .trace_fingerprint = 0xfeed,
                               .block_tokens = 512,
                               .policy = "lru",
                               .setup = "scope global, 1 node",
                               .capacity_tokens = caps[i],
                               .hit_rate_blocks = rates[i],
                               .hit_rate_tokens = rates[i] + 0.01};
        assert_int_equal(sim_results_add_hitrate(r, id, &row, &err), 0);
    }
    sim_results_close(r);
}

static void report(const char *database, const char *out, const char *extra)
{
    char args[2048];
    snprintf(args, sizeof args, "report --db %s -o %s %s", database, out, extra);
    tu_expect_stdout(args, "kvsim report: ");
}

static int setup(void **state)
{
    char trace[600], args[2048], cmd[1400];
    dir = su_tempdir();
    snprintf(trace, sizeof trace, "%s/t.jsonl", dir);
    snprintf(db, sizeof db, "%s/r.db", dir);
    snprintf(plain_db, sizeof plain_db, "%s/plain.db", dir);
    snprintf(rep, sizeof rep, "%s/rep", dir);
    snprintf(plain_rep, sizeof plain_rep, "%s/plain", dir);
    su_write_trace(trace, 80, 150);
    snprintf(args, sizeof args,
             "sweep --trace %s --set slo.ttft_ms=800 --grid 'policy.admission=none,slo_reject;trace.speed=1,4' "
             "--jobs 2 --db %s",
             trace, db);
    tu_expect_stdout(args, NULL);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", db, plain_db);
    assert_int_equal(system(cmd), 0);
    add_extras(db);
    report(db, rep, "--title 'test report'");
    report(plain_db, plain_rep, "");
    char page[600];
    snprintf(page, sizeof page, "%s/index.html", rep);
    html = su_slurp_path(page);
    assert_non_null(html);
    return 0;
}

static int teardown(void **state)
{
    free(html);
    su_rmrf(dir);
    free(dir);
    return 0;
}

static char *read_in(const char *d, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", d, name);
    return su_slurp_path(path);
}

static bool has_file(const char *d, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", d, name);
    return su_size(path) > 0;
}

/* Whether the page has an attribute src="name" or href="name". */
static bool links_to(const char *page, const char *name)
{
    char a[300], b[300];
    snprintf(a, sizeof a, "src=\"%s\"", name);
    snprintf(b, sizeof b, "href=\"%s\"", name);
    return strstr(page, a) || strstr(page, b);
}

/* ---- files and links ------------------------------------------------------------ */

/* Every src/href of the page names a non-empty file of the directory, and
 * every SVG and PNG of the directory is linked; SVGs are SVG, PNGs are PNG. */
static void test_every_figure_file_linked(void **state)
{
    int links = 0;
    for (const char *p = html; (p = strpbrk(p, "sh")) != NULL; p++) {
        const char *v = !strncmp(p, "src=\"", 5) ? p + 5 : !strncmp(p, "href=\"", 6) ? p + 6 : NULL;
        if (!v) continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(v, "\""), v);
        if (name[0] == '#') continue; /* a link within the page */
        if (!has_file(rep, name)) fail_msg("index.html links %s, missing or empty", name);
        links++;
    }
    assert_true(links >= 4 * 10);
    DIR *d = opendir(rep);
    assert_non_null(d);
    int figures = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        bool svg = n > 4 && !strcmp(e->d_name + n - 4, ".svg"), png = n > 4 && !strcmp(e->d_name + n - 4, ".png");
        if (!svg && !png) continue;
        if (!links_to(html, e->d_name)) fail_msg("%s is not linked from index.html", e->d_name);
        char *text = read_in(rep, e->d_name);
        if (svg) assert_non_null(strstr(text, "<svg"));
        else assert_memory_equal(text, "\x89PNG", 4);
        free(text);
        figures += svg;
    }
    closedir(d);
    /* ttft_cdf, tbt_cdf, slo, latency, cache, rejections, compare (slo_reject
     * against none, per load), ttft_qps (the sweep over trace.speed), hitrate,
     * dynamics (the pools' loads per configuration), load_run1..4, roles_run1,
     * replicas_run2 */
    assert_int_equal(figures, 16);
}

/* A figure appears only when its data is in the database. */
static void test_figures_only_with_their_data(void **state)
{
    static const char *const present[] = {"ttft_cdf",   "tbt_cdf",    "slo",           "latency",   "cache",
                                          "rejections", "hitrate",    "load_run1",     "load_run2", "load_run3",
                                          "load_run4",  "roles_run1", "replicas_run2", "ttft_qps",  "compare"};
    static const char *const absent[] = {"roles_run2", "roles_run3", "replicas_run1", "replicas_run3"};
    static const char *const exts[] = {"svg", "png", "pdf", "dat", "gp"};
    char name[128];
    for (size_t i = 0; i < sizeof present / sizeof present[0]; i++) {
        snprintf(name, sizeof name, "id=\"%s\"", present[i]);
        if (!strstr(html, name)) fail_msg("no section %s", present[i]);
        for (int e = 0; e < 5; e++) {
            snprintf(name, sizeof name, "%s.%s", present[i], exts[e]);
            if (!has_file(rep, name)) fail_msg("%s missing", name);
        }
    }
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++) {
        snprintf(name, sizeof name, "%s.svg", absent[i]);
        assert_false(has_file(rep, name));
    }
    /* Without the hand-added data: no hit-rate, roles or replicas figure. */
    char *page = read_in(plain_rep, "index.html");
    assert_null(strstr(page, "hitrate."));
    assert_null(strstr(page, "roles_run"));
    assert_null(strstr(page, "replicas_run"));
    assert_non_null(strstr(page, "load_run4.svg"));
    free(page);
}

/* ---- the comparison table -------------------------------------------------------- */

static void test_comparison_table(void **state)
{
    assert_non_null(strstr(html, "<h1>test report</h1>"));
    for (int id = 1; id <= 4; id++) {
        char row[64];
        snprintf(row, sizeof row, "<tr data-run=\"%d\">", id);
        assert_int_equal(su_count(html, row), 1);
    }
    assert_int_equal(su_count(html, "<tr data-run="), 4);
    /* The grid keys differ; slo.ttft_ms (800 everywhere) and the rest do not. */
    assert_int_equal(su_count(html, "<th>policy.<wbr>admission</th>"), 1);
    assert_int_equal(su_count(html, "<th>trace.<wbr>speed</th>"), 1);
    assert_int_equal(su_count(html, "<th>slo.<wbr>ttft_<wbr>ms</th>"), 0);
    assert_int_equal(su_count(html, "<th>cluster.<wbr>prefill</th>"), 0);
    /* Run 4 = slo_reject × 4 (grid order); its row ends with those values. */
    const char *row4 = strstr(html, "<tr data-run=\"4\">");
    const char *end4 = strstr(row4, "</tr>");
    char *row = strndup(row4, (size_t)(end4 - row4));
    assert_non_null(strstr(row, "<td class=\"text\">slo_reject</td><td class=\"text\">4</td>"));
    free(row);
    /* Captions name each run's config hash and the trace fingerprint. */
    sqlite3 *h = su_open(db);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(h, "SELECT config_hash, trace_fingerprint FROM runs", -1, &st, NULL),
                     SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        char caption[128];
        snprintf(caption, sizeof caption, "config <code>%s</code>", (const char *)sqlite3_column_text(st, 0));
        assert_true(su_count(html, caption) >= 4); /* ttft, tbt, slo, its load figure */
        assert_non_null(strstr(html, (const char *)sqlite3_column_text(st, 1)));
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
}

/* ---- data files ----------------------------------------------------------------- */

/* Rows of data block `index` (blocks separated by two blank lines). */
static int block_rows(const char *text, int index, double *first_x, double *last_y)
{
    const char *p = text;
    for (int i = 0; i < index; i++) {
        p = strstr(p, "\n\n\n");
        assert_non_null(p);
        p += 3;
    }
    int rows = 0;
    for (const char *line = p; *line && strncmp(line, "\n\n", 2); line = strchr(line, '\n') + 1) {
        double x, y;
        if (*line != '#' && sscanf(line, "%lf\t%lf", &x, &y) == 2) {
            if (rows++ == 0) *first_x = x;
            *last_y = y;
        }
        if (!strchr(line, '\n')) break;
    }
    return rows;
}

static void test_figure_data(void **state)
{
    /* TTFT CDF: one row per completed request of run 3 (block 2: one run
     * per group here), the smallest TTFT first, over all 80 requests: it
     * ends at the completed fraction, the rejected ones never arriving. */
    char *cdf = read_in(rep, "ttft_cdf.dat");
    double first = 0, last = 0;
    int completed = (int)su_num(db, "SELECT COUNT(*) FROM requests WHERE run_id=3 AND status='completed'");
    assert_int_equal(completed,
                     80 - (int)su_num(db, "SELECT COUNT(*) FROM requests WHERE run_id=3 AND status='rejected'"));
    assert_int_equal(block_rows(cdf, 2, &first, &last), completed);
    assert_double_equal(first, su_num(db, "SELECT MIN(ttft_ms) FROM requests WHERE run_id=3"), 1e-5 * first);
    assert_double_equal(last, completed / 80.0, 1e-6);
    assert_true(completed < 80); /* slo_reject at speed 1 rejects some */
    free(cdf);
    char *gp = read_in(rep, "ttft_cdf.gp");
    assert_non_null(strstr(gp, "set arrow from 800, graph 0 to 800, graph 1")); /* the SLO */
    free(gp);
    /* SLO bars: run 4's attainment as in its summary (group 3: one run, so
     * mean, low and high are that value). */
    char *slo = read_in(rep, "slo.dat");
    const char *line = strstr(slo, "\n3\tadmission=slo_reject speed=4\t");
    assert_non_null(line);
    double want = su_num(db, "SELECT json_extract(summary_json, '$.slo_attainment') FROM runs WHERE id=4");
    char expect[64];
    snprintf(expect, sizeof expect, "\t%.6g\t%.6g\t%.6g\t", want, want, want);
    assert_non_null(strstr(line, expect));
    free(slo);
    /* Rejection bars: run 4's total and wasted (after-prefill) rejections. */
    char *rej = read_in(rep, "rejections.dat");
    double total = su_num(db, "SELECT COUNT(*) FROM requests WHERE run_id=4 AND status='rejected'"),
           wasted = su_num(db, "SELECT COUNT(*) FROM requests WHERE run_id=4 AND stage='after_prefill'");
    /* group 3, its label, its colour (Okabe-Ito's 2nd: #D55E00), then
     * mean/low/high of each metric */
    snprintf(expect, sizeof expect, "\n3\tadmission=slo_reject speed=4\t%u\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\n",
             0xD55E00u, total, total, total, wasted, wasted, wasted);
    if (!strstr(rej, expect)) fail_msg("rejections.dat lacks '%s':\n%s", expect, rej);
    free(rej);
    /* Rejection marks: one per rejected request of run 4, written once. */
    char *load = read_in(rep, "load_run4.dat");
    int rejected = (int)su_num(db, "SELECT COUNT(*) FROM requests WHERE run_id=4 AND status='rejected'");
    assert_true(rejected > 0);
    const char *marks = strstr(load, "# rejected ");
    assert_non_null(marks);
    int rows = 0;
    for (const char *p = strchr(marks, '\n') + 1; *p && *p != '\n'; p = strchr(p, '\n') + 1) rows++;
    assert_int_equal(rows, rejected);
    free(load);
    /* Hit rate: the lru points and the infinite line at 0.625. */
    char *hr = read_in(rep, "hitrate.dat");
    assert_non_null(strstr(hr, "100000\t0.125\t0.135\n1e+06\t0.25\t0.26\n1e+07\t0.5\t0.51\n"));
    assert_non_null(strstr(hr, "100000\t0.625\n1e+07\t0.625\n"));
    free(hr);
    /* Replicas: only the key ranked 1st (bb) exists among ranks 1, 10, 100...;
     * it had fewer than two copies at 1 s: a gap (blank line). */
    char *rep2 = read_in(rep, "replicas_run2.dat");
    assert_string_equal(rep2, "# key ranked 1: 00000000000000bb\n0\t3\n\n2000\t4\n");
    free(rep2);
    /* Roles: run 1 has 3 prefill and 5 decode instances from 2 s on. */
    char *roles = read_in(rep, "roles_run1.dat");
    assert_non_null(strstr(roles, "# instances in role decode\n0\t4\n1000\t4\n2000\t5\n"));
    assert_non_null(strstr(roles, "# instances in role prefill\n0\t4\n1000\t4\n2000\t3\n"));
    free(roles);
}

/* Axis ranges come from the data: the TTFT axis spans the smallest TTFT
 * and the larger of the largest TTFT and the SLO (800 ms), a quarter of
 * margin each side; the hit-rate axes span the capacities (1e5..1e7, a
 * factor 1.6 of margin) and 15% above the highest hit rate (0.625 ->
 * 0.71875, rounded up to 0.75). */
static void test_axis_ranges(void **state)
{
    double lo = su_num(db, "SELECT MIN(ttft_ms) FROM requests WHERE ttft_ms > 0"),
           hi = fmax(800, su_num(db, "SELECT MAX(ttft_ms) FROM requests"));
    char want[128];
    snprintf(want, sizeof want, "set xrange [%g:%g]\n", lo / 1.25, hi * 1.25);
    char *gp = read_in(rep, "ttft_cdf.gp");
    if (!strstr(gp, want)) fail_msg("ttft_cdf.gp lacks '%s'", want);
    /* The SLO label sits inside the frame, above the key at the bottom
     * right: left of its line when the line is in the right half of the
     * (log) axis. */
    bool right_half = log(800 / (lo / 1.25)) > 0.5 * log(hi * 1.25 / (lo / 1.25));
    const char *label = strstr(gp, "set label 'TTFT SLO 800 ms' at 800, graph ");
    assert_non_null(label);
    double y = atof(label + strlen("set label 'TTFT SLO 800 ms' at 800, graph "));
    assert_true(y > 0.06 && y < 0.5);
    assert_true(strstr(label, right_half ? "right" : "left") < strchr(label, '\n'));
    free(gp);
    gp = read_in(rep, "hitrate.gp");
    assert_non_null(strstr(gp, "set xrange [62500:1.6e+07]\nset yrange [0:0.75]\n"));
    assert_null(strstr(gp, "x2range")); /* rows without a model: no bytes axis */
    free(gp);
}

/* The best value of each column is highlighted where runs differ: the
 * highest SLO attainment, the lowest mean TTFT. */
static void test_best_highlighted(void **state)
{
    char want[96];
    snprintf(want, sizeof want, "<td class=\"best\">%.3f</td>",
             su_num(db, "SELECT MAX(json_extract(summary_json, '$.slo_attainment')) FROM runs"));
    assert_non_null(strstr(html, want));
    snprintf(want, sizeof want, "<td class=\"best\">%.1f</td>",
             su_num(db, "SELECT MIN(json_extract(summary_json, '$.ttft_ms.mean')) FROM runs"));
    assert_non_null(strstr(html, want));
    /* "80": the completed count of the runs that reject nothing (the most,
     * highlighted), never the requests column (80 in every run: neither
     * higher nor lower is better). */
    assert_int_equal(su_count(html, "<td class=\"best\">80</td>"),
                     (int)su_num(db, "SELECT COUNT(*) FROM runs WHERE json_extract(summary_json, '$.completed') = 80"));
}

/* ---- run selection ---------------------------------------------------------------- */

static void test_run_selection(void **state)
{
    char out[600];
    snprintf(out, sizeof out, "%s/last2", dir);
    report(db, out, "--last 2");
    char *page = read_in(out, "index.html");
    assert_int_equal(su_count(page, "<tr data-run="), 2);
    assert_non_null(strstr(page, "<tr data-run=\"3\">"));
    assert_non_null(strstr(page, "<tr data-run=\"4\">"));
    free(page);
    snprintf(out, sizeof out, "%s/pick", dir);
    report(db, out, "--runs 1,3");
    page = read_in(out, "index.html");
    assert_int_equal(su_count(page, "<tr data-run="), 2);
    assert_non_null(strstr(page, "<tr data-run=\"1\">"));
    assert_non_null(strstr(page, "<tr data-run=\"3\">"));
    /* Runs 1 and 3 differ only in admission: the only config column. */
    assert_int_equal(su_count(page, "<th>policy.<wbr>admission</th>"), 1);
    assert_int_equal(su_count(page, "<th>trace.<wbr>speed</th>"), 0);
    assert_false(has_file(out, "load_run2.svg"));
    free(page);
}

/* A report written again into its folder leaves none of the last one's
 * files it no longer makes (run 4's load figure, the comparison), keeps a
 * file of the user's, and says "1 run". */
static void test_report_again_no_stale(void **state)
{
    char out[600], mine[700];
    snprintf(out, sizeof out, "%s/again", dir);
    report(db, out, "");
    assert_true(has_file(out, "load_run4.svg"));
    assert_true(has_file(out, "compare.png"));
    snprintf(mine, sizeof mine, "%s/notes.txt", out);
    FILE *f = fopen(mine, "w");
    assert_non_null(f);
    fputs("mine\n", f);
    fclose(f);
    char args[2048];
    snprintf(args, sizeof args, "report --db %s -o %s --runs 1", db, out);
    tu_expect_stdout(args, "index.html: 1 run, ");
    assert_false(has_file(out, "load_run4.svg"));
    assert_false(has_file(out, "load_run4.dat"));
    assert_false(has_file(out, "compare.png"));
    assert_true(has_file(out, "load_run1.svg"));
    assert_true(has_file(out, "notes.txt"));
}

/* The .gp scripts redraw their figure on their own, in the directory. */
static void test_scripts_run_standalone(void **state)
{
    char cmd[1200], png[700];
    snprintf(png, sizeof png, "%s/slo.png", rep);
    assert_int_equal(unlink(png), 0);
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot slo.gp", rep);
    assert_int_equal(system(cmd), 0);
    assert_true(su_size(png) > 0);
}

/* `kvsim hitrate --db` stores one id per invocation: the finite points and
 * the infinite cache once (capacity NULL). On the test trace the infinite
 * cache hits the 6 shared prompt blocks of every request but the first of
 * each of the 4 prompts: 76 × 6 = 456 hit blocks over Σ ceil(input/512). */
static void test_hitrate_db(void **state)
{
    char hdb[600], args[2048];
    snprintf(hdb, sizeof hdb, "%s/hitrate.db", dir);
    snprintf(args, sizeof args, "hitrate --trace %s/t.jsonl --capacity-tokens 2048,1e6,inf --db %s", dir, hdb);
    for (int i = 0; i < 2; i++) tu_expect_stdout(args, "max ");
    double blocks = 0;
    for (int i = 0; i < 80; i++) blocks += (3000 + (i * 997) % 6001 + 511) / 512;
    assert_double_equal(su_num(hdb, "SELECT hit_rate_blocks FROM hitrate WHERE id=2 AND capacity_tokens IS NULL"),
                        456 / blocks, 1e-12);
    assert_double_equal(su_num(hdb, "SELECT COUNT(*) FROM hitrate WHERE id=2"), 3, 0); /* 2048, 1e6, max */
    assert_double_equal(su_num(hdb, "SELECT COUNT(DISTINCT id) FROM hitrate"), 2, 0);
    assert_double_equal(su_num(hdb, "SELECT COUNT(*) FROM hitrate WHERE policy='lru' AND block_tokens=512"), 6, 0);
    /* The model sizing the capacity in bytes (llama3-70b by default:
     * 2 * 80 layers * 8 KV heads * 128 * 2 bytes = 327,680 bytes a token)
     * gives the report's figure a bytes axis over the same span. */
    assert_double_equal(su_num(hdb, "SELECT MIN(kv_bytes_per_token) FROM hitrate"), 327680, 0);
    char out[700];
    snprintf(out, sizeof out, "%s/hitrate-report", dir);
    report(hdb, out, "");
    char *gp = read_in(out, "hitrate.gp"), want[160];
    snprintf(want, sizeof want, "set x2range [%.17g:%.17g]", 2048 / 1.6 * 327680, 1e6 * 1.6 * 327680);
    if (!strstr(gp, want)) fail_msg("hitrate.gp lacks '%s':\n%s", want, gp);
    assert_non_null(strstr(gp, "(bytes of KV: llama3-70b, 320 KiB/token)"));
    free(gp);
    /* the infinite row is the setup's own: with 3 local nodes placed in
     * turn no node sees every request of a prompt, and its infinite cache
     * hits less than the trace's bound (the row once held the bound) */
    char ldb[640];
    snprintf(ldb, sizeof ldb, "%s/local.db", dir);
    snprintf(args, sizeof args,
             "hitrate --trace %s/t.jsonl --capacity-tokens inf --nodes 3 --scope local --placement in_turn --db %s "
             "--json",
             dir, ldb);
    json_t *j = tu_kvsim_json(args);
    double inf = json_number_value(json_object_get(json_array_get(json_object_get(j, "points"), 0), "hit_rate_blocks"));
    assert_true(inf < json_number_value(json_object_get(j, "max_hit_rate_blocks")) - 0.01);
    assert_double_equal(su_num(ldb, "SELECT hit_rate_blocks FROM hitrate WHERE capacity_tokens IS NULL"), inf, 1e-9);
    json_decref(j);
}

/* A `kvsim validate --db` run's trace is generated and deleted: its
 * Reproduce line says so and gives validate's command for the experiment
 * (it once gave only `kvsim run --config`, whose trace was gone); a run
 * whose trace is still there gets no such note. */
static void test_validate_db_reproduce(void **state)
{
    char vdb[600], out[700], args[2048];
    snprintf(vdb, sizeof vdb, "%s/validate.db", dir);
    snprintf(out, sizeof out, "%s/validate-report", dir);
    snprintf(args, sizeof args,
             "validate --measurements validation/vllm-h100-train.json --only llama3.1-8b-tp1-general-mnbt1024-run22 "
             "--draws 1 --db %s",
             vdb);
    tu_expect_stdout(args, "llama3.1-8b-tp1-general-mnbt1024-run22");
    report(vdb, out, "");
    char *page = read_in(out, "index.html");
    assert_non_null(
        strstr(page, "is not readable from here (a <code>kvsim validate</code> run generates its workload"));
    assert_non_null(strstr(page, "<code>kvsim validate --measurements FILE --only "
                                 "llama3.1-8b-tp1-general-mnbt1024-run22</code> replays experiment"));
    free(page);
    assert_null(strstr(html, "is not readable from here"));
}

/* A database from before the hitrate table had model and
 * kv_bytes_per_token is upgraded when kvsim opens it to write. */
static void test_hitrate_upgrade(void **state)
{
    char old[600], args[2048];
    snprintf(old, sizeof old, "%s/old.db", dir);
    su_exec(old, "CREATE TABLE hitrate(id INTEGER, created TEXT, kvsim_version TEXT, trace_path TEXT,"
                 " trace_fingerprint TEXT, block_tokens INTEGER, policy TEXT, setup TEXT, capacity_tokens REAL,"
                 " hit_rate_blocks REAL, hit_rate_tokens REAL);"
                 "INSERT INTO hitrate VALUES(1, 'then', 'old', 't', 'ff', 512, 'lru', '', 1000, 0.5, 0.5);");
    snprintf(args, sizeof args, "hitrate --trace %s/t.jsonl --capacity-tokens 1e6 --db %s", dir, old);
    tu_expect_stdout(args, "max ");
    assert_double_equal(su_num(old, "SELECT COUNT(*) FROM hitrate WHERE kv_bytes_per_token IS NULL"), 1, 0);
    assert_double_equal(su_num(old, "SELECT COUNT(*) FROM hitrate WHERE model = 'llama3-70b'"), 2, 0);
}

/* ---- a browser renders it ----------------------------------------------------------- */

static const char *find_chromium(void)
{
    static const char *const names[] = {"chromium", "chromium-browser", "google-chrome"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", names[i]);
        if (system(cmd) == 0) return names[i];
    }
    return NULL;
}

/* The comparison table's right edge, as the browser lays it out in a
 * 1400 px window: a copy of the page with a script that writes it into the
 * title, read back with --dump-dom. */
static void check_table_fits(const char *chromium)
{
    char path[700], cmd[2048];
    snprintf(path, sizeof path, "%s/fit.html", rep);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "%s<script>var t = document.getElementById('comparison').getBoundingClientRect();"
            "document.title = 'right=' + Math.ceil(t.right) + ' width=' + document.documentElement.clientWidth;"
            "</script>\n",
            html);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "%s --headless --no-sandbox --disable-gpu --window-size=1400,1000 --dump-dom 'file://%s' 2>/dev/null",
             chromium, path);
    cli_result r = tu_shell(cmd);
    int right = 0, width = 0;
    const char *t = strstr(r.out, "<title>right=");
    if (!t || sscanf(t, "<title>right=%d width=%d", &right, &width) != 2) fail_msg("no measurement in:\n%.400s", r.out);
    if (right > width || width < 1300) fail_msg("the table ends at %d px in a %d px page", right, width);
    tu_free(&r);
    unlink(path);
}

static void test_headless_chromium(void **state)
{
    const char *chromium = find_chromium();
    if (!chromium) {
        printf("skip: chromium not installed (apt-get install chromium) — the page is not rendered in a browser\n");
        skip();
    }
    char cmd[2048], shot[600], log[600];
    snprintf(shot, sizeof shot, "%s/shot.png", dir);
    snprintf(log, sizeof log, "%s/chromium.log", dir);
    snprintf(cmd, sizeof cmd,
             "%s --headless --no-sandbox --disable-gpu --enable-logging=stderr --log-level=0 --window-size=1400,4000 "
             "--screenshot='%s' 'file://%s/index.html' >'%s' 2>&1",
             chromium, shot, rep, log);
    assert_int_equal(system(cmd), 0);
    assert_true(su_size(shot) > 10000);
    check_table_fits(chromium);
    /* Each <img> logs "kvsim report: cannot load URL" to the console when it
     * fails; console messages reach stderr with --log-level=0. */
    char *text = su_slurp_path(log);
    if (strstr(text, "cannot load") || strstr(text, "Uncaught")) fail_msg("chromium reported errors:\n%s", text);
    free(text);
}

/* ---- bad input ------------------------------------------------------------------------ */

static void test_bad_input(void **state)
{
    char args[2048], garbage[600], empty[600];
    snprintf(garbage, sizeof garbage, "%s/garbage.db", dir);
    snprintf(empty, sizeof empty, "%s/empty.db", dir);
    su_write_garbage(garbage);
    su_exec(empty, "CREATE TABLE other(x)");
    snprintf(args, sizeof args, "report --db %s/missing.db -o %s/x", dir, dir);
    tu_expect_exit(args, 2, "cannot read");
    snprintf(args, sizeof args, "report --db %s -o %s/x", garbage, dir);
    tu_expect_exit(args, 2, "not a SQLite database");
    snprintf(args, sizeof args, "report --db %s -o %s/x", empty, dir);
    tu_expect_exit(args, 2, "not a kvsim results database");
    snprintf(args, sizeof args, "report --db %s --runs 1,99 -o %s/x", db, dir);
    tu_expect_exit(args, 2, "no completed run 99");
    snprintf(args, sizeof args, "report --db %s --runs 1,x -o %s/x", db, dir);
    tu_expect_exit(args, 2, "--runs");
    snprintf(args, sizeof args, "report --db %s --runs 1 --last 2 -o %s/x", db, dir);
    tu_expect_exit(args, 2, "--runs and --last exclude each other");
    snprintf(args, sizeof args, "report --db %s", db);
    tu_expect_exit(args, 2, "-o DIR is required");
    tu_expect_exit("report -o x", 2, "--db FILE is required");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_figure_file_linked),
        cmocka_unit_test(test_figures_only_with_their_data),
        cmocka_unit_test(test_comparison_table),
        cmocka_unit_test(test_figure_data),
        cmocka_unit_test(test_axis_ranges),
        cmocka_unit_test(test_best_highlighted),
        cmocka_unit_test(test_run_selection),
        cmocka_unit_test(test_scripts_run_standalone),
        cmocka_unit_test(test_hitrate_db),
        cmocka_unit_test(test_hitrate_upgrade),
        cmocka_unit_test(test_validate_db_reproduce),
        cmocka_unit_test(test_headless_chromium),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_report_again_no_stale),
    };
    if (!tu_have_gnuplot()) {
        const struct CMUnitTest none[] = {cmocka_unit_test(tu_skipped)};
        return cmocka_run_group_tests(none, NULL, NULL);
    }
    return cmocka_run_group_tests(tests, setup, teardown);
}
