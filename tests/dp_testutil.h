/* tests/dp_testutil.h — helpers shared by the data-path tests (CPU and GPU):
 * random paged images, random slot mappings with scattered pages and a
 * partial last page, the expected result of a gather/scatter computed with
 * the CPU reference on a host image, scratch directories, and the two
 * checks every backend and method must pass (transfer == reference,
 * store → load round trip bit for bit).
 *
 * Header-only (static functions); include after <cmocka.h>. */
#ifndef TESTS_DP_TESTUTIL_H
#define TESTS_DP_TESTUTIL_H

#include <dirent.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datapath/backend.h"
#include "datapath/cache.h"
#include "datapath/layout.h"

/* Bytes of the whole paged buffer (all layers). */
static inline size_t tdp_image_bytes(const dp_shape *s) { return (size_t)(dp_layer_bytes(s) * s->layers); }

static inline void tdp_fill_random(gsl_rng *r, void *buf, size_t n)
{
    unsigned char *p = buf; /* mt19937 gives 32 random bits per draw */
    for (size_t i = 0; i < n; i += 4) {
        unsigned long v = gsl_rng_get(r);
        memcpy(p + i, &v, n - i < 4 ? n - i : 4);
    }
}

/* Per-layer base pointers into a host image laid out layer after layer. */
static inline char **tdp_layer_bases(const dp_shape *s, void *image)
{
    char **b = malloc((size_t)s->layers * sizeof *b);
    for (int l = 0; l < s->layers; l++) b[l] = (char *)image + (int64_t)l * dp_layer_bytes(s);
    return b;
}

/* A slot mapping for `tokens` tokens: whole pages in random order starting
 * at a random offset within the first page; `skip` tokens (at random) get
 * slot -1. tokens need not be a multiple of 16, so the last page is partial.
 * Needs ceil((tokens + 15) / 16) pages. */
static inline int64_t *tdp_random_slots(gsl_rng *r, const dp_shape *s, int tokens, int skip)
{
    size_t npages = (size_t)s->pages;
    int64_t *pages = malloc(npages * sizeof *pages);
    for (size_t i = 0; i < npages; i++) pages[i] = (int64_t)i;
    gsl_ran_shuffle(r, pages, npages, sizeof *pages);
    int first = (int)gsl_rng_uniform_int(r, DP_PAGE_TOKENS);
    int64_t *slots = malloc((size_t)tokens * sizeof *slots);
    for (int t = 0; t < tokens; t++) {
        int pos = first + t;
        slots[t] = pages[pos / DP_PAGE_TOKENS] * DP_PAGE_TOKENS + pos % DP_PAGE_TOKENS;
    }
    for (int k = 0; k < skip; k++) slots[gsl_rng_uniform_int(r, (unsigned long)tokens)] = -1;
    free(pages);
    return slots;
}

/* Expected chunk of a gather from `image` (reference implementation). */
static inline void *tdp_expected_gather(const dp_shape *s, void *image, const int64_t *slots, int tokens)
{
    void *chunk = calloc(1, (size_t)dp_chunk_bytes(s, tokens));
    char **bases = tdp_layer_bases(s, image);
    dp_ref_gather(s, bases, slots, tokens, chunk);
    free(bases);
    return chunk;
}

/* Apply the reference scatter of `chunk` to `image` in place. */
static inline void tdp_apply_scatter(const dp_shape *s, void *image, const int64_t *slots, int tokens,
                                     const void *chunk)
{
    char **bases = tdp_layer_bases(s, image);
    dp_ref_scatter(s, bases, slots, tokens, chunk);
    free(bases);
}

/* A fresh scratch directory (caller frees the string and calls tdp_rmdir). */
static inline char *tdp_tempdir(void)
{
    char *dir = strdup("/tmp/kvsim-dp-XXXXXX");
    return mkdtemp(dir) ? dir : NULL;
}

static inline int tdp_count_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    if (d) closedir(d);
    return n;
}

static inline void tdp_rmdir(char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4096];
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    if (d) closedir(d);
    rmdir(dir);
    free(dir);
}

/* Open `backend` or fail the test with its message. */
static inline dp_dev *tdp_open(const char *backend, const dp_shape *s, int threads)
{
    dp_dev *dev = NULL;
    sim_err err;
    if (dp_dev_open(&dev, backend, s, threads, &err)) fail_msg("%s", err.msg);
    return dev;
}

/* A device whose paged buffer holds random bytes; *image gets a copy. */
static inline dp_dev *tdp_open_random(gsl_rng *r, const char *backend, const dp_shape *s, int threads, void **image)
{
    dp_dev *dev = tdp_open(backend, s, threads);
    *image = malloc(tdp_image_bytes(s));
    tdp_fill_random(r, *image, tdp_image_bytes(s));
    sim_err err;
    assert_int_equal(dp_dev_paged_write(dev, *image, &err), DP_OK);
    return dev;
}

