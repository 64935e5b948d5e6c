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

static const char slo_usage[] =
    "usage: kvsim plan slo [--trace FILE] [--config FILE] [--set key=value]... [--speed X]\n"
    "                      [--ttft-p90-ms MS] [--ttft-p99-ms MS] [--tbt-p99-ms MS] [--attainment F]\n"
    "                      [--allow-rejected] ...\n"
    "                      [--max-instances N] [--dram LIST] [--scopes LIST] [--cpp LIST] [--tp LIST]\n"
    "                      [--ssd LIST] [--remote LIST] [--loads LIST] [--dram-step SIZE]\n"
    "                      [--jobs N] [--db FILE] [--json]\n"
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
    OPT_STEP
};

typedef struct slo_args {
    sim_slo_opts o;
    bool json, help;
    bool usage;               /* print the usage after the error */
    int tp[SIM_SLO_MAX_LIST]; /* --tp: GPUs per instance to search (cluster.gpus_per_instance) */
    int ntp;
    json_t *said; /* the caveats' texts warned of so far (warn_caveats) */
} slo_args;

static int positive(const char *opt, const char *s, double *out, sim_err *err)
{
    if (sim_parse_double(s, opt, out, err)) return -1;
    if (!(*out > 0) || isinf(*out)) return sim_errf(err, "%s: %s is not a number > 0", opt, s);
    return 0;
}

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
        return positive(opt, arg, &o->target[c - OPT_TARGET], err);
    }
    switch (c) {
    case 't': o->trace = arg; return 0;
    case 'c': o->config = arg; return 0;
    case 's': o->sets[o->nsets++] = (char *)arg; return 0;
    case OPT_SPEED: o->speed = arg; return positive("--speed", arg, &(double){0}, err);
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

/* ---- printing -------------------------------------------------------------- */

static void print_targets(const sim_slo_opts *o)
{
    printf("targets   ");
    const char *sep = "";
    for (int t = 0; t < SIM_SLO_NTARGETS; t++)
        if (o->target[t] > 0) printf("%s%s <= %g ms", sep, sim_slo_label(t), o->target[t]), sep = ", ";
    if (o->attainment > 0) printf("%sSLO attainment >= %g, not overloaded", sep, o->attainment);
    else printf("%sSLOs ignored (--attainment 0)", sep);
    printf(", %s\n", o->allow_rejected ? "requests may be rejected" : "no request rejected or lost");
}

static void print_floors(const sim_slo_opts *o, const sim_slo_result *r)
{
    for (int i = 0; i < r->nfloor; i++) {
        const sim_slo_floor *f = &r->floor[i];
        printf("floor     cpp_group %d:", f->cpp);
        for (int t = 0; t < SIM_SLO_NTARGETS; t++)
            if (o->target[t] > 0) printf(" %s >= %.1f ms,", sim_slo_label(t), f->value[t]);
        printf(" attainment <= %.4f%s\n", f->attainment, f->blocks ? "  (blocks a target)" : "");
    }
    printf("          (each request alone on one idle instance, prefix hit of an unbounded cache: %.3f of tokens;\n"
           "          the %s prompt, %d tokens, takes %.1f ms alone, %.1f ms with its hit)\n",
           r->hit_rate_tokens, r->prompt_q, r->prompt_tokens, r->prompt_alone_ms, r->prompt_hit_ms);
    if (r->note[0]) printf("note      %s\n", r->note);
}

/* What a DRAM level is per: "instance", or "node" of instances sharing a CPU pool. */
static const char *dram_per(const sim_slo_result *r)
{
    return r->aggregated && r->instances_per_node <= 1 ? "instance" : "node";
}

static void print_header(const sim_slo_opts *o, const sim_slo_result *r)
{
    printf("trace     %s (%lld requests, speed %g, fingerprint %016llx)\n", r->trace, (long long)r->requests, r->speed,
           (unsigned long long)r->fingerprint);
    if (r->aggregated)
        printf("cluster   %s on %s, aggregated%s: %d GPU%s per instance, %.0f KV bytes per token, up to %d instances; "
               "DRAM is the CPU pool per %s\n",
               r->model, r->hardware, r->lmcache ? " with LMCache" : " (kvstore.lmcache off: DRAM not searched)",
               r->gpus_per_instance, r->gpus_per_instance == 1 ? "" : "s", r->kv_bytes_per_token, o->max_instances,
               dram_per(r));
    else
        printf("cluster   %s on %s: %d GPUs per instance, %.0f KV bytes per token, up to %d instances\n", r->model,
               r->hardware, r->gpus_per_instance, r->kv_bytes_per_token, o->max_instances);
    print_targets(o);
    print_floors(o, r);
}

/* Points by size: instances, prefill, DRAM (most first), then knobs. */
static int by_size(const void *x, const void *y, void *arg)
{
    const sim_slo_point *a = x, *b = y;
    const sim_slo_result *r = arg;
    double da = r->dram[a->dram_level], db = r->dram[b->dram_level];
    if (a->prefill + a->decode != b->prefill + b->decode)
        return a->prefill + a->decode < b->prefill + b->decode ? -1 : 1;
    if (a->prefill != b->prefill) return a->prefill < b->prefill ? -1 : 1;
    if (da != db) return da > db ? -1 : 1;
    return (a->knob > b->knob) - (a->knob < b->knob);
}

/* A byte size as people read it: "1 TB", "256 GB", "30 GB". */
static const char *human_bytes(double b, char *buf, size_t n)
{
    static const struct {
        double unit;
        const char *name;
    } units[] = {{1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "kB"}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (b >= units[i].unit) return snprintf(buf, n, "%.4g %s", b / units[i].unit, units[i].name), buf;
    return snprintf(buf, n, "%.0f B", b), buf;
}

/* A token count as people read it: "7.63M", "512k". */
static const char *human_count(double v, char *buf, size_t n)
{
    if (v >= 1e9) snprintf(buf, n, "%.3gG", v / 1e9);
    else if (v >= 1e6) snprintf(buf, n, "%.3gM", v / 1e6);
    else if (v >= 1e3) snprintf(buf, n, "%.3gk", v / 1e3);
    else snprintf(buf, n, "%.0f", v);
    return buf;
}

static const char *verdict(const sim_slo_point *p) { return !p->ran ? "FAILED" : p->feasible ? "yes" : "no"; }

static const char *load_name(int load) { return sim_load_names[load]; }

/* The split and knob columns of a point (and of the table's header, p NULL). */
static void print_knobs(const sim_slo_opts *o, const sim_slo_result *r, const sim_slo_point *p)
{
    char b[32], t[32];
    if (!p) {
        if (r->aggregated)
            printf("probe inst  GPUs DRAM/%-4.4s  tokens%s%s%s", dram_per(r), o->nssd ? "       SSD" : "",
                   o->nremote ? "    remote" : "", o->nload ? " load    " : "");
        else printf("probe   P   D  GPUs DRAM/node  tokens scope  CPP");
        return;
    }
    double dram = r->dram[p->dram_level];
    if (!r->aggregated)
        return (void)printf("%5d %3d %3d %5d %9s %7s %-6s %3d", p->probe, p->prefill, p->decode, sim_slo_gpus(r, p),
                            human_bytes(dram, b, sizeof b), human_count(dram / r->kv_bytes_per_token, t, sizeof t),
                            kv_scope_name((kv_scope)p->scope), p->cpp);
    printf("%5d %4d %5d %9s %7s", p->probe, p->prefill, sim_slo_gpus(r, p), human_bytes(dram, b, sizeof b),
           human_count(dram / r->kv_bytes_per_token, t, sizeof t));
    if (o->nssd) printf(" %9s", human_bytes(p->ssd, b, sizeof b));
    if (o->nremote) printf(" %9s", human_bytes(p->remote, b, sizeof b));
    if (o->nload) printf(" %-8s", load_name(p->load));
}

static void print_row(const sim_slo_opts *o, const sim_slo_result *r, const sim_slo_point *p)
{
    print_knobs(o, r, p);
    for (int k = 0; k < SIM_SLO_NTARGETS; k++)
        if (o->target[k] > 0) printf(" %9.1f", p->value[k]);
    printf(" %7.4f %5lld %4s  %s\n", p->attainment, (long long)p->rejected, p->overloaded ? "yes" : "-", verdict(p));
}

static void print_points(const sim_slo_opts *o, const sim_slo_result *r)
{
    sim_slo_point *s = sim_xmalloc((size_t)(r->npts ? r->npts : 1) * sizeof *s);
    memcpy(s, r->pts, (size_t)r->npts * sizeof *s);
    qsort_r(s, (size_t)r->npts, sizeof *s, by_size, (void *)r);
    printf("\n");
    print_knobs(o, r, NULL);
    for (int t = 0; t < SIM_SLO_NTARGETS; t++)
        if (o->target[t] > 0) printf(" %9s", sim_slo_label(t));
    printf("  attain   rej over  feasible\n");
    for (int i = 0; i < r->npts; i++) print_row(o, r, &s[i]);
    free(s);
}

static void print_frontier(const sim_slo_opts *o, const sim_slo_result *r)
{
    bool priced = sim_slo_price(r, &(sim_slo_point){.prefill = 1, .decode = 1}) > 0;
    printf("\nfrontier: %s for each DRAM level\n", priced ? "lowest price an hour" : "fewest GPUs");
    if (r->aggregated)
        printf("DRAM/%-4.4s  tokens  GPUs inst%s%s%s\n", dram_per(r), o->nssd ? "       SSD" : "",
               o->nremote ? "    remote" : "", o->nload ? " load" : "");
    else printf("DRAM/node  tokens  GPUs   P   D  scope  CPP\n");
    for (int lv = 0; lv < r->nlisted; lv++) {
        int i = r->frontier[lv];
        char b[32], t[32];
        printf("%9s %7s", human_bytes(r->dram[lv], b, sizeof b),
               human_count(r->dram[lv] / r->kv_bytes_per_token, t, sizeof t));
        if (i < 0) {
            printf("  none up to %d instances\n", o->max_instances);
            continue;
        }
        const sim_slo_point *p = &r->pts[i];
        if (!r->aggregated) {
            printf(" %5d %3d %3d  %-6s %3d", sim_slo_gpus(r, p), p->prefill, p->decode,
                   kv_scope_name((kv_scope)p->scope), p->cpp);
            if (priced) printf("  $%.2f an hour", sim_slo_price(r, p));
            putchar('\n');
            continue;
        }
        printf(" %5d %4d", sim_slo_gpus(r, p), p->prefill);
        if (o->nssd) printf(" %9s", human_bytes(p->ssd, b, sizeof b));
        if (o->nremote) printf(" %9s", human_bytes(p->remote, b, sizeof b));
        printf("%s%s\n", o->nload ? " " : "", o->nload ? load_name(p->load) : "");
    }
}

/* The first target's value of a point, or its SLO attainment: "TTFT p90 1025.9 ms". */
static void first_value(const sim_slo_opts *o, const sim_slo_point *p, char *buf, size_t n)
{
    for (int t = 0; t < SIM_SLO_NTARGETS; t++)
        if (o->target[t] > 0)
            return (void)snprintf(buf, n, "%s %.1f ms, SLO attainment %.4f", sim_slo_label(t), p->value[t],
                                  p->attainment);
    snprintf(buf, n, "SLO attainment %.4f", p->attainment);
}

/* An aggregated plan's cliff: the least DRAM passing with the fewest
 * instances and the most failing below it. */
static void print_cliff(const sim_slo_opts *o, const sim_slo_result *r)
{
    if (r->cliff_pass < 0) return;
    const sim_slo_point *p = &r->pts[r->cliff_pass];
    char b[32], v[128];
    first_value(o, p, v, sizeof v);
    printf("\ncliff     with %d instance%s: %s of CPU DRAM per %s passes (%s)\n", p->prefill,
           p->prefill == 1 ? "" : "s", human_bytes(r->dram[p->dram_level], b, sizeof b), dram_per(r), v);
    if (r->cliff_fail < 0) return (void)printf("          and so does no DRAM at all: the trace needs no CPU tier\n");
    const sim_slo_point *f = &r->pts[r->cliff_fail];
    first_value(o, f, v, sizeof v);
    printf("          %s fails (%s); the levels are %s apart (--dram-step)\n",
           human_bytes(r->dram[f->dram_level], b, sizeof b), v,
           human_bytes(r->dram[p->dram_level] - r->dram[f->dram_level], (char[32]){0}, 32));
}

/* The cheapest point in full: every TTFT and TBT statistic, SLO
 * attainment against what, rejections, the diagnosis's busiest resource. */
static void print_cheapest(const sim_slo_opts *o, const sim_slo_result *r, const sim_slo_point *p)
{
    char b[32], t[32];
    const char *dram = human_bytes(r->dram[p->dram_level], b, sizeof b),
               *tokens = human_count(r->dram[p->dram_level] / r->kv_bytes_per_token, t, sizeof t);
    char price[48] = "";
    if (sim_slo_price(r, p) > 0) snprintf(price, sizeof price, " ($%.2f an hour)", sim_slo_price(r, p));
    if (r->aggregated)
        printf("\ncheapest  %d instance%s = %d GPU%s%s, %s (%s tokens) of CPU DRAM per %s, kvstore.load %s\n",
               p->prefill, p->prefill == 1 ? "" : "s", sim_slo_gpus(r, p), sim_slo_gpus(r, p) == 1 ? "" : "s", price,
               dram, tokens, dram_per(r), load_name(p->load));
    else
        printf("\ncheapest  %dP%dD = %d GPUs%s, %s (%s tokens) of DRAM per node, %s scope, cpp_group %d\n", p->prefill,
               p->decode, sim_slo_gpus(r, p), price, dram, tokens, kv_scope_name((kv_scope)p->scope), p->cpp);
    for (int m = 0; m < 2; m++) {
        printf("          %-4s", m ? "TBT" : "TTFT");
        for (int k = 0; k < SIM_SLO_NSTATS; k++)
            printf("%s %s %.1f", k ? "," : "", sim_slo_stat_key(k), p->value[m * SIM_SLO_NSTATS + k]);
        printf(" ms\n");
    }
    printf("          SLO attainment %.4f (slo.ttft_ms %g, slo.tbt_ms %g, a request's own in the trace first%s), "
           "%lld rejected or lost, %s; busiest: %s %.2f\n",
           p->attainment, r->slo_ttft_ms, r->slo_tbt_ms, o->attainment > 0 ? "" : "; not required: --attainment 0",
           (long long)p->rejected, p->overloaded ? "overloaded" : "not overloaded", p->busiest[0] ? p->busiest : "-",
           p->busiest_util);
    printf("run       %s\n", r->command);
    if (!(o->attainment > 0) && (p->overloaded || !(p->attainment >= 0.9)))
        fprintf(stderr,
                "kvsim plan slo: warning: the cheapest point misses the SLOs (attainment %.4f, %s): --attainment 0 "
                "ignores them; leave it out to require SLO attainment >= 0.9 and no overload\n",
                p->attainment, p->overloaded ? "overloaded" : "not overloaded");
}

static void print_text(const sim_slo_opts *o, const sim_slo_result *r)
{
    print_header(o, r);
    printf("search    %d probes, %lld runs (%lld already recorded, %lld failed) in %.1f s %s %d %s\n", r->nprobes,
           (long long)r->runs, (long long)r->recorded, (long long)r->failed, r->wall_seconds,
           o->slurm.on ? "on Slurm, at most" : "with", o->jobs, o->slurm.on ? "at once" : "jobs");
    if (r->npts) print_points(o, r);
    if (r->status != SIM_SLO_FEASIBLE) return (void)printf("\ninfeasible: %s\n", r->reason);
    print_frontier(o, r);
    print_cliff(o, r);
    print_cheapest(o, r, &r->pts[r->cheapest]);
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

/* ---- --tp: parallelism per instance ------------------------------------------ */

/* One whole search per GPU count per instance (cluster.gpus_per_instance:
 * tensor parallel within a node, pipeline parallel across nodes); the
 * answer is the feasible plan with the fewest GPUs (the lowest price when
 * both sides are priced: sim_slo_cost), ties to the fewer GPUs per instance. Returns the index of that plan, -1 when none is feasible. */
static int plan_tp(slo_args *a, sim_slo_result *r, char (*why)[256], sim_err *err)
{
    for (int i = 0; i < a->o.nsets; i++)
        if (!strncmp(a->o.sets[i], "cluster.gpus_per_instance=", 26))
            return sim_errf(err, "--set %s: --tp sets cluster.gpus_per_instance itself", a->o.sets[i]), -2;
    int best = -1;
    char set[64];
    sim_slo_opts o = a->o;
    o.sets[o.nsets++] = set; /* the array has room: one --set takes two arguments */
    for (int i = 0; i < a->ntp; i++) {
        snprintf(set, sizeof set, "cluster.gpus_per_instance=%d", a->tp[i]);
        warn_caveats(&o, a->said);
        if (sim_slo_plan(&o, &r[i], err)) { /* e.g. the model does not fit so few GPUs: that count is out */
            if (r[i].stop_signal) return -2;
            snprintf(why[i], sizeof why[i], "%.255s", err->msg);
            r[i].status = SIM_SLO_INFEASIBLE_FLOOR;
            continue;
        }
        if (r[i].status != SIM_SLO_FEASIBLE) continue;
        double c = sim_slo_cost(&r[i], &r[i].pts[r[i].cheapest]);
        if (best < 0 || c < sim_slo_cost(&r[best], &r[best].pts[r[best].cheapest])) best = i;
    }
    a->o.sets[a->o.nsets] = NULL;
    return best;
}

static void print_tp(const slo_args *a, const sim_slo_result *r, int best, char (*why)[256])
{
    printf("tp        one search per GPU count per instance (cluster.gpus_per_instance)\n");
    printf("GPUs/instance  tensor x pipeline  answer\n");
    for (int i = 0; i < a->ntp; i++) {
        printf("%13d  %8d x %-6d  ", a->tp[i], r[i].tp, r[i].pp);
        if (r[i].status != SIM_SLO_FEASIBLE) {
            printf("%s\n", why[i][0]                                 ? why[i]
                           : r[i].status == SIM_SLO_INFEASIBLE_FLOOR ? "infeasible: below the floor"
                                                                     : "infeasible: more than --max-instances");
            continue;
        }
        const sim_slo_point *p = &r[i].pts[r[i].cheapest];
        const char *mark = sim_slo_price(&r[i], p) > 0 ? "  <- cheapest" : "  <- fewest";
        printf("%dP%dD = %d GPUs%s\n", p->prefill, p->decode, sim_slo_gpus(&r[i], p), i == best ? mark : "");
    }
    printf("\n");
}

static json_t *tp_json(const slo_args *a, const sim_slo_result *r, int best, char (*why)[256])
{
    json_t *list = json_array();
    for (int i = 0; i < a->ntp; i++) {
        json_t *e = json_pack("{s:i, s:b}", "gpus_per_instance", a->tp[i], "feasible", r[i].status == SIM_SLO_FEASIBLE);
        if (r[i].status == SIM_SLO_FEASIBLE)
            json_object_set_new(e, "gpus", json_integer(sim_slo_gpus(&r[i], &r[i].pts[r[i].cheapest])));
        if (why[i][0]) json_object_set_new(e, "error", json_string(why[i]));
        json_array_append_new(list, e);
    }
    json_t *j = json_pack("{s:o}", "tp", list);
    json_object_set_new(j, "picked", best >= 0 ? json_integer(a->tp[best]) : json_null());
    int shown = best;
    for (int i = a->ntp - 1; shown < 0 && i >= 0; i--) shown = why[i][0] ? -1 : i;
    json_object_set_new(j, "plan", sim_slo_json(&a->o, &r[shown]));
    return j;
}

static int run_tp(slo_args *a, sim_err *err)
{
    sim_slo_result r[SIM_SLO_MAX_LIST];
    char why[SIM_SLO_MAX_LIST][256] = {{0}};
    memset(r, 0, sizeof r);
    int best = plan_tp(a, r, why, err), rc = SIM_EXIT_OK, ran = 0;
    for (int i = 0; i < a->ntp; i++) ran += !why[i][0];
    if (best == -2 || ran == 0) rc = sim_usage_error("plan slo", err->msg);
    else if (a->json) {
        json_t *j = tp_json(a, r, best, why);
        json_dumpf(j, stdout, JSON_REAL_PRECISION(10)), putchar('\n');
        json_decref(j);
    } else {
        print_tp(a, r, best, why);
        int shown = best;
        for (int i = a->ntp - 1; shown < 0 && i >= 0; i--) shown = why[i][0] ? -1 : i;
        print_text(&a->o, &r[shown]);
    }
    if (rc == SIM_EXIT_OK && best < 0) rc = SIM_EXIT_CHECK;
    for (int i = 0; i < a->ntp; i++) sim_slo_free(&r[i]);
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
    else print_text(&a->o, r);
    json_decref(j);
    return r->status == SIM_SLO_FEASIBLE ? SIM_EXIT_OK : SIM_EXIT_CHECK;
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
        if (a.ntp == 0) warn_caveats(&a.o, a.said); /* --tp: once per GPU count */
        rc = a.ntp > 0 ? run_tp(&a, &err) : plan(&a, &r, &err);
        json_decref(a.said);
    }
    sim_slo_free(&r);
    free(a.o.sets);
    sim_cli_slurm_free(&a.o.slurm);
    return rc;
}
