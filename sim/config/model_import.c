/* sim/config/model_import.c — a model preset from a Hugging Face config.json
 * (`kvsim model import`), so that a user adds a dense model without code.
 *
 * The Transformers config keys of a Llama-style decoder map one to one on
 * the preset's: num_hidden_layers → layers, hidden_size → hidden,
 * num_attention_heads → heads, num_key_value_heads → kv_heads (absent or
 * null: heads, as LlamaConfig does), head_dim (absent or null: hidden /
 * heads), intermediate_size → intermediate, vocab_size → vocab,
 * tie_word_embeddings → tied_embeddings, torch_dtype (or the newer dtype) →
 * dtype_bytes, and for multi-head latent attention kv_lora_rank and
 * qk_rope_head_dim. The parameter count is sim_model_derived_params. A
 * mixture-of-experts config is refused: its FFN is not one gated MLP. The
 * preset is checked against the schema's model.* rows before it is handed
 * back, so what is written loads. */
#include <stdio.h>
#include <string.h>

#include "sim/config/model.h"
#include "sim/config/schema.h"

/* Keys whose presence (not null, not 0) makes a config a mixture of experts:
 * Mixtral, Qwen2/3-MoE, DeepSeek. */
static const char *const moe_keys[] = {"num_local_experts", "num_experts", "n_routed_experts"};

static int refuse_moe(const json_t *hf, const char *path, sim_err *err)
{
    for (size_t i = 0; i < sizeof moe_keys / sizeof moe_keys[0]; i++) {
        const json_t *v = json_object_get(hf, moe_keys[i]);
        if (v && !json_is_null(v) && !(json_is_number(v) && json_number_value(v) == 0))
            return sim_errf(err,
                            "%s: key '%s' is present: a mixture-of-experts model; kvsim models dense models only "
                            "(mixture-of-experts costs are not modelled yet)",
                            path, moe_keys[i]);
    }
    return 0;
}

/* A positive integer key; absent or null gives def, or with def 0 is an
 * error naming the key. */
static int hf_int(const json_t *hf, const char *path, const char *key, long def, long *out, sim_err *err)
{
    const json_t *v = json_object_get(hf, key);
    if (!v || json_is_null(v)) {
        if (def > 0) return *out = def, 0;
        return sim_errf(err, "%s: missing key '%s' (a dense decoder's config.json has it)", path, key);
    }
    if (!json_is_integer(v) || json_integer_value(v) <= 0 || json_integer_value(v) > (1L << 30))
        return sim_errf(err, "%s: key '%s' must be a positive integer", path, key);
    *out = (long)json_integer_value(v);
    return 0;
}

/* torch_dtype (or dtype, Transformers ≥ 4.56) → bytes per element; absent: 2,
 * said in note. */
static int hf_dtype(const json_t *hf, const char *path, long *bytes, char *note, size_t n, sim_err *err)
{
    const char *key = json_object_get(hf, "torch_dtype") ? "torch_dtype" : "dtype";
    const json_t *v = json_object_get(hf, key);
    const char *s = json_string_value(v);
    if (!v || json_is_null(v)) {
        snprintf(note + strlen(note), n - strlen(note), "%storch_dtype absent: 2 bytes (bf16) taken",
                 *note ? "; " : "");
        return *bytes = 2, 0;
    }
    if (s && (!strcmp(s, "bfloat16") || !strcmp(s, "float16"))) return *bytes = 2, 0;
    if (s && !strcmp(s, "float32")) return *bytes = 4, 0;
    return sim_errf(err, "%s: key '%s': '%s' is not one of bfloat16, float16, float32", path, key, s ? s : "?");
}

typedef struct hf_shape {
    long layers, hidden, heads, kv_heads, head_dim, intermediate, vocab, dtype_bytes;
    long kv_lora_rank, qk_rope_head_dim; /* multi-head latent attention; 0 = none */
    bool tied;
} hf_shape;

/* Multi-head latent attention (DeepSeek-V2/V3-style configs): kv_lora_rank
 * and qk_rope_head_dim, taken as they are; they size the KV cache
 * (sim_model_kv_bytes_per_token). The derived parameter count still has
 * Llama-style q/k/v projections, not MLA's low-rank ones: said in note. */
static int read_mla(const json_t *hf, const char *path, hf_shape *s, char *note, size_t n, sim_err *err)
{
    const json_t *v = json_object_get(hf, "kv_lora_rank");
    if (!v || json_is_null(v)) return 0;
    if (hf_int(hf, path, "kv_lora_rank", 0, &s->kv_lora_rank, err)) return -1;
    const json_t *r = json_object_get(hf, "qk_rope_head_dim");
    if (!r || json_is_null(r))
        return sim_errf(err, "%s: key 'kv_lora_rank' (multi-head latent attention) needs 'qk_rope_head_dim'", path);
    if (hf_int(hf, path, "qk_rope_head_dim", 0, &s->qk_rope_head_dim, err)) return -1;
    snprintf(note + strlen(note), n - strlen(note),
             "%skv_lora_rank: multi-head latent attention, the KV cache sized by it; params derived with "
             "Llama-style attention projections, not MLA's: set model.params for an exact count",
             *note ? "; " : "");
    return 0;
}

