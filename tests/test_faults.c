/* tests/test_faults.c — what kvsim does when the world is hostile (issue
 * 13): every output file appears whole or not at all (a full device, a
 * file-size limit, a missing folder exit 2 with the cause and leave no
 * partial file or temporary behind); the probe and calibrate reject bad
 * arguments with exit 2 before measuring; a read-only results database is
 * reported, not called "not a database"; a capacity tide larger than the
 * cluster is refused; and a run's cost follows its work: a 1000-hour idle
 * gap costs a handful of events, the samples skipped across idle spans are
 * exactly the rows of sampling every period (checked against a run whose
 * PD controller forces every tick to be computed), and a run whose events
 * or rows outgrow its work stops with the reason. Issue 27: a link or file
 * planted at an output's temporary name, or in a report's folder, is never
 * followed nor truncated, and a result lost on its way to standard output
 * (a full device) is exit 2 naming the cause. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>

/* `ulimit -f blocks; exec kvsim args` (blocks of 1024 bytes). */
static cli_result kvsim_limited(int blocks, const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "ulimit -f %d; exec %s %s", blocks, tu_kvsim_bin(), args);
    return tu_shell(cmd);
}

static void expect(cli_result r, int status, const char *needle, const char *what)
{
    if (r.status != status || !strstr(r.err, needle))
        fail_msg("%s: exit %d, stderr '%s' (want %d and '%s')", what, r.status, r.err, status, needle);
    tu_free(&r);
}

/* No file in dir whose name starts with base and holds ".tmp.". */
static void assert_no_temporaries(const char *dir, const char *base)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (!strncmp(e->d_name, base, strlen(base)) && strstr(e->d_name, ".tmp."))
            fail_msg("temporary %s/%s left behind", dir, e->d_name);
    closedir(d);
}

static void test_trace_output_faults(void **state)
{
    expect(tu_kvsim("trace gen --requests 5000 -o /dev/full"), 2, "No space left on device", "trace gen to /dev/full");
    char dir[] = "/tmp/kvsim-faults-XXXXXX", path[256], args[512];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.jsonl", dir);
    snprintf(args, sizeof args, "trace gen --requests 5000 -o %s", path);
    expect(kvsim_limited(4, args), 2, "File too large", "trace gen under ulimit -f 4");
    assert_int_equal(access(path, F_OK), -1); /* nothing half-written */
    FILE *f = fopen(path, "w");               /* an existing file stays as it was */
    fputs("keep\n", f);
    fclose(f);
    expect(kvsim_limited(4, args), 2, "File too large", "trace gen over an existing file");
    f = fopen(path, "r");
    char *kept = tu_slurp(f);
    fclose(f);
    assert_string_equal(kept, "keep\n");
    free(kept);
    assert_no_temporaries(dir, "t.jsonl");
    snprintf(args, sizeof args, "trace gen --requests 5 -o %s/no/such/t.jsonl", dir);
    expect(tu_kvsim(args), 2, "no/such: No such file or directory", "trace gen into a missing folder");
    snprintf(args, sizeof args, "trace gen --requests 5 -o %s", path); /* and the rename works */
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    assert_no_temporaries(dir, "t.jsonl");
    unlink(path);
    rmdir(dir);
}

static void test_db_and_baseline_faults(void **state)
{
    char *db = tu_temp_path(), args[512];
    snprintf(args, sizeof args, "run --db %s", db);
    expect(kvsim_limited(64, args), 2, "File too large", "run --db under ulimit -f 64");
    tu_remove_temp(db);
    expect(tu_kvsim("check --baseline tests/baselines/default.json --write-baseline /dev/full"), 2,
           "cannot write /dev/full: No space left on device", "check --write-baseline /dev/full");
    expect(tu_kvsim("calibrate --run-probe --out /nonexistent-kvsim/c.json"), 2, "folder /nonexistent-kvsim",
           "calibrate into a missing folder");
}

