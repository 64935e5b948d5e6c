/* tests/test_silent.c — smaller silent answers (issue 27, item 7): each
 * case used to pass quietly with a wrong or meaningless answer.
 *
 * - a run with no completed request has no TTFT or TBT: its summary holds
 *   null (not 0.0), the text prints "—", export leaves the cell empty,
 *   check matches null only with null, and report shows "—" and never
 *   highlights it as the best value;
 * - calibrate --layers-json refuses a point measured twice, an unknown
 *   format version and a probe that stopped early;
 * - keys set by the user that a run does not read (cost.noise in the
 *   aggregated model, cost.prefill_mfu and hardware.hbm_efficiency under
 *   profile tables) are named in one warning each;
 * - an integer key's range error prints every digit;
 * - a report that cannot be written (file-size limit) exits 2 with the
 *   cause and leaves no empty, cut or temporary file;
 * - export refuses a run whose summary report refuses;
 * - the "about" comments do not enter config_hash.
 * (kvsim check's empty list, negative tolerance and unknown format are in
 * tests/test_check.c's bad baselines.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "sim/config/schema.h"
#include "tests/testutil.h"

/* Every request is refused at arrival (a TTFT SLO of 1 µs under slo_reject):
 * nothing completes. */
#define NONE_COMPLETES "--set trace.limit=20 --set policy.admission='\"slo_reject\"' --set slo.ttft_ms=0.001"

static const char *const stats[] = {"mean", "p50", "p90", "p99"};

static void test_zero_completed_summary(void **state)
{
    json_t *s = tu_kvsim_json("run --json " NONE_COMPLETES);
    assert_int_equal(tu_int_field(s, "completed"), 0);
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 4; k++) {
            const json_t *v = json_object_get(json_object_get(s, d ? "tbt_ms" : "ttft_ms"), stats[k]);
            if (!json_is_null(v)) fail_msg("%s.%s is not null", d ? "tbt_ms" : "ttft_ms", stats[k]);
        }
    assert_true(json_is_null(json_object_get(s, "prefill_gpu_s_mean")));
    json_decref(s);
    /* a run that completes requests keeps its numbers */
    s = tu_kvsim_json("run --json --set trace.limit=20");
    assert_true(json_number_value(json_object_get(json_object_get(s, "ttft_ms"), "mean")) > 0);
    json_decref(s);
    const char *const text[] = {"TTFT ms    mean          —  p50          —  p90          —  p99          —",
                                "TBT ms     mean          —  p50          —  p90          —  p99          —",
                                "prefill GPU — s/request"};
    tu_expect_all("run " NONE_COMPLETES, text, 3);
}

/* The cell of column `name` in the first data row of a TSV table. */
static char *tsv_cell(const char *table, const char *name)
{
    const char *row = strchr(table, '\n') + 1, *h = table;
    for (;;) {
        size_t n = strcspn(h, "\t\n");
        if (n == strlen(name) && !strncmp(h, name, n)) return strndup(row, strcspn(row, "\t\n"));
        if (h[n] != '\t') fail_msg("no column %s", name);
        h += n + 1;
        row += strcspn(row, "\t\n") + 1;
    }
}

static void test_zero_completed_export(void **state)
{
    char *db = tu_temp_path(), args[1024];
    snprintf(args, sizeof args, "run --db %s " NONE_COMPLETES, db);
    tu_expect_exit(args, 0, NULL);
    snprintf(args, sizeof args, "export --format tsv --db %s", db);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    char *cell = tsv_cell(r.out, "summary.ttft_ms.mean"), *done = tsv_cell(r.out, "summary.completed");
    assert_string_equal(cell, ""); /* was 0.0 */
    assert_string_equal(done, "0");
    free(cell);
    free(done);
    tu_free(&r);
    tu_remove_temp(db);
}

/* A baseline records null for a statistic of no request; null matches
 * only null, and a number expected where null comes back has moved. */
