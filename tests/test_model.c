/* tests/test_model.c — model presets and `kvsim model import`: the parameter
 * count derived from the architecture against sums worked out by hand and
 * the published counts, the study's presets (Qwen3-14B, CodeLlama-34B,
 * Llama-2-70B) beside the older ones, and importing a Hugging Face
 * config.json (tests/fixtures/hf/, the models' published configs) into a
 * preset that loads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/config/model.h"
#include "sim/cost/cost.h"

#define FIXTURES "tests/fixtures/hf/"

static sim_model shape(int layers, int hidden, int heads, int kv_heads, int intermediate, int vocab, bool tied)
{
    return (sim_model){.layers = layers,
                       .hidden = hidden,
                       .heads = heads,
                       .kv_heads = kv_heads,
                       .head_dim = 128,
                       .intermediate = intermediate,
                       .vocab = vocab,
                       .tied_embeddings = tied,
                       .dtype_bytes = 2};
}

/* Per layer: attention d·h·e + 2·d·h_kv·e + h·e·d, MLP 3·d·i, norms 2·d;
 * then V·d once or twice and the final norm d.
 *   Llama-3.1-8B: 41,943,040 + 176,160,768 + 8,192 = 218,112,000 × 32
 *     + 128,256·4,096·2 + 4,096 = 8,030,261,248 (published 8.03e9)
 *   Qwen3-14B: 62,914,560 + 267,386,880 + 10,240 = 330,311,680 × 40
 *     + 151,936·5,120·2 + 5,120 = 14,768,296,960 (model card: 14.8B)
 *   CodeLlama-34B: 150,994,944 + 541,065,216 + 16,384 = 692,076,544 × 48
 *     + 32,000·8,192·2 + 8,192 = 33,743,970,304 (33.7e9)
 *   Llama-2-70B: 150,994,944 + 704,643,072 + 16,384 = 855,654,400 × 80
 *     + 32,000·8,192·2 + 8,192 = 68,976,648,192 (68.98e9) */
static void test_derived_params(void **state)
{
    (void)state;
    sim_model l8 = shape(32, 4096, 32, 8, 14336, 128256, false), q14 = shape(40, 5120, 40, 8, 17408, 151936, false);
    sim_model c34 = shape(48, 8192, 64, 8, 22016, 32000, false), l70 = shape(80, 8192, 64, 8, 28672, 32000, false);
    assert_double_equal(sim_model_derived_params(&l8), 8030261248.0, 0);
    assert_double_equal(sim_model_derived_params(&q14), 14768296960.0, 0);
    assert_double_equal(sim_model_derived_params(&c34), 33743970304.0, 0);
    assert_double_equal(sim_model_derived_params(&l70), 68976648192.0, 0);
    /* Against the published counts: within 0.3% (Qwen3's q_norm/k_norm and
     * rounding of "14.8B" are the largest gap). */
    assert_double_equal(sim_model_derived_params(&l8) / 8.03e9, 1, 1e-3);
    assert_double_equal(sim_model_derived_params(&q14) / 14.8e9, 1, 3e-3);
    assert_double_equal(sim_model_derived_params(&c34) / 33.7e9, 1, 2e-3);
    assert_double_equal(sim_model_derived_params(&l70) / 68.98e9, 1, 1e-4);
    /* Tied embeddings count V·d once: 151,936 · 5,120 = 777,912,320 fewer. */
    q14.tied_embeddings = true;
    assert_double_equal(sim_model_derived_params(&q14), 14768296960.0 - 777912320.0, 0);
    q14.intermediate = 0; /* unknown architecture: nothing derived */
    assert_double_equal(sim_model_derived_params(&q14), 0, 0);
}

/* The study's presets derive params; the older ones keep their given params
 * (so no recorded summary moves) and now carry the architecture too. */
static void test_presets(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int layers, hidden, heads, intermediate, vocab;
        double params;
    } want[] = {
        {"qwen3-14b", 40, 5120, 40, 17408, 151936, 14768296960.0},
        {"codellama-34b", 48, 8192, 64, 22016, 32000, 33743970304.0},
        {"llama-2-70b", 80, 8192, 64, 28672, 32000, 68976648192.0},
        {"llama3-70b", 80, 8192, 64, 28672, 128256, 70.6e9},
        {"llama3.1-8b", 32, 4096, 32, 14336, 128256, 8.03e9},
        {"qwen2.5-32b", 64, 5120, 40, 27648, 152064, 32.8e9},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        sim_model m;
        sim_err err = {{0}};
        if (sim_model_load(want[i].name, &m, &err)) fail_msg("%s: %s", want[i].name, err.msg);
        assert_string_equal(m.name, want[i].name);
        assert_int_equal(m.layers, want[i].layers);
        assert_int_equal(m.hidden, want[i].hidden);
        assert_int_equal(m.heads, want[i].heads);
        assert_int_equal(m.kv_heads, 8);
        assert_int_equal(m.head_dim, 128);
        assert_int_equal(m.intermediate, want[i].intermediate);
        assert_int_equal(m.vocab, want[i].vocab);
        assert_false(m.tied_embeddings);
        assert_int_equal(m.dtype_bytes, 2);
        assert_double_equal(m.params, want[i].params, 0);
    }
}

