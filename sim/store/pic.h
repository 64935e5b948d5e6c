/* sim/store/pic.h — position-independent caching (docs/pic.md): the HBM
 * block store that kvstore.pic = prefix | epic | cacheblend | mepic account
 * with, shared by the cache-only replay (kvsim hitrate --pic) and the timed
 * one (kvsim run).
 *
 * A request is admitted (its store objects looked up, then the missing ones
 * allocated, evicting unreferenced objects in LRU order), runs, and is
 * released (its references dropped). The policy (one file each:
 * sim/store/pic_prefix.c, pic_mepic.c, pic_blend.c) says which store
 * objects a request's segments are, which of them it holds while in flight,
 * and what it must recompute given which hit; the store does the rest.
 * Accounting is in blocks of B tokens (kvstore.pic_block_tokens). */
#ifndef KV_PIC_H
#define KV_PIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sim/trace/trace.h"
#include "sim/util.h"

typedef struct kv_pic_params {
    int block_tokens;        /* B: tokens per HBM block (vLLM's page: 16) */
    int prefix_tokens;       /* tokens per content block of a prefix segment (trace.block_tokens: 512) */
    double cacheblend_ratio; /* share of a reused chunk CacheBlend recomputes (0.15) */
    int epic_tokens;         /* leading tokens of a reused chunk EPIC recomputes (16) */
    int64_t capacity_blocks; /* C: store capacity; SIM_COUNT_UNBOUNDED = unlimited */
    bool private_counts;     /* private blocks share C with the store (a timed run's HBM) */
    bool pages_apart;        /* each page of a hash_id block its own store object, not one group per
                                block: the same results, slower (tests/test_pic_store.c compares) */
} kv_pic_params;

/* What one admission cost. Token counts exclude padding; positions count
 * every computed position, padding of block-aligned segments included. */
typedef struct kv_pic_outcome {
    int64_t input_tokens;
    int64_t computed_tokens;
    int64_t computed_positions;
    int32_t chunks, chunk_hits; /* chunk occurrences, and those reused */
    int64_t reused_blocks;      /* store blocks read instead of computed (load cost) */
    int64_t private_blocks;     /* blocks of this request alone */
    bool unsegmented;           /* r had no segments: admitted as one unique prompt, computed in full */
    int64_t adds_blocks;        /* with only_if_fits: what admitting adds to the footprint */
} kv_pic_outcome;

/* The policies: name → implementation (sim/store/pic_registry.c). */
typedef struct kv_pic_policy kv_pic_policy;
size_t kv_pic_policy_count(void);
const kv_pic_policy *kv_pic_policy_at(size_t i); /* NULL past the end */
const kv_pic_policy *kv_pic_policy_lookup(const char *name);
const char *kv_pic_policy_name(const kv_pic_policy *p);
/* " (did you mean 'mepic'?)" for a kvstore.pic value that is neither a
 * cache model nor a policy, or "" (sim_did_you_mean). */
const char *kv_pic_suggest(const char *name);
const char *kv_pic_policy_help(const kv_pic_policy *p);

typedef struct kv_pic kv_pic;
/* An admitted request's references, until kv_pic_release. */
typedef struct kv_pic_ticket {
    int32_t n, cap;
    int32_t *slots; /* held objects, in release order; a group's pages lo..hi−1: −1 − slot, lo, hi */
    int64_t private_blocks;
    bool admitted; /* in flight: admitted and not yet released */
} kv_pic_ticket;

/* The content key of a chunk segment (its id and length): the name of its
 * stored copy. */
uint64_t kv_pic_chunk_key(const sim_segment *s);

/* What a caller calls the parameters in its messages: the config keys of
 * a run (kv_pic_config_names) or the options of kvsim hitrate --pic. */
typedef struct kv_pic_names {
    const char *block_tokens, *prefix_tokens, *cacheblend_ratio, *epic_tokens;
} kv_pic_names;
extern const kv_pic_names kv_pic_config_names;
/* Check the parameters, B dividing the prefix block among them (a block of
 * the trace is whole HBM blocks); messages name them as `names` does. */
int kv_pic_params_check(const kv_pic_params *p, const kv_pic_names *names, sim_err *err);
kv_pic *kv_pic_create(const kv_pic_policy *pol, const kv_pic_params *p);
void kv_pic_destroy(kv_pic *s);
void kv_pic_ticket_free(kv_pic_ticket *t);

/* Admit r: 0 with *t holding its references and *o its cost. With
 * only_if_fits, nothing changes when free plus evictable blocks (C minus
 * the footprint) cannot cover what admitting r would add to the footprint:
 * 1, or 2 when that alone exceeds C (r can never fit: what it would add
 * only grows as other requests release what it shares with them). */
int kv_pic_admit(kv_pic *s, const sim_request *r, bool only_if_fits, kv_pic_ticket *t, kv_pic_outcome *o);
/* A running request needs `blocks` more private blocks (decode KV): 0, or
 * -1 and no change when even evicting every unreferenced object leaves no
 * room (the caller preempts). */
int kv_pic_grow(kv_pic *s, kv_pic_ticket *t, int64_t blocks);

/* r is done: its references dropped (objects that lose their last one
 * become evictable, in release order), its private blocks freed. */
void kv_pic_release(kv_pic *s, kv_pic_ticket *t);

/* Blocks of objects referenced by admitted requests (each once) plus their
 * private blocks; and the highest value seen after an admission. */
int64_t kv_pic_footprint(const kv_pic *s);
int64_t kv_pic_peak_footprint(const kv_pic *s);

/* The store at its peak footprint (the first time it was reached): the
 * requests in flight, the blocks of the objects they hold (each once:
 * shared), the same counted once per holding request (held: what private
 * copies would take), and their private blocks. footprint = shared +
 * private_blocks; held / shared is how many in-flight requests share a held
 * block on average (MEPIC's saving over private copies). */
typedef struct kv_pic_peak {
    int64_t footprint, inflight, shared_blocks, held_blocks, private_blocks;
} kv_pic_peak;
kv_pic_peak kv_pic_peak_state(const kv_pic *s);
/* The peak state of the store with the highest peak of n: what summaries
 * report beside peak_footprint_blocks. */
kv_pic_peak kv_pic_peak_of(kv_pic *const *stores, int n);
/* Set peak_inflight_requests, peak_shared_blocks, peak_held_blocks and
 * peak_private_blocks on o (docs/pic.md). */
void kv_pic_peak_json(const kv_pic_peak *p, json_t *o);
/* The prefix policy's replay of req[0..n) one at a time through an
 * unbounded store (kv_pic_replay with window 1 and no capacity), its input
 * and computed tokens counted without the store (pic_prefix.c): false,
 * counting nothing, where a page is named by key and tag (blocks of more
 * than KV_PIC_MEMBERS pages), which only the store compares. */
bool kv_pic_prefix_unbounded(const kv_pic_params *p, sim_request *const *req, int64_t n, int64_t *input,
                             int64_t *computed);
/* Blocks of every stored object, referenced or not (≤ C). */
int64_t kv_pic_stored_blocks(const kv_pic *s);
int64_t kv_pic_evictions(const kv_pic *s);

#endif
