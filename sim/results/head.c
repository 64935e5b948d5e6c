/* sim/results/head.c — the latencies of a run's first requests
 * (sim/results/results_int.h has why).
 *
 * Four per-request values of each request with id < n: end-to-end latency,
 * TTFT, the mean inter-token interval ((last − first token) / (tokens − 1),
 * the summary's itl_ms) and the normalized time per output token, end-to-end
 * latency over output tokens: what inference-perf reports as
 * normalized_time_per_output_token ("e2e request latency / output tokens",
 * kubernetes-sigs/inference-perf docs/metrics.md), and what the
 * sim-to-real study behind validation/ reads as its ITL
 * (inference-sim/sim-to-real-accuracy-validation, experiment/ground_truth.py). */
#include <math.h>
#include <stdlib.h>

#include "sim/results/results_int.h"

void sim_head_init(sim_head *h, int64_t n)
{
    sim_head_free(h);
    h->n = n > 0 ? n : 0;
    for (int c = 0; c < SIM_HEAD_NCOLS && h->n; c++) h->col[c] = sim_xmalloc((size_t)h->n * sizeof(double));
    sim_head_reset(h);
}

void sim_head_reset(sim_head *h)
{
    for (int c = 0; c < SIM_HEAD_NCOLS && h->n; c++)
        for (int64_t i = 0; i < h->n; i++) h->col[c][i] = NAN;
    h->rows = 0;
    h->left_ms = h->last_arrival = -1;
}

void sim_head_free(sim_head *h)
{
    for (int c = 0; c < SIM_HEAD_NCOLS; c++) free(h->col[c]);
    *h = (sim_head){0};
}

static double defined(double v) { return v >= 0 ? v : NAN; }

void sim_head_add(sim_head *h, const sim_request_row *w)
{
    if (w->id < 0 || w->id >= h->n) return;
    double e2e = defined(w->e2e_ms);
    h->col[SIM_HEAD_E2E][w->id] = e2e;
    h->col[SIM_HEAD_TTFT][w->id] = defined(w->ttft_ms);
    h->col[SIM_HEAD_ITL][w->id] = defined(w->itl_ms);
    h->col[SIM_HEAD_NTPOT][w->id] = w->output_len > 0 ? e2e / w->output_len : NAN;
    if (w->left_ms > h->left_ms) h->left_ms = w->left_ms;
    h->rows++;
}

void sim_head_arrival(sim_head *h, double arrival_ms)
{
    if (h->n && arrival_ms > h->last_arrival) h->last_arrival = arrival_ms;
}

int sim_head_json(const sim_head *h, json_t **out, sim_err *err)
{
    *out = NULL;
    if (!h->n) return sim_errf(err, "results: no head was asked for (sim_results_keep_head)");
    if (h->rows < h->n)
        return sim_errf(err, "results: the run had %lld of its first %lld requests: the trace is shorter",
                        (long long)h->rows, (long long)h->n);
    static const char *const names[SIM_HEAD_NCOLS] = {"e2e_ms", "ttft_ms", "itl_ms", "ntpot_ms"};
    *out = json_object();
    for (int c = 0; c < SIM_HEAD_NCOLS; c++) json_object_set_new(*out, names[c], sim_results_dist(h->col[c], h->n));
    return 0;
}
