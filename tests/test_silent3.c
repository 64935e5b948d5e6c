/* tests/test_silent3.c — silent answers, round three (issue 40): each case
 * used to pass quietly with a wrong or meaningless answer, or a message
 * that misled.
 *
 * - item 2: a trace read with another block size than its hash_ids were
 *   cut at: `trace rechunk` refuses (it wrote empty hash_ids), `run` and
 *   `hitrate` warn, naming the size that fits (the run's summary keeps it
 *   among its caveats).
 * - item 3: impossible attention shapes (more KV heads than heads, KV
 *   heads that do not divide the heads) are refused from --set and from
 *   `model import`, which also says when an expert count of 0 makes a model
 *   dense and when it ignores sliding_window, and whose --help no longer
 *   says mixtures of experts are refused.
 * - item 4: a newline in a --set value split an --emit-jobs line in two,
 *   the second run as a command: sim_sh_word writes control bytes in
 *   $'...' quotes (one line, read back exactly by bash), and --emit-jobs
 *   refuses them (a runner's sh may be dash).
 * - item 5: `kvsim export` wrote a cell such as =HYPERLINK(...) as it is,
 *   which a spreadsheet runs: a text cell that starts with = + - @ gets a
 *   leading ' (OWASP), numbers such as -3.5 stay as they are.
 * - item 7: `kvsim check` with "expect": {} passed with "all 0 numbers"; it
 *   is refused, and --write-baseline fills it. (validate's empty, repeated
 *   and unprintable ids, engine.dtype and a repeated --metric are in
 *   tests/test_validate.c; calibrate's 1e300 ms point in tests/test_silent.c.)
 * - item 6: a request whose KV exceeds every decode instance's HBM was
 *   rejected at arrival without a word: said once on stderr and kept among
 *   the summary's caveats.
 * - item 8: on a read-only file system, export and compare read a database
 *   report reads (they said "not a SQLite database"), and run and sweep say
 *   the file system is read-only (they said "No such file or directory").
 * - item 9: keys with no effect warn: cost.expert_parallel and
 *   cost.expert_imbalance on a dense model, cluster.cpp_threshold with
 *   cluster.cpp_group 1.
 * - item 10: as a new user would: a tier size without its unit (250 bytes)
 *   is refused, the suffix error lists GB and TB, a CSV given as --trace
 *   points to `kvsim trace import`, and kvstore.pic=mepc, kvstore.evict and
 *   kvstore.eviction=lruu get the right did-you-mean.
 * - a trace with no hash_ids at all: its hit rates are 0 by construction,
 *   said by run (a caveat, no rate in its text), hitrate and trace stats;
 *   plan crossover refuses a chunk that is no whole number of pages.
 * (kvsim compare's repeated runs, unpairable groups, one-seed verdicts and
 * zero-width intervals, items 1 and 10, are in tests/test_compare.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <sys/stat.h>

#include "sim/serving/serving.h"
#include "sim/util.h"
#include "tests/testutil.h"

/* ---- item 2: block sizes --------------------------------------------------------- */

#define WRONG_BLOCKS "the trace's blocks are not 256 tokens; blocks of 512 tokens fit every request"

static void test_rechunk_wrong_fine_blocks(void **state)
{
    char *out = tu_temp_path(), args[512];
    snprintf(args, sizeof args, "trace rechunk traces/default.jsonl --block-tokens 1024 --from-block-tokens 256 -o %s",
             out);
    tu_expect_exit(args, 2, WRONG_BLOCKS " (--from-block-tokens 512)");
    struct stat st;
    if (stat(out, &st) == 0) fail_msg("%s written with empty hash_ids", out);
    /* the right fine size still coarsens */
    snprintf(args, sizeof args, "trace rechunk traces/default.jsonl --block-tokens 1024 -o %s", out);
    tu_expect_exit(args, 0, "became");
    tu_remove_temp(out);
}

static void test_run_wrong_block_size(void **state)
{
    cli_result r =
        tu_kvsim("run --json --set trace.limit=50 --set trace.block_tokens=256 --set kvstore.block_tokens=256");
    assert_int_equal(r.status, 0);
    if (!strstr(r.err, "kvsim run: warning: traces/default.jsonl: 50 requests have fewer hash_ids than "
                       "ceil(input_length / 256) (the first: line 1): the trace's blocks are not 256 tokens; "
                       "blocks of 509 to 513 tokens fit every request (--set trace.block_tokens=N --set "
                       "kvstore.block_tokens=N with N = 512)"))
        fail_msg("no warning: %s", r.err);
    /* the default cluster's caveats first (the config's: tensor
     * parallelism, the hardware's roofline), then what the run found */
    json_t *s = json_loads(r.out, 0, NULL), *c = json_array_get(json_object_get(s, "caveats"), 2);
    assert_string_equal(json_string_value(json_object_get(c, "name")), "block_size");
    assert_true(json_is_true(json_object_get(c, "found")));
    json_decref(s);
    tu_free(&r);
    /* the trace's own size: no warning about it, no caveat but the
     * default cluster's (tensor parallelism on 8 GPUs, the hardware's
     * roofline) and the two requests longer than llama3-70b's window
     * (test_longer_than_the_window) */
    r = tu_kvsim("run --json --set trace.limit=50");
    assert_int_equal(r.status, 0);
    if (strstr(r.err, "hash_ids")) fail_msg("a block-size warning: %s", r.err);
    s = json_loads(r.out, 0, NULL);
    c = json_object_get(s, "caveats");
    assert_int_equal(json_array_size(c), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 0), "name")), "tensor_parallel");
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 1), "name")), "roofline");
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 2), "name")), "over_context");
    json_decref(s);
    tu_free(&r);
    tu_expect_exit("hitrate --trace traces/default.jsonl --block-tokens 256 --capacity 1000", 0,
                   "kvsim hitrate: warning: traces/default.jsonl: 1500 requests have fewer hash_ids");
}

