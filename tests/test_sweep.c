/* tests/test_sweep.c — `kvsim sweep` and `kvsim merge` end to end.
 *
 * A sweep must give exactly the runs that `kvsim run` gives point by point;
 * an interrupted sweep, re-run, must run only the missing points; the
 * emitted job lines run by GNU parallel (or one by one as a Slurm array
 * would) plus `kvsim merge` must give the same rows as the sweep; merging
 * remaps run ids; bad grids, keys and databases exit 2 with a message. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"
#include "tests/sweep_testutil.h"

#include <glob.h>

#include "sim/config/grid.h"
#include "sim/results/results.h"

static char *dir, trace[512];

static int setup(void **state)
{
    dir = su_tempdir();
    snprintf(trace, sizeof trace, "%s/t.jsonl", dir);
    su_write_trace(trace, 80, 150);
    return 0;
}

static int teardown(void **state)
{
    su_rmrf(dir);
    free(dir);
    return 0;
}

#define GRID "policy.router=random,least_loaded,round_robin;trace.speed=1,2"

static char *sweep_args(const char *db, const char *extra)
{
    static char args[4096]; /* room for every argument at its longest */
    snprintf(args, sizeof args, "sweep --trace %s --grid '%s' --db %s %s", trace, GRID, db, extra);
    return args;
}

/* The sweep of GRID into db exits 0, printing needle (when given). */
static void sweep_ok(const char *db, const char *extra, const char *needle)
{
    tu_expect_stdout(sweep_args(db, extra), needle);
}

/* ---- grid syntax (library) -------------------------------------------------- */

/* 'a=1,2;b=x,y,z' is 2 × 3 = 6 points, the last key fastest:
 * 0 → a=1 b=x, 1 → a=1 b=y, 2 → a=1 b=z, 3 → a=2 b=x, 5 → a=2 b=z. */
static void test_grid_expansion(void **state)
{
    sim_grid g;
    sim_err err = {{0}};
    assert_int_equal(sim_grid_parse(" a = 1, 2 ; b=x,y,z ;", &g, &err), 0);
    assert_int_equal(g.naxes, 2);
    assert_int_equal(g.npoints, 6);
    static const char *const expect[][2] = {{"a=1", "b=x"}, {"a=1", "b=y"}, {"a=1", "b=z"},
                                            {"a=2", "b=x"}, {"a=2", "b=y"}, {"a=2", "b=z"}};
    for (int i = 0; i < 6; i++) {
        char *sets[2];
        sim_grid_point_sets(&g, i, sets);
        assert_string_equal(sets[0], expect[i][0]);
        assert_string_equal(sets[1], expect[i][1]);
        free(sets[0]), free(sets[1]);
    }
    sim_grid_free(&g);
}

