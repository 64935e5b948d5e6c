/* sim/serving/agg/iter.c — the iteration loop of an aggregated instance
 * (docs/lmcache.md), as vLLM's scheduler runs it with chunked prefill.
 *
 * An iteration takes every running request that is decoding (one token
 * each), then fills what is left of the token budget
 * (engine.max_num_batched_tokens) with prefill chunks: first of running
 * requests still prefilling, then of waiting requests admitted in order. A
 * waiting request is admitted when HBM pages can hold its prompt (the GPU
 * prefix cache supplies the pages it shares; unreferenced cached pages are
 * evicted LRU for the rest); the queue's head otherwise waits, and one that
 * can never fit is rejected. A decoding request that needs a new page when
 * none can be freed preempts the most recently admitted running request
 * (itself, if it is that one): its pages are released and it rejoins the
 * head of the queue, to recompute its prompt and the tokens it had emitted
 * (vLLM's default, recompute preemption). The iteration lasts the cost
 * model's time for the mixed batch (sim_cost_mixed_iter_s). When it ends,
 * chunks advance; a request whose prompt is done emits its first token, a
 * decoding one its next; a request with all its tokens is finished and its
 * pages go back, its full prompt pages staying cached until evicted.
 *
 * With engine.async_scheduling (vLLM's AsyncScheduler, on by default since
 * v0.14.0, vllm-project/vllm#27614) step N+1 is scheduled while step N runs, so a request that arrives
 * during step N is first admitted into step N+2 (into the next step when
 * nothing runs); decodes are unaffected, their next token being scheduled
 * ahead as a placeholder.
 *
 * Without engine.chunked_prefill a prompt's uncached tokens go in one
 * step: one that does not fit what is left of the budget waits, admitted,
 * for a step with room, and so does the queue behind it (vLLM's
 * Scheduler.schedule stops scheduling waiting requests there: "if not
 * enable_chunked_prefill and num_new_tokens > token_budget: break",
 * vllm/v1/core/sched/scheduler.py, since vllm-project/vllm#28911 of November 2025;
 * it skipped to the next before); a prompt longer than the whole budget is
 * rejected on arrival (agg.c). */
#include <math.h>
#include <stdlib.h>

#include "sim/serving/agg/agg_int.h"

void agg_req_free(areq *q)
{
    sim_topk_free(&q->topk);
    kv_pic_ticket_free(&q->pages);
    free(q->chunk_keys);
    sim_request_free(q->r);
    free(q);
}

/* ---- queues --------------------------------------------------------------- */

static void wait_push(ainst *in, areq *q, bool head)
{
    q->next = NULL;
    if (!in->wait_head) in->wait_head = in->wait_tail = q;
    else if (head) q->next = in->wait_head, in->wait_head = q;
    else in->wait_tail->next = q, in->wait_tail = q;
    in->nwait++;
}

static areq *wait_pop(ainst *in)
{
    areq *q = in->wait_head;
    in->wait_head = q->next;
    if (!in->wait_head) in->wait_tail = NULL;
    in->nwait--;
    return q;
}

static void run_push(ainst *in, areq *q)
{
    if (in->nrun == in->caprun)
        in->run = sim_xrealloc(in->run, (size_t)(in->caprun = in->caprun ? 2 * in->caprun : 64) * sizeof *in->run);
    in->run[in->nrun++] = q;
}

/* ---- request ends ---------------------------------------------------------- */

static void write_row(agg *a, areq *q, sim_stage stage)
{
    sim_request_row row;
    sim_serving_row(a->cfg, q->r, stage, q->first_token, q->last_token, &q->topk, &row);
    row.prefill_inst = row.decode_inst = q->inst;
    row.hit_blocks = q->cached / a->cfg->block_tokens;
    row.hit_tokens = q->cached;
    row.prefill_start_ms = q->prefill_start >= 0 ? sim_ns_to_ms(q->prefill_start) : -1;
    row.prefill_gpu_s = q->prefill_gpu_s;
    row.tokens = stage == SIM_STAGE_NONE ? q->tokens : 0;
    row.retries = q->preemptions;
    row.preemptions = q->preemptions;
    row.left_ms = sim_ns_to_ms(a->eng->now);
    if (sim_results_add_request(a->run->db, &row, a->run->err)) a->run->failed = true;
}

static void finish(agg *a, ainst *in, areq *q, sim_stage stage)
{
    if (stage == SIM_STAGE_NONE && q->r->output_len > 1) {
        a->decode_s_sum += sim_ns_to_s(q->last_token - q->first_token);
        a->decode_n++;
    }
    if (q->admitted) kv_pic_release(in->pages, &q->pages);
    q->admitted = false;
    write_row(a, q, stage);
    sim_serving_finished(a->run, q->r);
    agg_req_free(q);
}

/* The last admitted running request gives its pages back and waits again. */
static void preempt_last(agg *a, ainst *in)
{
    areq *v = in->run[--in->nrun];
    kv_pic_release(in->pages, &v->pages);
    v->admitted = false;
    v->target = v->input_len + v->tokens;
    v->done = v->chunk = 0;
    v->decoding = false;
    v->out_pages = 0;
    v->preemptions++;
    a->tot.preemptions++;
    wait_push(in, v, true);
}