/* A trace whose requests all have empty hash_ids printed a block hit rate
 * of 0.000 as if measured: every command that reads it says why it is 0
 * (the run's summary keeps it among its caveats, found), run's text prints
 * no rate, and trace stats no longer asks for a block size. A trace with
 * ids says none of it. */
#define NO_IDS_SAYS "none of its 3 requests has hash_ids, so no prompt can match another's blocks"

static void test_no_hash_ids(void **state)
{
    char *t = tu_write_temp("{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 4, \"hash_ids\": []}\n"
                            "{\"timestamp\": 10, \"input_length\": 600, \"output_length\": 4, \"hash_ids\": []}\n"
                            "{\"timestamp\": 20, \"input_length\": 600, \"output_length\": 4, \"hash_ids\": []}\n"),
         args[512];
    snprintf(args, sizeof args, "run --json --trace %s", t);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    if (!strstr(r.err, NO_IDS_SAYS)) fail_msg("no warning: %s", r.err);
    json_t *s = json_loads(r.out, 0, NULL);
    const json_t *c = sim_serving_caveat(s, "no_block_hashes");
    assert_non_null(c);
    assert_true(json_is_true(json_object_get(c, "found")));
    assert_non_null(strstr(json_string_value(json_object_get(c, "text")), NO_IDS_SAYS));
    json_decref(s);
    tu_free(&r);
    snprintf(args, sizeof args, "run --trace %s", t);
    tu_expect_stdout(args, "cache      no hit rate (the trace has no hash_ids); prefill GPU");
    snprintf(args, sizeof args, "hitrate --trace %s --capacity 1000", t);
    tu_expect_exit(args, 0, NO_IDS_SAYS);
    snprintf(args, sizeof args, "trace stats %s", t);
    r = tu_kvsim(args); /* says why, and asks for no block size */
    assert_int_equal(r.status, 0);
    if (!strstr(r.err, NO_IDS_SAYS) || strstr(r.err, "--block-tokens")) fail_msg("trace stats: %s", r.err);
    tu_free(&r);
    tu_remove_temp(t);
    tu_expect_ok_without("run --set trace.limit=20", NULL, "has hash_ids");
}

/* `plan crossover` priced a chunk of 100 tokens as 6.25 pages of 16 a
 * layer: a chunk that is no whole number of pages is refused, as the
 * loader refuses it when kvstore.lmcache is on. */
static void test_crossover_whole_pages(void **state)
{
    tu_expect_exit("plan crossover --set kvstore.chunk_tokens=100", 2,
                   "kvsim plan crossover: config key 'kvstore.chunk_tokens': 100 is not a multiple of the page size "
                   "(kvstore.pic_block_tokens = 16)");
    tu_expect_exit("run --set cluster.mode=aggregated --set kvstore.lmcache=true --set kvstore.chunk_tokens=100", 2,
                   "config key 'kvstore.chunk_tokens': 100 is not a multiple of the page size");
    tu_expect_stdout("plan crossover --set kvstore.chunk_tokens=96", "cpu_pages CPU memory, per-layer page copies");
}

/* kvsim check loads the same traces: it says the same, once per text, for a
 * run measurement and a hitrate one (and nothing at the trace's own size). */
static void test_check_wrong_block_size(void **state)
{
    char cwd[PATH_MAX], text[2 * PATH_MAX + 1024], args[1024];
    assert_non_null(getcwd(cwd, sizeof cwd));
    for (int bt = 256; bt <= 512; bt += 256) {
        snprintf(text, sizeof text,
                 "{\"kvsim_baseline\": 1, \"tolerance\": 0.01, \"measurements\": ["
                 "{\"name\": \"r\", \"kind\": \"run\", \"args\": {\"trace\": \"%s/traces/default.jsonl\", "
                 "\"set\": {\"trace.limit\": 50, \"trace.block_tokens\": %d, \"kvstore.block_tokens\": %d}}},"
                 "{\"name\": \"h\", \"kind\": \"hitrate\", \"args\": {\"trace\": \"%s/traces/default.jsonl\", "
                 "\"capacity_tokens\": 100000, \"block_tokens\": %d}}]}",
                 cwd, bt, bt, cwd, bt);
        char *b = tu_write_temp(text);
        snprintf(args, sizeof args, "check --baseline %s --write-baseline %s", b, b);
        cli_result r = tu_kvsim(args);
        assert_int_equal(r.status, 0);
        const char *run_say = "/traces/default.jsonl: 50 requests have fewer hash_ids than ceil(input_length / 256)",
                   *hit_say = "/traces/default.jsonl: 1500 requests have fewer hash_ids than ceil(input_length / 256)";
        const char *at = strstr(r.err, run_say), *ht = strstr(r.err, hit_say);
        int nwarn = 0;
        for (const char *w = r.err; (w = strstr(w, "kvsim check: warning: ")) != NULL; w++) nwarn++;
        if (bt == 256 && (!at || !ht || strstr(at + 1, run_say) || strstr(ht + 1, hit_say) || nwarn != 2))
            fail_msg("not said once for each: %s", r.err);
        if (bt == 512 && strstr(r.err, "warning")) fail_msg("a warning at the trace's own size: %s", r.err);
        tu_free(&r);
        tu_remove_temp(b);
    }
}

/* ---- item 3: attention shapes ----------------------------------------------------- */

