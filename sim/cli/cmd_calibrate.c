/* sim/cli/cmd_calibrate.c — `kvsim calibrate`: turn the data-path probe's raw
 * measurements into the calibration file the cost model reads (sim/cost/calib.h).
 *
 * The probe's samples are grouped by (direction, tier, method) — pooled over
 * model shapes unless --shape picks one — and each group is fitted with
 * t(bytes) = alpha + bytes/beta (sim_curve_fit_samples: GSL weighted least
 * squares). The fit quality (R², worst relative residual) is printed and
 * stored with each curve. Then "use" picks, for each of the simulator's four
 * transfers, the fastest real data-path method at a 32 MiB transfer (one
 * 256-token LLaMA3.1-8B chunk, LMCache's default chunk): on the backend the
 * probe ran (cuda when it had a GPU, else cpu), never a plain-copy
 * reference (memcpy, cuda_memcpy), which is a ceiling rather than a path. */
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "sim/cost/calib.h"
#include "sim/cli/cli.h"

extern char **environ;

#define CAL_CMD "calibrate"
#define CAL_REF_BYTES 33554432.0 /* 256 tokens × 128 KiB */
#define CAL_MAX_GROUPS 64

static const char usage_text[] =
    "usage: kvsim calibrate (--probe-json FILE | --run-probe) --out FILE [options]\n"
    "Fit t(bytes) = alpha + bytes/beta to data-path probe samples and write a calibration file.\n\n"
    "  --probe-json FILE   raw JSON written by build/kvsim-probe\n"
    "  --run-probe         run the probe now (beside this binary, or $KVSIM_PROBE); its raw\n"
    "                      JSON is kept next to --out as NAME.probe.json\n"
    "  --probe-args ARGS   extra probe arguments with --run-probe, space separated\n"
    "                      (e.g. \"--shapes llama3.1-8b --reps 5\")\n"
    "  --out FILE          calibration file to write (e.g. configs/calibration/NAME.json)\n"
    "  --label TEXT        label (default: the probe's backend label, e.g. \"cpu: <model>\")\n"
    "  --shape NAME        fit one model shape only (default: pool every shape)\n"
    "  --help              this text\n";

typedef struct cal_group {
    const char *backend, *direction, *tier, *method; /* borrowed from the probe JSON */
    double *bytes, *secs;
    size_t n, cap;
    json_t *shapes;
    sim_curve_fit fit;
    int fitted;
} cal_group;

typedef struct cal_state {
    const char *probe_path;
    json_t *probe;
    cal_group groups[CAL_MAX_GROUPS];
    int ngroups;
    const char *backend; /* the calibration's: "cuda" if the probe had a GPU */
} cal_state;

static void free_state(cal_state *s)
{
    for (int i = 0; i < s->ngroups; i++) {
        free(s->groups[i].bytes);
        free(s->groups[i].secs);
        json_decref(s->groups[i].shapes);
    }
    json_decref(s->probe);
}

static cal_group *group_for(cal_state *s, const char *backend, const char *dir, const char *tier, const char *method)
{
    for (int i = 0; i < s->ngroups; i++) {
        cal_group *g = &s->groups[i];
        if (!strcmp(g->direction, dir) && !strcmp(g->tier, tier) && !strcmp(g->method, method)) return g;
    }
    if (s->ngroups == CAL_MAX_GROUPS) return NULL;
    cal_group *g = &s->groups[s->ngroups++];
    *g = (cal_group){.backend = backend, .direction = dir, .tier = tier, .method = method, .shapes = json_array()};
    return g;
}

static void group_add(cal_group *g, const char *shape, double bytes, double secs)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 32;
        g->bytes = sim_xrealloc(g->bytes, g->cap * sizeof *g->bytes);
        g->secs = sim_xrealloc(g->secs, g->cap * sizeof *g->secs);
    }
    g->bytes[g->n] = bytes;
    g->secs[g->n++] = secs;
    size_t i;
    json_t *v;
    json_array_foreach(g->shapes, i, v) if (!strcmp(json_string_value(v), shape)) return;
    json_array_append_new(g->shapes, json_string(shape));
}

/* ---- reading the probe document ---------------------------------------------- */

static const char *const sample_strings[] = {"backend", "shape", "direction", "tier", "method"};

