/* sim/serving/disagg/cluster_int.h — private state of the disaggregated
 * serving model, shared by its files. Not for use outside sim/serving/disagg.
 *
 * The files call only downward, never in a circle:
 *   cluster.c   the model's ops (sim/serving/serving.h): set-up, teardown,
 *               the event handler table
 *     flow.c    the life of a request: arrival, prefill, KV stream, decode
 *     control.c the control plane: samples, PD-ratio switches, faults
 *       cpp.c   chunked pipeline parallelism of one long prefill
 *         core.c  what all of them share: request bookkeeping (finish, lost
 *                 work, decode reservations), the conductor's views, noise */
#ifndef SIM_CLUSTER_INT_H
#define SIM_CLUSTER_INT_H

#include <gsl/gsl_rng.h>

#include "sched/sched.h"
#include "sim/cost/cost.h"
#include "sim/cost/estimator.h"
#include "sim/engine/engine.h"
#include "sim/results/dynamics.h"
#include "sim/serving/serving.h"
#include "sim/store/cache_model.h"
#include "sim/store/pic.h"
#include "sim/trace/trace.h"

/* Event kinds: the index into the handler table (kinds below SIM_EV_MODEL
 * are the replay loop's: a trace request's arrival). */
enum {
    EV_RETRY = SIM_EV_MODEL, /* a request re-enters after a failure (data: req) */
    EV_PREFILL_DONE,         /* target: prefill instance, gen: its generation, data: req */
    EV_KV_READY,             /* target: decode instance, gen: its generation, data: req */
    EV_DECODE_STEP,          /* target: decode instance, gen: its generation */
    EV_SAMPLE,               /* per-instance samples */
    EV_REPLICAS,             /* replica-count samples */
    EV_CONTROL,              /* PD-ratio controller period */
    EV_SWITCH_DONE,          /* target: instance whose role switch completes */
    EV_FAULT,                /* target: failing instance */
    EV_RECOVER,              /* target: recovering instance */
    EV_UNBLOCK,              /* target: instance whose pipeline stage (CPP) is done */
    EV_KV_LOADED,            /* target: decode instance, gen: its generation, data: req (DRAM → HBM done) */
    EV_NKINDS
};

typedef enum inst_role { ROLE_PREFILL = 0, ROLE_DECODE } inst_role;
typedef enum inst_state { ST_ACTIVE = 0, ST_DRAINING, ST_SWITCHING, ST_DOWN, ST_OFF } inst_state;

typedef struct req_state {
    /* what every decode step touches, together */
    sim_topk topk;
    int64_t last_token;
    int32_t tokens, output_len; /* generated so far; r->output_len */
    int64_t shown_first;        /* when the user sees the first token (metrics.first_token) */
    int64_t decode_begin;       /* when it first entered a decode batch (-1: not yet) */
    sim_request *r;
    struct req_state *next;                  /* queue link */
    struct req_state *live_prev, *live_next; /* admitted-and-unfinished list */
    bool live;
    sched_route route;
    int prefill, decode;  /* instance ids; -1 = none */
    int transfer_from;    /* instance id of the kvcentric holder; -1 = none */
    int32_t fetched;      /* kvcentric fetch: prefix blocks pinned on the prefill node since routing */
    int32_t fetch_blocks; /* of them, copied from the holder */
    int64_t fetch_end;    /* when the copy has arrived */
    uint32_t decode_gen;  /* decode instance generation at reservation */
    int64_t est_decode_start;
    int64_t prefill_start, first_token, kv_ready;
    int32_t hit_blocks, remote_blocks;
    double prefill_gpu_s;
    int32_t retries;
    int64_t need_kv;
    /* decode.kv_allocation = incremental (flow.c): KV tokens it holds in its
     * decode instance's HBM; preempted and not yet back in the batch (its KV
     * to recompute, or swapped out to DRAM, is kv_held's tokens) */
    int64_t kv_held;
    bool preempted;
    int32_t preemptions;
    kv_pic_ticket pic;  /* kvstore.pic: its blocks in its prefill instance's HBM store */
    int32_t pic_reused; /* kvstore.pic: input tokens the store's reuse spared it (its hit) */
    bool pic_held, pic_waited;
    int pic_node;
} req_state;

typedef struct req_queue {
    req_state *head, *tail;
    int n;
} req_queue;

typedef struct instance {
    int id;
    inst_role role, next_role;
    inst_state state;
    bool power_off;                   /* draining toward ST_OFF (capacity tide) */
    uint32_t gen;                     /* bumped on failure: older events are stale */
    int view;                         /* index in the conductor's view of its role */
    int64_t nic_tx_free, nic_rx_free; /* the NIC's two directions, each a FIFO (full duplex) */
    /* prefill role */
    req_queue queue;
    req_state *running;
    int64_t running_est_end;
    double queued_est_s;
    int64_t blocked_until; /* busy as a pipeline stage of a group member's request */
    /* decode role */
    req_queue waiting;
    req_state **batch;
    int nbatch, pending;
    int nloading;        /* decode.kv_receive = dram: KV being loaded DRAM → HBM, room held, not in the batch */
    int64_t preemptions; /* members preempted from its batch so far (samples.preemptions) */
    int64_t h2d_free;    /* its host link (DRAM → HBM), a FIFO */
    int64_t kv_reserved, kv_batch, kv_waiting, ctx_tokens;
    bool iterating;
    int64_t iter_start; /* when the running iteration began */
    int64_t role_since; /* when it took its role (0: from the start) */
} instance;

