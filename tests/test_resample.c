/* tests/test_resample.c — trace.resample (sim/trace/resample.c,
 * docs/trace-replay.md "Resampled workloads"): seeds that vary the workload.
 *
 * Expected values are computed here from the original trace, not from a
 * recorded run: a resampled request keeps its offset from its session's
 * first request exactly (ns), so order and think times are kept; poisson
 * keeps the number of requests, and its span of session starts is a sum
 * of (units − 1) exponential gaps whose mean is the trace's mean gap, so
 * it lies within 4 standard deviations, a relative 4 / sqrt(units − 1), of
 * the trace's span; the bootstrap fills each of the trace's session starts
 * with a whole session, and a session drawn again keeps the ids other
 * sessions share and renames the rest. The same seed gives the same
 * workload; another seed another. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <math.h>

#include "sim/trace/trace.h"

#define DEFAULT_TRACE "traces/default.jsonl"

typedef struct reqs {
    sim_request **v;
    size_t n;
} reqs;

/* Every request of path under trace.resample `how` with seed. */
static reqs load(const char *path, int how, uint64_t seed)
{
    sim_trace_opts o = sim_trace_default_opts();
    o.resample = how, o.seed = seed;
    sim_trace *t;
    sim_err err;
    if (sim_trace_open(&t, path, &o, &err)) fail_msg("%s", err.msg);
    reqs r = {NULL, 0};
    size_t cap = 0;
    sim_request *q;
    int rc;
    while ((rc = sim_trace_next(t, &q, &err)) == 1) {
        if (r.n == cap) r.v = realloc(r.v, (cap = cap ? 2 * cap : 1024) * sizeof *r.v);
        r.v[r.n++] = q;
    }
    if (rc < 0) fail_msg("%s", err.msg);
    sim_trace_close(t);
    return r;
}

static void reqs_free(reqs *r)
{
    for (size_t i = 0; i < r->n; i++) sim_request_free(r->v[i]);
    free(r->v);
}

/* The original request of each line (lines are 1-based and unique in a
 * trace without blank lines): by[line]. */
static sim_request **by_line(const reqs *orig)
{
    sim_request **by = calloc(orig->n + 2, sizeof *by);
    for (size_t i = 0; i < orig->n; i++) {
        assert_true(orig->v[i]->line >= 1 && (size_t)orig->v[i]->line <= orig->n + 1);
        by[orig->v[i]->line] = orig->v[i];
    }
    return by;
}

/* The arrival of the first request of each session (by session id; -1
 * for none), of a request stream in arrival order. */
static int64_t *session_starts(const reqs *r, int64_t nsess)
{
    int64_t *start = malloc((size_t)nsess * sizeof *start);
    for (int64_t s = 0; s < nsess; s++) start[s] = -1;
    for (size_t i = 0; i < r->n; i++) {
        int64_t s = r->v[i]->session;
        assert_true(s >= 0 && s < nsess);
        if (start[s] < 0) start[s] = r->v[i]->arrival_ns;
    }
    return start;
}

static bool same_stream(const reqs *a, const reqs *b)
{
    if (a->n != b->n) return false;
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i]->arrival_ns != b->v[i]->arrival_ns || a->v[i]->line != b->v[i]->line ||
            a->v[i]->session != b->v[i]->session || a->v[i]->nblocks != b->v[i]->nblocks ||
            (a->v[i]->nblocks && a->v[i]->keys[a->v[i]->nblocks - 1] != b->v[i]->keys[b->v[i]->nblocks - 1]))
            return false;
    return true;
}

/* The same seed, the same workload; another seed, another. none is the
 * trace itself. */
static void test_deterministic_per_seed(void **state)
{
    (void)state;
    reqs orig = load(DEFAULT_TRACE, SIM_RESAMPLE_NONE, 1), none = load(DEFAULT_TRACE, SIM_RESAMPLE_NONE, 9);
    assert_true(same_stream(&orig, &none));
    for (int how = SIM_RESAMPLE_POISSON; how <= SIM_RESAMPLE_SESSIONS; how++) {
        reqs a = load(DEFAULT_TRACE, how, 7), b = load(DEFAULT_TRACE, how, 7), c = load(DEFAULT_TRACE, how, 8);
        assert_true(same_stream(&a, &b));
        assert_false(same_stream(&a, &c));
        assert_false(same_stream(&a, &orig));
        for (size_t i = 1; i < a.n; i++) assert_true(a.v[i]->arrival_ns >= a.v[i - 1]->arrival_ns);
        reqs_free(&a), reqs_free(&b), reqs_free(&c);
    }
    reqs_free(&orig), reqs_free(&none);
}

/* A trace without sessions: 2,001 requests 100 ms apart (span 200 s).
 * Poisson keeps them all, the first at 0, and a span within
 * 4 / sqrt(2000) = 8.9% of 200 s, for each of 5 seeds. */
