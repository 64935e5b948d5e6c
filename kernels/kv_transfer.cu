/* kernels/kv_transfer.cu — the fused multi-layer KV gather/scatter kernel
 * (LMCache's multi_layer_kv_transfer, docs/architecture.md §7): one launch moves one chunk
 * between vLLM's per-layer paged tensors and a contiguous chunk, for every
 * layer and both K and V.
 *
 * Work decomposition. The chunk is 2 · layers · tokens rows of row_bytes
 * (one token's K or V in one layer). A team of threads_per_row threads (a
 * power of two up to 256, no wider than the row in words) copies one row;
 * a 256-thread block holds 256 / threads_per_row teams, and blocks stride
 * over rows. Rows are taken in chunk order, so the chunk side of every copy
 * is one sequential stream (what matters when the chunk is pinned host
 * memory reached over PCIe) and each row is one contiguous run on the paged
 * side. Each team decodes its row into (half, layer, token) with the same
 * dp_kv_chunk_row_split the CPU reference uses, looks up the token's slot
 * (negative = skip, out of range = skip; the host checks ranges before the
 * launch) and the layer's base in the device pointer table, then copies
 * word by word with the widest word (16-byte uint4 when the row size and
 * every base address allow) that dp_kv_word_bytes permits. */
#include <stdint.h>

#include "kernels/kv_index.h"
#include "kernels/kv_transfer.h"

enum { KV_BLOCK_THREADS = 256 };

template <typename W, bool kGather>
__global__ void __launch_bounds__(KV_BLOCK_THREADS) kv_transfer_kernel(dp_kv_launch p, int threads_per_row)
{
    const int64_t words = p.row_bytes / (int64_t)sizeof(W);
    const int64_t rows = 2LL * p.layers * p.tokens;
    const int rows_per_block = KV_BLOCK_THREADS / threads_per_row;
    const int lane = threadIdx.x % threads_per_row;
    for (int64_t row = (int64_t)blockIdx.x * rows_per_block + threadIdx.x / threads_per_row; row < rows;
         row += (int64_t)gridDim.x * rows_per_block) {
        int kv, layer, token;
        dp_kv_chunk_row_split(row, p.layers, p.tokens, &kv, &layer, &token);
        const int64_t slot = p.slots_dev[token];
        if (slot < 0 || slot >= p.layer_slots) continue;
        W *paged = (W *)(p.layers_dev[layer] + dp_kv_paged_offset(p.row_bytes, p.layer_slots, kv, slot));
        W *chunk = (W *)(p.chunk + row * p.row_bytes);
        for (int64_t w = lane; w < words; w += threads_per_row) {
            if (kGather) chunk[w] = paged[w];
            else paged[w] = chunk[w];
        }
    }
}

template <typename W, bool kGather> static cudaError_t kv_launch(const dp_kv_launch *p, cudaStream_t stream)
{
    const int64_t words = p->row_bytes / (int64_t)sizeof(W);
    int threads_per_row = 1;
    while (threads_per_row * 2 <= words && threads_per_row * 2 <= KV_BLOCK_THREADS) threads_per_row *= 2;
    const int64_t rows_per_block = KV_BLOCK_THREADS / threads_per_row;
    const int64_t rows = 2LL * p->layers * p->tokens;
    int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
    if (blocks > (1 << 30)) blocks = 1 << 30;
    kv_transfer_kernel<W, kGather><<<(unsigned)blocks, KV_BLOCK_THREADS, 0, stream>>>(*p, threads_per_row);
    return cudaGetLastError();
}

template <bool kGather> static cudaError_t kv_launch_words(const dp_kv_launch *p, cudaStream_t stream)
{
    switch (p->word_bytes) {
    case 16: return kv_launch<uint4, kGather>(p, stream);
    case 8: return kv_launch<uint2, kGather>(p, stream);
    case 4: return kv_launch<uint32_t, kGather>(p, stream);
    case 2: return kv_launch<uint16_t, kGather>(p, stream);
    default: return kv_launch<uint8_t, kGather>(p, stream);
    }
}

extern "C" cudaError_t dp_kv_launch_transfer(const dp_kv_launch *p, int gather, cudaStream_t stream)
{
    return gather ? kv_launch_words<true>(p, stream) : kv_launch_words<false>(p, stream);
}
