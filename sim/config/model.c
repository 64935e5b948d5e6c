/* sim/config/model.c — loading model presets and deriving KV and weight sizes
 * (the KV format: element type and multi-head latent attention, model.h). */
#include "sim/config/model.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct int_field {
    const char *key;
    size_t offset;
    bool optional; /* absent = 0 (unknown) */
} int_field;

static const int_field model_int_fields[] = {
    {"layers", offsetof(sim_model, layers), false},
    {"hidden", offsetof(sim_model, hidden), false},
    {"heads", offsetof(sim_model, heads), false},
    {"kv_heads", offsetof(sim_model, kv_heads), false},
    {"head_dim", offsetof(sim_model, head_dim), false},
    {"dtype_bytes", offsetof(sim_model, dtype_bytes), false},
    {"intermediate", offsetof(sim_model, intermediate), true},
    {"vocab", offsetof(sim_model, vocab), true},
    {"context_window", offsetof(sim_model, context_window), true},
    {"experts", offsetof(sim_model, experts), true},
    {"experts_per_token", offsetof(sim_model, experts_per_token), true},
    {"moe_intermediate", offsetof(sim_model, moe_intermediate), true},
    {"shared_experts", offsetof(sim_model, shared_experts), true},
    {"dense_layers", offsetof(sim_model, dense_layers), true},
    {"kv_lora_rank", offsetof(sim_model, kv_lora_rank), true},
    {"qk_rope_head_dim", offsetof(sim_model, qk_rope_head_dim), true},
    {"q_lora_rank", offsetof(sim_model, q_lora_rank), true},
};

/* KV element types by name and their bytes ("auto" takes the weights'). */
static const struct {
    const char *name;
    int bytes;
} kv_dtypes[] = {{"bf16", 2}, {"fp16", 2}, {"fp8", 1}, {"fp8_e4m3", 1}, {"fp8_e5m2", 1}};

int sim_model_kv_dtype_bytes(const char *kv_dtype, int weight_bytes)
{
    if (!strcmp(kv_dtype, "auto")) return weight_bytes;
    for (size_t i = 0; i < sizeof kv_dtypes / sizeof kv_dtypes[0]; i++)
        if (!strcmp(kv_dtypes[i].name, kv_dtype)) return kv_dtypes[i].bytes;
    return 0;
}

/* The KV format: its element type (kv_dtype, absent = "auto") and MLA's two
 * dimensions, which go together (a latent without its RoPE key, or the
 * reverse, is no published architecture). */
static int read_kv_format(const json_t *obj, sim_model *out, sim_err *err)
{
    const json_t *v = json_object_get(obj, "kv_dtype");
    char names[128] = "auto";
    for (size_t i = 0, at = 4; i < sizeof kv_dtypes / sizeof kv_dtypes[0]; i++)
        at += (size_t)snprintf(names + at, sizeof names - at, ", %s", kv_dtypes[i].name);
    if (v && !json_is_string(v)) return sim_errf(err, "model: field 'kv_dtype' must be a string (%s)", names);
    snprintf(out->kv_dtype, sizeof out->kv_dtype, "%s", v ? json_string_value(v) : "auto");
    out->kv_dtype_bytes = sim_model_kv_dtype_bytes(out->kv_dtype, out->dtype_bytes);
    if (out->kv_dtype_bytes == 0)
        return sim_errf(err, "model: field 'kv_dtype': '%s' is not one of %s", json_string_value(v), names);
    if ((out->kv_lora_rank > 0) != (out->qk_rope_head_dim > 0))
        return sim_errf(err, "model: fields 'kv_lora_rank' and 'qk_rope_head_dim' (multi-head latent attention) go "
                             "together: give both or neither");
    if (out->q_lora_rank > 0 && out->kv_lora_rank == 0)
        return sim_errf(err, "model: field 'q_lora_rank' is multi-head latent attention's query latent: it needs "
                             "'kv_lora_rank' and 'qk_rope_head_dim'");
    return 0;
}

/* A field of two names, `off` (or absent) and `on`: *out says which. */
static int read_either(const json_t *obj, const char *key, const char *off, const char *on, bool *out, sim_err *err)
{
    const json_t *v = json_object_get(obj, key);
    const char *s = v ? json_string_value(v) : off;
    if (!s || (strcmp(s, off) && strcmp(s, on)))
        return sim_errf(err, "model: field '%s' must be \"%s\" or \"%s\"", key, off, on);
    *out = !strcmp(s, on);
    return 0;
}

