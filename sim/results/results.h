/* sim/results/results.h — the SQLite results database (docs/architecture.md §9).
 *
 * Tables:
 *   runs      one row per run: resolved config JSON and its hash, trace path
 *             and XXH64 fingerprint, seed, kvsim version, wall time, summary
 *   requests  one row per request: arrival, lengths, instances, hits, TTFT,
 *             TBT, end-to-end, prefill GPU time, status and rejection stage
 *   samples   time series per instance: role, state, queue length (waiting),
 *             load, batch, KV use, running (in service)
 *   replicas  replica counts of replicated keys over time (Fig. 18)
 *   hitrate   hit rate vs capacity points of `kvsim hitrate --db` (cache-only
 *             replay, Fig. 16): one id per invocation; capacity_tokens NULL
 *             is the infinite cache (the trace's theoretical maximum)
 *   ladder    the rungs of `kvsim hitrate --ladder --db` (docs/hitrate-ladder.md):
 *             one id per invocation, one row per measured rung; the tiers'
 *             saved tokens NULL where the rung has no split or the tier no
 *             capacity, ttft_p90_ms NULL but for the routed rung
 *
 * A run is written in one transaction with prepared statements (WAL mode on
 * file databases); the readers' indexes are created when it commits. The
 * summary is tallied in memory as request rows arrive (exact percentiles from
 * per-request arrays: 24 bytes per request), never queried back. Without a
 * path the database is SQLite's private temporary one and no request, sample
 * or replica rows are written to it: nothing could read them. */
#ifndef SIM_RESULTS_H
#define SIM_RESULTS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "sim/util.h"

#define KVSIM_VERSION "0.1.0"

typedef struct sim_results sim_results;

typedef struct sim_run_info {
    const char *config_json;
    uint64_t config_hash;
    const char *trace_path;
    uint64_t trace_fingerprint;
    uint64_t seed;
    bool no_request_rows; /* keep only the summary of the requests (metrics.request_rows = false) */
    bool no_sample_rows;  /* no samples or replicas rows (metrics.sample_rows = false) */
} sim_run_info;

typedef enum sim_stage {
    SIM_STAGE_NONE = 0,      /* completed */
    SIM_STAGE_AT_ARRIVAL,    /* rejected before prefill (early) */
    SIM_STAGE_AFTER_PREFILL, /* rejected after prefill: wasted prefill */
    SIM_STAGE_TTFT_SLO,      /* HTTP 429 of Algorithm 1 */
    SIM_STAGE_LOST,          /* its instance failed and cluster.on_failure = "lose" */
    SIM_NSTAGES
} sim_stage;

extern const char *const sim_stage_names[SIM_NSTAGES];

typedef struct sim_request_row {
    int64_t id, line;
    double arrival_ms;
    int32_t input_len, output_len, blocks;
    int prefill_inst, decode_inst; /* -1 = none */
    int32_t hit_blocks, hit_tokens, remote_blocks;
    double prefill_start_ms, first_token_ms, done_ms; /* < 0 = never happened */
    double ttft_ms, tbt_ms, e2e_ms;                   /* < 0 = undefined */
    double itl_ms; /* mean inter-token interval: (last − first token) / (output_len − 1); < 0 = undefined */
    double prefill_gpu_s;
    int32_t tokens;
    int32_t retries;     /* restarts after instance failures, and preemptions */
    int32_t preemptions; /* of those, decode-memory preemptions (recompute or swap) */
    sim_stage stage;
    int effective;
    double left_ms; /* when it left the system (completed, rejected, lost): the steady-state window; not a column */
} sim_request_row;

/* One instance at one time (docs/definitions.md, "The samples table"). */
typedef struct sim_sample_row {
    double t_ms;
    int instance;
    const char *role;
    const char *state; /* active | draining | switching | down | off */
    int queue_len;     /* requests waiting there, not in service */
    double load;
    int batch;
    double kv_used;
    int running;         /* requests in service there */
    int64_t preemptions; /* decode and aggregated instances: members preempted so far */
} sim_sample_row;

typedef struct sim_hitrate_row {
    const char *trace_path;
    uint64_t trace_fingerprint;
    int block_tokens;
    const char *policy;     /* eviction policy */
    const char *setup;      /* the rest of the replay setup ("scope global, 1 node"), may be NULL */
    double capacity_tokens; /* per node; INFINITY = the infinite cache */
    double hit_rate_blocks, hit_rate_tokens;
    const char *model;         /* the model whose KV sizes the capacity in bytes, may be NULL */
    double kv_bytes_per_token; /* its KV bytes per token (0 = unknown) */
} sim_hitrate_row;

