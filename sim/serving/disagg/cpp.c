/* sim/serving/disagg/cpp.c — chunked pipeline parallelism (Mooncake §3.3).
 *
 * Prefill instances form groups of cluster.cpp_group consecutive nodes. A
 * request whose uncached part exceeds cluster.cpp_threshold tokens is
 * prefilled by its instance's whole group as a pipeline: the uncached tokens
 * are cut into chunks of cluster.prefill_chunk, and each of the S members
 * runs l/S of the layers (one pipeline stage) for every chunk. Chunk j at
 * stage s starts when stage s finished chunk j−1, stage s−1 finished chunk
 * j, and the member itself is free:
 *     finish(j, s) = max(finish(j−1, s), finish(j, s−1), free(s)) + c_j / S
 * where c_j is the chunk's compute on one node (Eq. 1 difference plus the
 * chunk overhead). The prefill ends when the last chunk leaves the last
 * stage; each member is occupied until its own stage is done.
 *
 * Decisions where the paper is silent: a member serving another request
 * joins the pipeline when that request ends; stage-boundary activation
 * transfers are not charged (the paper overlaps them with compute); the
 * prefix KV must be loaded before the first stage starts; the conductor's
 * estimates stay those of one node (conservative); the first member is the
 * routed instance, which also streams the KV to decode. */
#include "sim/serving/disagg/cluster_int.h"

#include <math.h>

/* Members of in's group that can run a stage now: in itself first, then the
 * other prefill-role instances of the group that are not down or switching. */
static int group_members(const cluster *c, const instance *in, int *out)
{
    int x = c->cfg->cpp_group, first = in->id / x * x, n = 0;
    out[n++] = in->id;
    for (int id = first; id < first + x && id < c->n_inst; id++) {
        const instance *m = &c->inst[id];
        if (id != in->id && m->role == ROLE_PREFILL && (m->state == ST_ACTIVE || m->state == ST_DRAINING))
            out[n++] = id;
    }
    return n;
}

bool sim_cpp_applies(const cluster *c, const sim_request *r, int32_t cached_tokens)
{
    return c->cfg->cpp_group > 1 && r->input_len - cached_tokens > c->cfg->cpp_threshold;
}

/* Seconds from now until member m can start a stage. */
static double member_free_s(const cluster *c, const instance *m, double load_s)
{
    int64_t now = c->eng->now, busy = now;
    if (m->running && m->running->first_token > busy) busy = m->running->first_token;
    if (m->blocked_until > busy) busy = m->blocked_until;
    return fmax(load_s, sim_ns_to_s(busy - now));
}

double sim_cpp_prefill(cluster *c, instance *in, const sim_request *r, int32_t cached_tokens, double load_s,
                       double *gpu_s)
{
    int ids[c->cfg->cpp_group];
    int stages = group_members(c, in, ids);
    double finish[stages];
    for (int s = 0; s < stages; s++) finish[s] = s ? member_free_s(c, &c->inst[ids[s]], load_s) : load_s;
    *gpu_s = 0;
    for (int32_t o = cached_tokens; o < r->input_len; o += c->cfg->prefill_chunk) {
        int32_t len = r->input_len - o < c->cfg->prefill_chunk ? r->input_len - o : c->cfg->prefill_chunk;
        double cj = sim_cost_chunk_s(&c->cost, o, len) * sim_cluster_noise(c);
        *gpu_s += cj;
        for (int s = 0; s < stages; s++) finish[s] = fmax(finish[s], s ? finish[s - 1] : 0) + cj / stages;
    }
    for (int s = 1; s < stages; s++) {
        instance *m = &c->inst[ids[s]];
        m->blocked_until = c->eng->now + sim_s_to_ns(finish[s]);
    }
    return finish[stages - 1];
}
