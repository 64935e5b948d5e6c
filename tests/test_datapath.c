/* tests/test_datapath.c — the real data path on the CPU backend: index math
 * by hand, the threaded gather/scatter against the readable reference for
 * several shapes and random slot mappings, bit-exact store → load round
 * trips through the pinned pool and the SSD tier, checksum detection in the
 * pool and in chunk files, crash-injected SSD writes (KVSIM_TEST_FAULTS),
 * and the errors a caller acts on (full pool, bad slot, missing file). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <sys/stat.h>

#include "datapath/backend.h"
#include "datapath/cache.h"
#include "datapath/chunk.h"
#include "datapath/fileio.h"
#include "datapath/pool.h"
#include "datapath/ssd.h"
#include "kernels/kv_index.h"
#include "tests/dp_testutil.h"

/* Shapes: a LLaMA-like slice (2 KiB rows, big enough for the threaded
 * path), a LLaMA3-70B TP=8 shard slice (1 KV head: 256-byte rows) and an
 * odd one (3-byte rows, 1-byte dtype) that defeats every alignment. */
static const dp_shape shapes[] = {
    {.layers = 4, .kv_heads = 8, .head_dim = 128, .dtype_bytes = 2, .pages = 24},
    {.layers = 5, .kv_heads = 1, .head_dim = 128, .dtype_bytes = 2, .pages = 20},
    {.layers = 3, .kv_heads = 1, .head_dim = 3, .dtype_bytes = 1, .pages = 12},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

static void test_index_math_by_hand(void **state)
{
    /* row = 2 heads · 4 dims · 2 bytes = 16; layer_slots = 3 pages · 16 = 48.
     * V (kv=1) slot 5: (48 + 5) · 16 = 848. */
    dp_shape s = {.layers = 2, .kv_heads = 2, .head_dim = 4, .dtype_bytes = 2, .pages = 3};
    assert_int_equal(dp_row_bytes(&s), 16);
    assert_int_equal(dp_layer_slots(&s), 48);
    assert_int_equal(dp_layer_bytes(&s), 2 * 48 * 16);
    assert_int_equal(dp_kv_paged_offset(16, 48, 1, 5), 848);
    /* chunk row (kv=1, layer=1, token=3) of a 10-token chunk: (1·2+1)·10+3 = 33 → 528 bytes. */
    assert_int_equal(dp_kv_chunk_offset(16, 2, 10, 1, 1, 3), 528);
    int kv, layer, token;
    dp_kv_chunk_row_split(33, 2, 10, &kv, &layer, &token);
    assert_int_equal(kv, 1);
    assert_int_equal(layer, 1);
    assert_int_equal(token, 3);
    /* Runs: 4,5,6 then a jump; 14..17 crosses a page boundary at 16. */
    const int64_t a[] = {4, 5, 6, 16, 17, -1};
    assert_int_equal(dp_kv_run_length(a, 0, 6, 0), 3);
    assert_int_equal(dp_kv_run_length(a, 3, 6, 0), 2);
    const int64_t b[] = {14, 15, 16, 17};
    assert_int_equal(dp_kv_run_length(b, 0, 4, 0), 4);
    assert_int_equal(dp_kv_run_length(b, 0, 4, DP_PAGE_TOKENS), 2);
    assert_int_equal(dp_kv_run_length(b, 2, 4, DP_PAGE_TOKENS), 2);
    /* Word size: 2 KiB rows at 4 KiB-aligned addresses → 16; 24-byte rows → 8;
     * 6-byte rows → 2; an odd address → 1. */
    assert_int_equal(dp_kv_word_bytes(2048, 0x1000), 16);
    assert_int_equal(dp_kv_word_bytes(24, 0x1000), 8);
    assert_int_equal(dp_kv_word_bytes(6, 0x1000), 2);
    assert_int_equal(dp_kv_word_bytes(2048, 0x1001), 1);
    /* KV bytes per token: LLaMA3.1-8B 2·32·8·128·2 = 131072 (128 KiB);
     * LLaMA3-70B TP=8 shard 2·80·1·128·2 = 40960 (40 KiB). */
    dp_shape l8 = {.layers = 32, .kv_heads = 8, .head_dim = 128, .dtype_bytes = 2, .pages = 1};
    dp_shape l70 = {.layers = 80, .kv_heads = 1, .head_dim = 128, .dtype_bytes = 2, .pages = 1};
    assert_int_equal(dp_token_bytes(&l8), 131072);
    assert_int_equal(dp_token_bytes(&l70), 40960);
    assert_int_equal(dp_chunk_bytes(&l8, 256), 32 << 20);
}

static void test_shape_and_slot_errors(void **state)
{
    sim_err err;
    dp_shape bad = {.layers = 2, .kv_heads = 0, .head_dim = 4, .dtype_bytes = 2, .pages = 3};
    assert_int_equal(dp_shape_check(&bad, &err), -1);
    assert_non_null(strstr(err.msg, "kv_heads"));
    const dp_shape *s = &shapes[2]; /* 12 pages → 192 slots */
    const int64_t ok[] = {0, -1, 191};
    assert_int_equal(dp_slots_check(s, ok, 3, &err), DP_OK);
    const int64_t out[] = {0, 1, 192};
    assert_int_equal(dp_slots_check(s, out, 3, &err), DP_ERANGE);
    assert_non_null(strstr(err.msg, "token 2 maps to slot 192"));
    assert_int_equal(dp_slots_check(s, ok, 0, &err), DP_ERANGE);
    dp_method m;
    assert_int_equal(dp_method_parse("kernel_dma", &m, &err), DP_OK);
    assert_int_equal(m, DP_METHOD_KERNEL_DMA);
    assert_int_equal(dp_method_parse("warp_drive", &m, &err), DP_EINVAL);
    assert_non_null(strstr(err.msg, "warp_drive"));
}

static void test_backend_registry(void **state)
{
    sim_err err;
    assert_non_null(dp_backend("cpu", &err));
    assert_null(dp_backend("tpu", &err));
    assert_non_null(strstr(err.msg, "unknown datapath backend 'tpu' (known: cpu, cuda)"));
    /* This binary is the sanitizer build: CUDA is never compiled in here.
     * (tests/gpu_datapath.c covers the built case.) */
    assert_null(dp_backend("cuda", &err));
    assert_non_null(strstr(err.msg, "datapath backend 'cuda': not built"));
    dp_dev *dev = NULL;
    assert_int_not_equal(dp_dev_open(&dev, "cuda", &shapes[0], 1, &err), DP_OK);
    assert_null(dev);
    /* A method the backend lacks is refused before anything moves. */
    dev = tdp_open("cpu", &shapes[2], 1);
    int64_t slot = 0;
    char chunk[64];
    dp_xfer x = {.dir = DP_STORE, .method = DP_METHOD_KERNEL_ZEROCOPY, .slots = &slot, .tokens = 1, .chunk = chunk};
    assert_int_equal(dp_transfer(dev, &x, &err), DP_EINVAL);
    assert_non_null(strstr(err.msg, "no method 'kernel_zerocopy'"));
    dp_dev_close(dev);
}

/* Gather and scatter with 1 and 3 threads equal the reference, for every
 * shape and random mappings (scattered pages, partial last page, skips). */
static void test_cpu_matches_reference(void **state)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 7);
    const int token_counts[] = {1, 16, 37, 150};
    for (size_t si = 0; si < NSHAPES; si++)
        for (int threads = 1; threads <= 3; threads += 2)
            for (size_t ti = 0; ti < sizeof token_counts / sizeof token_counts[0]; ti++)
                tdp_check_transfer(r, "cpu", DP_METHOD_CPU, &shapes[si], threads, token_counts[ti]);
    gsl_rng_free(r);
}