static int read_hf(const json_t *hf, const char *path, hf_shape *s, char *note, size_t n, sim_err *err)
{
    if (refuse_moe(hf, path, err) || hf_int(hf, path, "num_hidden_layers", 0, &s->layers, err) ||
        hf_int(hf, path, "hidden_size", 0, &s->hidden, err) ||
        hf_int(hf, path, "num_attention_heads", 0, &s->heads, err) ||
        hf_int(hf, path, "intermediate_size", 0, &s->intermediate, err) ||
        hf_int(hf, path, "vocab_size", 0, &s->vocab, err) ||
        hf_int(hf, path, "num_key_value_heads", s->heads, &s->kv_heads, err))
        return -1;
    const json_t *hd = json_object_get(hf, "head_dim");
    if ((!hd || json_is_null(hd)) && s->hidden % s->heads)
        return sim_errf(err, "%s: no 'head_dim', and hidden_size %ld is not a multiple of num_attention_heads %ld",
                        path, s->hidden, s->heads);
    if (hf_int(hf, path, "head_dim", s->hidden / s->heads, &s->head_dim, err)) return -1;
    const json_t *tied = json_object_get(hf, "tie_word_embeddings");
    if (tied && !json_is_boolean(tied))
        return sim_errf(err, "%s: key 'tie_word_embeddings' must be true or false", path);
    if (!tied) snprintf(note, n, "tie_word_embeddings absent: false taken (the Llama, Qwen and Mistral default)");
    s->tied = json_is_true(tied);
    return hf_dtype(hf, path, &s->dtype_bytes, note, n, err) || read_mla(hf, path, s, note, n, err) ? -1 : 0;
}

/* The preset object, keys in configs/models/ order; params from the formula. */
static json_t *preset_json(const hf_shape *s, const json_t *hf, const char *path, const char *name)
{
    sim_model m = {.layers = (int)s->layers,
                   .hidden = (int)s->hidden,
                   .heads = (int)s->heads,
                   .kv_heads = (int)s->kv_heads,
                   .head_dim = (int)s->head_dim,
                   .intermediate = (int)s->intermediate,
                   .vocab = (int)s->vocab,
                   .tied_embeddings = s->tied};
    const char *arch = json_string_value(json_array_get(json_object_get(hf, "architectures"), 0));
    char about[1024];
    snprintf(about, sizeof about,
             "%s from the Hugging Face config.json %s (kvsim model import): params derived from the architecture "
             "(dense decoder, sim/config/model.h)",
             arch ? arch : "a dense decoder", path);
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "about", json_string(about));
    const char *keys[] = {"layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab"};
    const long vals[] = {s->layers, s->hidden, s->heads, s->kv_heads, s->head_dim, s->intermediate, s->vocab};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) json_object_set_new(o, keys[i], json_integer(vals[i]));
    if (s->kv_lora_rank > 0) {
        json_object_set_new(o, "kv_lora_rank", json_integer(s->kv_lora_rank));
        json_object_set_new(o, "qk_rope_head_dim", json_integer(s->qk_rope_head_dim));
    }
    json_object_set_new(o, "tied_embeddings", json_boolean(s->tied));
    json_object_set_new(o, "dtype_bytes", json_integer(s->dtype_bytes));
    json_object_set_new(o, "params", json_integer((json_int_t)sim_model_derived_params(&m)));
    return o;
}

/* Every field against its model.* schema row (type and range), as a run's
 * config would be checked. */
static int check_preset(const json_t *preset, const char *path, sim_err *err)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)preset, key, v)
    {
        char row[64];
        sim_err e = {{0}};
        snprintf(row, sizeof row, "model.%s", key);
        const sim_config_key *k = sim_config_key_find(row);
        if (k && sim_config_check_key(k, v, &e)) return sim_errf(err, "%s: %s", path, e.msg);
    }
    return 0;
}

int sim_model_import_hf(const char *path, const char *name, sim_hf_import *out, sim_err *err)
{
    json_error_t je;
    hf_shape s = {0};
    memset(out, 0, sizeof *out);
    if (!name[0] || strlen(name) >= sizeof out->model.name)
        return sim_errf(err, "model name '%s': give 1 to %zu characters", name, sizeof out->model.name - 1);
    json_t *hf = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!hf && je.line < 1) return sim_errf(err, "%s: %s", path, je.text);
    if (!hf) return sim_errf(err, "%s:%d: %s", path, je.line, je.text);
    int rc = json_is_object(hf) ? read_hf(hf, path, &s, out->note, sizeof out->note, err)
                                : sim_errf(err, "%s: expected a JSON object (a Hugging Face config.json)", path);
    if (!rc) {
        out->preset = preset_json(&s, hf, path, name);
        rc = check_preset(out->preset, path, err) || sim_model_from_json(out->preset, &out->model, err) ? -1 : 0;
        if (rc) json_decref(out->preset), out->preset = NULL;
    }
    json_decref(hf);
    return rc;
}