static void test_poisson_rate(void **state)
{
    (void)state;
    char *path = tu_temp_path();
    FILE *f = fopen(path, "w");
    for (int i = 0; i <= 2000; i++)
        fprintf(f, "{\"timestamp\": %d, \"input_length\": 100, \"output_length\": 5, \"hash_ids\": [%d]}\n", i * 100,
                i);
    fclose(f);
    double tol = 4 / sqrt(2000.0), sum = 0;
    for (uint64_t seed = 1; seed <= 5; seed++) {
        reqs r = load(path, SIM_RESAMPLE_POISSON, seed);
        assert_int_equal(r.n, 2001);
        assert_int_equal(r.v[0]->arrival_ns, 0);
        double span = (double)r.v[r.n - 1]->arrival_ns / 1e9;
        if (fabs(span / 200 - 1) > tol)
            fail_msg("seed %llu: span %.3f s, want 200 s ± %.1f%%", (unsigned long long)seed, span, 100 * tol);
        sum += span;
        reqs_free(&r);
    }
    /* the mean of 5 spans: within 4 / sqrt(5 · 2000) = 4% */
    if (fabs(sum / 5 / 200 - 1) > 4 / sqrt(10000.0)) fail_msg("mean span %.3f s", sum / 5);
    unlink(path);
    free(path);
}

/* Poisson on the bundled trace (784 sessions): every request keeps its
 * offset from its session's first request, to the ns, and so its order;
 * the span of session starts stays within 4 / sqrt(783) = 14.3%. */
static void test_poisson_keeps_sessions(void **state)
{
    (void)state;
    reqs orig = load(DEFAULT_TRACE, SIM_RESAMPLE_NONE, 1), r = load(DEFAULT_TRACE, SIM_RESAMPLE_POISSON, 3);
    assert_int_equal(r.n, orig.n);
    int64_t nsess = 784, *o_start = session_starts(&orig, nsess), *r_start = session_starts(&r, nsess);
    sim_request **by = by_line(&orig);
    int64_t *last_line = malloc((size_t)nsess * sizeof *last_line);
    for (int64_t s = 0; s < nsess; s++) last_line[s] = 0;
    for (size_t i = 0; i < r.n; i++) {
        const sim_request *q = r.v[i], *p = by[q->line];
        assert_non_null(p);
        assert_int_equal(q->session, p->session);
        assert_int_equal(q->arrival_ns - r_start[q->session], p->arrival_ns - o_start[p->session]);
        assert_true(q->line > last_line[q->session]); /* the session's turns in trace order */
        last_line[q->session] = q->line;
    }
    int64_t o_lo = INT64_MAX, o_hi = 0, r_lo = INT64_MAX, r_hi = 0;
    for (int64_t s = 0; s < nsess; s++) {
        o_lo = o_start[s] < o_lo ? o_start[s] : o_lo, o_hi = o_start[s] > o_hi ? o_start[s] : o_hi;
        r_lo = r_start[s] < r_lo ? r_start[s] : r_lo, r_hi = r_start[s] > r_hi ? r_start[s] : r_hi;
    }
    assert_int_equal(r_lo, o_lo);
    double ratio = (double)(r_hi - r_lo) / (double)(o_hi - o_lo);
    if (fabs(ratio - 1) > 4 / sqrt(783.0)) fail_msg("span of session starts × %.3f", ratio);
    free(o_start), free(r_start), free(by), free(last_line);
    reqs_free(&orig), reqs_free(&r);
}

/* Which ids of the original trace more than one session has. */
static bool shared_id(const reqs *orig, int64_t id)
{
    int64_t owner = -1;
    for (size_t i = 0; i < orig->n; i++)
        for (int32_t b = 0; b < orig->v[i]->nblocks; b++)
            if (orig->v[i]->hash_ids[b] == id) {
                if (owner >= 0 && owner != orig->v[i]->session) return true;
                owner = orig->v[i]->session;
            }
    return false;
}

/* The bootstrap on the bundled trace: slot s (the s-th session start of
 * the trace) holds a whole original session, all of its turns in order at
 * their offsets from that start; a session's first use keeps its ids, a
 * later one keeps exactly the ids other sessions share, and chains its
 * keys from its ids. */