/* The evict callback records victims in order. */
typedef struct victims {
    uint64_t key[8];
    int n;
} victims;

static int record_victim(void *ctx, uint64_t key, void *slot, sim_err *err)
{
    victims *v = ctx;
    v->key[v->n++] = key;
    return 0;
}

static void test_pool_lru_and_pins(void **state)
{
    dp_dev *dev = tdp_open("cpu", &shapes[2], 1);
    dp_pool *p;
    sim_err err;
    assert_int_equal(dp_pool_new(&p, dev, 100, 3, &err), DP_OK);
    assert_int_equal(dp_pool_slot_bytes(p), DP_ALIGN); /* 100 rounded up */
    victims v = {.n = 0};
    dp_pool_set_evict_cb(p, record_victim, &v);
    void *slot[7];
    for (uint64_t k = 1; k <= 3; k++) assert_int_equal(dp_pool_insert(p, k, &slot[k], &err), DP_OK);
    assert_ptr_equal(dp_pool_find(p, 1), slot[1]); /* LRU order now 2, 3, 1 */
    assert_int_equal(dp_pool_insert(p, 4, &slot[4], &err), DP_OK);
    assert_int_equal(v.n, 1);
    assert_int_equal(v.key[0], 2);
    assert_ptr_equal(slot[4], slot[2]); /* the victim's slot is reused */
    assert_null(dp_pool_find(p, 2));
    /* Order 3, 1, 4: pin 3 and 1, so 4 goes next. */
    assert_int_equal(dp_pool_pin(p, 3), DP_OK);
    assert_int_equal(dp_pool_pin(p, 1), DP_OK);
    assert_int_equal(dp_pool_pin(p, 2), DP_MISS);
    assert_int_equal(dp_pool_insert(p, 5, &slot[5], &err), DP_OK);
    assert_int_equal(v.key[1], 4);
    /* Everything pinned: the insert fails, nothing is evicted. */
    assert_int_equal(dp_pool_pin(p, 5), DP_OK);
    assert_int_equal(dp_pool_insert(p, 6, &slot[6], &err), DP_EFULL);
    assert_non_null(strstr(err.msg, "all 3 slots are pinned"));
    assert_int_equal(v.n, 2);
    assert_int_equal(dp_pool_get_stats(p).full, 1);
    /* Unpinning 1 makes it the only candidate. */
    dp_pool_unpin(p, 1);
    assert_int_equal(dp_pool_insert(p, 6, &slot[6], &err), DP_OK);
    assert_int_equal(v.key[2], 1);
    dp_pool_remove(p, 3); /* pinned or not, remove frees the slot */
    assert_int_equal(dp_pool_used(p), 2);
    dp_pool_free(p);
    dp_dev_close(dev);
}