/* The probe's usage errors are exit 2, before anything is measured. */
static void test_probe_arguments(void **state)
{
    const char *probe = getenv("KVSIM_PROBE") ? getenv("KVSIM_PROBE") : "build/kvsim-probe";
    if (access(probe, X_OK)) {
        printf("skip: %s not built\n", probe);
        skip();
    }
    static const char *const cases[][2] = {
        {"--threads 100000", "--threads: expected 1..256"},
        {"--threads 0", "--threads: expected 1..256"},
        {"--backends gpu", "unknown backend 'gpu' (known: cpu, cuda)"},
        {"--tokens 1,,2", "--tokens: expected a comma list"},
        {"--tokens 16,", "--tokens: expected a comma list"},
        {"--reps ''", "--reps: expected 1..100000"},
        {"--ssd-dir /nonexistent-kvsim/ssd", "--ssd-dir: its parent folder does not exist"},
        {"--out /nonexistent-kvsim/p.json", "folder /nonexistent-kvsim"},
        {"--shapes tiny --tokens 16 --reps 1 --warmup 1 --no-ssd --backends cpu --out /dev/full",
         "No space left on device"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "%s --quiet %s", probe, cases[i][0]);
        expect(tu_shell(cmd), 2, cases[i][1], cmd);
    }
    expect(tu_kvsim("calibrate --run-probe --out /tmp/kvsim-cal.json --probe-args '--threads 100000'"), 2,
           "exit status 2", "calibrate with a bad probe argument");
}

/* A WAL results database on a read-only mount (a private mount namespace:
 * needs unshare and the right to mount; skipped with the reason otherwise). */
static void test_report_read_only_db(void **state)
{
    if (!tu_have_gnuplot()) skip();
    char dir[] = "/tmp/kvsim-ro-XXXXXX", args[1024];
    assert_non_null(mkdtemp(dir));
    snprintf(args, sizeof args, "run --db %s/r.db", dir);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    snprintf(args, sizeof args,
             "unshare -m sh -c 'mount --bind -o ro %s %s && mount -o remount,ro,bind %s && touch %s/w 2>/dev/null "
             "&& echo writable; exec %s report --db %s/r.db --out %s-out'",
             dir, dir, dir, dir, tu_kvsim_bin(), dir, dir);
    r = tu_shell(args);
    if (strstr(r.err, "unshare") || strstr(r.err, "mount") || strstr(r.out, "writable")) {
        printf("skip: cannot make a read-only mount here (%s)\n", r.err);
        tu_free(&r);
        skip();
    }
    if (r.status != 0) fail_msg("report on a read-only database: exit %d, %s", r.status, r.err);
    tu_free(&r);
    snprintf(args, sizeof args, "rm -rf %s %s-out", dir, dir);
    assert_int_equal(system(args), 0);
}

static void test_tide_larger_than_cluster(void **state)
{
    tu_expect_exit("run --set policy.pd_controller=dynamic --set 'policy.params.tide=[[0,4],[100,9]]'", 2,
                   "policy.params.tide[1]: 9 instances, but the cluster has 8");
}

/* Two requests 1000 simulated hours apart: a handful of events, and the
 * samples still show the last idle tick before the second arrival. */
static void test_idle_gap_costs_nothing(void **state)
{
    char *trace = tu_write_temp("{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 10, \"hash_ids\": [1]}\n"
                                "{\"timestamp\": 3600000000, \"input_length\": 100, \"output_length\": 10, "
                                "\"hash_ids\": [2]}\n");
    char *db = tu_temp_path(), args[1024];
    snprintf(args, sizeof args, "run --trace %s --db %s --set metrics.replica_period_ms=1000 --json", trace, db);
    json_t *s = tu_kvsim_json(args);
    assert_int_equal(tu_int_field(s, "completed"), 2);
    if (tu_int_field(s, "events") > 100) fail_msg("%lld events for two requests", (long long)tu_int_field(s, "events"));
    json_decref(s);
    char *last = tu_sql_text(db, "SELECT MAX(t_ms) FROM samples WHERE t_ms < 3600000000");
    assert_string_equal(last, "3599999000.0");
    free(last);
    tu_remove_temp(db);
    tu_remove_temp(trace);
}

static char *samples_of(const char *db)
{
    return tu_sql_text(db, "SELECT group_concat(r, char(10)) FROM (SELECT t_ms || '|' || instance || '|' || role || "
                           "'|' || state || '|' || queue_len || '|' || load || '|' || batch || '|' || kv_used AS r "
                           "FROM samples ORDER BY t_ms, instance)");
}

