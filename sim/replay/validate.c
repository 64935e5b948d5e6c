/* sim/replay/validate.c — an experiment of a measurements file as a kvsim
 * configuration and workload (sim/replay/validate.h, docs/validation.md).
 *
 * Each knob of the engine block maps to one config key, and each field of
 * the workload to one generator option. What kvsim cannot express marks the
 * experiment "not expressible" with the reason, and the file's other
 * experiments still run: a key not in these tables (so a file from a newer
 * study never runs with a setting silently dropped), an engine other than
 * vLLM, a model or hardware with no preset, a workload kind or load kvsim
 * does not generate, a knob it reads but cannot honour (a dtype other than
 * 16-bit, a KV-cache dtype other than 16-bit or FP8). A value of the wrong
 * type or out of range is a broken file: an error naming it. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/config/model.h"
#include "sim/replay/validate_int.h"
#include "sim/trace/trace.h"

static void add_set(vexp *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_set(vexp *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    e->sets = sim_xrealloc(e->sets, (size_t)(e->nsets + 1) * sizeof *e->sets);
    e->sets[e->nsets++] = sim_xstrdup(buf);
}

/* The first reason kvsim cannot express e, printf-style; later ones are
 * dropped. */
static void not_expressible(vexp *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void not_expressible(vexp *e, const char *fmt, ...)
{
    if (e->why[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->why, sizeof e->why, fmt, ap);
    va_end(ap);
}

/* Whether s is one of list (NULL-terminated). */
static bool one_of(const char *s, const char *const *list)
{
    while (*list && strcmp(*list, s)) list++;
    return *list != NULL;
}

/* A number field; `what` names it in errors. */
static int num_at(const vexp *e, const json_t *obj, const char *key, bool required, double lo, double hi, double *out,
                  sim_err *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v && !required) return 0;
    if (!json_is_number(v))
        return sim_errf(err, "%s: experiment '%s': %s.%s: %s", e->file, e->id, e->block, key,
                        v ? "expected a number" : "missing");
    *out = json_number_value(v);
    if (!(*out >= lo && *out <= hi))
        return sim_errf(err, "%s: experiment '%s': %s.%s: %g is out of range [%g, %g]", e->file, e->id, e->block, key,
                        *out, lo, hi);
    return 0;
}

/* num_at for a count: a whole number (a tp of 1.5 once ran as 1, and
 * 300.5 requests were taken, where a seed of 1.5 was refused). */
static int int_at(const vexp *e, const json_t *obj, const char *key, bool required, double lo, double hi, double *out,
                  sim_err *err)
{
    if (num_at(e, obj, key, required, lo, hi, out, err)) return -1;
    if (json_object_get(obj, key) && *out != floor(*out))
        return sim_errf(err, "%s: experiment '%s': %s.%s: %g is not a whole number", e->file, e->id, e->block, key,
                        *out);
    return 0;
}

/* An optional string field: *out stays NULL when absent. */
static int string_at(const vexp *e, const json_t *obj, const char *key, const char **out, sim_err *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    if (!json_is_string(v))
        return sim_errf(err, "%s: experiment '%s': %s.%s: expected a string", e->file, e->id, e->block, key);
    *out = json_string_value(v);
    return 0;
}

static int bool_at(const vexp *e, const json_t *obj, const char *key, bool *out, sim_err *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    if (!json_is_boolean(v))
        return sim_errf(err, "%s: experiment '%s': %s.%s: expected true or false", e->file, e->id, e->block, key);
    *out = json_is_true(v);
    return 0;
}

/* Whether k names free text, which any block may carry and no setting is. */
static bool comment_key(const char *k)
{
    static const char *const names[] = {"about", "source", "notes", "note", "comment", "description", NULL};
    return one_of(k, names);
}

/* Every key of obj is one of `known` (NULL-terminated) or free text; the
 * experiment is not expressible otherwise (a knob kvsim does not read is
 * never dropped). */
static void known_keys(vexp *e, const json_t *obj, const char *const *known, const char *next)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)obj, k, v) if (!one_of(k, known) && !comment_key(k))
        not_expressible(e, "unknown %s key '%.64s': kvsim does not read it (%s)", e->block, k, next);
}

/* ---- engine ------------------------------------------------------------------ */

