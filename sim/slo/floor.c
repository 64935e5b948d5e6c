/* sim/slo/floor.c — step 0 of `kvsim plan slo`: the floor no cluster can
 * beat, from the cost model alone (no run), so that an impossible target
 * is reported at once with the number that blocks it.
 *
 * Every request's TTFT is at least its prefill compute on an idle node: the
 * queue, the prefix load and the KV stream only add (layer-wise overlap
 * gives max(load, compute) + ...). Its reusable prefix is at most what an
 * unbounded cache holding every earlier request's blocks gives it (a prefix
 * hit, docs/definitions.md: the leading run of its block keys seen
 * before), so floor_ttft(i) = sim_cost_prefill_s(n_i, hit_i), or with chunked
 * pipeline parallelism over G nodes the pipeline of sim/serving/disagg/cpp.c
 * with every stage free at once. Every inter-token interval is at least one
 * decode iteration of the request alone at its prompt's context, so
 * floor_tbt(i) = sim_cost_decode_iter_s(1, n_i) (requests of two or more
 * tokens, as the summary counts them). Since each request's metric is at
 * least its floor, each order statistic is too, and so is any quantile or
 * mean: the floors' p50/p90/p99/mean bound the run's from below. The share
 * of requests whose floors meet their own SLOs bounds SLO attainment from
 * above. (With cost.noise > 0 times vary around the model: the floor is the
 * noiseless one. Under a PIC cache model reuse is not a prefix: no TTFT
 * floor.) */
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/config/config.h"
#include "sim/cost/cost.h"
#include "sim/index/keyset.h"
#include "sim/slo/slo_int.h"
#include "sim/trace/trace.h"

/* What the floor needs of one request. */
typedef struct floor_req {
    int32_t n, hit, out; /* prompt tokens, reusable prefix tokens, answer tokens */
    double slo_ttft_ms, slo_tbt_ms;
} floor_req;

typedef struct floor_trace {
    floor_req *q;
    int64_t n, cap;
    double hit_tokens, tokens;
} floor_trace;

static void add_request(floor_trace *ft, const sim_request *req, sim_keyset *seen, const sim_config *cfg)
{
    int32_t h = 0;
    while (h < req->nblocks && sim_keyset_has(seen, req->keys[h])) h++;
    for (int32_t i = 0; i < req->nblocks; i++) sim_keyset_add(seen, req->keys[i]);
    int64_t hit = (int64_t)h * cfg->block_tokens;
    if (ft->n == ft->cap) ft->q = sim_xrealloc(ft->q, (size_t)(ft->cap = ft->cap ? 2 * ft->cap : 4096) * sizeof *ft->q);
    ft->q[ft->n++] = (floor_req){
        .n = req->input_len,
        .hit = (int32_t)(hit < req->input_len ? hit : req->input_len),
        .out = req->output_len,
        .slo_ttft_ms = req->slo_ttft_ms > 0 ? req->slo_ttft_ms : cfg->slo_ttft_ms,
        .slo_tbt_ms = req->slo_tbt_ms > 0 ? req->slo_tbt_ms : cfg->slo_tbt_ms,
    };
    ft->hit_tokens += ft->q[ft->n - 1].hit;
    ft->tokens += req->input_len;
}

/* The trace as the runs read it (sampling, limit), with each request's
 * prefix hit against every block before it. */
static int read_trace(const sim_config *cfg, floor_trace *ft, sim_err *err)
{
    sim_trace *t;
    if (sim_trace_open(&t, cfg->trace_path, &cfg->trace, err)) return -1;
    sim_keyset seen;
    sim_keyset_init(&seen, 1 << 16);
    sim_request *req;
    int rc;
    while ((rc = sim_trace_next(t, &req, err)) == 1) {
        add_request(ft, req, &seen, cfg);
        sim_request_free(req);
    }
    sim_keyset_free(&seen);
    if (rc == 0 && ft->n == 0 && sim_trace_all_skipped(t, err)) rc = -1;
    sim_trace_close(t);
    if (rc == 0 && ft->n == 0) rc = sim_errf(err, "%s: no requests to replay", cfg->trace_path);
    return rc < 0 ? -1 : 0;
}

