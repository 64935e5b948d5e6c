/* tests/test_optable_cache.c — the cache of parsed measured tables
 * (sim/cost/optable_cache.c): a table read from it prices exactly as one
 * parsed from its CSV; a damaged, truncated or foreign file is ignored and
 * written anew; a changed CSV is never priced from the old one's file; an
 * unwritable folder, or KVSIM_CACHE_DIR set empty, leaves parsing alone.
 * Each check compares against the tables loaded with the cache off, so the
 * expected values come from the CSV parser, not from the cache. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/cost/optable.h"
#include "tests/testutil.h"

#define H100 "configs/optables/h100_sxm"

static void rm_rf(const char *dir) /* a mkdtemp name: no quote in it */
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* A fixed set of lookups over every family of the H100 tables, on and
 * between measured shapes (with the notes they leave quiet). */
enum { NQ = 10 };
static void lookups(sim_optable *t, double *v)
{
    sim_optable_quiet(t, true);
    v[0] = sim_optable_gemm_ms(t, "bfloat16", 1, 1024, 1024);
    v[1] = sim_optable_gemm_ms(t, "bfloat16", 300, 4096, 14336);
    v[2] = sim_optable_gemm_ms(t, "fp8", 77, 6144, 4096);
    v[3] = sim_optable_ctx_attn_ms(t, "bfloat16", 32, 8, 128, 1, 3000);
    v[4] = sim_optable_gen_attn_ms(t, "bfloat16", 32, 8, 128, 17, 5000);
    v[5] = sim_optable_gen_attn_ms(t, "fp8", 12, 12, 128, 64, 900);
    v[6] = sim_optable_allreduce_ms(t, 2, true, 4096 * 64);
    v[7] = sim_optable_nccl_ms(t, "all_gather", 4, 1e6);
    v[8] = sim_optable_moe_ms(t, "bfloat16", 2048, 768, 8, 128, 1, 1, "balanced", 100);
    v[9] = sim_optable_moe_ms(t, "bfloat16", 4096, 14336, 2, 8, 2, 1, "balanced", 333);
}

/* Load dir (the MoE family too) with KVSIM_CACHE_DIR = cache (NULL: unset)
 * and return how many tables came from the cache; v gets the lookups and
 * pts the points and dropped glitches. */
static int load(const char *dir, const char *cache, double *v, long *pts)
{
    sim_optable *t = NULL;
    sim_err err = {0};
    if (cache) setenv("KVSIM_CACHE_DIR", cache, 1);
    else unsetenv("KVSIM_CACHE_DIR");
    if (sim_optable_load(dir, 1.5, &t, &err) || sim_optable_need(t, SIM_OPT_MOE, &err)) fail_msg("%s", err.msg);
    lookups(t, v);
    sim_optable_glitches(t, &pts[1], &pts[0]);
    int n = sim_optable_cached(t);
    sim_optable_free(t);
    return n;
}

/* The *.optable files in dir; the first one's name into first. */
static int cache_files(const char *dir, char *first, size_t n)
{
    DIR *d = opendir(dir);
    int count = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        if (strstr(e->d_name, ".optable") && !strstr(e->d_name, ".tmp."))
            if (count++ == 0 && first) snprintf(first, n, "%s/%s", dir, e->d_name);
    if (d) closedir(d);
    return count;
}

static void expect_same(const double *a, const long *pa, const double *b, const long *pb)
{
    for (int i = 0; i < NQ; i++)
        if (memcmp(&a[i], &b[i], sizeof a[i])) fail_msg("lookup %d: %.17g with the cache, %.17g parsed", i, b[i], a[i]);
    assert_int_equal(pa[0], pb[0]);
    assert_int_equal(pa[1], pb[1]);
}

/* Cold (every table parsed and saved), warm (every table read), the same
 * numbers bit for bit as with the cache off; the MoE table loaded on need
 * is cached like the others. */
static void test_cold_warm_off(void **state)
{
    char cache[] = "/tmp/kvsim-optcache-XXXXXX";
    double off[NQ], cold[NQ], warm[NQ];
    long poff[2], pcold[2], pwarm[2];
    assert_non_null(mkdtemp(cache));
    assert_int_equal(load(H100, "", off, poff), 0);
    assert_int_equal(cache_files(cache, NULL, 0), 0);
    assert_int_equal(load(H100, cache, cold, pcold), 0);
    int files = cache_files(cache, NULL, 0);
    assert_true(files >= 6); /* GEMM, two attention, all-reduce, NCCL, MoE at least */
    assert_int_equal(load(H100, cache, warm, pwarm), files);
    expect_same(off, poff, cold, pcold);
    expect_same(off, poff, warm, pwarm);
    assert_true(off[0] > 0 && off[8] > 0);
    rm_rf(cache);
}

