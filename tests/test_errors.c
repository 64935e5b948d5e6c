/* tests/test_errors.c — error messages that say what to do next.
 *
 * A user who mistypes a path or a preset, or feeds a trace in another
 * format, gets an exit 2 whose message names the value and the next step:
 * where the bundled traces are, which presets exist, which importer to run.
 * The usage line lists every trace subcommand. Then one case per kind of
 * message (docs/reliability.md, "Errors"): a stray argument or an unknown
 * option, a missing results database, a choice that lists the valid values,
 * two keys that disagree, a baseline that cannot be read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/testutil.h"

static void test_missing_trace_points_at_bundled(void **state)
{
    (void)state;
    tu_expect_exit("run --trace no-such-trace.jsonl", 2,
                   "no-such-trace.jsonl: cannot open: No such file or directory (check the path; the bundled "
                   "public traces are in traces/mooncake/ and traces/ragpulse-sample/");
}

static void test_unknown_preset_lists_presets(void **state)
{
    (void)state;
    tu_expect_exit("run --set hardware=h100", 2,
                   "unknown hardware preset 'h100': the presets are a100x1, a100x2, a100x4, a100x8, a800x8, b200x1");
    tu_expect_exit("run --set model=llama3", 2, "unknown model preset 'llama3': the presets are ");
    tu_expect_exit("run --set model=llama3", 2,
                   "llama3-70b, llama3-8b, llama3.1-70b, llama3.1-8b, llama3.2-1b, llama3.2-3b");
}

/* A tensor-parallel degree that does not split the heads evenly is one
 * vLLM refuses (Qwen2.5-7B's 28 heads on 8 GPUs); KV heads fewer than the
 * GPUs are replicated when they divide them (Qwen3-30B-A3B's 4 on 8), and
 * more KV heads than GPUs must split evenly too (6 on 4 do not). */
static void test_tp_must_split_heads(void **state)
{
    (void)state;
    tu_expect_exit("cost --set model=qwen2.5-7b --set hardware=h100x8", 2,
                   "model 'qwen2.5-7b' has 28 attention heads and 4 KV heads, which 8-way tensor parallelism "
                   "(hardware 'h100x8') cannot split evenly: vLLM refuses it");
    tu_expect_stdout("cost --set model=qwen2.5-7b --set hardware=h100x4", "model qwen2.5-7b on h100x4");
    tu_expect_stdout("cost --set model=qwen3-30b-a3b --set hardware=h100x8", "model qwen3-30b-a3b on h100x8");
    tu_expect_exit("cost --set model=llama3.1-8b --set model.heads=24 --set model.kv_heads=6 --set hardware=h100x4", 2,
                   "24 attention heads and 6 KV heads, which 4-way tensor parallelism");
    tu_expect_stdout("run --set model=qwen2.5-7b --set hardware=h100x8 --set cluster.gpus_per_instance=4", NULL);
}

/* Scaling another GPU's tables needs the tables; the key is typed. */
static void test_transfer_needs_tables(void **state)
{
    (void)state;
    tu_expect_exit("cost --set hardware=h20x8 --set hardware.optables_transfer=true", 2,
                   "config key 'hardware.optables_transfer': true needs hardware.optables, the folder of another "
                   "GPU's measured tables to scale to this hardware (docs/hardware.md §6)");
    tu_expect_exit("cost --set hardware=h20x8 --set hardware.optables_transfer=2", 2, "hardware.optables_transfer");
}

static void test_foreign_trace_suggests_import(void **state)
{
    (void)state;
    tu_expect_exit("run --trace traces/ragpulse-sample/0_trace.jsonl.gz", 2,
                   "0_trace.jsonl.gz:1: timestamp: expected a number, got a string: a trace in another format? "
                   "convert it with `kvsim trace import ragpulse|azure|burstgpt`");
}

/* Values a user gave that were once taken silently or written unreadable
 * (a review's findings): each exits 2 naming it. */
