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
 * qk_rope_head_dim. A mixture of experts (Mixtral's num_local_experts,
 * Qwen-MoE's num_experts, DeepSeek's n_routed_experts) maps
 * num_experts_per_tok → experts_per_token, moe_intermediate_size →
 * moe_intermediate, n_shared_experts (or Qwen2-MoE's one shared expert of
 * shared_expert_intermediate_size, a multiple of moe_intermediate_size) →
 * shared_experts and first_k_dense_replace → dense_layers; a layout kvsim
 * cannot say (dense layers other than the first ones) is refused naming its
 * key. The parameter count is sim_model_derived_params. The preset is
 * checked against the schema's model.* rows before it is handed back, so
 * what is written loads. */
#include <stdio.h>
#include <string.h>

#include "sim/config/model.h"
#include "sim/config/schema.h"

/* A positive integer key; absent or null gives def, or with def 0 is an
 * error naming the key. */
static int hf_int(const json_t *hf, const char *path, const char *key, long def, long *out, sim_err *err)
{
    const json_t *v = json_object_get(hf, key);
    if (!v || json_is_null(v)) {
        if (def > 0) return *out = def, 0;
        return sim_errf(err, "%s: missing key '%s' (a decoder's config.json has it)", path, key);
    }
    if (!json_is_integer(v) || json_integer_value(v) <= 0 || json_integer_value(v) > (1L << 30))
        return sim_errf(err, "%s: key '%s' must be a positive integer", path, key);
    *out = (long)json_integer_value(v);
    return 0;
}

/* Whether config.json's model_type is one of `types` (NULL-terminated). */
static bool type_in(const json_t *hf, const char *const *types)
{
    const char *t = json_string_value(json_object_get(hf, "model_type"));
    for (; t && *types; types++)
        if (!strcmp(t, *types)) return true;
    return false;
}

/* The model types vLLM will not compute in float16, "numerical instability"
 * (_FLOAT16_NOT_SUPPORTED_MODELS, vllm/config/model.py): --dtype auto gives
 * them bfloat16 whatever their torch_dtype. */
static bool fp16_refused(const json_t *hf)
{
    static const char *const types[] = {"gemma2", "gemma3", "gemma3_text", "plamo2", "glm4", NULL};
    return type_in(hf, types);
}

/* torch_dtype (or dtype, Transformers ≥ 4.56) → bytes per element; absent: 2,
 * said in note. float32 is 2 as well, said in note: vLLM's --dtype auto
 * downcasts a float32 model to the platform's first dtype, bfloat16 on
 * every GPU kvsim has a preset of (Ampere and later: "float32 models will
 * be downcasted to whatever dtype is prioritized by the platform",
 * vllm-project/vllm#18751, vLLM 0.9.1 on); --set model.dtype_bytes=4 is
 * --dtype float32. */
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
    if (s && !strcmp(s, "float16") && fp16_refused(hf))
        snprintf(note + strlen(note), n - strlen(note),
                 "%storch_dtype float16: computed in bfloat16, as vLLM refuses float16 for model_type '%s'",
                 *note ? "; " : "", json_string_value(json_object_get(hf, "model_type")));
    if (s && (!strcmp(s, "bfloat16") || !strcmp(s, "float16"))) return *bytes = 2, 0;
    if (s && !strcmp(s, "float32")) {
        snprintf(note + strlen(note), n - strlen(note),
                 "%storch_dtype float32: 2 bytes taken, as vLLM's --dtype auto serves it in bfloat16 on Ampere and "
                 "later GPUs (--set model.dtype_bytes=4 for --dtype float32)",
                 *note ? "; " : "");
        return *bytes = 2, 0;
    }
    return sim_errf(err, "%s: key '%s': '%s' is not one of bfloat16, float16, float32", path, key, s ? s : "?");
}

/* Whether vLLM's --dtype auto computes in float16 (model.torch_dtype):
 * torch_dtype float16, unless the model type refuses it. */
static bool hf_fp16(const json_t *hf)
{
    const char *s =
        json_string_value(json_object_get(hf, json_object_get(hf, "torch_dtype") ? "torch_dtype" : "dtype"));
    return s && !strcmp(s, "float16") && !fp16_refused(hf);
}

