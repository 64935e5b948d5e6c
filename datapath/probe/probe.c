/* datapath/probe/probe.c — the measurement sweep behind build/kvsim-probe
 * (see probe.h for what it measures and why it needs only libc + cudart).
 *
 * For each usable backend and model shape it opens a paged buffer large
 * enough for two of the biggest chunks, fills it with random bytes and
 * keeps a host copy (the reference's input). Then, per chunk size:
 *
 *   1. slot mappings: whole pages in a shuffled order (vLLM hands out free
 *      blocks in no particular order), one disjoint set per rotation slot;
 *   2. per direction, every method is first checked byte for byte against
 *      the CPU reference (dp_ref_gather / dp_ref_scatter), then the
 *      backend's reference copy (memcpy / pinned cudaMemcpy of the same
 *      bytes, contiguous) and all methods are timed together, interleaved;
 *   3. host→SSD and SSD→host file I/O of the same sizes (first shape only:
 *      file cost depends on bytes, not on the model).
 *
 * Timing: untimed warm-up runs, then `reps` rounds in which each operation
 * runs once, each run timed with CLOCK_MONOTONIC around the synchronous
 * call (which includes launch and synchronisation, i.e. what a caller
 * waits); the median per operation is reported. Bytes are the KV payload
 * moved, counted once per transfer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "datapath/backend.h"
#include "datapath/fileio.h"
#include "datapath/layout.h"
#include "datapath/probe/probe.h"

#define PROBE_MAX_SETS   64
#define PROBE_COLD_BYTES (64 << 20) /* rotate until this much is touched: twice a large L3 */
#define PROBE_PEAK_BYTES (256 << 20)

static const dp_probe_shape builtin_shapes[] = {
    {"llama3.1-8b", 32, 8, 128, 2},    /* 128 KiB/token */
    {"llama3-70b-tp8", 80, 1, 128, 2}, /* one GPU's shard at TP=8: 1 KV head, 40 KiB/token */
    {"qwen2.5-32b", 64, 8, 128, 2},    /* 256 KiB/token */
    {"tiny", 2, 2, 64, 2},             /* 1 KiB/token: quick runs and tests */
};
#define NBUILTIN (sizeof builtin_shapes / sizeof builtin_shapes[0])

void dp_probe_defaults(dp_probe_opts *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 0; i < 3; i++) o->shapes[o->nshapes++] = builtin_shapes[i];
    for (int t = 16; t <= 1024; t *= 2) o->tokens[o->ntokens++] = t;
    o->reps = 9;
    o->warmup = 2;
    o->ssd_dir = "build/probe-ssd";
}

int dp_probe_parse_shape(const char *s, dp_probe_shape *out, sim_err *err)
{
    for (size_t i = 0; i < NBUILTIN; i++)
        if (!strcmp(s, builtin_shapes[i].name)) {
            *out = builtin_shapes[i];
            return 0;
        }
    int n = 0;
    dp_probe_shape sh;
    if (sscanf(s, "%dx%dx%dx%d%n", &sh.layers, &sh.kv_heads, &sh.head_dim, &sh.dtype_bytes, &n) != 4 || s[n] ||
        sh.layers <= 0 || sh.kv_heads <= 0 || sh.head_dim <= 0 || sh.dtype_bytes <= 0 || strlen(s) >= sizeof sh.name)
        return sim_errf(err,
                        "shape '%s': expected llama3.1-8b, llama3-70b-tp8, qwen2.5-32b, tiny or "
                        "LAYERSxKVHEADSxHEADDIMxDTYPEBYTES (e.g. 32x8x128x2)",
                        s);
    snprintf(sh.name, sizeof sh.name, "%s", s);
    *out = sh;
    return 0;
}

/* ---- results kept until the JSON is written ---------------------------- */

typedef struct sample {
    const char *backend, *shape, *dir, *tier, *method;
    int tokens;
    int64_t bytes, bytes_per_token;
    double median, min, max;
    int o_direct; /* -1: not file I/O */
} sample;

typedef struct backend_info {
    const char *name;
    bool available;
    char label[128];
    char reason[sizeof(sim_err)];
} backend_info;

