/* sim/cli/cmd_plan_slo.c — `kvsim plan slo`: the smallest disaggregated
 * cluster (prefill/decode counts, DRAM per node, scope, CPP), or aggregated
 * LMCache cluster (instances, CPU DRAM, disk, remote store, load), whose
 * timed runs meet TTFT/TBT targets, or the floor that makes them infeasible.
 * This file parses the options and prints; the search is sim/slo. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/cli/check_cmd.h"
#include "sim/cli/cli.h"
#include "sim/cli/slurm_opt.h"
#include "sim/config/scope.h"
#include "sim/serving/serving.h"
#include "sim/slo/plan_slo.h"
#include "sim/trace/trace.h"

static const char slo_usage[] =
    "usage: kvsim plan slo [--trace FILE] [--config FILE] [--set key=value]... [--speed X]\n"
    "                      [--ttft-p90-ms MS] [--ttft-p99-ms MS] [--tbt-p99-ms MS] [--attainment F]\n"
    "                      [--allow-rejected] ...\n"
    "                      [--max-instances N] [--dram LIST] [--scopes LIST] [--cpp LIST] [--tp LIST]\n"
    "                      [--ssd LIST] [--remote LIST] [--loads LIST] [--dram-step SIZE]\n"
    "                      [--confirm-seeds N] [--confirm-resample W] [--headroom F]\n"
    "                      [--hardware KIND,...] [--modes M,...] [--jobs N] [--db FILE] [--json]\n"
    "                      [--slurm [--partition P] [--sbatch-args 'A B']]\n"
    "\n"
    "The smallest disaggregated cluster of the config's hardware and model whose timed\n"
    "replay of the trace meets every target: prefill and decode instance counts, DRAM\n"
    "per node, cache scope and chunked pipeline parallelism (CPP). Every point is a\n"
    "real `kvsim run`, run in parallel worker processes as `kvsim sweep` runs them, and\n"
    "judged by its summary. Prints the points run, the frontier (fewest GPUs for each\n"
    "DRAM level), the cheapest point and the `kvsim run` line that reproduces it; or\n"
    "'infeasible:' and what blocks the targets. When hardware.price_per_hour prices\n"
    "both sides (an input: docs/hardware.md), cheapest means the lowest price an hour\n"
    "instead of the fewest GPUs, and the search probes splits in order of price.\n"
    "\n"
    "Targets (ms; each > 0): --ttft-mean-ms --ttft-p50-ms --ttft-p90-ms --ttft-p99-ms\n"
    "--tbt-mean-ms --tbt-p50-ms --tbt-p90-ms --tbt-p99-ms. Whatever they are, a point\n"
    "also meets the SLOs: SLO attainment (against slo.ttft_ms and slo.tbt_ms, set\n"
    "them with --set, or the trace's own per-request SLOs) >= --attainment, and its\n"
    "run not overloaded by kvsim run's diagnosis; and no request is rejected or lost.\n"
    "  --attainment F     the least SLO attainment, F in [0, 1] (default 0.9); 0\n"
    "                     ignores the SLOs and the overload diagnosis (then give a\n"
    "                     target)\n"
    "  --allow-rejected   requests may be rejected or lost (default: none may)\n"
    "\n"
    "The search:\n"
    "  0. floor, no run: each request alone on one idle instance with the prefix an\n"
    "     unbounded cache gives it (cost model). A target below the floor is\n"
    "     infeasible at once: the answer names the floor and what would lower it.\n"
    "  1. on the line P + D = --max-instances, bisect the fewest prefill instances\n"
    "     meeting the TTFT targets and the fewest decode instances meeting the TBT\n"
    "     targets (TTFT falls with P, TBT with D; about 2 log2(max) probes);\n"
    "  2. tighten each bound along its own axis (P with D_lo decode instances, then\n"
    "     D with P_lo; galloping up, then bisecting: one probe when it holds), then\n"
    "     from N = P_lo + D_lo up the splits of N inside the bounds until one passes;\n"
    "  3. the same for each smaller DRAM level, from the previous level's bounds.\n"
    "  Each probe of a split runs every --scopes x --cpp point at once (a CPP group\n"
    "  that never forms, no prompt being longer than cluster.cpp_threshold, is run\n"
    "  once). A split passes when one of them does; the two smaller neighbours of\n"
    "  each level's answer are run and must fail.\n"
    "  Cost, 2 cores, --jobs 2: bundled trace at --speed 2, TTFT p90 <= 500 ms and TBT\n"
    "  p99 <= 16 ms: 22 probes, 44 runs, 1.2-2.8 s; the Mooncake synthetic trace on\n"
    "  configs/clusters/mooncake-8p8d.json at --speed 2, TTFT p90 <= 4 s and TBT p99\n"
    "  <= 100 ms: 31 probes, 124 runs, 7.6-16 s (the larger times beside another\n"
    "  build). A floor answer runs nothing; the same search on the same --db runs\n"
    "  nothing (0.15 s).\n"
    "\n"
    "  --trace FILE        trace to replay (default: the config's trace.path)\n"
    "  --config FILE       config merged over configs/default.json: hardware, model, policies\n"
    "  --set KEY=VALUE     fixed override of every point (not the searched keys)\n"
    "  --speed X           replay speed factor (trace.speed), e.g. 2 for twice today's load\n"
    "  --max-instances N   P + D at most (default 32)\n"
    "  --dram LIST         DRAM per node to try, e.g. 1TB,256GB (default: the hardware\n"
    "                      preset's x 1, 1/2, 1/4, 1/8)\n"
    "  --scopes LIST       cluster.scope values to try (default global,local)\n"
    "  --cpp LIST          cluster.cpp_group values to try (default 1,4; 1 = off)\n"
    "  --tp LIST           GPUs per instance to try, e.g. 1,2,4,8 (cluster.gpus_per_instance: a\n"
    "                      divisor of the node's GPUs = tensor parallel, a multiple = pipeline\n"
    "                      parallel): one whole search each; the answer is the feasible plan\n"
    "                      with the fewest GPUs (the lowest price when priced), ties to fewer\n"
    "                      GPUs per instance (docs/hardware.md)\n"
    "  --hardware LIST     one whole search per GPU kind, e.g. h100,h200,b200: a kind K with\n"
    "                      --tp T is the preset KxT (a node of T GPUs, tensor parallel; T 1 without\n"
    "                      --tp), a preset name is that preset. Prints each kind's answer with its\n"
    "                      price an hour and per million output tokens (hardware.price_per_hour,\n"
    "                      dram_price_per_GB_hour, ssd_price_per_GB_hour of the presets: inputs, cited\n"
    "                      in each preset's about), the cheapest and the runner-up kind, then the\n"
    "                      cheapest kind's plan; when a kind has no price, every kind is compared\n"
    "                      by its GPUs instead, and said. Add --set cost.compute=measured to price\n"
    "                      every kind from its measured per-operation tables (docs/measured.md)\n"
    "  --modes LIST        disaggregated,aggregated: every search above in each cluster mode\n"
    "                      (cluster.mode; aggregated: instances that prefill and decode), the\n"
    "                      cheapest over both\n"
    "\n"
    "Confirmation: the search's cheapest point is one run on one seed. Before a point is\n"
    "recommended it is re-run on --confirm-seeds seeds (the config's seed and the next ones)\n"
    "on the trace as recorded and with trace.resample=--confirm-resample (sessions: the\n"
    "trace's sessions bootstrapped into its start times), and each run must meet every\n"
    "target shrunk by --headroom and the SLOs. A point passing every run only without the\n"
    "headroom is a knife edge and is not recommended; a point failing adds one instance\n"
    "on each side a run failed (TTFT: prefill, TBT: decode), until one passes all.\n"
    "  --confirm-seeds N   seeds per workload, 0-16 (default 4; 0: no confirmation, the\n"
    "                      cheapest point is the answer)\n"
    "  --confirm-resample W  sessions (default), poisson or none (a segment trace cannot\n"
    "                      be resampled: give none)\n"
    "  --headroom F        share of each target a confirmation must stay under it by, in\n"
    "                      [0, 0.5) (default 0.05: the conversation trace's TBT p99 moved by\n"
    "                      2.6%% of its target between seeds 1-4, docs/planning-confirm.md)\n"
    "  Exit status 0 needs a recommended point; 3 when none passes every confirmation.\n"
    "\n"
    "  --jobs N            worker processes (default: the number of CPUs)\n"
    "  --db FILE           results database; points it records are not run again (default:\n"
    "                      a temporary one, removed at the end; under --slurm it must lie\n"
    "                      on the file system the nodes share: give one)\n"
    "%s"
    "                     Each probe's points are one job array, awaited before the\n"
    "                     search goes on: the same runs, so the same answer, bit for bit\n"
    "  --json              one JSON object: setup, targets, status, reason, floor, points,\n"
    "                      frontier, cheapest (with command), search\n"
    "  -h, --help          this text\n"
    "\n"
    "Exit status: 0 a cluster meets the targets, 3 none does (infeasible: a floor, or\n"
    "more than --max-instances), 2 bad arguments, config or trace, 128+N stopped by signal N.\n"
    "\n"
    "Aggregated clusters (cluster.mode = aggregated, e.g. --config\n"
    "configs/clusters/lmcache-cpu-offload.json): the same search over the number of\n"
    "instances (cluster.instances) and CPU DRAM per instance, or per node with\n"
    "kvstore.cpu_scope = node (--dram; default the config's kvstore.dram_bytes x 1,\n"
    "1/2, 1/4, 1/8): the fewest instances at the most DRAM (galloping, then\n"
    "bisecting), then for each smaller level from there: the frontier. Then the\n"
    "cliff: with the fewest instances, the smallest listed level that passes and the\n"
    "one below it that fails (DRAM 0 when every level passes), bisected to\n"
    "--dram-step: the least DRAM that meets the targets and the most that does not.\n"
    "The cheapest point is the cliff's passing one. Each probe runs every --ssd x\n"
    "--remote x --loads point (not searched when not given: the config's values);\n"
    "--scopes and --cpp are for disaggregated clusters only.\n"
    "  --ssd LIST          kvstore.ssd_bytes (disk per instance) to try, e.g. 0,1TB\n"
    "  --remote LIST       kvstore.remote.bytes (the cluster's remote store) to try\n"
    "  --loads LIST        kvstore.load values to try: always, never, adaptive\n"
    "  --dram-step SIZE    the cliff's resolution (default 1GB)\n"
    "  Cost, 2 cores, --jobs 2: configs/clusters/lmcache-cpu-offload.json at --speed 2\n"
    "  on a 1,000-request multi-round QA trace of 20k-token documents, TTFT p90 <= 2 s:\n"
    "  14 probes, 14 runs, about 4 s.\n";

enum {
    OPT_TARGET = 1000,
    OPT_ATTAIN = 2000,
    OPT_REJECT,
    OPT_MAX,
    OPT_DRAM,
    OPT_SCOPES,
    OPT_CPP,
    OPT_JOBS,
    OPT_DB,
    OPT_SPEED,
    OPT_TP,
    OPT_SSD,
    OPT_REMOTE,
    OPT_LOADS,
    OPT_STEP,
    OPT_HARDWARE,
    OPT_CONFIRM,
    OPT_HEADROOM,
    OPT_RESAMPLE,
    OPT_MODES
};

typedef struct slo_args {
    sim_slo_opts o;
    bool json, help;
    bool usage;               /* print the usage after the error */
    int tp[SIM_SLO_MAX_LIST]; /* --tp: GPUs per instance to search (cluster.gpus_per_instance) */
    int ntp;
    const char *hardware; /* --hardware: kinds or presets, comma-separated */
    const char *modes;    /* --modes: cluster modes, comma-separated */
    json_t *said;         /* the caveats' texts warned of so far (warn_caveats) */
} slo_args;