/* ---- scheduling ------------------------------------------------------------- */

/* q (running) decodes this iteration: a page for its next token, preempting
 * from the back while none can be had. false when q itself was preempted. */
static bool decode_page(agg *a, ainst *in, areq *q)
{
    int64_t pages = q->prompt_pages + q->out_pages;
    if (q->kv + 1 <= pages * a->pp.block_tokens) return true;
    while (kv_pic_grow(in->pages, &q->pages, 1) != 0) {
        bool self = in->run[in->nrun - 1] == q;
        preempt_last(a, in);
        if (self) return false;
    }
    q->out_pages++;
    return true;
}

/* Admit the head of the queue: 0 admitted, 1 it must wait, 2 rejected. */
static int admit_head(agg *a, ainst *in)
{
    areq *q = in->wait_head;
    kv_pic_outcome o;
    int rc = kv_pic_admit(in->pages, q->r, true, &q->pages, &o);
    if (rc == 1) return 1;
    wait_pop(in);
    in->queued_s -= sim_est_prefill_s(&a->est, q->r->input_len, 0);
    if (in->nwait == 0 || in->queued_s < 0) in->queued_s = 0;
    if (rc == 2) {
        a->tot.rejected++;
        finish(a, in, q, SIM_STAGE_AT_ARRIVAL);
        return 2;
    }
    int64_t extra = (q->target + a->pp.block_tokens - 1) / a->pp.block_tokens - q->prompt_pages;
    q->admitted = true;
    if (q->prefill_start < 0) q->prefill_start = a->eng->now;
    if (extra > 0 && kv_pic_grow(in->pages, &q->pages, extra) == 0) q->out_pages = extra;
    q->cached = (int32_t)(o.input_tokens - o.computed_tokens);
    if (q->cached > q->target - 1) q->cached = q->target - 1;
    q->done = q->cached;
    q->hole_from = q->hole_to = 0;
    a->tot.input += q->target;
    a->tot.computed += q->target - q->cached;
    double wait = lmc_load(a, q);
    if (wait > 0) {
        q->ready_at = a->eng->now + sim_s_to_ns(wait);
        sim_engine_push(a->eng, q->ready_at, EV_WAKE, in->id, 0, NULL);
    }
    run_push(in, q);
    return 0;
}

typedef struct batch {
    int budget, decodes, chunks;
    double flops;
    double chunk_tokens, cached_x_tokens; /* Σ chunk, Σ chunk × tokens before it */
    int64_t kv_tokens, decode_ctx;
} batch;

/* q's next prefill chunk into b. false when q's prompt must go whole
 * (engine.chunked_prefill off) and what is left of the budget cannot hold
 * it: it waits for a step with room, and so does the queue behind it. */
static bool take_chunk(agg *a, areq *q, batch *b)
{
    if (q->done == q->hole_from && q->hole_to > q->hole_from) q->done = q->hole_to;
    if (q->done >= q->hole_to && q->ready_at > a->eng->now) return true;
    int32_t left = (q->done < q->hole_from ? q->hole_from : q->target) - q->done;
    if (!a->cfg->chunked_prefill && left > b->budget) return false;
    q->chunk = left < b->budget ? left : b->budget;
    if (q->chunk <= 0) return true;
    b->budget -= q->chunk;
    b->chunks++;
    b->flops += sim_cost_prefill_flops(&a->cost, q->done, q->chunk);
    b->chunk_tokens += q->chunk;
    b->cached_x_tokens += (double)q->chunk * q->done;
    b->kv_tokens += q->done + q->chunk;
    return true;
}

static void schedule(agg *a, ainst *in, batch *b)
{
    for (int i = 0; i < in->nrun; i++) in->run[i]->chunk = 0, in->run[i]->decoding = false;
    for (int i = 0; i < in->nrun && b->budget > 0; i++) {
        areq *q = in->run[i];
        if (q->done < q->target || q->tokens == 0) continue;
        if (!decode_page(a, in, q)) break;
        q->decoding = true;
        b->decodes++;
        b->budget--;
        b->kv_tokens += q->input_len + q->tokens;
        b->decode_ctx += q->input_len + q->tokens;
    }
    bool room = true; /* false: a whole prompt waits for a step with room (engine.chunked_prefill off) */
    for (int i = 0; i < in->nrun && b->budget > 0; i++)
        if (in->run[i]->done < in->run[i]->target) room &= take_chunk(a, in->run[i], b);
    while (room && b->budget > 0 && in->wait_head && in->nrun < a->cfg->decode_max_batch &&
           (in->wait_head->visible_iter <= in->started || in->nrun == 0)) {
        int rc = admit_head(a, in);
        if (rc == 1) break;
        if (rc == 0) room = take_chunk(a, in->run[in->nrun - 1], b);
    }
}