static void test_grid_syntax_errors(void **state)
{
    static const char *const bad[][2] = {
        {"policy.router", "is not key=v1,v2"},
        {"a=", "empty value"},
        {"=1,2", "bad key"},
        {"a=1,,2", "empty value"},
        {"a=1;a=2", "appears twice"},
        {" ; ", "names no key"},
        {"a=1,2,1", "value '1' appears twice in 'a=1,2,1'"}, /* it ran the point twice */
        {"a=1,2,1.0", "values '1' and '1.0' are one number in 'a=1,2,1.0'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sim_grid g;
        sim_err err = {{0}};
        assert_int_equal(sim_grid_parse(bad[i][0], &g, &err), -1);
        if (!strstr(err.msg, bad[i][1])) fail_msg("grid '%s': message '%s' lacks '%s'", bad[i][0], err.msg, bad[i][1]);
    }
}

/* ---- a sweep equals its points run one by one ------------------------------------- */

/* Record the single `kvsim run` of one point in db (as run id n + 1). */
static void single_run(const char *sets, const char *db)
{
    char args[2048];
    snprintf(args, sizeof args, "run --trace %s %s --db %s", trace, sets, db);
    tu_expect_stdout(args, NULL);
}

static char *db_summary(const char *db, int64_t run_id)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT summary_json FROM runs WHERE id=%lld", (long long)run_id);
    sqlite3 *h = su_open(db);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    char *s = su_stable_summary((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(h);
    return s;
}

static void test_sweep_matches_single_runs(void **state)
{
    char db[600], parts[620], single[600];
    snprintf(db, sizeof db, "%s/sweep.db", dir);
    snprintf(single, sizeof single, "%s/single.db", dir);
    cli_result r = tu_kvsim(sweep_args(db, "--jobs 2"));
    if (r.status) fprintf(stderr, "%s", r.err);
    assert_int_equal(r.status, 0);
    /* Not a terminal: one plain progress line per point. */
    assert_int_equal(su_count(r.err, "] done "), 6);
    assert_non_null(strstr(r.out, "6 points: 6 run, 0 already recorded, 0 failed"));
    tu_free(&r);
    assert_double_equal(su_num(db, "SELECT COUNT(*) FROM runs"), 6, 0);
    assert_double_equal(su_num(db, "SELECT COUNT(DISTINCT config_hash) FROM runs"), 6, 0);
    snprintf(parts, sizeof parts, "%s.parts", db);
    assert_int_not_equal(access(parts, F_OK), 0); /* merged and removed */
    /* Runs are in grid order (the part databases are merged by point index):
     * run 1 = random × 1, run 2 = random × 2, ..., run 6 = round_robin × 2. */
    static const char *const points[] = {
        "--set policy.router=random --set trace.speed=1",       "--set policy.router=random --set trace.speed=2",
        "--set policy.router=least_loaded --set trace.speed=1", "--set policy.router=least_loaded --set trace.speed=2",
        "--set policy.router=round_robin --set trace.speed=1",  "--set policy.router=round_robin --set trace.speed=2",
    };
    for (int i = 0; i < 6; i++) {
        single_run(points[i], single);
        char *want = db_summary(single, i + 1), *got = db_summary(db, i + 1);
        assert_string_equal(got, want);
        free(want), free(got);
    }
    /* Re-running the whole sweep runs nothing. */
    sweep_ok(db, "--jobs 2", "6 points: 0 run, 6 already recorded");
    assert_double_equal(su_num(db, "SELECT COUNT(*) FROM runs"), 6, 0);
}

/* --jobs 1 and --jobs 2 give the same database, row by row and in the same
 * physical order (rowids; summaries less wall time), whatever order the
 * workers end in; the parts are merged and removed, none left half-written. */
static void test_jobs_give_same_database(void **state)
{
    char one[600], two[600], parts[620];
    snprintf(one, sizeof one, "%s/jobs1.db", dir);
    snprintf(two, sizeof two, "%s/jobs2.db", dir);
    sweep_ok(one, "--jobs 1", "6 points: 6 run, 0 already recorded, 0 failed");
    sweep_ok(two, "--jobs 2", "6 points: 6 run, 0 already recorded, 0 failed");
    char *a = su_dump(one), *b = su_dump(two);
    assert_string_equal(a, b);
    free(a), free(b);
    assert_double_equal(su_num(two, "SELECT COUNT(*) FROM requests"), 6 * 80, 0);
    snprintf(parts, sizeof parts, "%s.parts", two);
    assert_int_not_equal(access(parts, F_OK), 0);
}

/* `kvsim run --part`: the part exists only whole. It is written as
 * PART.tmp and renamed when the run commits; a run that fails midway (a bad
 * trace line after 30 good ones) leaves neither file; --part needs --db and
 * a FILE that does not exist yet. */
static void test_part_written_whole(void **state)
{
    char part[600], tmp[620], bad[600], args[2048];
    snprintf(part, sizeof part, "%s/p.db", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", part);
    snprintf(args, sizeof args, "run --trace %s --db %s --part", trace, part);
    tu_expect_stdout(args, NULL);
    assert_int_equal(access(part, F_OK), 0);
    assert_int_not_equal(access(tmp, F_OK), 0);
    assert_double_equal(su_num(part, "SELECT COUNT(*) FROM runs WHERE summary_json IS NOT NULL"), 1, 0);
    assert_double_equal(su_num(part, "SELECT COUNT(*) FROM requests"), 80, 0);
    /* the same run, merged, equals the run written as an ordinary database */
    char whole[600], merged[600];
    snprintf(whole, sizeof whole, "%s/whole.db", dir);
    snprintf(merged, sizeof merged, "%s/merged.db", dir);
    snprintf(args, sizeof args, "run --trace %s --db %s", trace, whole);
    tu_expect_stdout(args, NULL);
    snprintf(args, sizeof args, "merge %s %s", merged, part);
    tu_expect_stdout(args, "1 run (now 1), ");
    char *want = db_summary(whole, 1), *got = db_summary(merged, 1);
    assert_string_equal(got, want);
    free(want), free(got);
    assert_double_equal(su_num(merged, "SELECT COUNT(*) FROM requests WHERE run_id=1"), 80, 0);
    snprintf(bad, sizeof bad, "%s/bad.jsonl", dir);
    su_write_trace(bad, 30, 150);
    FILE *f = fopen(bad, "a");
    assert_non_null(f);
    fputs("{\"timestamp\": 9000, \"input_length\": \"x\"}\n", f);
    fclose(f);
    snprintf(part, sizeof part, "%s/failed.db", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", part);
    snprintf(args, sizeof args, "run --trace %s --db %s --part", bad, part);
    tu_expect_exit(args, 2, "bad.jsonl:31: input_length"); /* read as the replay reaches it */
    assert_int_not_equal(access(part, F_OK), 0);
    assert_int_not_equal(access(tmp, F_OK), 0);
    snprintf(args, sizeof args, "run --trace %s --part", trace);
    tu_expect_exit(args, 2, "--part needs --db FILE");
    /* never over an existing file: the rename would replace a results database */
    snprintf(args, sizeof args, "run --trace %s --db %s --part", trace, whole);
    tu_expect_exit(args, 2, "whole.db exists: --part writes a new file and would replace it");
    assert_double_equal(su_num(whole, "SELECT COUNT(*) FROM runs"), 1, 0);
}

/* ---- interrupted sweep, resumed ------------------------------------------------------- */

/* Start the sweep in its own process group, read its progress lines, and
 * after `done` points send sig to the whole group (group) or to the sweep
 * alone. Returns the sweep's wait status. */
static int sweep_and_kill(const char *args, int done, int sig, bool group)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        const char *bin = getenv("KVSIM_BIN") ? getenv("KVSIM_BIN") : "build/san/kvsim";
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "exec %s %s >/dev/null", bin, args);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[1024];
    int seen = 0;
    while (seen < done && fgets(line, sizeof line, f)) seen += strstr(line, "] done ") != NULL;
    assert_int_equal(seen, done);
    kill(group ? -pid : pid, sig);
    int status;
    waitpid(pid, &status, 0);
    fclose(f);
    return status;
}

/* Completed runs in the database and in the part databases a crash left. */
static int recorded_runs(const char *db)
{
    int n = access(db, F_OK) == 0 ? (int)su_num(db, "SELECT COUNT(*) FROM runs WHERE summary_json IS NOT NULL") : 0;
    char pattern[700];
    glob_t g;
    snprintf(pattern, sizeof pattern, "%s.parts/*.db", db);
    if (glob(pattern, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++) /* a worker killed as it began may have made no tables yet */
            if (su_num(g.gl_pathv[i], "SELECT COUNT(*) FROM sqlite_master WHERE name='runs'") > 0)
                n += (int)su_num(g.gl_pathv[i], "SELECT COUNT(*) FROM runs WHERE summary_json IS NOT NULL");
        globfree(&g);
    }
    return n;
}

static void test_killed_sweep_resumes(void **state)
{
    char db[600], big[600], args[2048], expect[128];
    snprintf(db, sizeof db, "%s/killed.db", dir);
    snprintf(big, sizeof big, "%s/big.jsonl", dir);
    su_write_trace(big, 400, 100); /* slower points: the kill lands while one runs */
    snprintf(args, sizeof args, "sweep --trace %s --grid '%s' --db %s --jobs 1", big, GRID, db);
    sweep_and_kill(args, 2, SIGKILL, true);
    int kept = recorded_runs(db);
    assert_true(kept >= 2 && kept < 6);
    cli_result r = tu_kvsim(args);
    if (r.status) fprintf(stderr, "%s", r.err);
    assert_int_equal(r.status, 0);
    snprintf(expect, sizeof expect, "6 points, %d already recorded, running %d with 1 jobs", kept, 6 - kept);
    if (!strstr(r.err, expect)) fail_msg("expected '%s' in:\n%s", expect, r.err);
    assert_int_equal(su_count(r.err, "] done "), 6 - kept);
    tu_free(&r);
    assert_double_equal(su_num(db, "SELECT COUNT(*) FROM runs"), 6, 0);
    assert_double_equal(su_num(db, "SELECT COUNT(DISTINCT config_hash) FROM runs"), 6, 0);
}

/* SIGTERM to the sweep alone stops its workers too: it exits 128 + 15 and
 * no orphaned worker records a run afterwards. */
static void test_sigterm_stops_workers(void **state)
{
    char db[600], big[600], args[2048];
    snprintf(db, sizeof db, "%s/term.db", dir);
    snprintf(big, sizeof big, "%s/big.jsonl", dir);
    su_write_trace(big, 400, 100);
    snprintf(args, sizeof args, "sweep --trace %s --grid '%s' --db %s --jobs 2", big, GRID, db);
    int status = sweep_and_kill(args, 1, SIGTERM, false);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 128 + SIGTERM);
    int kept = recorded_runs(db);
    assert_true(kept >= 1 && kept < 6);
    usleep(1500 * 1000); /* longer than a point takes: an orphan would have finished */
    assert_int_equal(recorded_runs(db), kept);
}

/* SIGKILL to the sweep alone, which no handler sees: the kernel sends its
 * workers SIGTERM (PR_SET_PDEATHSIG), none records a run afterwards, and
 * none holds the parts lock, so the same sweep resumes at once. */
static void test_sigkill_leaves_no_orphan(void **state)
{
    char db[600], big[600], args[2048];
    snprintf(db, sizeof db, "%s/kill9.db", dir);
    snprintf(big, sizeof big, "%s/big.jsonl", dir);
    su_write_trace(big, 400, 100);
    snprintf(args, sizeof args, "sweep --trace %s --grid '%s' --db %s --jobs 2", big, GRID, db);
    int status = sweep_and_kill(args, 1, SIGKILL, false);
    assert_true(WIFSIGNALED(status));
    int kept = recorded_runs(db);
    usleep(1500 * 1000); /* longer than a point takes: an orphan would have finished */
    assert_int_equal(recorded_runs(db), kept);
    cli_result r = tu_kvsim(args);
    if (r.status) fail_msg("resuming after SIGKILL: exit %d: %s", r.status, r.err);
    tu_free(&r);
    assert_double_equal(su_num(db, "SELECT COUNT(*) FROM runs"), 6, 0);
}

/* The results at the end: a table row per point (this sweep's or an
 * earlier one's run), and under --json one object whose points carry the
 * run id and the summary the database holds for it (read back with SQL).
 * An empty part database in DB.parts/ does not stop the sweep. */
static void test_results_table_and_json(void **state)
{
    char db[600], args[4096];
    snprintf(db, sizeof db, "%s/table.db", dir);
    /* a part a worker left before making its tables (killed as it began) is passed over */
    snprintf(args, sizeof args, "mkdir -p %s.parts && : > %s.parts/00000-0000000000000000.db", db, db);
    assert_int_equal(system(args), 0);
    sweep_ok(db, "--jobs 2", "   run  attain   TTFT p90    TBT p99  hit rate  rejected  point");
    cli_result r = tu_kvsim(sweep_args(db, "--jobs 2"));
    assert_int_equal(r.status, 0);
    assert_int_equal(su_count(r.out, "  policy.router="), 6); /* all six points, though none ran again */
    assert_non_null(strstr(r.out, "0 run, 6 already recorded"));
    tu_free(&r);
    snprintf(args, sizeof args, "%s", sweep_args(db, "--json"));
    json_t *j = tu_kvsim_json(args), *points = json_object_get(j, "points");
    assert_int_equal(json_array_size(points), 6);
    for (size_t i = 0; i < 6; i++) {
        json_t *p = json_array_get(points, i);
        char q[160];
        snprintf(q, sizeof q, "SELECT json_extract(summary_json, '$.ttft_ms.p90') FROM runs WHERE id=%lld",
                 (long long)json_integer_value(json_object_get(p, "run_id")));
        assert_double_equal(
            json_number_value(json_object_get(json_object_get(json_object_get(p, "summary"), "ttft_ms"), "p90")),
            su_num(db, q), 1e-6); /* --json prints 10 significant digits */
    }
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(json_array_get(points, 5), "sets"), "policy.router")),
        "round_robin");
    json_decref(j);
}