/* An inline model needs params or the fields that derive them. */
static void test_inline_params(void **state)
{
    (void)state;
    tu_expect_exit("cost --set 'model={\"layers\": 2, \"hidden\": 64, \"heads\": 4, \"kv_heads\": 4, \"head_dim\": 16, "
                   "\"dtype_bytes\": 2}'",
                   2, "missing field 'params' (or give 'intermediate' and 'vocab' to derive it)");
    tu_expect_exit("cost --set model=llama-2-70b --set model.vocab=0", 2,
                   "config key 'model.vocab': 0 is out of range [1, 16777216]");
    tu_expect_exit("cost --set model=llama-2-70b --set model.tied_embeddings=1", 2,
                   "config key 'model.tied_embeddings': expected true or false");
    /* A two-layer Llama-3.1-8B: 2 · 218,112,000 + 128,256 · 4,096 · 2 + 4,096
     * = 1,486,901,248 parameters, 2,973,802,496 weight bytes read once per
     * decode step at 3,350 GB/s · 0.7234 (h100x1's measured efficiency):
     * 1.227125 ms. */
    json_t *o = tu_kvsim_json(
        "cost --set hardware=h100x1 --set cost.compute=analytic --set 'model={\"layers\": 2, \"hidden\": 4096, "
        "\"heads\": 32, \"kv_heads\": 8, \"head_dim\": 128, \"intermediate\": 14336, "
        "\"vocab\": 128256, \"dtype_bytes\": 2}' --json");
    assert_double_equal(json_number_value(json_object_get(o, "memory_ms")), 1.227125, 1e-4);
    assert_double_equal(json_number_value(json_object_get(o, "memory_ms")), 1e3 * 2973802496.0 / (3350e9 * 0.7234),
                        1e-4);
    json_decref(o);
}

/* The preset `kvsim model import FIXTURE` prints on stdout. */
static json_t *import_json(const char *file)
{
    char args[512];
    snprintf(args, sizeof args, "model import " FIXTURES "%s", file);
    return tu_kvsim_json(args);
}

/* The study models' published config.json files import to the shipped
 * presets' fields and the params worked out in test_derived_params. */
static void test_import_study_models(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        json_int_t layers, hidden, heads, intermediate, vocab, params;
    } want[] = {
        {"Qwen3-14B.json", 40, 5120, 40, 17408, 151936, 14768296960},
        {"CodeLlama-34b-hf.json", 48, 8192, 64, 22016, 32000, 33743970304},
        {"Llama-2-70b-hf.json", 80, 8192, 64, 28672, 32000, 68976648192},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        json_t *o = import_json(want[i].file);
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(strlen(want[i].file) - 5), want[i].file);
        assert_string_equal(json_string_value(json_object_get(o, "name")), name);
        assert_int_equal(tu_int_field(o, "layers"), want[i].layers);
        assert_int_equal(tu_int_field(o, "hidden"), want[i].hidden);
        assert_int_equal(tu_int_field(o, "heads"), want[i].heads);
        assert_int_equal(tu_int_field(o, "kv_heads"), 8);
        assert_int_equal(tu_int_field(o, "head_dim"), 128);
        assert_int_equal(tu_int_field(o, "intermediate"), want[i].intermediate);
        assert_int_equal(tu_int_field(o, "vocab"), want[i].vocab);
        assert_true(json_is_false(json_object_get(o, "tied_embeddings")));
        assert_int_equal(tu_int_field(o, "dtype_bytes"), 2);
        assert_int_equal(tu_int_field(o, "params"), want[i].params);
        json_decref(o);
    }
}

/* The presets added for the model families a measurement may name: each
 * shipped preset has the shape `kvsim model import` reads from the model's
 * published config.json (the architecture keys, tests/fixtures/hf/) and
 * the params of the per-layer sum of test_derived_params, worked out
 * separately (per layer × layers + V·d·2 + d):
 *   Llama-3.1/3.3-70B 855,654,400 × 80 + 128,256·8,192·2 + 8,192 = 70,553,706,496
 *   Qwen2.5-7B   233,053,184 × 28 + 152,064·3,584·2 + 3,584 = 7,615,487,488
 *   Qwen2.5-14B  275,261,440 × 48 + 152,064·5,120·2 + 5,120 = 14,769,689,600
 *   Qwen2.5-72B  877,674,496 × 80 + 152,064·8,192·2 + 8,192 = 72,705,384,448
 *   Qwen3-32B    487,598,080 × 64 + 151,936·5,120·2 + 5,120 = 32,762,106,880
 *   Qwen3-8B     192,946,176 × 36 + 151,936·4,096·2 + 4,096 = 8,190,726,144
 *   Mistral-7B   218,112,000 × 32 + 32,768·4,096·2 + 4,096 = 7,248,023,552
 *   Llama-2-7B   202,383,360 × 32 + 32,000·4,096·2 + 4,096 = 6,738,415,616
 *   Llama-2-13B  317,204,480 × 40 + 32,000·5,120·2 + 5,120 = 13,015,864,320
 * (Llama-2-7B's and -13B's are their published exact counts.) */
