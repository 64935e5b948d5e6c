/* tests/test_trace_segscan.c — the trace reader's recognizer of flat
 * "segments" lists (sim/trace/trace.c) against the parser of record
 * (jansson and sim_seg_parse). A line the recognizer reads must give the
 * request jansson gives; a line it cannot vouch for must reach jansson,
 * which words the message. A line is sent to jansson by spelling one
 * segment kind with an escape ("ch\u0075nk" is "chunk"), which the
 * recognizer declines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sim/trace/trace.h"
#include "tests/testutil.h"

#define MAXREQ 8

/* Read every request of text (block_tokens 512); the reader's rc. */
static int read_text(const char *text, sim_request **reqs, int *n, sim_err *err)
{
    char *path = tu_write_temp(text);
    sim_trace_opts o = sim_trace_default_opts();
    sim_trace *t;
    assert_int_equal(sim_trace_open(&t, path, &o, err), 0);
    int rc;
    sim_request *r;
    *n = 0;
    while ((rc = sim_trace_next(t, &r, err)) == 1) {
        assert_true(*n < MAXREQ);
        reqs[(*n)++] = r;
    }
    sim_trace_close(t);
    unlink(path);
    free(path);
    return rc;
}

static void assert_same_request(const sim_request *a, const sim_request *b)
{
    assert_int_equal(a->input_len, b->input_len);
    assert_int_equal(a->output_len, b->output_len);
    assert_int_equal(a->nsegs, b->nsegs);
    assert_int_equal(a->nblocks, b->nblocks);
    for (int32_t i = 0; i < a->nsegs; i++) {
        const sim_segment *x = &a->segs[i], *y = &b->segs[i];
        assert_int_equal(x->kind, y->kind);
        assert_int_equal(x->len, y->len);
        assert_int_equal(x->unique, y->unique);
        assert_int_equal(x->id, y->id);
        assert_int_equal(x->first, y->first);
        assert_int_equal(x->nids, y->nids);
        for (int32_t j = 0; j < x->nids; j++) assert_int_equal(a->seg_ids[x->first + j], b->seg_ids[y->first + j]);
    }
    for (int32_t i = 0; i < a->nblocks; i++) {
        assert_int_equal(a->keys[i], b->keys[i]);
        assert_int_equal(a->hash_ids[i], b->hash_ids[i]);
    }
}

/* Each line as written (recognized) and with its chunk kind escaped
 * (jansson) gives the same request: a prefix of 600 tokens (2 blocks of
 * 512, ids 500 and 7), chunks, a unique prompt (id null) and a named one
 * (id 9), keys in any order with spaces around them; input_length given
 * or derived (600 + 166 + 22 + 4 = 792 tokens, 2 blocks). */
static void test_segscan_same_requests(void **state)
{
    static const char *const lines[] = {
        "{\"timestamp\": 2, \"output_length\": 5, \"segments\": [{\"k\":\"prefix\",\"hash_ids\":[500, 7],\"len\":600}, "
        "{\"k\":\"%s\",\"id\":15,\"len\":166}, {\"k\":\"prompt\",\"id\":null,\"len\":22}, "
        "{\"k\":\"prompt\",\"id\":9,\"len\":4}]}\n",
        "{\"timestamp\": 3, \"input_length\": 210, \"output_length\": 1, \"segments\": [ { \"len\" : 200 , \"id\" : -4 "
        ","
        " \"k\" : \"%s\" } , {\"id\":null,\"k\":\"prompt\",\"len\":10} ] }\n",
    };
    for (size_t l = 0; l < sizeof lines / sizeof *lines; l++) {
        char plain[512], escaped[512];
        snprintf(plain, sizeof plain, lines[l], "chunk");
        snprintf(escaped, sizeof escaped, lines[l], "ch\\u0075nk");
        sim_request *a[MAXREQ], *b[MAXREQ];
        int na, nb;
        sim_err err;
        assert_int_equal(read_text(plain, a, &na, &err), 0);
        assert_int_equal(read_text(escaped, b, &nb, &err), 0);
        assert_int_equal(na, 1);
        assert_int_equal(nb, 1);
        assert_int_equal(a[0]->input_len, l == 0 ? 792 : 210);
        assert_int_equal(a[0]->nblocks, l == 0 ? 2 : 1);
        assert_same_request(a[0], b[0]);
        sim_request_free(a[0]);
        sim_request_free(b[0]);
    }
}

/* Lines the recognizer must leave to jansson, each with the message of
 * record (the same as before the recognizer existed). */
static void test_segscan_declines_with_message(void **state)
{
    static const struct {
        const char *segs, *message;
    } cases[] = {
        {"{\"k\":\"chunk\",\"id\":null,\"len\":16}", "segments[0].id: expected an integer, got null"},
        {"{\"k\":\"chunk\",\"id\":3,\"len\":16}, {\"k\":\"prefix\",\"hash_ids\":[1],\"len\":16}",
         "segments[1].k: a prefix segment must come first (and only once)"},
        {"{\"k\":\"prefix\",\"hash_ids\":[1,2],\"len\":16}",
         "segments[0].hash_ids: 2 ids but len 16 is 1 blocks of 512 tokens"},
        {"{\"k\":\"chunk\",\"id\":3,\"len\":0}", "segments[0].len: 0 tokens (a segment needs at least 1)"},
        {"{\"k\":\"chunk\",\"id\":3,\"len\":16.0}", "segments[0].len: expected an integer, got a real number"},
        {"{\"k\":\"chunky\",\"id\":3,\"len\":16}", "segments[0].k: \"chunky\" is not one of prefix|chunk|prompt"},
        {"{\"k\":\"chunk\",\"id\":3,\"len\":16,\"x\":1}", "segments[0].x: unknown key for a chunk segment"},
        {"{\"k\":\"prefix\",\"hash_ids\":[1],\"len\":16,\"id\":3}", "segments[0].id: unknown key for a prefix segment"},
        {"{\"k\":\"chunk\",\"len\":16}", "segments[0].id: missing"},
        {"{\"k\":\"prompt\",\"id\":true,\"len\":16}", "segments[0].id: expected an integer or null, got a boolean"},
        {"{\"k\":\"chunk\",\"k\":\"chunk\",\"id\":3,\"len\":16}", "duplicate object key"},
        {"", "segments: empty (a prompt needs at least one segment)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char line[512];
        snprintf(line, sizeof line, "{\"timestamp\": 2, \"output_length\": 5, \"segments\": [%s]}\n", cases[i].segs);
        sim_request *r[MAXREQ];
        int n;
        sim_err err;
        assert_int_equal(read_text(line, r, &n, &err), -1);
        if (!strstr(err.msg, cases[i].message)) fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, cases[i].message);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_segscan_same_requests),
        cmocka_unit_test(test_segscan_declines_with_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
