/* sim/config/config.h — one JSON config holds everything a run depends on.
 *
 * Resolution order (docs/architecture.md §1):
 *   configs/default.json  →  --config FILE  →  model/hardware presets  →  --set key.path=value
 * The default config is also the schema: a key that does not exist there is
 * an error naming it (only policy.params.* is free-form, checked by the
 * policies themselves). "model" and "hardware" are preset names
 * (configs/models/, configs/hardware/) or inline objects; after resolution
 * the config holds them expanded, so the resolved JSON alone reproduces a run.
 * Sizes accept suffixes ("1TB", "512GiB", "3e6"). */
#ifndef SIM_CONFIG_H
#define SIM_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "sim/config/scope.h"
#include "sim/config/model.h"
#include "sim/trace/trace.h"
#include "sim/util.h"

typedef struct sim_hw {
    char name[64];
    int gpus;         /* GPUs per node (one instance = one node, Mooncake §7.1) */
    double flops;     /* node peak FLOP/s: gpus × tflops_per_gpu × 1e12 */
    double hbm_bytes; /* node HBM */
    double hbm_Bps;   /* node HBM bandwidth */
    double h2d_Bps;   /* DRAM → HBM */
    double nic_Bps;   /* per node */
    double dram_bytes;
    double ssd_read_Bps, ssd_write_Bps, ssd_latency_s;
    /* Decode cost (docs/cost-model.md): achievable HBM fraction; the
     * tensor-parallel all-reduce across the node's GPUs: link bandwidth per
     * GPU and direction (× its efficiency), latency of one all-reduce. */
    double hbm_efficiency, link_Bps, allreduce_latency_s;
    char calibration[PATH_MAX];           /* calibration file ("" = analytic bandwidths) */
    char optables[PATH_MAX];              /* measured per-operation tables' folder ("" = none; sim/cost/optable.h) */
    bool optables_transfer;               /* they were measured on another GPU: scale to this one (measured.c) */
    char allreduce_optables[PATH_MAX];    /* tables whose all-reduce rows price this GPU's ("" = optables') */
    double link_peak_Bps;                 /* nvlink_GBps_per_gpu at its datasheet peak (link_Bps × efficiency) */
    double price_per_hour;                /* hardware.price_per_hour: a node-hour, an input (0 = not given) */
    double dram_price_GBh, ssd_price_GBh; /* hardware.{dram,ssd}_price_per_GB_hour (0 = not given) */
    double ssd_bytes;                     /* hardware.ssd_bytes: the node's disks (0 = not given) */
    /* An instance of cluster.gpus_per_instance GPUs (docs/hardware.md §3):
     * tensor parallel over tp GPUs of one node, pipeline parallel over pp
     * nodes; gpus = tp · pp and the fields above are the instance's
     * (flops and hbm_Bps one stage's: a batch passes the stages in turn). */
    int tp, pp;
} sim_hw;

/* One scheduled instance failure (config key "faults"). */
typedef struct sim_fault {
    double at_s;   /* failure time, trace clock */
    int instance;  /* 0..prefill+decode-1 */
    double down_s; /* until recovery */
} sim_fault;

enum { SIM_LOAD_ALWAYS = 0, SIM_LOAD_NEVER, SIM_LOAD_ADAPTIVE, SIM_LOAD_BALANCED, SIM_LOAD_N };
/* kvstore.load's names by SIM_LOAD_* value, NULL-terminated: the one table. */
extern const char *const sim_load_names[SIM_LOAD_N + 1];
/* cost.compute: auto = engine for aggregated instances, else the profile
 * tables when the hardware's calibration has them for the model, else
 * analytic (sim/cost/cost.h). */
enum { SIM_COMPUTE_AUTO = 0, SIM_COMPUTE_ANALYTIC, SIM_COMPUTE_PROFILE, SIM_COMPUTE_ENGINE, SIM_COMPUTE_MEASURED };