/* How the weights are quantized beyond their element size: absent or
 * "none", or "fp8_block" (FP8 with a scale per 128x128 block, DeepSeek-V3's
 * checkpoint; 1-byte weights). */
static int read_weight_quant(const json_t *obj, sim_model *out, sim_err *err)
{
    if (read_either(obj, "weight_quant", "none", "fp8_block", &out->fp8_block, err)) return -1;
    if (out->fp8_block && out->dtype_bytes != 1)
        return sim_errf(err, "model: field 'weight_quant' \"fp8_block\" is FP8: 'dtype_bytes' must be 1, not %d",
                        out->dtype_bytes);
    return 0;
}

/* The 16-bit type vLLM computes in (config.json's torch_dtype, which its
 * --dtype auto takes): absent or "bfloat16", or "float16" (Llama 2). The
 * bytes are dtype_bytes' either way; vLLM's all-reduce dispatch is not. */
static int read_torch_dtype(const json_t *obj, sim_model *out, sim_err *err)
{
    return read_either(obj, "torch_dtype", "bfloat16", "float16", &out->fp16, err);
}

static int get_positive(const json_t *obj, const char *key, double *out, sim_err *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v) return sim_errf(err, "model: missing field '%s'", key);
    if (!json_is_number(v) || json_number_value(v) <= 0)
        return sim_errf(err, "model: field '%s' must be a positive number", key);
    *out = json_number_value(v);
    return 0;
}

/* A mixture of experts names k of its E experts per token and keeps at
 * least one routed layer; its MoE fields mean nothing on a dense model. */
static int check_moe(const sim_model *m, sim_err *err)
{
    if (m->experts > 1) {
        if (m->experts_per_token < 1 || m->experts_per_token > m->experts)
            return sim_errf(err,
                            "model: field 'experts_per_token' must be 1 to 'experts' (%d) for a mixture of experts",
                            m->experts);
        if (m->dense_layers >= m->layers)
            return sim_errf(err, "model: field 'dense_layers' (%d) must be below 'layers' (%d)", m->dense_layers,
                            m->layers);
        return 0;
    }
    if (m->moe_intermediate || m->shared_experts || m->dense_layers)
        return sim_errf(err, "model: fields 'moe_intermediate', 'shared_experts' and 'dense_layers' need 'experts' "
                             "above 1 (a mixture of experts)");
    return 0;
}

int sim_model_check_heads(long heads, long kv_heads, const char *heads_key, const char *kv_key, sim_err *err)
{
    if (kv_heads > heads)
        return sim_errf(err,
                        "%s (%ld) exceeds %s (%ld): each KV head serves a group of query heads, so there are at "
                        "most as many KV heads as heads (%ld for multi-head attention, fewer for grouped-query)",
                        kv_key, kv_heads, heads_key, heads, heads);
    if (heads % kv_heads) {
        long below = kv_heads, above = kv_heads;
        while (heads % below) below--;
        while (heads % above) above++;
        return sim_errf(err,
                        "%s (%ld) does not divide %s (%ld): grouped-query attention shares each KV head among "
                        "the same number of query heads (try %ld or %ld)",
                        kv_key, kv_heads, heads_key, heads, below, above);
    }
    return 0;
}

/* The integer fields, the embedding flag and the parameter count: given, or
 * derived from the architecture when intermediate and vocab are known. */
static int read_shape(const json_t *obj, sim_model *out, sim_err *err)
{
    for (size_t i = 0; i < sizeof model_int_fields / sizeof model_int_fields[0]; i++) {
        const int_field *f = &model_int_fields[i];
        double v;
        if (f->optional && !json_object_get(obj, f->key)) continue;
        if (get_positive(obj, f->key, &v, err)) return -1;
        *(int *)((char *)out + f->offset) = (int)v;
    }
    const json_t *tied = json_object_get(obj, "tied_embeddings");
    if (tied && !json_is_boolean(tied)) return sim_errf(err, "model: field 'tied_embeddings' must be true or false");
    out->tied_embeddings = json_is_true(tied);
    if (check_moe(out, err) || sim_model_check_heads(out->heads, out->kv_heads, "model.heads", "model.kv_heads", err))
        return -1;
    if (json_object_get(obj, "params")) return get_positive(obj, "params", &out->params, err);
    out->params = sim_model_derived_params(out);
    if (out->params <= 0)
        return sim_errf(err, "model: missing field 'params' (or give 'intermediate' and 'vocab' to derive it)");
    return 0;
}