/* ---- emitted jobs + merge = sweep ---------------------------------------------------------- */

static void run_job_lines(const char *jobs)
{
    char cmd[1400];
    if (system("command -v parallel >/dev/null 2>&1") == 0) {
        snprintf(cmd, sizeof cmd, "parallel --will-cite --jobs 2 < '%s' >/dev/null", jobs);
        assert_int_equal(system(cmd), 0);
        return;
    }
    printf("note: GNU parallel not installed: running the lines one by one as a Slurm array would\n");
    for (int i = 1; i <= 6; i++) {
        snprintf(cmd, sizeof cmd, "sed -n %dp '%s' | sh >/dev/null", i, jobs);
        assert_int_equal(system(cmd), 0);
    }
}

static void test_emit_jobs_merge_equals_sweep(void **state)
{
    char ref[600], db[600], jobs[600], args[2048];
    snprintf(ref, sizeof ref, "%s/ref.db", dir);
    snprintf(db, sizeof db, "%s/emitted.db", dir);
    snprintf(jobs, sizeof jobs, "%s/jobs.txt", dir);
    sweep_ok(ref, "--jobs 2", NULL);
    tu_expect_exit(sweep_args(db, "--emit-jobs"), 2,
                   "unknown option or missing value '--emit-jobs'"); /* it needs its FILE */
    snprintf(args, sizeof args, "--emit-jobs %s", jobs);
    sweep_ok(db, args, "wrote 6 commands");
    char *lines = su_slurp_path(jobs);
    assert_int_equal(su_count(lines, "\n"), 6);
    assert_int_equal(su_count(lines, " run "), 6);
    free(lines);
    run_job_lines(jobs);
    snprintf(args, sizeof args, "merge %s %s.parts/*.db", db, db);
    tu_expect_stdout(args, "kvsim merge: ");
    char *a = su_dump(ref), *b = su_dump(db);
    assert_string_equal(a, b);
    free(a), free(b);
    /* A sweep over the merged database finds every point recorded. */
    sweep_ok(db, "", "0 run, 6 already recorded");
}

