/* sim/store/pic_blend.c — kvstore.pic = "cacheblend" and "epic": chunk
 * reuse with selective recomputation into private copies (docs/pic.md;
 * CacheBlend and EPIC as MEPIC §2 describes them).
 *
 * The prefix segment is a chain of its ⌊Lp/B⌋ full blocks, reused as
 * prefix caching reuses it. A chunk of L tokens is stored as ⌈L/B⌉ blocks,
 * but each request reads it into a private copy, so the stored copy is
 * referenced only while it is being read (the admission) and then counts
 * as free. A reused chunk recomputes ⌈ratio·L⌉ tokens (CacheBlend,
 * kvstore.pic_cacheblend_ratio, 0.15) or its first min(k, L) tokens (EPIC,
 * kvstore.pic_epic_tokens, 16); a missed one computes L and is stored.
 * Private blocks: ⌈N/B⌉ minus the shared prefix blocks. The two differ only
 * in what a reused chunk recomputes. */
#include <math.h>

#include "sim/store/pic_int.h"

static int32_t blend_items(const kv_pic_params *p, const sim_request *r, kv_pic_item *items)
{
    int32_t lp = kv_pic_prefix_len(r);
    int32_t n = kv_pic_chain_items(p, r, lp, lp / p->block_tokens, items);
    for (int32_t i = 0; i < r->nsegs; i++) {
        const sim_segment *s = &r->segs[i];
        if (s->kind != SIM_SEG_CHUNK) continue;
        items[n++] = (kv_pic_item){.key = kv_pic_chunk_key(s),
                                   .blocks = (int32_t)kv_pic_ceil(s->len, p->block_tokens),
                                   .seg = i,
                                   .hold = false};
    }
    return n;
}

/* Shared by both: the prefix chain, then each chunk via recompute(L). */
static void blend_account(const kv_pic_params *p, const sim_request *r, const kv_pic_item *items, int32_t n,
                          int64_t (*recompute)(const kv_pic_params *, int64_t), kv_pic_outcome *o)
{
    int64_t B = p->block_tokens, lp = kv_pic_prefix_len(r), nchain = lp / B, hit = 0;
    while (hit < nchain && items[hit].hit) hit++;
    o->computed_tokens = r->input_len - hit * B;
    o->reused_blocks = hit;
    o->private_blocks = kv_pic_ceil(r->input_len, B) - nchain;
    for (int32_t i = (int32_t)nchain; i < n; i++) {
        o->chunks++;
        if (!items[i].hit) continue;
        int64_t L = r->segs[items[i].seg].len;
        o->chunk_hits++;
        o->computed_tokens -= L - recompute(p, L);
        o->reused_blocks += kv_pic_ceil(L, B);
    }
    o->computed_positions = o->computed_tokens;
}

static int64_t cacheblend_recompute(const kv_pic_params *p, int64_t L)
{
    return (int64_t)ceil(p->cacheblend_ratio * (double)L);
}

static int64_t epic_recompute(const kv_pic_params *p, int64_t L) { return L < p->epic_tokens ? L : p->epic_tokens; }

static void cacheblend_account(const kv_pic_params *p, const sim_request *r, const kv_pic_item *items, int32_t n,
                               kv_pic_outcome *o)
{
    blend_account(p, r, items, n, cacheblend_recompute, o);
}

static void epic_account(const kv_pic_params *p, const sim_request *r, const kv_pic_item *items, int32_t n,
                         kv_pic_outcome *o)
{
    blend_account(p, r, items, n, epic_recompute, o);
}

const kv_pic_policy kv_pic_cacheblend = {
    .name = "cacheblend",
    .help = "CacheBlend: chunks read into private copies; a reuse recomputes 15% of its tokens",
    .items = blend_items,
    .account = cacheblend_account,
};

const kv_pic_policy kv_pic_epic = {
    .name = "epic",
    .help = "EPIC: chunks read into private copies; a reuse recomputes its first 16 tokens",
    .items = blend_items,
    .account = epic_account,
};