/* A request alone on an idle pipeline of `stages` nodes (sim/serving/disagg/cpp.c
 * with every member free at once): chunk j leaves stage s at
 * max(its stage s−1, chunk j−1 at s) + c_j / stages. */
static double pipeline_s(const sim_cost *c, int32_t n, int32_t cached, int stages)
{
    double finish[64] = {0};
    for (int32_t o = cached; o < n; o += c->prefill_chunk) {
        int32_t len = n - o < c->prefill_chunk ? n - o : c->prefill_chunk;
        double cj = sim_cost_chunk_s(c, o, len);
        for (int s = 0; s < stages; s++) finish[s] = fmax(finish[s], s ? finish[s - 1] : 0) + cj / stages;
    }
    return finish[stages - 1];
}

static double ttft_floor_s(const sim_cost *c, const floor_req *q, int cpp, int threshold)
{
    if (cpp > 1 && q->n - q->hit > threshold) return pipeline_s(c, q->n, q->hit, cpp < 64 ? cpp : 64);
    return sim_cost_prefill_s(c, q->n, q->hit);
}

/* mean, p50, p90, p99 of v[0..n) (sorted in place), as the summary defines them. */
static void stats(double *v, int64_t n, double *out)
{
    static const double q[] = {0.5, 0.9, 0.99};
    out[0] = out[1] = out[2] = out[3] = 0;
    if (n == 0) return;
    gsl_sort(v, 1, (size_t)n);
    out[0] = gsl_stats_mean(v, 1, (size_t)n);
    for (int k = 0; k < 3; k++) out[k + 1] = gsl_stats_quantile_from_sorted_data(v, 1, (size_t)n, q[k]);
}

/* The floors of every target for CPP group cpp (threshold: cluster.cpp_threshold). */
static void floor_for(const sim_cost *c, const sim_cost *dc, const floor_trace *ft, bool ttft_valid, int cpp,
                      int threshold, sim_slo_floor *f)
{
    double *ttft = sim_xmalloc((size_t)ft->n * sizeof *ttft), *tbt = sim_xmalloc((size_t)ft->n * sizeof *tbt);
    int64_t ntbt = 0, ok = 0;
    for (int64_t i = 0; i < ft->n; i++) {
        const floor_req *q = &ft->q[i];
        ttft[i] = ttft_valid ? 1e3 * ttft_floor_s(c, q, cpp, threshold) : 0;
        double b = q->out > 1 ? 1e3 * sim_cost_decode_iter_s(dc, 1, q->n) : -1;
        if (q->out > 1) tbt[ntbt++] = b;
        ok += ttft[i] <= q->slo_ttft_ms && b <= q->slo_tbt_ms;
    }
    *f = (sim_slo_floor){.cpp = cpp, .threshold = threshold, .attainment = (double)ok / (double)ft->n};
    stats(ttft, ft->n, f->value);
    stats(tbt, ntbt, f->value + SIM_SLO_NSTATS);
    free(ttft);
    free(tbt);
}

static bool blocks(const sim_slo_opts *o, sim_slo_floor *f)
{
    f->blocks = o->attainment > f->attainment;
    for (int t = 0; t < SIM_SLO_NTARGETS; t++) f->blocks |= o->target[t] > 0 && o->target[t] < f->value[t];
    return f->blocks;
}

/* The prompt at the quantile of the first TTFT target (p50 for a mean),
 * alone on one node without and with its prefix hit. */
