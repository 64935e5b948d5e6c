/* sim/store/pic_mepic.c — kvstore.pic = "mepic": MEPIC's position-
 * independent chunk cache (docs/pic.md; MEPIC §3–4).
 *
 * The prefix segment is a chain of ⌈Lp/B⌉ blocks, the last one padded,
 * reused as prefix caching reuses it. Each chunk of L tokens is stored once,
 * canonical and block-aligned with its padding in front: a shared object of
 * ⌈L/B⌉ − 1 blocks, held (so never evicted) while any request using it is
 * in flight, plus one private first block per use. A reused chunk
 * recomputes only that first block, L − (⌈L/B⌉ − 1)·B real tokens (the
 * seam with what precedes it); a missed one computes all L tokens and
 * becomes the stored copy. Prompt segments are always computed, into
 * private block-aligned blocks. A chunk repeated inside one request reuses
 * its first occurrence. */
#include "sim/store/pic_int.h"

static int32_t mepic_items(const kv_pic_params *p, const sim_request *r, kv_pic_item *items)
{
    int32_t lp = kv_pic_prefix_len(r);
    int32_t n = kv_pic_chain_items(p, r, lp, (int32_t)kv_pic_ceil(lp, p->block_tokens), items);
    for (int32_t i = 0; i < r->nsegs; i++) {
        const sim_segment *s = &r->segs[i];
        if (s->kind != SIM_SEG_CHUNK) continue;
        items[n++] = (kv_pic_item){.key = kv_pic_chunk_key(s),
                                   .blocks = (int32_t)kv_pic_ceil(s->len, p->block_tokens) - 1,
                                   .seg = i,
                                   .hold = true};
    }
    return n;
}

static void mepic_account(const kv_pic_params *p, const sim_request *r, const kv_pic_item *items, int32_t n,
                          kv_pic_outcome *o)
{
    int64_t B = p->block_tokens, lp = kv_pic_prefix_len(r), nchain = kv_pic_ceil(lp, B);
    int64_t hit = 0;
    while (hit < nchain && items[hit].hit) hit++;
    o->computed_tokens = lp - (hit * B < lp ? hit * B : lp);
    o->computed_positions = (nchain - hit) * B;
    o->reused_blocks = hit;
    for (int32_t i = (int32_t)nchain; i < n; i++) {
        int64_t L = r->segs[items[i].seg].len, blocks = kv_pic_ceil(L, B);
        o->chunks++;
        o->private_blocks++;
        if (items[i].hit) {
            o->chunk_hits++;
            o->computed_tokens += L - (blocks - 1) * B;
            o->computed_positions += B;
            o->reused_blocks += blocks - 1;
        } else {
            o->computed_tokens += L;
            o->computed_positions += blocks * B;
        }
    }
    for (int32_t i = 0; i < r->nsegs; i++)
        if (r->segs[i].kind == SIM_SEG_PROMPT) {
            int64_t blocks = kv_pic_ceil(r->segs[i].len, B);
            o->computed_tokens += r->segs[i].len;
            o->computed_positions += blocks * B;
            o->private_blocks += blocks;
        }
}

const kv_pic_policy kv_pic_mepic = {
    .name = "mepic",
    .help = "MEPIC: one canonical block-aligned copy per chunk, shared; a reuse recomputes its first block",
    .items = mepic_items,
    .account = mepic_account,
};
