/* sim/serving/caveats.c — the parts of a run's model that no measurement
 * has checked, named in the run's summary and on stderr, so that a number
 * kvsim knows to be unvalidated never leaves it without a warning.
 *
 * Each caveat is one row of a table: a name, a predicate on the resolved
 * config and a sentence that says what is not validated, which way the
 * error is known to go where a measurement shows it, and where the
 * documentation gives the numbers. The sentences carry no figures: the
 * figures live in the documentation, next to the command that measured
 * them, and would go stale here. A run whose config meets no predicate
 * gets no "caveats" key at all (its summary is what it was before).
 *
 * A replay adds what it found (sim_serving_add_finding): a trace cut into
 * blocks of another size than trace.block_tokens, requests no decode
 * instance can hold. Those are facts of this run, not unvalidated parts of
 * the model, and carry "found": true.
 *
 * Rows (docs/validation.md, "What is not validated"):
 *   moe       — a mixture-of-experts model: on the one measured MoE run
 *               (Mixtral-8x7B on 2 × H100) kvsim's mean TTFT is a third
 *               short of the engine's, its e2e and ITL within 10%;
 *   pipeline  — an instance spans nodes: no micro-batch interleaving, so
 *               its throughput is a lower bound (docs/hardware.md §3);
 *   tensor_parallel — a dense model on tensor-parallel instances
 *               (aggregated, or a disaggregated side): the fitted CPU
 *               constants saw no dense run on more than one GPU
 *               (docs/validation.md);
 *   roofline  — hardware with no measurement of its kernels (no tables,
 *               no profile of the model): priced from its spec sheet,
 *               a roofline whose error against the GPUs that have tables
 *               reports/roofline_check.py measures (docs/hardware.md);
 *   transferred — hardware priced from another GPU's tables scaled by
 *               each operation's roofline ratio (hardware.optables_transfer),
 *               checked leave-one-out by reports/roofline_check.py
 *               --transfer. */
#include <stdio.h>
#include <string.h>

#include "sim/cost/cost.h"
#include "sim/cost/measured.h"
#include "sim/serving/serving.h"

typedef struct caveat {
    const char *name;
    bool (*applies)(const sim_config *cfg);
    void (*say)(const sim_config *cfg, char *buf, size_t n);
} caveat;

static bool moe_applies(const sim_config *cfg) { return cfg->model.experts > 0; }

static void moe_say(const sim_config *cfg, char *buf, size_t n)
{
    snprintf(buf, n,
             "%s is a mixture of experts: kvsim's MoE step is checked against one measured serving run, "
             "where kvsim is fast: its mean end-to-end latency by 16%%, inter-token latency by 11%% and TTFT by "
             "55%% (the mean over 8 draws of the workload), all three resting on its fused-MoE compile stalls; "
             "read them as optimistic, TTFT most; one batch of 8 (vLLM's CI latency benchmark) is within 8%% on "
             "two H100s, H200s and A100s (docs/validation.md)",
             cfg->model.name);
}

static bool pipeline_applies(const sim_config *cfg)
{
    return cfg->hw.pp > 1 || cfg->prefill_hw.pp > 1 || cfg->decode_hw.pp > 1;
}

static void pipeline_say(const sim_config *cfg, char *buf, size_t n)
{
    int pp = cfg->hw.pp;
    if (cfg->prefill_hw.pp > pp) pp = cfg->prefill_hw.pp;
    if (cfg->decode_hw.pp > pp) pp = cfg->decode_hw.pp;
    snprintf(buf, n,
             "an instance spans %d nodes (pipeline parallel): kvsim passes a batch through the stages in turn "
             "and interleaves no micro-batches, so an instance's throughput is a lower bound (docs/hardware.md)",
             pp);
}

/* The first hardware a run's instances are priced on that meets `is`:
 * the one instance kind's, or a disaggregated cluster's prefill then
 * decode side's (it names the caveat); NULL when none does. */
static const sim_hw *first_hw(const sim_config *cfg, bool (*is)(const sim_config *, const sim_hw *))
{
    if (!strcmp(cfg->mode, "aggregated")) return is(cfg, &cfg->hw) ? &cfg->hw : NULL;
    if (is(cfg, &cfg->prefill_hw)) return &cfg->prefill_hw;
    return is(cfg, &cfg->decode_hw) ? &cfg->decode_hw : NULL;
}

/* A dense model on tensor-parallel instances (aggregated, or either side
 * of a disaggregated cluster), priced with the fitted CPU constants (the
 * engine and measured modes): its kernels and all-reduces are measured or
 * modelled per GPU, but vLLM's multi-process executor (a worker process
 * per GPU, the scheduler's output broadcast to them each step) is in no
 * dense run the constants were fitted on, and on the one public dense
 * tensor-parallel check (validation/vllm-ci-latency.json) kvsim is fast.
 * The figures are that file's (tests/test_validate.c
 * test_ci_latency_in_the_caveats keeps them so). */
