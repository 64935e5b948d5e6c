/* datapath/backend_cuda.c — the `cuda` backend: vLLM-style paged KV tensors
 * in GPU memory (one cudaMalloc per layer, as vLLM allocates them), chunks
 * moved to and from pinned host memory.
 *
 * Built with KVSIM_HAVE_CUDA only when nvcc exists (the Makefile defines it
 * for this file alone). Without it the backend still registers, and
 * dp_backend("cuda") answers "not built" instead of failing to link.
 *
 * Per transfer: the slot mapping goes to the device through a pinned
 * staging array (one small cudaMemcpyAsync), then one of four methods runs
 * on a private stream, and the call returns after cudaStreamSynchronize:
 *   kernel_zerocopy  the fused kernel reads/writes the pinned host chunk
 *                    through its device alias (no copy engine involved);
 *   kernel_dma       the kernel gathers into a device staging buffer and one
 *                    cudaMemcpyAsync moves the contiguous chunk (or the
 *                    reverse for load);
 *   kernel_d2d       the kernel alone, chunk in device staging (HBM↔HBM);
 *   per_page         the baseline to beat: one cudaMemcpyAsync per page per
 *                    layer per K/V half, as a naive offloader would issue. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datapath/backend.h"

#ifndef KVSIM_HAVE_CUDA

static int cuda_not_built(char *label, size_t n, sim_err *err)
{
    snprintf(label, n, "cuda: not built");
    return sim_errf(err, "not built into this binary (compiled without nvcc, or a sanitizer build); "
                         "rebuild with the CUDA toolkit installed");
}

/* Only `available` is ever called: dp_backend() refuses the backend. */
const dp_backend_ops dp_backend_cuda = {
    .name = "cuda",
    .help = "paged buffer in GPU memory (not built into this binary)",
    .methods = 0,
    .available = cuda_not_built,
};

#else

#include <cuda_runtime.h>

#include "kernels/kv_index.h"
#include "kernels/kv_transfer.h"

typedef struct cuda_impl {
    int device;
    cudaStream_t stream;
    char **layers;         /* host copy of the per-layer device bases */
    char **layers_dev;     /* the same table in device memory, for the kernel */
    int64_t *slots_pinned; /* pinned host staging of the slot mapping */
    int64_t *slots_dev;
    int slots_cap;
    char *staging; /* device chunk buffer for kernel_dma / kernel_d2d */
    size_t staging_cap;
} cuda_impl;

/* Turn a CUDA status into our error convention, naming the call. */
static int cuda_check(cudaError_t e, const char *what, sim_err *err)
{
    if (e == cudaSuccess) return 0;
    return sim_errf(err, "cuda backend: %s: %s", what, cudaGetErrorString(e));
}

static int cuda_available(char *label, size_t n, sim_err *err)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(label, n, "cuda: no GPU");
        return sim_errf(err, "no GPU (cudaGetDeviceCount: %s)", cudaGetErrorString(e));
    }
    if (count == 0) {
        snprintf(label, n, "cuda: no GPU");
        return sim_errf(err, "no GPU (no CUDA device visible)");
    }
    struct cudaDeviceProp prop;
    if (cuda_check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties", err)) return -1;
    snprintf(label, n, "cuda: %s", prop.name);
    return 0;
}

static void cuda_close(dp_dev *dev)
{
    cuda_impl *im = dev->impl;
    if (!im) return;
    if (im->layers)
        for (int l = 0; l < dev->shape.layers; l++) cudaFree(im->layers[l]);
    cudaFree(im->layers_dev);
    cudaFree(im->slots_dev);
    cudaFreeHost(im->slots_pinned);
    cudaFree(im->staging);
    if (im->stream) cudaStreamDestroy(im->stream);
    free(im->layers);
    free(im);
    dev->impl = NULL;
}

static int cuda_open(dp_dev *dev, sim_err *err)
{
    const dp_shape *s = &dev->shape;
    cuda_impl *im = sim_xcalloc(1, sizeof *im);
    dev->impl = im;
    im->layers = sim_xcalloc((size_t)s->layers, sizeof *im->layers);
    size_t table = (size_t)s->layers * sizeof *im->layers;
    int rc = cuda_check(cudaSetDevice(im->device), "cudaSetDevice", err) ||
             cuda_check(cudaStreamCreateWithFlags(&im->stream, cudaStreamNonBlocking), "cudaStreamCreate", err);
    for (int l = 0; !rc && l < s->layers; l++)
        rc = cuda_check(cudaMalloc((void **)&im->layers[l], (size_t)dp_layer_bytes(s)), "cudaMalloc(layer)", err);
    rc = rc || cuda_check(cudaMalloc((void **)&im->layers_dev, table), "cudaMalloc(pointer table)", err) ||
         cuda_check(cudaMemcpy(im->layers_dev, im->layers, table, cudaMemcpyHostToDevice), "cudaMemcpy(table)", err);
    if (rc) cuda_close(dev);
    return rc ? -1 : 0;
}

