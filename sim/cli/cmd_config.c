/* sim/cli/cmd_config.c — `kvsim config`: the resolved config of a run, or
 * the config schema (every key's type, default, range, unit and meaning)
 * as text, JSON or the README's Markdown table. Reads sim/config/schema.h
 * by iteration; nothing here names a key. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cli/cli.h"
#include "sim/config/config.h"
#include "sim/config/schema.h"
#include "sim/serving/serving.h"

static const char config_usage[] = "usage: kvsim config [--config FILE] [--set key.path=value]...\n"
                                   "       kvsim config --schema [--markdown | --json]\n"
                                   "\n"
                                   "Print the resolved config a run would use (configs/default.json, --config,\n"
                                   "presets, --set; checked as kvsim run checks it), or with --schema every\n"
                                   "config key: type, default, allowed range, unit and meaning.\n"
                                   "\n"
                                   "  --config FILE      config file merged over configs/default.json\n"
                                   "  --set KEY=VALUE    override one config key\n"
                                   "  --schema           the schema instead of a config\n"
                                   "  --markdown         the schema as the README's configuration table\n"
                                   "  --json             the schema as a JSON array\n"
                                   "  -h, --help         this help\n"
                                   "\n"
                                   "Exit status: 0 ok, 2 bad arguments or config (message on stderr).\n";

/* A key's default in configs/default.json as compact JSON, or "preset"
 * for the fields of the model and hardware presets. */
static char *default_of(const json_t *defaults, const sim_config_key *k)
{
    const json_t *v = sim_config_path_get(defaults, k->path);
    if (!v) return sim_xstrdup(!strncmp(k->path, "model.", 6) || !strncmp(k->path, "hardware.", 9) ? "preset" : "");
    return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(10));
}

static json_t *load_defaults(void)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/default.json", sim_config_dir());
    return json_load_file(path, 0, NULL);
}

static void print_row(FILE *f, const sim_config_key *k, const char *def, bool markdown)
{
    char range[128];
    sim_config_key_range(k, range, sizeof range);
    const char *type = sim_config_key_type_name(k->type);
    bool code = *def && strcmp(def, "preset");
    if (markdown)
        fprintf(f, "| `%s` | %s | %s%s%s | %s | %s | %s |\n", k->path, type, code ? "`" : "", def, code ? "`" : "",
                range, k->unit, k->meaning);
    else fprintf(f, "%-34s %-7s %-22s %-28s %-8s %s\n", k->path, type, def, range, k->unit, k->meaning);
}

static json_t *json_row(const sim_config_key *k, const char *def)
{
    char range[128];
    sim_config_key_range(k, range, sizeof range);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "key", k->path, "type", sim_config_key_type_name(k->type),
                     "default", def, "range", range, "unit", k->unit, "meaning", k->meaning);
}

static int print_schema(bool markdown, bool as_json)
{
    json_t *defaults = load_defaults(), *arr = json_array();
    if (!defaults) return sim_usage_error("config", "cannot read configs/default.json");
    if (markdown) puts("| key | type | default | range | unit | meaning |\n|---|---|---|---|---|---|");
    else if (!as_json) printf("%-34s %-7s %-22s %-28s %-8s %s\n", "key", "type", "default", "range", "unit", "meaning");
    for (size_t i = 0; i < sim_config_key_count(); i++) {
        const sim_config_key *k = sim_config_key_at(i);
        char *def = default_of(defaults, k);
        if (as_json) json_array_append_new(arr, json_row(k, def));
        else print_row(stdout, k, def, markdown);
        free(def);
    }
    if (as_json) {
        json_dumpf(arr, stdout, JSON_INDENT(2));
        putchar('\n');
    }
    json_decref(arr);
    json_decref(defaults);
    return SIM_EXIT_OK;
}

static int print_resolved(const char *file, char **sets, int nsets)
{
    sim_config cfg;
    sim_err err = {0};
    if (sim_config_load(&cfg, file, sets, nsets, &err)) return sim_usage_error("config", err.msg);
    if (sim_serving_check(&cfg, &err)) { /* policies and their parameters, as run checks them (once not) */
        sim_config_free(&cfg);
        return sim_usage_error("config", err.msg);
    }
    json_dumpf(cfg.root, stdout, JSON_INDENT(2));
    putchar('\n');
    sim_config_free(&cfg);
    return SIM_EXIT_OK;
}

int cmd_config(int argc, char **argv)
{
    static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                         {"set", required_argument, NULL, 's'},
                                         {"schema", no_argument, NULL, 'S'},
                                         {"markdown", no_argument, NULL, 'm'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *file = NULL;
    char **sets = sim_xcalloc((size_t)argc + 1, sizeof *sets);
    int nsets = 0, rc;
    bool schema = false, markdown = false, as_json = false;
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        switch (ch) {
        case 'c': file = optarg; break;
        case 's': sets[nsets++] = optarg; break;
        case 'S': schema = true; break;
        case 'm': markdown = true; break;
        case 'j': as_json = true; break;
        case 'h': fputs(config_usage, stdout), free(sets); return SIM_EXIT_OK;
        default: free(sets); return sim_usage_error("config", "bad option (see kvsim config --help)");
        }
    }
    if (optind < argc) rc = sim_cli_unexpected_error("config", argv[optind], "--config");
    else if ((markdown || as_json) && !schema) rc = sim_usage_error("config", "--markdown and --json go with --schema");
    else if (markdown && as_json) rc = sim_usage_error("config", "--markdown or --json, not both");
    else if (schema && (file || nsets)) rc = sim_usage_error("config", "--schema takes no --config or --set");
    else rc = schema ? print_schema(markdown, as_json) : print_resolved(file, sets, nsets);
    free(sets);
    return rc;
}
