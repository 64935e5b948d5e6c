/* sim/replay/validate.h — `kvsim validate`: replay measured runs of a real
 * serving engine (a measurements file, docs/validation.md) and compare.
 *
 * For each experiment of the file: its workload is generated as a trace
 * (inference-perf's shared-prefix load, sim/trace/tracegen_sp.h), one
 * aggregated instance is configured from its `engine` block (cost.compute
 * = "auto": measured tables where the preset names them, else the
 * production-engine model), the trace is replayed with the load running on
 * past the measured requests (validate_run.c), and every measured metric of
 * those requests is set beside kvsim's prediction of it with the absolute
 * and signed percentage error. An experiment kvsim
 * cannot express (prefix caching or chunked prefill off, a request longer
 * than max_model_len, a dtype it does not model) is reported as such with
 * the reason, never skipped silently; an unknown model, engine knob, metric
 * or workload kind is an error naming it. */
#ifndef SIM_VALIDATE_H
#define SIM_VALIDATE_H

#include <jansson.h>

#include "sim/util.h"

typedef struct sim_validate_opts {
    const char *measurements; /* the measurements file */
    const char *only;         /* one experiment id, or NULL for all */
    const char *db;           /* results database to keep the runs in, or NULL */
    char *const *sets;        /* extra --set overrides applied to every experiment */
    int nsets;
    int draws; /* workloads generated per experiment, seeds 1..draws (0 = SIM_VALIDATE_DRAWS) */
} sim_validate_opts;

/* The draws of each experiment's workload by default: the measured run is
 * one draw of its load generator (the prompt pool's shuffle, the arrival
 * gaps), whose seed is not public, so kvsim predicts the mean over draws
 * and states the range of their errors (docs/validation.md §2). */
#define SIM_VALIDATE_DRAWS     8
#define SIM_VALIDATE_MAX_DRAWS 1000

/* The report: {"experiments": [{"id", "model", "tp", "workload", "status": "ok" | "not expressible",
 * "why" (when not), "config": [the --set list], "replayed": requests sent,
 * "predicted", "measured", "ape", "mpe"}], "median_ape": {metric: {stat: %}}}
 * with the metric names of the file (e2e_ms, ttft_ms, itl_ms = inference-
 * perf's normalized time per output token, tpot_ms; mean, p50, p90, p99). ape is
 * |predicted − measured| / measured × 100, mpe the signed one; median_ape
 * the median of ape over the expressible experiments. Returns 0, or -1 with
 * err naming the file, the experiment and the key. */
int sim_validate(const sim_validate_opts *o, json_t **report, sim_err *err);
/* Read and check a measurements file without running anything: the
 * format, the ids (at least one experiment, each id printable and given
 * once) and every experiment's fields; *n gets the count. For the fuzz
 * target (tests/fuzz/fuzz_validate.c) and the errors above. */
int sim_validate_read(const char *path, int *n, sim_err *err);

/* The gate of `kvsim validate --max-error`: each expressible experiment
 * whose |error| on one of the n metrics ("e2e_ms.mean": metric, a dot, the
 * stat) exceeds max_pct, as {"id", "metric", "error_pct"}, and each
 * experiment not expressible, as {"id", "why"}, into *out (an array, empty
 * when every experiment passes). An experiment that does not measure a
 * metric is not judged on it; -1 with err when no experiment measures it
 * (a misspelt name). */
int sim_validate_gate(const json_t *report, double max_pct, char *const *metrics, int n, json_t **out, sim_err *err);

/* Whether some experiment of the report has the metric ("itl_ms.mean")
 * both measured and predicted. */
bool sim_validate_has_metric(const json_t *report, const char *metric);

/* `kvsim validate --by model|tp|workload`: the report's expressible
 * experiments grouped by their model preset, tensor-parallel degree or
 * workload shape (in first-seen order), each group's median absolute error
 * per metric and statistic: {"by", "groups": [{"group", "experiments",
 * "median_ape"}]}. -1 with err for another `by`. */
int sim_validate_groups(const json_t *report, const char *by, json_t **out, sim_err *err);
/* 0 when `by` is one of them, else -1 with err naming the choices. */
int sim_validate_by_check(const char *by, sim_err *err);

/* The median of n values (sorted in place); NAN when n = 0. */
double sim_validate_median(double *v, int n);

#endif