/* Many inserts and removals against a plain array model: the open-addressing
 * index (backward-shift deletion) must always agree with it. */
static void test_pool_index_model(void **state)
{
    enum { SLOTS = 64, KEYS = 200, OPS = 5000 };
    dp_dev *dev = tdp_open("cpu", &shapes[2], 1);
    dp_pool *p;
    sim_err err;
    assert_int_equal(dp_pool_new(&p, dev, 64, SLOTS, &err), DP_OK);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 11);
    bool present[KEYS] = {false};
    int count = 0;
    for (int op = 0; op < OPS; op++) {
        uint64_t k = gsl_rng_uniform_int(r, KEYS) * 0x10000; /* clustered keys stress probing */
        int i = (int)(k / 0x10000);
        void *slot;
        if (present[i] || count == SLOTS) {
            if (present[i]) count--;
            present[i] = false;
            dp_pool_remove(p, k);
        } else {
            assert_int_equal(dp_pool_insert(p, k, &slot, &err), DP_OK);
            present[i] = true;
            count++;
        }
        if (op % 97 == 0)
            for (int j = 0; j < KEYS; j++) assert_int_equal(dp_pool_find(p, (uint64_t)j * 0x10000) != NULL, present[j]);
    }
    assert_int_equal(dp_pool_used(p), count);
    gsl_rng_free(r);
    dp_pool_free(p);
    dp_dev_close(dev);
}

static void test_round_trip_pool(void **state)
{
    for (size_t i = 0; i < NSHAPES; i++) tdp_round_trip("cpu", DP_METHOD_CPU, &shapes[i], 2, false, 8);
}

