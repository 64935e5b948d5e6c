/* tests/test_diagnose_pic.c — a PIC run's text summary and the diagnosis
 * of which SLO binds (sim/serving/diagnose.c, sim_serving_explain).
 *
 * The bundled RAGPulse sample (1,000 segment requests), imported, replayed
 * at 2000x on one H200 prefill and one decode instance of Llama-3.1-8B
 * with slo.tbt_ms = 32, priced by the H200's calibration profile (the
 * diagnosis is under test, not the cost model: the scenario is fixed),
 * under cacheblend and mepic: mepic recomputes fewer
 * prompt tokens, has the lower TTFT and yet the lower SLO attainment.
 * Counted here from the requests rows, independently of the summary's
 * percentiles: no request misses slo.ttft_ms (30 s) under either, and the
 * TBT misses are over half the requests under mepic and 10-50% under
 * cacheblend. The text must say so and name decode as the binding
 * resource (not prefill compute, the busiest kind), and show the chunk hit
 * rate on the cache line, not a block hit rate that is always 0 under PIC. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/testutil.h"
#include "tests/sweep_testutil.h"

static char *dir, trace[600], db[600];

static int setup(void **state)
{
    char args[1400];
    dir = su_tempdir();
    snprintf(trace, sizeof trace, "%s/rag.jsonl", dir);
    snprintf(db, sizeof db, "%s/r.db", dir);
    snprintf(args, sizeof args, "trace import ragpulse traces/ragpulse-sample -o %s", trace);
    tu_expect_stdout(args, NULL);
    return 0;
}

static int teardown(void **state)
{
    su_rmrf(dir);
    free(dir);
    return 0;
}

/* `kvsim run` of the sample under policy: its text (caller frees). */
static char *run_text(const char *policy)
{
    char args[2048];
    snprintf(args, sizeof args,
             "run --trace %s --config configs/llama3.1-8b-h200.json --set cluster.prefill=1 --set cluster.decode=1 "
             "--set cost.compute=profile --speed 2000 --set slo.tbt_ms=32 --set kvstore.pic=%s --db %s",
             trace, policy, db);
    cli_result r = tu_kvsim(args);
    assert_int_equal(r.status, 0);
    printf("%s", r.out);
    char *out = strdup(r.out);
    tu_free(&r);
    return out;
}

/* Requests of run id whose metric exceeds limit, from the requests rows. */
static double count_over(int id, const char *metric, double limit)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT sum(%s > %g) FROM requests WHERE run_id=%d", metric, limit, id);
    return su_num(db, sql);
}

static void test_pic_summary_and_binding(void **state)
{
    char *blend = run_text("cacheblend"), *mepic = run_text("mepic");
    /* run 1 cacheblend, run 2 mepic */
    assert_int_equal(count_over(1, "ttft_ms", 30000), 0);
    assert_int_equal(count_over(2, "ttft_ms", 30000), 0);
    double tbt_blend = count_over(1, "tbt_ms", 32), tbt_mepic = count_over(2, "tbt_ms", 32);
    printf("TBT misses: cacheblend %g, mepic %g of 1000\n", tbt_blend, tbt_mepic);
    assert_true(tbt_mepic > 10 * tbt_blend && tbt_blend >= 10 && tbt_blend <= 100);
    assert_non_null(strstr(mepic, "diagnosis  SLO attainment 0.579: 10-50% of requests miss slo.tbt_ms 32"));
    assert_non_null(strstr(blend, "diagnosis  SLO attainment 0.962: 1-10% of requests miss slo.tbt_ms 32"));
    for (char *t = blend; t; t = t == blend ? mepic : NULL) {
        assert_non_null(strstr(t, "under 1% miss slo.ttft_ms 30000"));
        assert_non_null(strstr(t, "binding: decode (utilisation"));
        assert_null(strstr(t, "hit rate 0.000 blocks"));
    }
    assert_non_null(strstr(mepic, "cache      mepic chunks: hit rate 0.721, recompute fraction 0.386"));
    assert_non_null(strstr(blend, "cache      cacheblend chunks: hit rate 0.705, recompute fraction 0.428"));
    free(blend);
    free(mepic);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_pic_summary_and_binding)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
