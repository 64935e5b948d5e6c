/* sim/config/model.h — model shape presets (configs/models/NAME.json or an inline
 * JSON object) and the quantities derived from them that every layer needs:
 * KV bytes per token (docs/architecture.md §5) and weight bytes. */
#ifndef SIM_MODEL_H
#define SIM_MODEL_H

#include <jansson.h>
#include <stdbool.h>

#include "sim/util.h"

typedef struct sim_model {
    char name[64];
    int layers; /* l */
    int hidden; /* d */
    int heads;  /* query heads */
    int kv_heads;
    int head_dim;
    int dtype_bytes;         /* s: bytes per weight element (and per KV element unless kv_dtype says) */
    char kv_dtype[16];       /* "auto" (= the weights' dtype), "bf16", "fp16", "fp8", "fp8_e4m3", "fp8_e5m2" */
    int kv_dtype_bytes;      /* s_kv: bytes per KV element, from kv_dtype */
    int kv_lora_rank;        /* MLA's compressed KV latent c (0 = not MLA: K and V per KV head) */
    int qk_rope_head_dim;    /* MLA's decoupled RoPE key r, cached beside the latent */
    int q_lora_rank;         /* MLA's query latent (0 = queries projected from the hidden state directly) */
    bool fp8_block;          /* weight_quant "fp8_block": FP8 weights scaled per 128x128 block (DeepSeek-V3) */
    bool fp16;               /* torch_dtype "float16": activations in fp16, not bf16 (measured.c's all-reduce) */
    double params;           /* parameter count, for weight bytes and decode FLOPs */
    double flops_a;          /* a in Mooncake Eq. 1 */
    double flops_b;          /* b in Mooncake Eq. 1 */
    int intermediate, vocab; /* FFN intermediate size, vocabulary size (0 = unknown) */
    int context_window;      /* the longest request vLLM serves by default, tokens (0 = unknown; schema.c) */
    bool tied_embeddings;    /* the LM head shares the input embedding's weights */
    /* Mixture of experts (experts 0 = dense): E routed experts per MoE
     * layer, k of them per token, each a gated MLP of moe_intermediate
     * (0 = intermediate, as Mixtral); shared_experts more of that size that
     * every token uses (DeepSeek); the first dense_layers layers keep a
     * dense MLP of intermediate (DeepSeek's first_k_dense_replace). */
    int experts, experts_per_token;
    int moe_intermediate, shared_experts, dense_layers;
} sim_model;

/* From a JSON object with the fields above; errors name the missing field.
 * `params` may be absent when `intermediate` and `vocab` are given: it is
 * then sim_model_derived_params. */
int sim_model_from_json(const json_t *obj, sim_model *out, sim_err *err);
/* Grouped-query attention shares each KV head among heads / kv_heads query
 * heads: kv_heads must be at most heads and divide it (issue 40 item 3).
 * The error names the two keys as the caller calls them (model.heads, or a
 * config.json's num_attention_heads) and the nearest valid kv_heads. */
int sim_model_check_heads(long heads, long kv_heads, const char *heads_key, const char *kv_key, sim_err *err);

/* The parameter count of a dense Llama-style decoder (gated MLP, RMSNorm, no
 * biases) from its architecture, with h heads, h_kv KV heads of e dims,
 * hidden d, intermediate i, vocabulary V:
 *
 *   P = l · (d·h·e + 2·d·h_kv·e + h·e·d      q, k, v and output projections
 *            + 3·d·i                         gate, up and down projections
 *            + 2·d)                          the two RMSNorms
 *     + V·d·(tied ? 1 : 2)                   embedding (and untied LM head)
 *     + d                                    the final norm
 *
 * Llama-3.1-8B 8,030,261,248; Llama-2-70B 68,976,648,192; CodeLlama-34B
 * 33,743,970,304; Qwen3-14B 14,768,296,960 (Qwen3's per-layer q_norm and
 * k_norm, 2·e each, are not counted: 10,240 more; Qwen2.5's q/k/v biases
 * neither). 0 when intermediate or vocab is unknown. */
double sim_model_derived_params(const sim_model *m);
/* Mixture of experts (docs/hardware.md §1). One routed expert of one layer
 * is a gated MLP, 3 · d · i_e parameters (i_e = moe_intermediate, or
 * intermediate when absent). The derived count above then has, per MoE
 * layer, (E + shared) · 3 · d · i_e + d · E (the router) in place of
 * 3 · d · i; the first dense_layers layers keep 3 · d · i. */