static void test_silent_values_refused(void **state)
{
    (void)state;
    tu_expect_exit("hitrate --trace traces/default.jsonl --tiers dram=1e6,dram=2e6", 2,
                   "tiers: dram given twice in 'dram=1e6,dram=2e6'");
    tu_expect_exit("plan --trace traces/default.jsonl --tiers dram=0", 2,
                   "plan searches the DRAM capacity: --tiers dram= does not apply");
    tu_expect_exit("trace gen --rate 1e-300 --requests 3 -o -", 2,
                   "--rate 1e-300: 3 requests at that rate span about 3e+300 s");
    tu_expect_exit("trace gen --workload rag --rate 1e-300 --requests 3 -o -", 2, "--rate 1e-300");
    tu_expect_exit("trace gen --workload multiround-qa --rate 1e-300 --requests 3 -o -", 2, "--rate 1e-300");
    tu_expect_exit("trace gen --max-input 100000000 --requests 2 -o -", 2,
                   "--max-input and --max-output must be at most 16777216");
    /* no room for a block of shared prompt: it once wrote a trace with no
     * reuse at all, its hit rate 0, without a word */
    tu_expect_exit("trace gen --max-input 100 --requests 2 -o -", 2,
                   "--max-input 100 leaves no room for a shared prompt: a prompt is whole blocks of --block-tokens 512 "
                   "before at least one token of its own; give --max-input above 512");
    tu_expect_exit("trace gen --workload rag --max-passage 9000000 --k 2 -o -", 2,
                   "--system-tokens + --k x --max-passage at most 16744448");
    /* kvsim config checks policies as kvsim run does */
    tu_expect_exit("config --set policy.router=bogus", 2, "kvsim config: policy.router: unknown router 'bogus'");
    /* a merge whose input is missing leaves no output behind */
    char *out = tu_temp_path(), args[600];
    snprintf(args, sizeof args, "merge %s no-such-input.db", out);
    tu_expect_exit(args, 2, "kvsim merge: no-such-input.db: cannot read: No such file or directory");
    assert_int_equal(access(out, F_OK), -1);
    free(out);
}

static void test_usage_lists_trace_tools(void **state)
{
    (void)state;
    tu_expect_stdout("--help", "trace tools: stats, gen, import (azure, burstgpt, ragpulse), rechunk");
}

/* A file where an option's value belongs gets that option suggested; an
 * unknown option names itself and the command's --help. */
static void test_stray_argument_suggests_option(void **state)
{
    (void)state;
    tu_expect_exit("run traces/default.jsonl", 2,
                   "kvsim run: unexpected argument 'traces/default.jsonl' (did you mean --trace "
                   "traces/default.jsonl? see kvsim run --help)");
    tu_expect_exit("report no-such.db", 2, "kvsim report: unexpected argument 'no-such.db' (see kvsim report --help)");
    tu_expect_exit("export --db x.db --bogus", 2,
                   "kvsim export: unknown option or missing value '--bogus' (see kvsim export --help)");
    tu_expect_exit("plan --bogus", 2, "kvsim plan: bad option (see kvsim plan --help)");
    tu_expect_exit("plan sol", 2, "kvsim plan: unknown subcommand 'sol' (did you mean 'slo'?)");
    tu_expect_exit("trace stat", 2, "kvsim trace: unknown subcommand 'stat' (did you mean 'stats'?)");
}

/* A database that is not there, or not one kvsim wrote, says what writes one. */
static void test_missing_results_db_says_what_writes_one(void **state)
{
    (void)state;
    tu_expect_exit("compare --db no-such.db --by policy.router", 2,
                   "kvsim compare: cannot read no-such.db: No such file or directory (kvsim run --db FILE or kvsim "
                   "sweep --db FILE writes one)");
    char *empty = tu_write_temp(""), args[512], want[512];
    snprintf(args, sizeof args, "export --db %s", empty);
    snprintf(want, sizeof want,
             "kvsim export: %s: not a kvsim results database (no runs table; kvsim run --db FILE or kvsim sweep "
             "--db FILE writes one)",
             empty);
    tu_expect_exit(args, 2, want);
    tu_remove_temp(empty);
}

