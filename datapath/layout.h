/* datapath/layout.h — the shapes of the real KV data path: the paged KV
 * buffer (vLLM flash-attention layout, per layer [2, pages, 16, kv_heads,
 * head_dim]), slot mappings and chunk sizes, plus the status codes every
 * datapath call shares. The byte-level index math lives in
 * kernels/kv_index.h so the CUDA kernels use the same formulas.
 *
 * libc only: the probe binary links this file on GPU machines that have no
 * jansson, GSL or xxHash. */
#ifndef DP_LAYOUT_H
#define DP_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "sim/util.h"

#define DP_PAGE_TOKENS 16   /* vLLM's default block size */
#define DP_ALIGN       4096 /* host buffers, pool slots and chunk files align to this (O_DIRECT) */

/* Status of a datapath call. 0 is success; positive codes are misses the
 * caller handles by recomputing (the chunk is not usable, nothing was
 * copied); negative codes are errors. Every non-zero code comes with a
 * message in the sim_err naming the key, file or slot at fault. */
typedef enum dp_rc {
    DP_OK = 0,
    DP_MISS = 1,    /* key absent (pool and SSD) */
    DP_CORRUPT = 2, /* present but the header or XXH3 checksum does not match: dropped */
    DP_SHORT = 3,   /* chunk file shorter than its header says (torn or truncated): dropped */
    DP_EIO = -1,    /* an I/O or allocation call failed */
    DP_EFULL = -2,  /* every pool slot is pinned: nothing can be evicted */
    DP_ERANGE = -3, /* a slot or token count outside the buffer */
    DP_EINVAL = -4, /* bad shape, method or argument */
} dp_rc;

/* A model's KV geometry plus the size of the paged buffer. */
typedef struct dp_shape {
    int layers;
    int kv_heads;
    int head_dim;
    int dtype_bytes;
    int64_t pages; /* pages in each layer's paged tensor */
} dp_shape;

/* Positive fields, products that fit; errors name the field. */
int dp_shape_check(const dp_shape *s, sim_err *err);

/* One token's K (or V) in one layer: kv_heads · head_dim · dtype_bytes. */
int64_t dp_row_bytes(const dp_shape *s);
/* Slots per layer half: pages · 16. */
int64_t dp_layer_slots(const dp_shape *s);
/* One layer's paged tensor: 2 · pages · 16 · row_bytes. */
int64_t dp_layer_bytes(const dp_shape *s);
/* KV bytes per token over all layers: 2 · layers · row_bytes. */
int64_t dp_token_bytes(const dp_shape *s);
/* A chunk payload of `tokens` tokens: tokens · dp_token_bytes. */
int64_t dp_chunk_bytes(const dp_shape *s, int tokens);

/* Every slot either negative (skip) or below pages·16: DP_ERANGE naming the
 * first bad token otherwise. tokens must be positive. */
int dp_slots_check(const dp_shape *s, const int64_t *slots, int tokens, sim_err *err);

/* Round n up to a multiple of DP_ALIGN. */
int64_t dp_align_up(int64_t n);
/* Page-aligned host memory (the CPU backend's "pinned" pool and buffers). */
int dp_aligned_alloc(size_t bytes, void **out, sim_err *err);

/* Readable CPU reference of gather (paged → chunk, "store") and scatter
 * (chunk → paged, "load"): one row memcpy per (kv, layer, token), straight
 * from the index formulas. layer_base[l] is layer l's paged tensor. Every
 * fast path is tested against these. */
void dp_ref_gather(const dp_shape *s, char *const *layer_base, const int64_t *slots, int tokens, void *chunk);
void dp_ref_scatter(const dp_shape *s, char *const *layer_base, const int64_t *slots, int tokens, const void *chunk);

#endif