static const char *const engine_keys[] = {
    "name",
    "max_num_batched_tokens",
    "max_num_seqs",
    "max_model_len",
    "gpu_memory_utilization",
    "block_size",
    "enable_prefix_caching",
    "enable_chunked_prefill",
    "dtype",
    "cpu_offload_gib",
    "kv_cache_dtype",
    "enable_expert_parallel",
    NULL,
};

/* vLLM's --kv-cache-dtype: auto (and the 16-bit types) keep the weights'
 * element type; the FP8 ones are model.kv_dtype; another (fp8_inc,
 * fp8_ds_mla) is not expressible. */
static int engine_kv_dtype(vexp *e, const json_t *eng, sim_err *err)
{
    const char *s = NULL;
    if (string_at(e, eng, "kv_cache_dtype", &s, err)) return -1;
    if (!s) return 0;
    static const char *const same[] = {"auto", "bfloat16", "float16", "half", NULL};
    static const char *const fp8[] = {"fp8", "fp8_e4m3", "fp8_e5m2", NULL};
    if (one_of(s, same)) return 0;
    if (one_of(s, fp8)) add_set(e, "model.kv_dtype=%s", s);
    else not_expressible(e, "engine.kv_cache_dtype is not auto, a 16-bit type, fp8, fp8_e4m3 or fp8_e5m2");
    return 0;
}

static int engine_dtype(vexp *e, const json_t *eng, sim_err *err)
{
    const char *s = NULL;
    if (string_at(e, eng, "dtype", &s, err)) return -1;
    if (!s) return 0;
    static const char *const known[] = {"auto", "half", "float16", "bfloat16", "float", "float32"}; /* vLLM's */
    size_t k = 0;
    while (k < sizeof known / sizeof *known && strcmp(s, known[k])) k++;
    if (k == sizeof known / sizeof *known)
        return sim_errf(err,
                        "%s: experiment '%s': engine.dtype '%s' is not one of auto, half, float16, bfloat16, float, "
                        "float32 (vLLM's --dtype)",
                        e->file, e->id, s);
    if (k >= 4) not_expressible(e, "engine.dtype is not a 16-bit type: the model presets hold 16-bit weights and KV");
    else if (k == 1 || k == 2) add_set(e, "model.torch_dtype=float16"); /* what vLLM computes in (model.c) */
    else if (k == 3) add_set(e, "model.torch_dtype=bfloat16");
    return 0;
}

/* The engine kvsim models is vLLM's V1 engine as the training runs ran it
 * (vLLM 0.15.1, validation/vllm-h100-train.json): its scheduler, CUDA
 * graphs and fused-MoE compiles, with CPU constants (engine.measured.*)
 * fitted on those runs. Another engine is not expressible; another vLLM
 * release is replayed and said, as its per-step CPU work may differ. */
enum { FITTED_VLLM_MAJOR = 0, FITTED_VLLM_MINOR = 15 };

static int engine_name(vexp *e, const json_t *eng, sim_err *err)
{
    const char *s = NULL;
    if (string_at(e, eng, "name", &s, err)) return -1;
    if (!s) return 0;
    const char *v = strcasestr(s, "vllm");
    if (!v) {
        not_expressible(e,
                        "engine.name '%.64s' is not vLLM: kvsim models vLLM's engine (its scheduler, CUDA graphs, "
                        "fused-MoE compiles and CPU constants fitted on vLLM %d.%d runs)",
                        s, FITTED_VLLM_MAJOR, FITTED_VLLM_MINOR);
        return 0;
    }
    v += 4;
    while (*v && !isdigit((unsigned char)*v)) v++;
    int major, minor;
    if (sscanf(v, "%d.%d", &major, &minor) != 2) {
        snprintf(e->engine_note, sizeof e->engine_note,
                 "engine '%.64s' names no vLLM release: its CPU constants were fitted on vLLM %d.%d "
                 "(engine.measured.*, docs/validation.md section 4), and another release's per-step CPU work may "
                 "differ",
                 s, FITTED_VLLM_MAJOR, FITTED_VLLM_MINOR);
        return 0;
    }
    if (major == 0 && minor < 14)
        add_set(e, "engine.async_scheduling=false"); /* its default: async only since v0.14.0 (#27614) */
    if (major != FITTED_VLLM_MAJOR || minor != FITTED_VLLM_MINOR)
        snprintf(e->engine_note, sizeof e->engine_note,
                 "engine '%.64s' is not the vLLM %d.%d its CPU constants were fitted on (engine.measured.*, "
                 "docs/validation.md section 4): its per-step CPU work may differ",
                 s, FITTED_VLLM_MAJOR, FITTED_VLLM_MINOR);
    return 0;
}