/* ---- merge: id remapping, idempotence, hitrate ids ----------------------------------------- */

static void add_hitrate_set(const char *db, double cap)
{
    sim_results *r;
    sim_err err = {{0}};
    int64_t id;
    assert_int_equal(sim_results_open(&r, db, &err), 0);
    assert_int_equal(sim_results_hitrate_id(r, &id, &err), 0);
    sim_hitrate_row row = {.trace_path = "t.jsonl",
                           .trace_fingerprint = 0xabc,
                           .block_tokens = 512,
                           .policy = "lru",
                           .setup = "scope global, 1 node",
                           .capacity_tokens = cap,
                           .hit_rate_blocks = 0.25,
                           .hit_rate_tokens = 0.3};
    assert_int_equal(sim_results_add_hitrate(r, id, &row, &err), 0);
    sim_results_close(r);
}

static void test_merge_remaps_ids(void **state)
{
    char src[600], out[600], args[4096];
    snprintf(src, sizeof src, "%s/src.db", dir);
    snprintf(out, sizeof out, "%s/out.db", dir);
    sweep_ok(src, "--jobs 2", NULL);
    add_hitrate_set(src, 1e6);
    add_hitrate_set(src, INFINITY);
    /* Twice with --keep-duplicates: runs 1-6 then 7-12, each run's rows following its new id. */
    snprintf(args, sizeof args, "merge --keep-duplicates %s %s %s", out, src, src);
    tu_expect_stdout(args, "6 runs (now 7-12)");
    assert_double_equal(su_num(out, "SELECT COUNT(*) FROM runs"), 12, 0);
    double n1 = su_num(src, "SELECT COUNT(*) FROM requests WHERE run_id=1");
    assert_true(n1 > 0);
    assert_double_equal(su_num(out, "SELECT COUNT(*) FROM requests WHERE run_id=7"), n1, 0);
    assert_double_equal(su_num(out, "SELECT COUNT(*) FROM samples WHERE run_id=12"),
                        su_num(src, "SELECT COUNT(*) FROM samples WHERE run_id=6"), 0);
    assert_double_equal(su_num(out, "SELECT json_extract(summary_json, '$.run_id') FROM runs WHERE id=9"), 9, 0);
    /* hitrate sets 1, 2 of the source became 1, 2 then 3, 4; infinity is NULL. */
    assert_double_equal(su_num(out, "SELECT MAX(id) FROM hitrate"), 4, 0);
    assert_double_equal(su_num(out, "SELECT COUNT(*) FROM hitrate WHERE capacity_tokens IS NULL"), 2, 0);
    /* By default (and with the old --skip-existing) merging again adds nothing. */
    snprintf(args, sizeof args, "merge %s %s", out, src);
    tu_expect_stdout(args, "0 runs, 6 already present, 0 hitrate sets (2 already present)");
    snprintf(args, sizeof args, "merge --skip-existing %s %s", out, src);
    tu_expect_stdout(args, "0 runs, 6 already present");
    assert_double_equal(su_num(out, "SELECT COUNT(*) FROM runs"), 12, 0);
    assert_double_equal(su_num(out, "SELECT MAX(id) FROM hitrate"), 4, 0);
}

