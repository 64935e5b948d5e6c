/* sim/replay/check.c — the engine of `kvsim check` (see check.h): the table
 * of measurement kinds, re-running a baseline's measurements with traces
 * loaded once, comparing each number with its tolerance (or recording it),
 * and creating, reading and writing baseline files. Printing is the
 * command's (sim/cli/cmd_check.c), through sim_check_report. */
#include "sim/replay/check.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/outfile.h"
#include "sim/replay/hitrate.h"
#include "sim/store/evict/registry.h"

/* ---- measurement kinds -------------------------------------------------- */

static const sim_check_kind kinds[] = {
    {"hitrate", "cache-only replay hit rate at one capacity (kvsim hitrate)", sim_check_hitrate},
    {"run", "timed replay: SLO attainment, goodput, TTFT/TBT mean and percentiles, rejections (kvsim run)",
     sim_check_timed},
};

#define NKINDS (sizeof kinds / sizeof kinds[0])

static const sim_check_kind *added[8]; /* sim_check_add_kind's */
static size_t nadded;

void sim_check_add_kind(const sim_check_kind *k)
{
    for (size_t i = 0; i < nadded; i++)
        if (added[i] == k) return;
    if (nadded < sizeof added / sizeof added[0]) added[nadded++] = k;
}

size_t sim_check_kind_count(void) { return NKINDS + nadded; }

const sim_check_kind *sim_check_kind_at(size_t i)
{
    return i < NKINDS ? &kinds[i] : i < NKINDS + nadded ? added[i - NKINDS] : NULL;
}

static const sim_check_kind *kind_lookup(const char *name)
{
    for (size_t i = 0; i < sim_check_kind_count(); i++)
        if (!strcmp(sim_check_kind_at(i)->name, name)) return sim_check_kind_at(i);
    return NULL;
}

/* "hitrate, run, ...": the kinds a measurement may have, for its error. */
static const char *kind_names(char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sim_check_kind_count() && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%s", i ? ", " : "", sim_check_kind_at(i)->name);
    return buf;
}

/* What to do about a baseline that cannot be read. */
#define RECORD_HINT "record one with kvsim check --write-baseline FILE --trace TRACE"

/* Traces are loaded once per check run, keyed by path and block size. */
typedef struct loaded_trace {
    kv_replay_trace t;
    int block_tokens;
} loaded_trace;

struct sim_check_ctx {
    loaded_trace *traces;
    int ntraces;
    char *start_dir; /* the working directory kvsim started in, when the run moved to the baseline's folder */
    const sim_check_report *rep;
    char **notes; /* notes already given (each text once per run) */
    int nnotes;
};

static void ctx_free(sim_check_ctx *ctx)
{
    for (int i = 0; i < ctx->ntraces; i++) kv_replay_free(&ctx->traces[i].t);
    free(ctx->traces);
    for (int i = 0; i < ctx->nnotes; i++) free(ctx->notes[i]);
    free(ctx->notes);
}

static int ctx_trace(sim_check_ctx *ctx, const char *path, int block_tokens, kv_replay_trace **out, sim_err *err)
{
    for (int i = 0; i < ctx->ntraces; i++)
        if (ctx->traces[i].block_tokens == block_tokens && !strcmp(ctx->traces[i].t.path, path)) {
            *out = &ctx->traces[i].t;
            return 0;
        }
    kv_replay_trace t;
    if (kv_replay_load(&t, path, block_tokens, err)) return -1;
    ctx->traces = sim_xrealloc(ctx->traces, (size_t)(ctx->ntraces + 1) * sizeof *ctx->traces);
    ctx->traces[ctx->ntraces] = (loaded_trace){.t = t, .block_tokens = block_tokens};
    *out = &ctx->traces[ctx->ntraces++].t;
    return 0;
}

/* Tell the command a warning about the baseline, each distinct text once. */
static void ctx_note(sim_check_ctx *ctx, const char *text)
{
    for (int i = 0; i < ctx->nnotes; i++)
        if (!strcmp(ctx->notes[i], text)) return;
    ctx->notes = sim_xrealloc(ctx->notes, (size_t)(ctx->nnotes + 1) * sizeof *ctx->notes);
    ctx->notes[ctx->nnotes++] = sim_xstrdup(text);
    if (ctx->rep && ctx->rep->note) ctx->rep->note(ctx->rep->arg, text);
}