static void quantile_prompt(const sim_slo_opts *o, const sim_cost *c, const floor_trace *ft, sim_slo_result *r)
{
    static const double qs[SIM_SLO_NSTATS] = {0.5, 0.5, 0.9, 0.99};
    static const char *const names[SIM_SLO_NSTATS] = {"p50", "p50", "p90", "p99"};
    int k = 2;
    for (int t = SIM_SLO_NSTATS - 1; t >= 0; t--)
        if (o->target[t] > 0) k = t;
    double q = qs[k];
    snprintf(r->prompt_q, sizeof r->prompt_q, "%s", names[k]);
    size_t *idx = sim_xmalloc((size_t)ft->n * sizeof *idx);
    int *len = sim_xmalloc((size_t)ft->n * sizeof *len);
    for (int64_t i = 0; i < ft->n; i++) len[i] = ft->q[i].n;
    gsl_sort_int_index(idx, len, 1, (size_t)ft->n);
    const floor_req *p = &ft->q[idx[(size_t)floor(q * (double)(ft->n - 1) + 0.5)]];
    r->prompt_tokens = p->n;
    r->prompt_alone_ms = 1e3 * sim_cost_prefill_s(c, p->n, 0);
    r->prompt_hit_ms = 1e3 * sim_cost_prefill_s(c, p->n, p->hit);
    free(idx);
    free(len);
}

/* The lowest floor of target t over the CPP groups tried. */
static double lowest(const sim_slo_result *r, int t)
{
    double v = INFINITY;
    for (int i = 0; i < r->nfloor; i++) v = fmin(v, r->floor[i].value[t]);
    return v;
}

/* Why a TTFT target is out of reach, and what would lower the floor:
 * chunked pipeline parallelism over 8 nodes for every request (when it
 * would: a prompt of one cluster.prefill_chunk forms no pipeline), or
 * faster prefill (the floor is compute time: about 1 / FLOP/s). */
static void ttft_reason(const sim_slo_opts *o, const sim_slo_result *r, int t, char *buf, size_t n)
{
    double f = lowest(r, t), best = r->best_cpp.value[t];
    int u = snprintf(buf, n,
                     "%s cannot go below %.1f ms (target %g ms) on any cluster of %s instances: it is the %s of each "
                     "request's prefill alone on one idle instance, with the prefix an unbounded cache would give it "
                     "(%.3f of tokens); the %s prompt (%d tokens) alone takes %.1f ms, %.1f ms with its hit. ",
                     sim_slo_label(t), f, o->target[t], r->hardware, sim_slo_stat_key(t), r->hit_rate_tokens,
                     r->prompt_q, r->prompt_tokens, r->prompt_alone_ms, r->prompt_hit_ms);
    if (u < 0 || (size_t)u >= n) return;
    if (r->aggregated)
        snprintf(buf + u, n - (size_t)u,
                 "About %.2fx the prefill FLOP/s per instance (GPUs x TFLOP/s x cost.prefill_mfu) would reach it",
                 f / o->target[t]);
    else if (best < f)
        snprintf(buf + u, n - (size_t)u,
                 "Chunked pipeline parallelism would lower it to %.1f ms (--cpp 8 --set cluster.cpp_threshold=0), "
                 "and about %.2fx the prefill FLOP/s per instance (GPUs x TFLOP/s x cost.prefill_mfu) to the target",
                 best, f / o->target[t]);
    else
        snprintf(buf + u, n - (size_t)u,
                 "Chunked pipeline parallelism would not lower it (%.1f ms over 8 nodes: its prompts are too short "
                 "to pipeline); about %.2fx the prefill FLOP/s per instance (GPUs x TFLOP/s x cost.prefill_mfu) would "
                 "reach it",
                 best, f / o->target[t]);
}