static void test_family_presets(void **state)
{
    (void)state;
    static const struct {
        const char *preset, *file;
        double params;
    } want[] = {
        {"llama3.1-70b", "Llama-3.3-70B-Instruct.json", 70553706496.0},
        {"qwen2.5-7b", "Qwen2.5-7B-Instruct.json", 7615487488.0},
        {"qwen2.5-14b", "Qwen2.5-14B-Instruct.json", 14769689600.0},
        {"qwen2.5-72b", "Qwen2.5-72B-Instruct.json", 72705384448.0},
        {"qwen3-32b", "Qwen3-32B.json", 32762106880.0},
        {"qwen3-8b", "Qwen3-8B.json", 8190726144.0},
        {"mistral-7b", "Mistral-7B-Instruct-v0.3.json", 7248023552.0},
        {"llama-2-7b", "Llama-2-7b-hf.json", 6738415616.0},
        {"llama-2-13b", "Llama-2-13b-hf.json", 13015864320.0},
        /* by hand: a layer's q, k, v, o, MLP and two norms, the layers, the
         * embeddings (once when tied) and the final norm.
         * Llama-3.2-1B: 2048·2048 + 2·2048·512 + 2048·2048 + 3·2048·8192 +
         * 2·2048 = 60,821,504 × 16 + 128256·2048 + 2048 */
        {"llama3.2-1b", "Llama-3.2-1B.json", 1235814400.0},
        /* Llama-3.2-3B: 3072·3072 + 2·3072·1024 + 3072·3072 + 3·3072·8192 +
         * 2·3072 = 100,669,440 × 28 + 128256·3072 + 3072 */
        {"llama3.2-3b", "Llama-3.2-3B.json", 3212749824.0},
        /* Llama-3-8B: Llama-3.1-8B's shape, 218,112,000 × 32 + 2·128256·4096 + 4096 */
        {"llama3-8b", "Meta-Llama-3-8B.json", 8030261248.0},
        /* Qwen3-4B: 2560·4096 + 2·2560·1024 + 4096·2560 + 3·2560·9728 +
         * 2·2560 = 100,930,560 × 36 + 151936·2560 + 2560 */
        {"qwen3-4b", "Qwen3-4B.json", 4022458880.0},
        /* Mistral-Small-24B-Instruct-2501: 5120·4096 + 2·5120·1024 + 4096·5120 +
         * 3·5120·32768 + 2·5120 = 555,755,520 × 40 + 2·131072·5120 + 5120 */
        {"mistral-small-24b", "Mistral-Small-24B-Instruct-2501.json", 23572403200.0},
        /* phi-4: 5120·5120 + 2·5120·1280 + 5120·5120 + 3·5120·17920 +
         * 2·5120 = 340,797,440 × 40 + 2·100352·5120 + 5120 */
        {"phi-4", "phi-4.json", 14659507200.0},
        /* Qwen2.5-1.5B-Instruct: 1536·1536 + 2·1536·256 + 1536·1536 +
         * 3·1536·8960 + 2·1536 = 46,795,776 × 28 + 151936·1536 + 1536 */
        {"qwen2.5-1.5b", "Qwen2.5-1.5B-Instruct.json", 1543656960.0},
        /* Qwen2.5-3B-Instruct: 2048·2048 + 2·2048·256 + 2048·2048 +
         * 3·2048·11008 + 2·2048 = 77,074,432 × 36 + 151936·2048 + 2048 */
        {"qwen2.5-3b", "Qwen2.5-3B-Instruct.json", 3085846528.0},
        /* CodeLlama-7b-hf: 4096·4096 + 2·4096·4096 + 4096·4096 + 3·4096·11008 +
         * 2·4096 = 202,383,360 × 32 + 2·32016·4096 + 4096 */
        {"codellama-7b", "CodeLlama-7b-hf.json", 6738546688.0},
        /* CodeLlama-13b-hf: 5120·5120 + 2·5120·5120 + 5120·5120 +
         * 3·5120·13824 + 2·5120 = 317,204,480 × 40 + 2·32016·5120 + 5120 */
        {"codellama-13b", "CodeLlama-13b-hf.json", 13016028160.0},
        /* granite-3.1-8b-instruct (tied): 4096·4096 + 2·4096·1024 + 4096·4096 +
         * 3·4096·12800 + 2·4096 = 199,237,632 × 40 + 49155·4096 + 4096; its
         * config says float32, imported as 2 bytes (test_float32_is_served_16_bit) */
        {"granite-3.1-8b", "granite-3.1-8b-instruct.json", 8170848256.0},
    };
    static const char *const fields[] = {"layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        sim_model m;
        sim_err err = {{0}};
        if (sim_model_load(want[i].preset, &m, &err)) fail_msg("%s: %s", want[i].preset, err.msg);
        assert_double_equal(m.params, want[i].params, 0);
        json_t *o = import_json(want[i].file);
        const int have[] = {m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.intermediate, m.vocab};
        for (size_t k = 0; k < sizeof fields / sizeof *fields; k++)
            if (tu_int_field(o, fields[k]) != have[k])
                fail_msg("%s: %s %d, its config.json %lld", want[i].preset, fields[k], have[k],
                         (long long)tu_int_field(o, fields[k]));
        assert_int_equal(json_is_true(json_object_get(o, "tied_embeddings")), m.tied_embeddings);
        assert_double_equal((double)tu_int_field(o, "params"), want[i].params, 0);
        json_decref(o);
    }
}

/* Written with -o, the preset loads with --set model=FILE and costs exactly
 * what the shipped qwen3-14b preset costs; its folder names it when the file
 * is called config.json. */
