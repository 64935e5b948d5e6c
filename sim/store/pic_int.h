/* sim/store/pic_int.h — private to the PIC store (sim/store/pic*.c): the
 * policy interface and the items a policy describes a request with. */
#ifndef KV_PIC_INT_H
#define KV_PIC_INT_H

#include "sim/store/pic.h"

/* One store object a request uses, in prompt order. */
typedef struct kv_pic_item {
    uint64_t key;
    int32_t blocks; /* store blocks of the object (may be 0) */
    int32_t seg;    /* the segment it comes from */
    bool chain;     /* a prefix-chain block: hits only while every chain block before it hit */
    bool hold;      /* referenced until release; else only while admitted (read into a private copy) */
    uint32_t tag;   /* where the index keeps it (kv_pic_tag: pages of a block side by side); 0: by key */
    int32_t pages;  /* > 0: the first `pages` pages (members) of the hash_id block named key, one
                       block each, chain and held, as one item: the store keeps a block's pages
                       as one group (pic_store.c); tag is kv_pic_tag(key, 0) */
    /* set by the store */
    bool hit;          /* reused: present at lookup (or a repeat inside the request); pages: all of them */
    int32_t hit_pages; /* pages: how many of them are reused (the leading ones present, chain permitting) */
    bool dup;          /* a repeat of an earlier item of the same request */
    bool stored;       /* in the store after admission */
    int32_t slot;
} kv_pic_item;

struct kv_pic_policy {
    const char *name;
    const char *help;
    /* It also caches requests without segments by their hash_id blocks (in
     * pages of B tokens; kv_pic_chain_items); others compute them in full. */
    bool hash_blocks;
    /* Items of r (at most kv_pic_items_max), in prompt order; returns how many. */
    int32_t (*items)(const kv_pic_params *p, const sim_request *r, kv_pic_item *items);
    /* r's computed tokens and positions, chunk counts, reused and private
     * blocks, given items[].hit and .dup (private blocks as if every held
     * item were stored: the store adds those it could not store). */
    void (*account)(const kv_pic_params *p, const sim_request *r, const kv_pic_item *items, int32_t n,
                    kv_pic_outcome *o);
};

/* An upper bound on any policy's items for r. */
int64_t kv_pic_items_max(const kv_pic_params *p, const sim_request *r);
/* Of the chain items[0..n): the leading blocks reused, and *blocks, how
 * many blocks they stand for (a span item stands for its pages). */
int32_t kv_pic_chain_hits(const kv_pic_item *items, int32_t n, int32_t *blocks);
/* Chain items for the first n blocks of r's packed prompt cut at limit. */
int32_t kv_pic_chain_items(const kv_pic_params *p, const sim_request *r, int64_t limit, int32_t n, kv_pic_item *items);
/* r as the store admits it: a request without segments shares nothing
 * (one unique prompt, *whole, in *plain), unless the policy reads hash_id
 * blocks (prefix caching) and it has some. */
const sim_request *kv_pic_as_admitted(const kv_pic_policy *pol, const sim_request *r, sim_request *plain,
                                      sim_segment *whole);
/* The prefix segment's tokens (0 without one). */
int32_t kv_pic_prefix_len(const sim_request *r);
static inline int64_t kv_pic_ceil(int64_t a, int64_t b) { return (a + b - 1) / b; }

#endif