typedef struct load_samples {
    double *v;
    int n, cap;
} load_samples;

typedef struct sample_ticks {
    sim_sample_row *last, *held, *cur;
    bool written, holding;
    int64_t tick, stride;
} sample_ticks;

typedef struct cluster {
    sim_serving_run *run;  /* the replay's shared state (engine, DB, error) */
    const sim_config *cfg; /* run->cfg */
    sim_engine *eng;       /* &run->eng */
    sim_cost cost;         /* the prefill side's (cluster.prefill_hardware; = hardware by default) */
    sim_cost dcost;        /* the decode side's (cluster.decode_hardware): decode steps, KV capacity */
    sim_estimator est;
    const kv_cache_model *cache;
    void *cache_st;
    gsl_rng *rng_policy, *rng_noise, *rng_fit;

    instance *inst;
    int n_inst;
    int n_prefill, n_decode; /* instances per role (any state) */
    int *pidx, *didx;        /* view index → instance id */
    sched_prefill_view *pview;
    sched_decode_view *dview;
    sched_inflight *inflight;
    int inflight_cap;

    const sched_router_ops *router;
    const sched_decode_ops *decoder;
    const sched_admission_ops *admission;
    const sched_pd_ops *pd;
    void *router_st, *decoder_st, *admission_st, *pd_st;

    req_state *live_head; /* admitted, unfinished */
    int64_t n_live;
    int32_t *remote_from;
    int64_t kv_capacity;
    double slo_tbt_s; /* cfg->slo_tbt_ms / 1e3, once */
    double block_bytes;
    double decode_s_sum;    /* observed decode durations, batch entry to last token (t_d) */
    sched_lengths *outputs; /* output lengths of completed decodes (early_reject_predict) */
    int64_t decode_n;
    bool switching;
    load_samples prefill_loads, decode_loads;
    double busy_prefill_s;  /* instance-seconds spent prefilling */
    double busy_decode_s;   /* instance-seconds decoding, each weighted by the decode load then */
    double held_decode_s;   /* instance-seconds decoding, each weighted by the running batch's KV / capacity */
    int64_t decode_role_ns; /* instance-ns in the decode role, of roles since left */
    /* kvstore.pic other than "none" (sim/store/pic.h): one HBM block store
     * per instance; a request holds its blocks in its prefill instance's
     * store from prefill start to completion. */
    const kv_pic_policy *pic;
    kv_pic **pic_st;
    kv_pic_params pic_params;
    struct {
        int64_t input, computed, positions, chunks, chunk_hits, waits, rejected, unsegmented, admitted;
        int64_t least_need, least_index, least_line; /* the smallest need of a rejected request, whose */
    } pic_sum;
    struct {
        int64_t n, first_line, first_need; /* requests whose KV exceeds a decode instance's HBM (flow.c) */
    } too_large;
    struct {
        int64_t preemptions, recomputed_tokens;
        double swapped_bytes;
    } preempt; /* decode.kv_allocation = incremental (flow.c) */
    struct {
        int seqs;     /* the largest decode batch of the run */
        double share; /* the CPU constants' share of its step (the fit-range finding) */
    } peak_decode;
    /* samples rows (control.c), every stride-th period: each instance's
     * row at the last tick written, at the last tick held back since (the
     * same values) and at this tick */
    sample_ticks ticks;
    /* the pools' mean loads every sample period (control.c): the summary's
     * load_dynamics over the steady-state window */
    sim_series series;
} cluster;

/* FIFO queues of requests. */
static inline void queue_push(req_queue *q, req_state *s)
{
    s->next = NULL;
    if (q->tail) q->tail->next = s;
    else q->head = s;
    q->tail = s;
    q->n++;
}

/* A preempted request rejoins the head of the waiting queue (vLLM). */
static inline void queue_push_head(req_queue *q, req_state *s)
{
    s->next = q->head;
    q->head = s;
    if (!q->tail) q->tail = s;
    q->n++;
}

static inline req_state *queue_pop(req_queue *q)
{
    req_state *s = q->head;
    if (!s) return NULL;
    q->head = s->next;
    if (!q->head) q->tail = NULL;
    q->n--;
    return s;
}

/* ---- core.c ------------------------------------------------------------------- */

/* A transfer of `bytes` from instance src's NIC to dst's: the slower of the
 * two sides' NIC times (the same when both sides share the hardware). */
