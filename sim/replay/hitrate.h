/* sim/replay/hitrate.h — cache-only replay (docs/store.md, Mooncake Fig. 16/17):
 * the engine behind `kvsim hitrate`, `kvsim plan` and `kvsim check`.
 *
 * For each request in trace order, no timing: pick a node (one node, or a
 * placement rule over N nodes), count its prefix hit against the store
 * as the scope sees it, then access all its blocks in order (hits refresh,
 * misses insert and evict per policy) through kv_store_commit. Block hit
 * rate = Σ hit_blocks / Σ blocks; token hit rate = Σ min(hit_blocks ×
 * block_tokens, input_length) / Σ input_length.
 *
 * The trace is loaded once into a compact key stream (8 bytes per block,
 * blocks renumbered densely), so a capacity sweep or a bisection replays
 * it many times without parsing it again.
 *
 * Placement (--placement) is this replay's own node picking, with no
 * queues or timing: not the conductor's routers (sched/, policy.router),
 * whose names its deprecated spelling --route borrowed. */
#ifndef SIM_HITRATE_H
#define SIM_HITRATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "sim/store/kvstore.h"
#include "sim/trace/trace.h"
#include "sim/util.h"

/* ---- the loaded trace --------------------------------------------------- */

typedef struct kv_replay_trace {
    char *path;
    int block_tokens;
    int64_t nreq, nblocks;
    int64_t *off;        /* nreq + 1 offsets into keys */
    uint64_t *keys;      /* every request's blocks in order, as dense numbers:
                            0, 1, 2, … in order of first appearance */
    int32_t *input_len;  /* per request */
    uint8_t *cls;        /* per request: sim_cache_class */
    int64_t *next_use;   /* per block position: the next position with the same
                            key (INT64_MAX = never); built on first offline use */
    int64_t distinct;    /* distinct blocks (numbers 0 .. distinct − 1) */
    char *block_warning; /* the trace's ids fit another block size (sim_trace_block_warning), or it has
                            none (sim_trace_hash_warning); NULL: they fit */
} kv_replay_trace;

/* Load a trace file (errors name the file and line; an empty trace is an
 * error: it has no hit rate). */
int kv_replay_load(kv_replay_trace *t, const char *path, int block_tokens, sim_err *err);
/* The same, the block-size warning advising `advice` (e.g. "--set
 * trace.block_tokens=N ... with N = ") instead of "--block-tokens ". */
int kv_replay_load_advice(kv_replay_trace *t, const char *path, int block_tokens, const char *advice, sim_err *err);
void kv_replay_free(kv_replay_trace *t);
/* A cache-only replay holds its trace whole (every capacity point and the
 * offline policies replay one key stream): past KV_REPLAY_WHOLE_BLOCKS
 * blocks (128 MiB of keys) a sentence saying so and what it holds, into
 * buf (docs/run.md, "Long traces"); NULL below. */
#define KV_REPLAY_WHOLE_BLOCKS ((int64_t)1 << 24)
const char *kv_replay_whole_note(const kv_replay_trace *t, char *buf, size_t n);
/* Number t's keys densely again (0, 1, 2, ... in order of first
 * appearance) after they were replaced by other keys (kvsim hitrate
 * --ladder's engine view); drops the next-use oracle. */
void kv_replay_renumber(kv_replay_trace *t);
/* For commands that replay many times (a capacity sweep, a bisection):
 * keep freed memory in the process for the next replay instead of
 * returning it to the kernel. Process-wide; call once, first thing. */
void kv_replay_keep_memory(void);

/* ---- what to replay ----------------------------------------------------- */

/* One replay setup, filled key by key from command-line options or from a
 * baseline's JSON object with the same names (kv_hitrate_set). */
typedef struct kv_hitrate_spec {
    char *trace;
    char policy[32];               /* eviction policy of every tier; "lru" */
    kv_scope scope;                /* "global" */
    int nodes;                     /* 1 */
    char placement[32];            /* how a request picks a node; "longest_prefix" */
    char route_given[32];          /* the value set through "route", placement's
                             deprecated name ("" = not used) */
    int block_tokens;              /* 512 */
    double tier_tokens[KV_NTIERS]; /* per node; 0 = absent; DRAM: see capacity */
    bool dram_in_tiers;            /* --tiers named dram= */
    double *capacity;              /* DRAM tokens per node to replay (INFINITY = unbounded) */
    int ncapacity;
    bool promote;   /* SSD reads move blocks up to DRAM; true */
    bool semantics; /* honour ephemeral/context (§5.2); true */
    json_t *params; /* policy.params, or NULL */
} kv_hitrate_spec;

void kv_hitrate_spec_init(kv_hitrate_spec *s);
void kv_hitrate_spec_free(kv_hitrate_spec *s);