int sim_check_hitrate(sim_check_ctx *ctx, const json_t *args, json_t **got, sim_err *err)
{
    kv_hitrate_spec spec;
    kv_hitrate_spec_init(&spec);
    const char *key;
    const json_t *value;
    int rc = 0;
    json_object_foreach((json_t *)args, key, value)
    {
        if (rc == 0) rc = kv_hitrate_set_json(&spec, key, value, err);
    }
    char note[256];
    if (rc == 0 && kv_hitrate_deprecation(&spec, true, note, sizeof note)) ctx_note(ctx, note);
    if (rc == 0) rc = kv_hitrate_finish(&spec, err);
    if (rc == 0 && spec.ncapacity != 1) rc = sim_errf(err, "capacity_tokens: a hitrate measurement takes one value");
    kv_replay_trace *t;
    kv_replay_result r;
    if (rc == 0) rc = ctx_trace(ctx, spec.trace, spec.block_tokens, &t, err);
    if (rc == 0 && t->block_warning) { /* as kvsim hitrate and run say it (issue 40 item 2) */
        char warning[1024];
        snprintf(warning, sizeof warning, "warning: %s", t->block_warning);
        ctx_note(ctx, warning);
    }
    if (rc == 0) rc = kv_hitrate_point(t, &spec, spec.capacity[0], &r, err);
    if (rc == 0)
        *got = json_pack("{s:f, s:f}", "hit_rate_blocks", r.hit_rate_blocks, "hit_rate_tokens", r.hit_rate_tokens);
    kv_hitrate_spec_free(&spec);
    return rc;
}

/* ---- tolerances -----------------------------------------------------------
 *
 * A tolerance is a non-negative JSON number (absolute) or a string "X%"
 * with X a non-negative number and nothing else (relative to the expected
 * number: X/100 × |expected|; an expected 0 then allows no move). "worse"
 * is "higher", "lower" or absent (two-sided). A number is ok when its move
 * in the worse direction (either, when two-sided) is within tolerance,
 * improved when one-sided and beyond tolerance the other way. */

typedef struct check_tol {
    double value; /* absolute, or the fraction (2% -> 0.02) */
    bool relative;
    char text[24]; /* "0.002", "2%" */
} check_tol;

/* A JSON value as text for a message (at most 40 characters of it). */
static int bad_value(sim_err *err, const char *where, const json_t *v, const char *what)
{
    char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(10));
    sim_errf(err, "%s: %.40s is not %s", where, text ? text : "?", what);
    free(text);
    return -1;
}

static int parse_tol(const json_t *v, const char *where, check_tol *t, sim_err *err)
{
    const char *s = json_string_value(v);
    char *end = NULL;
    double x = json_is_number(v)                        ? json_number_value(v)
               : s && *s && !isspace((unsigned char)*s) ? strtod(s, &end)
                                                        : NAN;
    bool pct = s && end && end != s && !strcmp(end, "%");
    if ((json_is_number(v) || pct) && x >= 0 && isfinite(x)) {
        *t = (check_tol){.value = pct ? x / 100 : x, .relative = pct};
        if (pct) snprintf(t->text, sizeof t->text, "%.22s", s);
        else snprintf(t->text, sizeof t->text, "%g", x);
        return 0;
    }
    return bad_value(err, where, v,
                     "a non-negative number (an absolute tolerance) or a percentage such as \"2%\" (a relative one)");
}

static int parse_worse(const json_t *v, const char *where, int *out, sim_err *err)
{
    const char *s = json_string_value(v);
    if (!v) *out = 0;
    else if (s && !strcmp(s, "higher")) *out = 1;
    else if (s && !strcmp(s, "lower")) *out = -1;
    else return bad_value(err, where, v, "\"higher\" or \"lower\" (the direction in which a move is a regression)");
    return 0;
}

/* How a measurement's numbers are judged: its tolerance and "worse" (a
 * string, or an object metric -> string), else the file's. */
typedef struct check_rule {
    check_tol tol;
    int worse;         /* the measurement's (or the file's) single direction */
    const json_t *per; /* the measurement's "worse" object, or NULL */
} check_rule;

/* Half a unit in the last of the 6 significant digits a baseline keeps
 * (sim_check_save): what recording rounded away, which no move is. A
 * baseline recorded at tolerance 0 once failed its own next check. */
static double rounding(double x) { return x == 0 || !isfinite(x) ? 0 : 0.5 * pow(10, floor(log10(fabs(x))) - 5); }

