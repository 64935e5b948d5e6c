/* sim/config/preset_match.c — the model preset a measurement means when it
 * names none exactly.
 *
 * Measurement files name models their own way ("llama2-70b", "Llama-3.1-8B")
 * beside a Hugging Face id. A name that is no preset is read as the one
 * preset whose name is the same once case and the separators '-', '_', '.'
 * and ' ' are dropped; failing that, as the one preset whose `about` names
 * the Hugging Face id ("Hugging Face meta-llama/Llama-2-70b-hf config.json",
 * as `kvsim model import` and the bundled presets write it). Two matches are
 * no match: the caller then refuses the name, as before. */
#include <ctype.h>
#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/config/model.h"

static void squash(const char *s, char *out, size_t n)
{
    size_t k = 0;
    for (; *s && k + 1 < n; s++)
        if (!strchr("-_. ", *s)) out[k++] = (char)tolower((unsigned char)*s);
    out[k] = 0;
}

/* Whether about names hf_id as "Hugging Face <hf_id> ", case aside. */
static bool names_hf(const char *about, const char *hf_id)
{
    char want[256];
    snprintf(want, sizeof want, "Hugging Face %s ", hf_id);
    return about && hf_id[0] && strcasestr(about, want);
}

int sim_model_preset_match(const char *name, const char *hf_id, char *out, size_t n, bool *by_hf)
{
    char dir[PATH_MAX], key[128], cand[128], by_name[128] = "", by_id[128] = "";
    int names = 0, ids = 0;
    snprintf(dir, sizeof dir, "%s/models", sim_config_dir());
    squash(name, key, sizeof key);
    struct dirent **ents = NULL;
    int k = scandir(dir, &ents, NULL, alphasort);
    for (int i = 0; i < k; i++) {
        size_t len = strlen(ents[i]->d_name);
        if (len > 5 && !strcmp(ents[i]->d_name + len - 5, ".json") && len - 5 < sizeof cand) {
            char preset[128], path[PATH_MAX + 256];
            snprintf(preset, sizeof preset, "%.*s", (int)(len - 5), ents[i]->d_name);
            squash(preset, cand, sizeof cand);
            if (key[0] && !strcmp(cand, key)) names++, snprintf(by_name, sizeof by_name, "%s", preset);
            snprintf(path, sizeof path, "%s/%s", dir, ents[i]->d_name);
            json_t *o = hf_id ? json_load_file(path, 0, NULL) : NULL;
            if (names_hf(json_string_value(json_object_get(o, "about")), hf_id ? hf_id : ""))
                ids++, snprintf(by_id, sizeof by_id, "%s", preset);
            json_decref(o);
        }
        free(ents[i]);
    }
    free(ents);
    if (names == 1 || (names == 0 && ids == 1)) {
        snprintf(out, n, "%s", names == 1 ? by_name : by_id);
        *by_hf = names != 1;
        return 0;
    }
    return -1;
}