static int read_sample(cal_state *s, size_t i, const json_t *smp, const char *only_shape, sim_err *err)
{
    const char *v[5];
    for (int k = 0; k < 5; k++)
        if (!(v[k] = json_string_value(json_object_get(smp, sample_strings[k]))))
            return sim_errf(err, "%s: samples[%zu].%s: missing or not a string", s->probe_path, i, sample_strings[k]);
    const json_t *b = json_object_get(smp, "bytes"), *t = json_object_get(smp, "median_s");
    if (!json_is_number(b) || json_number_value(b) <= 0)
        return sim_errf(err, "%s: samples[%zu].bytes: must be a positive number", s->probe_path, i);
    if (!json_is_number(t) || json_number_value(t) <= 0)
        return sim_errf(err, "%s: samples[%zu].median_s: must be a positive number", s->probe_path, i);
    if (only_shape && strcmp(v[3], "ssd") && strcmp(v[1], only_shape)) return 0; /* file I/O is shape-free */
    cal_group *g = group_for(s, v[0], v[2], v[3], v[4]);
    if (!g) return sim_errf(err, "%s: more than %d (direction, tier, method) groups", s->probe_path, CAL_MAX_GROUPS);
    group_add(g, v[1], json_number_value(b), json_number_value(t));
    if (!strcmp(v[0], "cuda")) s->backend = "cuda";
    return 0;
}

static int read_probe(cal_state *s, const char *only_shape, sim_err *err)
{
    json_error_t je;
    if (!(s->probe = json_load_file(s->probe_path, 0, &je)))
        return je.line < 1 ? sim_errf(err, "%s: %s", s->probe_path, je.text)
                           : sim_errf(err, "%s:%d:%d: %s", s->probe_path, je.line, je.column, je.text);
    const json_t *ver = json_object_get(s->probe, "kvsim_probe");
    if (!json_is_integer(ver) || json_integer_value(ver) != 1)
        return sim_errf(err, "%s: kvsim_probe: expected 1 (is this kvsim-probe output?)", s->probe_path);
    const json_t *samples = json_object_get(s->probe, "samples");
    if (!json_is_array(samples)) return sim_errf(err, "%s: samples: missing or not an array", s->probe_path);
    s->backend = "cpu";
    size_t i;
    json_t *smp;
    json_array_foreach(samples, i, smp) if (read_sample(s, i, smp, only_shape, err)) return -1;
    if (s->ngroups == 0)
        return sim_errf(err, "%s: no samples%s%s", s->probe_path, only_shape ? " for shape " : "",
                        only_shape ? only_shape : "");
    return 0;
}

/* ---- fitting and choosing ----------------------------------------------------- */

static void fit_groups(cal_state *s)
{
    printf("%-9s %-4s %-16s %-7s %10s %10s %8s %8s %6s\n", "direction", "tier", "method", "backend", "alpha_us",
           "beta_GB/s", "r2", "max_rel", "points");
    for (int i = 0; i < s->ngroups; i++) {
        cal_group *g = &s->groups[i];
        sim_err why;
        g->fitted = !sim_curve_fit_samples(g->bytes, g->secs, g->n, &g->fit, &why);
        if (!g->fitted) {
            printf("%-9s %-4s %-16s %-7s  not fitted: %s\n", g->direction, g->tier, g->method, g->backend, why.msg);
            continue;
        }
        printf("%-9s %-4s %-16s %-7s %10.2f %10.3f %8.4f %7.1f%% %6zu%s\n", g->direction, g->tier, g->method,
               g->backend, g->fit.curve.alpha_s * 1e6, g->fit.curve.beta_Bps / 1e9, g->fit.r2,
               100 * g->fit.max_rel_residual, g->fit.points, g->fit.alpha_clamped ? "  (alpha<0 refit: alpha=0)" : "");
    }
}

/* Methods the probe used as reference peaks (plain copies, not data paths). */
static int is_reference(const cal_state *s, const char *method)
{
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(s->probe, "peaks"), i, p) {
        const char *m = json_string_value(json_object_get(p, "method"));
        if (m && !strcmp(m, method)) return 1;
    }
    return 0;
}

static const cal_group *choose(const cal_state *s, const sim_calib_slot *slot)
{
    const cal_group *best = NULL;
    for (int i = 0; i < s->ngroups; i++) {
        const cal_group *g = &s->groups[i];
        if (!g->fitted || strcmp(g->direction, slot->direction) || strcmp(g->tier, slot->tier) ||
            is_reference(s, g->method) || (strcmp(g->tier, "ssd") && strcmp(g->backend, s->backend)))
            continue;
        if (!best || sim_curve_time(&g->fit.curve, CAL_REF_BYTES) < sim_curve_time(&best->fit.curve, CAL_REF_BYTES))
            best = g;
    }
    return best;
}

/* ---- writing ------------------------------------------------------------------ */

