/* sim/cli/check_cmd.c — `kvsim check`'s measurements of other commands
 * (sim/cli/check_cmd.h): the kind "plan_slo", whose measure runs a whole
 * `kvsim plan slo` search (sim/slo, above the check engine's layer, so the
 * kind is added from here), and a baseline measurement made from a
 * `kvsim run` or `kvsim plan slo` command line, for --write-baseline. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/cli/check_cmd.h"

/* ---- kind plan_slo ---------------------------------------------------------
 *
 * args {"trace": path, "config": path (optional), "options": [plan slo's
 * options, one string each]}. The numbers: feasible (1 or 0) and the
 * cheapest point's gpus, prefill, decode, dram_bytes, slo_attainment and
 * TTFT/TBT mean and percentiles (null when infeasible). */

static void put_num(json_t *o, const char *key, const sim_slo_point *p, double v)
{
    json_object_set_new(o, key, p && !isnan(v) ? json_real(v) : json_null());
}

static json_t *plan_metrics(const sim_slo_result *r)
{
    const sim_slo_point *p = r->cheapest >= 0 ? &r->pts[r->cheapest] : NULL;
    json_t *m = json_pack("{s:i}", "feasible", r->status == SIM_SLO_FEASIBLE);
    put_num(m, "gpus", p, p ? sim_slo_gpus(r, p) : 0);
    put_num(m, "prefill", p, p ? p->prefill : 0);
    put_num(m, "decode", p, p ? p->decode : 0);
    put_num(m, "dram_bytes", p, p ? r->dram[p->dram_level] : 0);
    put_num(m, "slo_attainment", p, p ? p->attainment : 0);
    for (int t = 0; t < SIM_SLO_NTARGETS; t++) {
        char key[32];
        snprintf(key, sizeof key, "%s.%s", sim_slo_metric_key(t), sim_slo_stat_key(t));
        put_num(m, key, p, p ? p->value[t] : 0);
    }
    return m;
}

/* argv for plan slo's parser: a name, then options (strings of args). */
static int plan_argv(const json_t *args, char ***argv, int *argc, sim_err *err)
{
    const char *key;
    const json_t *v, *opts = json_object_get(args, "options");
    json_object_foreach((json_t *)args, key, v)
    {
        if (strcmp(key, "trace") && strcmp(key, "config") && strcmp(key, "options"))
            return sim_errf(err, "%s: not a plan_slo argument (trace, config, options)", key);
    }
    if (!json_is_string(json_object_get(args, "trace"))) return sim_errf(err, "trace: expected a path");
    if (!json_is_array(opts)) return sim_errf(err, "options: expected a list of plan slo's options (strings)");
    *argv = sim_xcalloc(json_array_size(opts) + 2, sizeof **argv);
    (*argv)[0] = "plan-slo";
    *argc = 1;
    size_t i;
    json_array_foreach(opts, i, v)
    {
        if (!json_is_string(v)) return sim_errf(err, "options[%zu]: expected a string", i);
        (*argv)[(*argc)++] = (char *)json_string_value(v);
    }
    return 0;
}

static int measure_plan(sim_check_ctx *ctx, const json_t *args, json_t **got, sim_err *err)
{
    char **argv = NULL;
    int argc = 0, rc = plan_argv(args, &argv, &argc, err);
    sim_slo_opts o = {0};
    sim_slo_result r = {.cheapest = -1};
    if (rc == 0) rc = sim_cli_plan_slo_opts(argc, argv, &o, err);
    if (rc == 0 && (o.trace || o.config || o.db))
        rc = sim_errf(err, "options: --trace, --config and --db are not options of a measurement (trace and config "
                           "are its own arguments)");
    if (rc == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        o.trace = json_string_value(json_object_get(args, "trace"));
        o.config = json_string_value(json_object_get(args, "config"));
        o.jobs = cpus > 0 ? (int)cpus : 1;
        o.tty = false;
        rc = sim_slo_plan(&o, &r, err);
    }
    if (rc == 0) *got = plan_metrics(&r);
    sim_slo_free(&r);
    free(o.sets);
    free(argv);
    return rc;
}

static const sim_check_kind plan_kind = {
    "plan_slo", "kvsim plan slo's answer: feasible, the cheapest point's GPUs, P, D, DRAM, attainment, TTFT/TBT",
    measure_plan};

void sim_cli_check_add_plan_kind(void) { sim_check_add_kind(&plan_kind); }

/* ---- a measurement from a command line ------------------------------------- */

/* The value of option `name` at argv[*i] ("--name V" or "--name=V"), or NULL. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, sim_err *err, int *bad)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n)) return NULL;
    if (argv[*i][n] == '=') return argv[*i] + n + 1;
    if (argv[*i][n]) return NULL;
    if (*i + 1 < argc) return argv[++*i];
    *bad = sim_errf(err, "option '%s' needs a value", name);
    return NULL;
}

/* "key=VALUE" into set: VALUE as JSON when it is JSON, else as a string. */
static int add_set(json_t *set, const char *kv, sim_err *err)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) return sim_errf(err, "--set %s: expected key=value", kv);
    json_t *v = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
    char *key = sim_xstrdup(kv);
    key[eq - kv] = 0;
    json_object_set_new(set, key, v ? v : json_string(eq + 1));
    free(key);
    return 0;
}

