/* tests/test_errors.c — error messages that say what to do next.
 *
 * A user who mistypes a path or a preset, or feeds a trace in another
 * format, gets an exit 2 whose message names the value and the next step:
 * where the bundled traces are, which presets exist, which importer to run.
 * The usage line lists every trace subcommand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

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
                   "unknown hardware preset 'h100': the presets are a800x8, cpu-local, h100x1");
    tu_expect_exit("run --set model=llama3", 2, "unknown model preset 'llama3': the presets are ");
    tu_expect_exit("run --set model=llama3", 2, "llama3-70b, llama3.1-8b");
}

static void test_foreign_trace_suggests_import(void **state)
{
    (void)state;
    tu_expect_exit("run --trace traces/ragpulse-sample/0_trace.jsonl.gz", 2,
                   "0_trace.jsonl.gz:1: timestamp: expected a number, got a string: a trace in another format? "
                   "convert it with `kvsim trace import ragpulse|azure|burstgpt`");
}

static void test_usage_lists_trace_tools(void **state)
{
    (void)state;
    tu_expect_stdout("--help", "trace tools: stats, gen, import (azure, burstgpt, ragpulse), rechunk");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_trace_points_at_bundled),
        cmocka_unit_test(test_unknown_preset_lists_presets),
        cmocka_unit_test(test_foreign_trace_suggests_import),
        cmocka_unit_test(test_usage_lists_trace_tools),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