typedef struct hf_shape {
    long layers, hidden, heads, kv_heads, head_dim, intermediate, vocab, dtype_bytes;
    long kv_lora_rank, qk_rope_head_dim, q_lora_rank; /* multi-head latent attention; 0 = none */
    long experts, experts_per_token, moe_intermediate, shared_experts, dense_layers; /* 0 = dense / absent */
    long context; /* model.context_window; 0 = no max_position_embeddings */
    bool tied;
    bool fp8;       /* quantization_config.quant_method "fp8": 1-byte weights, the KV cache in torch_dtype */
    bool fp8_block; /* and weight_block_size [128, 128]: model.weight_quant "fp8_block" */
    bool fp16;      /* model.torch_dtype "float16" */
} hf_shape;

/* FP8 checkpoints (DeepSeek-V3's quantization_config {"quant_method":
 * "fp8", "fmt": "e4m3"}) keep torch_dtype for activations and the KV
 * cache: weights of 1 byte, kv_dtype the 16-bit type. Said in note. */
static void read_fp8(const json_t *hf, hf_shape *s, char *note, size_t n)
{
    const char *q = json_string_value(json_object_get(json_object_get(hf, "quantization_config"), "quant_method"));
    if (!q || strcmp(q, "fp8") || s->dtype_bytes != 2) return;
    s->fp8 = true;
    const json_t *b = json_object_get(json_object_get(hf, "quantization_config"), "weight_block_size");
    s->fp8_block = json_array_size(b) == 2 && json_integer_value(json_array_get(b, 0)) == 128 &&
                   json_integer_value(json_array_get(b, 1)) == 128;
    snprintf(note + strlen(note), n - strlen(note),
             "%squantization_config fp8: 1-byte weights%s, the KV cache in torch_dtype (kv_dtype bf16)",
             *note ? "; " : "", s->fp8_block ? " in 128x128 blocks (weight_quant fp8_block)" : "");
}

/* Weights quantized otherwise than FP8 (AWQ, GPTQ, bitsandbytes: 4 or 8
 * bits with scales per group) are no model.dtype_bytes kvsim has: imported
 * as torch_dtype they were sized 2 bytes a weight, 4 times a 4-bit
 * checkpoint's, without a word. Refused, naming the method. */
static int check_quant(const json_t *hf, const char *path, sim_err *err)
{
    const json_t *qc = json_object_get(hf, "quantization_config");
    if (!qc || json_is_null(qc)) return 0;
    const char *q = json_string_value(json_object_get(qc, "quant_method"));
    if (q && !strcmp(q, "fp8")) return 0;
    return sim_errf(err,
                    "%s: quantization_config.quant_method '%s': kvsim sizes and prices 16-bit and FP8 weights only "
                    "(model.dtype_bytes 2 or 1, model.weight_quant), and this checkpoint's are neither; import the "
                    "unquantized model's config.json (its weights would then be counted at 2 bytes)",
                    path, q ? q : "(none)");
}

/* What kvsim prices is a decoder-only transformer whose every layer keeps
 * a KV cache per token. An encoder-decoder (T5, BART: is_encoder_decoder),
 * a model with state-space or recurrent layers (Mamba, Jamba, Zamba,
 * Nemotron-H, RWKV: a fixed state per sequence, not per token; their
 * config.json keys below), or an architecture that generates no text
 * (BertModel, …ForSequenceClassification) once imported as a dense
 * decoder from the keys it shares with one. Refused, naming the key or
 * the architecture. */