typedef struct sim_config {
    json_t *root;  /* resolved config (owned) */
    uint64_t hash; /* XXH64 of root dumped with sorted keys, without its "about" comments */
    sim_model model;
    sim_hw hw;
    /* The disaggregated model's two sides (cluster.prefill_hardware,
     * cluster.decode_hardware: presets, "" = hardware): each side's compute,
     * HBM and NIC (docs/hardware.md §2). hetero: they differ from hw. */
    sim_hw prefill_hw, decode_hw;
    bool hetero;

    char mode[32]; /* cluster.mode: the serving model (sim/serving registry) */
    int n_prefill, n_decode;
    int n_instances;            /* cluster.instances (aggregated; 0 = n_prefill + n_decode) */
    int max_num_batched_tokens; /* engine.max_num_batched_tokens: an aggregated iteration's token budget */
    int instances_per_node;     /* cluster.instances_per_node (aggregated: instances sharing a node's CPU pool) */
    /* The LMCache layer of aggregated instances (kvstore.lmcache, docs/lmcache.md). */
    struct sim_lmcache_cfg {
        bool on;
        int chunk_tokens;
        bool cpu_per_node;  /* kvstore.cpu_scope = "node" */
        bool page_transfer; /* kvstore.transfer = "page" (vLLM native offload) */
        int load;           /* kvstore.load: SIM_LOAD_ALWAYS / NEVER / ADAPTIVE / BALANCED */
        bool prefetch;
        double remote_bytes, remote_Bps, remote_latency_s;
    } lmc;
    kv_scope scope;
    int prefill_chunk; /* tokens; chunked prefill above this */
    int cpp_group;     /* chunked pipeline parallelism: prefill nodes per group (1 = off) */
    int cpp_threshold; /* uncached tokens above which a request uses its group */
    bool layerwise;    /* layer-wise overlap of KV load/stream with compute */
    int decode_max_batch;
    double decode_hbm_frac; /* fraction of HBM left after weights usable for KV */
    /* decode.kv_allocation: KV allocated as it arrives and grown a token
     * per step (incremental, true) or reserved whole at admission (reserve);
     * decode.preemption: a preempted request's KV is swapped to DRAM (swap,
     * true) or dropped and recomputed (recompute) */
    bool decode_incremental, decode_swap;
    /* decode.kv_receive: a request's KV lands in the decode node's DRAM and
     * is loaded into HBM when it joins (dram, true), or lands in HBM (hbm) */
    bool decode_kv_dram;
    /* metrics.first_token: the user's first token is the prefill's (prefill,
     * false: Mooncake §3) or the decode instance's first (decode, true:
     * vLLM's and SGLang's P/D proxies stream from the decode instance) */
    bool first_token_decode;

    int block_tokens;
    char pic[32];         /* kvstore.pic: the cache model (sim/store/cache_model.c) or a PIC policy (sim/store/pic.h) */
    int pic_block_tokens; /* kvstore.pic_block_tokens: HBM block of the PIC accounting */
    double pic_cacheblend_ratio; /* kvstore.pic_cacheblend_ratio */
    int pic_epic_tokens;         /* kvstore.pic_epic_tokens */
    char eviction[32];
    double hbm_bytes, dram_bytes, ssd_bytes; /* prefix-cache budgets per node */
    bool promote;

    char router[32], decode_policy[32], admission[32], pd_controller[32];
    const json_t *params; /* policy.params (borrowed from root) */

    double slo_ttft_ms, slo_tbt_ms;

    char trace_path[PATH_MAX];
    sim_trace_opts trace;
    bool
        closed_replay; /* trace.replay = closed: sessions' turns follow their previous turn's end (sim/trace/sessions.h) */

    double prefill_mfu, decode_overhead_s, chunk_overhead_s, transfer_latency_s;
    int compute; /* cost.compute: SIM_COMPUTE_* */
    /* Mixture of experts (docs/hardware.md §1): experts split across the
     * instance's GPUs (cost.expert_parallel; else every expert is tensor
     * parallel) and the busiest GPU's expert load over the mean
     * (cost.expert_imbalance, ≥ 1). */
    bool expert_parallel;
    double expert_imbalance;
    /* engine.*: a production engine's constants (cost.compute = "engine",
     * docs/validation.md): CPU time per iteration and per scheduled
     * sequence, and the front end's latency per request. */
    double iter_overhead_s, seq_overhead_s, frontend_s;
    /* engine.measured.*: the same CPU constants for cost.compute =
     * "measured" (fitted beside the measured GPU times, docs/measured.md),
     * the largest pass vLLM runs as a captured CUDA graph, the MoE
     * token distribution the fused-MoE table is read at, and how far
     * outside both neighbours a measured point is dropped as a glitch
     * (0 = never). */
    double m_iter_overhead_s, m_seq_overhead_s, m_frontend_s, moe_jit_compile_s, glitch_ratio;
    int cuda_graph_max_tokens; /* resolved: vLLM's default when the key is 0 */
    char moe_distribution[24];
    bool async_scheduling; /* engine.async_scheduling: step N+1 is scheduled while step N runs */
    bool chunked_prefill;  /* engine.chunked_prefill: false = a prompt is prefilled whole in one step */
    bool prefix_caching;   /* engine.prefix_caching: false = no request reuses another's KV blocks */
    double noise, estimator_noise;
    int estimator_samples;
    double sample_period_s;
    double sample_rows_per_s; /* metrics.sample_rows_per_s: bound on samples rows per simulated second, 0 = none */
    bool request_rows;        /* metrics.request_rows: one requests row per request in --db */
    bool sample_rows;         /* metrics.sample_rows: samples and replicas rows in --db */
    double replica_period_s;  /* 0 = no replica samples */
    double event_budget;      /* limits.event_budget: events and rows per unit of work; 0 = no limit */
    double switch_s;          /* PD role switch cost after draining */
    bool retry_on_failure;    /* cluster.on_failure: retry (true) or lose */
    int n_faults;
    sim_fault *faults; /* owned */
    uint64_t seed;
} sim_config;

