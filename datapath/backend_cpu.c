/* datapath/backend_cpu.c — the `cpu` backend: the paged KV buffer lives in
 * host memory and chunks move with memcpy. Always built; it is what the CPU
 * tests exercise and what a machine without a GPU calibrates.
 *
 * Gather and scatter walk the slot mapping once to find runs of consecutive
 * slots (dp_kv_run_length: such a run is contiguous in both the paged and
 * the chunk layout), then copy every run of every (K/V half, layer) pair with
 * one memcpy. A 256-token chunk whose pages are scattered becomes 16 runs of
 * 16 rows per layer half — 32 KiB copies for LLaMA3.1-8B — so the copy runs
 * near memcpy speed instead of paying per-token overhead.
 *
 * The 2·layers (half, layer) units are shared with a small persistent
 * thread pool, because one core rarely saturates DRAM bandwidth. Units are
 * claimed one at a time from an atomic ticket (generation in the high 32
 * bits, next unit in the low 32) rather than split in advance: the caller
 * claims too, so a worker the scheduler has not run yet (a busy or shared
 * machine) just claims nothing instead of holding its share of the chunk
 * hostage, and a worker waking late for an old job sees the generation
 * changed and stops. Chunks under DP_CPU_PARALLEL_MIN bytes stay on the
 * caller, where waking workers would cost more than it saves. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datapath/backend.h"
#include "kernels/kv_index.h"

#define DP_CPU_PARALLEL_MIN (1 << 20)

typedef struct cpu_run {
    int token;    /* first chunk token of the run */
    int n;        /* tokens in the run */
    int64_t slot; /* slot of the first token */
} cpu_run;

typedef struct cpu_job {
    dp_dir dir;
    int tokens;
    int nruns;
    const cpu_run *runs;
    char *chunk;
} cpu_job;

typedef struct cpu_impl cpu_impl;

typedef struct cpu_worker {
    cpu_impl *impl;
    pthread_t thread;
} cpu_worker;

struct cpu_impl {
    const dp_dev *dev;
    char *paged;       /* all layers, layer after layer */
    char **layer_base; /* layer_base[l] = paged + l · layer_bytes */
    cpu_run *runs;
    int runs_cap;
    int nworkers; /* threads besides the caller */
    cpu_worker *workers;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    uint64_t generation; /* bumped once per parallel job (under mu) */
    bool quit;
    cpu_job job;             /* the current parallel job (under mu) */
    _Atomic uint64_t ticket; /* (generation << 32) | next unit to claim */
    atomic_int finished;     /* units of the current job copied */
};

/* The "model name" line of /proc/cpuinfo, or "unknown CPU". */
void dp_cpu_model_name(char *buf, size_t n)
{
    snprintf(buf, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) || !colon) continue;
        colon += 1 + (colon[1] == ' ');
        colon[strcspn(colon, "\n")] = 0;
        snprintf(buf, n, "%s", colon);
        break;
    }
    fclose(f);
}

static int cpu_available(char *label, size_t n, sim_err *err)
{
    char model[96];
    dp_cpu_model_name(model, sizeof model);
    snprintf(label, n, "cpu: %s", model);
    return 0;
}

/* Copy every run of unit u = (half, layer). */
static void cpu_copy_unit(const cpu_impl *im, const cpu_job *job, int u)
{
    const dp_shape *s = &im->dev->shape;
    int64_t row = dp_row_bytes(s), lslots = dp_layer_slots(s);
    int kv = u / s->layers, layer = u % s->layers;
    char *paged = im->layer_base[layer] + dp_kv_paged_offset(row, lslots, kv, 0);
    char *chunk = job->chunk + dp_kv_chunk_offset(row, s->layers, job->tokens, kv, layer, 0);
    for (int r = 0; r < job->nruns; r++) {
        const cpu_run *run = &job->runs[r];
        char *p = paged + run->slot * row, *c = chunk + (int64_t)run->token * row;
        size_t n = (size_t)(run->n * row);
        if (job->dir == DP_STORE) memcpy(c, p, n);
        else memcpy(p, c, n);
    }
}