static void test_zero_completed_check(void **state)
{
    char cwd[PATH_MAX], text[PATH_MAX + 1024], args[1024];
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(text, sizeof text,
             "{\"kvsim_baseline\": 1, \"tolerance\": 0.01, \"measurements\": [{\"name\": \"none\", \"kind\": \"run\", "
             "\"args\": {\"trace\": \"%s/traces/default.jsonl\", \"set\": {\"trace.limit\": 20, \"policy.admission\": "
             "\"slo_reject\", \"slo.ttft_ms\": 0.001}}}]}",
             cwd);
    char *b = tu_write_temp(text);
    snprintf(args, sizeof args, "check --baseline %s --write-baseline %s", b, b);
    tu_expect_stdout(args, "recorded 13 numbers");
    json_t *base = json_load_file(b, 0, NULL), *m = json_array_get(json_object_get(base, "measurements"), 0);
    json_t *expect = json_object_get(m, "expect");
    assert_true(json_is_null(json_object_get(expect, "ttft_ms.p90")));
    snprintf(args, sizeof args, "check --baseline %s", b);
    tu_expect_stdout(args, "all 13 numbers within tolerance");
    json_object_set_new(expect, "ttft_ms.p90", json_real(5.0));
    json_dump_file(base, b, 0);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 3);
    assert_non_null(strstr(r.out, "ttft_ms.p90        5.000000          —          —"));
    tu_free(&r);
    json_decref(base);
    tu_remove_temp(b);
}

/* The page of a report of a run with no completed request and one with:
 * the first's latency cells are "—", the best TTFT is the second's. */
static void test_zero_completed_report(void **state)
{
    if (!tu_have_gnuplot()) skip();
    char *db = tu_temp_path(), *dir = tu_temp_path(), args[1024];
    snprintf(args, sizeof args, "run --db %s " NONE_COMPLETES, db);
    tu_expect_exit(args, 0, NULL);
    snprintf(args, sizeof args, "run --db %s --set trace.limit=20", db);
    tu_expect_exit(args, 0, NULL);
    snprintf(args, sizeof args, "report --db %s -o %s", db, dir);
    tu_expect_exit(args, 0, NULL);
    snprintf(args, sizeof args, "%s/index.html", dir);
    FILE *f = fopen(args, "r");
    assert_non_null(f);
    char *html = tu_slurp(f);
    fclose(f);
    char *row = strstr(html, "<tr data-run=\"1\">");
    assert_non_null(row);
    *strstr(row, "</tr>") = 0;
    assert_non_null(strstr(row, "<td>—</td><td>—</td><td>—</td><td>—</td><td>—</td>")); /* TTFT ×3, TBT ×2 */
    if (strstr(row, "class=\"best\"")) fail_msg("run 1, which completed nothing, has a best value: %s", row);
    free(html);
    snprintf(args, sizeof args, "rm -rf %s", dir);
    assert_int_equal(system(args), 0);
    free(dir);
    tu_remove_temp(db);
}

/* ---- calibrate --layers-json ----------------------------------------------------- */

#define LAYERS "configs/calibration/h100.layers.json"

/* The recorded H100 layer probe, changed by edit, through calibrate: exit 2
 * with want on stderr. */
static void expect_layers_refused(void (*edit)(json_t *doc), const char *want)
{
    json_t *doc = json_load_file(LAYERS, 0, NULL);
    assert_non_null(doc);
    edit(doc);
    char *path = tu_temp_path(), args[1024];
    json_dump_file(doc, path, 0);
    json_decref(doc);
    snprintf(args, sizeof args,
             "calibrate --probe-json configs/calibration/h100.probe.json --out /tmp/kvsim-never.json "
             "--layers-json %s --hardware h100x1",
             path);
    tu_expect_exit(args, 2, want);
    tu_remove_temp(path);
}

static json_t *first_model(json_t *doc) { return json_array_get(json_object_get(doc, "models"), 0); }

/* prefill[0] again, 300× slower: the later used to win the grid */
static void duplicate_prefill(json_t *doc)
{
    json_t *pre = json_object_get(first_model(doc), "prefill"), *again = json_deep_copy(json_array_get(pre, 0));
    json_object_set_new(again, "ms", json_real(json_number_value(json_object_get(again, "ms")) * 300));
    json_array_append_new(pre, again);
}

static void duplicate_decode(json_t *doc)
{
    json_t *dec = json_object_get(first_model(doc), "decode");
    json_array_append_new(dec, json_deep_copy(json_array_get(dec, 0)));
}

static void version_2(json_t *doc) { json_object_set_new(doc, "version", json_integer(2)); }
static void truncated(json_t *doc) { json_object_set_new(first_model(doc), "truncated", json_true()); }

