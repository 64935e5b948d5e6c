/* tests/test_sessions.c — closed-loop session replay (trace.replay = closed,
 * sim/trace/sessions.h, docs/trace.md).
 *
 * Expected values follow from the rule, not from a recorded run: a
 * follow-up turn's arrival_ms is the previous turn's done_ms (from the
 * same requests table) plus its think_ms / speed, or plus the recorded gap
 * between the two turns' timestamps; a rejected turn ends at its rejection.
 * The summary's shift is arrival − recorded timestamp over every request.
 * Open replays keep the recorded times, and a trace without sessions
 * replays the same requests rows in either mode. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <math.h>

#define EPS 1e-6 /* ms: the requests table's times are ns / 1e6 */

/* A two-turn session; the second turn's extra fields are `extra`. */
static char *two_turns(const char *first_extra, const char *extra)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 50, \"hash_ids\": [1, 2], \"session\": 7, "
             "\"turn\": 0%s}\n"
             "{\"timestamp\": 100, \"input_length\": 1600, \"output_length\": 20, \"hash_ids\": [1, 2, 3, 4], "
             "\"session\": 7, \"turn\": 1%s}\n",
             first_extra, extra);
    return tu_write_temp(text);
}

/* kvsim run on trace with `opts` into a fresh DB; returns the DB's path
 * and the printed JSON summary in *summary (caller decrefs). */
static char *run_db(const char *trace, const char *opts, json_t **summary)
{
    char *db = tu_temp_path(), args[2048];
    snprintf(args, sizeof args, "run --json --trace %s --db %s %s", trace, db, opts);
    json_t *s = tu_kvsim_json(args);
    if (summary) *summary = s;
    else json_decref(s);
    return db;
}

/* A number from the requests table: `col` of the request with that id. */
static double req_num(const char *db, const char *col, int id)
{
    char q[256];
    snprintf(q, sizeof q, "SELECT %s FROM requests WHERE id = %d", col, id);
    char *t = tu_sql_text(db, q);
    if (!*t) fail_msg("%s: no %s for request %d", db, col, id);
    double v = strtod(t, NULL);
    free(t);
    return v;
}

static double shift(const json_t *s, const char *stat)
{
    return json_number_value(json_object_get(json_object_get(json_object_get(s, "replay"), "arrival_shift_ms"), stat));
}

/* think_ms 500: turn 2 arrives exactly 500 ms after turn 1's last token,
 * in both serving models; at speed 2 the think time is 250 ms. */
static void test_think_ms(void **state)
{
    (void)state;
    char *trace = two_turns("", ", \"think_ms\": 500");
    static const struct {
        const char *opts;
        double think;
    } cases[] = {
        {"--set trace.replay=closed", 500},
        {"--set trace.replay=closed --set cluster.mode=aggregated", 500},
        {"--set trace.replay=closed --speed 2", 250},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *s;
        char *db = run_db(trace, cases[i].opts, &s);
        double a0 = req_num(db, "arrival_ms", 0), d0 = req_num(db, "done_ms", 0), a1 = req_num(db, "arrival_ms", 1);
        assert_double_equal(a0, 0, EPS);
        assert_true(d0 > 100); /* later than the recorded second turn: the turn moved */
        assert_double_equal(a1, d0 + cases[i].think, EPS);
        double recorded = 100 / (strstr(cases[i].opts, "--speed 2") ? 2.0 : 1.0);
        assert_double_equal(shift(s, "max"), a1 - recorded, 1e-5);
        assert_double_equal(shift(s, "mean"), (a1 - recorded) / 2, 1e-5);
        const json_t *rp = json_object_get(s, "replay");
        assert_string_equal(json_string_value(json_object_get(rp, "mode")), "closed");
        assert_int_equal(tu_int_field(rp, "sessions"), 1);
        assert_int_equal(tu_int_field(rp, "follow_up_turns"), 1);
        json_decref(s);
        tu_remove_temp(db);
    }
    tu_remove_temp(trace);
}

/* Open (the default and spelled out): the recorded times, no replay object. */
static void test_open_unchanged(void **state)
{
    (void)state;
    char *trace = two_turns("", ", \"think_ms\": 500");
    const char *opts[] = {"", "--set trace.replay=open", "--set cluster.mode=aggregated"};
    for (size_t i = 0; i < 3; i++) {
        json_t *s;
        char *db = run_db(trace, opts[i], &s);
        assert_double_equal(req_num(db, "arrival_ms", 0), 0, EPS);
        assert_double_equal(req_num(db, "arrival_ms", 1), 100, EPS);
        assert_null(json_object_get(s, "replay"));
        json_decref(s);
        tu_remove_temp(db);
    }
    tu_remove_temp(trace);
}