static int read_engine(vexp *e, const json_t *eng, sim_err *err)
{
    double budget = 8192, seqs = 256, len = 0, util = 0.9, block = 16, offload = 0;
    bool prefix = true, chunked = true, ep = false;
    e->block = "engine";
    if (!json_is_object(eng)) return sim_errf(err, "%s: experiment '%s': engine: expected an object", e->file, e->id);
    known_keys(e, eng, engine_keys, "docs/validation.md lists the knobs kvsim reads");
    if (int_at(e, eng, "max_num_batched_tokens", true, 1, 1 << 24, &budget, err) ||
        int_at(e, eng, "max_num_seqs", true, 1, 1 << 20, &seqs, err) ||
        int_at(e, eng, "max_model_len", false, 1, 1 << 24, &len, err) ||
        num_at(e, eng, "gpu_memory_utilization", false, 0.01, 1, &util, err) ||
        int_at(e, eng, "block_size", false, 1, 4096, &block, err) ||
        num_at(e, eng, "cpu_offload_gib", false, 0, 1e6, &offload, err) ||
        bool_at(e, eng, "enable_prefix_caching", &prefix, err) ||
        bool_at(e, eng, "enable_chunked_prefill", &chunked, err) ||
        bool_at(e, eng, "enable_expert_parallel", &ep, err) || engine_dtype(e, eng, err) ||
        engine_kv_dtype(e, eng, err) || engine_name(e, eng, err))
        return -1;
    if (!prefix) add_set(e, "engine.prefix_caching=false");
    if (!chunked) add_set(e, "engine.chunked_prefill=false");
    if (ep) add_set(e, "cost.expert_parallel=true"); /* vLLM's --enable-expert-parallel */
    add_set(e, "engine.max_num_batched_tokens=%d", (int)budget);
    add_set(e, "cluster.decode_max_batch=%d", (int)seqs);
    add_set(e, "cluster.decode_hbm_frac=%.17g", util);
    add_set(e, "trace.block_tokens=%d", (int)block);
    add_set(e, "kvstore.block_tokens=%d", (int)block);
    add_set(e, "kvstore.pic_block_tokens=%d", (int)block);
    if (offload > 0) { /* vLLM's native CPU KV offload: page copies (docs/validation.md) */
        add_set(e, "kvstore.lmcache=true");
        add_set(e, "kvstore.transfer=page");
        add_set(e, "kvstore.dram_bytes=%.17g", offload * 1073741824.0);
    }
    e->max_model_len = (int64_t)len;
    e->block_tokens = (int)block;
    return 0;
}

/* ---- workload ------------------------------------------------------------------ */

static const char *const workload_keys[] = {
    "kind",
    "system_prompt_len",
    "question_len",
    "output_len",
    "num_unique_system_prompts",
    "num_users_per_system_prompt",
    "request_order",
    "multi_turn",
    "load",
    "seed",
    NULL,
};

static int read_stages(vexp *e, const json_t *load, sim_err *err)
{
    static const char *const load_keys[] = {"type", "stages", NULL};
    const char *type = json_string_value(json_object_get(load, "type"));
    const json_t *st = json_object_get(load, "stages"), *s;
    e->block = "workload.load";
    if (!json_is_object(load)) /* found by tests/fuzz/fuzz_validate.c: this said nothing */
        return sim_errf(err, "%s: experiment '%s': workload.load: expected an object with type and stages", e->file,
                        e->id);
    known_keys(e, load, load_keys, "type and stages");
    if (!type)
        return sim_errf(err, "%s: experiment '%s': workload.load.type: missing (constant or poisson)", e->file, e->id);
    static const char *const types[] = {"constant", "poisson", NULL};
    if (!one_of(type, types))
        return not_expressible(e, "workload.load.type '%.64s': kvsim generates constant and poisson loads", type), 0;
    if (!json_is_array(st) || json_array_size(st) == 0 || json_array_size(st) > SIM_SP_MAX_STAGES)
        return sim_errf(err, "%s: experiment '%s': workload.load.stages: expected 1 to %d stages", e->file, e->id,
                        SIM_SP_MAX_STAGES);
    e->gen.poisson = !strcmp(type, "poisson");
    e->gen.jittered = !e->gen.poisson; /* inference-perf's constant timer (docs/trace.md) */
    size_t i;
    e->gen.nstages = 0;
    e->block = "workload.load.stages[]";
    json_array_foreach(st, i, s)
    {
        sim_sp_stage *g = &e->gen.stages[e->gen.nstages++];
        if (num_at(e, s, "rate_rps", true, 1e-6, 1e6, &g->rate_rps, err) ||
            num_at(e, s, "duration_s", true, 1e-6, 1e9, &g->duration_s, err))
            return -1;
    }
    return 0;
}