static void test_import_round_trip(void **state)
{
    (void)state;
    char *dir = strdup("/tmp/kvsim-model-XXXXXX"), cmd[1024], path[512];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/Qwen3-14B", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(cmd, sizeof cmd, "cp " FIXTURES "Qwen3-14B.json %s/config.json", path);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "model import %s/config.json -o %s/q.json", path, dir);
    tu_expect_stdout(cmd, "model Qwen3-14B, 14768296960 parameters, 163840 bytes of KV per token");
    const char *cost = "cost --set hardware=h100x4 --batch 32 --context 1024 --prefill 4096 --json";
    snprintf(cmd, sizeof cmd, "%s --set model=%s/q.json", cost, dir);
    cli_result imported = tu_kvsim(cmd);
    snprintf(cmd, sizeof cmd, "%s --set model=qwen3-14b", cost);
    cli_result shipped = tu_kvsim(cmd);
    assert_int_equal(imported.status, 0);
    assert_int_equal(shipped.status, 0);
    json_t *a = json_loads(imported.out, 0, NULL), *b = json_loads(shipped.out, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(a, "model")), "Qwen3-14B"); /* each its own name */
    assert_string_equal(json_string_value(json_object_get(b, "model")), "qwen3-14b");
    json_object_del(a, "model"), json_object_del(b, "model");
    /* the same caveat (four GPUs, tensor parallel), each naming its model */
    json_t *ca = json_array_get(json_object_get(a, "caveats"), 0),
           *cb = json_array_get(json_object_get(b, "caveats"), 0);
    assert_string_equal(json_string_value(json_object_get(ca, "name")), "tensor_parallel");
    assert_string_equal(json_string_value(json_object_get(cb, "name")), "tensor_parallel");
    assert_non_null(strstr(json_string_value(json_object_get(ca, "text")), "Qwen3-14B runs on 4 GPUs"));
    assert_non_null(strstr(json_string_value(json_object_get(cb, "text")), "qwen3-14b runs on 4 GPUs"));
    json_object_del(a, "caveats"), json_object_del(b, "caveats");
    assert_true(json_equal(a, b)); /* every figure the same */
    json_decref(a), json_decref(b);
    tu_free(&imported);
    tu_free(&shipped);
    /* --name overrides; "-o -" is stdout. */
    json_t *o = tu_kvsim_json("model import " FIXTURES "Llama-2-70b-hf.json --name llama2 -o -");
    assert_string_equal(json_string_value(json_object_get(o, "name")), "llama2");
    json_decref(o);
    snprintf(cmd, sizeof cmd, "rm -r %s", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

/* Granite 3.1 8B's published config says torch_dtype float32; vLLM's
 * --dtype auto serves such a model in the platform's first dtype,
 * bfloat16 on Ampere and later GPUs (vllm-project/vllm#18751), so the
 * import takes 2 bytes and no torch_dtype (bfloat16), as the shipped
 * preset holds, and says so on stderr with the key that asks for --dtype
 * float32 instead. */
static void test_float32_is_served_16_bit(void **state)
{
    (void)state;
    cli_result r = tu_kvsim("model import " FIXTURES "granite-3.1-8b-instruct.json");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "torch_dtype float32: 2 bytes taken, as vLLM's --dtype auto serves it in bfloat16 "
                                  "on Ampere and later GPUs (--set model.dtype_bytes=4 for --dtype float32)"));
    json_t *o = json_loads(r.out, 0, NULL);
    assert_non_null(o);
    assert_int_equal(tu_int_field(o, "dtype_bytes"), 2);
    sim_model m;
    sim_err err = {{0}};
    if (sim_model_load("granite-3.1-8b", &m, &err)) fail_msg("granite-3.1-8b: %s", err.msg);
    assert_int_equal(tu_int_field(o, "dtype_bytes"), m.dtype_bytes);
    /* and computes in bfloat16, which vLLM's all-reduce dispatch tells apart */
    assert_null(json_object_get(o, "torch_dtype"));
    assert_false(m.fp16);
    json_decref(o);
    tu_free(&r);
}

/* Defaults that follow the model type: Gemma's config classes tie the
 * embeddings when the key is absent (Transformers' Gemma2Config), and vLLM
 * computes the Gemma 2 and 3 types in bfloat16 even from a float16 config
 * (_FLOAT16_NOT_SUPPORTED_MODELS). A Llama-shaped config of either type: the
 * tied count is the untied one less the LM head, 32000 × 4096. */
static void test_import_type_defaults(void **state)
{
    (void)state;
    const char *base = "{\"num_hidden_layers\": 32, \"hidden_size\": 4096, \"num_attention_heads\": 32, "
                       "\"intermediate_size\": 11008, \"vocab_size\": 32000, \"torch_dtype\": \"float16\", "
                       "\"model_type\": \"%s\"}";
    long params[2];
    const char *types[] = {"llama", "gemma2"};
    for (int k = 0; k < 2; k++) {
        char text[512], cmd[600];
        snprintf(text, sizeof text, base, types[k]);
        char *path = tu_write_temp(text);
        snprintf(cmd, sizeof cmd, "model import %s --name t", path);
        cli_result r = tu_kvsim(cmd);
        assert_int_equal(r.status, 0);
        assert_non_null(strstr(r.err, k ? "tie_word_embeddings absent: true taken (the Gemma configs' default)"
                                        : "tie_word_embeddings absent: false taken"));
        json_t *o = json_loads(r.out, 0, NULL);
        assert_non_null(o);
        params[k] = tu_int_field(o, "params");
        assert_int_equal(json_is_true(json_object_get(o, "tied_embeddings")), k);
        if (k) {
            assert_non_null(strstr(r.err, "torch_dtype float16: computed in bfloat16, as vLLM refuses float16 for "
                                          "model_type 'gemma2'"));
            assert_null(json_object_get(o, "torch_dtype"));
        } else assert_string_equal(json_string_value(json_object_get(o, "torch_dtype")), "float16");
        json_decref(o);
        tu_free(&r);
        tu_remove_temp(path);
    }
    assert_int_equal(params[0] - params[1], 32000L * 4096);
}

/* The two-name fields of a model object, each refused by name with its two
 * values (one reader since 2026-12-01), and torch_dtype read. */
static void test_two_name_fields(void **state)
{
    (void)state;
    const char *base = "{\"layers\": 2, \"hidden\": 4096, \"heads\": 32, \"kv_heads\": 8, \"head_dim\": 128, "
                       "\"dtype_bytes\": 2, \"params\": 1e9, %s}";
    const char *cases[][2] = {
        {"\"torch_dtype\": \"fp32\"", "model: field 'torch_dtype' must be \"bfloat16\" or \"float16\""},
        {"\"weight_quant\": \"awq\"", "model: field 'weight_quant' must be \"none\" or \"fp8_block\""},
        {"\"torch_dtype\": \"float16\"", NULL},
        {"\"torch_dtype\": \"bfloat16\"", NULL}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[512];
        snprintf(text, sizeof text, base, cases[i][0]);
        json_t *o = json_loads(text, 0, NULL);
        assert_non_null(o);
        sim_model m;
        sim_err err = {{0}};
        int rc = sim_model_from_json(o, &m, &err);
        if (cases[i][1]) {
            assert_int_equal(rc, -1);
            assert_string_equal(err.msg, cases[i][1]);
        } else {
            assert_int_equal(rc, 0);
            assert_int_equal(m.fp16, i == 2);
        }
        json_decref(o);
    }
}