/* Load and resolve. config_path may be NULL (defaults only). sets: nsets
 * strings "key.path=value" (value parsed as JSON when it is valid JSON, else
 * taken as a string). Errors name the file, key or value at fault. */
int sim_config_load(sim_config *out, const char *config_path, char *const *sets, int nsets, sim_err *err);
/* kvstore.chunk_tokens is a whole number of pages (kvstore.pic_block_tokens).
 * The loader checks it when kvstore.lmcache is on; `kvsim plan crossover`
 * prices a chunk's page copies without it, so it asks too. */
int sim_config_chunk_pages_check(const sim_config *c, sim_err *err);
void sim_config_free(sim_config *c);

/* Read a number or size string ("1TB") at a dotted path of any JSON object. */
int sim_json_size(const json_t *root, const char *path, double *out, sim_err *err);

/* Per-node block capacity of a tier budget in bytes. */
int64_t sim_config_blocks(const sim_config *c, double bytes);

/* The memory a tier's budget must fit in: kvstore.dram_bytes is per node
 * of a disaggregated cluster (the smaller of its sides' hardware.dram_bytes)
 * and per aggregated instance, or per node of cluster.instances_per_node
 * instances when the CPU pool is (kvstore.cpu_scope node); the disk budget
 * likewise of hardware.ssd_bytes. 0 = the hardware gives none. */
double sim_config_node_dram(const sim_config *c);
double sim_config_node_disk(const sim_config *c);
/* The sentence every budget check says, into buf (returns its length, as
 * snprintf): "WHAT: 5000 GB of DRAM is more than the 500 GB an instance of 1
 * GPU on 'h100x1' has (hardware.dram_bytes, in proportion to its GPUs)";
 * dram: of the DRAM, else of the disk; have: sim_config_node_dram or _disk. */
int sim_config_over_text(const sim_config *c, bool dram, const char *what, double want, double have, char *buf,
                         size_t n);
/* Whether kvstore.dram_bytes is read: a disaggregated cluster's pool, or an
 * aggregated one's LMCache CPU tier. */
bool sim_config_dram_used(const sim_config *c);

/* A config key a run accepts but does not read in some setting, and why
 * (e.g. cost.noise in the aggregated model): kvsim run warns when the user
 * set such a key (sim_config_user_set). */
typedef struct sim_idle_key {
    const char *key, *why;
} sim_idle_key;

/* Whether key (a dotted path) holds a value other than it has without the
 * user's settings: default.json's, or for "model." and "hardware." keys the
 * value in the preset the resolved object names (absent there: the key was
 * set by the user whenever present). Numbers compare by value (0 = 0.0). */
bool sim_config_user_set(const sim_config *cfg, const char *key);
/* Keys the config itself leaves idle, whatever the serving and cost
 * models (issue 40 item 9): cost.expert_parallel and cost.expert_imbalance
 * on a dense model, cluster.cpp_threshold when cluster.cpp_group is 1,
 * kvstore.dram_bytes and kvstore.ssd_bytes in an aggregated cluster
 * without LMCache. (A per-thread array: valid until the next call.) */
const sim_idle_key *sim_config_idle_keys(const sim_config *cfg);

#endif
