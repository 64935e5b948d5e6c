/* kernels/kv_index.h — the index math of the KV data path, shared word for
 * word by the CUDA kernels (kernels/kv_transfer.cu), the CPU backend and the CPU
 * reference (datapath/), so that the CPU tests exercise the very formulas the
 * GPU runs. Plain C that also compiles as CUDA C++: no designated
 * initializers, no `restrict`, every function static inline (and
 * __host__ __device__ under nvcc).
 *
 * Two layouts meet here (LMCache's multi_layer_kv_transfer, docs/architecture.md §7):
 *
 *  paged  vLLM flash-attention layout, one tensor per layer:
 *         [2 (K,V), pages, page_tokens, kv_heads, head_dim] of dtype_bytes.
 *         A "slot" is page * page_tokens + offset, so slot s of half kv
 *         starts (kv * layer_slots + s) * row_bytes into its layer, where
 *         layer_slots = pages * page_tokens and row_bytes = kv_heads ·
 *         head_dim · dtype_bytes (one token's K or V in one layer).
 *
 *  chunk  LMCache's contiguous chunk: [2, layers, tokens, kv_heads·head_dim].
 *         Row (kv, layer, token) starts ((kv·layers + layer)·tokens + token)
 *         · row_bytes.
 *
 * A slot mapping gives each chunk token its physical slot; a negative slot
 * means "skip this token" (vLLM's padding convention). */
#ifndef KERNELS_KV_INDEX_H
#define KERNELS_KV_INDEX_H

#include <stdint.h>

#ifdef __CUDACC__
#define DP_KV_FN static inline __host__ __device__
#else
#define DP_KV_FN static inline
#endif

/* Byte offset of slot `slot` of half `kv` (0 = K, 1 = V) inside one layer's
 * paged tensor. */
DP_KV_FN int64_t dp_kv_paged_offset(int64_t row_bytes, int64_t layer_slots, int kv, int64_t slot)
{
    return ((int64_t)kv * layer_slots + slot) * row_bytes;
}

/* Index of row (kv, layer, token) in a chunk of `tokens` tokens. */
DP_KV_FN int64_t dp_kv_chunk_row(int layers, int tokens, int kv, int layer, int token)
{
    return ((int64_t)kv * layers + layer) * tokens + token;
}

/* Byte offset of row (kv, layer, token) in the chunk. */
DP_KV_FN int64_t dp_kv_chunk_offset(int64_t row_bytes, int layers, int tokens, int kv, int layer, int token)
{
    return dp_kv_chunk_row(layers, tokens, kv, layer, token) * row_bytes;
}

/* The inverse of dp_kv_chunk_row: which (kv, layer, token) a chunk row is.
 * The kernels walk chunk rows in order (coalesced on the chunk side) and ask
 * this where each row lives in the paged buffer. */
DP_KV_FN void dp_kv_chunk_row_split(int64_t row, int layers, int tokens, int *kv, int *layer, int *token)
{
    int64_t kl = row / tokens;
    *token = (int)(row - kl * tokens);
    *kv = (int)(kl / layers);
    *layer = (int)(kl - (int64_t)*kv * layers);
}

/* Length of the run of tokens starting at `t` whose slots are consecutive
 * (slots[t+i] == slots[t] + i), stopping at `limit` tokens in all. Such a run
 * is contiguous in both layouts — pages of one layer half are adjacent — so
 * the CPU backend moves it with one memcpy. When `page_tokens` > 0 the run
 * also stops at a page boundary (the per-page baseline copies page by page).
 * Must be called with slots[t] >= 0. */
DP_KV_FN int dp_kv_run_length(const int64_t *slots, int t, int limit, int page_tokens)
{
    int n = 1;
    while (t + n < limit && slots[t + n] == slots[t] + n && (page_tokens <= 0 || (slots[t] + n) % page_tokens != 0))
        n++;
    return n;
}

/* Largest power-of-two word (1..16 bytes) that divides every value given:
 * the row size and the addresses a copy starts from. 16-byte words let a GPU
 * thread move a row with one vector load/store per 16 bytes. */
DP_KV_FN int dp_kv_word_bytes(uint64_t row_bytes, uint64_t addr_bits)
{
    uint64_t v = row_bytes | addr_bits | 16u;
    return (int)(v & (~v + 1u)); /* lowest set bit */
}

#endif