static void test_round_trip_through_ssd(void **state)
{
    for (size_t i = 0; i < NSHAPES; i++) tdp_round_trip("cpu", DP_METHOD_CPU, &shapes[i], 1, true, 2);
}

/* A cache over a random paged buffer with one stored 32-token chunk. */
typedef struct fixture {
    gsl_rng *r;
    dp_dev *dev;
    void *image;
    dp_cache *cache;
    char *dir;
    int64_t *slots;
} fixture;

static fixture make_fixture(bool with_ssd, int pool_chunks)
{
    fixture f = {.r = gsl_rng_alloc(gsl_rng_mt19937)};
    gsl_rng_set(f.r, 99);
    f.dev = tdp_open_random(f.r, "cpu", &shapes[0], 1, &f.image);
    f.dir = with_ssd ? tdp_tempdir() : NULL;
    dp_cache_cfg cfg = {.chunk_tokens = 32, .pool_chunks = pool_chunks, .ssd_dir = f.dir, .method = DP_METHOD_CPU};
    sim_err err;
    assert_int_equal(dp_cache_new(&f.cache, f.dev, &cfg, &err), DP_OK);
    f.slots = tdp_random_slots(f.r, &shapes[0], 32, 0);
    assert_int_equal(dp_cache_store(f.cache, 1, f.slots, 32, &err), DP_OK);
    return f;
}

static void free_fixture(fixture *f)
{
    dp_cache_free(f->cache);
    dp_dev_close(f->dev);
    free(f->image);
    free(f->slots);
    if (f->dir) tdp_rmdir(f->dir);
    gsl_rng_free(f->r);
}

/* After a refused load the paged buffer is exactly as before. */
static void assert_paged_unchanged(fixture *f)
{
    size_t n = tdp_image_bytes(&shapes[0]);
    void *got = malloc(n);
    sim_err err;
    assert_int_equal(dp_dev_paged_read(f->dev, got, &err), DP_OK);
    assert_memory_equal(got, f->image, n);
    free(got);
}

static void test_checksum_catches_flip_in_pool(void **state)
{
    const size_t offsets[] = {DP_CHUNK_HDR_BYTES + 12345, offsetof(dp_chunk_hdr, tokens)};
    for (size_t i = 0; i < 2; i++) {
        fixture f = make_fixture(false, 4);
        unsigned char *img = dp_pool_find(dp_cache_pool(f.cache), 1);
        img[offsets[i]] ^= 0x10;
        sim_err err;
        assert_int_equal(dp_cache_load(f.cache, 1, f.slots, 32, &err), DP_CORRUPT);
        assert_non_null(strstr(err.msg, "chunk 0000000000000001"));
        assert_paged_unchanged(&f);
        /* The bad copy is gone: the next load is a plain miss. */
        assert_int_equal(dp_cache_load(f.cache, 1, f.slots, 32, &err), DP_MISS);
        assert_int_equal(dp_cache_get_stats(f.cache).corrupt, 1);
        free_fixture(&f);
    }
}

/* Pool of one slot: storing key 2 demotes key 1 to its SSD file. */
static fixture make_demoted_fixture(char *path, size_t n)
{
    fixture f = make_fixture(true, 1);
    sim_err err;
    assert_int_equal(dp_cache_store(f.cache, 2, f.slots, 32, &err), DP_OK);
    dp_ssd_path(dp_cache_ssd(f.cache), 1, path, n);
    assert_int_equal(access(path, R_OK), 0);
    return f;
}