static void test_sessions_bootstrap(void **state)
{
    (void)state;
    reqs orig = load(DEFAULT_TRACE, SIM_RESAMPLE_NONE, 1), r = load(DEFAULT_TRACE, SIM_RESAMPLE_SESSIONS, 5);
    int64_t nsess = 784, *o_start = session_starts(&orig, nsess), *r_start = session_starts(&r, nsess);
    int64_t *o_count = calloc((size_t)nsess, sizeof *o_count), *src = malloc((size_t)nsess * sizeof *src),
            *count = calloc((size_t)nsess, sizeof *count), *uses = calloc((size_t)nsess, sizeof *uses);
    for (size_t i = 0; i < orig.n; i++) o_count[orig.v[i]->session]++;
    for (int64_t s = 0; s < nsess; s++) src[s] = -1;
    sim_request **by = by_line(&orig);
    int64_t copies = 0, kept = 0, renamed = 0;
    for (size_t i = 0; i < r.n; i++) {
        const sim_request *q = r.v[i], *p = by[q->line];
        int64_t s = q->session;
        if (src[s] < 0) src[s] = p->session, copies += uses[p->session]++ > 0;
        assert_int_equal(p->session, src[s]);
        assert_int_equal(r_start[s], o_start[s]); /* the slot's start is the trace's s-th */
        assert_int_equal(q->arrival_ns - r_start[s], p->arrival_ns - o_start[p->session]);
        assert_int_equal(q->input_len, p->input_len);
        assert_int_equal(q->nblocks, p->nblocks);
        count[s]++;
        uint64_t key = 0;
        for (int32_t b = 0; b < q->nblocks; b++) {
            key = sim_block_key(key, q->hash_ids[b]);
            assert_true(q->keys[b] == key);
        }
    }
    for (int64_t s = 0; s < nsess; s++) assert_int_equal(count[s], o_count[src[s]]);
    assert_true(copies > 100); /* about 784 / e sessions are drawn more than once */
    /* slot s holds copy k of its session, k = the earlier slots with the
     * same: the first later copy's ids */
    for (int64_t s = 0; s < nsess && !renamed; s++) {
        int64_t k = 0;
        for (int64_t e = 0; e < s; e++) k += src[e] == src[s];
        if (k == 0) continue;
        for (size_t i = 0; i < r.n; i++) {
            const sim_request *q = r.v[i], *p = by[q->line];
            if (q->session != s) continue;
            for (int32_t b = 0; b < q->nblocks; b++) {
                bool same = q->hash_ids[b] == p->hash_ids[b];
                assert_true(same == shared_id(&orig, p->hash_ids[b]));
                kept += same, renamed += !same;
            }
        }
    }
    assert_true(renamed > 0);
    assert_true(kept > 0); /* and the ids two sessions share stay as they were */
    free(o_start), free(r_start), free(o_count), free(src), free(count), free(uses), free(by);
    reqs_free(&orig), reqs_free(&r);
}

/* A segment trace cannot be bootstrapped (its keys come from content);
 * poisson works on it. Config values are checked. */
static void test_refusals(void **state)
{
    (void)state;
    char *out = tu_temp_path(), args[512];
    snprintf(args, sizeof args, "trace import ragpulse %s -o %s", RAGPULSE_SAMPLE, out);
    cli_result c = tu_kvsim(args);
    assert_int_equal(c.status, 0);
    tu_free(&c);
    sim_trace_opts o = sim_trace_default_opts();
    o.resample = SIM_RESAMPLE_SESSIONS;
    sim_trace *t;
    sim_err err;
    sim_request *q;
    assert_int_equal(sim_trace_open(&t, out, &o, &err), 0);
    assert_int_equal(sim_trace_next(t, &q, &err), -1);
    assert_non_null(strstr(err.msg, "trace.resample = sessions cannot copy a segment request"));
    sim_trace_close(t);
    reqs r = load(out, SIM_RESAMPLE_POISSON, 2);
    assert_int_equal(r.n, 1000);
    reqs_free(&r);
    tu_expect_exit("run --set trace.resample=bootstrap", 2,
                   "config key 'trace.resample': 'bootstrap' is not one of none, poisson, sessions");
    tu_remove_temp(out);
}

/* kvsim run: a seed now moves the workload's results, and the report says
 * what its seeds varied. */
static void test_run_and_report(void **state)
{
    (void)state;
    char *db = tu_temp_path(), args[512];
    for (int s = 1; s <= 3; s++)
        for (int p = 0; p < 2; p++) {
            snprintf(args, sizeof args, "run --db %s --seed %d --set trace.limit=80%s", db, s,
                     p ? " --set trace.resample=poisson" : "");
            cli_result c = tu_kvsim(args);
            if (c.status) fail_msg("kvsim %s: %s", args, c.err);
            tu_free(&c);
        }
    if (!tu_have_gnuplot()) {
        tu_remove_temp(db);
        return;
    }
    char *dir = tu_temp_path();
    const struct {
        const char *where, *want;
    } cases[] = {
        {"none", "every seed replays the same workload (<code>trace.resample</code> = none), so they do not cover "
                 "workload variability"},
        {"poisson", "the workload too (<code>trace.resample</code> = poisson: arrivals redrawn as a Poisson process, "
                    "sessions kept)"},
    };
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args,
                 "report --db %s -o %s --where \"json_extract(config_json, '\\$.trace.resample') = '%s'\"", db, dir,
                 cases[i].where);
        cli_result c = tu_kvsim(args);
        if (c.status) fail_msg("kvsim %s: %s", args, c.err);
        tu_free(&c);
        char path[600], cmd[700];
        snprintf(path, sizeof path, "%s/index.html", dir);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        char *html = tu_slurp(f);
        fclose(f);
        if (!strstr(html, cases[i].want)) fail_msg("%s lacks '%s'", path, cases[i].want);
        free(html);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
    }
    free(dir);
    tu_remove_temp(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deterministic_per_seed),
        cmocka_unit_test(test_poisson_rate),
        cmocka_unit_test(test_poisson_keeps_sessions),
        cmocka_unit_test(test_sessions_bootstrap),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_run_and_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