static void test_set_impossible_heads(void **state)
{
    tu_expect_exit("run --set trace.limit=5 --set model.kv_heads=128", 2,
                   "kvsim run: model.kv_heads (128) exceeds model.heads (64): each KV head serves a group of query "
                   "heads");
    tu_expect_exit("run --set trace.limit=5 --set model.kv_heads=5", 2,
                   "kvsim run: model.kv_heads (5) does not divide model.heads (64): grouped-query attention shares "
                   "each KV head among the same number of query heads (try 4 or 8)");
    tu_expect_exit("run --set trace.limit=5 --set model.kv_heads=64", 0, NULL); /* multi-head attention */
}

#define LLAMA_SHAPE                                                                                                    \
    "\"num_hidden_layers\": 80, \"hidden_size\": 8192, \"num_attention_heads\": 64, \"intermediate_size\": 28672, "    \
    "\"vocab_size\": 32000, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\""

/* `kvsim model import` of a config.json with text: its result. */
static cli_result import_text(const char *text)
{
    char *path = tu_write_temp(text), args[512];
    snprintf(args, sizeof args, "model import %s", path);
    cli_result r = tu_kvsim(args);
    tu_remove_temp(path);
    return r;
}

static void test_import_impossible_heads(void **state)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"{" LLAMA_SHAPE ", \"num_key_value_heads\": 128}", "key 'num_key_value_heads' (128) exceeds "},
        {"{" LLAMA_SHAPE ", \"num_key_value_heads\": 5}", "key 'num_key_value_heads' (5) does not divide "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_result r = import_text(cases[i].text);
        if (r.status != 2 || !strstr(r.err, cases[i].want))
            fail_msg("case %zu: exit %d, stderr %s", i, r.status, r.err);
        tu_free(&r);
    }
}

static void test_import_says_what_it_ignores(void **state)
{
    cli_result r = import_text("{" LLAMA_SHAPE ", \"n_routed_experts\": 0, \"num_experts_per_tok\": 0}");
    assert_int_equal(r.status, 0);
    if (!strstr(r.err, "n_routed_experts 0: no routed experts to choose among, imported as a dense model"))
        fail_msg("silent: %s", r.err);
    tu_free(&r);
    r = import_text("{" LLAMA_SHAPE ", \"sliding_window\": 4096}");
    assert_int_equal(r.status, 0);
    if (!strstr(r.err, "sliding_window 4096 ignored: kvsim keeps the KV of every token (full attention)"))
        fail_msg("silent: %s", r.err);
    tu_free(&r);
    /* Qwen's configs name a window they do not use: nothing to say */
    r = import_text("{" LLAMA_SHAPE ", \"sliding_window\": 4096, \"use_sliding_window\": false}");
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "sliding_window"));
    tu_free(&r);
    r = tu_kvsim("model import --help");
    if (strstr(r.out, "configs are refused") || !strstr(r.out, "Mixtures of experts")) fail_msg("help: %s", r.out);
    tu_free(&r);
}

/* ---- item 4: newlines in shell words ------------------------------------------------ */

static void test_sh_word_newline(void **state)
{
    static const char *const words[] = {"about=x\ntouch PWN #", "a'b\\c\n", "\033[31mred", "tab\there"};
    static const char *const want[] = {"$'about=x\\ntouch PWN #'", "$'a\\'b\\\\c\\n'", "$'\\033[31mred'",
                                       "$'tab\\there'"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        char *q = sim_sh_word(words[i]), line[256], cmd[256];
        assert_string_equal(q, want[i]);
        assert_null(strchr(q, '\n'));
        snprintf(line, sizeof line, "printf %%s %s\n", q); /* a script line, as a job file's */
        char *script = tu_write_temp(line);
        snprintf(cmd, sizeof cmd, "bash %s", script); /* bash reads it back exactly */
        cli_result r = tu_shell(cmd);
        assert_int_equal(r.status, 0);
        assert_string_equal(r.out, words[i]);
        tu_free(&r);
        tu_remove_temp(script);
        free(q);
    }
    char *plain = sim_sh_word("it's");
    assert_string_equal(plain, "'it'\\''s'");
    free(plain);
}

static void test_emit_jobs_refuses_newline(void **state)
{
    char *jobs = tu_temp_path(), *db = tu_temp_path(), args[1024];
    snprintf(args, sizeof args,
             "sweep --emit-jobs %s --db %s --grid trace.speed=1 --set \"$(printf 'about=x\\ntouch PWN #')\"", jobs, db);
    tu_expect_exit(args, 2, "--emit-jobs: the argument $'about=x\\ntouch PWN #' holds a newline");
    struct stat st;
    if (stat(jobs, &st) == 0) fail_msg("%s written", jobs);
    tu_remove_temp(jobs);
    tu_remove_temp(db);
}

/* ---- item 5: CSV injection ------------------------------------------------------- */

static void test_export_neutralises_formulas(void **state)
{
    static const char *const abouts[] = {"=HYPERLINK(\"http://x\",\"y\")", "+1+cmd|x", "-2+3", "@SUM(A1)"};
    static const char *const csv[] = {"\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\"", "'+1+cmd|x", "'-2+3", "'@SUM(A1)"};
    for (size_t i = 0; i < sizeof abouts / sizeof abouts[0]; i++) {
        char *db = tu_temp_path(), *val = tu_write_temp(abouts[i]), args[1024];
        snprintf(args, sizeof args, "run --db %s --set trace.limit=5 --set \"about=$(cat %s)\"", db, val);
        tu_expect_exit(args, 0, NULL);
        snprintf(args, sizeof args, "export --db %s", db);
        cli_result r = tu_kvsim(args);
        assert_int_equal(r.status, 0);
        if (!strstr(r.out, csv[i])) fail_msg("case %zu: no %s in\n%.600s", i, csv[i], strchr(r.out, '\n'));
        tu_free(&r);
        snprintf(args, sizeof args, "export --db %s --format tsv", db);
        r = tu_kvsim(args);
        if (!strstr(r.out, "\t'")) fail_msg("case %zu: TSV cell not neutralised", i);
        tu_free(&r);
        tu_remove_temp(val);
        tu_remove_temp(db);
    }
    /* numbers keep their sign: -0.5 is not a formula */
    char *db = tu_temp_path(), args[512];
    snprintf(args, sizeof args, "run --db %s --set trace.limit=5 --set cost.noise=0", db);
    tu_expect_exit(args, 0, NULL);
    snprintf(args, sizeof args, "export --db %s --table requests", db);
    tu_expect_ok_without(args, ",'", NULL);
    tu_remove_temp(db);
}

