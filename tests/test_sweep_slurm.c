/* tests/test_sweep_slurm.c — `kvsim sweep --merge-parts` and the Slurm driver
 * of `kvsim sweep --slurm`, without a cluster: stand-in sbatch, squeue and
 * scancel scripts on PATH record the argv they get and run the array tasks
 * on the spot (one can be left out, as a failed task), with an empty queue.
 * So these run everywhere; tests/slurm.sh runs the same commands against a
 * real single-node Slurm where daemons can start.
 *
 * What must hold: --merge-parts merges what landed, lists what is missing
 * (exit 1), and doing it twice changes nothing; sbatch gets each word as
 * one argument (a partition with a space stays one, --sbatch-args is split into
 * words as a shell would, quotes kept together, a % in the parts path is doubled in --output); a task that left
 * the queue without its run fails its point only, and the sweep run again
 * submits that point alone; the runs equal a local sweep's by config hash
 * and summary; wrong combinations, a missing sbatch and an array of a
 * killed sweep still queued are told. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"
#include "tests/sweep_testutil.h"

static char *dir, trace[512], fake[600];

#define GRID "policy.router=random,least_loaded,round_robin;trace.speed=1,2"

/* sbatch: its argv to $FAKE_DIR/sbatch.args, then every task but
 * $FAKE_SKIP run at once (the batch script and its arguments follow the
 * options), and a job id; squeue: an empty queue; scancel: nothing. */
static const char fake_sbatch[] =
    "#!/bin/sh\n"
    "printf '%s\\n' \"$@\" >\"$FAKE_DIR/sbatch.args\"\n"
    "while [ $# -gt 0 ]; do\n"
    "  case $1 in --array=*) a=${1#--array=0-}; n=${a%%%*} ;; -*) ;; *) break ;; esac\n"
    "  shift\n"
    "done\n"
    "i=0\n"
    "while [ $i -le $n ]; do\n"
    "  [ \"$i\" = \"${FAKE_SKIP:-none}\" ] || SLURM_ARRAY_TASK_ID=$i sh \"$@\" >/dev/null 2>&1\n"
    "  i=$((i + 1))\n"
    "done\n"
    "echo 42\n";

static void write_exe(const char *name, const char *text)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s", fake, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
}

static int setup(void **state)
{
    dir = su_tempdir();
    snprintf(trace, sizeof trace, "%s/t.jsonl", dir);
    su_write_trace(trace, 60, 150);
    snprintf(fake, sizeof fake, "%s/bin", dir);
    assert_int_equal(mkdir(fake, 0777), 0);
    write_exe("sbatch", fake_sbatch);
    write_exe("squeue", "#!/bin/sh\nexit 0\n");
    write_exe("scancel", "#!/bin/sh\nexit 0\n");
    return 0;
}

static int teardown(void **state)
{
    su_rmrf(dir);
    free(dir);
    return 0;
}

/* `kvsim sweep` of GRID into db with extra options, the stand-ins first on
 * PATH and env before the command (e.g. "FAKE_SKIP=2"). */
static cli_result sweep(const char *env, const char *db, const char *extra)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "PATH='%s':\"$PATH\" FAKE_DIR='%s' %s %s sweep --trace '%s' --grid '%s' --db '%s' %s",
             fake, dir, env, tu_kvsim_bin(), trace, GRID, db, extra);
    return tu_shell(cmd);
}

static void expect(cli_result r, int status, const char *out, const char *err)
{
    if (r.status != status || (out && !strstr(r.out, out)) || (err && !strstr(r.err, err)))
        fail_msg("exit %d, stdout '%s', stderr '%s' (want %d, '%s', '%s')", r.status, r.out, r.err, status,
                 out ? out : "", err ? err : "");
    tu_free(&r);
}