static int check_decoder(const json_t *hf, const char *path, sim_err *err)
{
    static const char *const state_keys[] = {"state_size",        "ssm_state_size",    "mamba_d_state",
                                             "attn_layer_period", "layers_block_type", "hybrid_override_pattern",
                                             "ssm_cfg",           "time_step_rank",    "attention_layer_indices"};
    if (json_is_true(json_object_get(hf, "is_encoder_decoder")))
        return sim_errf(err,
                        "%s: is_encoder_decoder true: kvsim models decoder-only transformers (every layer a KV cache "
                        "per token); an encoder-decoder's cross-attention cache is not that",
                        path);
    for (size_t i = 0; i < sizeof state_keys / sizeof *state_keys; i++)
        if (json_object_get(hf, state_keys[i]))
            return sim_errf(err,
                            "%s: key '%s': state-space or recurrent layers (Mamba-style), whose state is fixed per "
                            "sequence, not a KV cache per token; kvsim models attention-only decoders",
                            path, state_keys[i]);
    const char *arch = json_string_value(json_array_get(json_object_get(hf, "architectures"), 0));
    size_t n = arch ? strlen(arch) : 0;
    static const char *const gen[] = {"ForCausalLM", "LMHeadModel", "ForConditionalGeneration"};
    for (size_t i = 0; arch && i < sizeof gen / sizeof *gen; i++)
        if (n >= strlen(gen[i]) && !strcmp(arch + n - strlen(gen[i]), gen[i])) return 0;
    if (!arch) return 0; /* no architectures key: the keys alone decide */
    return sim_errf(err,
                    "%s: architectures[0] '%s' generates no text (kvsim models decoders: …ForCausalLM, "
                    "…LMHeadModel, …ForConditionalGeneration)",
                    path, arch);
}

/* An optional non-negative integer key: absent, null or 0 leave *out 0. */
static int hf_opt(const json_t *hf, const char *path, const char *key, long *out, sim_err *err)
{
    const json_t *v = json_object_get(hf, key);
    if (!v || json_is_null(v) || (json_is_integer(v) && json_integer_value(v) == 0)) return 0;
    return hf_int(hf, path, key, 0, out, err);
}

/* Keys that put dense layers elsewhere than first (Qwen-MoE's
 * decoder_sparse_step and mlp_only_layers, DeepSeek's moe_layer_freq):
 * only their no-op values are accepted. */
static int moe_layout(const json_t *hf, const char *path, sim_err *err)
{
    static const char *const steps[] = {"decoder_sparse_step", "moe_layer_freq"};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        const json_t *v = json_object_get(hf, steps[i]);
        if (v && !json_is_null(v) && !(json_is_integer(v) && json_integer_value(v) == 1))
            return sim_errf(err,
                            "%s: key '%s' is not 1: MoE layers interleaved with dense ones; kvsim's presets keep "
                            "the dense layers first (model.dense_layers)",
                            path, steps[i]);
    }
    const json_t *mlp_only = json_object_get(hf, "mlp_only_layers");
    if (json_is_array(mlp_only) && json_array_size(mlp_only) > 0)
        return sim_errf(err,
                        "%s: key 'mlp_only_layers' is not empty: dense layers among the MoE ones; kvsim's presets "
                        "keep the dense layers first (model.dense_layers)",
                        path);
    return 0;
}

/* Qwen2-MoE's one shared expert of its own width, as shared experts of
 * moe_intermediate_size. */
static int qwen_shared(const json_t *hf, const char *path, hf_shape *s, sim_err *err)
{
    long width = 0;
    if (hf_opt(hf, path, "shared_expert_intermediate_size", &width, err)) return -1;
    if (width == 0 || s->shared_experts > 0) return 0;
    if (width % s->moe_intermediate)
        return sim_errf(err,
                        "%s: key 'shared_expert_intermediate_size' (%ld) is not a multiple of moe_intermediate_size "
                        "(%ld): kvsim's shared experts have the routed ones' width",
                        path, width, s->moe_intermediate);
    s->shared_experts = width / s->moe_intermediate;
    return 0;
}

/* Append a sentence to note ("; " between sentences). */
static void add_note(char *note, size_t n, const char *text)
{
    size_t at = strlen(note);
    snprintf(note + at, n - at, "%s%s", at ? "; " : "", text);
}

/* An expert count of 0 or 1 is a dense model; said in note, since a
 * config that names experts meant something by it (issue 40 item 3). */