/* Damage each way a file can be damaged: the load parses that table
 * again (one fewer from the cache), prices the same, and rewrites it. */
static void test_damaged_files(void **state)
{
    char cache[] = "/tmp/kvsim-optcache-XXXXXX", first[600], cmd[1400];
    double off[NQ], v[NQ];
    long poff[2], p[2];
    const char *damage[] = {
        "printf 'X' | dd of='%s' bs=1 seek=200 conv=notrunc status=none",   /* a flipped byte: checksum */
        "truncate -s -9 '%s'",                                              /* cut short */
        "truncate -s 0 '%s'",                                               /* empty */
        "printf 'kvsimot\\002' | dd of='%s' bs=1 conv=notrunc status=none", /* another version */
    };
    assert_non_null(mkdtemp(cache));
    load(H100, "", off, poff);
    load(H100, cache, v, p);
    int files = cache_files(cache, first, sizeof first);
    for (size_t i = 0; i < sizeof damage / sizeof *damage; i++) {
        snprintf(cmd, sizeof cmd, damage[i], first);
        assert_int_equal(system(cmd), 0);
        if (load(H100, cache, v, p) != files - 1) fail_msg("damage %zu: the file was read", i);
        expect_same(off, poff, v, p);
        if (load(H100, cache, v, p) != files) fail_msg("damage %zu: the file was not written anew", i);
        expect_same(off, poff, v, p);
    }
    rm_rf(cache);
}

/* A CSV changed in place: its new rows are priced, not the old file's. */
static void test_changed_csv(void **state)
{
    char dir[] = "/tmp/kvsim-optcache-t-XXXXXX", cache[] = "/tmp/kvsim-optcache-XXXXXX", p[600];
    sim_optable *t = NULL;
    sim_err err = {0};
    assert_non_null(mkdtemp(dir));
    assert_non_null(mkdtemp(cache));
    setenv("KVSIM_CACHE_DIR", cache, 1);
    snprintf(p, sizeof p, "%s/meta.json", dir);
    FILE *f = fopen(p, "w");
    fputs("{\"system\":\"tiny\",\"engine\":\"vLLM 0\",\"gpu\":{\"mem_bw\":1e12,\"mem_bw_empirical_scaling_factor\":1},"
          "\"files\":{\"gemm\":\"gemm.csv\",\"context_attention\":\"a.csv\",\"generation_attention\":\"g.csv\"}}",
          f);
    fclose(f);
    const char *attn[] = {"a.csv", "g.csv"};
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, attn[i]);
        f = fopen(p, "w");
        fputs("batch_size,isl,num_heads,num_key_value_heads,head_dim,attn_dtype,kv_cache_dtype,step,latency\n"
              "1,16,8,8,128,bfloat16,bfloat16,0,0.5\n",
              f);
        fclose(f);
    }
    snprintf(p, sizeof p, "%s/gemm.csv", dir);
    double want[] = {2.0, 3.0};
    for (int round = 0; round < 2; round++) {
        f = fopen(p, "w");
        fprintf(f, "gemm_dtype,m,n,k,latency\nbfloat16,1,64,64,1.0\nbfloat16,4,64,64,%g\n", 3 * want[round] - 2);
        fclose(f);
        for (int pass = 0; pass < 2; pass++) { /* parsed, then read from the cache */
            if (sim_optable_load(dir, 0, &t, &err)) fail_msg("%s", err.msg);
            assert_int_equal(sim_optable_cached(t), pass ? 3 : (round ? 2 : 0)); /* round 1: the attention cached */
            /* m = 2: a third of the way from m = 1 to m = 4 */
            assert_double_equal(sim_optable_gemm_ms(t, "bfloat16", 2, 64, 64), want[round], 1e-12);
            sim_optable_free(t);
        }
    }
    rm_rf(dir);
    rm_rf(cache);
}

/* A folder that cannot be made, and the cache off: parsed every time,
 * nothing written. */
static void test_no_folder(void **state)
{
    double off[NQ], v[NQ];
    long poff[2], p[2];
    load(H100, "", off, poff);
    assert_int_equal(load(H100, "/proc/kvsim-no-such-folder/cache", v, p), 0);
    assert_int_equal(load(H100, "/proc/kvsim-no-such-folder/cache", v, p), 0);
    expect_same(off, poff, v, p);
    assert_int_equal(load(H100, "", v, p), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cold_warm_off),
        cmocka_unit_test(test_damaged_files),
        cmocka_unit_test(test_changed_csv),
        cmocka_unit_test(test_no_folder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
