/* sim/cost/cost.c — the analytic cost model of docs/architecture.md §5 (see sim/cost/cost.h). */
#include "sim/cost/cost.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sim/cost/calib.h"

/* A calibration path as written in a preset ("configs/calibration/X.json") is
 * relative to the project root: try it as given, then beside configs/. */
static void calib_path(const char *name, char *buf, size_t n)
{
    snprintf(buf, n, "%s", name);
    if (name[0] == '/' || access(buf, R_OK) == 0) return;
    const char *dir = sim_config_dir(); /* .../configs */
    size_t len = strlen(dir);
    if (len >= 7 && !strcmp(dir + len - 7, "configs")) snprintf(buf, n, "%.*s%s", (int)(len - 7), dir, name);
}

/* DRAM→HBM, HBM→DRAM and SSD transfer curves from the hardware preset's
 * calibration file (docs/architecture.md §7), replacing the analytic bandwidths. */
static int load_calibration(sim_cost *c, const char *name, sim_err *err)
{
    char path[PATH_MAX + 64];
    sim_calib cal = {0};
    calib_path(name, path, sizeof path);
    if (sim_calib_load(path, &cal, err)) return -1;
    c->curves = (struct sim_transfer_curves){
        cal.load_dram.alpha_s, cal.load_dram.beta_Bps, cal.store_dram.alpha_s, cal.store_dram.beta_Bps,
        cal.load_ssd.alpha_s,  cal.load_ssd.beta_Bps,  cal.store_ssd.alpha_s,  cal.store_ssd.beta_Bps,
    };
    c->calibrated = true;
    return 0;
}

static double decode_compute_s(const sim_cost *c, int batch)
{
    return batch * 2.0 * c->model->params / (c->hw->flops * c->mfu);
}

int sim_cost_init(sim_cost *c, const sim_config *cfg, sim_err *err)
{
    const sim_hw *hw = &cfg->hw;
    *c = (sim_cost){
        .model = &cfg->model,
        .hw = hw,
        .mfu = cfg->prefill_mfu,
        .decode_overhead_s = cfg->decode_overhead_s,
        .chunk_overhead_s = cfg->chunk_overhead_s,
        .latency_s = cfg->transfer_latency_s,
        .kv_bytes_per_token = sim_model_kv_bytes_per_token(&cfg->model),
        .weight_bytes = sim_model_weight_bytes(&cfg->model),
        .prefill_chunk = cfg->prefill_chunk,
        .curves = {cfg->transfer_latency_s, hw->h2d_Bps, cfg->transfer_latency_s, hw->h2d_Bps, hw->ssd_latency_s,
                   hw->ssd_read_Bps, hw->ssd_latency_s, hw->ssd_write_Bps},
    };
    if (hw->calibration[0] && load_calibration(c, hw->calibration, err)) return -1;
    for (int b = 0; b < SIM_DECODE_TABLE; b++) c->decode_compute_s[b] = decode_compute_s(c, b);
    c->hbm_kv_bytes = hw->hbm_bytes * cfg->decode_hbm_frac - c->weight_bytes;
    if (c->hbm_kv_bytes <= 0)
        return sim_errf(err, "model '%s' (%.0f GB of weights) does not fit in hardware '%s' (%.0f GB HBM × %.2f)",
                        cfg->model.name, c->weight_bytes / 1e9, hw->name, hw->hbm_bytes / 1e9, cfg->decode_hbm_frac);
    return 0;
}

double sim_prefill_flops(const sim_model *m, double n)
{
    double d = m->hidden;
    return m->layers * (m->flops_a * n * n * d + m->flops_b * n * d * d);
}

double sim_cost_prefill_s(const sim_cost *c, int32_t n, int32_t p)
{
    if (p >= n) p = n > 0 ? n - 1 : 0; /* the last token is always computed */
    double flops = sim_prefill_flops(c->model, n) - sim_prefill_flops(c->model, p);
    int32_t chunks = (n - p + c->prefill_chunk - 1) / c->prefill_chunk;
    return flops / (c->hw->flops * c->mfu) + (chunks > 1 ? chunks : 0) * c->chunk_overhead_s;
}

double sim_cost_chunk_s(const sim_cost *c, int32_t o, int32_t len)
{
    double flops = sim_prefill_flops(c->model, o + len) - sim_prefill_flops(c->model, o);
    return flops / (c->hw->flops * c->mfu) + c->chunk_overhead_s;
}

double sim_cost_mixed_iter_s(const sim_cost *c, double prefill_flops, int nchunks, int batch, int64_t kv_tokens)
{
    double mem = (c->weight_bytes + (double)kv_tokens * c->kv_bytes_per_token) / c->hw->hbm_Bps;
    double compute = (prefill_flops + batch * 2.0 * c->model->params) / (c->hw->flops * c->mfu);
    return fmax(mem, compute) + c->decode_overhead_s + (nchunks > 0 ? c->chunk_overhead_s : 0);
}

double sim_cost_decode_iter_s(const sim_cost *c, int batch, int64_t ctx_tokens)
{
    double mem = (c->weight_bytes + (double)ctx_tokens * c->kv_bytes_per_token) / c->hw->hbm_Bps;
    double compute = batch < SIM_DECODE_TABLE ? c->decode_compute_s[batch] : decode_compute_s(c, batch);
    return (mem > compute ? mem : compute) + c->decode_overhead_s; /* fmax, inline: once per decode step */
}

static double transfer_s(double alpha, double beta, double bytes) { return bytes > 0 ? alpha + bytes / beta : 0; }

double sim_cost_h2d_s(const sim_cost *c, double bytes)
{
    return transfer_s(c->curves.h2d_alpha, c->curves.h2d_beta, bytes);
}
double sim_cost_d2h_s(const sim_cost *c, double bytes)
{
    return transfer_s(c->curves.d2h_alpha, c->curves.d2h_beta, bytes);
}

double sim_cost_ssd_read_s(const sim_cost *c, double bytes)
{
    return transfer_s(c->curves.ssd_read_alpha, c->curves.ssd_read_beta, bytes);
}

double sim_cost_ssd_write_s(const sim_cost *c, double bytes)
{
    return transfer_s(c->curves.ssd_write_alpha, c->curves.ssd_write_beta, bytes);
}

double sim_cost_nic_s(const sim_cost *c, double bytes) { return transfer_s(c->latency_s, c->hw->nic_Bps, bytes); }

int64_t sim_cost_decode_kv_tokens(const sim_cost *c) { return (int64_t)(c->hbm_kv_bytes / c->kv_bytes_per_token); }

int64_t sim_cost_crossover_tokens(const sim_cost *c, int chunk_tokens, double chunk_load_s, int64_t max_tokens)
{
    double G = c->hw->flops * c->mfu;
    int64_t lo = 0, hi = max_tokens / chunk_tokens; /* chunk indices; compute grows with the index */
    double top = (sim_prefill_flops(c->model, (double)(hi + 1) * chunk_tokens) -
                  sim_prefill_flops(c->model, (double)hi * chunk_tokens)) /
                 G;
    if (top <= chunk_load_s) return -1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        double p = (double)mid * chunk_tokens;
        if ((sim_prefill_flops(c->model, p + chunk_tokens) - sim_prefill_flops(c->model, p)) / G > chunk_load_s)
            hi = mid;
        else lo = mid + 1;
    }
    return lo * chunk_tokens;
}

double sim_eq2_min_bandwidth(const sim_model *m, double G, double p)
{
    double d = m->hidden, s = m->dtype_bytes;
    return G * 2 * d * s / (sim_model_gqa(m) * (m->flops_a * p * d + m->flops_b * d * d));
}