static void test_calibrate_layers_refused(void **state)
{
    json_t *doc = json_load_file(LAYERS, 0, NULL);
    json_t *m = first_model(doc), *p0 = json_array_get(json_object_get(m, "prefill"), 0),
           *d0 = json_array_get(json_object_get(m, "decode"), 0);
    char want[512];
    size_t np = json_array_size(json_object_get(m, "prefill")), nd = json_array_size(json_object_get(m, "decode"));
    snprintf(want, sizeof want,
             "model %s: prefill[0] and prefill[%zu] are the same point (new %lld, cached %lld), measured %g ms and "
             "%g ms: keep one",
             json_string_value(json_object_get(m, "name")), np, (long long)tu_int_field(p0, "new"),
             (long long)tu_int_field(p0, "cached"), json_number_value(json_object_get(p0, "ms")),
             json_number_value(json_object_get(p0, "ms")) * 300);
    expect_layers_refused(duplicate_prefill, want);
    snprintf(want, sizeof want, "decode[0] and decode[%zu] are the same point (batch %lld, context %lld)", nd,
             (long long)tu_int_field(d0, "batch"), (long long)tu_int_field(d0, "context"));
    expect_layers_refused(duplicate_decode, want);
    json_decref(doc);
    expect_layers_refused(version_2, "version: 2 is not a layer probe format it knows; this kvsim reads version 1");
    expect_layers_refused(truncated, "truncated: the probe stopped before measuring every point (--max-seconds ran "
                                     "out); rerun datapath/probe/layer_probe.py with a longer --max-seconds");
}

/* decode[1] at 1e300 ms (issue 40 item 7): accepted, it overflowed the fit of its neighbours to 0 ms */
static void absurd_decode(json_t *doc)
{
    json_object_set_new(json_array_get(json_object_get(first_model(doc), "decode"), 1), "ms", json_real(1e300));
}

static void test_calibrate_layers_implausible(void **state)
{
    expect_layers_refused(
        absurd_decode, "decode[1].ms: 1e+300 ms for one layer is not a measurement (at most 100000 ms; a unit error?)");
}

/* ---- keys that have no effect ------------------------------------------------------ */

/* stderr of `kvsim run args` (exit 0). */
static char *run_stderr(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "run --set trace.limit=20 %s", args);
    cli_result r = tu_kvsim(cmd);
    if (r.status != 0) fail_msg("kvsim %s: exit %d: %s", cmd, r.status, r.err);
    free(r.out);
    return r.err;
}

static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p++) n++;
    return n;
}

static void test_idle_keys_warned(void **state)
{
    char *e = run_stderr("--set cluster.mode='\"aggregated\"' --set cost.noise=0.1");
    assert_int_equal(count(e, "kvsim run: warning: cost.noise = 0.1 has no effect here: the aggregated model"), 1);
    free(e);
    /* vLLM's prefix caching and chunked prefill are an aggregated instance's */
    e = run_stderr("--set engine.chunked_prefill=false --set engine.prefix_caching=false");
    assert_int_equal(count(e, "warning: engine.chunked_prefill = false has no effect here: chunked prefill is an "
                              "aggregated instance's"),
                     1);
    assert_int_equal(count(e, "warning: engine.prefix_caching = false has no effect here"), 1);
    free(e);
    /* an aggregated cluster without LMCache has no tier below HBM; with it, DRAM is its CPU pool */
    e = run_stderr("--set cluster.mode='\"aggregated\"' --set kvstore.dram_bytes=250GB --set kvstore.ssd_bytes=1TB");
    assert_int_equal(count(e, "warning: kvstore.dram_bytes = \"250GB\" has no effect here: cluster.mode is aggregated "
                              "and kvstore.lmcache is off"),
                     1);
    assert_int_equal(count(e, "warning: kvstore.ssd_bytes = \"1TB\" has no effect here"), 1);
    free(e);
    e = run_stderr("--config configs/clusters/lmcache-cpu-offload.json --set kvstore.dram_bytes=20GB");
    assert_int_equal(count(e, "kvstore.dram_bytes = \"20GB\" has no effect here"), 0);
    free(e);
    /* it truly has none: the summaries with and without it are the same */
    json_t *a = tu_kvsim_json("run --json --set trace.limit=50 --set cluster.mode='\"aggregated\"'"),
           *b = tu_kvsim_json(
               "run --json --set trace.limit=50 --set cluster.mode='\"aggregated\"' --set cost.noise=0.3");
    json_object_del(a, "wall_seconds"), json_object_del(b, "wall_seconds");
    assert_true(json_equal(a, b));
    json_decref(a), json_decref(b);
    const char *const quiet[] = {
        "--set cluster.mode='\"aggregated\"' --set cost.noise=0.0", /* the default, as a real */
        "--set cost.noise=0.1",                                     /* disaggregated: read */
        "--set hardware=h100x1 --set model=llama3.1-8b --set cost.prefill_mfu=0.45 "
        "--set hardware.hbm_efficiency=0.7234",                          /* the default and the preset's value */
        "--set cost.prefill_mfu=0.6 --set hardware.hbm_efficiency=0.8"}; /* analytic: read */
    for (size_t i = 0; i < sizeof quiet / sizeof quiet[0]; i++) {
        e = run_stderr(quiet[i]);
        if (strstr(e, "has no effect")) fail_msg("%s: %s", quiet[i], e);
        free(e);
    }
    e = run_stderr("--set hardware=h100x1 --set model=llama3.1-8b --set cost.compute=profile "
                   "--set cost.prefill_mfu=0.6 --set hardware.hbm_efficiency=0.8");
    assert_int_equal(count(e, "warning: cost.prefill_mfu = 0.6 has no effect here: the hardware's calibration file "
                              "gives this model's prefill and decode times measured on its GPUs"),
                     1);
    assert_int_equal(count(e, "warning: hardware.hbm_efficiency = 0.8 has no effect here"), 1);
    free(e);
}

