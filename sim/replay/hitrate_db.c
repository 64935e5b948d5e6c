/* sim/replay/hitrate_db.c — storing cache-only replay points in the hitrate
 * table of a results database (`kvsim hitrate --db`; see hitrate.h): one
 * hitrate id per invocation, rows keyed by the trace's fingerprint, the
 * policy and the rest of the setup, the setup's infinite cache stored
 * once (capacity NULL). */
#include "sim/replay/hitrate.h"

#include <math.h>
#include <stdlib.h>

#include "sim/results/results.h"
#include "sim/trace/trace.h"

struct kv_hitrate_db {
    sim_results *db;
    int64_t id;
    sim_hitrate_row row;
    char setup[512];
};

int kv_hitrate_db_open(kv_hitrate_db **out, const char *path, const kv_hitrate_spec *s, const char *model,
                       double kv_bytes_per_token, sim_err *err)
{
    *out = NULL;
    if (!path) return 0;
    kv_hitrate_db *k = sim_xcalloc(1, sizeof *k);
    kv_hitrate_describe(s, k->setup, sizeof k->setup);
    k->row = (sim_hitrate_row){.trace_path = s->trace,
                               .block_tokens = s->block_tokens,
                               .policy = s->policy,
                               .setup = k->setup,
                               .model = model,
                               .kv_bytes_per_token = kv_bytes_per_token};
    if (sim_trace_fingerprint(s->trace, &k->row.trace_fingerprint, err) || sim_results_open(&k->db, path, err) ||
        sim_results_hitrate_id(k->db, &k->id, err)) {
        kv_hitrate_db_close(k);
        return -1;
    }
    *out = k;
    return 0;
}

static int put(kv_hitrate_db *k, double tokens, const kv_replay_result *r, sim_err *err)
{
    k->row.capacity_tokens = tokens;
    k->row.hit_rate_blocks = r->hit_rate_blocks;
    k->row.hit_rate_tokens = r->hit_rate_tokens;
    return sim_results_add_hitrate(k->db, k->id, &k->row, err);
}

int kv_hitrate_db_put_max(kv_hitrate_db *k, const kv_replay_result *max, sim_err *err)
{
    return k ? put(k, INFINITY, max, err) : 0;
}

int kv_hitrate_db_put(kv_hitrate_db *k, double capacity_tokens, const kv_replay_result *r, sim_err *err)
{
    return k && !isinf(capacity_tokens) ? put(k, capacity_tokens, r, err) : 0;
}

void kv_hitrate_db_close(kv_hitrate_db *k)
{
    if (!k) return;
    sim_results_close(k->db);
    free(k);
}
