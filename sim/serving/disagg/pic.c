/* sim/serving/disagg/pic.c — position-independent caching in the timed
 * replay (kvstore.pic = prefix | epic | cacheblend | mepic; docs/pic.md,
 * "Replays"): one HBM block store (sim/store/pic.h) per instance.
 *
 * A prefill instance admits the head of its queue only when free plus
 * evictable HBM covers what the request adds to the footprint (MEPIC's
 * admission); otherwise the request waits at the head until a request
 * holding blocks there finishes. A request too large for the whole store
 * is rejected before prefill (SIM_STAGE_AT_ARRIVAL); a store that no
 * request fits fails the run (exit 2) with the arithmetic instead. An
 * admitted request holds its blocks from prefill start to completion — its
 * prompt KV stays resident while it decodes, as on MEPIC's colocated GPU;
 * decode KV is counted on the decode instances as before. Its prefill
 * computes only the tokens the policy recomputes (the reused ones are
 * already in HBM: no load time), attending to its whole prompt.
 *
 * Capacity per instance: kvstore.hbm_bytes when set, else the HBM left
 * for KV after weights (cluster.decode_hbm_frac), in blocks of
 * kvstore.pic_block_tokens; "inf" is unbounded (sim_count_in). */
#include <math.h>
#include <stdlib.h>

#include "sim/serving/disagg/cluster_int.h"

int sim_pic_check(const sim_config *cfg, sim_err *err)
{
    if (kv_cache_model_lookup(cfg->pic)) return 0;
    if (!kv_pic_policy_lookup(cfg->pic))
        return sim_errf(err, "kvstore.pic: unknown cache model '%s'%s (see kvsim policies)", cfg->pic,
                        kv_pic_suggest(cfg->pic));
    if (cfg->n_faults > 0)
        return sim_errf(err,
                        "kvstore.pic: '%s' with faults is not modelled (a failed instance's HBM store would "
                        "survive it); drop the faults or use kvstore.pic = \"none\"",
                        cfg->pic);
    kv_pic_params p = {.block_tokens = cfg->pic_block_tokens,
                       .prefix_tokens = cfg->trace.block_tokens,
                       .cacheblend_ratio = cfg->pic_cacheblend_ratio,
                       .epic_tokens = cfg->pic_epic_tokens};
    return kv_pic_params_check(&p, &kv_pic_config_names, err);
}

void sim_pic_setup(cluster *c)
{
    const sim_config *cfg = c->cfg;
    if (!(c->pic = kv_pic_policy_lookup(cfg->pic))) return;
    double bytes_per_block = c->cost.kv_bytes_per_token * cfg->pic_block_tokens;
    double tokens = cfg->hbm_bytes > 0 ? cfg->hbm_bytes / c->cost.kv_bytes_per_token : (double)c->kv_capacity;
    c->pic_params = (kv_pic_params){
        .block_tokens = cfg->pic_block_tokens,
        .prefix_tokens = cfg->trace.block_tokens,
        .cacheblend_ratio = cfg->pic_cacheblend_ratio,
        .epic_tokens = cfg->pic_epic_tokens,
        .capacity_blocks = sim_count_in(tokens * c->cost.kv_bytes_per_token, bytes_per_block),
        .private_counts = true,
    };
    c->pic_st = sim_xcalloc((size_t)c->n_inst, sizeof *c->pic_st);
    for (int i = 0; i < c->n_inst; i++) c->pic_st[i] = kv_pic_create(c->pic, &c->pic_params);
}

void sim_pic_free(cluster *c)
{
    for (int i = 0; c->pic_st && i < c->n_inst; i++) kv_pic_destroy(c->pic_st[i]);
    free(c->pic_st);
}

static void tally(cluster *c, const kv_pic_outcome *o)
{
    c->pic_sum.input += o->input_tokens;
    c->pic_sum.computed += o->computed_tokens;
    c->pic_sum.positions += o->computed_positions;
    c->pic_sum.chunks += o->chunks;
    c->pic_sum.chunk_hits += o->chunk_hits;
    c->pic_sum.unsegmented += o->unsegmented;
}

/* A store no request fits: the run has ended, requests reached the stores
 * and every one was rejected for size. Nothing was ever admitted, so the
 * stores were empty at each rejection and each need measured was the
 * request's alone: the smallest of them against the capacity is the
 * arithmetic of the message, and the run fails (exit 2) rather than
 * report a cluster that served nothing. */