/* ---- item 7: nothing to check ------------------------------------------------------ */

static void test_check_empty_expect(void **state)
{
    char cwd[PATH_MAX], text[PATH_MAX + 512], args[1024];
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(text, sizeof text,
             "{\"kvsim_baseline\": 1, \"tolerance\": 0.01, \"measurements\": [{\"name\": \"m\", \"kind\": \"run\", "
             "\"args\": {\"trace\": \"%s/traces/default.jsonl\", \"set\": {\"trace.limit\": 20}}, \"expect\": {}}]}",
             cwd);
    char *b = tu_write_temp(text);
    snprintf(args, sizeof args, "check --baseline %s", b);
    tu_expect_exit(args, 2, "measurement m: \"expect\" is empty: nothing to check");
    snprintf(args, sizeof args, "check --baseline %s --write-baseline %s", b, b);
    tu_expect_stdout(args, "recorded 13 numbers");
    snprintf(args, sizeof args, "check --baseline %s", b);
    tu_expect_stdout(args, "all 13 numbers within tolerance");
    tu_remove_temp(b);
}

/* A measurement name or sweep label with an escape byte reaches no terminal
 * raw: refused (check) or quoted as sh would read it (sweep's table). */
static void test_names_with_escapes(void **state)
{
    char cwd[PATH_MAX], text[PATH_MAX + 512], args[1024];
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(text, sizeof text,
             "{\"kvsim_baseline\": 1, \"tolerance\": 0.01, \"measurements\": [{\"name\": \"m\\u001b[2J\", "
             "\"kind\": \"run\", \"args\": {\"trace\": \"%s/traces/default.jsonl\", \"set\": {\"trace.limit\": "
             "20}}}]}",
             cwd);
    char *b = tu_write_temp(text);
    snprintf(args, sizeof args, "check --baseline %s --write-baseline %s", b, b);
    tu_expect_exit(args, 2, "measurement $'m\\033[2J' holds a control character: give a printable name");
    tu_remove_temp(b);
    char *db = tu_temp_path();
    snprintf(args, sizeof args, "sweep --set trace.limit=20 --grid \"about=$(printf 'a\\033[2Jb')\" --db %s", db);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    if (!strstr(r.out, "$'about=a\\033[2Jb'") || strchr(r.out, '\033')) fail_msg("not quoted: %s", r.out);
    tu_free(&r);
    tu_remove_temp(db);
}

/* ---- item 6: requests no decode instance can hold ------------------------------------- */

static void test_too_large_for_decode(void **state)
{
    cli_result r = tu_kvsim("run --json --set trace.limit=200 --set cluster.decode_hbm_frac=0.225");
    assert_int_equal(r.status, 0);
    const char *say = "kvsim run: warning: 6 requests need more KV than a decode instance's HBM holds (8544 tokens; "
                      "the first: trace line 36, 8555 tokens of input and output): rejected at arrival",
               *at = strstr(r.err, say);
    if (!at || strstr(at + strlen(say), "need more KV")) fail_msg("not said once: %s", r.err);
    json_t *s = json_loads(r.out, 0, NULL), *c;
    size_t i;
    bool found = false;
    json_array_foreach(json_object_get(s, "caveats"), i, c) found |=
        !strcmp(json_string_value(json_object_get(c, "name")), "too_large");
    assert_true(found);
    assert_int_equal(tu_int_field(json_object_get(s, "rejected"), "at_arrival"), 6);
    json_decref(s);
    tu_free(&r);
}

/* The same in the aggregated model: the requests of the trace's first 200
 * lines whose input + output exceed an instance's HBM pages (counted here
 * from the trace file against the run's hbm_pages × page_tokens). */
static void test_too_large_aggregated(void **state)
{
    cli_result r = tu_kvsim("run --json --set trace.limit=200 --set cluster.mode=aggregated "
                            "--set cluster.decode_hbm_frac=0.23");
    assert_int_equal(r.status, 0);
    json_t *s = json_loads(r.out, 0, NULL), *c;
    int64_t cap = tu_int_field(s, "hbm_pages") * tu_int_field(s, "page_tokens"), n = 0, prompt = 0, first = 0;
    FILE *f = fopen("traces/default.jsonl", "r");
    char line[1 << 16];
    for (int64_t i = 1; i <= 200 && fgets(line, sizeof line, f); i++) {
        json_t *row = json_loads(line, 0, NULL);
        int64_t in = tu_int_field(row, "input_length"), out = tu_int_field(row, "output_length");
        if (in + out > cap && n++ == 0) first = i;
        prompt += in + out > cap && in > cap;
        json_decref(row);
    }
    fclose(f);
    assert_true(n > 0);
    char say[256];
    snprintf(say, sizeof say,
             "kvsim run: warning: %lld request%s more KV than an aggregated instance's HBM holds "
             "(%lld tokens; the first: trace line %lld,",
             (long long)n, n == 1 ? " needs" : "s need", (long long)cap, (long long)first);
    const char *at = strstr(r.err, say);
    if (!at || strstr(at + strlen(say), "more KV than")) fail_msg("not said once: %s (want %s)", r.err, say);
    size_t i;
    bool found = false;
    json_array_foreach(json_object_get(s, "caveats"), i, c) found |=
        !strcmp(json_string_value(json_object_get(c, "name")), "too_large");
    assert_true(found);
    assert_int_equal(tu_int_field(json_object_get(s, "rejected"), "at_arrival"), prompt);
    json_decref(s);
    tu_free(&r);
}