/* The engine mode's keys and the overheads it replaces: each warned once
 * where it does nothing, silent where it is read. */
static void test_engine_keys_warned(void **state)
{
    static const struct {
        const char *args, *want;
    } loud[] = {
        {"--set cluster.mode='\"aggregated\"' --set cost.decode_overhead_ms=5",
         "warning: cost.decode_overhead_ms = 5 has no effect here: cost.compute is the engine mode"},
        {"--set cluster.mode='\"aggregated\"' --set cost.prefill_chunk_overhead_ms=2",
         "warning: cost.prefill_chunk_overhead_ms = 2 has no effect here: cost.compute is the engine mode"},
        {"--set engine.iter_overhead_ms=2", "warning: engine.iter_overhead_ms = 2 has no effect here: cost.compute is "
                                            "not the engine mode"},
        {"--set engine.frontend_ms=5",
         "warning: engine.frontend_ms = 5 has no effect here: the API server's latency is an aggregated instance's"},
        {"--set engine.async_scheduling=false", "warning: engine.async_scheduling = false has no effect here"},
    };
    for (size_t i = 0; i < sizeof loud / sizeof loud[0]; i++) {
        char *e = run_stderr(loud[i].args);
        if (count(e, loud[i].want) != 1 || count(e, "has no effect") != 1)
            fail_msg("%s: want once '%s', got: %s", loud[i].args, loud[i].want, e);
        free(e);
    }
    const char *const quiet[] = {
        "--set cluster.mode='\"aggregated\"' --set engine.frontend_ms=5 --set engine.iter_overhead_ms=2",
        "--set cost.compute=engine --set engine.seq_overhead_ms=0.1", /* disaggregated, engine mode: read */
        "--set cost.decode_overhead_ms=5",                            /* disaggregated, analytic: read */
    };
    for (size_t i = 0; i < sizeof quiet / sizeof quiet[0]; i++) {
        char *e = run_stderr(quiet[i]);
        if (strstr(e, "has no effect")) fail_msg("%s: %s", quiet[i], e);
        free(e);
    }
}

/* ---- an integer key's range, exactly ---------------------------------------------- */