/* Eq. 1's linear term for a mixture of experts, when the preset does not
 * give flops_b: the 2 FLOPs per active weight of a token's pass, less the
 * embedding and LM head (a gather, and the last token's logits only):
 * b = 2 · (P_active − V · d · (tied ? 1 : 2)) / (l · d²). Mixtral-8x7B
 * 47.0 (a dense Llama's 22 is Mooncake's fit for LLaMA3-70B and would
 * count a quarter of Mixtral's per-token work). */
static double moe_flops_b(const sim_model *m)
{
    double d = m->hidden, embed = (double)m->vocab * d * (m->tied_embeddings ? 1 : 2);
    return 2 * (sim_model_active_params(m) - embed) / (m->layers * d * d);
}

int sim_model_from_json(const json_t *obj, sim_model *out, sim_err *err)
{
    if (!json_is_object(obj)) return sim_errf(err, "model: expected a JSON object");
    memset(out, 0, sizeof *out);
    const char *name = json_string_value(json_object_get(obj, "name"));
    snprintf(out->name, sizeof out->name, "%s", name ? name : "inline");
    if (read_shape(obj, out, err) || read_kv_format(obj, out, err) || read_weight_quant(obj, out, err) ||
        read_torch_dtype(obj, out, err))
        return -1;
    out->flops_a = 4;
    out->flops_b = 22;
    if (json_object_get(obj, "flops_a") && get_positive(obj, "flops_a", &out->flops_a, err)) return -1;
    if (json_object_get(obj, "flops_b")) return get_positive(obj, "flops_b", &out->flops_b, err);
    if (out->experts > 1) out->flops_b = moe_flops_b(out);
    return 0;
}

/* Multi-head latent attention's projections (DeepSeek-V2 §2.1; the
 * Hugging Face DeepseekV3Attention): queries through the q_lora_rank
 * latent (d · q_lora, then q_lora · heads · (head_dim + rope); without a
 * latent d · heads · (head_dim + rope)); keys and values through the
 * shared kv_lora_rank latent plus one RoPE key (d · (kv_lora + rope)),
 * expanded per head to a key and a value (kv_lora · heads · 2 · head_dim,
 * head_dim standing for qk_nope_head_dim and v_head_dim); the output
 * heads · head_dim · d. The two latents' RMSNorms add q_lora + kv_lora. */
static double mla_attention_params(const sim_model *m, double *norms)
{
    double d = m->hidden, h = m->heads, hd = m->head_dim, rope = m->qk_rope_head_dim;
    double q = m->q_lora_rank > 0 ? d * m->q_lora_rank + m->q_lora_rank * h * (hd + rope) : d * h * (hd + rope);
    *norms += m->q_lora_rank + m->kv_lora_rank;
    return q + d * (m->kv_lora_rank + rope) + m->kv_lora_rank * h * 2 * hd + h * hd * d;
}

double sim_model_derived_params(const sim_model *m)
{
    if (m->intermediate <= 0 || m->vocab <= 0) return 0;
    double d = m->hidden, qo = (double)m->heads * m->head_dim, kv = (double)m->kv_heads * m->head_dim;
    double attention = d * qo + 2 * d * kv + qo * d, mlp = 3 * d * m->intermediate, norms = 2 * d;
    if (m->kv_lora_rank > 0) attention = mla_attention_params(m, &norms);
    double moe_layers = sim_model_moe_layers(m), dense_layers = m->layers - moe_layers;
    double moe = (m->experts + m->shared_experts) * sim_model_expert_params(m) + d * m->experts;
    if (moe_layers == 0) /* dense: the expression as it always was, so no count moves by a bit */
        return m->layers * (attention + mlp + norms) + (double)m->vocab * d * (m->tied_embeddings ? 1 : 2) + d;
    return m->layers * (attention + norms) + dense_layers * mlp + moe_layers * moe +
           (double)m->vocab * d * (m->tied_embeddings ? 1 : 2) + d;
}

double sim_model_expert_params(const sim_model *m)
{
    return 3.0 * m->hidden * (m->moe_intermediate > 0 ? m->moe_intermediate : m->intermediate);
}

int sim_model_moe_layers(const sim_model *m) { return m->experts > 1 ? m->layers - m->dense_layers : 0; }

double sim_model_active_params(const sim_model *m)
{
    int moe_layers = sim_model_moe_layers(m);
    if (moe_layers == 0) return m->params;
    return m->params - (double)moe_layers * (m->experts - m->experts_per_token) * sim_model_expert_params(m);
}