/* Claim and copy units of job `gen` until none is left (or the job is no
 * longer current); whoever finishes the last unit wakes the caller. */
static void cpu_claim_units(cpu_impl *im, const cpu_job *job, uint64_t gen)
{
    const int units = 2 * im->dev->shape.layers;
    const uint64_t tag = (gen & 0xffffffffu) << 32;
    uint64_t t = atomic_load(&im->ticket);
    for (;;) {
        if ((t & ~0xffffffffull) != tag || (int)(t & 0xffffffffu) >= units) return;
        if (!atomic_compare_exchange_weak(&im->ticket, &t, t + 1)) continue; /* t reloaded */
        cpu_copy_unit(im, job, (int)(t & 0xffffffffu));
        if (atomic_fetch_add(&im->finished, 1) + 1 == units) {
            pthread_mutex_lock(&im->mu);
            pthread_cond_signal(&im->done);
            pthread_mutex_unlock(&im->mu);
        }
        t = atomic_load(&im->ticket);
    }
}

static void *cpu_worker_main(void *arg)
{
    cpu_worker *wk = arg;
    cpu_impl *im = wk->impl;
    uint64_t seen = 0;
    pthread_mutex_lock(&im->mu);
    for (;;) {
        while (!im->quit && im->generation == seen) pthread_cond_wait(&im->go, &im->mu);
        if (im->quit) break;
        seen = im->generation;
        cpu_job job = im->job;
        pthread_mutex_unlock(&im->mu);
        cpu_claim_units(im, &job, seen);
        pthread_mutex_lock(&im->mu);
    }
    pthread_mutex_unlock(&im->mu);
    return NULL;
}

/* Split the slot mapping into runs of consecutive slots, skipping negative
 * slots. */
static int cpu_build_runs(cpu_impl *im, const int64_t *slots, int tokens)
{
    if (im->runs_cap < tokens) {
        im->runs = sim_xrealloc(im->runs, (size_t)tokens * sizeof *im->runs);
        im->runs_cap = tokens;
    }
    int n = 0;
    for (int t = 0; t < tokens;) {
        if (slots[t] < 0) {
            t++;
            continue;
        }
        int len = dp_kv_run_length(slots, t, tokens, 0);
        im->runs[n++] = (cpu_run){.token = t, .n = len, .slot = slots[t]};
        t += len;
    }
    return n;
}

static int cpu_transfer(dp_dev *dev, const dp_xfer *x, sim_err *err)
{
    cpu_impl *im = dev->impl;
    int nruns = cpu_build_runs(im, x->slots, x->tokens);
    cpu_job job = {.dir = x->dir, .tokens = x->tokens, .nruns = nruns, .runs = im->runs, .chunk = x->chunk};
    const int units = 2 * dev->shape.layers;
    if (im->nworkers == 0 || dp_chunk_bytes(&dev->shape, x->tokens) < DP_CPU_PARALLEL_MIN) {
        for (int u = 0; u < units; u++) cpu_copy_unit(im, &job, u);
        return 0;
    }
    pthread_mutex_lock(&im->mu);
    im->job = job;
    uint64_t gen = ++im->generation;
    atomic_store(&im->finished, 0);
    atomic_store(&im->ticket, (gen & 0xffffffffu) << 32);
    pthread_cond_broadcast(&im->go);
    pthread_mutex_unlock(&im->mu);
    cpu_claim_units(im, &job, gen);
    pthread_mutex_lock(&im->mu);
    while (atomic_load(&im->finished) < units) pthread_cond_wait(&im->done, &im->mu);
    pthread_mutex_unlock(&im->mu);
    return 0;
}