/* One rung of a hit-rate ladder (sim/replay/ladder.h). */
typedef struct sim_ladder_row {
    const char *trace_path;
    uint64_t trace_fingerprint;
    int trace_block_tokens, block_tokens, nodes;
    bool full_blocks;
    int64_t max_model_len;       /* 0 = no context cap */
    const char *policy, *router; /* eviction policy and router */
    const char *setup;           /* the pool's capacity per tier, may be NULL */
    const char *rung;            /* "ceiling", "engine", "belady", "policy", "routed" */
    double hit_rate_blocks, hit_rate_tokens;
    int64_t prefill_tokens_saved, tokens;
    double loss_tokens;    /* against the rung above */
    double ttft_p90_ms;    /* NAN: not the routed rung */
    double tier_tokens[4]; /* tokens saved by HBM, DRAM, SSD, remote; NAN: no split or no such tier */
} sim_ladder_row;

/* What writes a results database: the next step named by every message
 * about a missing one, or one without runs. */
#define SIM_RESULTS_HOW "kvsim run --db FILE or kvsim sweep --db FILE writes one"

/* Open an existing results database read-only into *db (closed by the
 * caller, also on error): exit 2 when it cannot be read, is not SQLite or has
 * no runs table, saying what writes one. */
struct sqlite3;
int sim_results_open_read(const char *path, struct sqlite3 **db, sim_err *err);
/* After opening path: the runs table there, or the error (not a results
 * database, not SQLite, unreadable). A WAL database on a read-only file
 * system or folder is reopened immutable first (issue 40 item 8). */
int sim_results_check_open(const char *path, struct sqlite3 **db, sim_err *err);
/* Reopen *db immutable (no locks, no -shm file), which is exact when no
 * write-ahead log is pending (kvsim checkpoints and removes it at close);
 * refused, saying what to do, when one is. */
int sim_results_reopen_immutable(const char *path, struct sqlite3 **db, sim_err *err);

/* path NULL or "" = a private temporary database. */
int sim_results_open(sim_results **out, const char *path, sim_err *err);
/* A sweep part at path (`kvsim run --part`): a new scratch database for one
 * run, which one merge reads and deletes, written at path.tmp with no
 * journal and no sync, and renamed to path when the run commits (removed if
 * it does not), so a part that exists is whole. Refused when path exists. */
int sim_results_open_part(sim_results **out, const char *path, sim_err *err);
/* SQLite's message for db's last error, with the system's cause appended
 * for I/O errors ("disk I/O error (File too large)"); written into buf. */
struct sqlite3;
const char *sim_results_errmsg(struct sqlite3 *db, char *buf, size_t n);
/* Start a run: inserts its runs row and opens the transaction. */
int sim_results_begin_run(sim_results *r, const sim_run_info *info, int64_t *run_id, sim_err *err);
/* Roll back a run begun and not finished (its replay failed): the database
 * is as before sim_results_begin_run and takes the next run. */
void sim_results_abandon_run(sim_results *r);
int sim_results_add_request(sim_results *r, const sim_request_row *row, sim_err *err);
int sim_results_add_sample(sim_results *r, const sim_sample_row *row, sim_err *err);
/* Whether this run keeps sample and replica rows (a results file, rows not
 * turned off): when not, a model need not compute them. */
bool sim_results_keeps_samples(const sim_results *r);
/* Rows (requests, samples, replicas) the current run has written. */
int64_t sim_results_rows(const sim_results *r);
/* Mean TTFT (ms) of the current run's first and last tenth of requests (by
 * id, which is arrival order); NAN for a tenth without one. Queues that grow
 * without bound show as a last tenth far slower than the first. */
void sim_results_ttft_trend(sim_results *r, double *first_ms, double *last_ms);

/* Requests whose per-request values the summary keeps in memory; a run of
 * more writes them to temporary files as they complete (docs/run.md, "Long
 * traces"): memory follows the requests in flight, and the summary gains a
 * "streamed" key. Settable for tests (the streamed summary of a short run
 * must equal the in-memory one). */