/* vLLM's `vllm bench latency` (vllm/benchmarks/latency.py): one batch of
 * batch_size prompts of input_len token ids, each generating output_len
 * tokens, handed to the LLM class at once and timed to the last token,
 * after warm-up iterations of the same batch. Replayed as that batch at
 * time 0 (--arrivals batch), with no API server in front
 * (engine.measured.frontend_ms = 0: token ids in, no HTTP, no streaming)
 * and no fused-MoE compile (the warm-up met every kernel variant the
 * timed batch meets). measured.requests is the batch; its e2e_ms is the
 * batch's latency (all of its requests end at the same step). */
static int read_latency(vexp *e, const json_t *w, sim_err *err)
{
    static const char *const keys[] = {"kind", "batch_size", "input_len", "output_len", NULL};
    double batch = 0, in = 0, out = 0;
    known_keys(e, w, keys, "batch_size, input_len and output_len");
    if (int_at(e, w, "batch_size", true, 1, 1 << 20, &batch, err) ||
        int_at(e, w, "input_len", true, 1, SIM_TRACE_MAX_TOKENS, &in, err) ||
        int_at(e, w, "output_len", true, 1, SIM_TRACE_MAX_TOKENS, &out, err))
        return -1;
    e->gen.system_prompts = 1;
    e->gen.users_per_prompt = (int)batch;
    e->gen.system_tokens = 0;
    e->gen.question_tokens = (int)in;
    e->gen.output_tokens = (int)out;
    e->gen.batch = true;
    e->fixed = true; /* every draw the same batch of the same lengths: one draw (validate_run.c) */
    e->gen.nstages = 1;
    e->gen.stages[0] = (sim_sp_stage){.rate_rps = batch, .duration_s = 1};
    add_set(e, "engine.measured.frontend_ms=0");
    add_set(e, "engine.measured.moe_jit_compile_ms=0");
    snprintf(e->workload, sizeof e->workload, "vllm bench latency, batch %.0f: %.0f in, %.0f out", batch, in, out);
    return 0;
}