/* An AWQ or GPTQ checkpoint was imported as 16-bit weights without a word
 * (8.03e9 parameters sized 16 GB, a 4-bit checkpoint's 4 times): refused,
 * naming the method; FP8 is imported as before (test_import_moe). */
static void test_quantized_refused(void **state)
{
    (void)state;
    const char *const methods[] = {"awq", "gptq", "bitsandbytes"};
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++) {
        char text[640], cmd[640], want[160];
        snprintf(text, sizeof text,
                 "{\"num_hidden_layers\": 2, \"hidden_size\": 256, \"num_attention_heads\": 4, "
                 "\"intermediate_size\": 512, \"vocab_size\": 1000, "
                 "\"quantization_config\": {\"quant_method\": \"%s\", \"bits\": 4}}",
                 methods[i]);
        char *path = tu_write_temp(text);
        snprintf(cmd, sizeof cmd, "model import %s", path);
        snprintf(want, sizeof want, "%s: quantization_config.quant_method '%s': kvsim sizes and prices 16-bit and FP8",
                 path, methods[i]);
        tu_expect_exit(cmd, 2, want);
        unlink(path), free(path);
    }
}

/* A config.json that shares a decoder's keys but is not a decoder-only
 * transformer once imported as a dense one: an encoder-decoder (T5's
 * is_encoder_decoder), state-space layers (Mamba's state_size, Jamba's
 * attn_layer_period), an encoder (BertModel). Each exits 2 naming what
 * it is; the same keys as a LlamaForCausalLM import. */
static void test_non_decoders_refused(void **state)
{
    (void)state;
    static const char keys[] = "\"num_hidden_layers\": 2, \"hidden_size\": 256, \"num_attention_heads\": 4, "
                               "\"intermediate_size\": 512, \"vocab_size\": 1000";
    const char *const cases[][2] = {
        {"\"architectures\": [\"T5ForConditionalGeneration\"], \"is_encoder_decoder\": true",
         "is_encoder_decoder true: kvsim models decoder-only transformers"},
        {"\"architectures\": [\"MambaForCausalLM\"], \"state_size\": 16",
         "key 'state_size': state-space or recurrent layers"},
        {"\"architectures\": [\"JambaForCausalLM\"], \"attn_layer_period\": 8",
         "key 'attn_layer_period': state-space or recurrent layers"},
        {"\"architectures\": [\"BertModel\"]", "architectures[0] 'BertModel' generates no text"},
        {"\"architectures\": [\"LlamaForCausalLM\"]", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[640], cmd[640], want[300];
        snprintf(text, sizeof text, "{%s, %s}", keys, cases[i][0]);
        char *path = tu_write_temp(text);
        snprintf(cmd, sizeof cmd, "model import %s --name tiny", path);
        if (cases[i][1]) {
            snprintf(want, sizeof want, "%s: %s", path, cases[i][1]);
            tu_expect_exit(cmd, 2, want);
        } else {
            tu_expect_stdout(cmd, "\"layers\": 2");
        }
        unlink(path), free(path);
    }
}

/* The context window (model.context_window): every preset gives one; each
 * fixture that keeps max_position_embeddings imports to its preset's
 * value; a yarn rope_scaling multiplies its original window by the factor
 * and a linear one the window (vLLM's _get_and_verify_max_len), llama3's
 * does not (its max_position_embeddings is already the scaled window). */
static void test_context_window(void **state)
{
    (void)state;
    static const struct {
        const char *preset, *file;
    } pair[] = {{"mixtral-8x7b", "Mixtral-8x7B-v0.1.json"},
                {"deepseek-v3", "DeepSeek-V3.json"},
                {"llama3.1-70b", "Llama-3.3-70B-Instruct.json"},
                {"qwen2.5-7b", "Qwen2.5-7B-Instruct.json"},
                {"qwen3-14b", "Qwen3-14B.json"},
                {"llama-2-70b", "Llama-2-70b-hf.json"},
                {"phi-4", "phi-4.json"},
                {"codellama-34b", "CodeLlama-34b-hf.json"}};
    const long want[] = {32768, 163840, 131072, 32768, 40960, 4096, 16384, 16384}; /* the fixtures' */
    for (size_t i = 0; i < sizeof pair / sizeof *pair; i++) {
        sim_model m;
        sim_err err = {{0}};
        if (sim_model_load(pair[i].preset, &m, &err)) fail_msg("%s: %s", pair[i].preset, err.msg);
        json_t *o = import_json(pair[i].file);
        assert_int_equal(tu_int_field(o, "context_window"), want[i]);
        assert_int_equal(m.context_window, want[i]);
        json_decref(o);
    }
    DIR *d = opendir("configs/models");
    assert_non_null(d);
    int presets = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char name[256];
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".json")) continue;
        snprintf(name, sizeof name, "%.*s", (int)(n - 5), e->d_name);
        sim_model m;
        sim_err err = {{0}};
        if (sim_model_load(name, &m, &err)) fail_msg("%s: %s", name, err.msg);
        if (m.context_window < 4096) fail_msg("preset %s: context_window %d", name, m.context_window);
        presets++;
    }
    closedir(d);
    assert_true(presets >= 31);
    const char *base = "{\"num_hidden_layers\": 2, \"hidden_size\": 256, \"num_attention_heads\": 4, "
                       "\"intermediate_size\": 512, \"vocab_size\": 1000, \"max_position_embeddings\": 32768, "
                       "\"rope_scaling\": %s}";
    const struct {
        const char *scaling;
        long window;
    } rope[] = {{"{\"rope_type\": \"yarn\", \"factor\": 4.0, \"original_max_position_embeddings\": 8192}", 32768},
                {"{\"type\": \"yarn\", \"factor\": 4.0}", 131072},
                {"{\"type\": \"linear\", \"factor\": 2.0}", 65536},
                {"{\"rope_type\": \"llama3\", \"factor\": 8.0, \"original_max_position_embeddings\": 8192}", 32768},
                {"null", 32768}};
    for (size_t k = 0; k < sizeof rope / sizeof *rope; k++) {
        char text[512], cmd[512];
        snprintf(text, sizeof text, base, rope[k].scaling);
        char *path = tu_write_temp(text);
        snprintf(cmd, sizeof cmd, "model import %s --name tiny", path);
        json_t *o = tu_kvsim_json(cmd);
        if (tu_int_field(o, "context_window") != rope[k].window)
            fail_msg("%s: %lld, want %ld", rope[k].scaling, (long long)tu_int_field(o, "context_window"),
                     rope[k].window);
        json_decref(o);
        unlink(path), free(path);
    }
}

