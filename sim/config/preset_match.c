/* sim/config/preset_match.c — the model preset a measurement means when it
 * names none exactly.
 *
 * Measurement files name models their own way ("llama2-70b", "Llama-3.1-8B",
 * "Mixtral-8x7B-Instruct-v0.1") beside a Hugging Face id. Both are read as a
 * key: the part after the last '/', without the trailing tokens that name a
 * fine-tune or a release of the same weights' shape ("Instruct", "Chat",
 * "hf", "it", "Base", a dotted version "v0.1", a release month "2507"; a
 * base model and its instruct tune share one config.json, while DeepSeek's
 * "V2" and "V3" are other models), without a leading "Meta", then without
 * case and the
 * separators '-', '_', '.' and ' '. A name that is no preset is read as the
 * one preset with the same key; failing that, as the one preset whose name,
 * or the Hugging Face id its `about` names ("… meta-llama/Llama-2-70b-hf
 * config.json", as the bundled presets write it), has the same key as
 * hf_id. Two matches are no match: the caller then refuses the name. */
#include <ctype.h>
#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/config/model.h"

/* Whether token [s, s+n) names a fine-tune or release, not a shape. */
static bool tune_token(const char *s, size_t n)
{
    static const char *const words[] = {"instruct", "chat", "hf", "it", "base"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strlen(words[i]) == n && !strncasecmp(s, words[i], n)) return true;
    bool digits = n == 4;
    for (size_t i = 0; i < n; i++) digits &= isdigit((unsigned char)s[i]) != 0;
    if (digits) return true; /* a release month: Qwen3-30B-A3B-Instruct-2507 */
    /* a release of one shape (Mistral's v0.1, v0.3), not a generation
     * (DeepSeek's V2 and V3 are other models): a dotted version only */
    if (n < 4 || tolower((unsigned char)s[0]) != 'v' || !isdigit((unsigned char)s[1]) || !memchr(s, '.', n))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!isdigit((unsigned char)s[i]) && s[i] != '.') return false;
    return true;
}

static bool sep(char c) { return c == '-' || c == '_' || c == ' '; }

/* The key of a model name or Hugging Face id (the comment at the top). */
static void model_key(const char *name, char *out, size_t n)
{
    const char *s = strrchr(name, '/') ? strrchr(name, '/') + 1 : name, *end = s + strlen(s);
    for (;;) { /* drop trailing fine-tune tokens, keeping at least one token */
        const char *t = end;
        while (t > s && !sep(t[-1])) t--;
        if (t == s || !tune_token(t, (size_t)(end - t))) break;
        end = t - 1;
    }
    if (!strncasecmp(s, "meta", 4) && s + 4 < end && sep(s[4])) s += 5;
    size_t k = 0;
    for (; s < end && k + 1 < n; s++)
        if (!sep(*s) && *s != '.') out[k++] = (char)tolower((unsigned char)*s);
    out[k] = 0;
}

/* The Hugging Face id an about names: the word before " config.json". */
static bool about_key(const char *about, char *out, size_t n)
{
    const char *at = about ? strstr(about, " config.json") : NULL;
    if (!at) return false;
    const char *s = at;
    while (s > about && s[-1] != ' ' && s[-1] != '(') s--;
    char id[256];
    snprintf(id, sizeof id, "%.*s", (int)(at - s), s);
    model_key(id, out, n);
    return out[0] != 0;
}

/* One preset's file: whether its name and its about's id match the keys. */
static void match_one(const char *dir, const char *file, const char *key, const char *hf_key, int *names, char *by_name,
                      int *ids, char *by_id)
{
    char preset[128], cand[128], path[PATH_MAX + 256];
    snprintf(preset, sizeof preset, "%.*s", (int)(strlen(file) - 5), file);
    model_key(preset, cand, sizeof cand);
    if (key[0] && !strcmp(cand, key)) ++*names, snprintf(by_name, 128, "%s", preset);
    if (!hf_key[0]) return;
    bool same = !strcmp(cand, hf_key); /* the id is the preset's name */
    snprintf(path, sizeof path, "%s/%s", dir, file);
    json_t *o = json_load_file(path, 0, NULL);
    same |= about_key(json_string_value(json_object_get(o, "about")), cand, sizeof cand) && !strcmp(cand, hf_key);
    json_decref(o);
    if (same) ++*ids, snprintf(by_id, 128, "%s", preset);
}

int sim_model_preset_match(const char *name, const char *hf_id, char *out, size_t n, bool *by_hf)
{
    char dir[PATH_MAX], key[128], hf_key[128] = "", by_name[128] = "", by_id[128] = "";
    int names = 0, ids = 0;
    snprintf(dir, sizeof dir, "%s/models", sim_config_dir());
    model_key(name, key, sizeof key);
    if (hf_id) model_key(hf_id, hf_key, sizeof hf_key);
    struct dirent **ents = NULL;
    int k = scandir(dir, &ents, NULL, alphasort);
    for (int i = 0; i < k; i++) {
        size_t len = strlen(ents[i]->d_name);
        if (len > 5 && len < 128 && !strcmp(ents[i]->d_name + len - 5, ".json"))
            match_one(dir, ents[i]->d_name, key, hf_key, &names, by_name, &ids, by_id);
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