/* Set one field by name: trace, capacity-tokens (a LIST: "1e6,3e6,inf"),
 * policy, scope (global|local), nodes, placement (longest_prefix|in_turn;
 * "route" with cache_aware_local|round_robin still works, see
 * kv_hitrate_deprecation), tiers ("hbm=1e5,dram=3e6,
 * ssd=30e6", tokens per node), block-tokens, promote (true|false),
 * semantics (true|false), params (a JSON object), and the flags
 * no-promote / no-semantics (value ignored). Errors name the field. */
int kv_hitrate_set(kv_hitrate_spec *s, const char *key, const char *value, sim_err *err);
/* The fields as getopt_long options (val 0, name = field), to splice into a
 * command's option table; such an option is handled by
 * kv_hitrate_set(spec, longopts[index].name, optarg ? optarg : "", err).
 * kv_hitrate_print_options prints their help. */
#define KV_HITRATE_LONGOPTS                                                                                            \
    {"trace", required_argument, NULL, 0}, {"capacity-tokens", required_argument, NULL, 0},                            \
        {"policy", required_argument, NULL, 0}, {"scope", required_argument, NULL, 0},                                 \
        {"nodes", required_argument, NULL, 0}, {"placement", required_argument, NULL, 0},                              \
        {"route", required_argument, NULL, 0}, {"tiers", required_argument, NULL, 0},                                  \
        {"block-tokens", required_argument, NULL, 0}, {"params", required_argument, NULL, 0},                          \
        {"no-promote", no_argument, NULL, 0},                                                                          \
    {                                                                                                                  \
        "no-semantics", no_argument, NULL, 0                                                                           \
    }
void kv_hitrate_print_options(FILE *f, bool with_capacity);

/* Same, for a JSON value (strings as is, numbers and booleans converted). */
int kv_hitrate_set_json(kv_hitrate_spec *s, const char *key, const json_t *value, sim_err *err);
/* Final checks and defaults once every field is set: a trace is required;
 * without capacity-tokens the DRAM capacity is --tiers dram= or inf. */
int kv_hitrate_finish(kv_hitrate_spec *s, sim_err *err);
/* A short "policy lru, scope global, 1 node, tiers ..." description. */
void kv_hitrate_describe(const kv_hitrate_spec *s, char *buf, size_t n);
/* When the deprecated field "route" was set, write the one-line notice a
 * command prints ("--route is deprecated, use --placement (round_robin is
 * now in_turn)"; with JSON names "route" and "placement" when json) into
 * buf and return true; false otherwise. */
bool kv_hitrate_deprecation(const kv_hitrate_spec *s, bool json, char *buf, size_t n);

/* ---- replay ------------------------------------------------------------- */

typedef struct kv_replay_result {
    int64_t requests, blocks, hit_blocks, tokens, hit_tokens;
    double hit_rate_blocks, hit_rate_tokens;
    kv_cache_stats tier[KV_NTIERS]; /* summed over nodes */
    int busiest_node;               /* the node placement gave the most requests */
    double busiest_share;           /* its share of the requests (1 / nodes when even) */
} kv_replay_result;

/* A multi-node placement is skewed when one node serves more than twice
 * its fair share of the requests: the hit rate then describes a cluster
 * whose other nodes idle (docs/definitions.md). */
static inline bool kv_replay_skewed(const kv_replay_result *r, int nodes)
{
    return nodes > 1 && r->busiest_share > 2.0 / nodes;
}

/* The warning for a skewed placement, one line. */
void kv_replay_skew_note(const kv_hitrate_spec *s, const kv_replay_result *r, char *buf, size_t n);

/* Replay t under spec with `capacity_tokens` of DRAM per node. */
int kv_hitrate_point(kv_replay_trace *t, const kv_hitrate_spec *s, double capacity_tokens, kv_replay_result *out,
                     sim_err *err);
/* The trace's theoretical maximum: one infinite cache, every block
 * admitted (docs/store.md). */
int kv_hitrate_max(kv_replay_trace *t, kv_replay_result *out, sim_err *err);

/* Capacity in blocks for a capacity in tokens (floor; INFINITY → SIM_COUNT_UNBOUNDED). */
int64_t kv_tokens_to_blocks(double tokens, int block_tokens);

/* ---- storing points (kvsim hitrate --db; hitrate_db.c) ------------------ */

/* The hitrate table of a results database, one id per invocation. */
typedef struct kv_hitrate_db kv_hitrate_db;

/* Open path's database for spec's points (*out NULL when path is NULL:
 * every store below is then a no-op); errors name the file. */
int kv_hitrate_db_open(kv_hitrate_db **out, const char *path, const kv_hitrate_spec *s, const char *model,
                       double kv_bytes_per_token, sim_err *err);
/* The trace's maximum (the infinite cache), stored once. */
int kv_hitrate_db_put_max(kv_hitrate_db *k, const kv_replay_result *max, sim_err *err);
/* One capacity's point; an infinite capacity is the maximum, not stored again. */
int kv_hitrate_db_put(kv_hitrate_db *k, double capacity_tokens, const kv_replay_result *r, sim_err *err);
void kv_hitrate_db_close(kv_hitrate_db *k);

#endif