/* r->reason for a plan every CPP group of which is blocked. */
static void floor_reason(const sim_slo_opts *o, sim_slo_result *r)
{
    size_t n = sizeof r->reason;
    for (int t = 0; t < SIM_SLO_NTARGETS; t++) {
        if (!(o->target[t] > 0 && o->target[t] < lowest(r, t))) continue;
        if (sim_slo_is_ttft(t)) ttft_reason(o, r, t, r->reason, n);
        else
            snprintf(r->reason, n,
                     "%s cannot go below %.2f ms (target %g ms) on %s instances: one decode iteration of each request "
                     "alone (weights and its KV read from HBM, plus cost.decode_overhead_ms); it takes more HBM "
                     "bandwidth per instance or a smaller model",
                     sim_slo_label(t), lowest(r, t), o->target[t], r->hardware);
        return;
    }
    double a = 0;
    for (int i = 0; i < r->nfloor; i++) a = fmax(a, r->floor[i].attainment);
    if (o->attainment > a)
        snprintf(r->reason, n,
                 "SLO attainment cannot exceed %.4f (target %g): the rest of the requests miss their TTFT or TBT SLO "
                 "(slo.ttft_ms, slo.tbt_ms or the trace's) even alone on an idle cluster",
                 a, o->attainment);
    else snprintf(r->reason, n, "every CPP group tried (--cpp) is blocked by a floor: see the floor lines");
}

/* The CPP groups worth searching: those no floor blocks; when no prompt is
 * longer than cluster.cpp_threshold no pipeline ever forms, every group
 * runs alike, and the first one stands for them all. */
static void searched_groups(slo_plan *pl)
{
    sim_slo_result *r = pl->r;
    bool never = r->max_input <= r->cpp_threshold;
    size_t first = strlen(r->note), used = first;
    for (int i = 0; i < r->nfloor; i++) {
        int g = r->floor[i].cpp;
        bool dup = never && pl->ncpp > 0 && !r->floor[i].blocks;
        if (!r->floor[i].blocks && !dup) pl->cpp[pl->ncpp++] = g;
        if ((r->floor[i].blocks || dup) && used < sizeof r->note)
            used += (size_t)snprintf(r->note + used, sizeof r->note - used, "%scpp_group %d not searched: %s",
                                     used ? "; " : "", g,
                                     dup ? "no prompt is longer than cluster.cpp_threshold" : "a floor blocks it");
    }
    if (pl->ncpp == 0) r->note[first] = 0; /* all blocked: the floor lines say so */
}

int slo_floor(slo_plan *pl, const sim_config *cfg, sim_err *err)
{
    const sim_slo_opts *o = pl->o;
    sim_slo_result *r = pl->r;
    sim_cost c, dc; /* the prefill side's (TTFT) and the decode side's (TBT) */
    floor_trace ft = {0};
    if (sim_cost_init_on(&c, cfg, &cfg->prefill_hw, err) || sim_cost_init_on(&dc, cfg, &cfg->decode_hw, err) ||
        read_trace(cfg, &ft, err))
        return free(ft.q), -1;
    bool ttft_valid = !strcmp(cfg->pic, "none");
    if (!ttft_valid)
        snprintf(r->note, sizeof r->note, "no TTFT floor under kvstore.pic = %s (its reuse is not a prefix)", cfg->pic);
    r->requests = ft.n;
    r->hit_rate_tokens = ft.tokens > 0 ? ft.hit_tokens / ft.tokens : 0;
    for (int64_t i = 0; i < ft.n; i++) r->max_input = ft.q[i].n > r->max_input ? ft.q[i].n : r->max_input;
    for (int i = 0; i < (pl->agg ? 1 : o->ncpp); i++) { /* an aggregated cluster has no CPP: group 1 */
        floor_for(&c, &dc, &ft, ttft_valid, pl->agg ? 1 : o->cpp[i], r->cpp_threshold, &r->floor[r->nfloor]);
        blocks(o, &r->floor[r->nfloor++]);
    }
    floor_for(&c, &dc, &ft, ttft_valid, 8, 0, &r->best_cpp);
    quantile_prompt(o, &c, &ft, r);
    free(ft.q);
    searched_groups(pl);
    if (pl->ncpp == 0) {
        r->status = SIM_SLO_INFEASIBLE_FLOOR;
        floor_reason(o, r);
    }
    return 0;
}
