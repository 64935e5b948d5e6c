/* sim/serving/agg/conductor.c — what the conductor's policies (sched/) see
 * of aggregated instances, and their decisions: routing and admission.
 *
 * An aggregated instance is shown to the routers as a prefill instance (its
 * queue and the estimated prefill time of what waits there) and to the
 * admission policies as a decode instance too (its running batch, the KV
 * tokens its HBM pages hold against their capacity, the context its
 * decodes read): the request's decode will run where it prefills. A policy
 * that looks again after the prefill (`baseline`) is asked when the first
 * token is out, about the instance without the request (which it adds);
 * a "no" then wastes that prefill, as in Mooncake Table 4. */
#include <stdlib.h>

#include "sched/registry.h"
#include "sim/serving/agg/agg_int.h"

static void fill_views(agg *a)
{
    int64_t B = a->pp.block_tokens, cap = a->pp.capacity_blocks * B;
    for (int i = 0; i < a->n; i++) {
        const ainst *in = &a->inst[i];
        int64_t ctx = 0, held = kv_pic_footprint(in->pages) * B;
        for (int k = 0; k < in->nrun; k++) ctx += in->run[k]->kv;
        a->pview[i] =
            (sched_prefill_view){.node = i, .active = true, .queue_len = in->nwait + in->nrun, .queue_s = in->queued_s};
        a->dview[i] = (sched_decode_view){.node = i,
                                          .active = true,
                                          .batch = in->nrun,
                                          .pending = in->nwait,
                                          .kv_tokens = held,
                                          .kv_resident = held,
                                          .kv_capacity = cap,
                                          .ctx_tokens = ctx};
    }
}

/* Every request routed and not finished, as the conductor predicts it: a
 * decoding one has started (0); a prefilling or queued one starts after
 * its instance's queue. */
static int fill_inflight(agg *a)
{
    int n = 0;
    for (int i = 0; i < a->n; i++) n += a->inst[i].nrun + a->inst[i].nwait;
    if (n > a->inflight_cap)
        a->inflight = sim_xrealloc(a->inflight, (size_t)(a->inflight_cap = 2 * n) * sizeof *a->inflight);
    n = 0;
    for (int i = 0; i < a->n; i++) {
        const ainst *in = &a->inst[i];
        for (int k = 0; k < in->nrun; k++) {
            const areq *q = in->run[k];
            double start = q->tokens > 0 ? 0 : in->queued_s;
            a->inflight[n++] = (sched_inflight){start, (int64_t)q->r->input_len + q->r->output_len, 0, 0};
        }
        for (const areq *q = in->wait_head; q; q = q->next)
            a->inflight[n++] = (sched_inflight){in->queued_s, (int64_t)q->r->input_len + q->r->output_len, 0, 0};
    }
    return n;
}

sched_ctx agg_ctx(agg *a, bool with_inflight)
{
    fill_views(a);
    int n = with_inflight ? fill_inflight(a) : 0;
    return (sched_ctx){.cfg = a->cfg,
                       .est = &a->est,
                       .shadow = a->cache->view(a->cache_st),
                       .rng = a->rng_policy,
                       .now_ns = a->eng->now,
                       .n_prefill = a->n,
                       .prefill = a->pview,
                       .n_decode = a->n,
                       .decode = a->dview,
                       .kv_bytes_per_token = a->cost.kv_bytes_per_token,
                       .n_inflight = n,
                       .inflight = a->inflight,
                       .mean_decode_s = a->decode_n ? a->decode_s_sum / (double)a->decode_n : 0};
}

sim_stage agg_conduct(agg *a, const sim_request *req, int *inst)
{
    sched_ctx ctx = agg_ctx(a, a->admission->needs_inflight);
    sched_route route = {.transfer_from = -1};
    a->router->route(a->router_st, &ctx, req, &route);
    *inst = route.prefill;
    sched_decode_choice dec = {.decode = route.prefill};
    if (route.prefill >= 0) dec.load = sched_decode_load_now(&ctx, req, route.prefill, &dec.tbt_s);
    switch (a->admission->admit(a->admission_st, &ctx, req, &route, &dec)) {
    case SCHED_ACCEPT: return SIM_STAGE_NONE;
    case SCHED_REJECT_TTFT_SLO: return SIM_STAGE_TTFT_SLO;
    default: return SIM_STAGE_AT_ARRIVAL;
    }
}

/* The policy asks about the instance as it is now with q joining
 * (sched_decode_load_now adds q): q, prefilled here, already holds its
 * pages and its place in the batch, so the view leaves them out. */
bool agg_accepts_after_prefill(agg *a, const areq *q)
{
    if (!a->admission->after_prefill) return true;
    sched_ctx ctx = agg_ctx(a, false);
    sched_decode_view *d = &a->dview[q->inst];
    d->batch--;
    d->kv_resident -= q->kv < d->kv_resident ? q->kv : d->kv_resident;
    return a->admission->after_prefill(a->admission_st, &ctx, q->r, q->inst);
}