static int count(const char *opt, const char *s, int lo, int hi, int *out, sim_err *err)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) return sim_errf(err, "%s: '%s' is not an integer in [%d, %d]", opt, s, lo, hi);
    *out = (int)v;
    return 0;
}

/* ---- lists: --dram, --scopes, --cpp ---------------------------------------- */

static int dram_item(const char *v, sim_slo_opts *o, sim_err *err)
{
    return sim_parse_size(v, "--dram", &o->dram[o->ndram++], err);
}

static int scope_item(const char *v, sim_slo_opts *o, sim_err *err)
{
    kv_scope s;
    if (kv_scope_from_name(v, &s)) return sim_errf(err, "--scopes: '%s' is not global or local", v);
    for (int i = 0; i < o->nscope; i++)
        if (o->scope[i] == (int)s) return sim_errf(err, "--scopes: '%s' given twice", v);
    o->scope[o->nscope++] = (int)s;
    return 0;
}

static int cpp_item(const char *v, sim_slo_opts *o, sim_err *err)
{
    int g;
    if (count("--cpp", v, 1, 64, &g, err)) return -1;
    for (int i = 0; i < o->ncpp; i++)
        if (o->cpp[i] == g) return sim_errf(err, "--cpp: %d given twice", g);
    o->cpp[o->ncpp++] = g;
    return 0;
}