double sim_model_experts_touched(const sim_model *m, double tokens)
{
    if (m->experts <= 1 || tokens <= 0) return 0;
    double e = m->experts;
    return e * (1 - pow(1 - m->experts_per_token / e, tokens));
}

int sim_model_load(const char *name_or_path, sim_model *out, sim_err *err)
{
    char path[PATH_MAX];
    if (sim_preset_path("models", name_or_path, path, sizeof path, err)) return -1;
    json_error_t je;
    json_t *obj = json_load_file(path, 0, &je);
    if (!obj) return sim_errf(err, "model '%s': %s: %s", name_or_path, path, je.text);
    int rc = sim_model_from_json(obj, out, err);
    json_decref(obj);
    return rc;
}

double sim_model_kv_bytes_per_token(const sim_model *m)
{
    /* A sim_model filled by hand (tests, import) may leave kv_dtype_bytes 0: the weights' dtype then. */
    double s = m->kv_dtype_bytes > 0 ? m->kv_dtype_bytes : m->dtype_bytes;
    if (m->kv_lora_rank > 0) return (double)m->layers * (m->kv_lora_rank + m->qk_rope_head_dim) * s;
    return 2.0 * m->layers * m->kv_heads * m->head_dim * s;
}

double sim_model_weight_bytes(const sim_model *m) { return m->params * m->dtype_bytes; }

double sim_model_gqa(const sim_model *m) { return (double)m->heads / m->kv_heads; }

const char *sim_config_dir(void)
{
    static char dir[PATH_MAX + 32];
    if (dir[0]) return dir;
    const char *env = getenv("KVSIM_CONFIG_DIR");
    if (env && *env) return snprintf(dir, sizeof dir, "%s", env), dir;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        /* build/kvsim or build/san/kvsim: walk up until a configs/ appears;
         * PREFIX/bin/kvsim (make install): PREFIX/share/kvsim/configs. */
        for (char *slash; (slash = strrchr(exe, '/')) != NULL;) {
            *slash = 0;
            snprintf(dir, sizeof dir, "%s/configs", exe);
            if (access(dir, R_OK) == 0) return dir;
            snprintf(dir, sizeof dir, "%s/share/kvsim/configs", exe);
            if (access(dir, R_OK) == 0) return dir;
        }
    }
    return snprintf(dir, sizeof dir, "configs"), dir;
}

void sim_preset_names_where(const char *kind, bool (*keep)(const json_t *preset, void *ctx), void *ctx, char *out,
                            size_t n)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", sim_config_dir(), kind);
    struct dirent **ents = NULL;
    int k = scandir(dir, &ents, NULL, alphasort);
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < k; i++) {
        size_t len = strlen(ents[i]->d_name);
        bool kept = len > 5 && !strcmp(ents[i]->d_name + len - 5, ".json") && used < n;
        if (kept && keep) {
            char path[PATH_MAX + 256];
            snprintf(path, sizeof path, "%s/%s", dir, ents[i]->d_name);
            json_t *preset = json_load_file(path, 0, NULL);
            kept = preset && keep(preset, ctx);
            json_decref(preset);
        }
        if (kept)
            used += (size_t)snprintf(out + used, n - used, "%s%.*s", used ? ", " : "", (int)(len - 5), ents[i]->d_name);
        free(ents[i]);
    }
    free(ents);
}

void sim_preset_names(const char *kind, char *out, size_t n) { sim_preset_names_where(kind, NULL, NULL, out, n); }

int sim_preset_path(const char *kind, const char *name, char *buf, size_t n, sim_err *err)
{
    size_t len = strlen(name);
    bool is_path = strchr(name, '/') || (len > 5 && !strcmp(name + len - 5, ".json"));
    if (is_path) snprintf(buf, n, "%s", name);
    else snprintf(buf, n, "%s/%s/%s.json", sim_config_dir(), kind, name);
    if (access(buf, R_OK) != 0) {
        int e = errno;
        char names[1024];
        const char *what = strcmp(kind, "models") ? kind : "model";
        sim_preset_names(kind, names, sizeof names);
        if (is_path)
            return sim_errf(err, "%s: cannot read '%s': %s (check the path, or name a preset: %s)", what, buf,
                            strerror(e), names[0] ? names : "none found");
        return sim_errf(err, "unknown %s preset '%s': the presets are %s (or give a .json file's path)", what, name,
                        names[0] ? names : "none found");
    }
    return 0;
}
