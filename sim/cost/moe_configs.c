/* sim/cost/moe_configs.c — which of vLLM's tuned configs its fused-MoE
 * Triton kernel runs a pass with (docs/measured.md §4).
 *
 * vLLM (fused_moe.py, try_get_optimal_moe_config) reads the file
 * E={E},N={N},device_name={device}.json of its configs folder — E the
 * experts on one GPU, N one GPU's shard of the expert intermediate size —
 * and runs a pass of M tokens with the config of the key nearest M (ties
 * to the lower key: the files list their keys in ascending order and
 * Python's min keeps the first). With no file it takes get_default_config's:
 * for unquantized weights one config up to E tokens and another above.
 * Keys whose configs are identical compile to one kernel, so all kvsim
 * needs is which keys share a config: configs/vllm/fused_moe_configs.json
 * holds that, for the unquantized files vLLM ships for the GPUs with
 * measured tables. Quantized weights read other files, not bundled: there
 * every key counts as a config of its own, an upper bound on the kernels
 * vLLM compiles. */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "sim/cost/measured_int.h"

/* The keys of vLLM's tuning script (benchmarks/kernels/benchmark_moe.py),
 * which every bundled H100 file has. */
static const int std_keys[] = {1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256, 512, 1024, 1536, 2048, 3072, 4096};
enum { N_STD_KEYS = sizeof std_keys / sizeof std_keys[0] };

static void every_key_its_own(moe_cfgmap *out)
{
    out->n = N_STD_KEYS;
    for (int i = 0; i < N_STD_KEYS; i++) out->keys[i] = std_keys[i], out->config[i] = i;
}

/* One file's entry into out; -1 with err when its lists are not keys and
 * config indices of the same length. */
static int read_file_entry(const char *path, const json_t *f, moe_cfgmap *out, sim_err *err)
{
    const json_t *keys = json_object_get(f, "keys"), *cfg = json_object_get(f, "config");
    size_t n = json_array_size(keys);
    if (n == 0 || n > MOE_MAX_KEYS || json_array_size(cfg) != n)
        return sim_errf(err, "%s: an entry's \"keys\" and \"config\" must be lists of the same length, 1 to %d", path,
                        MOE_MAX_KEYS);
    out->n = (int)n;
    for (size_t i = 0; i < n; i++) {
        json_int_t k = json_integer_value(json_array_get(keys, i)), c = json_integer_value(json_array_get(cfg, i));
        if (k < 1 || (i > 0 && k <= out->keys[i - 1]) || c < 0 || (size_t)c > i)
            return sim_errf(err,
                            "%s: entry %s E=%lld N=%lld: keys must ascend from 1 and each config index point at "
                            "a key at or before its own",
                            path, json_string_value(json_object_get(f, "device")),
                            (long long)json_integer_value(json_object_get(f, "E")),
                            (long long)json_integer_value(json_object_get(f, "N")));
        out->keys[i] = (int)k, out->config[i] = (int)c;
    }
    return 0;
}

int moe_cfgmap_find(const char *path, const char *device, int experts, int n, bool quantized, moe_cfgmap *out,
                    sim_err *err)
{
    memset(out, 0, sizeof *out);
    out->experts = experts;
    if (quantized) return every_key_its_own(out), 0;
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root)
        return sim_errf(err,
                        "%s:%d: %s (vLLM's fused-MoE configs, bundled with kvsim: restore the file from the "
                        "repository)",
                        path, je.line, je.text);
    size_t i;
    const json_t *f;
    int rc = 0;
    json_array_foreach(json_object_get(root, "files"), i, f)
    {
        const char *dev = json_string_value(json_object_get(f, "device"));
        if (dev && !strcmp(dev, device) && json_integer_value(json_object_get(f, "E")) == experts &&
            json_integer_value(json_object_get(f, "N")) == n) {
            rc = read_file_entry(path, f, out, err);
            break;
        }
    }
    json_decref(root);
    return rc;
}

int moe_cfgmap_config(const moe_cfgmap *m, double tokens)
{
    if (m->n == 0) return tokens <= m->experts ? 0 : 1; /* get_default_config */
    int best = 0;
    for (int i = 1; i < m->n; i++)
        if (fabs(m->keys[i] - tokens) < fabs(m->keys[best] - tokens)) best = i;
    return m->config[best];
}