/* --tp: a list of GPU counts per instance, each once (the config check
 * says which fit the hardware's nodes). */
static int tp_list(const char *s, slo_args *a, sim_err *err)
{
    char *copy = sim_xstrdup(s), *rest = copy;
    int rc = 0;
    a->ntp = 0;
    for (char *v; rc == 0 && (v = strsep(&rest, ",")) != NULL;) {
        int g;
        rc = a->ntp == SIM_SLO_MAX_LIST ? sim_errf(err, "--tp: more than %d values", SIM_SLO_MAX_LIST)
                                        : count("--tp", v, 1, 4096, &g, err);
        for (int i = 0; rc == 0 && i < a->ntp; i++)
            if (a->tp[i] == g) rc = sim_errf(err, "--tp: %d given twice", g);
        if (rc == 0) a->tp[a->ntp++] = g;
    }
    free(copy);
    return rc;
}

static int ssd_item(const char *v, sim_slo_opts *o, sim_err *err)
{
    return sim_parse_size(v, "--ssd", &o->ssd[o->nssd++], err);
}

static int remote_item(const char *v, sim_slo_opts *o, sim_err *err)
{
    return sim_parse_size(v, "--remote", &o->remote[o->nremote++], err);
}

static int load_item(const char *v, sim_slo_opts *o, sim_err *err)
{
    for (int k = 0; k < SIM_LOAD_N; k++)
        if (!strcmp(v, sim_load_names[k])) {
            for (int i = 0; i < o->nload; i++)
                if (o->load[i] == k) return sim_errf(err, "--loads: '%s' given twice", v);
            return o->load[o->nload++] = k, 0;
        }
    return sim_errf(err, "--loads: '%s' is not always, never, adaptive or balanced", v);
}

