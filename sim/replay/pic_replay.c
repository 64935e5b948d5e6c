/* sim/replay/pic_replay.c — the cache-only PIC replay (pic_replay.h). */
#include "sim/replay/pic_replay.h"

#include <stdlib.h>
#include <string.h>

/* A request without segments, as one unique prompt segment: it shares
 * nothing, which is what its missing segments say about it. */
static sim_request *as_unique_prompt(sim_request *r)
{
    sim_request *u = sim_xmalloc(sizeof *u + sizeof *u->segs);
    *u = *r;
    u->nblocks = 0;
    u->keys = NULL;
    u->hash_ids = NULL;
    u->seg_ids = NULL;
    u->segs = (sim_segment *)(u + 1);
    u->segs[0] = (sim_segment){.kind = SIM_SEG_PROMPT, .len = r->input_len, .unique = true};
    u->nsegs = 1;
    sim_request_free(r);
    return u;
}

int kv_pic_trace_load(kv_pic_trace *t, const char *path, int prefix_tokens, sim_err *err)
{
    *t = (kv_pic_trace){.path = sim_xstrdup(path)};
    sim_trace_opts opts = sim_trace_default_opts();
    opts.block_tokens = prefix_tokens;
    sim_trace *tr;
    if (sim_trace_open(&tr, path, &opts, err)) return -1;
    int64_t cap = 0;
    sim_request *r;
    int rc;
    while ((rc = sim_trace_next(tr, &r, err)) == 1) {
        if (t->n == cap) t->req = sim_xrealloc(t->req, (size_t)(cap = cap ? 2 * cap : 1024) * sizeof *t->req);
        if (r->nsegs) t->segment_requests++;
        else r = as_unique_prompt(r);
        t->req[t->n++] = r;
    }
    sim_trace_close(tr);
    if (rc == 0 && t->segment_requests == 0)
        rc = sim_errf(err, "%s: no request has \"segments\" (PIC policies need a segment trace: docs/trace.md)", path);
    return rc < 0 ? -1 : 0;
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