static int cuda_host_alloc(dp_dev *dev, size_t bytes, void **out, sim_err *err)
{
    size_t n = (size_t)dp_align_up((int64_t)(bytes ? bytes : 1));
    return cuda_check(cudaHostAlloc(out, n, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc", err);
}

static void cuda_host_free(dp_dev *dev, void *p) { cudaFreeHost(p); }

static int cuda_paged_copy(dp_dev *dev, char *image, enum cudaMemcpyKind kind, sim_err *err)
{
    cuda_impl *im = dev->impl;
    int64_t lb = dp_layer_bytes(&dev->shape);
    for (int l = 0; l < dev->shape.layers; l++) {
        char *host = image + l * lb;
        cudaError_t e = kind == cudaMemcpyHostToDevice ? cudaMemcpy(im->layers[l], host, (size_t)lb, kind)
                                                       : cudaMemcpy(host, im->layers[l], (size_t)lb, kind);
        if (cuda_check(e, "cudaMemcpy(paged buffer)", err)) return -1;
    }
    return 0;
}

static int cuda_paged_write(dp_dev *dev, const void *image, sim_err *err)
{
    return cuda_paged_copy(dev, (char *)image, cudaMemcpyHostToDevice, err);
}

static int cuda_paged_read(dp_dev *dev, void *image, sim_err *err)
{
    return cuda_paged_copy(dev, image, cudaMemcpyDeviceToHost, err);
}

/* Grow the device staging chunk and the slot arrays to fit this transfer
 * (the first transfer of a size pays this; the probe's warm-up absorbs it). */
static int cuda_reserve(cuda_impl *im, int tokens, size_t chunk_bytes, sim_err *err)
{
    if (im->slots_cap < tokens) {
        cudaFree(im->slots_dev);
        cudaFreeHost(im->slots_pinned);
        im->slots_dev = NULL;
        im->slots_pinned = NULL;
        im->slots_cap = 0;
        size_t n = (size_t)tokens * sizeof(int64_t);
        if (cuda_check(cudaMalloc((void **)&im->slots_dev, n), "cudaMalloc(slots)", err) ||
            cuda_check(cudaHostAlloc((void **)&im->slots_pinned, n, cudaHostAllocDefault), "cudaHostAlloc(slots)", err))
            return -1;
        im->slots_cap = tokens;
    }
    if (im->staging_cap < chunk_bytes) {
        cudaFree(im->staging);
        im->staging = NULL;
        im->staging_cap = 0;
        if (cuda_check(cudaMalloc((void **)&im->staging, chunk_bytes), "cudaMalloc(staging)", err)) return -1;
        im->staging_cap = chunk_bytes;
    }
    return 0;
}

/* The launch parameters for a chunk the device reaches at `chunk`. */
static dp_kv_launch cuda_launch_params(const dp_dev *dev, const dp_xfer *x, char *chunk)
{
    const cuda_impl *im = dev->impl;
    int64_t row = dp_row_bytes(&dev->shape);
    uint64_t addr_bits = (uint64_t)(uintptr_t)chunk;
    for (int l = 0; l < dev->shape.layers; l++) addr_bits |= (uint64_t)(uintptr_t)im->layers[l];
    return (dp_kv_launch){
        .layers_dev = im->layers_dev,
        .slots_dev = im->slots_dev,
        .chunk = chunk,
        .row_bytes = row,
        .layer_slots = dp_layer_slots(&dev->shape),
        .layers = dev->shape.layers,
        .tokens = x->tokens,
        .word_bytes = dp_kv_word_bytes((uint64_t)row, addr_bits),
    };
}

/* The naive baseline: every page-bounded run of every (half, layer) is its
 * own cudaMemcpyAsync between the paged tensor and the pinned chunk. */
static int cuda_per_page(dp_dev *dev, const dp_xfer *x, sim_err *err)
{
    cuda_impl *im = dev->impl;
    const dp_shape *s = &dev->shape;
    int64_t row = dp_row_bytes(s), lslots = dp_layer_slots(s);
    enum cudaMemcpyKind kind = x->dir == DP_STORE ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
    for (int kv = 0; kv < 2; kv++)
        for (int l = 0; l < s->layers; l++)
            for (int t = 0; t < x->tokens;) {
                if (x->slots[t] < 0) {
                    t++;
                    continue;
                }
                int n = dp_kv_run_length(x->slots, t, x->tokens, DP_PAGE_TOKENS);
                char *paged = im->layers[l] + dp_kv_paged_offset(row, lslots, kv, x->slots[t]);
                char *chunk = (char *)x->chunk + dp_kv_chunk_offset(row, s->layers, x->tokens, kv, l, t);
                cudaError_t e = x->dir == DP_STORE ? cudaMemcpyAsync(chunk, paged, (size_t)(n * row), kind, im->stream)
                                                   : cudaMemcpyAsync(paged, chunk, (size_t)(n * row), kind, im->stream);
                if (cuda_check(e, "cudaMemcpyAsync(page)", err)) return -1;
                t += n;
            }
    return 0;
}

/* The fused kernel, with the chunk where the method wants it. */
static int cuda_kernel(dp_dev *dev, const dp_xfer *x, size_t bytes, sim_err *err)
{
    cuda_impl *im = dev->impl;
    int gather = x->dir == DP_STORE;
    char *target = im->staging;
    if (x->method == DP_METHOD_KERNEL_ZEROCOPY &&
        cuda_check(cudaHostGetDevicePointer((void **)&target, x->chunk, 0),
                   "cudaHostGetDevicePointer (chunk must come from dp_dev_host_alloc)", err))
        return -1;
    memcpy(im->slots_pinned, x->slots, (size_t)x->tokens * sizeof(int64_t));
    if (cuda_check(cudaMemcpyAsync(im->slots_dev, im->slots_pinned, (size_t)x->tokens * sizeof(int64_t),
                                   cudaMemcpyHostToDevice, im->stream),
                   "cudaMemcpyAsync(slots)", err))
        return -1;
    dp_kv_launch p = cuda_launch_params(dev, x, target);
    int dma = x->method == DP_METHOD_KERNEL_DMA;
    if (dma && !gather &&
        cuda_check(cudaMemcpyAsync(im->staging, x->chunk, bytes, cudaMemcpyHostToDevice, im->stream),
                   "cudaMemcpyAsync(chunk H2D)", err))
        return -1;
    if (cuda_check(dp_kv_launch_transfer(&p, gather, im->stream), "kv_transfer_kernel launch", err)) return -1;
    if (dma && gather &&
        cuda_check(cudaMemcpyAsync(x->chunk, im->staging, bytes, cudaMemcpyDeviceToHost, im->stream),
                   "cudaMemcpyAsync(chunk D2H)", err))
        return -1;
    return 0;
}

static int cuda_transfer(dp_dev *dev, const dp_xfer *x, sim_err *err)
{
    cuda_impl *im = dev->impl;
    size_t bytes = (size_t)dp_chunk_bytes(&dev->shape, x->tokens);
    if (cuda_reserve(im, x->tokens, bytes, err)) return -1;
    int rc = x->method == DP_METHOD_PER_PAGE ? cuda_per_page(dev, x, err) : cuda_kernel(dev, x, bytes, err);
    cudaError_t e = cudaStreamSynchronize(im->stream);
    return rc || cuda_check(e, "cudaStreamSynchronize", err) ? -1 : 0;
}

/* Pinned host ↔ device staging, one cudaMemcpyAsync: the copy engine's
 * bandwidth, which the methods are judged against. */
static int cuda_peak_copy(dp_dev *dev, dp_dir dir, void *host, size_t bytes, size_t offset, sim_err *err)
{
    cuda_impl *im = dev->impl;
    if (cuda_reserve(im, 1, offset + bytes, err)) return -1;
    char *d = im->staging + offset;
    cudaError_t e = dir == DP_STORE ? cudaMemcpyAsync(host, d, bytes, cudaMemcpyDeviceToHost, im->stream)
                                    : cudaMemcpyAsync(d, host, bytes, cudaMemcpyHostToDevice, im->stream);
    if (cuda_check(e, "cudaMemcpyAsync(reference)", err)) return -1;
    return cuda_check(cudaStreamSynchronize(im->stream), "cudaStreamSynchronize", err);
}

const dp_backend_ops dp_backend_cuda = {
    .name = "cuda",
    .help = "paged buffer in GPU memory; fused gather/scatter kernel, zero-copy or staged, per-page baseline",
    .methods = DP_METHOD_BIT(DP_METHOD_KERNEL_ZEROCOPY) | DP_METHOD_BIT(DP_METHOD_KERNEL_DMA) |
               DP_METHOD_BIT(DP_METHOD_KERNEL_D2D) | DP_METHOD_BIT(DP_METHOD_PER_PAGE),
    .available = cuda_available,
    .open = cuda_open,
    .close = cuda_close,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .paged_write = cuda_paged_write,
    .paged_read = cuda_paged_read,
    .transfer = cuda_transfer,
    .peak_name = "cuda_memcpy",
    .peak_copy = cuda_peak_copy,
};

#endif