/* The oracle for skipping: a PD controller that never moves (pd_period_s
 * longer than the trace) disables the skip, so every tick is computed; the
 * samples rows must be the same, at several row strides, on a sparse trace
 * whose idle gaps are many periods long. */
static void test_idle_skip_equals_every_tick(void **state)
{
    char *trace = tu_temp_path(), args[1024];
    snprintf(args, sizeof args, "trace gen --requests 120 --rate 0.02 --seed 3 -o %s", trace);
    cli_result g = tu_kvsim(args);
    assert_int_equal(g.status, 0);
    tu_free(&g);
    static const char *const strides[] = {"0", "0.37", "3"};
    for (size_t i = 0; i < 3; i++) {
        char *db[2] = {tu_temp_path(), tu_temp_path()}, *rows[2];
        int64_t events[2];
        for (int k = 0; k < 2; k++) {
            snprintf(
                args, sizeof args,
                "run --trace %s --db %s --json --set metrics.sample_rows_per_s=%s --set metrics.sample_period_ms=700"
                "%s",
                trace, db[k], strides[i],
                k ? " --set policy.pd_controller=dynamic --set policy.params.pd_period_s=1e8" : "");
            json_t *s = tu_kvsim_json(args);
            events[k] = tu_int_field(s, "events");
            json_decref(s);
            rows[k] = samples_of(db[k]);
            tu_remove_temp(db[k]);
        }
        printf("sample_rows_per_s=%s: %lld events skipping idle ticks, %lld computing every tick\n", strides[i],
               (long long)events[0], (long long)events[1]);
        assert_true(events[0] < events[1]);
        assert_true(strlen(rows[0]) > 100);
        assert_string_equal(rows[0], rows[1]);
        free(rows[0]), free(rows[1]);
    }
    tu_remove_temp(trace);
}

/* limits.event_budget: rows (a 1 ms sample period, no row bound) and events
 * (every idle tick computed across a 1000-hour gap) both stop the run. */
static void test_work_bound(void **state)
{
    char *db = tu_temp_path(), args[1024], more[1200];
    snprintf(args, sizeof args,
             "run --db %s --set metrics.sample_period_ms=1 --set metrics.sample_rows_per_s=0 "
             "--set limits.event_budget=1",
             db);
    tu_expect_exit(args, 2, "results rows at simulated time");
    tu_remove_temp(db);
    char *trace = tu_write_temp("{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 10, \"hash_ids\": [1]}\n"
                                "{\"timestamp\": 3600000000, \"input_length\": 100, \"output_length\": 10, "
                                "\"hash_ids\": [2]}\n");
    snprintf(args, sizeof args, "run --trace %s --set policy.pd_controller=dynamic --set policy.params.pd_period_s=1e8",
             trace);
    tu_expect_exit(args, 2, "events at simulated time");
    snprintf(more, sizeof more, "%s --set limits.event_budget=0 --set metrics.sample_period_ms=10000000", args);
    cli_result r = tu_kvsim(more);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    tu_remove_temp(trace);
}

/* ---- planted links and standard output (issue 27) ------------------------------------ */

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void expect_text(const char *path, const char *want)
{
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("%s: missing", path);
    char *got = tu_slurp(f);
    fclose(f);
    if (strcmp(got, want)) fail_msg("%s holds '%.80s', want '%s'", path, got, want);
    free(got);
}

static void expect_regular(const char *path)
{
    struct stat st;
    if (lstat(path, &st) || !S_ISREG(st.st_mode) || st.st_size == 0)
        fail_msg("%s is not a non-empty regular file", path);
}

/* `ln -s VICTIM DEST.tmp.$$; echo mine > DEST.tmp.$$.1; exec kvsim ARGS`:
 * a link at the exact temporary name the output takes first (exec keeps the
 * shell's pid) and a file at the next one. Neither is followed nor
 * truncated: the victim and the file keep their text, both stay as planted,
 * and DEST is a new regular file. */