/* A comma-separated list, each value through item; at most max values. */
static int parse_list(const char *opt, const char *s, int *n, int max, sim_slo_opts *o,
                      int (*item)(const char *, sim_slo_opts *, sim_err *), sim_err *err)
{
    char *copy = sim_xstrdup(s), *rest = copy;
    int rc = 0;
    *n = 0;
    for (char *v; rc == 0 && (v = strsep(&rest, ",")) != NULL;)
        rc = *n == max ? sim_errf(err, "%s: more than %d values", opt, max)
             : !*v     ? sim_errf(err, "%s: empty value in '%s'", opt, s)
                       : item(v, o, err);
    free(copy);
    return rc;
}

static int cmp_asc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A list of sizes, least first (a probe's first passing point is then the least). */
static int parse_ascending(const char *opt, const char *s, double *v, int *n, sim_slo_opts *o,
                           int (*item)(const char *, sim_slo_opts *, sim_err *), sim_err *err)
{
    if (parse_list(opt, s, n, SIM_SLO_MAX_LIST, o, item, err)) return -1;
    qsort(v, (size_t)*n, sizeof *v, cmp_asc);
    return 0;
}

/* ---- arguments ------------------------------------------------------------- */

static int parse_one(int c, const char *arg, slo_args *a, sim_err *err)
{
    sim_slo_opts *o = &a->o;
    if (c >= OPT_TARGET && c < OPT_TARGET + SIM_SLO_NTARGETS) {
        char opt[32];
        snprintf(opt, sizeof opt, "--%s", sim_slo_option(c - OPT_TARGET));
        return sim_parse_positive(arg, opt, &o->target[c - OPT_TARGET], err);
    }
    switch (c) {
    case 't': o->trace = arg; return 0;
    case 'c': o->config = arg; return 0;
    case 's': o->sets[o->nsets++] = (char *)arg; return 0;
    case OPT_SPEED: o->speed = arg; return sim_parse_positive(arg, "--speed", &(double){0}, err);
    case OPT_ATTAIN:
        if (sim_parse_double(arg, "--attainment", &o->attainment, err)) return -1;
        return o->attainment >= 0 && o->attainment <= 1 ? 0 : sim_errf(err, "--attainment: %s is not in [0, 1]", arg);
    case OPT_REJECT: o->allow_rejected = true; return 0;
    case OPT_MAX: return count("--max-instances", arg, 2, 4096, &o->max_instances, err);
    case OPT_DRAM: return parse_list("--dram", arg, &o->ndram, SIM_SLO_MAX_LIST, o, dram_item, err);
    case OPT_SCOPES: o->disagg_opt = "--scopes"; return parse_list("--scopes", arg, &o->nscope, 2, o, scope_item, err);
    case OPT_CPP:
        o->disagg_opt = "--cpp";
        return parse_list("--cpp", arg, &o->ncpp, SIM_SLO_MAX_LIST, o, cpp_item, err);
    case OPT_SSD: return parse_ascending("--ssd", arg, o->ssd, &o->nssd, o, ssd_item, err);
    case OPT_REMOTE: return parse_ascending("--remote", arg, o->remote, &o->nremote, o, remote_item, err);
    case OPT_LOADS: return parse_list("--loads", arg, &o->nload, 3, o, load_item, err);
    case OPT_STEP:
        if (sim_parse_size(arg, "--dram-step", &o->dram_step, err)) return -1;
        return o->dram_step > 0 && !isinf(o->dram_step) ? 0 : sim_errf(err, "--dram-step: %s is not a size > 0", arg);
    case OPT_JOBS: return count("--jobs", arg, 1, 1024, &o->jobs, err);
    case OPT_DB: o->db = arg; return 0;
    case OPT_TP: return tp_list(arg, a, err);
    case OPT_HARDWARE: a->hardware = arg; return 0;
    case OPT_MODES: a->modes = arg; return 0;
    case OPT_CONFIRM: return count("--confirm-seeds", arg, 0, SIM_SLO_MAX_SEEDS, &o->confirm_seeds, err);
    case OPT_HEADROOM:
        if (sim_parse_double(arg, "--headroom", &o->headroom, err)) return -1;
        return o->headroom >= 0 && o->headroom < 0.5 ? 0 : sim_errf(err, "--headroom: %s is not in [0, 0.5)", arg);
    case OPT_RESAMPLE:
        if (!strcmp(arg, "none")) return o->confirm_resample = SIM_RESAMPLE_NONE, 0;
        if (!strcmp(arg, "sessions")) return o->confirm_resample = SIM_RESAMPLE_SESSIONS, 0;
        if (!strcmp(arg, "poisson")) return o->confirm_resample = SIM_RESAMPLE_POISSON, 0;
        return sim_errf(err, "--confirm-resample: '%s' is not sessions, poisson or none", arg);
    case 'j': a->json = true; return 0;
    case 'h': a->help = true; return 0;
    default:
        if (sim_cli_slurm_option(c, arg, &o->slurm)) return 0;
        return sim_errf(err, "bad option (see kvsim plan slo --help)");
    }
}

/* getopt's complaint, naming the option (opterr is off). */
static int bad_option(int c, char **argv, slo_args *a, sim_err *err)
{
    const char *opt = argv[optind - 1];
    if (c == ':') return sim_errf(err, "option '%s' needs a value", opt);
    a->usage = true;
    return sim_errf(err, "unknown option '%s'", opt);
}

static int parse_args(int argc, char **argv, slo_args *a, sim_err *err)
{
    static const struct option fixed[] = {
        {"tp", required_argument, 0, OPT_TP},
        {"hardware", required_argument, 0, OPT_HARDWARE},
        {"modes", required_argument, 0, OPT_MODES},
        {"confirm-seeds", required_argument, 0, OPT_CONFIRM},
        {"headroom", required_argument, 0, OPT_HEADROOM},
        {"confirm-resample", required_argument, 0, OPT_RESAMPLE},
        {"trace", required_argument, 0, 't'},
        {"config", required_argument, 0, 'c'},
        {"set", required_argument, 0, 's'},
        {"speed", required_argument, 0, OPT_SPEED},
        {"attainment", required_argument, 0, OPT_ATTAIN},
        {"allow-rejected", no_argument, 0, OPT_REJECT},
        {"max-instances", required_argument, 0, OPT_MAX},
        {"dram", required_argument, 0, OPT_DRAM},
        {"scopes", required_argument, 0, OPT_SCOPES},
        {"cpp", required_argument, 0, OPT_CPP},
        {"jobs", required_argument, 0, OPT_JOBS},
        {"db", required_argument, 0, OPT_DB},
        {"json", no_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'},
        {"ssd", required_argument, 0, OPT_SSD},
        {"remote", required_argument, 0, OPT_REMOTE},
        {"loads", required_argument, 0, OPT_LOADS},
        {"dram-step", required_argument, 0, OPT_STEP},
        SIM_CLI_SLURM_OPTIONS,
    };
    /* the fixed options, then one per target, then the terminator */
    enum { NFIXED = sizeof fixed / sizeof fixed[0] };
    struct option opts[NFIXED + SIM_SLO_NTARGETS + 1] = {{0}};
    memcpy(opts, fixed, sizeof fixed);
    for (int t = 0; t < SIM_SLO_NTARGETS; t++)
        opts[NFIXED + t] = (struct option){sim_slo_option(t), required_argument, 0, OPT_TARGET + t};
    a->o.sets = sim_xcalloc((size_t)argc + 1, sizeof *a->o.sets);
    opterr = 0;
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, ":h", opts, NULL)) != -1;)
        if (c == '?' || c == ':' ? bad_option(c, argv, a, err) : parse_one(c, optarg, a, err)) return -1;
    char msg[1024];
    if (optind < argc)
        return sim_errf(err, "%s", sim_cli_unexpected(msg, sizeof msg, "plan slo", argv[optind], "--trace"));
    const char *bad = sim_cli_slurm_check(&a->o.slurm);
    return bad ? sim_errf(err, "%s", bad) : 0;
}