/* ok / improved of row against expected x under rule (worse: this metric's). */
static void judge(sim_check_row *row, double x, const check_tol *t, int worse)
{
    double tol = t->relative ? t->value * fabs(x) : t->value, d = row->got - x;
    double bad = worse > 0 ? d : worse < 0 ? -d : fabs(d), slack = tol + rounding(x) + 1e-12;
    row->tolerance = tol;
    row->worse = worse;
    row->ok = bad <= slack;
    row->improved = worse && -bad > slack;
    snprintf(row->tolerance_text, sizeof row->tolerance_text, "%s%s", worse > 0 ? "+" : worse < 0 ? "-" : "", t->text);
}

/* ---- the check ---------------------------------------------------------- */

static void report_row(const sim_check_report *rep, const sim_check_row *row)
{
    if (rep && rep->row) rep->row(rep->arg, row);
}

/* This metric's direction under rule: the "worse" object's entry, else
 * the measurement's (or file's) single one. */
static int metric_worse(const check_rule *rule, const char *metric)
{
    const char *s = json_string_value(json_object_get(rule->per, metric));
    return !rule->per ? rule->worse : !s ? 0 : !strcmp(s, "higher") ? 1 : -1;
}

/* Compare one measurement's numbers with its "expect" object and report its
 * rows; when recording, update expect's numbers with what was got (or, with
 * no expect yet, record every number). */
static int compare(json_t *m, const char *name, json_t *got, const check_rule *rule, bool record,
                   const sim_check_report *rep, sim_check_totals *tot, sim_err *err)
{
    json_t *expect = json_object_get(m, "expect");
    if (expect && !json_is_object(expect)) return sim_errf(err, "measurement %s: \"expect\" must be an object", name);
    if (expect && json_object_size(expect) == 0) { /* nothing to check is not a pass (issue 40 item 7) */
        if (!record)
            return sim_errf(err,
                            "measurement %s: \"expect\" is empty: nothing to check (record its numbers with "
                            "--write-baseline, or name the metrics to check)",
                            name);
        expect = NULL;
    }
    if (!expect && !record)
        return sim_errf(err, "measurement %s: no \"expect\" numbers (record them with --write-baseline)", name);
    const char *metric;
    json_t *value;
    json_object_foreach((json_t *)rule->per, metric, value)
    {
        if (!json_object_get(got, metric))
            return sim_errf(err, "measurement %s: \"worse\": no metric '%s'", name, metric);
    }
    json_object_foreach(expect ? expect : got, metric, value)
    {
        json_t *g = json_object_get(got, metric);
        if (!g) return sim_errf(err, "measurement %s: no metric '%s'", name, metric);
        if (expect && !json_is_number(value) && !json_is_null(value))
            return sim_errf(err, "measurement %s: expect.%s must be a number or null", name, metric);
        /* null: undefined (a mean over no completed request); it matches only null */
        sim_check_row row = {.measurement = name,
                             .metric = metric,
                             .expected = expect ? value : NULL,
                             .got = json_is_number(g) ? json_number_value(g) : NAN,
                             .ok = true};
        judge(&row, json_number_value(value), &rule->tol, metric_worse(rule, metric));
        if (!expect) row.ok = true, row.improved = false;
        else if (json_is_null(value)) row.ok = isnan(row.got), row.improved = false;
        report_row(rep, &row);
        tot->numbers++;
        tot->moved += !row.ok;
        tot->improved += row.improved;
        if (record && expect) json_object_set(expect, metric, g);
    }
    if (record && !expect) json_object_set(m, "expect", got);
    return 0;
}

/* One recorded identity (trace fingerprint, config hash) against now. */
static int same_id(json_t *m, const char *name, const char *key, const char *now, const char *what, bool record,
                   sim_err *err)
{
    const char *then = json_string_value(json_object_get(m, key));
    if (record) json_object_set_new(m, key, json_string(now));
    else if (then && strcmp(then, now))
        return sim_errf(err,
                        "measurement %s: %s changed (%s %s, recorded %s): not a regression; re-record the baseline "
                        "with --write-baseline if the change is intended",
                        name, what, key, now, then);
    return 0;
}