static void test_checksum_catches_flip_in_file(void **state)
{
    char path[4096];
    fixture f = make_demoted_fixture(path, sizeof path);
    int fd = open(path, O_RDWR);
    unsigned char b;
    off_t at = DP_CHUNK_HDR_BYTES + 300000; /* inside the 512 KiB payload */
    assert_int_equal(pread(fd, &b, 1, at), 1);
    b ^= 0x01;
    assert_int_equal(pwrite(fd, &b, 1, at), 1);
    close(fd);
    sim_err err;
    assert_int_equal(dp_cache_load(f.cache, 1, f.slots, 32, &err), DP_CORRUPT);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "checksum mismatch"));
    assert_paged_unchanged(&f);
    assert_int_equal(access(path, F_OK), -1); /* dropped */
    assert_int_equal(dp_cache_load(f.cache, 1, f.slots, 32, &err), DP_MISS);
    free_fixture(&f);
}

static void test_truncated_and_missing_file(void **state)
{
    char path[4096];
    fixture f = make_demoted_fixture(path, sizeof path);
    assert_int_equal(truncate(path, DP_CHUNK_HDR_BYTES + 1000), 0);
    sim_err err;
    assert_int_equal(dp_cache_load(f.cache, 1, f.slots, 32, &err), DP_SHORT);
    assert_non_null(strstr(err.msg, "its header promises"));
    assert_paged_unchanged(&f);
    assert_int_equal(dp_cache_load(f.cache, 1, f.slots, 32, &err), DP_MISS);
    assert_non_null(strstr(err.msg, "No such file"));
    assert_int_equal(dp_cache_load(f.cache, 77, f.slots, 32, &err), DP_MISS);
    /* A file far larger than a chunk slot is not this chunk. */
    FILE *big = fopen(path, "w");
    assert_int_equal(fseek(big, 64 << 20, SEEK_SET), 0);
    fputc(1, big);
    fclose(big);
    assert_int_equal(dp_cache_load(f.cache, 1, f.slots, 32, &err), DP_CORRUPT);
    dp_cache_stats st = dp_cache_get_stats(f.cache);
    assert_int_equal(st.short_reads, 1);
    assert_int_equal(st.misses, 2);
    free_fixture(&f);
}

/* Crash between write and rename: the old version stays readable, the
 * temporary never counts, a restart sweeps it; a torn rename is a miss. */
static void test_ssd_kill_between_write_and_rename(void **state)
{
    const dp_shape *s = &shapes[2];
    char *dir = tdp_tempdir();
    dp_ssd *d;
    sim_err err;
    assert_int_equal(dp_ssd_open(&d, dir, s, &err), DP_OK);
    int tokens = 40, got_tokens = 0;
    size_t n = (size_t)dp_chunk_image_bytes(s, tokens);
    unsigned char *v1, *v2, *back;
    assert_int_equal(dp_aligned_alloc(n, (void **)&v1, &err), 0);
    assert_int_equal(dp_aligned_alloc(n, (void **)&v2, &err), 0);
    assert_int_equal(dp_aligned_alloc(n, (void **)&back, &err), 0);
    memset(dp_chunk_payload(v1), 1, (size_t)dp_chunk_bytes(s, tokens));
    memset(dp_chunk_payload(v2), 2, (size_t)dp_chunk_bytes(s, tokens));
    dp_chunk_seal(v1, s, 5, tokens);
    dp_chunk_seal(v2, s, 5, tokens);
    assert_int_equal(dp_ssd_put(d, 5, v1, n, &err), DP_OK);

    dp_fault_arm(DP_FAULT_CRASH_BEFORE_RENAME);
    assert_int_equal(dp_ssd_put(d, 5, v2, n, &err), DP_EIO);
    assert_non_null(strstr(err.msg, "injected crash"));
    assert_int_equal(tdp_count_files(dir), 2); /* the chunk file + a full temporary */
    assert_int_equal(dp_ssd_get(d, 5, back, n, &got_tokens, &err), DP_OK);
    assert_memory_equal(back, v1, n); /* still the old version */

    dp_fault_arm(DP_FAULT_CRASH_MID_WRITE);
    assert_int_equal(dp_ssd_put(d, 6, v2, n, &err), DP_EIO);
    assert_int_equal(dp_ssd_get(d, 6, back, n, &got_tokens, &err), DP_MISS);

    dp_ssd_close(d); /* "restart" */
    assert_int_equal(dp_ssd_open(&d, dir, s, &err), DP_OK);
    assert_int_equal(tdp_count_files(dir), 1);
    assert_int_equal(dp_ssd_get(d, 5, back, n, &got_tokens, &err), DP_OK);
    assert_int_equal(got_tokens, tokens);

    /* Renamed but only half on disk (power cut, no fsync): never valid. */
    dp_fault_arm(DP_FAULT_TORN_RENAME);
    assert_int_equal(dp_ssd_put(d, 7, v2, n, &err), DP_OK);
    int rc = dp_ssd_get(d, 7, back, n, &got_tokens, &err);
    assert_true(rc == DP_SHORT || rc == DP_CORRUPT);
    assert_int_equal(dp_ssd_get(d, 7, back, n, &got_tokens, &err), DP_MISS);
    free(v1);
    free(v2);
    free(back);
    dp_ssd_close(d);
    tdp_rmdir(dir);
}

