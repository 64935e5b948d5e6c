/* datapath/backend.h — the data path's backends behind one interface.
 *
 * A backend owns a paged KV buffer (datapath/layout.h) wherever its compute
 * lives — host memory for `cpu`, GPU memory for `cuda` — and moves one chunk
 * at a time between that buffer and a contiguous chunk in host memory:
 *
 *   store  gather  paged → chunk   (HBM → DRAM on a GPU)
 *   load   scatter chunk → paged   (DRAM → HBM)
 *
 * How the bytes move is the method. `cpu` has one (threads copying
 * contiguous runs with memcpy); `cuda` has the fused kernel writing straight
 * into pinned host memory (zero-copy), the kernel into a device staging
 * buffer plus one cudaMemcpyAsync, the same kernel with the chunk left in
 * device memory (D2D), and the naive baseline of one cudaMemcpyAsync per page
 * per layer per K/V half.
 *
 * Adding a backend = one file defining a dp_backend_ops + one line in the
 * table in datapath/backend.c. */
#ifndef DP_BACKEND_H
#define DP_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datapath/layout.h"
#include "sim/util.h"

typedef enum dp_dir { DP_STORE = 0, DP_LOAD = 1 } dp_dir;

typedef enum dp_method {
    DP_METHOD_CPU = 0,         /* cpu: threaded memcpy of contiguous slot runs */
    DP_METHOD_KERNEL_ZEROCOPY, /* cuda: one kernel reads/writes mapped pinned host memory */
    DP_METHOD_KERNEL_DMA,      /* cuda: kernel ↔ device staging + one cudaMemcpyAsync */
    DP_METHOD_KERNEL_D2D,      /* cuda: kernel ↔ device staging; the chunk stays in HBM */
    DP_METHOD_PER_PAGE,        /* cuda: one cudaMemcpyAsync per page, layer and K/V half */
    DP_METHOD_COUNT
} dp_method;

#define DP_METHOD_BIT(m) (1u << (m))

/* Names as they appear in probe JSON and calibration files. */
const char *dp_method_name(dp_method m);
const char *dp_dir_name(dp_dir d);
/* DP_EINVAL naming the unknown method and listing the known ones. */
int dp_method_parse(const char *name, dp_method *out, sim_err *err);

/* One gather or scatter of one chunk. */
typedef struct dp_xfer {
    dp_dir dir;
    dp_method method;
    const int64_t *slots; /* host array, one entry per token; negative = skip */
    int tokens;
    void *chunk; /* host payload [2, layers, tokens, row] (from dp_dev_host_alloc
                            * for zero-copy); unused by DP_METHOD_KERNEL_D2D */
} dp_xfer;

typedef struct dp_dev dp_dev;

typedef struct dp_backend_ops {
    const char *name;
    const char *help;
    unsigned methods; /* DP_METHOD_BIT set of the methods it implements */
    /* 0 when usable here, writing a label ("cpu: AMD EPYC", "cuda: NVIDIA
     * H200"); -1 with the reason otherwise ("not built", "no GPU"). */
    int (*available)(char *label, size_t n, sim_err *err);
    /* dev->shape, threads and label are set; allocate the paged buffer and
     * whatever the methods need, storing it in dev->impl. */
    int (*open)(dp_dev *dev, sim_err *err);
    void (*close)(dp_dev *dev);
    /* Host memory the backend can move chunks through fastest (pinned and
     * mapped for cuda), DP_ALIGN-aligned. */
    int (*host_alloc)(dp_dev *dev, size_t bytes, void **out, sim_err *err);
    void (*host_free)(dp_dev *dev, void *p);
    /* Copy the whole paged buffer from/to a host image laid out layer after
     * layer (layer l at l · dp_layer_bytes). For tests and the probe. */
    int (*paged_write)(dp_dev *dev, const void *image, sim_err *err);
    int (*paged_read)(dp_dev *dev, void *image, sim_err *err);
    /* Move one chunk; slots already checked, method supported. Synchronous:
     * when it returns the bytes are in place. */
    int (*transfer)(dp_dev *dev, const dp_xfer *x, sim_err *err);
    /* The reference peak the methods are judged against: one contiguous copy
     * of `bytes` between `host` and the backend's own memory at `offset`
     * (store: from it, load: to it) — plain memcpy into the paged buffer for
     * cpu, pinned cudaMemcpyAsync into device staging for cuda. */
    const char *peak_name;
    int (*peak_copy)(dp_dev *dev, dp_dir dir, void *host, size_t bytes, size_t offset, sim_err *err);
} dp_backend_ops;

struct dp_dev {
    const dp_backend_ops *ops;
    dp_shape shape;
    int threads; /* cpu worker threads (1 = the caller only) */
    char label[128];
    void *impl; /* the backend's own state */
};

/* The backend called `name`, if it is usable here. NULL with a message that
 * says why not: unknown name (listing the known ones), "not built" or
 * "no GPU". */
const dp_backend_ops *dp_backend(const char *name, sim_err *err);
/* All registered backends, for listings and the probe. */
const dp_backend_ops *const *dp_backends(size_t *n);

/* Open backend `name` with a paged buffer of `shape`. threads <= 0 picks
 * the number of online CPUs (at most 8). */
int dp_dev_open(dp_dev **out, const char *name, const dp_shape *shape, int threads, sim_err *err);
void dp_dev_close(dp_dev *dev);
bool dp_dev_has_method(const dp_dev *dev, dp_method m);
int dp_dev_host_alloc(dp_dev *dev, size_t bytes, void **out, sim_err *err);
void dp_dev_host_free(dp_dev *dev, void *p);
int dp_dev_paged_write(dp_dev *dev, const void *image, sim_err *err);
int dp_dev_paged_read(dp_dev *dev, void *image, sim_err *err);
/* Check the slot mapping (DP_ERANGE) and the method (DP_EINVAL), then move
 * the chunk (DP_EIO when the backend fails). */
int dp_transfer(dp_dev *dev, const dp_xfer *x, sim_err *err);
/* The backend's reference copy; DP_EINVAL when offset + bytes exceed the
 * paged buffer's size. */
int dp_dev_peak_copy(dp_dev *dev, dp_dir dir, void *host, size_t bytes, size_t offset, sim_err *err);

/* The "model name" of /proc/cpuinfo ("unknown CPU" when absent). */
void dp_cpu_model_name(char *buf, size_t n);

/* The backends themselves (datapath/backend_*.c). */
extern const dp_backend_ops dp_backend_cpu;
extern const dp_backend_ops dp_backend_cuda;

#endif