#define SIM_RESULTS_MEMORY_IDS ((int64_t)1 << 18)
void sim_results_set_memory_ids(sim_results *r, int64_t ids);
/* A request arrived at arrival_ms (sim time, ms): the online steady-state
 * window (sim/results/dynamics.h) counts it in the system from then on.
 * Called in time order with the rows' departures (the replay loop). */
void sim_results_arrival(sim_results *r, double arrival_ms);
/* Keep the latencies of the requests with id < n (trace order) of the runs
 * begun after this call (0 = none): the head of a longer load, which a
 * measurement reports (sim/results/results_int.h; `kvsim validate`). */
void sim_results_keep_head(sim_results *r, int64_t n);
/* After a run's replay, before sim_results_finish_run: its first n
 * requests' {"e2e_ms", "ttft_ms", "itl_ms", "ntpot_ms"}, each {mean, p50,
 * p90, p99} as the summary gives them, ntpot_ms being end-to-end latency
 * over output tokens per request (inference-perf's normalized time per
 * output token); *left_ms when the last of them left, *last_arrival_ms the
 * run's last arrival. An error when the run had fewer than n requests. */
int sim_results_head(sim_results *r, json_t **out, double *left_ms, double *last_arrival_ms, sim_err *err);

/* Every leaf of the JSON object node into out, keyed by its dotted path
 * below prefix ("" at the top): "cluster.prefill" -> 4. Objects are walked,
 * anything else (lists included) is a leaf. */
void sim_json_flatten(const json_t *node, const char *prefix, json_t *out);

/* A runs row's config_json and summary_json text as JSON objects (*config
 * and *summary: the caller's, NULL after an error). A column that is not a
 * JSON object is an error naming db, the run, the column and what is wrong:
 * kvsim report and export refuse such a run alike. */
int sim_results_run_json(const char *db, int64_t id, const char *config_text, const char *summary_text, json_t **config,
                         json_t **summary, sim_err *err);

/* Run ids from "3,7,10-12" (ids >= 1, ranges ascending; --runs of kvsim
 * report and export); *out is malloc'd. err quotes the spec. */
int sim_results_parse_ids(const char *spec, int64_t **out, int *n, sim_err *err);
/* Ids of the completed runs of db, in id order, for which the SQL
 * expression where (over the runs table's columns: json_extract on
 * config_json and summary_json; NULL = all) holds, the last `last` of them
 * when last > 0. One read-only expression only; errors quote it. *ids is
 * malloc'd (NULL when none). */
int sim_results_select_runs(struct sqlite3 *db, const char *where, int64_t last, int64_t **ids, int *n, sim_err *err);
/* Keep of ids[0..n) those also in keep (order kept; *n updated). */
void sim_results_keep_ids(int64_t *ids, int *n, const int64_t *keep, int nkeep);
/* One replica-count sample of one key (Mooncake Fig. 18). */
int sim_results_add_replica(sim_results *r, double t_ms, uint64_t key, int count, sim_err *err);
/* Hit-rate points, outside any run: take a fresh id for one invocation's
 * points, then add each point (capacity INFINITY for the infinite cache). */
int sim_results_hitrate_id(sim_results *r, int64_t *id, sim_err *err);
int sim_results_add_hitrate(sim_results *r, int64_t id, const sim_hitrate_row *row, sim_err *err);
/* Ladder rungs, likewise: a fresh id per ladder, then each rung. */
int sim_results_ladder_id(sim_results *r, int64_t *id, sim_err *err);
int sim_results_add_ladder(sim_results *r, int64_t id, const sim_ladder_row *row, sim_err *err);
/* Build the run's summary object from its rows (caller owns the result). */
int sim_results_summary(sim_results *r, double sim_seconds, int64_t events, json_t **out, sim_err *err);
/* Store the summary (with wall time) and commit. */
int sim_results_finish_run(sim_results *r, const json_t *summary, double wall_seconds, sim_err *err);
void sim_results_close(sim_results *r);
/* Whether the database holds a completed run with this config hash and
 * trace fingerprint (the sweep's "already recorded" test). */
int sim_results_has_run(sim_results *r, uint64_t config_hash, uint64_t trace_fingerprint, bool *found, sim_err *err);
/* The SQLite connection, for tools that read or merge whole databases. */
struct sqlite3 *sim_results_handle(sim_results *r);

#endif