/* ---- bad input --------------------------------------------------------------------------- */

/* The workers share one stderr: each warning line arrives whole, never
 * spliced with another worker's (a bug: the overload warning was printed
 * in pieces, and two workers' pieces interleaved; stderr is line-buffered
 * now). Three sweeps of eight overloaded points, two workers each. */
static void test_worker_warnings_whole(void **state)
{
    (void)state;
    for (int round = 0; round < 3; round++) {
        char args[1200];
        snprintf(args, sizeof args,
                 "sweep --grid 'trace.speed=6,7,8,9,10,11,12,13' --set cluster.prefill=1 --set cluster.decode=1 "
                 "--set seed=%d --jobs 2 --db %s/whole%d.db",
                 round + 1, dir, round);
        cli_result r = tu_kvsim(args);
        assert_int_equal(r.status, 0);
        int warnings = 0;
        for (char *line = strtok(r.err, "\n"); line; line = strtok(NULL, "\n")) {
            if (!strstr(line, "overloaded")) continue;
            warnings++;
            if (strncmp(line, "kvsim run: warning: overloaded: ", 32) ||
                strstr(line + 1, "kvsim ") != strstr(line, "kvsim plan slo finds") || !strstr(line, "meets the SLOs"))
                fail_msg("a spliced warning line: '%s'", line);
        }
        assert_int_equal(warnings, 8);
        tu_free(&r);
    }
}

