/* sim/cost/measured_int.h — what the files of the measured mode share and
 * nothing above them calls (sim/cost/measured.h is the public side):
 *
 *   measured.c         the process's tables, one pass as a sum of operations
 *   measured_donor.c   which other bundled tables could price a refused run
 *   moe_configs.c      which of vLLM's tuned fused-MoE configs a pass runs with */
#ifndef SIM_MEASURED_INT_H
#define SIM_MEASURED_INT_H

#include <limits.h>
#include <stdbool.h>

#include "sim/cost/measured.h"
#include "sim/util.h"

enum { LIN_CACHE = 16384, HEAD_CACHE = 4096 };

/* What decides a pass's price besides its shape: every field is compared
 * when a later config asks for the same pricing (sim_measured_get). */
typedef struct measured_key {
    char tables[PATH_MAX];
    char ar_tables[PATH_MAX]; /* hardware.allreduce_optables, resolved; "" = tables' own rows */
    sim_model model;
    int tp, graph_max;
    bool ep;
    char dist[24];
    double glitch_ratio;
    sim_gpu_roof to; /* hardware.optables_transfer: this GPU's roofline; zero = the tables' own GPU */
} measured_key;

/* Which keys of vLLM's tuned fused-MoE configs for one (device, E, N)
 * share a config (moe_configs.c): keys ascending, config[i] the index of
 * the first key with key i's config; n = 0 when vLLM has no file for it
 * and takes get_default_config's (one config up to `experts` tokens,
 * another above). */
enum { MOE_MAX_KEYS = 21 }; /* 21 configs × 3 alignments fit a 64-bit set */
typedef struct moe_cfgmap {
    int n, experts;
    int keys[MOE_MAX_KEYS], config[MOE_MAX_KEYS];
} moe_cfgmap;

/* The map of device (torch's name, "NVIDIA H100 80GB HBM3"), E experts
 * on a GPU and N intermediate per GPU from the bundled file at path;
 * quantized weights get every key of vLLM's tuning script as a config of
 * its own (their files are not bundled). -1 with err when the file cannot
 * be read. */
int moe_cfgmap_find(const char *path, const char *device, int experts, int n, bool quantized, moe_cfgmap *out,
                    sim_err *err);
/* The config a pass of `tokens` tokens runs with, as an index < MOE_MAX_KEYS. */
int moe_cfgmap_config(const moe_cfgmap *m, double tokens);

/* How a model with MLA is priced: not MLA, from the attention backend's
 * tables (projections as GEMMs), or from the whole module's. */
enum { MLA_NONE, MLA_BACKEND, MLA_MODULE };

struct sim_measured {
    measured_key key;
    sim_optable *t;
    sim_optable *ar; /* whose all-reduce rows price the all-reduces: t, or hardware.allreduce_optables' */
    const char *wdtype, *kvdtype;
    const char *plain_dtype; /* the router's and LM head's GEMMs: unquantized under fp8_block, else wdtype */
    double act_bytes;        /* bytes per activation element: bf16 under fp8_block, else the weights' */
    int heads, kv_heads;     /* per GPU */
    int fold[2];             /* attention looked up as fold × the batch of heads / fold: generation, context */
    int widen[2];            /* and at widen × the head_dim, over 1 / widen of that batch (attn_fold) */
    bool used;               /* priced a pass since the notes were last reset (sim_measured_reset_notes) */
    int mla;                 /* MLA_* */
    sim_mla_query mla_q;
    sim_gpu_roof from;    /* the tables' GPU (when key.to is set) */
    sim_gpu_roof ar_from; /* the all-reduce rows' GPU: from's, or hardware.allreduce_optables' */
    moe_cfgmap moe_cfg;   /* vLLM's fused-MoE configs on the tables' GPU (a MoE model) */
    /* Which slots of lin and head hold a value: flags, zeroed with the
     * struct's head, so that a new pricing touches 20 KB, not the 1.4 MB of
     * the caches (a NaN in each row faulted in every page of them: a
     * quarter of test_cost_presets' CPU, about 350 page faults a process). */
    unsigned char lin_set[LIN_CACHE], head_set[HEAD_CACHE]; /* FILLED or FILLED_QUIET */
    bool quiet; /* sim_measured_quiet: a price cached now noted nothing, and a loud lookup prices it again */
    double lin[LIN_CACHE][SIM_OP_N]; /* the parts that depend on the token count alone (lin_set) */
    double head[HEAD_CACHE][2];      /* lm_head, logits_gather by sampling sequences (head_set) */
    struct sim_measured *next;
};

/* The tables in folder `name` (as a preset names it, or a path), loaded
 * once per process and glitch ratio; NULL with err set when they cannot be. */
sim_optable *sim_measured_tables_get(const char *name, double glitch_ratio, sim_err *err);
/* Set a pricing's per-model fields and check that its tables hold every
 * shape it will look up; -1 with err naming the first they lack. */
int sim_measured_fill(sim_measured *m, const sim_hw *hw, sim_err *err);
/* What decides a pricing of cfg on hw (sim_measured_get compares it). */
void sim_measured_key_of(const sim_config *cfg, const sim_hw *hw, measured_key *key);
/* hw's roofline per GPU of tp, as a transfer scales the tables to it. */
void sim_measured_roof_of(const sim_hw *hw, int tp, sim_gpu_roof *out);

#endif