/* Without think_ms the think time is the recorded gap (100 ms). */
static void test_default_think_is_recorded_gap(void **state)
{
    (void)state;
    char *trace = two_turns("", "");
    char *db = run_db(trace, "--set trace.replay=closed", NULL);
    assert_double_equal(req_num(db, "arrival_ms", 1), req_num(db, "done_ms", 0) + 100, EPS);
    tu_remove_temp(db);
    tu_remove_temp(trace);
}

/* A rejected turn ends its turn at the rejection: turn 1 is rejected on
 * arrival at 0 (its TTFT SLO of 1 ms cannot be met), turn 2 comes at 500. */
static void test_rejected_turn_ends_it(void **state)
{
    (void)state;
    char *trace = two_turns(", \"slo_ttft_ms\": 1", ", \"think_ms\": 500");
    char *db = run_db(trace, "--set trace.replay=closed --set policy.admission=slo_reject", NULL);
    char *status = tu_sql_text(db, "SELECT status FROM requests WHERE id = 0");
    assert_string_equal(status, "rejected");
    free(status);
    assert_double_equal(req_num(db, "arrival_ms", 1), 500, EPS);
    tu_remove_temp(db);
    tu_remove_temp(trace);
}

/* A think time shorter than the recorded gap brings a turn forward past
 * other sessions' requests (the reader reads ahead for it), and turns held
 * behind an unfinished one follow each other: session 1's turns recorded
 * at 0, 1 and 2 ms come 100 ms after each other's ends; session 2's second
 * turn, recorded at 60 s, comes 10 ms after its first ends, before session
 * 3's request at 50 s. */
static void test_read_ahead_and_held_turns(void **state)
{
    (void)state;
    char *trace = tu_write_temp(
        "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 10, \"hash_ids\": [1], \"session\": 1}\n"
        "{\"timestamp\": 1, \"input_length\": 700, \"output_length\": 10, \"hash_ids\": [1, 2], \"session\": 1, "
        "\"think_ms\": 100}\n"
        "{\"timestamp\": 2, \"input_length\": 800, \"output_length\": 10, \"hash_ids\": [1, 2], \"session\": 1, "
        "\"think_ms\": 100}\n"
        "{\"timestamp\": 10, \"input_length\": 600, \"output_length\": 10, \"hash_ids\": [9], \"session\": 2}\n"
        "{\"timestamp\": 50000, \"input_length\": 600, \"output_length\": 10, \"hash_ids\": [20], \"session\": 3}\n"
        "{\"timestamp\": 60000, \"input_length\": 700, \"output_length\": 10, \"hash_ids\": [9, 10], \"session\": 2, "
        "\"think_ms\": 10}\n");
    const char *modes[] = {"", "--set cluster.mode=aggregated"};
    for (int m = 0; m < 2; m++) {
        char opts[128];
        snprintf(opts, sizeof opts, "--set trace.replay=closed %s", modes[m]);
        char *db = run_db(trace, opts, NULL);
        assert_double_equal(req_num(db, "arrival_ms", 1), req_num(db, "done_ms", 0) + 100, EPS);
        assert_double_equal(req_num(db, "arrival_ms", 2), req_num(db, "done_ms", 1) + 100, EPS);
        assert_double_equal(req_num(db, "arrival_ms", 3), 10, EPS);
        assert_double_equal(req_num(db, "arrival_ms", 4), 50000, EPS);
        double a5 = req_num(db, "arrival_ms", 5);
        assert_double_equal(a5, req_num(db, "done_ms", 3) + 10, EPS);
        assert_true(a5 < 50000);
        tu_remove_temp(db);
    }
    tu_remove_temp(trace);
}

/* A multi-round QA trace from kvsim trace gen: "turn" counts 0, 1, … per
 * session, and in a closed replay (both models) every follow-up turn
 * arrives its recorded gap after the previous turn of its session ends. */
