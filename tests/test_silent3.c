/* tests/test_silent3.c — silent answers, round three (issue 40): each case
 * used to pass quietly with a wrong or meaningless answer, or a message
 * that misled.
 *
 * - item 2: a trace read with another block size than its hash_ids were
 *   cut at: `trace rechunk` refuses (it wrote empty hash_ids), `run` and
 *   `hitrate` warn, naming the size that fits (the run's summary keeps it
 *   among its caveats).
 * (kvsim compare's repeated runs, unpairable groups, one-seed verdicts and
 * zero-width intervals, items 1 and 10, are in tests/test_compare.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sys/stat.h>

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
    json_t *s = json_loads(r.out, 0, NULL), *c = json_array_get(json_object_get(s, "caveats"), 0);
    assert_string_equal(json_string_value(json_object_get(c, "name")), "block_size");
    assert_true(json_is_true(json_object_get(c, "found")));
    json_decref(s);
    tu_free(&r);
    /* the trace's own size: no warning, no caveat */
    r = tu_kvsim("run --json --set trace.limit=50");
    assert_int_equal(r.status, 0);
    if (strstr(r.err, "warning")) fail_msg("a warning: %s", r.err);
    s = json_loads(r.out, 0, NULL);
    assert_null(json_object_get(s, "caveats"));
    json_decref(s);
    tu_free(&r);
    tu_expect_exit("hitrate --trace traces/default.jsonl --block-tokens 256 --capacity 1000", 0,
                   "kvsim hitrate: warning: traces/default.jsonl: 1500 requests have fewer hash_ids");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rechunk_wrong_fine_blocks),
        cmocka_unit_test(test_run_wrong_block_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
