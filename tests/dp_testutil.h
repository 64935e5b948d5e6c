/* tests/dp_testutil.h — helpers shared by the data-path tests (CPU and GPU):
 * random paged images, random slot mappings with scattered pages and a
 * partial last page, the expected result of a gather/scatter computed with
 * the CPU reference on a host image, and scratch directories.
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

#endif