/* Requests rejected for a KV larger than an instance's HBM are said as
 * such in the diagnosis, not blamed on policy.admission (none here); a
 * cluster that rejected every request so served nothing at any load: exit
 * 2 with the arithmetic, aggregated and disaggregated. The shares put the
 * HBM left after LLaMA3-70B's weights on 8×A800 just under the bundled
 * trace's smallest request (aggregated 0.2232, disaggregated 0.2210), and
 * just over a few (0.2215). */
static void test_none_fits(void **state)
{
    cli_result r = tu_kvsim("run --json --set trace.limit=50 --set cluster.decode_hbm_frac=0.2215");
    assert_int_equal(r.status, 0);
    json_t *s = json_loads(r.out, 0, NULL);
    json_int_t big = tu_int_field(json_object_get(s, "rejected"), "at_arrival");
    assert_true(big > 0 && big < 50);
    char want[256];
    snprintf(want, sizeof want,
             "%lld of 50 requests rejected at arrival for more KV than an instance's HBM holds "
             "(caveat too_large)",
             (long long)big);
    json_decref(s);
    tu_free(&r);
    r = tu_kvsim("run --set trace.limit=50 --set cluster.decode_hbm_frac=0.2215");
    const char *why = strstr(r.out, "\ndiagnosis ");
    if (!why || !strstr(why, want) || strstr(why, "policy.admission")) fail_msg("diagnosis: %s (want %s)", r.out, want);
    tu_free(&r);
    tu_expect_exit("run --set trace.limit=50 --set cluster.decode_hbm_frac=0.2210", 2,
                   "kvsim run: no request of trace traces/default.jsonl fits this cluster, whatever the load: 50 "
                   "requests need more KV than a decode instance's HBM holds");
    tu_expect_exit("run --set trace.limit=50 --set cluster.mode=aggregated --set cluster.decode_hbm_frac=0.2232", 2,
                   "kvsim run: no request of trace traces/default.jsonl fits this cluster, whatever the load: 50 "
                   "requests need more KV than an aggregated instance's HBM holds");
}

/* ---- item 10: a new user's mistakes --------------------------------------------------- */

static void test_new_user_mistakes(void **state)
{
    static const struct {
        const char *args, *want;
    } cases[] = {
        {"run --set kvstore.dram_bytes=250",
         "config key 'kvstore.dram_bytes': 250 bytes hold no block (a block of 512 tokens of llama3-70b is 167772160 "
         "bytes): a missing unit? give e.g. 250GB (or 0 for no such tier)"},
        {"run --set kvstore.ssd_bytes=2", "config key 'kvstore.ssd_bytes': 2 bytes hold no block"},
        {"run --set kvstore.dram_bytes=250gb",
         "'250gb' has an unknown suffix 'gb' (use k, M, G, T, KB, MB, GB, TB, KiB, MiB, GiB, TiB; case matters: 250GB, "
         "not 250gb)"},
        {"run --trace tests/fixtures/csv/azure-mini.csv",
         "azure-mini.csv:1: json: malformed JSON ('[' or '{' expected near 'TIMESTAMP' at column 9): a CSV file? kvsim "
         "reads Mooncake-format JSONL; convert a CSV trace with `kvsim trace import azure|burstgpt`"},
        {"run --set kvstore.pic=mepc", "unknown cache model 'mepc' (did you mean 'mepic'?)"},
        {"run --set kvstore.evict=lruu", "unknown config key 'kvstore.evict' (did you mean 'kvstore.eviction'?)"},
        {"run --set kvstore.eviction=lruu", "unknown eviction policy 'lruu' (did you mean 'lru'?)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) tu_expect_exit(cases[i].args, 2, cases[i].want);
}

/* ---- item 9: keys with no effect ----------------------------------------------------- */

static void test_idle_keys_of_the_config(void **state)
{
    cli_result r = tu_kvsim("run --set trace.limit=5 --set cost.expert_parallel=true --set cost.expert_imbalance=2 "
                            "--set cluster.cpp_threshold=1000");
    assert_int_equal(r.status, 0);
    const char *want[] = {"warning: cost.expert_parallel = true has no effect here: the model is dense",
                          "warning: cost.expert_imbalance = 2 has no effect here: the model is dense",
                          "warning: cluster.cpp_threshold = 1000 has no effect here: cluster.cpp_group is 1"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(r.err, want[i])) fail_msg("no '%s' in %s", want[i], r.err);
    tu_free(&r);
    /* the other serving mode's keys: cluster.instances = 3 once ran the
     * default 4P4D without a word, cluster.scope an aggregated cluster */
    r = tu_kvsim("run --set trace.limit=5 --set cluster.instances=3 --set kvstore.load=never");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "warning: cluster.instances = 3 has no effect here: it counts an aggregated "
                                  "cluster's instances; here cluster.prefill and cluster.decode do"));
    assert_non_null(strstr(r.err, "warning: kvstore.load = \"never\" has no effect here"));
    tu_free(&r);
    r = tu_kvsim("run --set trace.limit=5 --config configs/clusters/lmcache-cpu-offload.json --set cluster.scope=local "
                 "--set metrics.first_token=prefill");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "warning: cluster.scope = \"local\" has no effect here: an aggregated instance "
                                  "keeps its own GPU prefix cache"));
    assert_non_null(strstr(r.err, "warning: metrics.first_token = \"prefill\" has no effect here"));
    tu_free(&r);
    /* a parameter of a policy the run does not select (accepted, for sweeps
     * that vary the policy; it was taken without a word) */
    r = tu_kvsim("run --set trace.limit=5 --set policy.router=random --set policy.params.load_threshold=0.1");
    assert_non_null(strstr(r.err, "warning: policy.params load_threshold: no effect here, no policy this run selects "
                                  "takes it (router random, decode least_loaded, admission none"));
    tu_free(&r);
    r = tu_kvsim(
        "run --set trace.limit=5 --set policy.router=kvcentric --set policy.params.kvcache_balancing_threshold=2");
    assert_null(strstr(r.err, "policy.params"));
    tu_free(&r);
    /* where they act, no warning */
    r = tu_kvsim(
        "run --set trace.limit=5 --set model=mixtral-8x7b --set hardware=h100x2 --set cost.expert_parallel=true "
        "--set cluster.cpp_group=2 --set cluster.cpp_threshold=1000");
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "no effect"));
    tu_free(&r);
}