/* A value that names none of the choices lists them. */
static void test_choice_lists_the_choices(void **state)
{
    (void)state;
    tu_expect_exit("validate --measurements validation/vllm-h100-train.json --only nosuch", 2,
                   "no experiment has id 'nosuch' (the ids are: llama3.1-8b-tp1-general-mnbt2048-run16, "
                   "llama3.1-8b-tp1-general-mnbt1024-run22, qwen3-14b-tp1-general-mnbt2048-run13, "
                   "mixtral-8x7b-tp2-general-mnbt2048-run56)");
    tu_expect_exit("hitrate pic --pic lru --trace traces/default.jsonl", 2,
                   "--pic: 'lru' is not a PIC policy (known: prefix, epic, cacheblend, mepic)");
    tu_expect_exit("run --set cache.eviction=lru", 2,
                   "unknown config key 'cache.eviction' (kvsim config --schema lists the keys)");
    tu_expect_exit("trace import ragpulse", 2,
                   "kvsim trace import: expected FORMAT INPUT, FORMAT one of ragpulse, azure, burstgpt (see kvsim "
                   "trace import --help)");
}

/* Two values that disagree say which one to change, and to what. */
static void test_mismatch_says_which_to_change(void **state)
{
    (void)state;
    tu_expect_exit("run --trace traces/default.jsonl --set trace.block_tokens=32", 2,
                   "config keys 'kvstore.block_tokens' (512) and 'trace.block_tokens' (32) must agree: set "
                   "kvstore.block_tokens to the trace's (--set kvstore.block_tokens=32)");
    tu_expect_exit("run --trace traces/default.jsonl --set model=llama3-70b --set hardware=h100x1", 2,
                   "does not fit in hardware 'h100x1' (80 GB HBM × 0.9): choose a preset with room for it at that "
                   "share (--set hardware=NAME: a100x2, a100x4, a100x8, a800x8, b200x1, b200x2, b200x4, b200x8, "
                   "cpu-local, gb200x1, gb200x2, gb200x4, h100x2, h100x4, h100x8, h200x2, h200x4, h200x8, h20x8, "
                   "h800x8, l40sx4, l40sx8) or a smaller model");
    /* 141 GB of weights: not h200x1 (141 GB x 0.9), nor l40sx2 (2 x 48 GB);
     * at a share no preset meets, the other ways out */
    tu_expect_exit("run --trace traces/default.jsonl --set model=llama3-70b --set hardware=h100x1 "
                   "--set cluster.decode_hbm_frac=0.05",
                   2,
                   "(80 GB HBM × 0.05): no hardware preset has room for it at that share: raise "
                   "cluster.decode_hbm_frac, give a hardware file with more HBM, or a smaller model");
    char *db = tu_temp_path(), args[512], want[512];
    snprintf(args, sizeof args, "run --trace traces/default.jsonl --set trace.sample=0.02 --db %s", db);
    tu_expect_stdout(args, "simulated");
    snprintf(args, sizeof args, "compare --db %s --by policy.router", db);
    snprintf(want, sizeof want,
             "every run of %s has the value cache_aware_local; two values are needed to compare (add runs of "
             "another, e.g. kvsim sweep --grid policy.router=cache_aware_local,OTHER --db %s)",
             db, db);
    tu_expect_exit(args, 2, want);
    snprintf(args, sizeof args, "compare --db %s --by policy.router --speed 3", db);
    tu_expect_exit(args, 2, "--speed 3: no run of");
    tu_expect_exit(args, 2, "has this trace.speed (the runs': 1)");
    tu_remove_temp(db);
}

/* A baseline that cannot be read says how to record one. */
static void test_baseline_error_says_how_to_record(void **state)
{
    (void)state;
    tu_expect_exit("check --baseline no-such.json", 2,
                   "kvsim check: no-such.json: unable to open no-such.json: No such file or directory (record one "
                   "with kvsim check --write-baseline FILE --trace TRACE)");
    char *old = tu_write_temp("{\"kvsim_baseline\": 9}"), args[512];
    snprintf(args, sizeof args, "check --baseline %s", old);
    tu_expect_exit(args, 2,
                   "\"kvsim_baseline\": 9 is not a baseline format it knows; this kvsim reads version 1 (record "
                   "one with kvsim check --write-baseline FILE --trace TRACE)");
    tu_remove_temp(old);
    tu_expect_exit("check --write-baseline no-such-dir/b.json -- run --trace traces/default.jsonl", 2,
                   "baseline folder no-such-dir: No such file or directory (create it first: mkdir -p no-such-dir)");
    tu_expect_exit("run --config no-such.json", 2,
                   "config no-such.json: unable to open no-such.json: No such file or directory (kvsim config "
                   "prints a complete config to start from)");
}

