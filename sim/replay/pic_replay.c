/* sim/replay/pic_replay.c — the cache-only PIC replay (pic_replay.h). */
#include "sim/replay/pic_replay.h"

#include <stdlib.h>
#include <string.h>

#include "sim/index/keymap.h"

int kv_pic_trace_load(kv_pic_trace *t, const char *path, const sim_trace_opts *opts, sim_err *err)
{
    *t = (kv_pic_trace){.path = sim_xstrdup(path)};
    sim_trace *tr;
    if (sim_trace_open(&tr, path, opts, err)) return -1;
    int64_t cap = 0;
    sim_request *r;
    int rc;
    while ((rc = sim_trace_next(tr, &r, err)) == 1) {
        if (t->n == cap) t->req = sim_xrealloc(t->req, (size_t)(cap = cap ? 2 * cap : 1024) * sizeof *t->req);
        t->segment_requests += r->nsegs > 0;
        t->req[t->n++] = r;
    }
    sim_trace_close(tr);
    if (rc == 0 && t->segment_requests == 0)
        rc = sim_errf(err, "%s: no request has \"segments\" (PIC policies need a segment trace: docs/trace.md)", path);
    return rc < 0 ? -1 : 0;
}

void kv_pic_trace_adopt(kv_pic_trace *t, const char *path, sim_request **req, int64_t n)
{
    *t = (kv_pic_trace){.path = sim_xstrdup(path), .req = req, .n = n};
    for (int64_t i = 0; i < n; i++) t->segment_requests += req[i]->nsegs > 0;
}

void kv_pic_trace_free(kv_pic_trace *t)
{
    for (int64_t i = 0; i < t->n; i++) sim_request_free(t->req[i]);
    free(t->req);
    free(t->path);
    *t = (kv_pic_trace){0};
}

static void tally(kv_pic_result *out, const kv_pic_outcome *o)
{
    out->requests++;
    out->input_tokens += o->input_tokens;
    out->computed_tokens += o->computed_tokens;
    out->computed_positions += o->computed_positions;
    out->chunks += o->chunks;
    out->chunk_hits += o->chunk_hits;
}

static void finish(kv_pic_result *out, const kv_pic *s)
{
    double in = (double)out->input_tokens;
    out->peak_footprint_blocks = kv_pic_peak_footprint(s);
    out->at_peak = kv_pic_peak_state(s);
    out->evictions = kv_pic_evictions(s);
    out->recompute_fraction = in > 0 ? (double)out->computed_tokens / in : 0;
    out->position_fraction = in > 0 ? (double)out->computed_positions / in : 0;
    out->chunk_hit_rate = out->chunks ? (double)out->chunk_hits / (double)out->chunks : 0;
}

void kv_pic_replay(const kv_pic_trace *t, const kv_pic_policy *pol, const kv_pic_params *params, int64_t window,
                   kv_pic_result *out)
{
    *out = (kv_pic_result){0};
    kv_pic *s = kv_pic_create(pol, params);
    int64_t w = window < t->n ? window : t->n;
    kv_pic_ticket *ring = sim_xcalloc((size_t)(w > 0 ? w : 1), sizeof *ring);
    for (int64_t i = 0; i < t->n; i++) {
        kv_pic_ticket *slot = &ring[i % w];
        if (i >= w) kv_pic_release(s, slot);
        kv_pic_outcome o;
        kv_pic_admit(s, t->req[i], false, slot, &o);
        tally(out, &o);
    }
    for (int64_t i = t->n - w; i < t->n; i++)
        if (i >= 0) kv_pic_release(s, &ring[i % w]);
    finish(out, s);
    for (int64_t i = 0; i < w; i++) kv_pic_ticket_free(&ring[i]);
    free(ring);
    kv_pic_destroy(s);
}

/* ---- segment trace statistics ------------------------------------------ */

typedef struct chunk_seen {
    int64_t offset; /* token offset of its first occurrence */
    int32_t count;
    bool moved; /* seen at another offset since */
} chunk_seen;

static void count_chunks(const kv_pic_trace *t, kv_pic_trace_stats *out)
{
    sim_keymap idx;
    sim_keymap_init(&idx, 1024);
    chunk_seen *seen = NULL;
    int64_t nseen = 0, cap = 0, occ = 0, repeats = 0;
    for (int64_t i = 0; i < t->n; i++) {
        int64_t pos = 0;
        for (int32_t j = 0; j < t->req[i]->nsegs; pos += t->req[i]->segs[j++].len) {
            const sim_segment *s = &t->req[i]->segs[j];
            if (s->kind != SIM_SEG_CHUNK) continue;
            uint64_t key = kv_pic_chunk_key(s);
            int64_t k = sim_keymap_get(&idx, key);
            occ++;
            if (k < 0) {
                if (nseen == cap) seen = sim_xrealloc(seen, (size_t)(cap = cap ? 2 * cap : 1024) * sizeof *seen);
                seen[nseen] = (chunk_seen){.offset = pos, .count = 1};
                sim_keymap_put(&idx, key, nseen++);
                continue;
            }
            repeats++;
            seen[k].count++;
            seen[k].moved |= seen[k].offset != pos;
        }
    }
    int64_t reused = 0, moved = 0;
    for (int64_t k = 0; k < nseen; k++) {
        reused += seen[k].count > 1;
        moved += seen[k].moved;
    }
    out->chunks_per_request = t->segment_requests ? (double)occ / (double)t->segment_requests : 0;
    out->chunk_repeat_share = occ ? (double)repeats / (double)occ : 0;
    out->multi_position_share = reused ? (double)moved / (double)reused : 0;
    free(seen);
    sim_keymap_free(&idx);
}

void kv_pic_trace_stats_compute(const kv_pic_trace *t, int prefix_tokens, kv_pic_trace_stats *out)
{
    *out = (kv_pic_trace_stats){.segment_requests = t->segment_requests};
    count_chunks(t, out);
    kv_pic_params p = {.block_tokens = 16,
                       .prefix_tokens = prefix_tokens,
                       .cacheblend_ratio = 0.15,
                       .epic_tokens = 16,
                       .capacity_blocks = SIM_COUNT_UNBOUNDED};
    kv_pic_result r;
    int64_t in, computed;
    if (kv_pic_prefix_unbounded(&p, t->req, t->n, &in, &computed)) {
        out->reusable_fraction_prefix = 1 - (in > 0 ? (double)computed / (double)in : 0);
    } else {
        kv_pic_replay(t, kv_pic_policy_lookup("prefix"), &p, 1, &r);
        out->reusable_fraction_prefix = 1 - r.recompute_fraction;
    }
    kv_pic_replay(t, kv_pic_policy_lookup("mepic"), &p, 1, &r);
    out->reusable_fraction_pic = 1 - r.recompute_fraction;
}

int kv_pic_trace_stats_of(const char *path, const sim_trace_opts *opts, sim_request **kept, int64_t n,
                          kv_pic_trace_stats *out, sim_err *err)
{
    kv_pic_trace t;
    int rc = 0;
    if (kept) kv_pic_trace_adopt(&t, path, kept, n);
    else rc = kv_pic_trace_load(&t, path, opts, err);
    if (rc == 0) kv_pic_trace_stats_compute(&t, opts->block_tokens, out);
    kv_pic_trace_free(&t);
    return rc;
}