/* A Llama-2-7B-style config with no num_key_value_heads, head_dim,
 * tie_word_embeddings or torch_dtype: heads, hidden / heads, false and
 * 2 bytes, the last two said on stderr. 4·4096² + 3·4096·11008 + 8192 =
 * 202,383,360 × 32 + 32,000·4,096·2 + 4,096 = 6,738,415,616. */
static void test_import_defaults(void **state)
{
    (void)state;
    char *path = tu_write_temp("{\"num_hidden_layers\": 32, \"hidden_size\": 4096, \"num_attention_heads\": 32, "
                               "\"intermediate_size\": 11008, \"vocab_size\": 32000, \"head_dim\": null}");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "model import %s --name llama-2-7b", path);
    cli_result r = tu_kvsim(cmd);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "tie_word_embeddings absent: false taken"));
    assert_non_null(strstr(r.err, "torch_dtype absent: 2 bytes (bf16) taken"));
    json_t *o = json_loads(r.out, 0, NULL);
    assert_non_null(o);
    assert_int_equal(tu_int_field(o, "kv_heads"), 32);
    assert_int_equal(tu_int_field(o, "head_dim"), 128);
    assert_int_equal(tu_int_field(o, "params"), 6738415616);
    json_decref(o);
    tu_free(&r);
    tu_remove_temp(path);
}

/* Write text as a config.json and expect `kvsim model import` to exit 2
 * naming the file and saying want. */
static void expect_import_error(const char *text, const char *want)
{
    char *path = tu_write_temp(text), cmd[512], named[640];
    snprintf(cmd, sizeof cmd, "model import %s", path);
    snprintf(named, sizeof named, "%s%s", path, want);
    tu_expect_exit(cmd, 2, named);
    tu_remove_temp(path);
}

#define DENSE                                                                                                          \
    "\"num_hidden_layers\": 32, \"hidden_size\": 4096, \"num_attention_heads\": 32, \"intermediate_size\": 14336, "    \
    "\"vocab_size\": 32000"

