/* tests/test_layout.c — the layer rule is enforced: mk/check-layout.sh
 * passes on the tree as it is, and fails, naming the file and the rooms,
 * when the rule is changed so that an existing include breaks it, or when
 * the rule itself gets a circle. Needs the objects of the optimized build
 * (make test builds them first); skips with a reason without them. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/testutil.h"

typedef struct sh_result {
    int status;
    char *out;
} sh_result;

static sh_result sh(const char *cmd)
{
    FILE *o = tmpfile();
    char full[2048];
    snprintf(full, sizeof full, "%s >/dev/fd/%d 2>&1", cmd, fileno(o));
    int st = system(full);
    sh_result r = {WIFEXITED(st) ? WEXITSTATUS(st) : 128, tu_slurp(o)};
    fclose(o);
    return r;
}

static bool have_objects(void)
{
    if (access("build/sim/trace/trace.o", R_OK) == 0) return true;
    printf("skip: build/ objects absent (make check-layout builds them)\n");
    return false;
}

/* Run the checker against mk/layers.txt rewritten by a sed expression. */
static sh_result check_with(const char *sed_expr)
{
    char *layers = tu_write_temp("");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "sed '%s' mk/layers.txt > %s && KVSIM_LAYERS=%s mk/check-layout.sh build", sed_expr,
             layers, layers);
    sh_result r = sh(cmd);
    unlink(layers);
    free(layers);
    return r;
}

static void test_tree_follows_the_rule(void **state)
{
    if (!have_objects()) skip();
    sh_result r = sh("mk/check-layout.sh build");
    if (r.status != 0) fail_msg("check-layout failed:\n%s", r.out);
    assert_non_null(strstr(r.out, "0 layer violations, 0 circles"));
    free(r.out);
}

static void test_lower_room_including_higher_fails(void **state)
{
    if (!have_objects()) skip();
    /* sim/trace may no longer include sim/index: trace_stats.c includes keyset.h. */
    sh_result r = check_with("s|^sim/trace  *sim sim/index$|sim/trace sim|");
    assert_int_equal(r.status, 1);
    if (!strstr(r.out,
                "sim/trace/trace_stats.c includes sim/index/keyset.h: room sim/trace may not include room sim/index"))
        fail_msg("unexpected output:\n%s", r.out);
    free(r.out);
}

static void test_circle_in_the_rule_fails(void **state)
{
    if (!have_objects()) skip();
    sh_result r = check_with("s|^sim/index  *sim$|sim/index sim sim/trace|");
    assert_int_equal(r.status, 1);
    if (!strstr(r.out, "mk/layers.txt has a circle among rooms")) fail_msg("unexpected output:\n%s", r.out);
    free(r.out);
}

/* A command file over the bound fails, named with its count of code lines;
 * that count, computed here by a second rule (C, line by line), matches. */
static int code_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        const char *p = line + strspn(line, " \t");
        bool skip = *p == '"' || *p == '\n' || *p == '\0' || *p == '*' || !strncmp(p, "/*", 2) || !strncmp(p, "//", 2);
        n += !skip;
    }
    fclose(f);
    return n;
}

static void test_fat_command_file_fails(void **state)
{
    if (!have_objects()) skip();
    int n = code_lines("sim/cli/cmd_run.c");
    char cmd[256], want[256];
    snprintf(cmd, sizeof cmd, "KVSIM_CMD_MAX_CODE=%d mk/check-layout.sh build", n - 1);
    sh_result r = sh(cmd);
    assert_int_equal(r.status, 1);
    snprintf(want, sizeof want,
             "layout: sim/cli/cmd_run.c has %d lines of code (blank, comment and --help lines aside), over %d", n,
             n - 1);
    if (!strstr(r.out, want)) fail_msg("want '%s' in:\n%s", want, r.out);
    free(r.out);
    snprintf(cmd, sizeof cmd, "KVSIM_CMD_MAX_CODE=%d mk/check-layout.sh build", n);
    r = sh(cmd);
    assert_null(strstr(r.out, "sim/cli/cmd_run.c has"));
    free(r.out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fat_command_file_fails),
        cmocka_unit_test(test_tree_follows_the_rule),
        cmocka_unit_test(test_lower_room_including_higher_fails),
        cmocka_unit_test(test_circle_in_the_rule_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