static void test_bad_input(void **state)
{
    char args[2048], garbage[600], db[600];
    snprintf(garbage, sizeof garbage, "%s/garbage.db", dir);
    snprintf(db, sizeof db, "%s/bad.db", dir);
    su_write_garbage(garbage);
    snprintf(args, sizeof args, "sweep --trace %s --grid 'policy.router' --db %s", trace, db);
    tu_expect_exit(args, 2, "--grid: 'policy.router' is not key=v1,v2");
    snprintf(args, sizeof args, "sweep --trace %s --grid 'policy.router=random;nope.key=1,2' --db %s", trace, db);
    tu_expect_exit(args, 2, "unknown config key 'nope.key'");
    snprintf(args, sizeof args, "sweep --trace %s --grid 'policy.router=random,nope' --db %s", trace, db);
    tu_expect_exit(args, 2, "nope");
    snprintf(args, sizeof args, "sweep --trace %s --grid 'seed=1' --db %s", trace, garbage);
    tu_expect_exit(args, 2, "garbage.db");
    snprintf(args, sizeof args, "sweep --trace %s --grid 'seed=1' --jobs 0", trace);
    tu_expect_exit(args, 2, "--jobs");
    tu_expect_exit("sweep --trace x.jsonl", 2, "--grid KEY=V1,V2,... is required (e.g. --grid policy.router=");
    snprintf(args, sizeof args, "merge %s/out.db %s", dir, garbage);
    tu_expect_exit(args, 2, "garbage.db: cannot open: file is not a database");
    snprintf(args, sizeof args, "merge %s/out.db %s/missing.db", dir, dir);
    tu_expect_exit(args, 2, "missing.db: cannot read");
    tu_expect_exit("merge only-one.db", 2, "expected OUT.db and at least one IN.db");
    /* Nothing ran: the sweep DB of the failed sweeps holds no run. */
    assert_int_not_equal(access(db, F_OK), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grid_expansion),
        cmocka_unit_test(test_grid_syntax_errors),
        cmocka_unit_test(test_sweep_matches_single_runs),
        cmocka_unit_test(test_jobs_give_same_database),
        cmocka_unit_test(test_part_written_whole),
        cmocka_unit_test(test_killed_sweep_resumes),
        cmocka_unit_test(test_sigterm_stops_workers),
        cmocka_unit_test(test_sigkill_leaves_no_orphan),
        cmocka_unit_test(test_results_table_and_json),
        cmocka_unit_test(test_emit_jobs_merge_equals_sweep),
        cmocka_unit_test(test_merge_remaps_ids),
        cmocka_unit_test(test_worker_warnings_whole),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