/* The trace and (runs) the config are what the baseline recorded. */
static int same_setup(json_t *m, const char *name, const json_t *args, json_t *got, bool record, sim_err *err)
{
    const char *trace = json_string_value(json_object_get(args, "trace"));
    uint64_t fp;
    char hex[17];
    if (trace && sim_trace_fingerprint(trace, &fp, err) == 0) {
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)fp);
        if (same_id(m, name, "trace_fingerprint", hex, "the trace", record, err)) return -1;
    }
    const json_t *hash = json_object_get(got, SIM_CHECK_CONFIG_HASH);
    if (hash) {
        int rc = same_id(m, name, SIM_CHECK_CONFIG_HASH, json_string_value(hash), "the resolved config", record, err);
        json_object_del(got, SIM_CHECK_CONFIG_HASH);
        if (rc) return -1;
    }
    return 0;
}

/* ---- paths in a baseline --------------------------------------------------
 *
 * A baseline's "trace" and "config" paths are relative to the baseline's own
 * folder, so a baseline checked in beside its trace works from any working
 * directory: the measurements run with the working directory moved there
 * (restored after), which also keeps a run's resolved config — its
 * trace.path as written — and so its recorded hash the same wherever kvsim
 * is started. --write-baseline rewrites the paths for the folder of the file
 * it writes. A path that resolves only against the working directory (a
 * baseline written before this rule) still works, with a note. */

static const char *const path_args[] = {"trace", "config"};

static char *join(const char *dir, const char *path)
{
    size_t n = strlen(dir) + strlen(path) + 2;
    char *out = sim_xmalloc(n);
    snprintf(out, n, "%s/%s", dir, path);
    return out;
}

/* args as the measurement reads them (a copy), the working directory being
 * the baseline's folder: a relative path that is not there but is in the
 * directory kvsim was started from (a baseline written before paths were
 * relative to it) is named from the baseline's folder, with a note. */
static json_t *resolved_args(sim_check_ctx *ctx, const json_t *args)
{
    json_t *a = json_deep_copy(args);
    for (size_t k = 0; k < 2; k++) {
        const char *p = json_string_value(json_object_get(a, path_args[k]));
        if (!p || p[0] == '/' || !ctx->start_dir || access(p, F_OK) == 0) continue;
        char *old = join(ctx->start_dir, p), *rel = sim_path_relative(old, "."), note[1024];
        if (rel) { /* as the baseline will name it once re-recorded (rebase): the same config hash */
            snprintf(note, sizeof note,
                     "%s '%s' is not in the baseline's folder but in the working directory; paths in a baseline are "
                     "relative to its folder (re-record with --write-baseline)",
                     path_args[k], p);
            ctx_note(ctx, note);
            json_object_set_new(a, path_args[k], json_string(rel));
        }
        free(rel);
        free(old);
    }
    return a;
}

/* Rewrite the relative paths of every measurement from from_dir's view to
 * to_dir's (both folders exist; a path that does not resolve is kept). */
static void rebase(json_t *baseline, const char *from_dir, const char *to_dir)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(baseline, "measurements"), i, m)
    {
        json_t *args = json_object_get(m, "args");
        for (size_t k = 0; k < 2; k++) {
            const char *p = json_string_value(json_object_get(args, path_args[k]));
            if (!p || p[0] == '/') continue;
            char *full = join(from_dir, p);
            if (access(full, F_OK) && !access(p, F_OK)) free(full), full = sim_xstrdup(p); /* an old baseline */
            char *rel = sim_path_relative(full, to_dir);
            if (rel) json_object_set_new(args, path_args[k], json_string(rel));
            free(full);
            free(rel);
        }
    }
}

/* Every key of obj one of known (NULL-terminated): a misspelt one
 * ("tolerence") was once ignored, and the tolerance fell to 0. */
static int known_keys(const json_t *obj, const char *const *known, const char *where, sim_err *err)
{
    size_t n = 0;
    while (known[n]) n++;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        size_t i = 0;
        while (i < n && strcmp(key, known[i])) i++;
        if (i == n)
            return sim_errf(err, "%s: unknown key \"%s\"%s (docs/ci.md)", where, key, sim_did_you_mean(key, known, n));
    }
    return 0;
}

