/* sched/sched.h — the conductor's policy interface (docs/architecture.md §1, §6).
 *
 * sim/ is mechanism, sched/ is policy. A policy sees a sched_ctx — the
 * conductor's *belief*: estimators, a shadow view of the cache metadata and
 * per-instance load views — and returns a decision (which prefill instance,
 * which decode instance, admit or reject). It never advances time or mutates
 * cluster state; sim/cluster carries the decision out.
 *
 * Each policy kind is a struct of function pointers; each policy is one file
 * in sched/ and one line in its registry table (sched/registry.c). Optional
 * hooks may be NULL. Policy state is an opaque pointer the policy creates. */
#ifndef SCHED_SCHED_H
#define SCHED_SCHED_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <gsl/gsl_rng.h>
#include <jansson.h>

#include "sim/config/config.h"
#include "sim/cost/estimator.h"
#include "sim/store/kvstore.h"
#include "sim/trace/trace.h"

/* What the conductor sees of one prefill instance. */
typedef struct sched_prefill_view {
    int node;             /* node index in the KV store */
    bool active;          /* currently serving prefill */
    int queue_len;        /* queued + running */
    double queue_s;       /* estimated time until the instance is idle */
    double nic_tx_wait_s; /* backlog of the node's NIC sending (FIFO, full duplex) */
    double nic_rx_wait_s; /* backlog of the node's NIC receiving */
} sched_prefill_view;

/* What the conductor sees of one decode instance. */
typedef struct sched_decode_view {
    int node;
    bool active;
    int batch;           /* requests in the running batch */
    int pending;         /* routed here, not yet in the batch */
    int64_t kv_tokens;   /* KV tokens reserved (batch + pending, pending counting requests still in prefill) */
    int64_t kv_resident; /* KV tokens of requests that reached it (batch + waiting there for room) */
    int64_t kv_capacity; /* KV tokens the instance's HBM holds */
    int64_t ctx_tokens;  /* context tokens the running batch reads per iteration */
} sched_decode_view;

/* An admitted request still in flight, as the conductor predicts it. */
typedef struct sched_inflight {
    double decode_start_s; /* predicted (or actual, if ≤ 0) start of its decode, relative to now */
    int64_t ctx_tokens;    /* KV tokens its decode reads (input + output: its reservation) */
    int32_t input_tokens;  /* its input (0: unknown, ctx_tokens stands for its KV) */
    int32_t tokens;        /* output tokens emitted so far (0 before its prefill ends) */
} sched_inflight;

/* Output lengths of the requests that finished decoding (sched/lengths.c):
 * sched_lengths_above(l, k) = how many were longer than k tokens. */
typedef struct sched_lengths sched_lengths;
#define SCHED_LENGTHS_CAP (1 << 17) /* longer outputs count at this length */
sched_lengths *sched_lengths_new(void);
void sched_lengths_free(sched_lengths *l);
void sched_lengths_add(sched_lengths *l, int64_t len); /* no-op on NULL */
int64_t sched_lengths_n(const sched_lengths *l);       /* 0 for NULL */
int64_t sched_lengths_above(const sched_lengths *l, double k);

typedef struct sched_ctx {
    const sim_config *cfg;
    const sim_estimator *est;
    const kv_store *shadow; /* cache metadata as the conductor sees it now */
    gsl_rng *rng;           /* the policies' own random stream */
    int64_t now_ns;
    int n_prefill;
    const sched_prefill_view *prefill;
    int n_decode;
    const sched_decode_view *decode;
    double kv_bytes_per_token;
    int n_inflight; /* filled only for admission policies that ask */
    const sched_inflight *inflight;
    double mean_decode_s;         /* with inflight: the conductor's decode-time estimate t_d */
    bool kv_incremental;          /* decode KV grows a token a step (decode.kv_allocation; false: reserved whole) */
    const sched_lengths *outputs; /* with inflight: finished output lengths (NULL: none kept) */
} sched_ctx;

/* A router's decision. */
typedef struct sched_route {
    int prefill;           /* index into ctx->prefill; -1 = no instance */
    int32_t prefix_blocks; /* blocks the conductor expects to reuse */
    bool fetch_remote;     /* global scope: serve prefix blocks held on other nodes over the NIC */
    bool replicate;        /* Alg. 1 line 21: copy the holder's prefix into the chosen node first */
    int transfer_from;     /* with replicate: the holder (index into ctx->prefill); else -1 */
    double service_s;      /* estimated load + prefill time on the chosen instance */
    double ttft_s;         /* estimated TTFT (queue + service) */
} sched_route;

/* A decode selector's decision. */
typedef struct sched_decode_choice {
    int decode;   /* index into ctx->decode; -1 = none can ever hold the request */
    double tbt_s; /* predicted iteration time on it with this request */
    double load;  /* its decode load with this request (sched_decode_load) */
} sched_decode_choice;