static int read_workload(vexp *e, const json_t *w, sim_err *err)
{
    const char *kind = json_string_value(json_object_get(w, "kind"));
    double sys = 0, q = 0, out = 0, prompts = 0, users = 0, seed = 1;
    e->block = "workload";
    if (!json_is_object(w)) return sim_errf(err, "%s: experiment '%s': workload: expected an object", e->file, e->id);
    if (!kind)
        return sim_errf(err,
                        "%s: experiment '%s': workload.kind: missing (\"inference-perf shared_prefix\" or \"vllm "
                        "bench latency\")",
                        e->file, e->id);
    if (!strcmp(kind, "vllm bench latency")) return read_latency(e, w, err);
    static const char *const kinds[] = {"inference-perf shared_prefix", "shared_prefix", "shared-prefix", NULL};
    if (!one_of(kind, kinds)) /* its other fields are another generator's: not read */
        return not_expressible(e,
                               "workload.kind '%.64s' is not a workload kvsim generates (\"inference-perf "
                               "shared_prefix\" or \"vllm bench latency\")",
                               kind),
               0;
    known_keys(e, w, workload_keys, "docs/validation.md lists the fields");
    if (int_at(e, w, "system_prompt_len", true, 0, 1 << 24, &sys, err) ||
        int_at(e, w, "question_len", true, 1, 1 << 24, &q, err) ||
        int_at(e, w, "output_len", true, 1, 1 << 24, &out, err) ||
        int_at(e, w, "num_unique_system_prompts", true, 1, 1 << 20, &prompts, err) ||
        int_at(e, w, "num_users_per_system_prompt", true, 1, 1 << 20, &users, err) ||
        bool_at(e, w, "multi_turn", &e->gen.multi_turn, err) || num_at(e, w, "seed", false, 0, 0x1p53, &seed, err) ||
        read_stages(e, json_object_get(w, "load"), err))
        return -1;
    if (seed != floor(seed))
        return sim_errf(err, "%s: experiment '%s': workload.seed: %g is not a whole number", e->file, e->id, seed);
    e->gen.seed = (uint64_t)seed; /* the first draw's (validate_draws.c) */
    e->gen.system_tokens = (int)sys;
    e->gen.question_tokens = (int)q;
    e->gen.output_tokens = (int)out;
    e->gen.system_prompts = (int)prompts;
    e->gen.users_per_prompt = (int)users;
    /* what `--by workload` groups by: lengths, the load and its stages'
     * rates, multi-turn (it once held the lengths alone, and pooled 8 and
     * 20 req/s, constant and poisson, single and multi-turn runs) */
    int u = snprintf(e->workload, sizeof e->workload, "shared_prefix %.0f+%.0f in, %.0f out, %s", sys, q, out,
                     e->gen.poisson ? "poisson" : "constant");
    for (int k = 0; k < e->gen.nstages && u < (int)sizeof e->workload; k++)
        u +=
            snprintf(e->workload + u, sizeof e->workload - (size_t)u, "%s%g", k ? "," : " ", e->gen.stages[k].rate_rps);
    if (u < (int)sizeof e->workload)
        snprintf(e->workload + u, sizeof e->workload - (size_t)u, " req/s%s", e->gen.multi_turn ? ", multi-turn" : "");
    if (e->max_model_len > 0 && sys + q + out > (double)e->max_model_len)
        not_expressible(e, "a request (system + question + output tokens) is longer than engine.max_model_len");
    return 0;
}

/* ---- model, hardware, measured ------------------------------------------------------ */

/* The preset a model name means: itself, else the one it is read as
 * (preset_match.c, said in model_via); false when none. */
static bool model_preset(vexp *e, const char *model, const char *hf, char *out, size_t n)
{
    char path[4096];
    bool by_hf;
    sim_err ignored;
    snprintf(out, n, "%s", model);
    if (!sim_preset_path("models", model, path, sizeof path, &ignored)) return true;
    if (sim_model_preset_match(model, hf, out, n, &by_hf)) return false;
    snprintf(e->model_via, sizeof e->model_via, "model '%.64s' read as the preset %s (%s)", model, out,
             by_hf ? "its Hugging Face id, fine-tune suffixes aside"
                   : "the same name without case, separators and "
                     "fine-tune suffixes");
    return true;
}

/* Whether s holds word w (case aside) with no letter or digit either side. */
static bool has_word(const char *s, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = s; (p = strcasestr(p, w)); p++)
        if ((p == s || !isalnum((unsigned char)p[-1])) && !isalnum((unsigned char)p[n])) return true;
    return false;
}

/* The length of a preset name's family: name[0..len) less a trailing
 * "x<GPUs>" (h100x2: 4, "h100"); len itself when it has none (cpu-local). */
static size_t family_len(const char *name, size_t len)
{
    const char *x = name + len;
    while (x > name && isdigit((unsigned char)x[-1])) x--;
    return x > name + 1 && x < name + len && x[-1] == 'x' ? (size_t)(x - 1 - name) : len;
}

/* The GPU of a hardware preset, for `--by gpu`: its name (a path's file
 * name, less ".json") less its "x<GPUs>": h100x2 is "h100". */
static void gpu_family(const char *hwname, char *out, size_t n)
{
    const char *base = strrchr(hwname, '/') ? strrchr(hwname, '/') + 1 : hwname;
    snprintf(out, n, "%.*s", (int)family_len(base, strcspn(base, ".")), base);
}

/* Whether the name says another part of the family than the preset at
 * path: the PCIe card where the preset is the SXM module (an H100 PCIe has
 * 2.0 TB/s of HBM against the SXM's 3.35), or an HBM size ("40GB") other
 * than the preset's. Either was once read as "its GPU". Says which in why. */