double sim_cluster_nic_s(const cluster *c, int src, int dst, double bytes);
/* Truth noise factor of one compute step (cost.noise; 1 when off). */
double sim_cluster_noise(cluster *c);
/* Prefix-hit tokens of `blocks` reused blocks of r. */
int32_t sim_cluster_hit_tokens(const cluster *c, const sim_request *r, int32_t blocks);
void sim_cluster_free_req(req_state *s);
/* Drop q's PIC blocks (if held) and let their instance's queue retry. */
void sim_cluster_pic_release(cluster *c, req_state *q);
/* An admitted request is in flight (the conductor's in-flight list). */
void sim_cluster_live_add(cluster *c, req_state *q);
/* q is done (stage NONE), rejected or lost: its row, then it is freed. */
void sim_cluster_finish(cluster *c, req_state *q, sim_stage stage);
/* Release q's KV reservation on its decode instance (if it still stands). */
void sim_cluster_release_decode(cluster *c, req_state *q);
/* The work q had done was lost with an instance: retry or count it lost. */
void sim_cluster_lost_work(cluster *c, req_state *q);
/* Decode instance d's running iteration ends now (done or cut by a
 * failure): count its batch's KV share for that time (utilisation.decode). */
void sim_cluster_decode_held(cluster *c, const instance *d);
/* The memory term of decode instance d's load: its reserved KV / capacity
 * (decode.kv_allocation = reserve), or the KV of the requests that reached
 * it, batch and waiting, / capacity (incremental: nothing is reserved). */
double sim_cluster_decode_mem(const cluster *c, const instance *d);
/* ns that `in` has spent in the decode role up to `end`, since it took
 * the role or the first arrival, whichever is later (0 in another role). */
int64_t sim_cluster_decode_span_ns(const cluster *c, const instance *in, int64_t end);
/* A draining instance with no work left starts its role switch. */
void sim_cluster_check_drained(cluster *c, instance *in);
/* Rebuild the role → instance maps after a role change. */
void sim_cluster_refresh_views(cluster *c);
/* The conductor's view now (with the in-flight list when asked). */
sched_ctx sim_cluster_ctx(cluster *c, bool with_inflight);

/* ---- pic.c -------------------------------------------------------------------- */
/* kvstore.pic names a cache model or a PIC policy, with valid parameters. */
int sim_pic_check(const sim_config *cfg, sim_err *err);
/* The per-instance HBM stores when kvstore.pic is a PIC policy (c->pic). */
void sim_pic_setup(cluster *c);
void sim_pic_free(cluster *c);
/* Admit the head of in's queue into its store: true with *cached (tokens
 * it reuses); false when it must wait for HBM or the queue emptied
 * (requests too large for the store are rejected on the way). */
bool sim_pic_admit_head(cluster *c, instance *in, int32_t *cached);
/* Footprint / capacity of inst's store. */
double sim_pic_used(const cluster *c, int inst);
/* recompute_fraction, chunk_hit_rate, peak_footprint_blocks, ... */
void sim_pic_summarize(const cluster *c, json_t *summary);
/* The caveat of requests too large for any decode instance (flow.c). */
void sim_cluster_note_too_large(const cluster *c, json_t *summary);

/* ---- cpp.c -------------------------------------------------------------------- */
bool sim_cpp_applies(const cluster *c, const sim_request *r, int32_t cached_tokens);
/* Prefill r on in's group as a pipeline; returns seconds from now to its
 * end, sets *gpu_s to the compute summed over stages, and blocks the other
 * members until their stages are done. */
double sim_cpp_prefill(cluster *c, instance *in, const sim_request *r, int32_t cached_tokens, double load_s,
                       double *gpu_s);

/* ---- flow.c ------------------------------------------------------------------- */
void sim_flow_arrive(cluster *c, sim_request *r);
void sim_flow_on_retry(cluster *c, const sim_event *ev);
void sim_flow_on_prefill_done(cluster *c, const sim_event *ev);
void sim_flow_on_kv_ready(cluster *c, const sim_event *ev);
void sim_flow_on_decode_step(cluster *c, const sim_event *ev);
void sim_flow_on_unblock(cluster *c, const sim_event *ev);
void sim_flow_on_kv_loaded(cluster *c, const sim_event *ev);

/* ---- control.c ---------------------------------------------------------------- */
void sim_control_start(cluster *c);
void sim_control_on_sample(cluster *c, const sim_event *ev);
void sim_control_on_replicas(cluster *c, const sim_event *ev);
void sim_control_on_control(cluster *c, const sim_event *ev);
void sim_control_on_switch_done(cluster *c, const sim_event *ev);
void sim_control_on_fault(cluster *c, const sim_event *ev);
void sim_control_on_recover(cluster *c, const sim_event *ev);
void sim_control_free(cluster *c);
/* The summary's load_dynamics: the oscillation metrics of the pools' mean
 * loads over the steady-state window (summary steady_state; docs/definitions.md,
 * "Load oscillation"). */
void sim_control_summarize(cluster *c, json_t *summary);

#endif