static void test_integer_range_exact(void **state)
{
    for (size_t i = 0; i < sim_config_key_count(); i++) { /* every accepted integer is exact in a double */
        const sim_config_key *k = sim_config_key_at(i);
        if (k->type == SIM_KEY_INTEGER && !(k->hi <= 9007199254740992.0 && k->lo >= -9007199254740992.0))
            fail_msg("%s: range [%g, %g] passes 2^53", k->path, k->lo, k->hi);
    }
    tu_expect_exit("run --set seed=9000000000000001", 2,
                   "config key 'seed': 9000000000000001 is out of range [0, 9000000000000000]");
    tu_expect_exit("run --set trace.limit=10000000000000000", 2,
                   "config key 'trace.limit': 10000000000000000 is out of range [0, 9000000000000000] requests");
    char *db = tu_temp_path(), args[512];
    snprintf(args, sizeof args, "run --db %s --set trace.limit=2 --set seed=9000000000000000", db);
    tu_expect_exit(args, 0, NULL); /* the bound itself is a seed, recorded exactly */
    char *seed = tu_sql_text(db, "SELECT seed FROM runs");
    assert_string_equal(seed, "9000000000000000");
    free(seed);
    tu_remove_temp(db);
}

/* ---- report under a file-size limit ----------------------------------------------- */

/* Whether name ends in ".EXT" for one of the space-separated exts. */
static bool has_ext(const char *name, const char *exts)
{
    const char *dot = strrchr(name, '.');
    if (!dot) return false;
    size_t n = strlen(dot + 1);
    for (const char *p = exts; *p; p += strcspn(p, " "), p += *p == ' ')
        if (strcspn(p, " ") == n && !strncmp(p, dot + 1, n)) return true;
    return false;
}

/* The largest of the files in dir and dir/configs with one of exts. */
static off_t largest(const char *dir, const char *exts)
{
    off_t top = 0;
    char sub[PATH_MAX], path[PATH_MAX * 2];
    for (int pass = 0; pass < 2; pass++) {
        snprintf(sub, sizeof sub, pass ? "%s/configs" : "%s", dir);
        DIR *d = opendir(sub);
        assert_non_null(d);
        for (struct dirent *e; (e = readdir(d)) != NULL;) {
            struct stat st;
            snprintf(path, sizeof path, "%s/%s", sub, e->d_name);
            if (has_ext(e->d_name, exts) && stat(path, &st) == 0 && st.st_size > top) top = st.st_size;
        }
        closedir(d);
    }
    return top;
}

/* No file in dir (or dir/configs) is empty or a temporary, no staging
 * folder is left, and no image is there at all (none was moved into place). */
static void assert_nothing_partial(const char *dir)
{
    char sub[PATH_MAX];
    for (int pass = 0; pass < 2; pass++) {
        snprintf(sub, sizeof sub, pass ? "%s/configs" : "%s", dir);
        DIR *d = opendir(sub);
        if (!d) continue;
        for (struct dirent *e; (e = readdir(d)) != NULL;) {
            char path[PATH_MAX * 2];
            struct stat st;
            snprintf(path, sizeof path, "%s/%s", sub, e->d_name);
            if (strstr(e->d_name, ".kvsim-report-")) fail_msg("staging folder %s left behind", path);
            if (stat(path, &st) != 0 || S_ISDIR(st.st_mode)) continue;
            if (st.st_size == 0) fail_msg("empty file %s left behind", path);
            if (strstr(e->d_name, ".tmp.")) fail_msg("temporary %s left behind", path);
            if (has_ext(e->d_name, "svg png pdf html")) fail_msg("%s placed although the report failed", path);
        }
        closedir(d);
    }
}

/* `kvsim report --db db -o dir` under a file-size limit of bytes (set in
 * this process around the call, so the unit is exact whatever the shell's
 * ulimit counts in): exit 2, want on stderr, nothing partial in dir. */
static void report_limited(const char *db, const char *dir, off_t bytes, const char *want)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "rm -rf %s; exec %s report --db %s -o %s", dir, tu_kvsim_bin(), db, dir);
    struct rlimit was, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
    lim = (struct rlimit){(rlim_t)bytes, was.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    cli_result r = tu_shell(cmd);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);
    if (r.status != 2 || !strstr(r.err, want))
        fail_msg("report under a %lld-byte file limit: exit %d, stderr '%s' (want 2 and '%s')", (long long)bytes,
                 r.status, r.err, want);
    tu_free(&r);
    assert_nothing_partial(dir);
}

