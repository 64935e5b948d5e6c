/* datapath/layout.c — shape checks, sizes, slot-mapping validation and the
 * readable CPU reference of gather/scatter that every fast path (threaded
 * CPU, CUDA kernels, per-page baseline) is compared against. */
#include "datapath/layout.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/kv_index.h"

typedef struct shape_field {
    const char *name;
    int64_t value;
} shape_field;

int dp_shape_check(const dp_shape *s, sim_err *err)
{
    const shape_field fields[] = {
        {"layers", s->layers},           {"kv_heads", s->kv_heads}, {"head_dim", s->head_dim},
        {"dtype_bytes", s->dtype_bytes}, {"pages", s->pages},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (fields[i].value <= 0)
            return sim_errf(err, "datapath shape: %s must be positive (got %lld)", fields[i].name,
                            (long long)fields[i].value);
    /* Keep every byte offset far inside int64 and row counts inside int. */
    if ((double)dp_layer_bytes(s) * s->layers > 0x1p56)
        return sim_errf(err, "datapath shape: paged buffer of %d layers × %lld pages is too large", s->layers,
                        (long long)s->pages);
    return 0;
}

int64_t dp_row_bytes(const dp_shape *s) { return (int64_t)s->kv_heads * s->head_dim * s->dtype_bytes; }
int64_t dp_layer_slots(const dp_shape *s) { return s->pages * DP_PAGE_TOKENS; }
int64_t dp_layer_bytes(const dp_shape *s) { return 2 * dp_layer_slots(s) * dp_row_bytes(s); }
int64_t dp_token_bytes(const dp_shape *s) { return 2 * (int64_t)s->layers * dp_row_bytes(s); }
int64_t dp_chunk_bytes(const dp_shape *s, int tokens) { return (int64_t)tokens * dp_token_bytes(s); }
int64_t dp_align_up(int64_t n) { return (n + DP_ALIGN - 1) / DP_ALIGN * DP_ALIGN; }

int dp_slots_check(const dp_shape *s, const int64_t *slots, int tokens, sim_err *err)
{
    if (tokens <= 0) {
        sim_errf(err, "slot mapping: token count must be positive (got %d)", tokens);
        return DP_ERANGE;
    }
    int64_t limit = dp_layer_slots(s);
    for (int t = 0; t < tokens; t++)
        if (slots[t] >= limit) {
            sim_errf(err, "slot mapping: token %d maps to slot %lld, outside the paged buffer (%lld slots)", t,
                     (long long)slots[t], (long long)limit);
            return DP_ERANGE;
        }
    return DP_OK;
}

/* Reference gather: for every (kv, layer, token) with a slot, copy one row
 * from the paged tensor to its chunk row. No runs, no threads. */
void dp_ref_gather(const dp_shape *s, char *const *layer_base, const int64_t *slots, int tokens, void *chunk)
{
    int64_t row = dp_row_bytes(s), lslots = dp_layer_slots(s);
    for (int kv = 0; kv < 2; kv++)
        for (int l = 0; l < s->layers; l++)
            for (int t = 0; t < tokens; t++)
                if (slots[t] >= 0)
                    memcpy((char *)chunk + dp_kv_chunk_offset(row, s->layers, tokens, kv, l, t),
                           layer_base[l] + dp_kv_paged_offset(row, lslots, kv, slots[t]), (size_t)row);
}

/* Reference scatter: the same walk with source and destination swapped. */
void dp_ref_scatter(const dp_shape *s, char *const *layer_base, const int64_t *slots, int tokens, const void *chunk)
{
    int64_t row = dp_row_bytes(s), lslots = dp_layer_slots(s);
    for (int kv = 0; kv < 2; kv++)
        for (int l = 0; l < s->layers; l++)
            for (int t = 0; t < tokens; t++)
                if (slots[t] >= 0)
                    memcpy(layer_base[l] + dp_kv_paged_offset(row, lslots, kv, slots[t]),
                           (const char *)chunk + dp_kv_chunk_offset(row, s->layers, tokens, kv, l, t), (size_t)row);
}

int dp_aligned_alloc(size_t bytes, void **out, sim_err *err)
{
    size_t n = (size_t)dp_align_up((int64_t)(bytes ? bytes : 1));
    int e = posix_memalign(out, DP_ALIGN, n);
    if (e) return sim_errf(err, "cannot allocate %zu bytes of aligned host memory: %s", n, strerror(e));
    return 0;
}