static json_t *probe_info(const cal_state *s)
{
    json_t *info = json_object();
    json_object_set_new(info, "file", json_string(s->probe_path));
    char *text = json_dumps(s->probe, JSON_COMPACT);
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)XXH3_64bits(text, strlen(text)));
    free(text);
    json_object_set_new(info, "xxh3_compact", json_string(hex));
    const char *copy[] = {"host", "config", "backends", "peaks"};
    for (size_t i = 0; i < sizeof copy / sizeof copy[0]; i++) {
        json_t *v = json_object_get(s->probe, copy[i]);
        if (v) json_object_set(info, copy[i], v);
    }
    return info;
}

static json_t *curve_json(const cal_group *g)
{
    double lo = g->bytes[0], hi = g->bytes[0];
    for (size_t i = 1; i < g->n; i++) {
        lo = g->bytes[i] < lo ? g->bytes[i] : lo;
        hi = g->bytes[i] > hi ? g->bytes[i] : hi;
    }
    json_t *c = json_object();
    json_object_set_new(c, "direction", json_string(g->direction));
    json_object_set_new(c, "tier", json_string(g->tier));
    json_object_set_new(c, "method", json_string(g->method));
    json_object_set_new(c, "backend", json_string(g->backend));
    json_object_set_new(c, "alpha_s", json_real(g->fit.curve.alpha_s));
    json_object_set_new(c, "beta_Bps", json_real(g->fit.curve.beta_Bps));
    json_object_set_new(c, "r2", json_real(g->fit.r2));
    json_object_set_new(c, "max_rel_residual", json_real(g->fit.max_rel_residual));
    json_object_set_new(c, "points", json_integer((json_int_t)g->fit.points));
    json_object_set_new(c, "bytes_min", json_real(lo));
    json_object_set_new(c, "bytes_max", json_real(hi));
    json_object_set_new(c, "shapes", json_incref(g->shapes));
    if (g->fit.alpha_clamped) json_object_set_new(c, "alpha_clamped", json_true());
    return c;
}

/* The label: --label, else the probe's label for the chosen backend. */
static const char *default_label(const cal_state *s)
{
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(s->probe, "backends"), i, b) {
        const char *name = json_string_value(json_object_get(b, "name"));
        const char *label = json_string_value(json_object_get(b, "label"));
        if (name && label && !strcmp(name, s->backend)) return label;
    }
    return s->backend;
}

static int write_calibration(const cal_state *s, const char *out, const char *label, sim_err *err)
{
    json_t *root = json_object(), *curves = json_array(), *use = json_object();
    json_object_set_new(root, "kvsim_calibration", json_integer(1));
    json_object_set_new(root, "label", json_string(label ? label : default_label(s)));
    json_object_set_new(root, "backend", json_string(s->backend));
    json_object_set_new(root, "model", json_string("t(bytes) = alpha_s + bytes / beta_Bps; bytes = KV payload"));
    json_object_set_new(root, "probe", probe_info(s));
    for (int i = 0; i < s->ngroups; i++)
        if (s->groups[i].fitted) json_array_append_new(curves, curve_json(&s->groups[i]));
    json_object_set_new(root, "curves", curves);
    size_t n;
    const sim_calib_slot *slots = sim_calib_slots(&n);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const cal_group *g = choose(s, &slots[i]);
        if (g) json_object_set_new(use, slots[i].key, json_string(g->method));
        else
            rc = sim_errf(err, "%s: no fitted %s curve for %s (direction %s, tier %s)%s", s->probe_path,
                          s->backend, slots[i].key, slots[i].direction, slots[i].tier,
                          strcmp(slots[i].tier, "ssd") ? "" : "; run the probe with its SSD directions");
    }
    json_object_set_new(root, "use", use);
    json_object_set_new(root, "use_rule", json_string("fastest non-reference method at 32 MiB (one 256-token "
                                                      "LLaMA3.1-8B chunk) on the calibration's backend"));
    if (!rc) {
        char *text = json_dumps(use, JSON_COMPACT);
        printf("use: %s\n", text);
        free(text);
    }
    if (!rc && json_dump_file(root, out, JSON_INDENT(2) | JSON_REAL_PRECISION(9)))
        rc = sim_errf(err, "%s: cannot write the calibration file", out);
    json_decref(root);
    return rc;
}

/* ---- running the probe ---------------------------------------------------------- */

/* $KVSIM_PROBE, else kvsim-probe in this binary's directory or a parent
 * (build/kvsim → build/kvsim-probe; build/san/kvsim → build/kvsim-probe). */