int sim_cli_plan_slo_opts(int argc, char **argv, sim_slo_opts *o, sim_err *err)
{
    slo_args a = {0};
    sim_slo_opts_init(&a.o);
    int rc = parse_args(argc, argv, &a, err);
    if (rc == 0 && (a.json || a.help || a.o.slurm.on))
        rc = sim_errf(err, "%s: not an option of a measurement", a.json ? "--json" : a.help ? "--help" : "--slurm");
    sim_cli_slurm_free(&a.o.slurm);
    *o = a.o;
    return rc;
}

/* What the config of a search has not been validated on
 * (sim/serving/caveats.c), each text once per command, here: every point of
 * the search inherits it, so its worker runs are told not to repeat it
 * (KVSIM_CAVEATS_SAID, read by `kvsim run`). A config that does not load
 * says nothing here; the search reports it. */
static void warn_caveats(const sim_slo_opts *o, json_t *said)
{
    sim_config cfg;
    sim_err err = {{0}};
    setenv("KVSIM_CAVEATS_SAID", "1", 1);
    if (sim_config_load(&cfg, o->config, o->sets, o->nsets, &err)) return;
    json_t *all = sim_serving_caveats(&cfg);
    sim_cli_warn_caveats("plan slo", all, said);
    json_decref(all);
    sim_config_free(&cfg);
}