static bool other_part(const char *name, const char *preset, const char *path, char *why, size_t n)
{
    json_t *o = json_load_file(path, 0, NULL);
    const char *about = json_string_value(json_object_get(o, "about"));
    double bytes = json_number_value(json_object_get(o, "hbm_bytes_per_gpu")), gb = bytes / 1e9, gib = bytes / 0x1p30;
    bool pcie = has_word(name, "pcie") && about && strcasestr(about, "sxm"); /* the presets' host link is PCIe */
    int said = 0;
    for (const char *p = name; *p && !said; p++) /* "40GB", "40 GB": the first size the name gives */
        if (isdigit((unsigned char)*p) && (p == name || !isalnum((unsigned char)p[-1]))) {
            char *end;
            long v = strtol(p, &end, 10);
            while (*end == ' ') end++;
            if (!strncasecmp(end, "gb", 2) && !isalnum((unsigned char)end[2])) said = (int)v;
        }
    json_decref(o);
    if (pcie)
        snprintf(why, n, "'%.64s' is a PCIe card and the preset %s is not (its HBM bandwidth and clocks differ)", name,
                 preset);
    else if (said > 0 && gb > 0 && fabs(said - gb) > 0.05 * gb && fabs(said - gib) > 0.05 * gib) /* GB or GiB */
        snprintf(why, n, "'%.64s' has %d GB of HBM a GPU and the preset %s %.0f %s", name, said, preset,
                 fabs(gib - round(gib)) < 0.01 ? gib : gb, fabs(gib - round(gib)) < 0.01 ? "GiB" : "GB");
    else return false;
    return true;
}

/* A hardware name that is no preset ("H100", "NVIDIA H100 80GB HBM3") read
 * as its GPU's preset at the experiment's tp: the longest family of
 * configs/hardware/ (h100, gb200, …: a preset's name less "x<GPUs>") that
 * the name holds as a word, then "x" tp. Said in hw_via; false when none. */
static bool hardware_family(vexp *e, const char *name, int tp, char *out, size_t n, char *why, size_t wn)
{
    char names[4096], best[32] = "", path[4096];
    sim_err ignored;
    sim_preset_names("hardware", names, sizeof names);
    for (char *tok = strtok(names, ", "); tok; tok = strtok(NULL, ", ")) {
        size_t len = strlen(tok), k = family_len(tok, len);
        if (k == len) continue;
        tok[k] = 0; /* the family */
        if (strlen(tok) > strlen(best) && strlen(tok) < sizeof best && has_word(name, tok))
            snprintf(best, sizeof best, "%s", tok);
    }
    if (!best[0]) return false;
    snprintf(out, n, "%sx%d", best, tp);
    if (!sim_preset_path("hardware", out, path, sizeof path, &ignored) && other_part(name, out, path, why, wn))
        return false;
    if (!sim_preset_path("hardware", out, path, sizeof path, &ignored)) {
        snprintf(e->hw_via, sizeof e->hw_via, "hardware '%.64s' read as the preset %s (its GPU, tp = %d)", name, out,
                 tp);
        return true;
    }
    /* no preset of tp GPUs: tp of a larger node's (tp_on_node), 8 GPUs first */
    for (int node = 8; node > tp; node /= 2) {
        snprintf(out, n, "%sx%d", best, node);
        if (node % tp || sim_preset_path("hardware", out, path, sizeof path, &ignored)) continue;
        if (other_part(name, out, path, why, wn)) return false;
        snprintf(e->hw_via, sizeof e->hw_via, "hardware '%.64s' read as the preset %s (its GPU), tp = %d of its %d",
                 name, out, tp, node);
        return true;
    }
    return false;
}

/* The experiment's tp on a hardware preset of another node size: vLLM's
 * tensor parallelism over tp of the node's GPUs (cluster.gpus_per_instance);
 * false (not expressible) when tp does not divide the node's GPUs. */
static bool tp_on_node(vexp *e, const char *hwname, int tp)
{
    char path[4096];
    sim_err ignored;
    if (sim_preset_path("hardware", hwname, path, sizeof path, &ignored)) return true;
    json_t *o = json_load_file(path, 0, NULL);
    int node = (int)json_integer_value(json_object_get(o, "gpus_per_node"));
    json_decref(o);
    if (node <= 0 || node == tp) return true;
    if (node % tp)
        return not_expressible(e,
                               "tp = %d does not split hardware '%s''s nodes of %d GPUs evenly: give a tp that "
                               "divides %d",
                               tp, hwname, node, node),
               false;
    add_set(e, "cluster.gpus_per_instance=%d", tp);
    return true;
}