/* A path that is the wrong kind of thing (a folder for a trace, a missing
 * output folder, a preset file that is not there, a --db that is not a
 * database) says what would fit. */
static void test_wrong_path_says_what_fits(void **state)
{
    (void)state;
    tu_expect_exit("run --trace traces/ragpulse-sample", 2,
                   "kvsim run: traces/ragpulse-sample: a folder, not a file (a trace is one JSONL file, plain or "
                   "gzip; a RAGPulse folder converts with kvsim trace import ragpulse FOLDER -o FILE)");
    tu_expect_exit("trace gen --requests 1 -o no-such-dir/t.jsonl", 2,
                   "kvsim trace gen: cannot write no-such-dir/t.jsonl: folder no-such-dir: No such file or directory "
                   "(create it first: mkdir -p no-such-dir)");
    tu_expect_exit("run --trace traces/default.jsonl --set hardware=no-such.json", 2,
                   "hardware: cannot read 'no-such.json': No such file or directory (check the path, or name a "
                   "preset: a100x1, a100x2, a100x4, a100x8, a800x8, b200x1");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "KVSIM_CONFIG_DIR=no-such-configs %s config", tu_kvsim_bin());
    cli_result r = tu_shell(cmd);
    assert_int_equal(r.status, 2);
    if (!strstr(r.err, "default config no-such-configs/default.json: unable to open no-such-configs/default.json: No "
                       "such file or directory (run kvsim from its repository, or make install, or set "
                       "KVSIM_CONFIG_DIR to a configs folder)"))
        fail_msg("%s", r.err);
    tu_free(&r);
    char *junk = tu_write_temp("not a database, just text\n"), args[512], want[512];
    snprintf(args, sizeof args, "run --trace traces/default.jsonl --db %s", junk);
    snprintf(want, sizeof want,
             "results database '%s': file is not a database (give --db a new file, or one kvsim wrote)", junk);
    tu_expect_exit(args, 2, want);
    tu_remove_temp(junk);
}

/* A report of nothing is an error that says what writes a run. */
static void test_empty_report_says_what_writes_one(void **state)
{
    (void)state;
    char *db = tu_temp_path(), args[512];
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h,
                                  "CREATE TABLE runs(id INTEGER PRIMARY KEY, created TEXT, kvsim_version TEXT,"
                                  " config_json TEXT, config_hash TEXT, trace_path TEXT, trace_fingerprint TEXT,"
                                  " seed INTEGER, wall_seconds REAL, summary_json TEXT)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(h);
    snprintf(args, sizeof args, "report --db %s -o %s.report", db, db);
    tu_expect_exit(args, 2,
                   "holds no completed run, no hitrate point and no ladder: nothing to report (kvsim run --db FILE, "
                   "kvsim sweep --db FILE or kvsim hitrate [--ladder] --db FILE writes one)");
    tu_remove_temp(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_trace_points_at_bundled),
        cmocka_unit_test(test_unknown_preset_lists_presets),
        cmocka_unit_test(test_foreign_trace_suggests_import),
        cmocka_unit_test(test_tp_must_split_heads),
        cmocka_unit_test(test_transfer_needs_tables),
        cmocka_unit_test(test_usage_lists_trace_tools),
        cmocka_unit_test(test_silent_values_refused),
        cmocka_unit_test(test_empty_report_says_what_writes_one),
        cmocka_unit_test(test_stray_argument_suggests_option),
        cmocka_unit_test(test_missing_results_db_says_what_writes_one),
        cmocka_unit_test(test_choice_lists_the_choices),
        cmocka_unit_test(test_mismatch_says_which_to_change),
        cmocka_unit_test(test_baseline_error_says_how_to_record),
        cmocka_unit_test(test_wrong_path_says_what_fits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