/* The share of the instance's capacity an iteration holds: the largest of
 * the token budget it spent, the sequences it runs against
 * cluster.decode_max_batch (max_num_seqs) and the HBM pages held. An
 * engine that iterates without pause is not saturated while this stays
 * below 1: a continuous-batching GPU is busy whenever anything runs, so
 * busy time says nothing of headroom (docs/definitions.md). */
static double iter_load(const agg *a, const ainst *in, const batch *b)
{
    double budget = 1 - (double)b->budget / a->cfg->max_num_batched_tokens;
    double seqs = (double)in->nrun / a->cfg->decode_max_batch;
    double pages = a->pp.capacity_blocks > 0 ? (double)kv_pic_footprint(in->pages) / a->pp.capacity_blocks : 0;
    return fmax(budget, fmax(seqs, pages));
}

void agg_iterate(agg *a, ainst *in)
{
    if (in->iterating) return;
    batch b = {.budget = a->cfg->max_num_batched_tokens};
    schedule(a, in, &b);
    if (b.decodes == 0 && b.chunks == 0) return;
    sim_mixed_batch mb = {b.flops,
                          b.chunks,
                          b.decodes,
                          b.chunk_tokens,
                          b.chunk_tokens > 0 ? b.cached_x_tokens / b.chunk_tokens : 0,
                          b.kv_tokens,
                          b.decode_ctx};
    double jit = sim_cost_moe_jit_s(&a->cost, b.decodes + b.chunk_tokens, &in->moe_jit);
    double t = sim_cost_mixed_iter_s(&a->cost, &mb) + jit;
    if (b.decodes + b.chunks > a->peak.seqs) { /* for the fit-range finding (agg.c) */
        a->peak.seqs = b.decodes + b.chunks;
        a->peak.share = sim_cost_iter_overhead_s(&a->cost, a->peak.seqs) / (t - jit);
    }
    if (jit > 0) {
        if (a->moe_compiles.n++ == 0) a->moe_compiles.first_ns = a->eng->now;
        a->moe_compiles.last_ns = a->eng->now;
        a->moe_compiles.s += jit;
    }
    for (int i = 0; i < in->nrun; i++)
        if (in->run[i]->chunk > 0) in->run[i]->prefill_gpu_s += t;
    in->iterating = true;
    in->started++;
    a->tot.iterations++;
    a->tot.busy_s += t;
    a->tot.load_s += t * iter_load(a, in, &b);
    sim_engine_push(a->eng, a->eng->now + sim_s_to_ns(t), EV_ITER, in->id, 0, NULL);
}

/* ---- an iteration ends -------------------------------------------------------- */

/* q emits its next token now; true when that was its last. */
static bool emit(agg *a, areq *q)
{
    q->tokens++;
    sim_topk_add(&q->topk, a->eng->now - q->last_token);
    q->last_token = a->eng->now;
    return q->tokens >= q->output_len;
}

/* q's part of the iteration that ended; true when q is finished. A prompt
 * completed emits the first token, or after a preemption the next one. */
static bool advance(agg *a, areq *q)
{
    if (q->chunk > 0) {
        q->done += q->chunk;
        q->chunk = 0;
        if (q->done == q->hole_from && q->hole_to > q->hole_from) q->done = q->hole_to;
        if (q->done < q->target) return false;
        q->kv = q->target;
        if (q->tokens > 0) return emit(a, q);
        lmc_store(a, q);
        q->tokens = 1;
        q->first_token = q->last_token = a->eng->now;
        if (q->output_len > 1) sim_topk_init(&q->topk, q->output_len - 1);
        return q->output_len <= 1;
    }
    if (!q->decoding) return false;
    q->decoding = false;
    q->kv++;
    return emit(a, q);
}

void agg_on_iter(agg *a, const sim_event *ev)
{
    ainst *in = &a->inst[ev->target];
    int kept = 0;
    for (int i = 0; i < in->nrun; i++) {
        areq *q = in->run[i];
        bool prefilling = q->tokens == 0;
        if (advance(a, q)) finish(a, in, q, SIM_STAGE_NONE);
        else if (prefilling && q->tokens == 1 && !agg_accepts_after_prefill(a, q))
            finish(a, in, q, SIM_STAGE_AFTER_PREFILL);
        else in->run[kept++] = q;
    }
    in->nrun = kept;
    in->iterating = false;
    agg_iterate(a, in);
}

/* With engine.async_scheduling the step after the running one was
 * scheduled when the running one started: a request arriving now joins the
 * one after that, or the next if nothing runs (vLLM's AsyncScheduler). */
void agg_enqueue(agg *a, ainst *in, areq *q)
{
    q->visible_iter = a->cfg->async_scheduling && in->iterating ? in->started + 1 : 0;
    wait_push(in, q, false);
    lmc_enqueue(a, q);
    in->queued_s += sim_est_prefill_s(&a->est, q->r->input_len, 0);
}

void agg_reject(agg *a, areq *q, sim_stage stage)
{
    write_row(a, q, stage);
    sim_serving_finished(a->run, q->r);
    agg_req_free(q);
}