static int read_target(vexp *e, const json_t *x, sim_err *err)
{
    const char *model = json_string_value(json_object_get(x, "model"));
    const char *hf = json_string_value(json_object_get(x, "hf_model"));
    const json_t *hw = json_object_get(x, "hardware");
    double tp = 1;
    char path[4096], preset[64];
    e->block = "experiment";
    if (!model) return sim_errf(err, "%s: experiment '%s': model: missing", e->file, e->id);
    if (int_at(e, x, "tp", false, 1, 64, &tp, err)) return -1;
    e->tp = (int)tp;
    snprintf(e->model, sizeof e->model, "%s", model);
    if (!model_preset(e, model, hf, preset, sizeof preset)) {
        return not_expressible(e,
                               "model '%.64s' has no preset in configs/models/ (kvsim model import CONFIG.json writes "
                               "one from a Hugging Face config)",
                               model),
               0;
    }
    char hwname[64];
    snprintf(hwname, sizeof hwname, "%s", json_is_string(hw) ? json_string_value(hw) : "");
    if (!hwname[0]) snprintf(hwname, sizeof hwname, "h100x%d", (int)tp);
    if (sim_preset_path("hardware", hwname, path, sizeof path, err)) {
        char family[64], why[256] = "";
        if (!hardware_family(e, hwname, (int)tp, family, sizeof family, why, sizeof why)) {
            if (why[0]) return not_expressible(e, "%s: no preset in configs/hardware/ is that part", why), 0;
            return not_expressible(e, "no hardware preset '%s' for tp = %d in configs/hardware/", hwname, (int)tp), 0;
        }
        snprintf(hwname, sizeof hwname, "%s", family);
    }
    sim_model m;
    if (sim_model_load(preset, &m, err)) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return sim_errf(err, "%s: experiment '%s': model '%s': %s", e->file, e->id, preset, msg);
    }
    if (json_object_get(x, "tp") && !tp_on_node(e, hwname, (int)tp)) return 0;
    add_set(e, "model=%s", preset);
    add_set(e, "hardware=%s", hwname);
    gpu_family(hwname, e->gpu, sizeof e->gpu);
    snprintf(e->model, sizeof e->model, "%s", preset);
    return 0;
}

static int read_measured(vexp *e, const json_t *m, sim_err *err)
{
    double n = 0;
    e->block = "measured";
    if (!json_is_object(m)) return sim_errf(err, "%s: experiment '%s': measured: expected an object", e->file, e->id);
    if (int_at(e, m, "requests", true, 1, 1e9, &n, err)) return -1;
    e->requests = (int64_t)n;
    e->measured = m;
    /* every statistic a positive number, checked with the file (it once
     * failed only the replay, exit 0, as "not replayed") */
    const char *metric, *stat;
    const json_t *stats, *v;
    json_object_foreach((json_t *)m, metric, stats)
    {
        if (!json_is_object(stats)) continue; /* requests */
        json_object_foreach((json_t *)stats, stat, v) if (
            !json_is_number(v) ||
            json_number_value(v) <=
                0) return sim_errf(err,
                                   "%s: experiment '%s': measured.%s.%s: expected a positive number (milliseconds)",
                                   e->file, e->id, metric, stat);
    }
    return 0;
}

int vexp_read(vexp *e, const char *file, const json_t *x, sim_err *err)
{
    static const char *const keys[] = {"id",     "model",    "hf_model", "tp",    "hardware",
                                       "engine", "workload", "measured", "about", NULL};
    memset(e, 0, sizeof *e);
    e->file = file;
    e->id = json_string_value(json_object_get(x, "id"));
    if (!e->id) return sim_errf(err, "%s: an experiment has no \"id\"", file);
    e->block = "experiment";
    e->gen = sim_tracegen_sp_default_opts();
    add_set(e, "cluster.mode=aggregated");
    add_set(e, "cluster.instances=1");
    add_set(e, "cost.compute=auto");            /* measured where the preset names tables, else engine */
    add_set(e, "engine.async_scheduling=true"); /* vLLM's default since v0.14.0 (vllm-project/vllm#27614) */
    known_keys(e, x, keys, "docs/validation.md lists the fields");
    if (read_target(e, x, err) || read_engine(e, json_object_get(x, "engine"), err) ||
        read_workload(e, json_object_get(x, "workload"), err) || read_measured(e, json_object_get(x, "measured"), err))
        return -1;
    e->gen.block_tokens = e->block_tokens;
    e->gen.requests = e->requests; /* the replay sends more (validate_run.c) */
    return 0;
}