static void fail_if_none_fits(cluster *c)
{
    if (!sim_serving_done(c->run) || c->pic_sum.admitted > 0 || c->pic_sum.rejected == 0) return;
    const sim_config *cfg = c->cfg;
    double page = c->cost.kv_bytes_per_token * cfg->pic_block_tokens;
    char held[160];
    if (cfg->hbm_bytes > 0) snprintf(held, sizeof held, "kvstore.hbm_bytes: %.17g bytes", cfg->hbm_bytes);
    else
        snprintf(held, sizeof held, "the HBM left for KV after weights (cluster.decode_hbm_frac %g): %.17g bytes",
                 cfg->decode_hbm_frac, c->dcost.hbm_kv_bytes);
    sim_errf(c->run->err,
             "%s per instance holds %lld pages of %d tokens (%.17g bytes of %s KV a page); no request of trace %s "
             "fits in it alone: the smallest, request %lld (line %lld), needs %lld pages (%.17g bytes), and all "
             "%lld that reached the store were rejected. Raise kvstore.hbm_bytes to at least %.17g (\"inf\": "
             "unbounded)",
             held, (long long)c->pic_params.capacity_blocks, cfg->pic_block_tokens, page, cfg->model.name,
             cfg->trace_path, (long long)c->pic_sum.least_index, (long long)c->pic_sum.least_line,
             (long long)c->pic_sum.least_need, (double)c->pic_sum.least_need * page, (long long)c->pic_sum.rejected,
             (double)c->pic_sum.least_need * page);
    c->run->failed = true;
}

/* The head of in's queue cannot fit even alone (it needs `need` blocks):
 * rejected before prefill. */
static void reject_head(cluster *c, instance *in, int64_t need)
{
    req_state *q = queue_pop(&in->queue);
    in->queued_est_s = in->queue.n ? in->queued_est_s - q->route.service_s : 0;
    if (c->pic_sum.rejected++ == 0 || need < c->pic_sum.least_need) {
        c->pic_sum.least_need = need;
        c->pic_sum.least_index = q->r->index;
        c->pic_sum.least_line = q->r->line;
    }
    sim_cluster_release_decode(c, q);
    sim_cluster_finish(c, q, SIM_STAGE_AT_ARRIVAL);
    fail_if_none_fits(c);
}

bool sim_pic_admit_head(cluster *c, instance *in, int32_t *cached)
{
    kv_pic *s = c->pic_st[in->id];
    for (req_state *q; (q = in->queue.head) != NULL;) {
        kv_pic_outcome o;
        int rc = kv_pic_admit(s, q->r, true, &q->pic, &o);
        if (rc == 0) {
            q->pic_held = true;
            q->pic_node = in->id;
            c->pic_sum.admitted++;
            tally(c, &o);
            *cached = (int32_t)(o.input_tokens - o.computed_tokens);
            return true;
        }
        if (rc == 1 && kv_pic_footprint(s) > 0) {
            c->pic_sum.waits += !q->pic_waited;
            q->pic_waited = true;
            return false;
        }
        reject_head(c, in, o.adds_blocks);
    }
    sim_cluster_check_drained(c, in);
    return false;
}

double sim_pic_used(const cluster *c, int inst)
{
    return (double)kv_pic_footprint(c->pic_st[inst]) / (double)c->pic_params.capacity_blocks;
}

void sim_pic_summarize(const cluster *c, json_t *summary)
{
    if (!c->pic) return;
    kv_pic_peak at = kv_pic_peak_of(c->pic_st, c->n_inst);
    int64_t peak = at.footprint;
    double in = (double)c->pic_sum.input, bb = c->cost.kv_bytes_per_token * c->pic_params.block_tokens;
    json_t *o = json_pack(
        "{s:s, s:i, s:I, s:f, s:f, s:f, s:I, s:f, s:I, s:I, s:I, s:I}", "pic", kv_pic_policy_name(c->pic),
        "pic_block_tokens", c->pic_params.block_tokens, "pic_capacity_blocks",
        (json_int_t)c->pic_params.capacity_blocks, "recompute_fraction", in > 0 ? (double)c->pic_sum.computed / in : 0,
        "computed_positions_fraction", in > 0 ? (double)c->pic_sum.positions / in : 0, "chunk_hit_rate",
        c->pic_sum.chunks ? (double)c->pic_sum.chunk_hits / (double)c->pic_sum.chunks : 0, "peak_footprint_blocks",
        (json_int_t)peak, "peak_footprint_bytes", (double)peak * bb, "pic_chunks", (json_int_t)c->pic_sum.chunks,
        "pic_chunk_hits", (json_int_t)c->pic_sum.chunk_hits, "pic_waited", (json_int_t)c->pic_sum.waits, "pic_rejected",
        (json_int_t)c->pic_sum.rejected);
    json_object_set_new(o, "pic_unsegmented_requests", json_integer(c->pic_sum.unsegmented));
    kv_pic_peak_json(&at, o);
    json_object_update(summary, o);
    json_decref(o);
}