/* The rule of measurement m (named name) over the file's. */
static int measurement_rule(const json_t *m, const char *name, const check_rule *file, check_rule *rule, sim_err *err)
{
    char where[160];
    *rule = *file;
    const json_t *tol = json_object_get(m, "tolerance"), *worse = json_object_get(m, "worse");
    static const char *const keys[] = {
        "name", "kind", "args", "expect", "tolerance", "worse", "config_hash", "trace_fingerprint", "comment", NULL};
    snprintf(where, sizeof where, "measurement %.100s", name);
    if (known_keys(m, keys, where, err)) return -1;
    snprintf(where, sizeof where, "measurement %.100s: \"tolerance\"", name);
    if (tol && parse_tol(tol, where, &rule->tol, err)) return -1;
    snprintf(where, sizeof where, "measurement %.100s: \"worse\"", name);
    if (!json_is_object(worse)) return parse_worse(worse, where, worse ? &rule->worse : &(int){0}, err);
    const char *metric;
    const json_t *v;
    json_object_foreach((json_t *)worse, metric, v)
    {
        snprintf(where, sizeof where, "measurement %.100s: \"worse\".%.40s", name, metric);
        if (parse_worse(v, where, &(int){0}, err)) return -1;
    }
    rule->per = worse;
    return 0;
}

/* A measurement's findings (SIM_CHECK_WARNINGS) said, and taken out of
 * its numbers. */
static void take_warnings(sim_check_ctx *ctx, json_t *got)
{
    size_t i;
    const json_t *w;
    json_array_foreach(json_object_get(got, SIM_CHECK_WARNINGS), i, w) ctx_note(ctx, json_string_value(w));
    json_object_del(got, SIM_CHECK_WARNINGS);
}

static int run_measurement(sim_check_ctx *ctx, json_t *m, size_t i, const check_rule *file, bool record,
                           sim_check_totals *tot, sim_err *err)
{
    char fallback[32];
    snprintf(fallback, sizeof fallback, "#%zu", i);
    const char *name = json_string_value(json_object_get(m, "name"));
    if (!name) name = fallback;
    if (sim_has_control(name)) { /* it would reach the terminal raw in every row (issue 40 item 7) */
        char *q = sim_sh_word(name);
        sim_errf(err, "measurement %s holds a control character: give a printable name", q);
        free(q);
        return -1;
    }
    const char *kind_name = json_string_value(json_object_get(m, "kind"));
    const sim_check_kind *kind = kind_name ? kind_lookup(kind_name) : NULL;
    const json_t *args = json_object_get(m, "args");
    char known[256];
    if (!kind)
        return sim_errf(err, "measurement %s: unknown or missing kind '%s' (known: %s)", name,
                        kind_name ? kind_name : "", kind_names(known, sizeof known));
    if (!json_is_object(args)) return sim_errf(err, "measurement %s: \"args\" must be an object", name);
    check_rule rule;
    if (measurement_rule(m, name, file, &rule, err)) return -1;
    json_t *got, *a = resolved_args(ctx, args);
    sim_err why;
    int bad = kind->measure(ctx, a, &got, &why);
    if (!bad) take_warnings(ctx, got);
    if (bad) sim_errf(err, "measurement %s: %s", name, why.msg);
    else if ((bad = same_setup(m, name, a, got, record, err))) json_decref(got);
    json_decref(a);
    if (bad) return -1;
    int rc = compare(m, name, got, &rule, record, ctx->rep, tot, err);
    json_decref(got);
    return rc;
}

void sim_check_rebase_measurement(json_t *m, const char *from_dir, const char *to_dir)
{
    json_t *b = json_pack("{s:[O]}", "measurements", m);
    rebase(b, from_dir, to_dir);
    json_decref(b);
}

int sim_check_run(json_t *baseline, const char *base_dir, bool record, const sim_check_report *rep,
                  sim_check_totals *tot, sim_err *err)
{
    json_t *ms = json_object_get(baseline, "measurements");
    const json_t *tol = json_object_get(baseline, "tolerance");
    if (!json_is_array(ms)) return sim_errf(err, "baseline: \"measurements\" must be an array");
    if (json_array_size(ms) == 0) /* "all 0 numbers within tolerance" would pass a check of nothing */
        return sim_errf(err, "baseline: \"measurements\" is empty: nothing to check (add a measurement or record "
                             "one with --write-baseline)");
    static const char *const top[] = {"kvsim_baseline", "tolerance", "worse", "measurements", "comment", NULL};
    if (known_keys(baseline, top, "baseline", err)) return -1;
    check_rule file = {.tol = {.text = "0"}};
    if (tol && parse_tol(tol, "baseline: \"tolerance\"", &file.tol, err)) return -1;
    if (parse_worse(json_object_get(baseline, "worse"), "baseline: \"worse\"", &file.worse, err)) return -1;
    sim_check_ctx ctx = {.rep = rep};
    int here = -1; /* measurements run in the baseline's folder: its paths mean what they say */
    if (base_dir && strcmp(base_dir, ".")) {
        ctx.start_dir = getcwd(NULL, 0);
        here = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (here < 0 || !ctx.start_dir || chdir(base_dir)) {
            int e = errno;
            if (here >= 0) close(here);
            free(ctx.start_dir);
            bool absent = e == ENOENT;
            return sim_errf(err, "baseline folder %s: %s%s%s%s", base_dir, strerror(e),
                            absent ? " (create it first: mkdir -p " : "", absent ? base_dir : "", absent ? ")" : "");
        }
    }
    if (rep && rep->begin) rep->begin(rep->arg);
    size_t i;
    json_t *m;
    int rc = 0;
    json_array_foreach(ms, i, m)
    {
        if (rc == 0)
            rc = json_is_object(m) ? run_measurement(&ctx, m, i, &file, record, tot, err)
                                   : sim_errf(err, "baseline: measurement #%zu is not an object", i);
    }
    ctx_free(&ctx);
    if (here >= 0 && fchdir(here) && rc == 0) rc = sim_errf(err, "cannot return to %s", ctx.start_dir);
    if (here >= 0) close(here);
    free(ctx.start_dir);
    return rc;
}