void vexp_free(vexp *e)
{
    for (int i = 0; i < e->nsets; i++) free(e->sets[i]);
    free(e->sets);
}

/* ---- the gate (--max-error) --------------------------------------------- */

/* Row's value at metric "name.stat" in its `what` object (mpe, measured):
 * NULL when the row has none. */
static const json_t *metric_value(const json_t *row, const char *what, const char *metric)
{
    char name[64];
    const char *dot = strchr(metric, '.');
    if (!dot || dot - metric >= (long)sizeof name) return NULL;
    snprintf(name, sizeof name, "%.*s", (int)(dot - metric), metric);
    return json_object_get(json_object_get(json_object_get(row, what), name), dot + 1);
}

bool sim_validate_has_metric(const json_t *report, const char *metric)
{
    const json_t *row;
    size_t i;
    json_array_foreach(json_object_get(report, "experiments"), i,
                       row) if (metric_value(row, "mpe", metric)) return true;
    return false;
}

/* An "ok" experiment that has none of the judged metrics measured and
 * predicted was judged on nothing and passed (an experiment measuring only
 * TTFT, 480% off, under the default gate): it fails, saying so. */
static void fail_unjudged(const json_t *report, char *const *metrics, int n, json_t *fails)
{
    const json_t *row;
    size_t i;
    json_array_foreach(json_object_get(report, "experiments"), i, row)
    {
        if (strcmp(json_string_value(json_object_get(row, "status")), "ok")) continue;
        bool judged = false;
        for (int k = 0; k < n && !judged; k++) judged = metric_value(row, "mpe", metrics[k]) != NULL;
        if (judged) continue;
        char why[512];
        int u = snprintf(why, sizeof why, "it measures none of the judged metrics, ");
        for (int k = 0; k < n && u < (int)sizeof why; k++)
            u += snprintf(why + u, sizeof why - (size_t)u, "%s%s", k ? ", " : "", metrics[k]);
        if (u < (int)sizeof why) snprintf(why + u, sizeof why - (size_t)u, "; name what it measures with --metric");
        json_array_append_new(
            fails, json_pack("{s:O, s:s, s:s}", "id", json_object_get(row, "id"), "status", "not judged", "why", why));
    }
}

int sim_validate_gate(const json_t *report, double max_pct, char *const *metrics, int n, json_t **out, sim_err *err)
{
    json_t *fails = json_array();
    const json_t *row;
    size_t i;
    for (int k = 0; k < n; k++) {
        bool measured = false, again = false;
        for (int j = 0; j < k; j++) again |= !strcmp(metrics[j], metrics[k]);
        if (again) continue; /* a metric named twice is judged once (issue 40 item 7) */
        json_array_foreach(json_object_get(report, "experiments"), i, row)
        {
            const json_t *e = metric_value(row, "mpe", metrics[k]);
            measured |= e != NULL; /* measured and predicted: a statistic kvsim does not give is not judged */
            if (e && fabs(json_number_value(e)) > max_pct)
                json_array_append_new(fails, json_pack("{s:O, s:s, s:f}", "id", json_object_get(row, "id"), "metric",
                                                       metrics[k], "error_pct", json_number_value(e)));
        }
        if (!measured) {
            json_decref(fails);
            return sim_errf(err,
                            "--metric %s: no experiment has it measured and predicted (give metric.stat: e2e_ms, "
                            "ttft_ms, itl_ms or tpot_ms; mean, p50, p90 or p99)",
                            metrics[k]);
        }
    }
    json_array_foreach(json_object_get(report, "experiments"), i,
                       row) if (strcmp(json_string_value(json_object_get(row, "status")), "ok"))
        json_array_append_new(fails, json_pack("{s:O, s:O, s:O}", "id", json_object_get(row, "id"), "status",
                                               json_object_get(row, "status"), "why", json_object_get(row, "why")));
    fail_unjudged(report, metrics, n, fails);
    *out = fails;
    return 0;
}
