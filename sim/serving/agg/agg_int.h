/* sim/serving/agg/agg_int.h — private state of the aggregated serving model
 * (cluster.mode = "aggregated"; docs/lmcache.md). Not for use outside
 * sim/serving/agg.
 *
 * The files call only downward:
 *   agg.c          the model's ops: set-up, arrival, teardown
 *     iter.c       the vLLM-style iteration loop of one instance: scheduling
 *                  a mixed batch, its time, preemption, finishing requests
 *       conductor.c what sched/ sees of the instances; routing, admission
 *       lmcache.c   the LMCache chunk tiers */
#ifndef SIM_AGG_INT_H
#define SIM_AGG_INT_H

#include <gsl/gsl_rng.h>

#include "sched/sched.h"
#include "sim/cost/cost.h"
#include "sim/cost/estimator.h"
#include "sim/engine/engine.h"
#include "sim/serving/serving.h"
#include "sim/store/cache_model.h"
#include "sim/store/pic.h"

enum {
    EV_ITER = SIM_EV_MODEL, /* target: instance whose iteration ends */
    EV_WAKE,                /* target: instance where a request's KV load ends */
    EV_FRONT,               /* data: a request the API server hands to the scheduler (engine.frontend_ms) */
    EV_NKINDS
};

/* One request on an instance, from routing to its last token. */
typedef struct areq {
    /* The fields the per-token decode loop reads (iter.c: schedule, advance,
     * emit) come first, the request's lengths copied in, so that an
     * iteration over a few hundred running requests touches their first
     * two cache lines and never the trace record. */
    int32_t done;                  /* of target, with KV (reused or computed) */
    int32_t target;                /* prompt tokens to have KV for: input (+ output emitted before a preemption) */
    int32_t tokens;                /* output tokens emitted */
    int32_t chunk;                 /* prefill tokens scheduled in the current iteration */
    int32_t prompt_pages;          /* ⌈input / B⌉, kept: the decode loop asks every iteration */
    int32_t input_len, output_len; /* r's, kept likewise */
    bool decoding;                 /* in the current iteration's decode batch */
    bool admitted;                 /* holds pages (its ticket) */
    int64_t kv;                    /* tokens of KV it holds once prefilled */
    int64_t out_pages;             /* private pages grown for output KV */
    int64_t last_token;            /* -1 until then */
    sim_topk topk;
    int32_t hole_from, hole_to; /* prompt tokens [from, to) are loaded (LMCache), not computed; from = to: none */
    int64_t ready_at;           /* that load ends then: no prefill from hole_to before */
    sim_request *r;
    struct areq *next; /* waiting-queue link */
    int inst;
    int32_t cached;                     /* reused from the prefix cache at (the last) admission */
    int64_t prefill_start, first_token; /* -1 until then */
    int64_t prefetch_at;                /* its prefetch into CPU memory ends then; -1 = none */
    double stalled_s;                   /* LMCache: recompute believed added to its decode gaps (lmcache.c) */
    double prefill_gpu_s;
    int preemptions;
    int64_t visible_iter; /* engine.async_scheduling: the first iteration (ainst.started) that may admit it */
    kv_pic_ticket pages;
    uint64_t *chunk_keys; /* LMCache: its full chunks' keys, once computed (lmcache.c) */
    int32_t nchunks;
} areq;

typedef struct ainst {
    int id;
    areq *wait_head, *wait_tail; /* FIFO; preempted requests rejoin at the head */
    int nwait;
    areq **run; /* admitted, in admission order (the last is preempted first) */
    int nrun, caprun;
    bool iterating;
    bool wake_pending; /* an EV_WAKE is due now: requests arriving at this instant join its step (agg.c kick) */
    int64_t started;   /* iterations started */
    kv_pic *pages;     /* HBM pages and the GPU prefix cache */
    double queued_s;   /* estimated prefill time of the waiting requests */
    uint64_t moe_jit;  /* fused-MoE kernel variants compiled (sim_cost_moe_jit_s) */
} ainst;

typedef struct lmc lmc;

typedef struct agg {
    sim_serving_run *run;
    const sim_config *cfg;
    sim_engine *eng;
    sim_cost cost;
    sim_estimator est;
    gsl_rng *rng_policy, *rng_fit;
    ainst *inst;
    int n;
    const kv_pic_policy *pic; /* prefix caching ("prefix") unless kvstore.pic names a PIC policy */
    kv_pic_params pp;
    const sched_router_ops *router;
    void *router_st;
    const kv_cache_model *cache; /* the conductor's belief of cache contents (routing) */
    void *cache_st;
    sched_prefill_view *pview;
    sched_decode_view *dview;
    sched_inflight *inflight;
    int inflight_cap;
    const sched_admission_ops *admission;
    void *admission_st;
    double decode_s_sum; /* first to last token of finished requests */
    int64_t decode_n;
    lmc *lmc; /* the LMCache layer; NULL when kvstore.lmcache is off */
    struct {
        int64_t preemptions, iterations, rejected, input, computed;
        double busy_s;
        double load_s; /* Σ over iterations of duration × the binding share of capacity (iter.c) */
    } tot;
    struct {
        int64_t n, prompt;              /* requests whose KV fits no instance; of them, whose prompt alone does not */
        int64_t first_line, first_need; /* the first one's trace line and input + output tokens */
    } too_large;
    struct {
        int64_t n;                 /* fused-MoE variants compiled on first use, all instances */
        double s;                  /* the stalls they cost, in all */
        int64_t first_ns, last_ns; /* when the first and the last began */
    } moe_compiles;
    struct {
        int seqs;     /* the most sequences (decodes + prefill chunks) in one iteration */
        double share; /* of that iteration's time (the first with that many), the CPU constants' */
    } peak;
} agg;

/* ---- lmcache.c ---- */
int lmc_create(agg *a, sim_err *err);
void lmc_free(agg *a);
/* q was queued: prefetch its slow-tier chunks into CPU memory (if on). */
void lmc_enqueue(agg *a, areq *q);
/* q was admitted: load the chunks worth loading past its GPU prefix-cache
 * hit (q->cached grows); returns how long q waits for them (s). */
double lmc_load(agg *a, areq *q);
/* q's prompt is done: its chunks go to every tier. */
void lmc_store(agg *a, areq *q);
void lmc_summarize(const agg *a, json_t *summary);

/* ---- conductor.c ---- */
sched_ctx agg_ctx(agg *a, bool with_inflight);
/* Route and admit req: SIM_STAGE_NONE with *inst, or the rejection stage. */
sim_stage agg_conduct(agg *a, const sim_request *req, int *inst);
/* The admission policy's second look once q's first token is out. */
bool agg_accepts_after_prefill(agg *a, const areq *q);

/* ---- iter.c ---- */
/* Start an iteration on in unless one runs or nothing is scheduled. */
void agg_iterate(agg *a, ainst *in);
void agg_on_iter(agg *a, const sim_event *ev);
void agg_req_free(areq *q);
/* q waits on in (routed there). */
void agg_enqueue(agg *a, ainst *in, areq *q);
/* q was rejected at arrival (stage). */
void agg_reject(agg *a, areq *q, sim_stage stage);

#endif
