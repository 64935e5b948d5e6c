/* kernels/kv_transfer.h — host entry point of the fused gather/scatter
 * kernel (kernels/kv_transfer.cu), callable from C (datapath/backend_cuda.c)
 * and CUDA C++. Only files built with the CUDA toolkit include this. */
#ifndef KERNELS_KV_TRANSFER_H
#define KERNELS_KV_TRANSFER_H

#include <cuda_runtime.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Everything one launch needs to move one chunk across all layers. */
typedef struct dp_kv_launch {
    char *const *layers_dev;  /* device table: base of each layer's paged tensor (built once) */
    const int64_t *slots_dev; /* device slot mapping, `tokens` entries; negative = skip */
    char *chunk;              /* chunk payload as the device sees it: device staging
                                * or the device alias of mapped pinned host memory */
    int64_t row_bytes;        /* kv_heads · head_dim · dtype_bytes */
    int64_t layer_slots;      /* pages · 16 */
    int layers;
    int tokens;
    int word_bytes; /* 16, 8, 4, 2 or 1 (dp_kv_word_bytes of row and addresses) */
} dp_kv_launch;

/* One launch for all layers: gather (paged → chunk) when `gather` is
 * nonzero, scatter (chunk → paged) otherwise. Asynchronous on `stream`;
 * returns the launch status. */
cudaError_t dp_kv_launch_transfer(const dp_kv_launch *p, int gather, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