static int find_probe(char *buf, size_t n, sim_err *err)
{
    const char *env = getenv("KVSIM_PROBE");
    if (env && *env) return snprintf(buf, n, "%s", env), 0;
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = 0;
        for (char *slash; (slash = strrchr(exe, '/')) != NULL;) {
            *slash = 0;
            if (snprintf(buf, n, "%s/kvsim-probe", exe) < (int)n && access(buf, X_OK) == 0) return 0;
        }
    }
    return sim_errf(err, "cannot find kvsim-probe (build it with `make probe`, or set KVSIM_PROBE)");
}

static int run_probe(const char *json_out, const char *extra, sim_err *err)
{
    char probe[PATH_MAX], args[2048];
    if (find_probe(probe, sizeof probe, err)) return -1;
    snprintf(args, sizeof args, "%s", extra ? extra : "");
    char *argv[64] = {probe, "--out", (char *)json_out};
    int argc = 3;
    for (char *save, *tok = strtok_r(args, " ", &save); tok && argc < 63; tok = strtok_r(NULL, " ", &save))
        argv[argc++] = tok;
    argv[argc] = NULL;
    fprintf(stderr, "kvsim calibrate: running %s --out %s%s%s\n", probe, json_out, extra ? " " : "", extra ? extra : "");
    pid_t pid;
    int st;
    if (posix_spawn(&pid, probe, NULL, NULL, argv, environ)) return sim_errf(err, "cannot run %s", probe);
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
        return sim_errf(err, "%s failed (status %d)", probe, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}

/* "kvsim calibrate: msg" on stderr, exit status 2. (sim_usage_error lives in
 * sim/cli/main.c, which test binaries do not link.) */
static int usage_error(const char *msg)
{
    fprintf(stderr, "kvsim %s: %s\n", CAL_CMD, msg);
    return SIM_EXIT_USAGE;
}

/* NAME.json → NAME.probe.json beside it. */
static void probe_path_for(const char *out, char *buf, size_t n)
{
    size_t len = strlen(out);
    if (len > 5 && !strcmp(out + len - 5, ".json")) snprintf(buf, n, "%.*s.probe.json", (int)(len - 5), out);
    else snprintf(buf, n, "%s.probe.json", out);
}

int cmd_calibrate(int argc, char **argv)
{
    enum { O_PROBE_JSON = 1, O_RUN_PROBE, O_PROBE_ARGS, O_OUT, O_LABEL, O_SHAPE };
    static const struct option opts[] = {
        {"probe-json", required_argument, 0, O_PROBE_JSON}, {"run-probe", no_argument, 0, O_RUN_PROBE},
        {"probe-args", required_argument, 0, O_PROBE_ARGS}, {"out", required_argument, 0, O_OUT},
        {"label", required_argument, 0, O_LABEL},           {"shape", required_argument, 0, O_SHAPE},
        {"help", no_argument, 0, 'h'},                      {0, 0, 0, 0},
    };
    const char *probe_json = NULL, *probe_args = NULL, *out = NULL, *label = NULL, *shape = NULL;
    int run = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'h': fputs(usage_text, stdout); return SIM_EXIT_OK;
        case O_PROBE_JSON: probe_json = optarg; break;
        case O_RUN_PROBE: run = 1; break;
        case O_PROBE_ARGS: probe_args = optarg; break;
        case O_OUT: out = optarg; break;
        case O_LABEL: label = optarg; break;
        case O_SHAPE: shape = optarg; break;
        default: return usage_error("bad option (see kvsim calibrate --help)");
        }
    }
    if (optind < argc) return usage_error("unexpected argument (see kvsim calibrate --help)");
    if (!out) return usage_error("--out FILE is required");
    if (!!probe_json == run) return usage_error("give exactly one of --probe-json FILE and --run-probe");
    if (label && strlen(label) >= sizeof((sim_calib *)0)->label)
        return usage_error("--label: longer than 127 characters");
    char raw[PATH_MAX];
    sim_err err;
    if (run) {
        probe_path_for(out, raw, sizeof raw);
        if (run_probe(raw, probe_args, &err)) {
            fprintf(stderr, "kvsim %s: %s\n", CAL_CMD, err.msg);
            return SIM_EXIT_INTERNAL;
        }
        probe_json = raw;
    }
    cal_state s = {.probe_path = probe_json};
    int rc = read_probe(&s, shape, &err);
    if (!rc) {
        printf("kvsim calibrate: %d curves from %s\n", s.ngroups, probe_json);
        fit_groups(&s);
        rc = write_calibration(&s, out, label, &err);
    }
    free_state(&s);
    if (rc) return usage_error(err.msg);
    printf("wrote %s\n", out);
    return SIM_EXIT_OK;
}