/* Every run as "config hash summary" lines in hash order (no wall time). */
static char *runs_by_hash(const char *path)
{
    sqlite3 *db = su_open(path);
    sqlite3_stmt *st;
    assert_int_equal(
        sqlite3_prepare_v2(db, "SELECT config_hash, summary_json FROM runs ORDER BY config_hash", -1, &st, NULL),
        SQLITE_OK);
    size_t cap = 1 << 14, len = 0;
    char *out = calloc(1, cap);
    while (sqlite3_step(st) == SQLITE_ROW) {
        char *stable = su_stable_summary((const char *)sqlite3_column_text(st, 1));
        su_append(&out, &len, &cap, (const char *)sqlite3_column_text(st, 0));
        su_append(&out, &len, &cap, stable);
        su_append(&out, &len, &cap, "\n");
        free(stable);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
}

/* ---- --merge-parts -------------------------------------------------------- */

static void test_merge_parts_reports_missing(void **state)
{
    char db[600], jobs[700], args[1400];
    snprintf(db, sizeof db, "%s/emitted.db", dir);
    snprintf(jobs, sizeof jobs, "%s/jobs.txt", dir);
    snprintf(args, sizeof args, "--emit-jobs '%s'", jobs);
    expect(sweep("", db, args), 0, "wrote 6 commands", NULL);
    snprintf(args, sizeof args, "head -n 4 '%s' | sh >/dev/null 2>&1", jobs); /* 4 of 6 points land */
    assert_int_equal(system(args), 0);
    /* Points 5 and 6 (round_robin x 1, 2) are missing: exit 1, each named. */
    const char *missing = "  missing: policy.router=round_robin trace.speed=1\n"
                          "  missing: policy.router=round_robin trace.speed=2\n"
                          "kvsim sweep: 2 points missing";
    expect(sweep("", db, "--merge-parts"), 1, "merged 4 runs", NULL);
    cli_result r = sweep("", db, "--merge-parts"); /* again: nothing new, the same report */
    assert_non_null(strstr(r.out, "merged 0 runs"));
    assert_non_null(strstr(r.out, "4 of 6 points recorded"));
    expect(r, 1, missing, NULL);
    assert_double_equal(su_num(db, "SELECT COUNT(*) FROM runs"), 4, 0);
    snprintf(args, sizeof args, "tail -n 2 '%s' | sh >/dev/null 2>&1", jobs);
    assert_int_equal(system(args), 0);
    expect(sweep("", db, "--merge-parts"), 0, "6 of 6 points recorded", NULL);
    expect(sweep("", db, "--merge-parts"), 0, "merged 0 runs", NULL);
    assert_double_equal(su_num(db, "SELECT COUNT(*) FROM runs"), 6, 0);
    snprintf(args, sizeof args, "%s.parts", db);
    assert_int_not_equal(access(args, F_OK), 0); /* empty, removed */
}

/* ---- --slurm with stand-in commands ---------------------------------------- */

/* The argv the stand-in sbatch got, one word a line. */
static char *sbatch_args(void)
{
    char path[700];
    snprintf(path, sizeof path, "%s/sbatch.args", dir);
    return su_slurp_path(path);
}

/* The database of a local `kvsim sweep --jobs 2` of GRID (run once). */
static const char *local_db(void)
{
    static char local[600];
    if (!local[0]) {
        snprintf(local, sizeof local, "%s/local.db", dir);
        expect(sweep("", local, "--jobs 2"), 0, "6 points: 6 run", NULL);
    }
    return local;
}

static void test_slurm_argv_fail_resume(void **state)
{
    char sub[600], db[700], want[2400];
    const char *local = local_db();
    snprintf(sub, sizeof sub, "%s/a b%%c", dir); /* a space and a % in the path */
    assert_int_equal(mkdir(sub, 0777), 0);
    snprintf(db, sizeof db, "%s/slurm.db", sub);
    /* Task 2 (least_loaded x 1) never runs: that point fails, the rest land. */
    expect(
        sweep("FAKE_SKIP=2", db, "--slurm --jobs 2 --partition 'p q' --sbatch-args ' --time=5  --comment=\"x;y z\"'"),
        1, "6 points: 5 run, 0 already recorded, 1 failed",
        "FAILED policy.router=least_loaded trace.speed=1 (Slurm task 42_2 left no run");
    char *args = sbatch_args();
    snprintf(want, sizeof want,
             "--parsable\n--array=0-5%%2\n--output=%s/a b%%%%c/slurm.db.parts/slurm-%%A_%%a.log\n--chdir=", dir);
    assert_non_null(strstr(args, want));
    assert_non_null(strstr(args, "\n--job-name=kvsim-sweep\n--partition=p q\n--time=5\n--comment=x;y z\n"));
    snprintf(want, sizeof want, "/slurm.db.parts/slurm-task.sh\n");
    assert_non_null(strstr(args, want));
    snprintf(want, sizeof want, "\nsweep\n--array-task\n%s/a b%%c/slurm.db.parts/array-0.json\n", dir);
    assert_non_null(strstr(args, want));
    free(args);
    /* Run again: the missing point alone is submitted, and lands. */
    expect(sweep("", db, "--slurm"), 0, "6 points: 1 run, 5 already recorded, 0 failed",
           "submitted Slurm array job 42: 1 points");
    args = sbatch_args();
    assert_non_null(strstr(args, "\n--array=0-0%1000\n"));
    free(args);
    char *a = runs_by_hash(local), *b = runs_by_hash(db);
    assert_int_equal(su_count(a, "\n"), 6);
    assert_string_equal(a, b);
    free(a), free(b);
}

/* Parts are merged in grid order, as a local sweep merges them, whatever
 * order the tasks end in: here task 0 is still queued at the first look
 * (every other part has landed), so nothing is merged before it is. */
static void test_slurm_merges_in_grid_order(void **state)
{
    char db[600];
    const char *local = local_db();
    snprintf(db, sizeof db, "%s/order.db", dir);
    write_exe("squeue",
              "#!/bin/sh\n[ -e \"$FAKE_DIR/looked\" ] && exit 0\n: >\"$FAKE_DIR/looked\"\necho '42 0 RUNNING'\n");
    expect(sweep("", db, "--slurm"), 0, "6 points: 6 run", "[1/6] done policy.router=random trace.speed=1;");
    write_exe("squeue", "#!/bin/sh\nexit 0\n");
    const char *order = "SELECT group_concat(config_hash) FROM (SELECT config_hash FROM runs ORDER BY id)";
    char *a = tu_sql_text(local, order), *b = tu_sql_text(db, order);
    assert_int_equal(su_count(a, ","), 5);
    assert_string_equal(b, a);
    free(a), free(b);
}

/* plan slo --slurm: every probe one array (the stand-in runs it), the same
 * answer as the local search, wall time aside. */
static char *plan_json(const char *extra, const char *db)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "PATH='%s':\"$PATH\" FAKE_DIR='%s' %s plan slo --trace '%s' --speed 2 --ttft-p90-ms 2000 --tbt-p99-ms 50 "
             "--max-instances 4 --scopes global,local --cpp 1 --dram 1TB --json --db '%s/%s' %s",
             fake, dir, tu_kvsim_bin(), trace, dir, db, extra);
    cli_result r = tu_shell(cmd);
    json_t *j = json_loads(r.out, 0, NULL);
    if (!j) fail_msg("%s: exit %d, stderr '%s'", cmd, r.status, r.err);
    json_object_del(json_object_get(j, "search"), "wall_seconds");
    char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    int probes = su_count(r.err, "plan slo: probe ");
    assert_true(probes > 1);
    if (*extra) /* one array of the 2 scopes a probe */
        assert_int_equal(su_count(r.err, "submitted Slurm array job 42: 2 points"), probes);
    tu_free(&r);
    return s;
}