/* A tier's budget beyond the hardware's memory (kvstore.dram_bytes 3 TB on
 * an h100x8 instance of 2 TB; kvstore.ssd_bytes 5 TB on an h100x1 instance
 * of 3,840 GB; 600 GB on a quarter of an h100x8 node) ran without a word:
 * it is the over_node finding, on stderr and among the summary's caveats;
 * within the instance's share, none. */
static void test_tier_over_node(void **state)
{
    cli_result r = tu_kvsim("run --set trace.limit=5 --set hardware=h100x8 --set kvstore.dram_bytes=3TB");
    assert_int_equal(r.status, 0);
    const char *want = "warning: kvstore.dram_bytes: 3000 GB of DRAM is more than the 2000 GB an instance of 8 "
                       "GPUs on 'h100x8' has (hardware.dram_bytes, in proportion to its GPUs): this run's hits rest "
                       "on capacity the hardware lacks; give at most that (--set kvstore.dram_bytes=2000GB)";
    if (!strstr(r.err, want)) fail_msg("no '%s' in %s", want, r.err);
    tu_free(&r);
    json_t *j = tu_kvsim_json("run --set trace.limit=5 --config configs/clusters/lmcache-local-disk.json "
                              "--set kvstore.ssd_bytes=5TB --json");
    const json_t *c = sim_serving_caveat(j, "over_node");
    assert_non_null(c);
    assert_non_null(strstr(json_string_value(json_object_get(c, "text")),
                           "kvstore.ssd_bytes: 5000 GB of disk is more than the 3840 GB an instance of 1 GPU on "
                           "'h100x1' has (hardware.ssd_bytes"));
    json_decref(j);
    j = tu_kvsim_json("run --set trace.limit=5 --set hardware=h100x8 --set kvstore.dram_bytes=2TB --json");
    assert_null(sim_serving_caveat(j, "over_node"));
    json_decref(j);
    /* an instance of 2 of a node's 8 GPUs has a quarter of its 2 TB; each
     * instance is a node of the store with its own kvstore.dram_bytes */
    j = tu_kvsim_json("run --set trace.limit=5 --set hardware=h100x8 --set model=llama3.1-8b "
                      "--set cluster.gpus_per_instance=2 --set kvstore.dram_bytes=600GB --json");
    c = sim_serving_caveat(j, "over_node");
    assert_non_null(c);
    assert_non_null(strstr(json_string_value(json_object_get(c, "text")),
                           "600 GB of DRAM is more than the 500 GB an instance of 2 GPUs on 'h100x8' has"));
    json_decref(j);
}

/* Requests longer than the model's context window ran without a word
 * (the default run: llama3-70b, 8,192 tokens, on a trace of Kimi's long
 * contexts): the over_context finding counts them, as counted here from
 * the trace itself; a window that holds them all says nothing. */
static void test_longer_than_the_window(void **state)
{
    FILE *f = fopen("traces/default.jsonl", "r");
    assert_non_null(f);
    char line[1 << 16];
    long n = 0, over = 0, first = 0, longest = 0;
    while (n < 300 && fgets(line, sizeof line, f)) {
        json_t *r = json_loads(line, 0, NULL);
        long len = (long)(json_integer_value(json_object_get(r, "input_length")) +
                          json_integer_value(json_object_get(r, "output_length")));
        json_decref(r);
        n++;
        if (len <= 8192) continue;
        if (!over++) first = n;
        if (len > longest) longest = len;
    }
    fclose(f);
    assert_true(over > 0);
    json_t *j = tu_kvsim_json("run --set trace.limit=300 --json");
    const json_t *c = sim_serving_caveat(j, "over_context");
    assert_non_null(c);
    assert_int_equal(json_integer_value(json_object_get(c, "requests")), over);
    char want[256];
    snprintf(want, sizeof want,
             "%ld of the 300 requests (%.1f%%; the first on trace line %ld, the longest %ld tokens) are longer, "
             "prompt and output, than llama3-70b's context window of 8192 tokens",
             over, 100.0 * over / 300, first, longest);
    if (!strstr(json_string_value(json_object_get(c, "text")), want))
        fail_msg("no '%s' in %s", want, json_string_value(json_object_get(c, "text")));
    json_decref(j);
    j = tu_kvsim_json("run --set trace.limit=300 --set model.context_window=131072 --json");
    assert_null(sim_serving_caveat(j, "over_context"));
    json_decref(j);
}

/* `kvsim cost` priced shapes no run forms without a word: a batch above
 * cluster.decode_max_batch and a context beyond the model's window. */