static void test_import_errors(void **state)
{
    (void)state;
    static const struct {
        const char *config, *want;
    } cases[] = {
        {"{" DENSE ", \"num_local_experts\": 8}", ": missing key 'num_experts_per_tok'"},
        {"{" DENSE ", \"num_experts\": 128}", ": missing key 'num_experts_per_tok'"},
        {"{" DENSE ", \"n_routed_experts\": 256}", ": missing key 'num_experts_per_tok'"},
        {"{\"num_hidden_layers\": 32, \"hidden_size\": 4096, \"num_attention_heads\": 32, \"vocab_size\": 32000}",
         ": missing key 'intermediate_size'"},
        {"{" DENSE ", \"torch_dtype\": \"float8_e4m3fn\"}",
         ": key 'torch_dtype': 'float8_e4m3fn' is not one of bfloat16, float16, float32"},
        {"{" DENSE ", \"num_key_value_heads\": 2.5}", ": key 'num_key_value_heads' must be a positive integer"},
        {"{" DENSE ", \"tie_word_embeddings\": \"no\"}", ": key 'tie_word_embeddings' must be true or false"},
        {"{\"num_hidden_layers\": 5000, \"hidden_size\": 4096, \"num_attention_heads\": 32, "
         "\"intermediate_size\": 14336, \"vocab_size\": 32000}",
         ": config key 'model.layers': 5000 is out of range [1, 4096]"},
        {"{\"num_hidden_layers\": 2, \"hidden_size\": 100, \"num_attention_heads\": 3, \"intermediate_size\": 256, "
         "\"vocab_size\": 1000}",
         ": no 'head_dim', and hidden_size 100 is not a multiple of num_attention_heads 3"},
        {"{\"num_hidden_layers\": 2,", ":1: "},
        {"[1, 2]", ": expected a JSON object (a Hugging Face config.json)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) expect_import_error(cases[i].config, cases[i].want);
    tu_expect_exit("model import", 2, "kvsim model import: give one CONFIG.json");
    tu_expect_exit("model import " FIXTURES "missing.json", 2, FIXTURES "missing.json:");
    tu_expect_exit("model import " FIXTURES "Qwen3-14B.json -o /nonexistent-dir/q.json", 2, "/nonexistent-dir");
    tu_expect_exit("model export", 2, "kvsim model: unknown subcommand 'export'");
    tu_expect_stdout("model --help", "usage: kvsim model import CONFIG.json");
    tu_expect_stdout("--help", "model import: a model preset from a Hugging Face config.json");
}

/* KV formats (issue 33 item 2), by hand from the published configs.
 * DeepSeek-V3 (MLA, kv_lora_rank 512, qk_rope_head_dim 64, 61 layers):
 * 61 · (512 + 64) · 2 = 70,272 B in bf16, 35,136 B in fp8, not
 * 2 · 61 · 128 · 128 · 2 = 3,997,696 B as 128 KV heads of 128 would hold.
 * Llama-3.1-8B with fp8 KV: 2 · 32 · 8 · 128 · 1 = 65,536 B. Decode
 * attention FLOPs per context token: DeepSeek-V3 2 · 61 · 128 · (2 · 512 +
 * 64) = 16,990,208 (absorbed MLA); Llama-3.1-8B 4 · 32 · 32 · 128 = 524,288. */
static void test_kv_formats(void **state)
{
    (void)state;
    sim_model m;
    sim_err err = {{0}};
    if (sim_model_load("deepseek-v3", &m, &err)) fail_msg("%s", err.msg);
    assert_int_equal(m.kv_lora_rank, 512);
    assert_int_equal(m.qk_rope_head_dim, 64);
    assert_int_equal(m.experts, 256);
    assert_double_equal(sim_model_kv_bytes_per_token(&m), 70272, 0);
    assert_double_equal(sim_cost_attn_flops(&m), 16990208, 0);
    m.kv_dtype_bytes = sim_model_kv_dtype_bytes("fp8", m.dtype_bytes);
    assert_double_equal(sim_model_kv_bytes_per_token(&m), 35136, 0);
    m.kv_lora_rank = m.qk_rope_head_dim = 0, m.kv_dtype_bytes = 2;
    assert_double_equal(sim_model_kv_bytes_per_token(&m), 3997696, 0);
    if (sim_model_load("llama3.1-8b", &m, &err)) fail_msg("%s", err.msg);
    assert_string_equal(m.kv_dtype, "auto");
    assert_double_equal(sim_model_kv_bytes_per_token(&m), 131072, 0);
    assert_double_equal(sim_cost_attn_flops(&m), 524288, 0);
    static const char *const fp8[] = {"fp8", "fp8_e4m3", "fp8_e5m2"};
    for (size_t i = 0; i < 3; i++) {
        m.kv_dtype_bytes = sim_model_kv_dtype_bytes(fp8[i], m.dtype_bytes);
        assert_double_equal(sim_model_kv_bytes_per_token(&m), 65536, 0);
    }
    assert_int_equal(sim_model_kv_dtype_bytes("auto", 4), 4);
    assert_int_equal(sim_model_kv_dtype_bytes("fp16", 4), 2);
    assert_int_equal(sim_model_kv_dtype_bytes("int4", 2), 0);
}

/* The byte axes and HBM capacity through the CLI. kvsim hitrate's model
 * line; kvsim cost on a800x8 (8 × 80 GB): 640e9 · 0.9 − 8.03e9 · 2 =
 * 559.94e9 bytes of KV, 4,272,003 tokens of 131,072 B, 8,544,006 of 65,536. */
static void test_kv_formats_cli(void **state)
{
    (void)state;
    tu_expect_stdout("hitrate --trace traces/default.jsonl --model deepseek-v3 --capacity-tokens 1M",
                     "model     deepseek-v3: 70272 KV bytes/token");
    tu_expect_stdout("hitrate --trace traces/default.jsonl --model deepseek-v3 --capacity-tokens 1M",
                     "         1000000         1953      70.27");
    json_t *o = tu_kvsim_json("cost --set model=llama3.1-8b --json");
    assert_int_equal(tu_int_field(o, "hbm_kv_tokens"), 4272003);
    json_decref(o);
    o = tu_kvsim_json("cost --set model=llama3.1-8b --set model.kv_dtype=fp8 --json");
    assert_int_equal(tu_int_field(o, "hbm_kv_tokens"), 8544006);
    assert_int_equal(tu_int_field(o, "kv_bytes_per_token"), 65536);
    json_decref(o);
    tu_expect_exit("cost --set model=llama3.1-8b --set model.kv_dtype=fp9", 2,
                   "config key 'model.kv_dtype': 'fp9' is not one of auto, bf16, fp16, fp8, fp8_e4m3, fp8_e5m2 "
                   "(did you mean 'fp8'?)");
    tu_expect_exit("cost --set model=llama3.1-8b --set model.kv_lora_rank=512", 2,
                   "model: fields 'kv_lora_rank' and 'qk_rope_head_dim' (multi-head latent attention) go together");
    tu_expect_stdout("cost --set model=deepseek-v3", "HBM holds 0 KV tokens, 70272 bytes each");
}

/* A dense MLA config.json: its kv_lora_rank and qk_rope_head_dim reach the
 * preset, 62 · (256 + 32) · 2 = 35,712 KV bytes a token; the note says the
 * params count MLA's projections. Without qk_rope_head_dim, or with a
 * v_head_dim other than qk_nope_head_dim: an error. */
static void test_import_mla(void **state)
{
    (void)state;
    const char *mla = "{\"num_hidden_layers\": 62, \"hidden_size\": 2560, \"num_attention_heads\": 40, "
                      "\"intermediate_size\": 6400, \"vocab_size\": 73448, \"kv_lora_rank\": 256";
    char text[512], cmd[512];
    snprintf(text, sizeof text, "%s, \"qk_rope_head_dim\": 32}", mla);
    char *path = tu_write_temp(text);
    snprintf(cmd, sizeof cmd, "model import %s --name mla", path);
    cli_result r = tu_kvsim(cmd);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "kv_lora_rank: multi-head latent attention"));
    json_t *o = json_loads(r.out, 0, NULL);
    sim_model m;
    sim_err err = {{0}};
    assert_int_equal(sim_model_from_json(o, &m, &err), 0);
    assert_double_equal(sim_model_kv_bytes_per_token(&m), 35712, 0);
    json_decref(o);
    tu_free(&r);
    tu_remove_temp(path);
    snprintf(text, sizeof text, "%s}", mla);
    expect_import_error(text, ": key 'kv_lora_rank' (multi-head latent attention) needs 'qk_rope_head_dim'");
    snprintf(text, sizeof text, "%s, \"qk_rope_head_dim\": 32, \"qk_nope_head_dim\": 64, \"v_head_dim\": 96}", mla);
    expect_import_error(text, ": key 'v_head_dim' (96) differs from 'qk_nope_head_dim' (64)");
}

