/* tests/gpu_datapath.c — the cuda backend against the CPU reference: every
 * method (fused kernel zero-copy, kernel + DMA, per-page baseline, D2D)
 * gathers and scatters exactly what dp_ref_gather / dp_ref_scatter do, for
 * several shapes (16-byte, 8-byte and 1-byte word paths) and random slot
 * mappings, and a dp_cache store → load round trip through pinned memory
 * and SSD files is bit-exact.
 *
 * Built without sanitizers (ASan and the CUDA runtime do not mix) and only
 * when nvcc exists; without a GPU every test but the first skips with the
 * reason the runtime gave. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "datapath/backend.h"
#include "tests/dp_testutil.h"

static const dp_shape shapes[] = {
    {.layers = 4, .kv_heads = 8, .head_dim = 128, .dtype_bytes = 2, .pages = 24}, /* 2 KiB rows: uint4 */
    {.layers = 5, .kv_heads = 1, .head_dim = 12, .dtype_bytes = 2, .pages = 20},  /* 24-byte rows: uint2 */
    {.layers = 3, .kv_heads = 1, .head_dim = 3, .dtype_bytes = 1, .pages = 12},   /* 3-byte rows: bytes */
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* Skip (printing the runtime's reason) unless a GPU is usable. */
static void need_gpu(void)
{
    sim_err err;
    if (dp_backend("cuda", &err)) return;
    printf("skip: %s\n", err.msg);
    skip();
}

/* This binary is built with CUDA: the backend is present even if no GPU is. */
static void test_cuda_backend_is_built(void **state)
{
    sim_err err;
    if (dp_backend("cuda", &err)) return;
    assert_null(strstr(err.msg, "not built"));
    assert_non_null(strstr(err.msg, "no GPU"));
}

static void test_methods_match_reference(void **state)
{
    need_gpu();
    const dp_method methods[] = {DP_METHOD_KERNEL_ZEROCOPY, DP_METHOD_KERNEL_DMA, DP_METHOD_PER_PAGE};
    const int token_counts[] = {1, 16, 37, 150};
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 17);
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++)
        for (size_t si = 0; si < NSHAPES; si++)
            for (size_t ti = 0; ti < sizeof token_counts / sizeof token_counts[0]; ti++)
                tdp_check_transfer(r, "cuda", methods[m], &shapes[si], 1, token_counts[ti]);
    gsl_rng_free(r);
}

/* kernel_d2d keeps the chunk in device staging: gather mapping A, scatter
 * it into mapping B; the paged buffer equals the reference doing the same. */
static void test_d2d_round_trip(void **state)
{
    need_gpu();
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 23);
    for (size_t si = 0; si < NSHAPES; si++) {
        const dp_shape *s = &shapes[si];
        void *image;
        sim_err err;
        dp_dev *dev = tdp_open_random(r, "cuda", s, 1, &image);
        int64_t *a = tdp_random_slots(r, s, 40, 0), *b = tdp_random_slots(r, s, 40, 3);
        dp_xfer x = {.dir = DP_STORE, .method = DP_METHOD_KERNEL_D2D, .slots = a, .tokens = 40};
        assert_int_equal(dp_transfer(dev, &x, &err), DP_OK);
        void *chunk = tdp_expected_gather(s, image, a, 40);
        x.dir = DP_LOAD;
        x.slots = b;
        assert_int_equal(dp_transfer(dev, &x, &err), DP_OK);
        tdp_apply_scatter(s, image, b, 40, chunk);
        void *got = malloc(tdp_image_bytes(s));
        assert_int_equal(dp_dev_paged_read(dev, got, &err), DP_OK);
        assert_memory_equal(got, image, tdp_image_bytes(s));
        free(got);
        free(chunk);
        free(a);
        free(b);
        free(image);
        dp_dev_close(dev);
    }
    gsl_rng_free(r);
}

static void test_cache_round_trip(void **state)
{
    need_gpu();
    for (size_t si = 0; si < NSHAPES; si++) {
        tdp_round_trip("cuda", DP_METHOD_KERNEL_ZEROCOPY, &shapes[si], 1, false, 8);
        tdp_round_trip("cuda", DP_METHOD_KERNEL_DMA, &shapes[si], 1, true, 2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cuda_backend_is_built),
        cmocka_unit_test(test_methods_match_reference),
        cmocka_unit_test(test_d2d_round_trip),
        cmocka_unit_test(test_cache_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