typedef struct peak {
    const char *backend, *method, *dir;
    int64_t bytes;
    double median;
} peak;

typedef struct probe {
    const dp_probe_opts *o;
    FILE *log;
    uint64_t rng;
    sample *samples;
    int nsamples, cap;
    backend_info backends[DP_PROBE_MAX_LIST];
    int nbackends;
    peak peaks[4 * DP_PROBE_MAX_LIST];
    int npeaks;
    int o_direct;    /* what the SSD directions got: -1 not run, 0 buffered, 1 O_DIRECT */
    int cpu_threads; /* what the cpu backend resolved --threads to */
    /* the backend × shape being measured */
    dp_dev *dev;
    const dp_probe_shape *shape;
    void *image, *readback, *expect;
    int64_t *perm;
    char *region; /* host chunks of all rotation sets, from the backend */
    size_t region_bytes;
    int64_t *slots; /* slot mappings of all rotation sets */
    int nsets, tokens;
    int64_t bytes;
    double ref_median, base_median;
} probe;

static uint64_t rng_next(uint64_t *s) /* xorshift64* */
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

static void fill_random(uint64_t *s, void *buf, size_t n)
{
    char *p = buf;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = rng_next(s);
        memcpy(p + i, &v, n - i < 8 ? n - i : 8);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static sample *add_sample(probe *p)
{
    if (p->nsamples == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 256;
        p->samples = sim_xrealloc(p->samples, (size_t)p->cap * sizeof *p->samples);
    }
    return &p->samples[p->nsamples++];
}

/* ---- timing ------------------------------------------------------------- */

/* Rotation set k: its host chunk and its slot mapping. */
static void *chunk_of(const probe *p, int set) { return p->region + (size_t)set * (size_t)p->bytes; }
static int64_t *slots_of(const probe *p, int set) { return p->slots + (size_t)set * (size_t)p->tokens; }

typedef int (*probe_op)(probe *p, const void *arg, int set, sim_err *err);

typedef struct timing {
    double median, min, max;
} timing;

/* One operation to time and, afterwards, its timing. */
typedef struct timed {
    probe_op op;
    const void *arg;
    timing t;
} timed;

/* Warm up each operation (every rotation set at least once, so no buffer is
 * first touched or grown while timed), then time reps rounds in which every
 * operation runs once, rotating over the sets. Interleaving the operations
 * exposes them to the same background load, so their ratios (method vs
 * plain copy, method vs per-page) hold even on a busy machine. Median of
 * the reps per operation. */
static int time_ops(probe *p, timed *ops, int nops, int nsets, sim_err *err)
{
    int reps = p->o->reps, warmup = p->o->warmup > nsets ? p->o->warmup : nsets;
    double *t = sim_xmalloc((size_t)(reps * nops) * sizeof *t);
    int rc = 0;
    for (int j = 0; j < nops; j++)
        for (int i = 0; i < warmup && !rc; i++) rc = ops[j].op(p, ops[j].arg, i % nsets, err);
    /* Consecutive runs use consecutive sets, so no run finds the previous
     * one's bytes in cache. */
    for (int i = 0, k = 0; i < reps && !rc; i++)
        for (int j = 0; j < nops && !rc; j++, k++) {
            double t0 = sim_wall_seconds();
            rc = ops[j].op(p, ops[j].arg, k % nsets, err);
            t[j * reps + i] = sim_wall_seconds() - t0;
        }
    for (int j = 0; j < nops && !rc; j++) {
        double *tj = t + j * reps;
        qsort(tj, (size_t)reps, sizeof *tj, cmp_double);
        ops[j].t = (timing){.median = reps % 2 ? tj[reps / 2] : (tj[reps / 2 - 1] + tj[reps / 2]) / 2,
                            .min = tj[0],
                            .max = tj[reps - 1]};
    }
    free(t);
    return rc;
}

typedef struct xfer_arg {
    dp_dir dir;
    dp_method method;
} xfer_arg;

static int op_transfer(probe *p, const void *arg, int set, sim_err *err)
{
    const xfer_arg *a = arg;
    dp_xfer x = {
        .dir = a->dir, .method = a->method, .slots = slots_of(p, set), .tokens = p->tokens, .chunk = chunk_of(p, set)};
    return dp_transfer(p->dev, &x, err);
}

static int op_peak(probe *p, const void *arg, int set, sim_err *err)
{
    const xfer_arg *a = arg;
    return dp_dev_peak_copy(p->dev, a->dir, chunk_of(p, set), (size_t)p->bytes, (size_t)(set * p->bytes), err);
}

/* ---- the log table -------------------------------------------------------- */

static void log_header(probe *p)
{
    if (p->o->quiet) return;
    fprintf(p->log, "%-5s %-15s %6s %9s %-5s %-4s %-16s %11s %8s %8s %8s\n", "back", "shape", "tokens", "MiB", "dir",
            "tier", "method", "median_us", "GB/s", "vs_ref", "vs_page");
}

static void log_sample(probe *p, const sample *s)
{
    if (p->o->quiet) return;
    double gbps = (double)s->bytes / s->median / 1e9;
    fprintf(p->log, "%-5s %-15s %6d %9.3f %-5s %-4s %-16s %11.1f %8.2f", s->backend, s->shape, s->tokens,
            (double)s->bytes / (1 << 20), s->dir, s->tier, s->method, s->median * 1e6, gbps);
    if (p->ref_median > 0 && s->o_direct < 0) fprintf(p->log, " %8.2f", p->ref_median / s->median);
    if (p->base_median > 0 && s->o_direct < 0) fprintf(p->log, " %8.2f", p->base_median / s->median);
    fputc('\n', p->log);
    fflush(p->log);
}

static sample *record(probe *p, const char *backend, const char *dir, const char *tier, const char *method,
                      const timing *t, int o_direct)
{
    sample *s = add_sample(p);
    *s = (sample){.backend = backend,
                  .shape = p->shape->name,
                  .dir = dir,
                  .tier = tier,
                  .method = method,
                  .tokens = p->tokens,
                  .bytes = p->bytes,
                  .bytes_per_token = p->bytes / p->tokens,
                  .median = t->median,
                  .min = t->min,
                  .max = t->max,
                  .o_direct = o_direct};
    log_sample(p, s);
    return s;
}

/* ---- checks against the CPU reference ------------------------------------ */

static char **layer_bases(probe *p, void *image)
{
    const dp_shape *s = &p->dev->shape;
    char **b = sim_xmalloc((size_t)s->layers * sizeof *b);
    for (int l = 0; l < s->layers; l++) b[l] = (char *)image + (int64_t)l * dp_layer_bytes(s);
    return b;
}

static size_t image_bytes(const probe *p) { return (size_t)(dp_layer_bytes(&p->dev->shape) * p->dev->shape.layers); }

static int mismatch(probe *p, const char *what, dp_method m, sim_err *err)
{
    return sim_errf(err, "MISMATCH: backend %s method %s %s of %d tokens (shape %s) differs from the CPU reference",
                    p->dev->ops->name, dp_method_name(m), what, p->tokens, p->shape->name);
}

/* Is the paged buffer equal to our host image? */
static int paged_matches(probe *p, sim_err *err, bool *equal)
{
    if (dp_dev_paged_read(p->dev, p->readback, err)) return -1;
    *equal = !memcmp(p->readback, p->image, image_bytes(p));
    return 0;
}

/* store: the gathered chunk equals the reference gather. */
static int check_store(probe *p, dp_method m, sim_err *err)
{
    char **b = layer_bases(p, p->image);
    dp_ref_gather(&p->dev->shape, b, slots_of(p, 0), p->tokens, p->expect);
    free(b);
    memset(chunk_of(p, 0), 0x5A, (size_t)p->bytes);
    xfer_arg a = {DP_STORE, m};
    if (op_transfer(p, &a, 0, err)) return -1;
    return memcmp(chunk_of(p, 0), p->expect, (size_t)p->bytes) ? mismatch(p, "store", m, err) : 0;
}

/* load: a random chunk scattered by the method leaves the paged buffer equal
 * to the reference scatter of it into the host image (no stray writes). */
static int check_load(probe *p, dp_method m, sim_err *err)
{
    fill_random(&p->rng, chunk_of(p, 0), (size_t)p->bytes);
    char **b = layer_bases(p, p->image);
    dp_ref_scatter(&p->dev->shape, b, slots_of(p, 0), p->tokens, chunk_of(p, 0));
    free(b);
    xfer_arg a = {DP_LOAD, m};
    bool equal;
    if (op_transfer(p, &a, 0, err) || paged_matches(p, err, &equal)) return -1;
    return equal ? 0 : mismatch(p, "load", m, err);
}

/* kernel_d2d keeps the chunk on the device: gather set 0 into staging,
 * scatter it into set 1, compare with the reference doing the same. */
static int check_d2d(probe *p, dp_method m, sim_err *err)
{
    char **b = layer_bases(p, p->image);
    dp_ref_gather(&p->dev->shape, b, slots_of(p, 0), p->tokens, p->expect);
    dp_ref_scatter(&p->dev->shape, b, slots_of(p, 1), p->tokens, p->expect);
    free(b);
    xfer_arg st = {DP_STORE, m}, ld = {DP_LOAD, m};
    bool equal;
    if (op_transfer(p, &st, 0, err) || op_transfer(p, &ld, 1, err) || paged_matches(p, err, &equal)) return -1;
    return equal ? 0 : mismatch(p, "store+load (D2D)", m, err);
}

/* ---- one chunk size on one backend and shape ------------------------------ */

/* Methods in the order they are measured: the per-page baseline first so
 * the others can be compared with it. */
static const dp_method method_order[] = {DP_METHOD_PER_PAGE, DP_METHOD_KERNEL_DMA, DP_METHOD_KERNEL_ZEROCOPY,
                                         DP_METHOD_CPU, DP_METHOD_KERNEL_D2D};

/* How many buffers to rotate over: enough to touch PROBE_COLD_BYTES, at
 * least 2 (the D2D check needs a second mapping), at most PROBE_MAX_SETS. */
static int cold_sets(int64_t bytes)
{
    int64_t want = (PROBE_COLD_BYTES + bytes - 1) / bytes;
    return (int)(want < 2 ? 2 : want > PROBE_MAX_SETS ? PROBE_MAX_SETS : want);
}

/* As many of those as have disjoint pages in the paged buffer and room in
 * the chunk region. */
static int rotation_sets(const probe *p)
{
    int64_t n = cold_sets(p->bytes);
    int64_t pages = p->dev->shape.pages / ((p->tokens + DP_PAGE_TOKENS - 1) / DP_PAGE_TOKENS);
    int64_t room = (int64_t)p->region_bytes / p->bytes;
    n = n < pages ? n : pages;
    return (int)(n < room ? n : room);
}

/* Set k's slot mapping: tokens laid over pages perm[k·P ..], P pages per set. */
static void build_slots(probe *p)
{
    int per_set = (p->tokens + DP_PAGE_TOKENS - 1) / DP_PAGE_TOKENS;
    for (int k = 0; k < p->nsets; k++)
        for (int t = 0; t < p->tokens; t++)
            slots_of(p, k)[t] = p->perm[k * per_set + t / DP_PAGE_TOKENS] * DP_PAGE_TOKENS + t % DP_PAGE_TOKENS;
}

/* Timed loads overwrite the paged buffer with whatever the chunks held:
 * put the host image back so the next check starts from known bytes. */
static int resync(probe *p, dp_dir dir, sim_err *err)
{
    return dir == DP_LOAD ? dp_dev_paged_write(p->dev, p->image, err) : 0;
}

/* Check a method's bytes against the reference before it is timed. */
static int check_method(probe *p, dp_method m, dp_dir dir, sim_err *err)
{
    if (m == DP_METHOD_KERNEL_D2D) return dir == DP_STORE ? check_d2d(p, m, err) : 0;
    return dir == DP_STORE ? check_store(p, m, err) : check_load(p, m, err);
}

/* One chunk size: per direction, check every method, then time the plain
 * copy and all methods interleaved. */
static int measure_size(probe *p, int tokens, sim_err *err)
{
    enum { NMETHODS = sizeof method_order / sizeof method_order[0] };
    p->tokens = tokens;
    p->bytes = dp_chunk_bytes(&p->dev->shape, tokens);
    p->nsets = rotation_sets(p);
    build_slots(p);
    for (int d = 0; d < 2; d++) {
        dp_dir dir = d ? DP_LOAD : DP_STORE;
        xfer_arg args[1 + NMETHODS] = {{dir, DP_METHOD_CPU}};
        timed ops[1 + NMETHODS] = {{.op = op_peak, .arg = &args[0]}};
        int n = 1;
        for (size_t i = 0; i < NMETHODS; i++) {
            if (!dp_dev_has_method(p->dev, method_order[i])) continue;
            if (check_method(p, method_order[i], dir, err)) return -1;
            args[n] = (xfer_arg){dir, method_order[i]};
            ops[n] = (timed){.op = op_transfer, .arg = &args[n]};
            n++;
        }
        if (resync(p, dir, err) || time_ops(p, ops, n, p->nsets, err) || resync(p, dir, err)) return -1;
        p->ref_median = p->base_median = 0;
        for (int j = 1; j < n; j++)
            if (args[j].method == DP_METHOD_PER_PAGE) p->base_median = ops[j].t.median;
        record(p, p->dev->ops->name, dp_dir_name(dir), "dram", p->dev->ops->peak_name, &ops[0].t, -1);
        p->ref_median = ops[0].t.median;
        for (int j = 1; j < n; j++) {
            bool d2d = args[j].method == DP_METHOD_KERNEL_D2D;
            record(p, p->dev->ops->name, dp_dir_name(dir), d2d ? "hbm" : "dram", dp_method_name(args[j].method),
                   &ops[j].t, -1);
        }
    }
    return 0;
}

/* ---- per backend and shape ------------------------------------------------ */

static int max_tokens(const dp_probe_opts *o)
{
    int m = 0;
    for (int i = 0; i < o->ntokens; i++) m = o->tokens[i] > m ? o->tokens[i] : m;
    return m;
}

static void close_shape(probe *p)
{
    if (p->dev) dp_dev_host_free(p->dev, p->region);
    free(p->slots);
    p->region = NULL;
    p->slots = NULL;
    free(p->image);
    free(p->readback);
    free(p->expect);
    free(p->perm);
    p->image = p->readback = p->expect = NULL;
    p->perm = NULL;
    dp_dev_close(p->dev);
    p->dev = NULL;
}

/* Open the backend with room for two rotation sets of the largest chunk
 * (up to PROBE_MAX_SETS of small ones), random contents, shuffled pages. */
static int open_shape(probe *p, const char *backend, const dp_probe_shape *sh, sim_err *err)
{
    int max_pages = (max_tokens(p->o) + DP_PAGE_TOKENS - 1) / DP_PAGE_TOKENS;
    dp_shape s = {.layers = sh->layers,
                  .kv_heads = sh->kv_heads,
                  .head_dim = sh->head_dim,
                  .dtype_bytes = sh->dtype_bytes,
                  .pages = 2 * (int64_t)max_pages + 2};
    p->shape = sh;
    if (dp_dev_open(&p->dev, backend, &s, p->o->threads, err)) return -1;
    p->cpu_threads = p->dev->threads;
    size_t n = image_bytes(p), chunk = (size_t)dp_chunk_bytes(&s, max_tokens(p->o));
    p->image = sim_xmalloc(n);
    p->readback = sim_xmalloc(n);
    p->expect = sim_xmalloc(chunk);
    fill_random(&p->rng, p->image, n);
    p->perm = sim_xmalloc((size_t)s.pages * sizeof *p->perm);
    for (int64_t i = 0; i < s.pages; i++) p->perm[i] = i;
    for (int64_t i = s.pages - 1; i > 0; i--) { /* Fisher–Yates */
        int64_t j = (int64_t)(rng_next(&p->rng) % (uint64_t)(i + 1)), tmp = p->perm[i];
        p->perm[i] = p->perm[j];
        p->perm[j] = tmp;
    }
    p->slots = sim_xmalloc((size_t)PROBE_MAX_SETS * (size_t)max_tokens(p->o) * sizeof *p->slots);
    p->region_bytes = 2 * chunk > PROBE_COLD_BYTES ? 2 * chunk : PROBE_COLD_BYTES;
    if (dp_dev_host_alloc(p->dev, p->region_bytes, (void **)&p->region, err)) return -1;
    memset(p->region, 0, p->region_bytes); /* fault the pages in before anything is timed */
    return dp_dev_paged_write(p->dev, p->image, err);
}

/* The backend's reference copy at PROBE_PEAK_BYTES (or the whole paged
 * buffer if smaller), both directions. */
static int measure_peaks(probe *p, sim_err *err)
{
    size_t bytes = image_bytes(p) < PROBE_PEAK_BYTES ? image_bytes(p) : PROBE_PEAK_BYTES;
    void *host;
    if (dp_dev_host_alloc(p->dev, bytes, &host, err)) return -1;
    int rc = 0;
    for (int d = 0; d < 2 && !rc; d++) {
        peak *pk = &p->peaks[p->npeaks];
        *pk = (peak){.backend = p->dev->ops->name,
                     .method = p->dev->ops->peak_name,
                     .dir = dp_dir_name(d ? DP_LOAD : DP_STORE),
                     .bytes = (int64_t)bytes};
        double *t = sim_xmalloc((size_t)p->o->reps * sizeof *t);
        for (int i = -p->o->warmup; i < p->o->reps && !rc; i++) {
            double t0 = sim_wall_seconds();
            rc = dp_dev_peak_copy(p->dev, d ? DP_LOAD : DP_STORE, host, bytes, 0, err);
            if (i >= 0) t[i] = sim_wall_seconds() - t0;
        }
        if (!rc) {
            qsort(t, (size_t)p->o->reps, sizeof *t, cmp_double);
            pk->median = t[p->o->reps / 2];
            p->npeaks++;
            if (!p->o->quiet)
                fprintf(p->log, "peak  %-5s %-11s %-5s %9.1f MiB %8.2f GB/s\n", pk->backend, pk->method, pk->dir,
                        (double)bytes / (1 << 20), (double)bytes / pk->median / 1e9);
        }
        free(t);
    }
    dp_dev_host_free(p->dev, host);
    return rc;
}

static int measure_backend_shape(probe *p, const char *backend, const dp_probe_shape *sh, bool first, sim_err *err)
{
    int rc = open_shape(p, backend, sh, err);
    if (!rc && first) rc = measure_peaks(p, err);
    for (int i = 0; i < p->o->ntokens && !rc; i++) rc = measure_size(p, p->o->tokens[i], err);
    close_shape(p);
    return rc;
}

/* ---- SSD ------------------------------------------------------------------ */

typedef struct file_arg {
    const char *dir;
    void *image;
    size_t n;
    bool write;
} file_arg;

static void file_path(const file_arg *a, int set, char *buf, size_t n)
{
    snprintf(buf, n, "%s/probe-%d.kvc", a->dir, set);
}

static int op_file(probe *p, const void *arg, int set, sim_err *err)
{
    const file_arg *a = arg;
    char path[4096];
    bool direct;
    size_t got;
    file_path(a, set, path, sizeof path);
    int rc = a->write ? dp_file_write_atomic(path, a->image, a->n, &direct, err)
                      : dp_file_read(path, a->image, a->n, &got, &direct, err);
    p->o_direct = direct;
    return rc;
}

/* Host→SSD then SSD→host for every chunk size of the first shape. The file
 * holds the chunk image (4 KiB header block + payload); bytes counted are
 * the payload, like every other direction. */
static int measure_ssd(probe *p, sim_err *err)
{
    const dp_probe_shape *sh = &p->o->shapes[0];
    dp_shape s = {.layers = sh->layers,
                  .kv_heads = sh->kv_heads,
                  .head_dim = sh->head_dim,
                  .dtype_bytes = sh->dtype_bytes,
                  .pages = 1};
    if (dp_mkdirs(p->o->ssd_dir, err)) return -1;
    p->shape = sh;
    p->ref_median = p->base_median = 0;
    int rc = 0;
    for (int i = 0; i < p->o->ntokens && !rc; i++) {
        p->tokens = p->o->tokens[i];
        p->bytes = dp_chunk_bytes(&s, p->tokens);
        file_arg a = {.dir = p->o->ssd_dir, .n = (size_t)dp_align_up(DP_ALIGN + p->bytes)};
        if (dp_aligned_alloc(a.n, &a.image, err)) return -1;
        fill_random(&p->rng, a.image, a.n);
        int nsets = cold_sets(p->bytes);
        for (int w = 1; w >= 0 && !rc; w--) { /* write the files, then read them back */
            a.write = w;
            timed op = {.op = op_file, .arg = &a};
            rc = time_ops(p, &op, 1, nsets, err);
            if (!rc) record(p, "host", w ? "store" : "load", "ssd", "file", &op.t, p->o_direct);
        }
        for (int k = 0; k < nsets; k++) {
            char path[4096];
            file_path(&a, k, path, sizeof path);
            unlink(path);
        }
        free(a.image);
    }
    return rc;
}

/* ---- JSON ----------------------------------------------------------------- */

static void write_host(dp_jw *w, const probe *p)
{
    char host[256] = "unknown", cpu[128], when[64];
    struct utsname u;
    gethostname(host, sizeof host - 1);
    dp_cpu_model_name(cpu, sizeof cpu);
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    dp_jw_obj(w, "host", false);
    dp_jw_str(w, "hostname", host);
    dp_jw_str(w, "cpu", cpu);
    dp_jw_int(w, "online_cpus", sysconf(_SC_NPROCESSORS_ONLN));
    dp_jw_str(w, "kernel", uname(&u) ? "unknown" : u.release);
    dp_jw_str(w, "date", when);
    dp_jw_end(w, '}');
}

static void write_config(dp_jw *w, const probe *p)
{
    const dp_probe_opts *o = p->o;
    dp_jw_obj(w, "config", false);
    dp_jw_int(w, "reps", o->reps);
    dp_jw_int(w, "warmup", o->warmup);
    if (p->cpu_threads) dp_jw_int(w, "cpu_threads", p->cpu_threads);
    dp_jw_int(w, "page_tokens", DP_PAGE_TOKENS);
    dp_jw_str(w, "timer",
              "CLOCK_MONOTONIC around each synchronous call; median of reps after max(warmup, "
              "rotation sets) untimed runs");
    dp_jw_str(w, "bytes", "KV payload per transfer (tokens x bytes_per_token), counted once");
    dp_jw_arr(w, "chunk_tokens");
    for (int i = 0; i < o->ntokens; i++) dp_jw_int(w, NULL, o->tokens[i]);
    dp_jw_end(w, ']');
    dp_jw_arr(w, "shapes");
    for (int i = 0; i < o->nshapes; i++) {
        const dp_probe_shape *s = &o->shapes[i];
        dp_jw_obj(w, NULL, true);
        dp_jw_str(w, "name", s->name);
        dp_jw_int(w, "layers", s->layers);
        dp_jw_int(w, "kv_heads", s->kv_heads);
        dp_jw_int(w, "head_dim", s->head_dim);
        dp_jw_int(w, "dtype_bytes", s->dtype_bytes);
        dp_jw_int(w, "bytes_per_token", 2LL * s->layers * s->kv_heads * s->head_dim * s->dtype_bytes);
        dp_jw_end(w, '}');
    }
    dp_jw_end(w, ']');
    if (o->ssd_dir) dp_jw_str(w, "ssd_dir", o->ssd_dir);
    if (p->o_direct >= 0) dp_jw_bool(w, "ssd_o_direct", p->o_direct);
    dp_jw_end(w, '}');
}

static void write_json(FILE *f, const probe *p)
{
    dp_jw w;
    dp_jw_init(&w, f);
    dp_jw_obj(&w, NULL, false);
    dp_jw_int(&w, "kvsim_probe", 1);
    write_host(&w, p);
    write_config(&w, p);
    dp_jw_arr(&w, "backends");
    for (int i = 0; i < p->nbackends; i++) {
        const backend_info *b = &p->backends[i];
        dp_jw_obj(&w, NULL, true);
        dp_jw_str(&w, "name", b->name);
        dp_jw_bool(&w, "available", b->available);
        dp_jw_str(&w, b->available ? "label" : "reason", b->available ? b->label : b->reason);
        dp_jw_end(&w, '}');
    }
    dp_jw_end(&w, ']');
    dp_jw_arr(&w, "peaks");
    for (int i = 0; i < p->npeaks; i++) {
        const peak *k = &p->peaks[i];
        dp_jw_obj(&w, NULL, true);
        dp_jw_str(&w, "backend", k->backend);
        dp_jw_str(&w, "method", k->method);
        dp_jw_str(&w, "direction", k->dir);
        dp_jw_int(&w, "bytes", k->bytes);
        dp_jw_num(&w, "median_s", k->median);
        dp_jw_num(&w, "GBps", (double)k->bytes / k->median / 1e9);
        dp_jw_end(&w, '}');
    }
    dp_jw_end(&w, ']');
    dp_jw_arr(&w, "samples");
    for (int i = 0; i < p->nsamples; i++) {
        const sample *s = &p->samples[i];
        dp_jw_obj(&w, NULL, true);
        dp_jw_str(&w, "backend", s->backend);
        dp_jw_str(&w, "shape", s->shape);
        dp_jw_str(&w, "direction", s->dir);
        dp_jw_str(&w, "tier", s->tier);
        dp_jw_str(&w, "method", s->method);
        dp_jw_int(&w, "tokens", s->tokens);
        dp_jw_int(&w, "bytes", s->bytes);
        dp_jw_num(&w, "median_s", s->median);
        dp_jw_num(&w, "min_s", s->min);
        dp_jw_num(&w, "max_s", s->max);
        dp_jw_num(&w, "GBps", (double)s->bytes / s->median / 1e9);
        dp_jw_end(&w, '}');
    }
    dp_jw_end(&w, ']');
    dp_jw_end(&w, '}');
}

/* ---- the sweep ------------------------------------------------------------ */

/* Which backends to try: the requested ones, or every registered one. */
static void list_backends(probe *p)
{
    size_t n;
    const dp_backend_ops *const *all = dp_backends(&n);
    int want = p->o->nbackends ? p->o->nbackends : (int)n;
    for (int i = 0; i < want && i < DP_PROBE_MAX_LIST; i++) {
        backend_info *b = &p->backends[p->nbackends++];
        b->name = p->o->nbackends ? p->o->backends[i] : all[i]->name;
        sim_err why;
        const dp_backend_ops *ops = dp_backend(b->name, &why);
        b->available = ops && !ops->available(b->label, sizeof b->label, &why);
        if (!b->available) snprintf(b->reason, sizeof b->reason, "%s", why.msg);
        if (!b->available && !p->o->quiet) fprintf(p->log, "skip: %s\n", why.msg);
    }
}

/* A backend asked for by name must be usable; the default list skips. */
static int check_requested(const probe *p, sim_err *err)
{
    for (int i = 0; i < p->nbackends && p->o->nbackends; i++)
        if (!p->backends[i].available) return sim_errf(err, "%s", p->backends[i].reason);
    return 0;
}

int dp_probe_run(const dp_probe_opts *o, FILE *json, FILE *log, sim_err *err)
{
    probe p = {.o = o, .log = log, .rng = 0x9E3779B97F4A7C15ull, .o_direct = -1};
    list_backends(&p);
    int rc = check_requested(&p, err);
    if (!rc) log_header(&p);
    for (int b = 0; b < p.nbackends && !rc; b++)
        for (int s = 0; s < o->nshapes && p.backends[b].available && !rc; s++)
            rc = measure_backend_shape(&p, p.backends[b].name, &o->shapes[s], s == 0, err);
    if (!rc && o->ssd_dir) rc = measure_ssd(&p, err);
    if (!rc) write_json(json, &p);
    free(p.samples);
    return rc;
}