/* ---- --hardware, --tp: one search per kind and GPUs per instance -------------- */

static void before_search(const sim_slo_opts *o, void *said) { warn_caveats(o, said); }

static int run_multi(slo_args *a, sim_err *err)
{
    sim_slo_multi m;
    int rc = SIM_EXIT_OK, ran = 0;
    if (sim_slo_plan_multi(&a->o, a->hardware, a->tp, a->ntp, a->modes, before_search, a->said, &m, err)) {
        rc = m.stop_signal ? 128 + m.stop_signal : sim_usage_error("plan slo", err->msg);
        sim_slo_multi_free(&m);
        return rc;
    }
    for (int i = 0; i < m.n; i++) ran += !m.v[i].why[0];
    if (ran == 0) rc = sim_usage_error("plan slo", m.n ? m.v[m.n - 1].why : "nothing to search");
    else if (a->json) {
        json_t *j = sim_slo_multi_json(&a->o, &m);
        json_dumpf(j, stdout, JSON_REAL_PRECISION(10)), putchar('\n');
        json_decref(j);
    } else sim_slo_multi_print(&a->o, &m);
    if (rc == SIM_EXIT_OK && m.best < 0) rc = SIM_EXIT_CHECK;
    sim_slo_multi_free(&m);
    return rc;
}