static bool is_dense_tp(const sim_config *cfg, const sim_hw *hw)
{
    return hw->tp > 1 && hw->pp <= 1 && cfg->model.experts <= 1;
}

static const sim_hw *tensor_parallel_hw(const sim_config *cfg) { return first_hw(cfg, is_dense_tp); }

static bool tensor_parallel_applies(const sim_config *cfg)
{
    bool fitted =
        cfg->compute == SIM_COMPUTE_AUTO || cfg->compute == SIM_COMPUTE_ENGINE || cfg->compute == SIM_COMPUTE_MEASURED;
    return fitted && tensor_parallel_hw(cfg) != NULL;
}

static void tensor_parallel_say(const sim_config *cfg, char *buf, size_t n)
{
    snprintf(buf, n,
             "%s runs on %d GPUs with tensor parallelism: its kernels and all-reduces are priced per GPU, but the "
             "CPU constants were fitted on dense runs of one GPU and one mixture of experts on two; on vLLM's CI "
             "latency benchmark (one batch of 8) kvsim is fast for Llama-3-70B on four GPUs by 13%% on H100, "
             "15%% on H200 and 2%% on A100: read a dense tensor-parallel step as optimistic (docs/validation.md)",
             cfg->model.name, tensor_parallel_hw(cfg)->tp);
}

/* Priced without a measurement of its kernels (sim/cost/cost.h). */
static const sim_hw *spec_sheet_hw(const sim_config *cfg) { return first_hw(cfg, sim_cost_spec_sheet_only); }

static bool roofline_applies(const sim_config *cfg) { return spec_sheet_hw(cfg) != NULL; }

static void roofline_say(const sim_config *cfg, char *buf, size_t n)
{
    snprintf(buf, n,
             "hardware '%s' has no measured tables or profile of %s: its kernels are priced by a spec-sheet "
             "roofline, mostly optimistic against the GPUs that have tables (docs/hardware.md §6)",
             spec_sheet_hw(cfg)->name, cfg->model.name);
}

static bool is_transferred(const sim_config *cfg, const sim_hw *hw) { return hw->optables_transfer; }

/* Priced from another GPU's tables (hardware.optables_transfer). */
static const sim_hw *transfer_hw(const sim_config *cfg) { return first_hw(cfg, is_transferred); }

static bool transferred_applies(const sim_config *cfg)
{
    return cfg->compute != SIM_COMPUTE_ANALYTIC && cfg->compute != SIM_COMPUTE_ENGINE && transfer_hw(cfg) != NULL;
}

static void transferred_say(const sim_config *cfg, char *buf, size_t n)
{
    const sim_hw *hw = transfer_hw(cfg);
    snprintf(buf, n,
             "hardware '%s' is priced from another GPU's measured tables (%s), each operation scaled by the ratio "
             "of its rooflines on the two GPUs, checked leave-one-out on the GPUs that have tables: closest within "
             "one architecture and interconnect (docs/hardware.md §6)",
             hw->name, hw->optables);
}

static const caveat caveats[] = {
    {"moe", moe_applies, moe_say},
    {"pipeline", pipeline_applies, pipeline_say},
    {"tensor_parallel", tensor_parallel_applies, tensor_parallel_say},
    {"roofline", roofline_applies, roofline_say},
    {"transferred", transferred_applies, transferred_say},
};

json_t *sim_serving_caveats(const sim_config *cfg)
{
    json_t *a = json_array();
    char text[768];
    for (size_t i = 0; i < sizeof caveats / sizeof caveats[0]; i++) {
        if (!caveats[i].applies(cfg)) continue;
        caveats[i].say(cfg, text, sizeof text);
        json_array_append_new(a, json_pack("{s:s, s:s}", "name", caveats[i].name, "text", text));
    }
    return a;
}

void sim_serving_add_caveats(const sim_config *cfg, json_t *summary)
{
    json_t *a = sim_serving_caveats(cfg), *found = json_object_get(summary, "caveats"), *m = sim_measured_caveats();
    if (found) json_array_extend(a, found); /* the model's findings (summarize) after the config's */
    json_array_extend(a, m);                /* then the shapes the measured tables did not hold */
    json_decref(m);
    if (json_array_size(a)) json_object_set_new(summary, "caveats", a);
    else json_decref(a);
}

