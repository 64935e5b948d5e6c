/* sim/cost/profile.h — the cost model's profile-table mode (docs/cost-model.md):
 * measured prefill and decode times of one model on one GPU, interpolated,
 * in place of the analytic FLOP and byte counts.
 *
 * The tables come from the GPU layer probe (datapath/probe/layer_probe.py:
 * one decoder layer with random bf16 weights, timed under CUDA graphs) and
 * `kvsim calibrate --layers-json`, which writes them, as whole-model
 * seconds (layers × one layer + the LM head), into the "compute" section of
 * a calibration file (docs/gpu-calibration.md):
 *
 *   prefill   t(new, cached) on a grid: new tokens computed after `cached`
 *             tokens already in the KV cache (attention over both). Lookup is
 *             bilinear in (new, cached); below the smallest `new` the time
 *             is the smallest point's (a short pass reads every weight once
 *             whatever its length); past the last grid line of either axis it
 *             goes on along the last segment's slope.
 *   decode    for each measured batch size b, a least-squares line
 *             t = base_s + per_token_s × (KV tokens of the batch): a step
 *             reads the weights once (base) and every request's context
 *             (per token). Between measured batch sizes both coefficients
 *             are interpolated linearly; past the largest, base goes on along
 *             the last segment and per_token_s stays.
 *   flops_per_s  the prefill FLOP rate (Mooncake Eq. 1 FLOPs over measured
 *             time, least squares through the origin, points of ≥ 1024 new
 *             tokens): what an aggregated iteration that mixes prefill chunks
 *             with decodes charges for the chunks.
 *
 * A profile applies only on hardware with as many GPUs per node as it was
 * measured on (gpus); sim/cost/cost.c says which mode a run uses. */
#ifndef SIM_COST_PROFILE_H
#define SIM_COST_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/util.h"

struct json_t; /* jansson's */

enum { SIM_PROFILE_MAX_NEW = 16, SIM_PROFILE_MAX_CACHED = 8, SIM_PROFILE_MAX_BATCH = 16 };

typedef struct sim_profile {
    char model[64];
    int gpus;
    int n_new, n_cached, n_batch;
    double new_tokens[SIM_PROFILE_MAX_NEW];                        /* ascending */
    double cached_tokens[SIM_PROFILE_MAX_CACHED];                  /* ascending, first 0 */
    double prefill_s[SIM_PROFILE_MAX_CACHED][SIM_PROFILE_MAX_NEW]; /* [cached][new] */
    double batch[SIM_PROFILE_MAX_BATCH];                           /* ascending */
    double base_s[SIM_PROFILE_MAX_BATCH], per_token_s[SIM_PROFILE_MAX_BATCH];
    double flops_per_s;
} sim_profile;

/* Whole-model seconds of a prefill of `new_tokens` after `cached` cached ones. */
double sim_profile_prefill_s(const sim_profile *p, double new_tokens, double cached);
/* Whole-model seconds of one decode step of `batch` requests holding
 * kv_tokens tokens of KV in all. */
double sim_profile_decode_s(const sim_profile *p, int batch, double kv_tokens);

/* Read the profile of `model` from a calibration file's "compute" section
 * (root: the whole file). 1 when found, 0 when the file has no compute
 * section or no table for that model, -1 on a malformed section (err names
 * the file and the field). */
int sim_profile_from_json(const char *path, const struct json_t *root, const char *model, sim_profile *out,
                          sim_err *err);

#endif
