/* sim/replay/ladder.h — the hit-rate ladder behind `kvsim hitrate --ladder`
 * (docs/hitrate-ladder.md): where a trace's prefix hits go, from its ceiling
 * down to what the configured cluster gets, one rung at a time.
 *
 *   a  ceiling: one infinite cache, the trace's own blocks (kv_hitrate_max)
 *   b  engine: the same under the engine's block size (blocks coarsened
 *      exactly as `kvsim trace rechunk` does, or split), its context cap
 *      (max_model_len: tokens past it are never computed from cache) and,
 *      optionally, full-block-only hashing (vLLM, SGLang: a partial last
 *      block never hits)
 *   c  capacity-bound optimum: Belady (offline, sim/store/evict) on one pool
 *      of the configured HBM + DRAM + SSD (+ remote) capacity of all nodes
 *   d  the configured eviction policy on that one pool: perfect routing
 *   e  the configured cluster, a timed `kvsim run`: what it actually gets
 *
 * Rungs b to d replay the engine view; each pool rung is also replayed at
 * the tiers' nested capacities (HBM, HBM + DRAM, ...), so that the hits a
 * tier adds are the difference (Belady and LRU are stack algorithms: a
 * larger pool holds what a smaller one would). Token rates of every rung
 * are over the trace's whole input, so a lower rung can only lose. */
#ifndef SIM_LADDER_H
#define SIM_LADDER_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "sim/util.h"

enum { KV_RUNG_CEILING = 0, KV_RUNG_ENGINE, KV_RUNG_BELADY, KV_RUNG_POLICY, KV_RUNG_ROUTED, KV_NRUNGS };
/* Tiers of the ladder's split: the store's three and the LMCache remote pool. */
enum { KV_LADDER_HBM = 0, KV_LADDER_DRAM, KV_LADDER_SSD, KV_LADDER_REMOTE, KV_LADDER_NTIERS };
extern const char *const kv_ladder_tier_names[KV_LADDER_NTIERS];
extern const char *const kv_rung_names[KV_NRUNGS]; /* "ceiling", "engine", ... */

typedef struct kv_rung {
    bool done;                  /* false: not measured (rung e without --run) */
    int64_t hit_blocks, blocks; /* blocks of the rung's block size */
    int64_t hit_tokens, tokens; /* hit_tokens = prefill tokens saved */
    double rate_blocks, rate_tokens;
    bool has_tiers;                       /* tier_tokens is filled */
    double tier_tokens[KV_LADDER_NTIERS]; /* hit tokens each tier adds (0 where absent) */
    double ttft_p90_ms;                   /* rung e: the run's TTFT p90 */
} kv_rung;

typedef struct kv_ladder_opts {
    const char *config; /* config file or NULL (defaults) */
    char *const *sets;  /* "key.path=value" overrides */
    int nsets;
    const char *trace;     /* NULL: the config's trace.path */
    int block_tokens;      /* the engine's block; 0 = kvstore.block_tokens */
    bool full_blocks;      /* full-block-only hashing in rungs b to d */
    int64_t max_model_len; /* 0 = no context cap */
    bool run;              /* measure rung e (a timed run) */
} kv_ladder_opts;

typedef struct kv_ladder_regret {
    char router[32];
    double rate_blocks, rate_tokens, ttft_p90_ms;
    double regret_tokens; /* rung d's token rate minus this router's */
} kv_ladder_regret;

typedef struct kv_ladder {
    char trace[4096];
    int trace_block_tokens, block_tokens, nodes;
    bool full_blocks;
    int64_t max_model_len;
    char policy[32], router[32];
    int64_t tier_blocks[KV_LADDER_NTIERS]; /* the one pool's capacity per tier, engine blocks */
    kv_rung rung[KV_NRUNGS];
    int nwarnings;
    char warning[4][5120]; /* block sizes that differ, a trace that fits none */
    int nregret;
    kv_ladder_regret *regret; /* kv_ladder_regret_add, one per router */
} kv_ladder;

/* Build rungs a to d (and e when o->run). Errors (exit 2) name the option or
 * config key: a block size that neither divides nor is a multiple of the
 * trace's, a cap below one block, an unreadable trace or config. */
int kv_ladder_build(const kv_ladder_opts *o, kv_ladder *out, sim_err *err);
/* Routing regret: the timed run once per router name, each against rung d. */
int kv_ladder_regret_add(const kv_ladder_opts *o, kv_ladder *l, const char *const *routers, int n, sim_err *err);
void kv_ladder_free(kv_ladder *l);

/* The loss of rung i against rung i − 1 in token hit rate (0 for a). */
double kv_ladder_loss(const kv_ladder *l, int i);
/* Store the measured rungs in the ladder table of the results database at
 * path (created when missing) under a fresh id (*id), with the trace's
 * fingerprint (sim/replay/ladder_db.c; kvsim report draws them). */
int kv_ladder_db_write(const kv_ladder *l, const char *path, int64_t *id, sim_err *err);
/* The whole ladder as one JSON object (kvsim hitrate --ladder --json). */
json_t *kv_ladder_json(const kv_ladder *l);

#endif