json_t *sim_serving_add_finding(json_t *summary, const char *name, const char *text)
{
    json_t *a = json_object_get(summary, "caveats"),
           *f = json_pack("{s:s, s:s, s:b}", "name", name, "text", text, "found", 1);
    if (!a) json_object_set_new(summary, "caveats", a = json_array());
    json_array_append_new(a, f);
    return f;
}

const json_t *sim_serving_caveat(const json_t *summary, const char *name)
{
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(summary, "caveats"), i, c)
    {
        if (!strcmp(json_string_value(json_object_get(c, "name")), name)) return c;
    }
    return NULL;
}

int64_t sim_serving_too_large_rejected(const json_t *summary)
{
    return json_integer_value(json_object_get(sim_serving_caveat(summary, "too_large"), "rejected"));
}

void sim_serving_fit_range_tail(char *buf, size_t n, const sim_cost *cost, double share, const char *one,
                                const char *steps)
{
    snprintf(buf, n,
             "the %d at once of the training runs the CPU constants (engine%s.iter_overhead_ms, seq_overhead_ms) "
             "were fitted on: their per-sequence term is extrapolated, %.0f%% of %s; if vLLM hides more of that CPU "
             "work behind the GPU than the fit saw, %s shorter by up to that share (docs/validation.md, section 4)",
             sim_cost_fit_seqs(cost), cost->measured ? ".measured" : "", 100 * share, one, steps);
}

/* One tier's budget beyond the memory the hardware gives it: the store's
 * node is an instance (a disaggregated cluster's, an aggregated one's), or
 * cluster.instances_per_node of them sharing a CPU pool; the hardware's
 * DRAM and disks are an instance's in proportion to its GPUs
 * (config.c, shape_instance). */
static void note_over(json_t *summary, const sim_config *cfg, bool dram, double want, double have)
{
    if (!(have > 0) || !(want > have * (1 + 1e-12))) return;
    const char *key = dram ? "kvstore.dram_bytes" : "kvstore.ssd_bytes";
    char text[768];
    int u = sim_config_over_text(cfg, dram, key, want, have, text, sizeof text);
    if (u < (int)sizeof text)
        snprintf(text + u, sizeof text - (size_t)u,
                 ": this run's hits rest on capacity the hardware lacks; give at most that (--set %s=%.6gGB) or a "
                 "hardware preset with more",
                 key, have / 1e9);
    sim_serving_add_finding(summary, "over_node", text);
}

void sim_serving_note_over_node(const sim_config *cfg, json_t *summary)
{
    if (sim_config_dram_used(cfg)) note_over(summary, cfg, true, cfg->dram_bytes, sim_config_node_dram(cfg));
    note_over(summary, cfg, false, cfg->ssd_bytes, sim_config_node_disk(cfg));
}

bool sim_serving_short_step_text(char *buf, size_t n, const sim_cost *cost)
{
    double gpu_s = sim_cost_short_step_s(cost);
    if (!(gpu_s > 0)) return false;
    snprintf(buf, n,
             "a decode step of one sequence at 512 tokens of context takes %.1f ms on the GPU here, shorter than "
             "the %.1f ms of the same step on one H100 for Llama-3.1-8B, the shortest of the training runs the CPU "
             "constants (engine%s.iter_overhead_ms, seq_overhead_ms) were fitted on: vLLM prepares a step while the "
             "one before runs, so its CPU work may bound steps this short, where kvsim adds the constants to them; "
             "read latencies as optimistic, by up to vLLM's CPU time a step (docs/validation.md, section 4)",
             gpu_s * 1e3, sim_cost_fit_floor_s(cost) * 1e3, cost->measured ? ".measured" : "");
    return true;
}

void sim_serving_note_short_steps(json_t *summary, const sim_cost *cost, const char *what)
{
    char tail[800], text[900];
    if (!sim_serving_short_step_text(tail, sizeof tail, cost)) return;
    snprintf(text, sizeof text, "%s: %s", what, tail);
    sim_serving_add_finding(summary, "short_steps", text);
}

void sim_serving_note_fit_range(json_t *summary, const sim_cost *cost, const char *what, int peak_seqs, double share)
{
    int fit = sim_cost_fit_seqs(cost);
    if (!fit || peak_seqs <= fit) return;
    char tail[560], text[640];
    sim_serving_fit_range_tail(tail, sizeof tail, cost, share, "such an iteration", "steps are");
    snprintf(text, sizeof text, "%s reached %d sequences, beyond %s", what, peak_seqs, tail);
    sim_serving_add_finding(summary, "fit_range", text);
    json_object_set_new(
        summary, "fit_range",
        json_pack("{s:i, s:i, s:f}", "peak_seqs", peak_seqs, "fitted_seqs", fit, "overhead_share", share));
}
