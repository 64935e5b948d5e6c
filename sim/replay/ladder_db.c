/* sim/replay/ladder_db.c — storing a hit-rate ladder in the ladder table of
 * a results database (`kvsim hitrate --ladder --db`; see ladder.h): one id
 * per invocation, one row per measured rung, keyed by the trace's
 * fingerprint and the engine and pool setup; `kvsim report` draws it
 * (reports/fig_ladder.c). */
#include "sim/replay/ladder.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "sim/results/results.h"
#include "sim/trace/trace.h"

/* The pool's capacity per tier, in engine blocks ("hbm 2560, dram inf"). */
static void describe_pool(const kv_ladder *l, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "pool capacity in %d-token blocks:", l->block_tokens);
    for (int k = 0; k < KV_LADDER_NTIERS && used < size; k++) {
        if (l->tier_blocks[k] <= 0) continue;
        if (l->tier_blocks[k] >= SIM_COUNT_UNBOUNDED)
            used += (size_t)snprintf(buf + used, size - used, " %s inf", kv_ladder_tier_names[k]);
        else
            used +=
                (size_t)snprintf(buf + used, size - used, " %s %" PRId64, kv_ladder_tier_names[k], l->tier_blocks[k]);
    }
}

static void rung_row(const kv_ladder *l, int i, sim_ladder_row *w)
{
    const kv_rung *g = &l->rung[i];
    w->rung = kv_rung_names[i];
    w->hit_rate_blocks = g->rate_blocks;
    w->hit_rate_tokens = g->rate_tokens;
    w->prefill_tokens_saved = g->hit_tokens;
    w->tokens = g->tokens;
    w->loss_tokens = kv_ladder_loss(l, i);
    w->ttft_p90_ms = i == KV_RUNG_ROUTED ? g->ttft_p90_ms : NAN;
    for (int k = 0; k < KV_LADDER_NTIERS; k++)
        w->tier_tokens[k] = g->has_tiers && l->tier_blocks[k] > 0 ? g->tier_tokens[k] : NAN;
}

int kv_ladder_db_write(const kv_ladder *l, const char *path, int64_t *id, sim_err *err)
{
    char setup[256];
    describe_pool(l, setup, sizeof setup);
    sim_ladder_row w = {.trace_path = l->trace,
                        .trace_block_tokens = l->trace_block_tokens,
                        .block_tokens = l->block_tokens,
                        .nodes = l->nodes,
                        .full_blocks = l->full_blocks,
                        .max_model_len = l->max_model_len,
                        .policy = l->policy,
                        .router = l->router,
                        .setup = setup};
    sim_results *db = NULL;
    int rc = sim_trace_fingerprint(l->trace, &w.trace_fingerprint, err) || sim_results_open(&db, path, err) ||
             sim_results_ladder_id(db, id, err);
    for (int i = 0; rc == 0 && i < KV_NRUNGS; i++) {
        if (!l->rung[i].done) continue;
        rung_row(l, i, &w);
        rc = sim_results_add_ladder(db, *id, &w, err);
    }
    sim_results_close(db);
    return rc ? -1 : 0;
}