static void test_cost_shapes_no_run_forms(void **state)
{
    json_t *j = tu_kvsim_json("cost --set model=llama3.1-8b --set hardware=h100x1 --batch 300 --context 140000 --json");
    const json_t *c;
    size_t i;
    int seen = 0;
    json_array_foreach(json_object_get(j, "caveats"), i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name")),
                   *text = json_string_value(json_object_get(c, "text"));
        if (!strcmp(name, "batch_cap"))
            seen |= 1, assert_non_null(strstr(text, "a batch of 300 is more than cluster.decode_max_batch (256"));
        if (!strcmp(name, "context_window"))
            seen |= 2, assert_non_null(strstr(text, "a context of 140000 tokens is longer than llama3.1-8b's context "
                                                    "window of 131072 tokens"));
    }
    assert_int_equal(seen, 3);
    json_decref(j);
    cli_result r = tu_kvsim("cost --set model=llama3.1-8b --set hardware=h100x1 --batch 256 --context 131072");
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "no run forms this"));
    tu_free(&r);
}

/* The bundled trace's first 200 requests, each edited by edit (its index
 * and object), in a temporary file (the caller unlinks and frees it). */
static char *edited_trace(void (*edit)(int i, json_t *r))
{
    FILE *in = fopen("traces/default.jsonl", "r");
    char *path = tu_write_temp(""), line[1 << 16];
    FILE *out = fopen(path, "w");
    for (int i = 0; i < 200 && fgets(line, sizeof line, in); i++) {
        json_t *r = json_loads(line, 0, NULL);
        edit(i, r);
        char *t = json_dumps(r, JSON_COMPACT);
        fprintf(out, "%s\n", t);
        free(t), json_decref(r);
    }
    fclose(in), fclose(out);
    return path;
}

static void own_slo(int i, json_t *r)
{
    if (i % 2 == 0) json_object_set_new(r, "slo_ttft_ms", json_real(100));
}

static void at_one_instant(int i, json_t *r) { json_object_set_new(r, "timestamp", json_integer(1000)); }

/* A trace whose requests carry their own SLOs: the SLO line named only the
 * config's, and the diagnosis said under 1% miss them while half the
 * requests missed their own. Both now say how many are judged by their own
 * (every other request here: counted as the test writes them). */
static void test_own_slos_said(void **state)
{
    char *path = edited_trace(own_slo), cmd[512];
    int own = 100; /* every other of the 200 */
    snprintf(cmd, sizeof cmd, "run --trace %s --json", path);
    json_t *j = tu_kvsim_json(cmd);
    assert_int_equal(json_integer_value(json_object_get(j, "slo_own_requests")), own);
    json_decref(j);
    snprintf(cmd, sizeof cmd, "run --trace %s", path);
    char want[160];
    snprintf(want, sizeof want, "SLO        TTFT ≤ 30000 ms, TBT ≤ 100 ms (%d requests by their own from the trace)",
             own);
    tu_expect_stdout(cmd, want);
    snprintf(want, sizeof want, "%d requests are judged by their own SLOs from the trace", own);
    tu_expect_stdout(cmd, want);
    unlink(path), free(path);
}

/* Every arrival at one instant: the rates were 0 (arrival rate 0.000
 * req/s, span ratio "0.00x", steady-state goodput 0 with every request
 * effective, load swings of 0 over one sample); they are none (null). */
static void test_burst_has_no_rate(void **state)
{
    char *path = edited_trace(at_one_instant), cmd[512];
    snprintf(cmd, sizeof cmd, "trace stats %s --json", path);
    json_t *j = tu_kvsim_json(cmd);
    assert_true(json_is_null(json_object_get(j, "arrival_rate")));
    json_decref(j);
    snprintf(cmd, sizeof cmd, "trace stats %s", path);
    tu_expect_stdout(cmd, "arrival rate     none: every request at one instant");
    snprintf(cmd, sizeof cmd, "run --trace %s --json", path);
    j = tu_kvsim_json(cmd);
    assert_true(json_is_null(json_object_get(json_object_get(j, "diagnosis"), "span_ratio")));
    const json_t *ld = json_object_get(j, "load_dynamics");
    assert_true(json_integer_value(json_object_get(ld, "samples")) < 2);
    assert_true(json_is_null(json_object_get(ld, "prefill_std")));
    const json_t *st = json_object_get(j, "steady_state");
    if (json_integer_value(json_object_get(st, "effective")) > 0)
        assert_true(json_is_null(json_object_get(st, "goodput_rps")));
    json_decref(j);
    unlink(path), free(path);
}

/* `trace stats` of a trace with no request printed means, percentiles and
 * a hit rate of 0 with exit 0: refused, as `run` refuses it (exit 2). */
static void test_stats_of_no_requests(void **state)
{
    char *empty = tu_write_temp(""), *blank = tu_write_temp("\n\n"), cmd[512];
    snprintf(cmd, sizeof cmd, "trace stats %s --json", empty);
    tu_expect_exit(cmd, 2, "no requests (an empty file, or only blank lines)");
    snprintf(cmd, sizeof cmd, "trace stats %s", blank);
    tu_expect_exit(cmd, 2, "no requests (an empty file, or only blank lines)");
    unlink(empty), unlink(blank), free(empty), free(blank);
}

/* ---- item 8: a read-only file system --------------------------------------------------- */

/* `kvsim CMD` for each of cmds on a read-only bind mount of dir (a private
 * mount namespace), each command's stderr after a "== " line; NULL when no
 * such mount can be made here. */
