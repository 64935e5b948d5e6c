/* sim/cli/cli.c — helpers shared by the subcommands. Kept out of main.c so that
 * test binaries, which link every object except main.o, can link cmd_*.o. */
#include "sim/cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "sim/outfile.h"
#include "sim/util.h"

char *sim_cli_json_string(const char *value)
{
    json_t *s = json_string(value);
    char *enc = json_dumps(s, JSON_ENCODE_ANY);
    json_decref(s);
    return enc;
}

char *sim_cli_string_set(const char *key, const char *value)
{
    char *enc = sim_cli_json_string(value);
    size_t n = strlen(key) + strlen(enc) + 2;
    char *set = sim_xmalloc(n);
    snprintf(set, n, "%s=%s", key, enc);
    free(enc);
    return set;
}

int sim_usage_error(const char *cmd, const char *msg)
{
    fprintf(stderr, "kvsim %s: %s\n", cmd, msg);
    return SIM_EXIT_USAGE;
}

/* A stray argument that names an existing file is most likely the file an
 * option takes (`kvsim run trace.jsonl`, `kvsim report results.db`), so the
 * option is suggested; otherwise the help is. */
const char *sim_cli_unexpected(char *buf, size_t n, const char *cmd, const char *arg, const char *flag)
{
    if (flag && access(arg, F_OK) == 0)
        snprintf(buf, n, "unexpected argument '%s' (did you mean %s %s? see kvsim %s --help)", arg, flag, arg, cmd);
    else snprintf(buf, n, "unexpected argument '%s' (see kvsim %s --help)", arg, cmd);
    return buf;
}

int sim_cli_unexpected_error(const char *cmd, const char *arg, const char *flag)
{
    char msg[1024];
    return sim_usage_error(cmd, sim_cli_unexpected(msg, sizeof msg, cmd, arg, flag));
}

int sim_cli_bad_option(const char *cmd, const char *opt)
{
    char msg[512];
    snprintf(msg, sizeof msg, "unknown option or missing value '%s' (see kvsim %s --help)", opt, cmd);
    return sim_usage_error(cmd, msg);
}

/* The index in opts of the long option argv[i] names in full (--name or
 * --name=value), or -1; *value gets its value when it has one. */
static int long_opt(const struct option *opts, char **argv, int argc, int i, const char **value)
{
    const char *a = argv[i];
    if (strncmp(a, "--", 2)) return -1;
    size_t n = strcspn(a + 2, "=");
    for (int k = 0; opts[k].name; k++) {
        if (strlen(opts[k].name) != n || strncmp(opts[k].name, a + 2, n)) continue;
        if (opts[k].has_arg == no_argument) *value = "";
        else *value = a[2 + n] == '=' ? a + 3 + n : i + 1 < argc ? argv[i + 1] : "";
        return k;
    }
    return -1;
}

static bool listed(const char *name, const char *const *names)
{
    for (int i = 0; names && names[i]; i++)
        if (!strcmp(name, names[i])) return true;
    return false;
}

int sim_cli_once(const char *cmd, int argc, char **argv, const struct option *opts, const char *const *repeatable)
{
    int nopts = 0;
    while (opts[nopts].name) nopts++;
    const char **first = sim_xcalloc((size_t)nopts + 1, sizeof *first);
    int rc = 0;
    for (int i = 1; rc == 0 && i < argc && strcmp(argv[i], "--"); i++) {
        const char *v = NULL;
        int k = long_opt(opts, argv, argc, i, &v);
        if (k < 0 || opts[k].has_arg == no_argument || listed(opts[k].name, repeatable)) continue;
        if (first[k]) {
            char msg[1024];
            snprintf(msg, sizeof msg, "--%s given twice ('%.300s', then '%.300s'): give it once", opts[k].name,
                     first[k], v);
            rc = sim_usage_error(cmd, msg);
        }
        first[k] = v;
        if (!strchr(argv[i], '=')) i++; /* its value is the next word */
    }
    free(first);
    return rc;
}

const char *sim_cli_num(const json_t *v, const char *fmt, int width, char *buf, size_t n)
{
    if (json_is_number(v)) snprintf(buf, n, fmt, width, json_number_value(v));
    else snprintf(buf, n, "%*s—", width > 1 ? width - 1 : 0, ""); /* "—": one column, three bytes */
    return buf;
}

/* The caveats that say a price rests on no measurement of this GPU. */
static bool sim_cli_not_measured(const char *name)
{
    return name && (!strcmp(name, "not_measured") || !strcmp(name, "roofline") || !strcmp(name, "transferred"));
}

void sim_cli_warn_caveats(const char *cmd, const json_t *caveats, json_t *said)
{
    const json_t *c, *t;
    size_t i, j;
    json_array_foreach(caveats, i, c)
    {
        const char *text = json_string_value(json_object_get(c, "text"));
        bool old = false;
        json_array_foreach(said, j, t) old |= !strcmp(json_string_value(t), text);
        if (old) continue;
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *what = json_is_true(json_object_get(c, "found"))  ? ""
                           : sim_cli_not_measured(name)               ? "not measured: "
                           : name && !strcmp(name, "measured_glitch") ? "measured glitch: "
                           : name && !strcmp(name, "kv_overflow")     ? "does not fit: "
                           : name && (!strcmp(name, "batch_cap") || !strcmp(name, "context_window"))
                               ? "no run forms this: "
                               : "not validated: ";
        fprintf(stderr, "kvsim %s: warning: %s%s\n", cmd, what, text);
        if (said) json_array_append_new(said, json_string(text));
    }
}

int sim_cli_out_open(sim_outfile *o, const char *cmd, const char *path)
{
    sim_err err;
    return sim_outfile_open(o, path, &err) ? sim_usage_error(cmd, err.msg) : SIM_EXIT_OK;
}

int sim_cli_out_close(sim_outfile *o, const char *cmd, int rc, const sim_err *err)
{
    if (rc) {
        sim_outfile_abort(o);
        return sim_usage_error(cmd, err->msg);
    }
    sim_err e;
    return sim_outfile_close(o, &e) ? sim_usage_error(cmd, e.msg) : SIM_EXIT_OK;
}