typedef enum sched_verdict {
    SCHED_ACCEPT = 0,
    SCHED_REJECT_AT_ARRIVAL, /* early rejection / nothing can serve it */
    SCHED_REJECT_TTFT_SLO,   /* HTTP 429 of Algorithm 1 */
} sched_verdict;

/* ---- policy kinds ---------------------------------------------------------- */

typedef struct sched_router_ops {
    const char *name, *help, *params;
    /* Create policy state from policy.params (may be NULL = stateless). */
    int (*create)(void **state, const json_t *params, sim_err *err);
    void (*destroy)(void *state);
    /* Pick a prefill instance for req. Contract: out->prefill is an active
     * instance or -1; prefix/ttft estimates are filled for that instance. */
    void (*route)(void *state, const sched_ctx *ctx, const sim_request *req, sched_route *out);
    bool holders; /* reads every instance's prefix (sched_local_prefixes): the serving model keeps the
                     shadow store's holder index (kv_store_cfg.holder_index) */
} sched_router_ops;

typedef struct sched_decode_ops {
    const char *name, *help, *params;
    int (*create)(void **state, const json_t *params, sim_err *err);
    void (*destroy)(void *state);
    void (*select)(void *state, const sched_ctx *ctx, const sim_request *req, sched_decode_choice *out);
} sched_decode_ops;

typedef struct sched_admission_ops {
    const char *name, *help, *params;
    int (*create)(void **state, const json_t *params, sim_err *err);
    void (*destroy)(void *state);
    /* At arrival, after routing and decode selection. */
    sched_verdict (*admit)(void *state, const sched_ctx *ctx, const sim_request *req, const sched_route *route,
                           const sched_decode_choice *dec);
    /* Optional: when the prefill is done, may the request go on to decode
     * instance `decode` (index into ctx->decode)? false = reject, counted
     * as after_prefill (wasted prefill). */
    bool (*after_prefill)(void *state, const sched_ctx *ctx, const sim_request *req, int decode);
    bool needs_inflight; /* fill ctx->inflight before admit */
} sched_admission_ops;

/* What the PD-ratio controller sees each period (Mooncake §5.1). */
typedef struct sched_pd_view {
    double t_s;                                 /* simulated time */
    const double *prefill_loads, *decode_loads; /* per-instance load samples since the last period */
    int n_prefill_loads, n_decode_loads;
    int n_prefill, n_decode; /* instances serving each role now */
    int n_on, n_max;         /* instances powered on (any state but off); instances that exist */
    bool switching;          /* an instance is draining or switching */
} sched_pd_view;

typedef enum sched_pd_role { SCHED_PREFILL = 0, SCHED_DECODE = 1 } sched_pd_role;

/* One period's decision: at most one step.
 *   move  +1: one instance prefill → decode; −1: decode → prefill; 0: none.
 *   scale +1: power one instance on, into role; −1: drain one of role and
 *         power it off (the capacity tide); 0: none. */
typedef struct sched_pd_decision {
    int move, scale;
    sched_pd_role role;
} sched_pd_decision;

typedef struct sched_pd_ops {
    const char *name, *help, *params;
    /* instances: how many exist (prefill + decode), for checking params */
    int (*create)(void **state, const json_t *params, int instances, sim_err *err);
    void (*destroy)(void *state);
    void (*decide)(void *state, const sched_pd_view *view, sched_pd_decision *out); /* NULL = never */
    double (*period_s)(const void *state);
} sched_pd_ops;

/* ---- helpers shared by policies (sched/common.c) ------------------------- */

/* SLO of a request: its own when the trace carries one, else the config's. */
double sched_slo_ttft_s(const sched_ctx *ctx, const sim_request *req);
double sched_slo_tbt_s(const sched_ctx *ctx, const sim_request *req);
/* Estimated service time (prefix load + prefill) of req with prefix_blocks reused. */
double sched_est_service_s(const sched_ctx *ctx, const sim_request *req, int32_t prefix_blocks);
/* Fill a route for instance i with the given prefix (estimates included). */
void sched_route_to(const sched_ctx *ctx, const sim_request *req, int i, int32_t prefix_blocks, sched_route *out);
/* The same with the service estimate given (sched_est_service_s of req
 * with prefix_blocks, e.g. from a sched_memo). */
void sched_route_to_est(const sched_ctx *ctx, int i, int32_t prefix_blocks, double service_s, sched_route *out);
/* sched_est_service_s over the candidates of one routing decision: most
 * share a prefix (0 where an instance holds nothing, the longest one where
 * it would fetch it), and the estimate depends on nothing else, so each
 * distinct prefix is estimated once — the same numbers as estimating it
 * per instance, at a lookup per instance. Zero-initialise per decision. */
