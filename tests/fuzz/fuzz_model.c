/* tests/fuzz/fuzz_model.c — libFuzzer entry point for `kvsim model import`
 * (sim/config/model_import.c; issue 40): the input bytes are a Hugging
 * Face config.json, imported by sim_model_import_hf as the command imports
 * it. The importer must return 0, or -1 with a message; a preset it
 * accepts must load back (sim_model_from_json) to the same shape, with an
 * attention shape that exists (kv_heads dividing heads) and a positive
 * parameter count and KV size. Anything else aborts, and so does any
 * sanitizer report or leak.
 *
 *   make fuzz && build/fuzz/fuzz_model -max_total_time=60 build/fuzz/corpus/model tests/fuzz/corpus/model */
#include "sim/config/model.h"
#include "tests/fuzz/fuzz.h"

static fuzz_verdict fuzz_model_file(const char *path, const void *ctx)
{
    sim_hf_import im;
    sim_err err = {{0}};
    if (sim_model_import_hf(path, "fuzz", &im, &err)) return fuzz_rejected(&err, "sim_model_import_hf");
    sim_model back;
    fuzz_verdict v = FUZZ_ACCEPTED;
    if (sim_model_from_json(im.preset, &back, &err)) v = fuzz_broken("the preset does not load back: %s", err.msg);
    else if (back.layers != im.model.layers || back.heads != im.model.heads || back.kv_heads != im.model.kv_heads ||
             back.params != im.model.params)
        v = fuzz_broken("the preset loads back to another shape");
    else if (back.kv_heads > back.heads || back.heads % back.kv_heads)
        v = fuzz_broken("kv_heads %d with heads %d accepted", back.kv_heads, back.heads);
    else if (!(back.params > 0) || !(sim_model_kv_bytes_per_token(&back) > 0))
        v = fuzz_broken("params %g, KV bytes per token %g", back.params, sim_model_kv_bytes_per_token(&back));
    json_decref(im.preset);
    return v;
}

static fuzz_verdict fuzz_model_check(const uint8_t *data, size_t size)
{
    return fuzz_on_file(data, size, fuzz_model_file, NULL);
}

FUZZ_ENTRY(fuzz_model_check)