/* ---- the command ----------------------------------------------------------- */

/* The search and its answer (text or --json). Returns an exit status. */
static int plan(slo_args *a, sim_slo_result *r, sim_err *err)
{
    if (sim_slo_plan(&a->o, r, err)) {
        int rc = sim_usage_error("plan slo", err->msg);
        return r->stop_signal ? 128 + r->stop_signal : rc;
    }
    json_t *j = a->json ? sim_slo_json(&a->o, r) : NULL;
    if (j) json_dumpf(j, stdout, JSON_REAL_PRECISION(10)), putchar('\n');
    else sim_slo_print(&a->o, r);
    json_decref(j);
    return sim_slo_answer(r) ? SIM_EXIT_OK : SIM_EXIT_CHECK;
}

int cmd_plan_slo(int argc, char **argv)
{
    slo_args a = {0};
    sim_slo_opts_init(&a.o);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    a.o.jobs = 0;
    a.o.tty = isatty(STDERR_FILENO);
    sim_err err = {{0}};
    sim_slo_result r = {0};
    int rc = SIM_EXIT_OK;
    bool bad = parse_args(argc, argv, &a, &err) != 0;
    if (!a.o.jobs) a.o.jobs = a.o.slurm.on ? 1000 : cpus > 0 ? (int)cpus : 1; /* Slurm: no cap below the array's */
    if (!bad && !a.help && a.o.slurm.on && !a.o.db)
        fputs("kvsim plan slo: note: --slurm without --db: the runs go to a temporary folder ($TMPDIR or /tmp) that "
              "every node must see; give --db on the shared file system\n",
              stderr);
    if (bad) {
        rc = sim_usage_error("plan slo", err.msg);
        if (a.usage) fprintf(stderr, slo_usage, sim_cli_slurm_usage);
    } else if (a.help) {
        printf(slo_usage, sim_cli_slurm_usage);
    } else {
        a.said = json_array();
        bool multi = a.ntp > 0 || a.hardware || a.modes;
        if (!multi) warn_caveats(&a.o, a.said); /* --tp, --hardware: once per search */
        rc = multi ? run_multi(&a, &err) : plan(&a, &r, &err);
        json_decref(a.said);
    }
    sim_slo_free(&r);
    free(a.o.sets);
    sim_cli_slurm_free(&a.o.slurm);
    return rc;
}
