/* datapath/probe/main.c — build/kvsim-probe: command line of the data-path
 * probe. Exit status: 0 ok, 1 a measurement or check failed, 2 bad usage or
 * the output could not be written (disk full, file-size limit). */
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "datapath/backend.h"
#include "datapath/probe/probe.h"
#include "sim/outfile.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: kvsim-probe [options]\n"
               "Measure KV chunk load/store costs on this machine; write one JSON document.\n\n"
               "  --out FILE        JSON output (default: stdout); the table goes to stderr\n"
               "  --shapes LIST     comma list of llama3.1-8b, llama3-70b-tp8, qwen2.5-32b, tiny\n"
               "                    or LAYERSxKVHEADSxHEADDIMxDTYPEBYTES (default: the first three)\n"
               "  --tokens LIST     chunk sizes in tokens (default: 16,32,64,128,256,512,1024)\n"
               "  --backends LIST   cpu,cuda (default: every backend; unusable ones are reported)\n"
               "  --reps N          timed runs per point, median reported (default 9)\n"
               "  --warmup N        untimed runs first (default 2; at least one per rotation buffer)\n"
               "  --threads N       cpu backend threads (default: half the online CPUs, 1 to 8)\n"
               "  --ssd-dir DIR     where host<->SSD files go; created if missing, in a folder that\n"
               "                    exists (default: build/probe-ssd)\n"
               "  --no-ssd          skip the SSD directions\n"
               "  --lab             kernel lab: llama3.1-8b only, no SSD, table to stdout\n"
               "  --quiet           no table\n"
               "  --help            this text\n");
}

static int bad(const char *msg, const char *arg)
{
    fprintf(stderr, "kvsim-probe: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    return 2;
}

/* Split a comma list into at most DP_PROBE_MAX_LIST items; calls `item`
 * on each and stops at the first failure. */
static int each_item(const char *list, int (*item)(dp_probe_opts *, const char *), dp_probe_opts *o)
{
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", list) >= (int)sizeof buf) return -1;
    int n = 0;
    for (char *tok = buf, *next; tok; tok = next, n++) { /* strsep: an empty item is an error */
        next = strchr(tok, ',');
        if (next) *next++ = 0;
        if (!*tok || n == DP_PROBE_MAX_LIST || item(o, tok)) return -1;
    }
    return 0;
}

static int add_shape(dp_probe_opts *o, const char *s)
{
    sim_err err;
    if (!dp_probe_parse_shape(s, &o->shapes[o->nshapes], &err)) return o->nshapes++, 0;
    fprintf(stderr, "kvsim-probe: --shapes: %s\n", err.msg);
    return -1;
}

static int add_tokens(dp_probe_opts *o, const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v <= 0 || v > 1 << 20) return -1;
    o->tokens[o->ntokens++] = (int)v;
    return 0;
}

/* A registered backend (one not usable here, e.g. cuda without a GPU, is
 * still measured as "unavailable" in the JSON; an unknown name is usage). */
static int add_backend(dp_probe_opts *o, const char *s)
{
    size_t n;
    const dp_backend_ops *const *all = dp_backends(&n);
    bool known = false;
    for (size_t i = 0; i < n; i++) known |= !strcmp(all[i]->name, s);
    if (!known || strlen(s) >= sizeof o->backends[0]) {
        fprintf(stderr, "kvsim-probe: --backends: unknown backend '%s' (known:", s);
        for (size_t i = 0; i < n; i++) fprintf(stderr, "%s %s", i ? "," : "", all[i]->name);
        fputs(")\n", stderr);
        return -1;
    }
    snprintf(o->backends[o->nbackends++], sizeof o->backends[0], "%s", s);
    return 0;
}

static int positive(const char *s, int *out, int min, int max)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < min || v > max) return -1;
    *out = (int)v;
    return 0;
}

/* --ssd-dir is a scratch folder the probe may create, but only as `mkdir`
 * would: in a folder that exists (a typo is an error, not a new tree). */
static bool parent_is_dir(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    char *slash = strrchr(buf, '/');
    if (slash == buf) slash[1] = 0;
    else if (slash) *slash = 0;
    else snprintf(buf, sizeof buf, ".");
    struct stat st;
    return stat(buf, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The options: long names only, each its own code. */
enum { O_OUT = 1, O_SHAPES, O_TOKENS, O_BACKENDS, O_REPS, O_WARMUP, O_THREADS, O_SSD, O_NOSSD, O_LAB, O_QUIET };
static const struct option opts[] = {
    {"out", required_argument, 0, O_OUT},
    {"shapes", required_argument, 0, O_SHAPES},
    {"tokens", required_argument, 0, O_TOKENS},
    {"backends", required_argument, 0, O_BACKENDS},
    {"reps", required_argument, 0, O_REPS},
    {"warmup", required_argument, 0, O_WARMUP},
    {"threads", required_argument, 0, O_THREADS},
    {"ssd-dir", required_argument, 0, O_SSD},
    {"no-ssd", no_argument, 0, O_NOSSD},
    {"lab", no_argument, 0, O_LAB},
    {"quiet", no_argument, 0, O_QUIET},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

int main(int argc, char **argv)
{
    dp_probe_opts o;
    dp_probe_defaults(&o);
    const char *out = NULL;
    bool shapes_set = false, lab = false;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'h': usage(stdout); return 0;
        case O_OUT: out = optarg; break;
        case O_SHAPES:
            o.nshapes = 0;
            shapes_set = true;
            if (each_item(optarg, add_shape, &o)) return bad("--shapes: bad list", optarg);
            break;
        case O_TOKENS:
            o.ntokens = 0;
            if (each_item(optarg, add_tokens, &o))
                return bad("--tokens: expected a comma list of token counts 1..1048576", optarg);
            break;
        case O_BACKENDS:
            o.nbackends = 0;
            if (each_item(optarg, add_backend, &o))
                return bad("--backends: expected a comma list such as cpu,cuda", optarg);
            break;
        case O_REPS:
            if (positive(optarg, &o.reps, 1, 100000)) return bad("--reps: expected 1..100000", optarg);
            break;
        case O_WARMUP:
            if (positive(optarg, &o.warmup, 0, 100000)) return bad("--warmup: expected 0..100000", optarg);
            break;
        case O_THREADS:
            if (positive(optarg, &o.threads, 1, DP_PROBE_MAX_THREADS))
                return bad("--threads: expected 1.." DP_PROBE_STR(DP_PROBE_MAX_THREADS), optarg);
            break;
        case O_SSD:
            if (!parent_is_dir(optarg)) return bad("--ssd-dir: its parent folder does not exist", optarg);
            o.ssd_dir = optarg;
            break;
        case O_NOSSD: o.ssd_dir = NULL; break;
        case O_LAB: lab = true; break;
        case O_QUIET: o.quiet = true; break;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) return bad("unexpected argument", argv[optind]);
    if (lab) {
        if (!shapes_set) o.nshapes = 1;
        o.ssd_dir = NULL;
    }
    signal(SIGXFSZ, SIG_IGN); /* a file-size limit is a write error, not a silent kill */
    sim_outfile json;
    sim_err err;
    if (sim_outfile_open(&json, out ? out : "-", &err)) return bad(err.msg, NULL);
    if (dp_probe_run(&o, json.f, lab ? stdout : stderr, &err)) {
        sim_outfile_abort(&json);
        fprintf(stderr, "kvsim-probe: %s\n", err.msg);
        return 1;
    }
    return sim_outfile_close(&json, &err) ? bad(err.msg, NULL) : 0; /* disk full, file-size limit */
}