static void note_dense(const json_t *hf, const char *const *counts, size_t ncounts, char *note, size_t n)
{
    for (size_t i = 0; i < ncounts; i++) {
        const json_t *v = json_object_get(hf, counts[i]);
        if (!json_is_integer(v)) continue;
        char text[256];
        snprintf(text, sizeof text, "%s %lld: no routed experts to choose among, imported as a dense model", counts[i],
                 (long long)json_integer_value(v));
        add_note(note, n, text);
        return;
    }
}

/* The mixture-of-experts keys (the module comment); a config with none of
 * the three expert counts (or 0 or 1 of them, said in note) is dense and
 * leaves them 0. */
static int read_moe(const json_t *hf, const char *path, hf_shape *s, char *note, size_t n, sim_err *err)
{
    static const char *const counts[] = {"num_local_experts", "num_experts", "n_routed_experts"};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0] && s->experts == 0; i++)
        if (hf_opt(hf, path, counts[i], &s->experts, err)) return -1;
    if (s->experts <= 1) {
        note_dense(hf, counts, sizeof counts / sizeof counts[0], note, n);
        return s->experts = 0, 0;
    }
    if (hf_int(hf, path, "num_experts_per_tok", 0, &s->experts_per_token, err) ||
        hf_int(hf, path, "moe_intermediate_size", s->intermediate, &s->moe_intermediate, err) ||
        hf_opt(hf, path, "n_shared_experts", &s->shared_experts, err) ||
        hf_opt(hf, path, "first_k_dense_replace", &s->dense_layers, err) || moe_layout(hf, path, err) ||
        qwen_shared(hf, path, s, err))
        return -1;
    if (s->experts_per_token > s->experts)
        return sim_errf(err, "%s: key 'num_experts_per_tok' (%ld) exceeds the %ld experts", path, s->experts_per_token,
                        s->experts);
    if (s->dense_layers >= s->layers)
        return sim_errf(err, "%s: key 'first_k_dense_replace' (%ld) leaves no MoE layer of %ld", path, s->dense_layers,
                        s->layers);
    return 0;
}

/* Multi-head latent attention (DeepSeek-V2/V3-style configs): kv_lora_rank
 * and qk_rope_head_dim, taken as they are; they size the KV cache
 * (sim_model_kv_bytes_per_token) and, with q_lora_rank, the attention's
 * low-rank projections in the derived parameter count. head_dim is the
 * per-head query/key width without RoPE and the value width: the config's
 * qk_nope_head_dim and v_head_dim, which must agree. */
static int read_mla(const json_t *hf, const char *path, hf_shape *s, char *note, size_t n, sim_err *err)
{
    const json_t *v = json_object_get(hf, "kv_lora_rank");
    if (!v || json_is_null(v)) return 0;
    if (hf_int(hf, path, "kv_lora_rank", 0, &s->kv_lora_rank, err)) return -1;
    const json_t *r = json_object_get(hf, "qk_rope_head_dim");
    if (!r || json_is_null(r))
        return sim_errf(err, "%s: key 'kv_lora_rank' (multi-head latent attention) needs 'qk_rope_head_dim'", path);
    if (hf_int(hf, path, "qk_rope_head_dim", 0, &s->qk_rope_head_dim, err) ||
        hf_opt(hf, path, "q_lora_rank", &s->q_lora_rank, err))
        return -1;
    long nope = 0, vd = 0;
    if (hf_opt(hf, path, "qk_nope_head_dim", &nope, err) || hf_opt(hf, path, "v_head_dim", &vd, err)) return -1;
    if (nope > 0 && vd > 0 && nope != vd)
        return sim_errf(err,
                        "%s: key 'v_head_dim' (%ld) differs from 'qk_nope_head_dim' (%ld): kvsim's head_dim is "
                        "both; write the preset by hand (docs/models.md)",
                        path, vd, nope);
    if (nope > 0) s->head_dim = nope;
    snprintf(note + strlen(note), n - strlen(note),
             "%skv_lora_rank: multi-head latent attention, the KV cache sized by it and the parameter count "
             "derived with its low-rank projections",
             *note ? "; " : "");
    return 0;
}

/* Sliding-window attention (Mistral-7B's sliding_window, unless
 * use_sliding_window is false as in Qwen's configs): kvsim keeps every
 * token's KV, so a long prompt's cache is overstated. Said in note. */