static void test_report_file_size_limit(void **state)
{
    if (!tu_have_gnuplot()) skip();
    char *db = tu_temp_path(), *dir = tu_temp_path(), args[1024];
    /* Fewer sample times (575) than a report bins (over 600): the load
     * timeline's data file keeps a row per sample and stays the largest. */
    snprintf(args, sizeof args, "run --db %s --set metrics.sample_period_ms=1100", db);
    tu_expect_exit(args, 0, NULL);
    snprintf(args, sizeof args, "report --db %s -o %s", db, dir);
    tu_expect_exit(args, 0, NULL);
    off_t data = largest(dir, "dat gp json html"), images = largest(dir, "svg png pdf");
    /* the database's -shm file needs 32 KiB: the limits stay above it */
    assert_true(data > 40 * 1024 && images > data + 8192);
    /* a data file over the limit: our own write fails, with its errno */
    report_limited(db, dir, data - 1024, ".dat: File too large");
    /* every data file fits, an image does not: gnuplot cuts it silently */
    report_limited(db, dir, data + 1024, ": File too large (gnuplot wrote ");
    snprintf(args, sizeof args, "rm -rf %s", dir);
    assert_int_equal(system(args), 0);
    free(dir);
    tu_remove_temp(db);
}

/* ---- export and report agree on a broken summary ---------------------------------- */

static void test_export_refuses_what_report_refuses(void **state)
{
    char *db = tu_temp_path(), args[1024];
    snprintf(args, sizeof args, "run --db %s --set trace.limit=5", db);
    tu_expect_exit(args, 0, NULL);
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "UPDATE runs SET summary_json = '{\"requests\": 5,' WHERE id = 1", 0, 0, 0),
                     SQLITE_OK);
    sqlite3_close(h);
    char want[1024];
    snprintf(want, sizeof want, "%s: run 1: summary_json is not JSON (1:15:", db);
    snprintf(args, sizeof args, "export --db %s", db);
    tu_expect_exit(args, 2, want);
    snprintf(args, sizeof args, "report --db %s -o %s.out", db, db);
    tu_expect_exit(args, 2, want);
    snprintf(args, sizeof args, "rm -rf %s.out", db);
    assert_int_equal(system(args), 0);
    tu_remove_temp(db);
}

/* ---- about is a comment ------------------------------------------------------------- */

static void test_about_not_hashed(void **state)
{
    char *db = tu_temp_path(), args[1024];
    /* and a number written another way is the same number: trace.speed
     * 1.0 and cluster.decode_hbm_frac 0.90 as default.json's 1 and 0.9,
     * decode_hbm_frac 1 as 1.0 (the second-last two, one more hash) */
    const char *const sets[] = {"",
                                "--set about='\"x\"'",
                                "--set model.about='\"y\"'",
                                "--set hardware.about='\"z\"'",
                                "--set trace.speed=1.0 --set cluster.decode_hbm_frac=0.90",
                                "--set cluster.decode_hbm_frac=1",
                                "--set cluster.decode_hbm_frac=1.0",
                                "--set seed=2"};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        snprintf(args, sizeof args, "run --db %s --set trace.limit=2 %s", db, sets[i]);
        tu_expect_exit(args, 0, NULL);
    }
    char *distinct = tu_sql_text(db, "SELECT COUNT(DISTINCT config_hash) FROM runs WHERE id <= 5"),
         *frac = tu_sql_text(db, "SELECT COUNT(DISTINCT config_hash) FROM runs WHERE id IN (6, 7)"),
         *seed = tu_sql_text(db, "SELECT COUNT(DISTINCT config_hash) FROM runs");
    assert_string_equal(distinct, "1"); /* comments and number forms only: one hash */
    assert_string_equal(frac, "1");     /* 1 and 1.0: one value */
    assert_string_equal(seed, "3");     /* real changes still move it */
    free(frac);
    free(distinct);
    free(seed);
    tu_remove_temp(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zero_completed_summary),
        cmocka_unit_test(test_zero_completed_export),
        cmocka_unit_test(test_zero_completed_check),
        cmocka_unit_test(test_zero_completed_report),
        cmocka_unit_test(test_calibrate_layers_refused),
        cmocka_unit_test(test_calibrate_layers_implausible),
        cmocka_unit_test(test_idle_keys_warned),
        cmocka_unit_test(test_engine_keys_warned),
        cmocka_unit_test(test_integer_range_exact),
        cmocka_unit_test(test_report_file_size_limit),
        cmocka_unit_test(test_export_refuses_what_report_refuses),
        cmocka_unit_test(test_about_not_hashed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