static void test_generated_sessions(void **state)
{
    (void)state;
    char *text = tu_gen_text("--workload multiround-qa --requests 24 --users 4 --rounds 3 --doc-tokens 2000 --seed 5");
    char *trace = tu_write_temp(text);
    int64_t session[24], turn[24], prev[24], last[64];
    double ts[24];
    for (int s = 0; s < 64; s++) last[s] = -1;
    char *line = text;
    for (int i = 0; i < 24; i++) {
        json_t *o = json_loads(line, JSON_DISABLE_EOF_CHECK, NULL);
        assert_non_null(o);
        session[i] = tu_int_field(o, "session"), turn[i] = tu_int_field(o, "turn");
        ts[i] = json_number_value(json_object_get(o, "timestamp"));
        assert_true(session[i] < 64);
        prev[i] = last[session[i]];
        assert_int_equal(turn[i], prev[i] < 0 ? 0 : turn[prev[i]] + 1);
        last[session[i]] = i;
        json_decref(o);
        line = strchr(line, '\n') + 1;
    }
    const char *modes[] = {"", "--set cluster.mode=aggregated"};
    for (int m = 0; m < 2; m++) {
        char opts[128];
        snprintf(opts, sizeof opts, "--set trace.replay=closed %s", modes[m]);
        char *db = run_db(trace, opts, NULL);
        int follow = 0;
        for (int i = 0; i < 24; i++) {
            double want = prev[i] < 0 ? ts[i] : req_num(db, "done_ms", (int)prev[i]) + ts[i] - ts[prev[i]];
            assert_double_equal(req_num(db, "arrival_ms", i), want, EPS);
            follow += prev[i] >= 0;
        }
        assert_true(follow >= 12);
        tu_remove_temp(db);
    }
    tu_remove_temp(trace);
    free(text);
}

/* Without sessions a closed replay is the open one, row for row. */
static void test_sessionless_same_as_open(void **state)
{
    (void)state;
    char *text = tu_gen_text("--workload rag --requests 60 --seed 3");
    assert_null(strstr(text, "\"session\""));
    char *trace = tu_write_temp(text);
    const char *q = "SELECT group_concat(arrival_ms || ',' || done_ms || ',' || ttft_ms || ',' || hit_blocks, ';') "
                    "FROM (SELECT * FROM requests ORDER BY id)";
    char *open_db = run_db(trace, "", NULL), *closed_db = run_db(trace, "--set trace.replay=closed", NULL);
    char *a = tu_sql_text(open_db, q), *b = tu_sql_text(closed_db, q);
    assert_true(strlen(a) > 100);
    assert_string_equal(a, b);
    free(a), free(b);
    tu_remove_temp(open_db), tu_remove_temp(closed_db), tu_remove_temp(trace);
    free(text);
}

/* Bad session fields and values: exit 2 naming file, line, field. */
static void test_errors(void **state)
{
    (void)state;
    char *t = tu_write_temp("{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5, \"hash_ids\": [], "
                            "\"session\": 7, \"turn\": 3}\n"
                            "{\"timestamp\": 1, \"input_length\": 10, \"output_length\": 5, \"hash_ids\": [], "
                            "\"session\": 7, \"turn\": 2}\n");
    char args[512], want[512];
    snprintf(args, sizeof args, "run --trace %s --set trace.replay=closed", t);
    snprintf(want, sizeof want, "%s:2: turn: 2 does not follow turn 3 of session 7", t);
    tu_expect_exit(args, 2, want);
    tu_remove_temp(t);
    static const struct {
        const char *extra, *msg;
    } bad[] = {
        {"\"turn\": 1", ":1: turn: given without \"session\""},
        {"\"session\": 1, \"think_ms\": -5", ":1: think_ms: -5 is negative"},
        {"\"session\": 1, \"think_ms\": \"soon\"", ":1: think_ms: expected a number, got a string"},
        {"\"session\": 1, \"turn\": 1.5", ":1: turn: expected an integer, got a real number"},
        {"\"session\": 1, \"think_ms\": 1e12", ":1: think_ms: 1000000000000 is too large"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char line[256];
        snprintf(line, sizeof line,
                 "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5, \"hash_ids\": [], %s}\n",
                 bad[i].extra);
        t = tu_write_temp(line);
        snprintf(args, sizeof args, "run --trace %s", t);
        snprintf(want, sizeof want, "%s%s", t, bad[i].msg);
        tu_expect_exit(args, 2, want);
        tu_remove_temp(t);
    }
    tu_expect_exit("run --set trace.replay=half", 2, "config key 'trace.replay': 'half' is not one of open, closed");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_think_ms),
        cmocka_unit_test(test_open_unchanged),
        cmocka_unit_test(test_default_think_is_recorded_gap),
        cmocka_unit_test(test_rejected_turn_ends_it),
        cmocka_unit_test(test_read_ahead_and_held_turns),
        cmocka_unit_test(test_generated_sessions),
        cmocka_unit_test(test_sessionless_same_as_open),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