double sim_model_expert_params(const sim_model *m);
/* Layers whose MLP is routed: layers − dense_layers; 0 for a dense model. */
int sim_model_moe_layers(const sim_model *m);
/* Parameters one token uses: params less the routed experts it skips,
 * params − L_moe · (E − k) · 3 · d · i_e. Every weight is resident in HBM
 * (sim_model_weight_bytes); decode FLOPs are 2 · this per token. A dense
 * model: params exactly. Mixtral-8x7B 12.88e9 of 46.70e9 (published 12.9B). */
double sim_model_active_params(const sim_model *m);
/* Expected distinct routed experts per MoE layer that `tokens` tokens
 * touch, each token picking k of E: E · (1 − (1 − k/E)^tokens). An expert
 * is missed by one token with probability 1 − k/E, by all of them (routed
 * independently, uniformly) with that to the power tokens; linearity of
 * expectation sums E such indicators (the occupancy problem; the same
 * expression in MoE-Lightning, Cao et al. 2024, and Eliseev & Mazur 2023
 * for offloading). E when tokens is large; k for one token. */
double sim_model_experts_touched(const sim_model *m, double tokens);
/* A preset by name (configs/models/NAME.json under the config dir) or path. */
int sim_model_load(const char *name_or_path, sim_model *out, sim_err *err);

/* The KV cache bytes one token holds, from the architecture; every KV size
 * of kvsim (HBM capacity, tiers, transfers, hit-rate byte axes) is this:
 *
 *   l · 2 · kv_heads · head_dim · s_kv      K and V per KV head (MHA, GQA)
 *   l · (kv_lora_rank + qk_rope_head_dim) · s_kv
 *                                           MLA: one latent and one RoPE key
 *
 * LLaMA3-70B: 327,680 B = 320 KiB; with kv_dtype fp8 half that. DeepSeek-V3
 * (MLA, c = 512, r = 64, 61 layers): 61 · 576 · 2 = 70,272 B in bf16
 * (DeepSeek-V2 paper, Table 1: (d_c + d_h^R) · l elements per token). */
double sim_model_kv_bytes_per_token(const sim_model *m);
/* Bytes per KV element of a kv_dtype name ("auto" → weight_bytes); 0 for an
 * unknown name. */
int sim_model_kv_dtype_bytes(const char *kv_dtype, int weight_bytes);
/* params · s */
double sim_model_weight_bytes(const sim_model *m);
/* GQA ratio: heads / kv_heads */
double sim_model_gqa(const sim_model *m);

/* `kvsim model import` (sim/config/model_import.c): a Hugging Face
 * config.json read into a preset. */
typedef struct sim_hf_import {
    sim_model model; /* as a run would load the preset */
    json_t *preset;  /* the preset object to write (caller json_decref) */
    char note[512];  /* what was taken for absent keys; "" when nothing */
} sim_hf_import;

/* Read the config.json at path into a preset named name: the architecture
 * keys mapped to the preset's, params by sim_model_derived_params, every
 * field checked against its model.* schema row. Errors name the file and the
 * key: a missing required key, an unknown torch_dtype. A mixture-of-experts
 * config (num_local_experts, num_experts or n_routed_experts) maps its
 * num_experts_per_tok, moe_intermediate_size, n_shared_experts and
 * first_k_dense_replace too. */
int sim_model_import_hf(const char *path, const char *name, sim_hf_import *out, sim_err *err);

/* Directory holding configs/ presets: $KVSIM_CONFIG_DIR, else the configs/
 * beside the running binary's build/ directory (or PREFIX/share/kvsim/configs
 * for an installed PREFIX/bin/kvsim), else "configs". */
const char *sim_config_dir(void);
/* Resolve a preset: "NAME" → <config dir>/<kind>/NAME.json; a value that
 * contains '/' or ends in .json is taken as a path. Writes into buf. */
int sim_preset_path(const char *kind, const char *name, char *buf, size_t n, sim_err *err);
/* The names of a kind's presets ("a, b, c"), sorted, for error messages. */
void sim_preset_names(const char *kind, char *out, size_t n);
/* The same, of the presets keep(preset JSON, ctx) holds true of. */
void sim_preset_names_where(const char *kind, bool (*keep)(const json_t *preset, void *ctx), void *ctx, char *out,
                            size_t n);
/* The one model preset a name that is no preset means (sim/config/
 * preset_match.c): the same name once fine-tune suffixes ("Instruct",
 * "v0.1"), case and '-', '_', '.', ' ' are dropped, else the preset whose
 * `about` names the Hugging Face id hf_id (may be NULL) read the same way.
 * Writes it into out and whether the id decided (*by_hf); -1 when none or
 * more than one matches. */
int sim_model_preset_match(const char *name, const char *hf_id, char *out, size_t n, bool *by_hf);

#endif