/* One gather and one scatter of `tokens` tokens through `method` (random
 * pages, partial last page, a tenth of the tokens skipped) equal the
 * reference; the scatter writes nothing else. Skipped when the paged buffer
 * cannot hold the mapping. */
static inline void tdp_check_transfer(gsl_rng *r, const char *backend, dp_method method, const dp_shape *s, int threads,
                                      int tokens)
{
    if ((tokens + 15) / DP_PAGE_TOKENS + 1 > s->pages) return;
    void *image, *chunk;
    sim_err err;
    dp_dev *dev = tdp_open_random(r, backend, s, threads, &image);
    int64_t *slots = tdp_random_slots(r, s, tokens, tokens / 10);
    size_t cb = (size_t)dp_chunk_bytes(s, tokens);
    assert_int_equal(dp_dev_host_alloc(dev, cb, &chunk, &err), DP_OK);
    memset(chunk, 0, cb); /* skipped tokens leave their rows as they were */
    dp_xfer x = {.dir = DP_STORE, .method = method, .slots = slots, .tokens = tokens, .chunk = chunk};
    if (dp_transfer(dev, &x, &err)) fail_msg("%s store: %s", dp_method_name(method), err.msg);
    void *want = tdp_expected_gather(s, image, slots, tokens);
    assert_memory_equal(chunk, want, cb);
    tdp_fill_random(r, chunk, cb);
    x.dir = DP_LOAD;
    if (dp_transfer(dev, &x, &err)) fail_msg("%s load: %s", dp_method_name(method), err.msg);
    tdp_apply_scatter(s, image, slots, tokens, chunk);
    void *got = malloc(tdp_image_bytes(s));
    assert_int_equal(dp_dev_paged_read(dev, got, &err), DP_OK);
    assert_memory_equal(got, image, tdp_image_bytes(s));
    free(got);
    free(want);
    dp_dev_host_free(dev, chunk);
    free(slots);
    free(image);
    dp_dev_close(dev);
}

/* Store every 32-token chunk of a 150-token request (the last one partial)
 * through a dp_cache, poison the paged buffer, load them back in reverse:
 * the buffer equals the poison with exactly the request's rows restored.
 * With a small pool and an SSD tier most loads come back from files. */
static inline void tdp_round_trip(const char *backend, dp_method method, const dp_shape *s, int threads, bool with_ssd,
                                  int pool_chunks)
{
    enum { TOKENS = 150, CHUNK = 32 };
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 1234 + (unsigned long)s->layers);
    void *image;
    dp_dev *dev = tdp_open_random(r, backend, s, threads, &image);
    char *dir = with_ssd ? tdp_tempdir() : NULL;
    dp_cache_cfg cfg = {.chunk_tokens = CHUNK, .pool_chunks = pool_chunks, .ssd_dir = dir, .method = method};
    dp_cache *c;
    sim_err err;
    if (dp_cache_new(&c, dev, &cfg, &err)) fail_msg("%s", err.msg);
    int64_t *slots = tdp_random_slots(r, s, TOKENS, 0);
    int nchunks = (TOKENS + CHUNK - 1) / CHUNK;
    for (int k = 0; k < nchunks; k++) {
        int n = k == nchunks - 1 ? TOKENS - k * CHUNK : CHUNK;
        if (dp_cache_store(c, 100 + (uint64_t)k, slots + k * CHUNK, n, &err)) fail_msg("store %d: %s", k, err.msg);
    }
    size_t bytes = tdp_image_bytes(s);
    void *poison = malloc(bytes), *got = malloc(bytes);
    memset(poison, 0xA5, bytes);
    assert_int_equal(dp_dev_paged_write(dev, poison, &err), DP_OK);
    for (int k = nchunks - 1; k >= 0; k--) {
        int n = k == nchunks - 1 ? TOKENS - k * CHUNK : CHUNK;
        if (dp_cache_load(c, 100 + (uint64_t)k, slots + k * CHUNK, n, &err)) fail_msg("load %d: %s", k, err.msg);
    }
    void *chunk = tdp_expected_gather(s, image, slots, TOKENS);
    tdp_apply_scatter(s, poison, slots, TOKENS, chunk);
    assert_int_equal(dp_dev_paged_read(dev, got, &err), DP_OK);
    assert_memory_equal(got, poison, bytes);
    dp_cache_stats st = dp_cache_get_stats(c);
    assert_int_equal(st.stores, nchunks);
    assert_int_equal(st.loads, nchunks);
    assert_int_equal(st.pool_hits + st.ssd_hits, nchunks);
    if (with_ssd && pool_chunks < nchunks) assert_true(st.ssd_hits >= nchunks - pool_chunks);
    free(chunk);
    free(poison);
    free(got);
    free(slots);
    free(image);
    dp_cache_free(c);
    dp_dev_close(dev);
    if (dir) tdp_rmdir(dir);
    gsl_rng_free(r);
}

#endif
