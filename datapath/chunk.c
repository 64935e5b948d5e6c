/* datapath/chunk.c — sealing and checking chunk images (header + XXH3-64). */
#include "datapath/chunk.h"

#include <stddef.h>
#include <string.h>
#include <xxhash.h>

int64_t dp_chunk_image_bytes(const dp_shape *s, int tokens)
{
    return dp_align_up(DP_CHUNK_HDR_BYTES + dp_chunk_bytes(s, tokens));
}

static uint64_t chunk_checksum(const dp_chunk_hdr *h, const void *payload)
{
    XXH64_hash_t seed = XXH3_64bits(h, offsetof(dp_chunk_hdr, checksum));
    return XXH3_64bits_withSeed(payload, (size_t)h->payload_bytes, seed);
}

void dp_chunk_seal(void *image, const dp_shape *s, uint64_t key, int tokens)
{
    dp_chunk_hdr h;
    memset(&h, 0, sizeof h);
    h.magic = DP_CHUNK_MAGIC;
    h.version = DP_CHUNK_VERSION;
    h.key = key;
    h.layers = s->layers;
    h.kv_heads = s->kv_heads;
    h.head_dim = s->head_dim;
    h.dtype_bytes = s->dtype_bytes;
    h.tokens = tokens;
    h.page_tokens = DP_PAGE_TOKENS;
    h.payload_bytes = (uint64_t)dp_chunk_bytes(s, tokens);
    h.checksum = chunk_checksum(&h, dp_chunk_payload(image));
    memset(image, 0, DP_CHUNK_HDR_BYTES);
    memcpy(image, &h, sizeof h);
}

typedef struct hdr_field {
    const char *name;
    int64_t got, want;
} hdr_field;

int dp_chunk_check(const void *image, size_t got, const dp_shape *s, uint64_t key, int *tokens, sim_err *err)
{
    dp_chunk_hdr h;
    if (got < sizeof h) {
        sim_errf(err, "chunk %016llx: %zu bytes, shorter than its header", (unsigned long long)key, got);
        return DP_SHORT;
    }
    memcpy(&h, image, sizeof h);
    if (h.magic != DP_CHUNK_MAGIC || h.version != DP_CHUNK_VERSION || h.key != key) {
        sim_errf(err, "chunk %016llx: header names magic %08x version %u key %016llx", (unsigned long long)key, h.magic,
                 h.version, (unsigned long long)h.key);
        return DP_CORRUPT;
    }
    const hdr_field fields[] = {
        {"layers", h.layers, s->layers},
        {"kv_heads", h.kv_heads, s->kv_heads},
        {"head_dim", h.head_dim, s->head_dim},
        {"dtype_bytes", h.dtype_bytes, s->dtype_bytes},
        {"page_tokens", h.page_tokens, DP_PAGE_TOKENS},
        {"payload_bytes", (int64_t)h.payload_bytes, h.tokens > 0 ? dp_chunk_bytes(s, h.tokens) : -1},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (fields[i].got != fields[i].want) {
            sim_errf(err, "chunk %016llx: header %s is %lld, expected %lld", (unsigned long long)key, fields[i].name,
                     (long long)fields[i].got, (long long)fields[i].want);
            return DP_CORRUPT;
        }
    if (got < DP_CHUNK_HDR_BYTES + h.payload_bytes) {
        sim_errf(err, "chunk %016llx: %zu bytes, its header promises %llu", (unsigned long long)key, got,
                 (unsigned long long)(DP_CHUNK_HDR_BYTES + h.payload_bytes));
        return DP_SHORT;
    }
    if (chunk_checksum(&h, (const char *)image + DP_CHUNK_HDR_BYTES) != h.checksum) {
        sim_errf(err, "chunk %016llx: XXH3 checksum mismatch (stored %016llx)", (unsigned long long)key,
                 (unsigned long long)h.checksum);
        return DP_CORRUPT;
    }
    *tokens = h.tokens;
    return DP_OK;
}