static void test_errors_caller_can_act_on(void **state)
{
    fixture f = make_fixture(false, 2);
    sim_err err;
    int64_t bad[32];
    memcpy(bad, f.slots, sizeof bad);
    bad[31] = dp_layer_slots(&shapes[0]); /* one past the end */
    assert_int_equal(dp_cache_store(f.cache, 9, bad, 32, &err), DP_ERANGE);
    assert_non_null(strstr(err.msg, "token 31"));
    assert_int_equal(dp_cache_load(f.cache, 1, bad, 32, &err), DP_ERANGE);
    assert_paged_unchanged(&f);
    int64_t many[33] = {0};
    assert_int_equal(dp_cache_store(f.cache, 9, many, 33, &err), DP_ERANGE);
    assert_non_null(strstr(err.msg, "exceed the 32-token chunk"));
    assert_int_equal(dp_pool_used(dp_cache_pool(f.cache)), 1);
    /* Token count differs from the stored chunk. */
    assert_int_equal(dp_cache_load(f.cache, 1, f.slots, 16, &err), DP_EINVAL);
    assert_non_null(strstr(err.msg, "holds 32 tokens"));
    /* Both slots pinned: storing a third chunk is refused. */
    assert_int_equal(dp_cache_store(f.cache, 2, f.slots, 32, &err), DP_OK);
    assert_int_equal(dp_cache_pin(f.cache, 1), DP_OK);
    assert_int_equal(dp_cache_pin(f.cache, 2), DP_OK);
    assert_int_equal(dp_cache_store(f.cache, 3, f.slots, 32, &err), DP_EFULL);
    assert_int_equal(dp_cache_load(f.cache, 1, f.slots, 32, &err), DP_OK); /* pinned chunks still load */
    dp_cache_unpin(f.cache, 2);
    assert_int_equal(dp_cache_store(f.cache, 3, f.slots, 32, &err), DP_OK);
    assert_int_equal(dp_cache_load(f.cache, 2, f.slots, 32, &err), DP_MISS);
    /* A method that leaves the chunk on the device cannot back a cache. */
    dp_cache *c;
    dp_cache_cfg cfg = {.chunk_tokens = 16, .pool_chunks = 1, .method = DP_METHOD_KERNEL_D2D};
    assert_int_equal(dp_cache_new(&c, f.dev, &cfg, &err), DP_EINVAL);
    free_fixture(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_index_math_by_hand),
        cmocka_unit_test(test_shape_and_slot_errors),
        cmocka_unit_test(test_backend_registry),
        cmocka_unit_test(test_cpu_matches_reference),
        cmocka_unit_test(test_pool_lru_and_pins),
        cmocka_unit_test(test_pool_index_model),
        cmocka_unit_test(test_round_trip_pool),
        cmocka_unit_test(test_round_trip_through_ssd),
        cmocka_unit_test(test_checksum_catches_flip_in_pool),
        cmocka_unit_test(test_checksum_catches_flip_in_file),
        cmocka_unit_test(test_truncated_and_missing_file),
        cmocka_unit_test(test_ssd_kill_between_write_and_rename),
        cmocka_unit_test(test_errors_caller_can_act_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