static void note_sliding(const json_t *hf, char *note, size_t n)
{
    const json_t *w = json_object_get(hf, "sliding_window");
    if (!json_is_integer(w) || json_integer_value(w) <= 0 || json_is_false(json_object_get(hf, "use_sliding_window")))
        return;
    char text[320];
    snprintf(text, sizeof text,
             "sliding_window %lld ignored: kvsim keeps the KV of every token (full attention), so the KV cache of "
             "a prompt longer than the window is overstated",
             (long long)json_integer_value(w));
    add_note(note, n, text);
}

/* The context window as vLLM derives its default max_model_len
 * (vllm/config/model.py, _get_and_verify_max_len): max_position_embeddings,
 * and for a rope_scaling other than su, longrope or llama3 (whose
 * max_position_embeddings already holds the scaled window) its factor
 * times the position count, yarn's original_max_position_embeddings when
 * given. Absent: 0 (unknown), said in note. */
static void read_context(const json_t *hf, hf_shape *s, char *note, size_t n)
{
    const json_t *v = json_object_get(hf, "max_position_embeddings"), *rs = json_object_get(hf, "rope_scaling");
    if (!json_is_integer(v) || json_integer_value(v) <= 0)
        return add_note(note, n, "max_position_embeddings absent: no context window (model.context_window) checked");
    double w = (double)json_integer_value(v), f = json_number_value(json_object_get(rs, "factor"));
    const char *type = json_string_value(json_object_get(rs, "rope_type"));
    if (!type) type = json_string_value(json_object_get(rs, "type"));
    if (type && f > 1 && strcmp(type, "su") && strcmp(type, "longrope") && strcmp(type, "llama3") &&
        strcmp(type, "default")) {
        const json_t *orig = json_object_get(rs, "original_max_position_embeddings");
        if (!strcmp(type, "yarn") && json_is_integer(orig)) w = (double)json_integer_value(orig);
        w *= f;
    }
    s->context = w < (double)(1L << 30) ? (long)w : 1L << 30;
}

/* tie_word_embeddings; absent, the default of Transformers' config class
 * for the model type: true for Gemma's (Gemma2Config: `tie_word_embeddings:
 * bool = True`), false for the Llama, Qwen and Mistral ones. Said in note. */
static int read_tied(const json_t *hf, const char *path, hf_shape *s, char *note, size_t n, sim_err *err)
{
    const json_t *tied = json_object_get(hf, "tie_word_embeddings");
    if (tied && !json_is_boolean(tied))
        return sim_errf(err, "%s: key 'tie_word_embeddings' must be true or false", path);
    if (tied) return s->tied = json_is_true(tied), 0;
    static const char *const tying[] = {"gemma", "gemma2", "gemma3", "gemma3_text", NULL};
    s->tied = type_in(hf, tying);
    snprintf(note, n, "tie_word_embeddings absent: %s",
             s->tied ? "true taken (the Gemma configs' default)" : "false taken (the Llama, Qwen and Mistral default)");
    return 0;
}

static int read_hf(const json_t *hf, const char *path, hf_shape *s, char *note, size_t n, sim_err *err)
{
    if (check_decoder(hf, path, err) || hf_int(hf, path, "num_hidden_layers", 0, &s->layers, err) ||
        hf_int(hf, path, "hidden_size", 0, &s->hidden, err) ||
        hf_int(hf, path, "num_attention_heads", 0, &s->heads, err) ||
        hf_int(hf, path, "intermediate_size", 0, &s->intermediate, err) ||
        hf_int(hf, path, "vocab_size", 0, &s->vocab, err) ||
        hf_int(hf, path, "num_key_value_heads", s->heads, &s->kv_heads, err))
        return -1;
    char hk[600], kk[600];
    snprintf(hk, sizeof hk, "%s: key 'num_attention_heads'", path);
    snprintf(kk, sizeof kk, "%s: key 'num_key_value_heads'", path);
    if (sim_model_check_heads(s->heads, s->kv_heads, hk, kk, err)) return -1;
    const json_t *hd = json_object_get(hf, "head_dim");
    if ((!hd || json_is_null(hd)) && s->hidden % s->heads)
        return sim_errf(err, "%s: no 'head_dim', and hidden_size %ld is not a multiple of num_attention_heads %ld",
                        path, s->hidden, s->heads);
    if (hf_int(hf, path, "head_dim", s->hidden / s->heads, &s->head_dim, err)) return -1;
    if (read_tied(hf, path, s, note, n, err)) return -1;
    if (check_quant(hf, path, err) || hf_dtype(hf, path, &s->dtype_bytes, note, n, err) ||
        read_mla(hf, path, s, note, n, err) || read_moe(hf, path, s, note, n, err))
        return -1;
    read_fp8(hf, s, note, n);
    s->fp16 = hf_fp16(hf);
    note_sliding(hf, note, n);
    read_context(hf, s, note, n);
    return 0;
}

