/* sim/cli/cmd_model.c — `kvsim model import CONFIG.json`: a model preset from a
 * Hugging Face config.json, so that a user adds a model without code.
 * The mapping, the parameter count and the checks are
 * sim/config/model_import.c; this file parses the options, names the preset
 * and writes it (sim/outfile.h: whole or not at all). */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "sim/cli/cli.h"
#include "sim/config/model.h"
#include "sim/outfile.h"

#define IMPORT_CMD "model import"

static const char model_usage[] = "usage: kvsim model import CONFIG.json [-o FILE] [--name NAME]\n"
                                  "\n"
                                  "Write a model preset (configs/models/NAME.json) from a Hugging Face config.json\n"
                                  "of a decoder: num_hidden_layers, hidden_size, num_attention_heads,\n"
                                  "num_key_value_heads (absent: the heads; at most the heads and dividing them),\n"
                                  "head_dim (absent: hidden / heads), intermediate_size, vocab_size,\n"
                                  "tie_word_embeddings and torch_dtype, with the parameter count derived from\n"
                                  "them (sim/config/model.h), and the context window from\n"
                                  "max_position_embeddings and rope_scaling as vLLM derives its default\n"
                                  "max_model_len (model.context_window). Mixtures of experts (num_local_experts,\n"
                                  "num_experts or n_routed_experts above 1) and multi-head latent attention\n"
                                  "(kv_lora_rank) are imported; MoE layouts other than dense layers first, and\n"
                                  "weights quantized otherwise than FP8 (AWQ, GPTQ), are refused. What is\n"
                                  "assumed or ignored (an expert count of 0, sliding_window, an absent\n"
                                  "torch_dtype or max_position_embeddings, a float32 torch_dtype taken as\n"
                                  "16-bit as vLLM's --dtype auto serves it) is said on stderr. The preset loads\n"
                                  "with --set model=FILE.\n"
                                  "\n"
                                  "  -o, --out FILE   write the preset here (default: stdout)\n"
                                  "  --name NAME      the preset's name (default: the file's name without .json,\n"
                                  "                   or its folder's name for a file called config.json)\n"
                                  "  -h, --help       this help\n"
                                  "\n"
                                  "Exit status: 0 ok, 2 bad arguments, an unreadable or unsupported config.json,\n"
                                  "or an output that cannot be written (message on stderr).\n";

/* The default name: "Qwen3-14B/config.json" → "Qwen3-14B", "qwen3.json" → "qwen3". */
static void default_name(const char *path, char *buf, size_t n)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t len = strlen(base);
    if (len > 5 && !strcmp(base + len - 5, ".json")) len -= 5;
    if (len == 6 && !strncmp(base, "config", 6) && base > path) {
        const char *end = base - 1, *start = end;
        while (start > path && start[-1] != '/') start--;
        size_t flen = (size_t)(end - start);
        bool dots = (flen == 1 && start[0] == '.') || (flen == 2 && !strncmp(start, "..", 2));
        if (flen > 0 && !dots) base = start, len = flen;
    }
    snprintf(buf, n, "%.*s", (int)len, base);
}

static int write_preset(const sim_hf_import *im, const char *out)
{
    sim_outfile o;
    sim_err err;
    if (sim_outfile_open(&o, out, &err)) return sim_usage_error(IMPORT_CMD, err.msg);
    if (json_dumpf(im->preset, o.f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) || fputc('\n', o.f) == EOF) {
        sim_outfile_abort(&o);
        return sim_usage_error(IMPORT_CMD, "cannot write the preset");
    }
    if (sim_outfile_close(&o, &err)) return sim_usage_error(IMPORT_CMD, err.msg);
    return SIM_EXIT_OK;
}

static int import(const char *path, const char *name, const char *out)
{
    char defname[256];
    sim_hf_import im;
    sim_err err;
    if (!name) default_name(path, defname, sizeof defname), name = defname;
    if (sim_model_import_hf(path, name, &im, &err)) return sim_usage_error(IMPORT_CMD, err.msg);
    if (im.note[0]) fprintf(stderr, "kvsim %s: %s: %s\n", IMPORT_CMD, path, im.note);
    int rc = write_preset(&im, out ? out : "-");
    if (!rc && out && strcmp(out, "-")) /* stdout holds the preset itself otherwise */
        printf("%s: model %s, %.0f parameters, %.0f bytes of KV per token (--set model=%s)\n", out, im.model.name,
               im.model.params, sim_model_kv_bytes_per_token(&im.model), out);
    json_decref(im.preset);
    return rc;
}

static int model_import(int argc, char **argv)
{
    static const struct option opts[] = {{"out", required_argument, NULL, 'o'},
                                         {"name", required_argument, NULL, 'n'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *out = NULL, *name = NULL;
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "ho:", opts, NULL)) != -1;) {
        switch (ch) {
        case 'o': out = optarg; break;
        case 'n': name = optarg; break;
        case 'h': fputs(model_usage, stdout); return SIM_EXIT_OK;
        default: return sim_usage_error(IMPORT_CMD, "bad option (see kvsim model import --help)");
        }
    }
    if (optind != argc - 1)
        return sim_usage_error(IMPORT_CMD,
                               "give one CONFIG.json, a Hugging Face config.json (see kvsim model import --help)");
    return import(argv[optind], name, out);
}

int cmd_model(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(model_usage, stdout);
        return SIM_EXIT_OK;
    }
    if (argc >= 2 && !strcmp(argv[1], "import")) return model_import(argc - 1, argv + 1);
    if (argc < 2) fprintf(stderr, "kvsim model: missing subcommand (import)\n\n%s", model_usage);
    else fprintf(stderr, "kvsim model: unknown subcommand '%s' (import)\n\n%s", argv[1], model_usage);
    return SIM_EXIT_USAGE;
}
