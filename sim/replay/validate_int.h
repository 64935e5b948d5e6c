/* sim/replay/validate_int.h — private to sim/replay/validate*.c.
 *
 *   validate_run.c   sim_validate: each experiment generated, replayed and compared
 *     validate.c     vexp_read: an experiment as --set overrides and generator options
 *     validate_draws.c  the draws of a workload: their mean prediction, error range
 *                    and what their runs found */
#ifndef SIM_VALIDATE_INT_H
#define SIM_VALIDATE_INT_H

#include "sim/replay/validate.h"
#include "sim/trace/tracegen_sp.h"

typedef struct vexp {
    const char *file, *id;
    const char *block; /* the block being read, for messages */
    char **sets;       /* the experiment's config as --set overrides (owned) */
    int nsets;
    char why[256]; /* why kvsim cannot express it; "" = it can */
    sim_tracegen_sp_opts gen;
    const json_t *measured;
    int64_t requests, max_model_len;
    int block_tokens;
    /* what `kvsim validate --by` groups on: the model preset, the GPU, the
     * tensor-parallel degree and the workload's shape ("shared_prefix 547
     * in, 248 out") */
    char model[64], workload[128];
    char gpu[32]; /* the hardware preset's GPU family: "h100" of h100x2 */
    int tp;
    char model_via[256];   /* how a model name that is no preset was read as one; "" = it is one */
    char hw_via[256];      /* the same for a hardware name */
    char engine_note[256]; /* a vLLM release other than the one the constants were fitted on; "" = none */
    bool fixed;            /* the workload has no random element (vllm bench latency): one draw is every draw */
} vexp;

/* One replay of an experiment: its requests, the run's summary, its
 * measured requests' latencies (sim_results_head), when the last of them
 * left and when the last request arrived. */
typedef struct vrun {
    int64_t requests;
    json_t *summary, *head;
    double left_ms, last_ms;
} vrun;

void vrun_clear(vrun *r);
/* Clear n runs and free the array (sim_xcalloc'd) that holds them. */
void vruns_free(vrun *r, int n);

/* The prediction from n draws of a workload (validate_draws.c): each
 * statistic of the heads' metrics averaged over the draws, the expected
 * value of what one run of the load measures. */
json_t *vdraw_mean_head(const vrun *r, int n);
/* Widen range ({metric: {stat: [min, max]}}) by one draw's mpe. */
void vdraw_range_add(json_t *range, const json_t *mpe);
/* What the draws' runs found, into row: overloaded (any draw), preemptions
 * (their mean), caveats (the names of every draw's, each once),
 * moe_compiles (the mean variants and stall over the draws, and each
 * draw's) and fit_range (the draw whose iterations went furthest). */
void vdraw_findings(const vrun *r, int n, json_t *row);

int vexp_read(vexp *e, const char *file, const json_t *x, sim_err *err);
void vexp_free(vexp *e);

/* The median absolute error per metric and statistic over rows (the
 * report's "median_ape"; validate_groups.c). */
json_t *vexp_medians(const json_t *rows);

#endif