static void expect_planted_temp_ignored(const char *dir, const char *dest, const char *args)
{
    char victim[512], cmd[4096];
    snprintf(victim, sizeof victim, "%s/victim.txt", dir);
    write_text(victim, "victim\n");
    snprintf(cmd, sizeof cmd, "ln -s %s %s.tmp.$$ && echo mine > %s.tmp.$$.1 && exec %s %s", victim, dest, dest,
             tu_kvsim_bin(), args);
    cli_result r = tu_shell(cmd);
    if (r.status) fail_msg("%s: exit %d: %s", cmd, r.status, r.err);
    tu_free(&r);
    expect_text(victim, "victim\n");
    expect_regular(dest);
    const char *base = strrchr(dest, '/') + 1;
    int links = 0, files = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strncmp(e->d_name, base, strlen(base)) || !strstr(e->d_name, ".tmp.")) continue;
        char path[1024];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        assert_int_equal(lstat(path, &st), 0);
        if (S_ISLNK(st.st_mode)) {
            links++;
        } else {
            expect_text(path, "mine\n");
            files++;
        }
        unlink(path);
    }
    closedir(d);
    if (links != 1 || files != 1) fail_msg("%s: %d planted links and %d files left, want 1 and 1", dest, links, files);
}

/* Every output written through a temporary name: export (the issue's
 * reproducer), trace gen, sweep --emit-jobs, check --write-baseline and
 * calibrate --out. */
static void test_planted_temp_link(void **state)
{
    char dir[] = "/tmp/kvsim-plant-XXXXXX", dest[256], args[2048], trace[PATH_MAX];
    assert_non_null(mkdtemp(dir));
    assert_non_null(realpath("traces/default.jsonl", trace));
    snprintf(args, sizeof args, "run --db %s/gp.db", dir);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    snprintf(dest, sizeof dest, "%s/out.csv", dir);
    snprintf(args, sizeof args, "export --db %s/gp.db -o %s", dir, dest);
    expect_planted_temp_ignored(dir, dest, args);
    FILE *f = fopen(dest, "r");
    char *csv = tu_slurp(f);
    fclose(f);
    assert_true(!strncmp(csv, "id,created,", 11));
    free(csv);
    snprintf(dest, sizeof dest, "%s/t.jsonl", dir);
    snprintf(args, sizeof args, "trace gen --requests 5 -o %s", dest);
    expect_planted_temp_ignored(dir, dest, args);
    snprintf(dest, sizeof dest, "%s/jobs.txt", dir);
    snprintf(args, sizeof args, "sweep --grid policy.router=random,least_loaded --db %s/s.db --emit-jobs %s", dir,
             dest);
    expect_planted_temp_ignored(dir, dest, args);
    snprintf(dest, sizeof dest, "%s/b.json", dir);
    snprintf(args, sizeof args, "%s/in.json", dir);
    char body[PATH_MAX + 256];
    snprintf(body, sizeof body,
             "{\"kvsim_baseline\": 1, \"tolerance\": 0.002, \"measurements\": [{\"name\": \"x\", \"kind\": "
             "\"hitrate\", \"args\": {\"trace\": \"%s\", \"policy\": \"lru\", \"capacity_tokens\": \"inf\"}}]}",
             trace);
    write_text(args, body);
    snprintf(args, sizeof args, "check --baseline %s/in.json --write-baseline %s", dir, dest);
    expect_planted_temp_ignored(dir, dest, args);
    snprintf(dest, sizeof dest, "%s/c.json", dir);
    snprintf(args, sizeof args, "calibrate --probe-json configs/calibration/cpu-local.probe.json --out %s", dest);
    expect_planted_temp_ignored(dir, dest, args);
    snprintf(args, sizeof args, "rm -rf %s", dir);
    assert_int_equal(system(args), 0);
}

/* `kvsim report -o DIR` names its files itself: links planted in DIR under
 * those names (the page, a figure's data, script and images, the configs
 * folder) are replaced by the report's files, never written through. */
