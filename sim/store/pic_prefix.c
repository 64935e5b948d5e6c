/* sim/store/pic_prefix.c — kvstore.pic = "prefix": vLLM-style prefix
 * caching over the whole packed prompt, the baseline position-independent
 * reuse is measured against (docs/pic.md).
 *
 * One chain of the ⌊N/B⌋ full blocks of the N-token prompt; a hit is the
 * longest leading run of chain blocks present, and the request computes
 * N − hit·B tokens. Every full block is a shared store object held while
 * the request is in flight; the partial tail block is private. A chunk
 * occurrence counts as reused when it lies wholly inside the hit. A
 * Mooncake request (hash_ids, no segments) is chained by its blocks: its
 * pages are named by their block's key (vLLM prefix caching of an
 * aggregated instance, docs/lmcache.md). */
#include "sim/store/pic_int.h"

static int32_t prefix_items(const kv_pic_params *p, const sim_request *r, kv_pic_item *items)
{
    return kv_pic_chain_items(p, r, r->input_len, r->input_len / p->block_tokens, items);
}

static void prefix_account(const kv_pic_params *p, const sim_request *r, const kv_pic_item *items, int32_t n,
                           kv_pic_outcome *o)
{
    int32_t blocks, hit = kv_pic_chain_hits(items, n, &blocks);
    int64_t hit_tokens = (int64_t)hit * p->block_tokens, pos = 0;
    o->computed_tokens = o->computed_positions = r->input_len - hit_tokens;
    o->reused_blocks = hit;
    o->private_blocks = kv_pic_ceil(r->input_len, p->block_tokens) - blocks;
    for (int32_t i = 0; i < r->nsegs; i++) {
        pos += r->segs[i].len;
        if (r->segs[i].kind != SIM_SEG_CHUNK) continue;
        o->chunks++;
        o->chunk_hits += pos <= hit_tokens;
    }
}

const kv_pic_policy kv_pic_prefix = {
    .name = "prefix",
    .hash_blocks = true,
    .help = "vLLM prefix caching of the packed prompt: reuse only the leading run of cached 16-token blocks",
    .items = prefix_items,
    .account = prefix_account,
};
