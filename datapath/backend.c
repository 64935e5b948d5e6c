/* datapath/backend.c — the backend registry (name → ops) and the checked
 * entry points every caller goes through: shape and slot-mapping validation
 * happen here once, so backends only move bytes. */
#include "datapath/backend.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const dp_backend_ops *const backends[] = {
    &dp_backend_cpu,
    &dp_backend_cuda,
};

#define NBACKENDS (sizeof backends / sizeof backends[0])

static const char *const method_names[DP_METHOD_COUNT] = {
    [DP_METHOD_CPU] = "cpu",
    [DP_METHOD_KERNEL_ZEROCOPY] = "kernel_zerocopy",
    [DP_METHOD_KERNEL_DMA] = "kernel_dma",
    [DP_METHOD_KERNEL_D2D] = "kernel_d2d",
    [DP_METHOD_PER_PAGE] = "per_page",
};

const char *dp_method_name(dp_method m) { return (unsigned)m < DP_METHOD_COUNT ? method_names[m] : "?"; }
const char *dp_dir_name(dp_dir d) { return d == DP_STORE ? "store" : "load"; }

int dp_method_parse(const char *name, dp_method *out, sim_err *err)
{
    for (int m = 0; m < DP_METHOD_COUNT; m++)
        if (!strcmp(name, method_names[m])) {
            *out = (dp_method)m;
            return DP_OK;
        }
    sim_errf(err, "unknown datapath method '%s' (known: cpu, kernel_zerocopy, kernel_dma, kernel_d2d, per_page)", name);
    return DP_EINVAL;
}

const dp_backend_ops *const *dp_backends(size_t *n)
{
    *n = NBACKENDS;
    return backends;
}

const dp_backend_ops *dp_backend(const char *name, sim_err *err)
{
    for (size_t i = 0; i < NBACKENDS; i++) {
        if (strcmp(name, backends[i]->name)) continue;
        char label[128];
        sim_err why;
        if (backends[i]->available(label, sizeof label, &why))
            return sim_errf(err, "datapath backend '%s': %s", name, why.msg), NULL;
        return backends[i];
    }
    sim_errf(err, "unknown datapath backend '%s' (known: cpu, cuda)", name);
    return NULL;
}

/* Copy threads by default: half the online CPUs (1 to 8). A gather or
 * scatter is memory-bound; one thread already moves about memcpy's
 * bandwidth on a small machine, and a thread per CPU there competes with
 * everything else for the same cores (measured in docs/datapath.md). */
static int default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN) / 2;
    return n < 1 ? 1 : n > 8 ? 8 : (int)n;
}

int dp_dev_open(dp_dev **out, const char *name, const dp_shape *shape, int threads, sim_err *err)
{
    const dp_backend_ops *ops = dp_backend(name, err);
    if (!ops) return DP_EINVAL;
    if (dp_shape_check(shape, err)) return DP_EINVAL;
    dp_dev *dev = sim_xcalloc(1, sizeof *dev);
    dev->ops = ops;
    dev->shape = *shape;
    dev->threads = threads > 0 ? threads : default_threads();
    if (ops->available(dev->label, sizeof dev->label, err) || ops->open(dev, err)) {
        free(dev);
        return DP_EIO;
    }
    *out = dev;
    return DP_OK;
}

void dp_dev_close(dp_dev *dev)
{
    if (!dev) return;
    dev->ops->close(dev);
    free(dev);
}

bool dp_dev_has_method(const dp_dev *dev, dp_method m)
{
    return (unsigned)m < DP_METHOD_COUNT && (dev->ops->methods & DP_METHOD_BIT(m));
}

int dp_dev_host_alloc(dp_dev *dev, size_t bytes, void **out, sim_err *err)
{
    return dev->ops->host_alloc(dev, bytes, out, err) ? DP_EIO : DP_OK;
}

void dp_dev_host_free(dp_dev *dev, void *p)
{
    if (p) dev->ops->host_free(dev, p);
}

int dp_dev_paged_write(dp_dev *dev, const void *image, sim_err *err)
{
    return dev->ops->paged_write(dev, image, err) ? DP_EIO : DP_OK;
}

int dp_dev_paged_read(dp_dev *dev, void *image, sim_err *err)
{
    return dev->ops->paged_read(dev, image, err) ? DP_EIO : DP_OK;
}

int dp_transfer(dp_dev *dev, const dp_xfer *x, sim_err *err)
{
    if (!dp_dev_has_method(dev, x->method)) {
        sim_errf(err, "datapath backend '%s' has no method '%s'", dev->ops->name, dp_method_name(x->method));
        return DP_EINVAL;
    }
    int rc = dp_slots_check(&dev->shape, x->slots, x->tokens, err);
    if (rc) return rc;
    return dev->ops->transfer(dev, x, err) ? DP_EIO : DP_OK;
}

int dp_dev_peak_copy(dp_dev *dev, dp_dir dir, void *host, size_t bytes, size_t offset, sim_err *err)
{
    if ((int64_t)(offset + bytes) > dp_layer_bytes(&dev->shape) * dev->shape.layers) {
        sim_errf(err, "reference copy of %zu bytes at offset %zu exceeds the paged buffer", bytes, offset);
        return DP_EINVAL;
    }
    return dev->ops->peak_copy(dev, dir, host, bytes, offset, err) ? DP_EIO : DP_OK;
}