/* The preset object, keys in configs/models/ order; params from the formula. */
static json_t *preset_json(const hf_shape *s, const json_t *hf, const char *path, const char *name)
{
    sim_model m = {.layers = (int)s->layers,
                   .hidden = (int)s->hidden,
                   .heads = (int)s->heads,
                   .kv_heads = (int)s->kv_heads,
                   .head_dim = (int)s->head_dim,
                   .kv_lora_rank = (int)s->kv_lora_rank,
                   .qk_rope_head_dim = (int)s->qk_rope_head_dim,
                   .q_lora_rank = (int)s->q_lora_rank,
                   .intermediate = (int)s->intermediate,
                   .vocab = (int)s->vocab,
                   .tied_embeddings = s->tied,
                   .experts = (int)s->experts,
                   .experts_per_token = (int)s->experts_per_token,
                   .moe_intermediate = (int)s->moe_intermediate,
                   .shared_experts = (int)s->shared_experts,
                   .dense_layers = (int)s->dense_layers};
    const char *arch = json_string_value(json_array_get(json_object_get(hf, "architectures"), 0));
    char about[1024];
    snprintf(about, sizeof about,
             "%s from the Hugging Face config.json %s (kvsim model import): params derived from the architecture "
             "(%s, sim/config/model.h)",
             arch ? arch : "a decoder", path, s->experts ? "mixture of experts" : "dense decoder");
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "about", json_string(about));
    const char *keys[] = {"layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab"};
    const long vals[] = {s->layers, s->hidden, s->heads, s->kv_heads, s->head_dim, s->intermediate, s->vocab};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) json_object_set_new(o, keys[i], json_integer(vals[i]));
    if (s->context > 0) json_object_set_new(o, "context_window", json_integer(s->context));
    if (s->kv_lora_rank > 0) {
        json_object_set_new(o, "kv_lora_rank", json_integer(s->kv_lora_rank));
        json_object_set_new(o, "qk_rope_head_dim", json_integer(s->qk_rope_head_dim));
        if (s->q_lora_rank > 0) json_object_set_new(o, "q_lora_rank", json_integer(s->q_lora_rank));
    }
    if (s->experts > 0) {
        const char *moe_keys[] = {"experts", "experts_per_token", "moe_intermediate", "shared_experts", "dense_layers"};
        const long moe_vals[] = {s->experts, s->experts_per_token, s->moe_intermediate, s->shared_experts,
                                 s->dense_layers};
        for (size_t i = 0; i < sizeof moe_keys / sizeof moe_keys[0]; i++)
            if (moe_vals[i] > 0) json_object_set_new(o, moe_keys[i], json_integer(moe_vals[i]));
    }
    json_object_set_new(o, "tied_embeddings", json_boolean(s->tied));
    json_object_set_new(o, "dtype_bytes", json_integer(s->fp8 ? 1 : s->dtype_bytes));
    if (s->fp8) json_object_set_new(o, "kv_dtype", json_string("bf16"));
    if (s->fp8_block) json_object_set_new(o, "weight_quant", json_string("fp8_block"));
    if (s->fp16) json_object_set_new(o, "torch_dtype", json_string("float16"));
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
    if (!hf) return sim_json_file_errf(err, "", path, je.line, je.text, "give a Hugging Face model's config.json");
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