static void test_report_planted_links(void **state)
{
    if (!tu_have_gnuplot()) skip();
    char dir[] = "/tmp/kvsim-plantrep-XXXXXX", path[512], victim[512], args[1024];
    assert_non_null(mkdtemp(dir));
    snprintf(args, sizeof args, "run --db %s/r.db", dir);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    snprintf(victim, sizeof victim, "%s/victim.txt", dir);
    write_text(victim, "victim\n");
    snprintf(path, sizeof path, "%s/rep", dir);
    assert_int_equal(mkdir(path, 0777), 0);
    snprintf(path, sizeof path, "%s/elsewhere", dir);
    assert_int_equal(mkdir(path, 0777), 0);
    static const char *const names[] = {"index.html", "cache.dat", "cache.gp", "cache.svg", "cache.png", "cache.pdf"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/rep/%s", dir, names[i]);
        assert_int_equal(symlink(victim, path), 0);
    }
    snprintf(args, sizeof args, "%s/elsewhere", dir);
    snprintf(path, sizeof path, "%s/rep/configs", dir);
    assert_int_equal(symlink(args, path), 0);
    snprintf(args, sizeof args, "report --db %s/r.db -o %s/rep", dir, dir);
    tu_expect_stdout(args, "kvsim report: ");
    expect_text(victim, "victim\n");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/rep/%s", dir, names[i]);
        expect_regular(path);
    }
    snprintf(path, sizeof path, "%s/rep/configs/run1.json", dir);
    expect_regular(path);
    snprintf(path, sizeof path, "%s/elsewhere/run1.json", dir);
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof path, "%s/rep", dir);
    DIR *d = opendir(path);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strstr(e->d_name, ".kvsim-report-")) fail_msg("staging folder %s/%s left behind", path, e->d_name);
    closedir(d);
    snprintf(args, sizeof args, "rm -rf %s", dir);
    assert_int_equal(system(args), 0);
}

/* A result printed to a full device is an error (exit 2 naming the cause),
 * for every command that prints one; a command that failed keeps its own
 * status; an output file given as "-" says it once. */
static void test_stdout_full(void **state)
{
    char *db = tu_temp_path(), *bl = tu_temp_path(), trace[PATH_MAX], cmd[8192], body[PATH_MAX + 256];
    assert_non_null(realpath("traces/default.jsonl", trace));
    const char *const cases[] = {
        "run",
        "run --json",
        "trace stats traces/default.jsonl",
        "trace stats --json traces/default.jsonl",
        "plan --trace traces/default.jsonl --target 0.5",
        "plan crossover",
        "hitrate --trace traces/default.jsonl",
        "policies",
        "config",
        "config --schema",
        "cost",
        "sweep --jobs 1 --grid policy.router=random --db %s",
        "check --baseline tests/baselines/default.json",
        "--version",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[1024];
        snprintf(args, sizeof args, cases[i], db);
        snprintf(cmd, sizeof cmd, "{ %s %s >/dev/full; }", tu_kvsim_bin(), args);
        expect(tu_shell(cmd), 2, "writing standard output: No space left on device", args);
    }
    unlink(db);
    snprintf(body, sizeof body,
             "{\"kvsim_baseline\": 1, \"tolerance\": 0.002, \"measurements\": [{\"name\": \"x\", \"kind\": "
             "\"hitrate\", \"args\": {\"trace\": \"%s\", \"policy\": \"lru\", \"capacity_tokens\": \"inf\"}, "
             "\"expect\": {\"hit_rate_blocks\": 0.1}}]}",
             trace);
    write_text(bl, body);
    snprintf(cmd, sizeof cmd, "{ %s check --baseline %s >/dev/full; }", tu_kvsim_bin(), bl);
    expect(tu_shell(cmd), 3, "kvsim check: writing standard output: No space left on device", "a moved number");
    /* 5 requests stay in stdio's buffer until the close; 500 fail while written */
    static const char *const dashes[] = {"trace gen --requests 5 -o -", "trace gen --requests 500 -o -"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "{ %s %s >/dev/full; }", tu_kvsim_bin(), dashes[i]);
        cli_result r = tu_shell(cmd);
        if (r.status != 2 || !strstr(r.err, "No space left on device") || strstr(r.err, "standard output"))
            fail_msg("%s >/dev/full: exit %d, %s", dashes[i], r.status, r.err);
        tu_free(&r);
    }
    tu_remove_temp(bl);
    free(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_output_faults),
        cmocka_unit_test(test_db_and_baseline_faults),
        cmocka_unit_test(test_probe_arguments),
        cmocka_unit_test(test_report_read_only_db),
        cmocka_unit_test(test_tide_larger_than_cluster),
        cmocka_unit_test(test_idle_gap_costs_nothing),
        cmocka_unit_test(test_idle_skip_equals_every_tick),
        cmocka_unit_test(test_work_bound),
        cmocka_unit_test(test_planted_temp_link),
        cmocka_unit_test(test_report_planted_links),
        cmocka_unit_test(test_stdout_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