typedef struct sched_memo {
    int32_t prefix[4];
    double service_s[4];
    int n, next;
} sched_memo;
double sched_memo_service(sched_memo *m, const sched_ctx *ctx, const sim_request *req, int32_t prefix_blocks);
/* Load of the prefill side for a route: predicted TTFT / SLO_ttft (§4.3.1). */
double sched_prefill_load(const sched_ctx *ctx, const sim_request *req, const sched_route *route);
/* Load of a decode instance that would hold kv_tokens (this request
 * included) with predicted iteration time tbt_s: the greater of
 * tbt_s / SLO_tbt and kv_tokens / capacity. Above 1 on the second term the
 * request would wait for HBM room, and that wait is its longest
 * inter-token interval — so memory oversubscription is TBT load too. */
double sched_decode_load(const sched_ctx *ctx, const sim_request *req, double tbt_s, int64_t kv_tokens,
                         int64_t capacity);
/* KV tokens req takes on its decode instance when it joins the batch:
 * input + output when reserved whole, input + its first token when
 * ctx->kv_incremental (decode.kv_allocation = incremental; it then grows a
 * token a step). */
int64_t sched_join_kv(const sched_ctx *ctx, const sim_request *req);
/* The decode load of decode instance `decode` (index into ctx->decode) at
 * this moment with req joining it: the KV of the requests that reached it
 * (kv_resident: its running batch and those waiting there for room) plus
 * req's (sched_join_kv), and one iteration over its running batch plus req
 * (sched_decode_load). KV reserved for requests still in prefill queues is
 * not counted: they have not reached it. *tbt_s (may be NULL) gets the
 * predicted iteration time. Used by `early_reject` at arrival and by
 * `baseline` after prefill (Mooncake §4.3.2, §4.3.3). */
double sched_decode_load_now(const sched_ctx *ctx, const sim_request *req, int decode, double *tbt_s);
/* The decode load as Mooncake's conductor sees it (§4.3.1, §4.3.2,
 * §4.3.4; policy.params.decode_signal=1, docs/definitions-decode.md "Decode-pool
 * load"): the mean over the active decode instances of predicted TBT /
 * SLO_tbt, each instance iterating over the requests that reached it
 * (kv_resident; 0 when it has none), req joining instance `decode`
 * (-1: none). INFINITY when no decode instance is active. */
double sched_decode_pool_load_now(const sched_ctx *ctx, const sim_request *req, int decode);
/* The decode load an admission policy judges now: the pool's
 * (sched_decode_pool_load_now) when pool, else instance `decode`'s
 * (sched_decode_load_now). */
double sched_decode_load_signal(const sched_ctx *ctx, const sim_request *req, int decode, bool pool);
/* policy.params.decode_signal (0 = per-instance max(TBT, KV) load, the
 * default; 1 = the pool's TBT load) into *pool. */
int sched_decode_signal_param(const json_t *params, bool *pool, sim_err *err);
/* early_reject_predict's expected decode pool at t seconds from now
 * (sched/admit_early_reject_predict.c, docs/definitions-decode.md): *batch
 * requests and *kv KV tokens, req included, with t_d the uniform decode
 * time (used when outputs is NULL or empty), tau the step time and
 * outputs the finished output lengths. */
void sched_predict_pool(const sched_ctx *ctx, const sim_request *req, double t, double t_d, double tau,
                        const sched_lengths *outputs, double *batch, double *kv);
/* State of admission policies that only need policy.params.load_threshold
 * (default 1) and decode_signal: create/destroy hooks shared by baseline
 * and early_reject. */
typedef struct sched_threshold {
    double threshold;
    bool pool; /* policy.params.decode_signal = 1 */
} sched_threshold;
int sched_threshold_create(void **state, const json_t *params, sim_err *err);
void sched_state_free(void *state);

/* policy.params.holder_index (0 or 1, default 1) into *probe = (value 0):
 * with 0 the cache-aware routers ask each instance's tiers in turn, the
 * reference the holder index is tested against (tests/test_holders.c). */
int sched_holder_param(const json_t *params, bool *probe, sim_err *err);
/* Each prefill instance's own cached prefix of req: local[i], for i in
 * [0, n_prefill), is the leading run of req's block keys resident on
 * instance i's node (any tier), 0 for an inactive instance. From the
 * shadow store's holder index in one walk over the keys whatever the
 * number of instances (Mooncake's conductor: one map from block to the
 * instances holding it); with probe, or a store without the index, by
 * probing each instance in turn. Both give the same numbers. */
void sched_local_prefixes(const sched_ctx *ctx, const sim_request *req, bool probe, int32_t *local);

/* Prefix the mechanism will serve on instance i under the configured scope:
 * the pool's prefix in global scope, the node's own in local scope. */
int32_t sched_scope_prefix(const sched_ctx *ctx, const sim_request *req, int i);

#endif