static void test_plan_slo_slurm_equals_local(void **state)
{
    char *local = plan_json("", "plan-local.db"), *slurm = plan_json("--slurm", "plan-slurm.db");
    assert_non_null(strstr(local, "\"probes\":"));
    assert_string_equal(slurm, local);
    free(local), free(slurm);
}

static void test_slurm_errors(void **state)
{
    char db[600], cmd[2048];
    snprintf(db, sizeof db, "%s/err.db", dir);
    expect(sweep("", db, "--partition p"), 2, NULL, "--partition needs --slurm");
    expect(sweep("", db, "--sbatch-args '--time=5'"), 2, NULL, "--sbatch-args needs --slurm");
    expect(sweep("", db, "--slurm --sbatch-args '--comment=\"open'"), 2, NULL,
           "--sbatch-args: a quote is not closed (quote as for a shell: 'a b' or \"a b\")");
    expect(sweep("", db, "--slurm --merge-parts"), 2, NULL, "exclude each other");
    write_exe("sbatch", "#!/bin/sh\necho 'sbatch: error: invalid partition specified: nope' >&2\nexit 1\n");
    expect(sweep("", db, "--slurm --partition nope"), 1, NULL,
           "sbatch failed (exit 1; its message is above): check --partition and --sbatch-args");
    write_exe("sbatch", fake_sbatch);
    /* An array of an earlier sweep on this database (killed) is still queued: no second submission. */
    snprintf(cmd, sizeof cmd, "%s.parts/slurm-task.sh", db);
    assert_int_not_equal(access(cmd, F_OK), 0); /* the failed submission left no job files */
    snprintf(cmd, sizeof cmd, "%s.parts/array-0.json", db);
    assert_int_not_equal(access(cmd, F_OK), 0);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s.parts' && echo 41 > '%s.parts/slurm-jobs'", db, db);
    assert_int_equal(system(cmd), 0);
    write_exe("squeue", "#!/bin/sh\necho '41 3 RUNNING'\n");
    expect(sweep("", db, "--slurm"), 1, NULL, "Slurm job 41 of an earlier sweep on");
    write_exe("squeue", "#!/bin/sh\necho '7 0 PENDING'\n"); /* gone: this sweep runs */
    expect(sweep("", db, "--slurm"), 0, "6 points: 6 run", "submitted Slurm array job 42: 6 points");
    /* No Slurm at all: PATH without sbatch. */
    snprintf(cmd, sizeof cmd, "PATH=/nonexistent %s sweep --trace '%s' --grid 'seed=1' --db '%s' --slurm",
             tu_kvsim_bin(), trace, db);
    expect(tu_shell(cmd), 1, NULL, "cannot run sbatch: is Slurm installed here");
    expect(tu_kvsim("sweep --array-task /nonexistent.json"), 2, NULL, "/nonexistent.json");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_parts_reports_missing),
        cmocka_unit_test(test_slurm_argv_fail_resume),
        cmocka_unit_test(test_slurm_merges_in_grid_order),
        cmocka_unit_test(test_plan_slo_slurm_equals_local),
        cmocka_unit_test(test_slurm_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