static char *on_read_only(const char *dir, const char *const *cmds, size_t n)
{
    char script[4096];
    size_t at = (size_t)snprintf(script, sizeof script,
                                 "unshare -m sh -c 'mount --bind -o ro %s %s && mount -o remount,ro,bind %s && "
                                 "{ touch %s/w 2>/dev/null && echo writable; ",
                                 dir, dir, dir, dir);
    for (size_t i = 0; i < n; i++)
        at += (size_t)snprintf(script + at, sizeof script - at, "echo \"== %s\" >&2; %s %s >/dev/null; ", cmds[i],
                               tu_kvsim_bin(), cmds[i]);
    snprintf(script + at, sizeof script - at, "}'");
    cli_result r = tu_shell(script);
    if (strstr(r.out, "writable") || !strstr(r.err, "== ")) {
        printf("skip: cannot make a read-only mount here (%s)\n", r.err);
        tu_free(&r);
        return NULL;
    }
    free(r.out);
    return r.err;
}

static void test_read_only_file_system(void **state)
{
    char dir[] = "/tmp/kvsim-ro3-XXXXXX", args[1024];
    assert_non_null(mkdtemp(dir));
    for (int seed = 1; seed <= 2; seed++) {
        snprintf(args, sizeof args, "run --db %s/r.db --set trace.limit=5 --set seed=%d", dir, seed);
        tu_expect_exit(args, 0, NULL);
    }
    char c[6][512];
    snprintf(c[0], sizeof c[0], "export --db %s/r.db", dir);
    snprintf(c[1], sizeof c[1], "compare --db %s/r.db --by seed", dir);
    snprintf(c[2], sizeof c[2], "run --db %s/r.db --set trace.limit=5", dir);
    snprintf(c[3], sizeof c[3], "run --db %s/new.db --set trace.limit=5", dir);
    snprintf(c[4], sizeof c[4], "sweep --db %s/r.db --grid trace.speed=1,2 --set trace.limit=5", dir);
    const char *cmds[] = {c[0], c[1], c[2], c[3], c[4]};
    char *err = on_read_only(dir, cmds, 5);
    if (!err) {
        snprintf(args, sizeof args, "rm -rf %s", dir);
        assert_int_equal(system(args), 0);
        skip();
    }
    if (strstr(err, "not a SQLite database") || strstr(err, "No such file"))
        fail_msg("a wrong message on a read-only file system:\n%s", err);
    const char *want[] = {"cannot write results database '", "/r.db': Read-only file system (give --db a file where",
                          "/new.db': its folder ", ": Read-only file system"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(err, want[i])) fail_msg("no '%s' in\n%s", want[i], err);
    free(err);
    snprintf(args, sizeof args, "rm -rf %s", dir);
    assert_int_equal(system(args), 0);
}

/* An option that takes one value, given twice, once kept the last without
 * a word ("--only a --only b" validated b alone): exit 2 naming both
 * values, in each command that reads a database or measurements. Options
 * meant to repeat still do (validate's --set and --metric). */
static void test_single_options_once(void **state)
{
    (void)state;
    tu_expect_exit("validate --measurements validation/vllm-h100-train.json --only a --only=b", 2,
                   "kvsim validate: --only given twice ('a', then 'b'): give it once");
    tu_expect_exit("compare --db x.db --by policy.router --by seed", 2,
                   "kvsim compare: --by given twice ('policy.router', then 'seed'): give it once");
    tu_expect_exit("report --db x.db -o out --title a --title b", 2, "kvsim report: --title given twice");
    tu_expect_exit("export --db x.db --table runs --table requests", 2, "kvsim export: --table given twice");
    tu_expect_stdout("validate --measurements validation/vllm-h100-train.json --only "
                     "llama3.1-8b-tp1-general-mnbt1024-run22 --draws 1 --set seed=1 --set seed=2 --metric e2e_ms.mean "
                     "--metric itl_ms.mean --max-error 90",
                     "llama3.1-8b-tp1-general-mnbt1024-run22");
}

/* run -v lists the lines --skip-bad skips; without it, -v did nothing
 * without a word. It says so, once, and with --skip-bad it does not. */
static void test_verbose_without_skip_bad(void **state)
{
    (void)state;
    tu_expect_exit("run -v --set trace.limit=10", 0,
                   "kvsim run: warning: --verbose lists the lines --skip-bad skips, and trace.skip_bad is off");
    tu_expect_ok_without("run -v --skip-bad --set trace.limit=10", NULL, "--verbose lists");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rechunk_wrong_fine_blocks),
        cmocka_unit_test(test_single_options_once),
        cmocka_unit_test(test_verbose_without_skip_bad),
        cmocka_unit_test(test_run_wrong_block_size),
        cmocka_unit_test(test_set_impossible_heads),
        cmocka_unit_test(test_import_impossible_heads),
        cmocka_unit_test(test_import_says_what_it_ignores),
        cmocka_unit_test(test_sh_word_newline),
        cmocka_unit_test(test_emit_jobs_refuses_newline),
        cmocka_unit_test(test_export_neutralises_formulas),
        cmocka_unit_test(test_check_empty_expect),
        cmocka_unit_test(test_too_large_for_decode),
        cmocka_unit_test(test_names_with_escapes),
        cmocka_unit_test(test_too_large_aggregated),
        cmocka_unit_test(test_none_fits),
        cmocka_unit_test(test_check_wrong_block_size),
        cmocka_unit_test(test_no_hash_ids),
        cmocka_unit_test(test_crossover_whole_pages),
        cmocka_unit_test(test_new_user_mistakes),
        cmocka_unit_test(test_idle_keys_of_the_config),
        cmocka_unit_test(test_tier_over_node),
        cmocka_unit_test(test_longer_than_the_window),
        cmocka_unit_test(test_stats_of_no_requests),
        cmocka_unit_test(test_own_slos_said),
        cmocka_unit_test(test_burst_has_no_rate),
        cmocka_unit_test(test_cost_shapes_no_run_forms),
        cmocka_unit_test(test_read_only_file_system),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