/* --trace or --config at argv[*i], a measurement's own args: true when it was one. */
static bool own_arg(int argc, char **argv, int *i, json_t *args, sim_err *err, int *bad)
{
    static const char *const keys[] = {"trace", "config"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        char opt[16];
        snprintf(opt, sizeof opt, "--%s", keys[k]);
        const char *v = opt_value(argc, argv, i, opt, err, bad);
        if (v) return json_object_set_new(args, keys[k], json_string(v)), true;
    }
    return false;
}

/* `run` options into a run measurement's args. */
static int run_args(int argc, char **argv, json_t *args, sim_err *err)
{
    json_t *set = json_object();
    json_object_set_new(args, "set", set);
    int bad = 0;
    for (int i = 0; i < argc && !bad; i++) {
        const char *v;
        if (own_arg(argc, argv, &i, args, err, &bad)) continue;
        if ((v = opt_value(argc, argv, &i, "--set", err, &bad))) bad = add_set(set, v, err);
        else if ((v = opt_value(argc, argv, &i, "--speed", err, &bad))) {
            double x;
            if (!(bad = sim_parse_double(v, "--speed", &x, err))) json_object_set_new(set, "trace.speed", json_real(x));
        } else if (!bad)
            bad = sim_errf(err, "run %s: not an option a run measurement records (--trace, --config, --set, --speed)",
                           argv[i]);
    }
    if (!bad && !json_object_get(args, "trace")) bad = sim_errf(err, "run: a measurement needs --trace FILE");
    return bad ? -1 : 0;
}

/* `plan slo` options into a plan_slo measurement's args: --trace and
 * --config its own, the rest kept as given (checked by plan slo's parser);
 * --jobs dropped (the answer does not depend on it), --db refused. */
static int plan_args(int argc, char **argv, json_t *args, sim_err *err)
{
    json_t *opts = json_array();
    json_object_set_new(args, "options", opts);
    int bad = 0;
    for (int i = 0; i < argc && !bad; i++) {
        if (own_arg(argc, argv, &i, args, err, &bad) || opt_value(argc, argv, &i, "--jobs", err, &bad)) continue;
        else if (!bad && (!strncmp(argv[i], "--db", 4) || !strcmp(argv[i], "--json")))
            bad = sim_errf(err, "plan slo %s: not an option of a measurement (it records the answer)", argv[i]);
        else if (!bad) json_array_append_new(opts, json_string(argv[i]));
    }
    if (bad) return -1;
    if (!json_object_get(args, "trace")) return sim_errf(err, "plan slo: a measurement needs --trace FILE");
    char **pv = NULL;
    int pc = 0;
    sim_slo_opts o = {0};
    int rc = plan_argv(args, &pv, &pc, err) || sim_cli_plan_slo_opts(pc, pv, &o, err) ? -1 : 0;
    free(o.sets);
    free(pv);
    return rc;
}

/* The direction in which each metric of a kind gets worse. */
static const char *const worse_run[][2] = {{"slo_attainment", "lower"},
                                           {"goodput_rps", "lower"},
                                           {"rejected", "higher"},
                                           {"hit_rate_blocks", "lower"},
                                           {"hit_rate_tokens", "lower"}};
static const char *const worse_plan[][2] = {{"feasible", "lower"},    {"gpus", "higher"},
                                            {"prefill", "higher"},    {"decode", "higher"},
                                            {"dram_bytes", "higher"}, {"slo_attainment", "lower"}};

static json_t *worse_object(bool plan)
{
    json_t *w = json_object();
    size_t n = plan ? sizeof worse_plan / sizeof worse_plan[0] : sizeof worse_run / sizeof worse_run[0];
    for (size_t i = 0; i < n; i++)
        json_object_set_new(w, plan ? worse_plan[i][0] : worse_run[i][0],
                            json_string(plan ? worse_plan[i][1] : worse_run[i][1]));
    for (int t = 0; t < SIM_SLO_NTARGETS; t++) { /* latencies: higher is worse */
        char key[32];
        snprintf(key, sizeof key, "%s.%s", sim_slo_metric_key(t), sim_slo_stat_key(t));
        json_object_set_new(w, key, json_string("higher"));
    }
    return w;
}

int sim_cli_check_measurement(int argc, char **argv, const char *name, bool one_sided, json_t **out, sim_err *err)
{
    bool run = argc > 0 && !strcmp(argv[0], "run"),
         plan = argc > 1 && !strcmp(argv[0], "plan") && !strcmp(argv[1], "slo");
    if (!run && !plan)
        return sim_errf(err, "'%s': a measurement records `run ...` or `plan slo ...` (after --)", argc ? argv[0] : "");
    char line[128] = "";
    for (int i = 0; i < argc && strlen(line) < 100; i++)
        snprintf(line + strlen(line), sizeof line - strlen(line), "%s%s", i ? " " : "", argv[i]);
    json_t *args = json_object();
    int rc = run ? run_args(argc - 1, argv + 1, args, err) : plan_args(argc - 2, argv + 2, args, err);
    if (rc) return json_decref(args), -1;
    *out = json_pack("{s:s, s:s, s:o}", "name", name ? name : line, "kind", run ? "run" : "plan_slo", "args", args);
    if (one_sided) json_object_set_new(*out, "worse", worse_object(plan));
    return 0;
}
