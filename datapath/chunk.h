/* datapath/chunk.h — the chunk image: what a pinned-pool slot holds and what
 * an SSD chunk file contains, byte for byte.
 *
 *   [0, DP_CHUNK_HDR_BYTES)   header (shape, key, token count, checksum), zero padded
 *   [DP_CHUNK_HDR_BYTES, ..)  payload [2, layers, tokens, kv_heads·head_dim]
 *   padding to DP_ALIGN       so the file can be written with O_DIRECT
 *
 * The checksum is XXH3-64 of the payload, seeded with XXH3-64 of the header
 * fields before it, so a flipped byte anywhere in header or payload is
 * caught on load: a mismatch is a miss (DP_CORRUPT), never silent
 * corruption. */
#ifndef DP_CHUNK_H
#define DP_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "datapath/layout.h"
#include "sim/util.h"

#define DP_CHUNK_MAGIC     0x3143564bu /* "KVC1" */
#define DP_CHUNK_VERSION   1u
#define DP_CHUNK_HDR_BYTES DP_ALIGN

typedef struct dp_chunk_hdr {
    uint32_t magic;
    uint32_t version;
    uint64_t key;
    int32_t layers;
    int32_t kv_heads;
    int32_t head_dim;
    int32_t dtype_bytes;
    int32_t tokens;
    int32_t page_tokens;
    uint64_t payload_bytes;
    uint64_t checksum; /* last: everything before it seeds the payload hash */
} dp_chunk_hdr;

/* Header + payload, rounded up to DP_ALIGN. */
int64_t dp_chunk_image_bytes(const dp_shape *s, int tokens);
static inline void *dp_chunk_payload(void *image) { return (char *)image + DP_CHUNK_HDR_BYTES; }

/* Fill the header of an image whose payload is already in place. */
void dp_chunk_seal(void *image, const dp_shape *s, uint64_t key, int tokens);

/* Validate an image of `got` bytes that should be chunk `key` of shape s:
 * DP_OK (and *tokens); DP_SHORT when it ends before its payload does;
 * DP_CORRUPT on a bad magic, version, key, shape or checksum. The message
 * names the key and the field that disagreed. */
int dp_chunk_check(const void *image, size_t got, const dp_shape *s, uint64_t key, int *tokens, sim_err *err);

#endif