/* ---- baseline files ----------------------------------------------------- */

static char *all_policies(void)
{
    char buf[512] = "";
    for (size_t i = 0; i < kv_evict_count(); i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? "," : "", kv_evict_at(i)->name);
    return sim_xstrdup(buf);
}

/* Every policy × capacity as hitrate measurements on one trace. */
int sim_check_new_baseline(const sim_check_new_opts *o, json_t **out, sim_err *err)
{
    if (!o->trace) return sim_errf(err, "--write-baseline without --baseline needs --trace FILE");
    json_t *ms = json_array();
    char *pols = o->policies ? sim_xstrdup(o->policies) : all_policies(), *caps = NULL, *sp = NULL, *sc = NULL;
    int rc = 0;
    for (char *p = strtok_r(pols, ",", &sp); p && rc == 0; p = strtok_r(NULL, ",", &sp)) {
        const kv_evict_entry *e;
        rc = kv_evict_find(p, &e, err);
        free(caps);
        caps = sim_xstrdup(o->capacities);
        for (char *c = strtok_r(caps, ",", &sc); c && rc == 0; c = strtok_r(NULL, ",", &sc)) {
            char name[96];
            snprintf(name, sizeof name, "%s %s", p, c);
            json_array_append_new(ms, json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "name", name, "kind", "hitrate",
                                                "args", "trace", o->trace, "policy", p, "capacity_tokens", c));
        }
    }
    free(pols);
    free(caps);
    *out = json_pack("{s:i, s:f, s:o}", "kvsim_baseline", SIM_CHECK_VERSION, "tolerance", o->tolerance, "measurements",
                     ms);
    return rc;
}

int sim_check_load(const char *path, json_t **out, sim_err *err)
{
    json_error_t je;
    *out = json_load_file(path, 0, &je);
    if (!*out) return sim_json_file_errf(err, "", path, je.line, je.text, RECORD_HINT);
    if (!json_is_object(*out)) return sim_errf(err, "%s: a baseline is a JSON object (" RECORD_HINT ")", path);
    const json_t *v = json_object_get(*out, "kvsim_baseline");
    if (json_is_integer(v) && json_integer_value(v) == SIM_CHECK_VERSION) return 0;
    char *text = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    sim_errf(err, "%s: \"kvsim_baseline\": %s%.40s%s; this kvsim reads version %d (" RECORD_HINT ")", path,
             text ? "" : "missing", text ? text : "", text ? " is not a baseline format it knows" : "",
             SIM_CHECK_VERSION);
    free(text);
    return -1;
}

int sim_check_save(const json_t *baseline, const char *base_dir, const char *path, sim_err *err)
{
    sim_outfile o;
    if (sim_outfile_open(&o, path, err)) return -1;
    json_t *copy = json_deep_copy(baseline);
    char *dir = sim_xstrdup(path);
    rebase(copy, base_dir ? base_dir : ".", dirname(dir));
    free(dir);
    int bad = json_dumpf(copy, o.f, JSON_INDENT(2) | JSON_REAL_PRECISION(6)); /* judge allows for it */
    json_decref(copy);
    if (bad) {
        sim_outfile_abort(&o);
        return sim_errf(err, "cannot write %s: %s", path, strerror(errno ? errno : EIO));
    }
    return sim_outfile_close(&o, err);
}