static void cpu_stop_workers(cpu_impl *im, int started)
{
    pthread_mutex_lock(&im->mu);
    im->quit = true;
    pthread_cond_broadcast(&im->go);
    pthread_mutex_unlock(&im->mu);
    for (int i = 0; i < started; i++) pthread_join(im->workers[i].thread, NULL);
}

static void cpu_close(dp_dev *dev)
{
    cpu_impl *im = dev->impl;
    if (!im) return;
    cpu_stop_workers(im, im->nworkers);
    pthread_mutex_destroy(&im->mu);
    pthread_cond_destroy(&im->go);
    pthread_cond_destroy(&im->done);
    free(im->workers);
    free(im->runs);
    free(im->layer_base);
    free(im->paged);
    free(im);
    dev->impl = NULL;
}

static int cpu_open(dp_dev *dev, sim_err *err)
{
    const dp_shape *s = &dev->shape;
    cpu_impl *im = sim_xcalloc(1, sizeof *im);
    im->dev = dev;
    dev->impl = im;
    pthread_mutex_init(&im->mu, NULL);
    pthread_cond_init(&im->go, NULL);
    pthread_cond_init(&im->done, NULL);
    if (dp_aligned_alloc((size_t)(dp_layer_bytes(s) * s->layers), (void **)&im->paged, err)) {
        cpu_close(dev);
        return -1;
    }
    im->layer_base = sim_xcalloc((size_t)s->layers, sizeof *im->layer_base);
    for (int l = 0; l < s->layers; l++) im->layer_base[l] = im->paged + (int64_t)l * dp_layer_bytes(s);
    im->workers = sim_xcalloc((size_t)dev->threads, sizeof *im->workers);
    for (int i = 0; i < dev->threads - 1; i++) {
        im->workers[i] = (cpu_worker){.impl = im};
        if (pthread_create(&im->workers[i].thread, NULL, cpu_worker_main, &im->workers[i])) {
            cpu_stop_workers(im, i);
            im->nworkers = 0;
            cpu_close(dev);
            return sim_errf(err, "cpu backend: cannot start worker thread %d of %d", i + 1, dev->threads);
        }
        im->nworkers = i + 1;
    }
    return 0;
}

static int cpu_host_alloc(dp_dev *dev, size_t bytes, void **out, sim_err *err)
{
    return dp_aligned_alloc(bytes, out, err);
}

static void cpu_host_free(dp_dev *dev, void *p) { free(p); }

static int cpu_paged_write(dp_dev *dev, const void *image, sim_err *err)
{
    cpu_impl *im = dev->impl;
    memcpy(im->paged, image, (size_t)(dp_layer_bytes(&dev->shape) * dev->shape.layers));
    return 0;
}

static int cpu_paged_read(dp_dev *dev, void *image, sim_err *err)
{
    cpu_impl *im = dev->impl;
    memcpy(image, im->paged, (size_t)(dp_layer_bytes(&dev->shape) * dev->shape.layers));
    return 0;
}

static int cpu_peak_copy(dp_dev *dev, dp_dir dir, void *host, size_t bytes, size_t offset, sim_err *err)
{
    cpu_impl *im = dev->impl;
    if (dir == DP_STORE) memcpy(host, im->paged + offset, bytes);
    else memcpy(im->paged + offset, host, bytes);
    return 0;
}

const dp_backend_ops dp_backend_cpu = {
    .name = "cpu",
    .help = "paged buffer in host memory; threaded memcpy of contiguous slot runs",
    .methods = DP_METHOD_BIT(DP_METHOD_CPU),
    .available = cpu_available,
    .open = cpu_open,
    .close = cpu_close,
    .host_alloc = cpu_host_alloc,
    .host_free = cpu_host_free,
    .paged_write = cpu_paged_write,
    .paged_read = cpu_paged_read,
    .transfer = cpu_transfer,
    .peak_name = "memcpy",
    .peak_copy = cpu_peak_copy,
};