/* The published MoE configs import to what the shipped presets hold (the
 * counts worked by hand in tests/test_moe.c). DeepSeek-V3's params, with
 * MLA's low-rank projections, by hand (d 7168, 128 heads of 128 + 64 RoPE,
 * q_lora 1536, kv_lora 512): attention 7168·1536 + 1536·128·192 +
 * 7168·576 + 512·128·256 + 128·128·7168 = 187,105,280 and norms 2·7168 +
 * 1536 + 512 a layer, × 61; 3 dense MLPs of 3·7168·18432; 58 MoE layers
 * of 257 experts of 3·7168·2048 and a 7168·256 router; untied embeddings
 * 2·129280·7168 and the final norm: 671,026,404,352 (the preset: 671e9).
 * Its fp8 weights keep a bf16 KV cache: 70,272 B a token; its query latent
 * (q_lora_rank 1536), head_dim 128 (qk_nope_head_dim) and 128x128 weight
 * blocks come across. */
static void test_import_moe(void **state)
{
    (void)state;
    static const char *const pairs[][2] = {
        {"Mixtral-8x7B-v0.1.json", "mixtral-8x7b"},
        {"Qwen3-30B-A3B.json", "qwen3-30b-a3b"},
        {"DeepSeek-V3.json", "deepseek-v3"},
        {"Qwen3-235B-A22B.json", "qwen3-235b-a22b"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        char args[256];
        snprintf(args, sizeof args, "model import " FIXTURES "%s", pairs[i][0]);
        json_t *o = tu_kvsim_json(args);
        sim_model got, want;
        sim_err err = {{0}};
        if (sim_model_from_json(o, &got, &err) || sim_model_load(pairs[i][1], &want, &err)) fail_msg("%s", err.msg);
        int moe_got[] = {got.experts,     got.experts_per_token, got.shared_experts, got.dense_layers,
                         got.dtype_bytes, got.q_lora_rank,       got.fp8_block};
        int moe_want[] = {want.experts,     want.experts_per_token, want.shared_experts, want.dense_layers,
                          want.dtype_bytes, want.q_lora_rank,       want.fp8_block};
        assert_memory_equal(moe_got, moe_want, sizeof moe_got);
        assert_double_equal(sim_model_expert_params(&got), sim_model_expert_params(&want), 0);
        assert_double_equal(sim_model_kv_bytes_per_token(&got), sim_model_kv_bytes_per_token(&want), 0);
        assert_double_equal(got.params, i != 2 ? want.params : 671026404352.0, 0);
        assert_int_equal(got.head_dim, want.head_dim);
        json_decref(o);
    }
}

#define MOE                                                                                                            \
    "\"num_hidden_layers\": 24, \"hidden_size\": 2048, \"num_attention_heads\": 16, \"intermediate_size\": 5632, "     \
    "\"vocab_size\": 151936, \"num_experts\": 60, \"moe_intermediate_size\": 1408"

/* Qwen2-MoE (Qwen1.5-MoE-A2.7B's shape: one shared expert of 5632 = 4 ·
 * 1408) and layouts kvsim cannot say. */
static void test_import_moe_layouts(void **state)
{
    (void)state;
    char *path = tu_write_temp("{" MOE ", \"num_experts_per_tok\": 4, \"shared_expert_intermediate_size\": 5632}");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "model import %s --name qwen-moe", path);
    json_t *o = tu_kvsim_json(cmd);
    assert_int_equal(tu_int_field(o, "shared_experts"), 4);
    json_decref(o);
    tu_remove_temp(path);
    expect_import_error("{" MOE "}", ": missing key 'num_experts_per_tok'");
    expect_import_error("{" MOE ", \"num_experts_per_tok\": 61}", ": key 'num_experts_per_tok' (61) exceeds the 60");
    expect_import_error("{" MOE ", \"num_experts_per_tok\": 4, \"decoder_sparse_step\": 2}",
                        ": key 'decoder_sparse_step' is not 1");
    expect_import_error("{" MOE ", \"num_experts_per_tok\": 4, \"mlp_only_layers\": [0, 5]}",
                        ": key 'mlp_only_layers' is not empty");
    expect_import_error("{" MOE ", \"num_experts_per_tok\": 4, \"shared_expert_intermediate_size\": 1000}",
                        ": key 'shared_expert_intermediate_size' (1000) is not a multiple of moe_intermediate_size");
    tu_expect_exit("cost --set model=llama3.1-8b --set model.shared_experts=1", 2,
                   "fields 'moe_intermediate', 'shared_experts' and 'dense_layers' need 'experts'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_derived_params),       cmocka_unit_test(test_presets),
        cmocka_unit_test(test_inline_params),        cmocka_unit_test(test_import_study_models),
        cmocka_unit_test(test_import_round_trip),    cmocka_unit_test(test_import_defaults),
        cmocka_unit_test(test_import_errors),        cmocka_unit_test(test_kv_formats),
        cmocka_unit_test(test_kv_formats_cli),       cmocka_unit_test(test_import_mla),
        cmocka_unit_test(test_import_moe),           cmocka_unit_test(test_import_moe_layouts),
        cmocka_unit_test(test_family_presets),       cmocka_unit_test(test_float32_is_served_16_bit),
        cmocka_unit_test(test_import_type_defaults), cmocka_unit_test(test_two_name_fields),
        cmocka_unit_test(test_context_window),       cmocka_unit_test(test_quantized_refused),
        cmocka_unit_test(test_non_decoders_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
