/* sim/cost/optable.c — loading and interpolating measured per-operation
 * latency tables (see sim/cost/optable.h for the rule). */
#include "sim/cost/optable.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "sim/cost/optable_int.h"
#include "sim/index/keymap.h"
#include "sim/infile.h"

enum { MAX_NOTES = 32 };

#ifndef KVSIM_GIT
#define KVSIM_GIT "unknown"
#endif
/* This parser's identity, for the cache (optable_cache.c): the build's
 * revision and when this file was compiled, so that a changed parser or
 * table spec never reads files an older one wrote. */
static const char PARSER[] = KVSIM_GIT " " __DATE__ " " __TIME__;

/* The tables after T_NCCL are optional: fp8_block GEMM and MoE rows kept in
 * files of their own (configs/optables/README.md), and MLA, measured as the
 * attention backend alone (vLLM 0.14.0's context_mla / generation_mla) or as
 * the whole attention module (0.19.0's mla_*_module). */
enum { T_GEMM, T_CTX, T_GEN, T_MOE, T_AR, T_NCCL, T_GEMMB, T_MOEB, T_CTX_MLA, T_GEN_MLA, T_CTX_MLAM, T_GEN_MLAM, T_N };

static const table_spec specs[T_N] = {
    {"gemm", {"gemm_dtype", "n", "k"}, "m", NULL, {1, 2}, NULL},
    {"context_attention",
     {"attn_dtype", "kv_cache_dtype", "num_heads", "num_key_value_heads", "head_dim", "batch_size"},
     "isl",
     NULL,
     {5, -1},
     "window_size"},
    {"generation_attention",
     {"attn_dtype", "kv_cache_dtype", "num_heads", "num_key_value_heads", "head_dim", "batch_size"},
     "isl",
     "step",
     {5, -1},
     "window_size"},
    {"moe",
     {"moe_dtype", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size", "distribution"},
     "num_tokens",
     NULL,
     {-1, -1},
     NULL},
    {"custom_allreduce", {"num_gpus", "backend"}, "message_size", NULL, {-1, -1}, NULL},
    {"nccl", {"op_name", "nccl_dtype", "num_gpus"}, "message_size", NULL, {-1, -1}, NULL},
    {"gemm_fp8_block", {"gemm_dtype", "n", "k"}, "m", NULL, {1, 2}, NULL},
    {"moe_fp8_block",
     {"moe_dtype", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size", "distribution"},
     "num_tokens",
     NULL,
     {-1, -1},
     NULL},
    {"context_mla",
     {"mla_dtype", "kv_cache_dtype", "num_heads", "tp_size", "batch_size"},
     "isl",
     NULL,
     {4, -1},
     "step"},
    {"generation_mla",
     {"mla_dtype", "kv_cache_dtype", "num_heads", "tp_size", "batch_size"},
     "isl",
     "step",
     {4, -1},
     NULL},
    {"mla_context_module",
     {"mla_dtype", "kv_cache_dtype", "gemm_type", "num_heads", "batch_size"},
     "isl",
     NULL,
     {4, -1},
     "step"},
    {"mla_generation_module",
     {"mla_dtype", "kv_cache_dtype", "gemm_type", "num_heads", "batch_size"},
     "isl",
     "step",
     {4, -1},
     NULL},
};

/* Where a query falls among a curve's points or a key's values: see
 * bracket. */
typedef struct span {
    int lo, hi;
    double w; /* value = (1 − w) · at(lo) + w · at(hi) */
    int side; /* 0 inside, 1 above the largest, -1 below the smallest */
} span;

/* The batches whose place among the measured ones an attention memo keeps
 * (a decode step asks with its count of sequences, every pass). */
enum { BATCH_MEMO = 1024 };

/* The curves of one attention shape by batch (a memo: a run asks for one
 * model's heads again and again, so the keys are formatted and searched
 * once per shape, not per lookup). */
typedef struct attn_memo {
    char kv_dtype[16];
    int heads, kv_heads, head_dim;
    /* [nvals] each, NULL where that batch is not measured: the curves at
     * the measured head counts that bracket `heads` (the same twice when
     * it is measured), blended (1 − w) : w; scale multiplies the result
     * (≠ 1 only past the measured head counts: time ∝ query heads) */
    const curve **by_batch[2];
    int *hint[2]; /* [nvals] each: the pair each curve's last lookup found (bracket_hint) */
    double w, scale;
    unsigned said;             /* the notes already recorded for this shape: bit (axis · 3 + side + 1) */
    span batch_at[BATCH_MEMO]; /* bracket of a whole batch b among the measured ones, once known */
    bool batch_known[BATCH_MEMO];
} attn_memo;

/* The corner curves of one GEMM shape (n, k) of a dtype: a run asks for
 * a model's few projections again and again, each at another m, so their
 * brackets and keys are found once per shape, as attn_memo's. */
enum { GEMM_MEMO = 16 };
typedef struct gemm_memo {
    bool set;
    char dtype[16];
    double n, k;
    span sn, sk;
    const curve *c[2][2]; /* [n side][k side], NULL where not measured */
} gemm_memo;

/* A fused-MoE query's key columns (set: one was asked). */
typedef struct moe_query {
    bool set;
    char dtype[16], dist[32];
    int hidden, inter, topk, experts, tp, ep;
} moe_query;

/* The curves of one MLA query, by the table's batch values (NULL where
 * that batch is not measured): resolved once per query, as attn_memo. */
typedef struct mla_memo {
    bool set;
    char kv_dtype[16], gemm[16];
    int heads, tp;
    const curve **by_batch;
} mla_memo;

struct sim_optable {
    char system[64], engine[64], device[64]; /* device: meta.json's, "" when absent */
    attn_memo memo[2];                       /* context, generation */
    mla_memo mla[4];                         /* T_CTX_MLA, T_GEN_MLA, T_CTX_MLAM, T_GEN_MLAM */
    gemm_memo gemm[GEMM_MEMO];               /* filled in turn; the oldest replaced when full */
    int gemm_next;
    moe_query moe_last; /* the last fused-MoE query and its curve (a run asks for one shape) */
    const curve *moe_curve;
    const curve *ar_curve[9][2]; /* all-reduce by GPU count 1..8, eager or graph, once found */
    bool ar_known[9][2];
    double mem_Bps, mem_latency_s;
    sim_gpu_roof roof;
    double gemm_max_m[2], gemm_max_n[2]; /* sim_optable_gemm_limits of gemm and gemm_fp8_block, found at load */
    table t[T_N];
    char *notes[MAX_NOTES];
    char *note_kinds[MAX_NOTES];
    bool note_glitch[MAX_NOTES]; /* a dropped glitch, not a lookup outside the grid */
    int nnotes;
    bool quiet;
    double glitch_ratio;  /* engine.measured.glitch_ratio the curves were cleaned at */
    long points, dropped; /* measured points loaded, and dropped as glitches */
    char dir[PATH_MAX];   /* the folder, and meta.json's "files", for the families loaded later */
    json_t *files;
    unsigned loaded; /* the optional families loaded (SIM_OPT_MOE, SIM_OPT_MLA) */
    int cached;      /* tables read from the cache (optable_cache.c), not parsed */
};

/* ---- curves and tables ---------------------------------------------------- */

static int curve_cmp(const void *a, const void *b) { return strcmp(((const curve *)a)->key, ((const curve *)b)->key); }

static curve *table_find(const table *t, const char *key)
{
    curve probe = {.key = (char *)key};
    if (!t->n) return NULL;
    return bsearch(&probe, t->c, (size_t)t->n, sizeof *t->c, curve_cmp);
}

/* During loading curves are appended unsorted and found by the hash of
 * their key; two keys of one hash (never seen: 64 bits) fall back to a
 * scan, the later one unindexed. */
static curve *table_get(table *t, const char *key)
{
    uint64_t h = XXH3_64bits(key, strlen(key));
    if (!t->index.e) sim_keymap_init(&t->index, 1024);
    int64_t at = sim_keymap_get(&t->index, h);
    if (at >= 0 && !strcmp(t->c[at].key, key)) return &t->c[at];
    for (int i = t->n - 1; at >= 0 && i >= 0; i--)
        if (!strcmp(t->c[i].key, key)) return &t->c[i];
    if (at < 0) sim_keymap_put(&t->index, h, t->n);
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->c = realloc(t->c, (size_t)t->cap * sizeof *t->c);
    }
    t->c[t->n] = (curve){.key = strdup(key)};
    return &t->c[t->n++];
}

static void curve_add(curve *c, double x, double y)
{
    for (int i = 0; i < c->n; i++)
        if (c->x[i] == x) return; /* a repeated shape: the first row counts (as AIConfigurator's reader) */
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 8;
        c->x = realloc(c->x, (size_t)c->cap * sizeof *c->x);
        c->y = realloc(c->y, (size_t)c->cap * sizeof *c->y);
    }
    c->x[c->n] = x, c->y[c->n] = y, c->n++;
}

static void curve_sort(curve *c)
{
    for (int i = 1; i < c->n; i++) /* insertion sort: curves are short and mostly sorted */
        for (int j = i; j > 0 && c->x[j - 1] > c->x[j]; j--) {
            double tx = c->x[j], ty = c->y[j];
            c->x[j] = c->x[j - 1], c->y[j] = c->y[j - 1];
            c->x[j - 1] = tx, c->y[j - 1] = ty;
        }
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The distinct values of key column `col` over every curve. */
static void collect_vals(table *t, int slot, int col)
{
    double *v = malloc((size_t)(t->n ? t->n : 1) * sizeof *v);
    int n = 0;
    for (int i = 0; i < t->n; i++) {
        const char *f = t->c[i].key;
        for (int k = 0; k < col && f; k++) f = strchr(f, '|'), f = f ? f + 1 : NULL;
        if (f) v[n++] = strtod(f, NULL);
    }
    qsort(v, (size_t)n, sizeof *v, dbl_cmp);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (m == 0 || v[i] != v[m - 1]) v[m++] = v[i];
    t->vals[slot] = v, t->nvals[slot] = m;
}

static void table_finish(table *t)
{
    sim_keymap_free(&t->index); /* indices change below */
    for (int i = 0; i < t->n; i++) curve_sort(&t->c[i]);
    if (t->n) qsort(t->c, (size_t)t->n, sizeof *t->c, curve_cmp);
    for (int s = 0; s < MAX_BRACKET; s++)
        if (t->spec->bracket[s] >= 0) collect_vals(t, s, t->spec->bracket[s]);
}

static void table_free(table *t)
{
    for (int i = 0; i < t->n; i++) {
        curve *c = &t->c[i];
        free(c->key), free(c->x), free(c->y), free(c->gx), free(c->gy), free(c->gv);
    }
    free(t->c);
    for (int s = 0; s < MAX_BRACKET; s++) free(t->vals[s]);
    sim_keymap_free(&t->index);
}

/* ---- CSV ------------------------------------------------------------------ */

/* A key column's value as the lookups spell it, appended to out at *used
 * (n bytes in all): numbers as %.10g (so "4096" and "4096.0" are one key),
 * text as it is. Integers and text are copied, not formatted: a table's
 * every row passes here. */
static void key_part(char *out, size_t n, size_t *used, const char *field)
{
    size_t d = strspn(field, "0123456789"), len = strlen(field);
    bool integer = d == len && d && d <= 10 && (field[0] != '0' || d == 1); /* %.10g spells it so */
    char *end = (char *)field;
    double v = integer ? 0 : strtod(field, &end);
    if (!integer && end != field && *end == '\0') { /* another number */
        *used += (size_t)snprintf(out + *used, n - *used, "%.10g", v);
        if (*used >= n) *used = n - 1;
        return;
    }
    if (len > n - 1 - *used) len = n - 1 - *used; /* an integer or text, as it is */
    memcpy(out + *used, field, len);
    *used += len;
    out[*used] = '\0';
}

static int split_fields(char *line, char **f, int max)
{
    int n = 0;
    line[strcspn(line, "\r\n")] = '\0';
    for (char *p = line; n < max;) {
        f[n++] = p;
        p = strchr(p, ',');
        if (!p) break;
        *p++ = '\0';
    }
    return n;
}

typedef struct csv_cols {
    int key[MAX_KEY], x, x_plus, latency, nkeys, zero;
} csv_cols;

static int find_col(char **f, int n, const char *name)
{
    for (int i = 0; name && i < n; i++)
        if (!strcmp(f[i], name)) return i;
    return -1;
}

static int header_cols(const table_spec *s, char **f, int n, csv_cols *c, const char *path, sim_err *err)
{
    const char *need = NULL;
    c->nkeys = 0;
    for (int k = 0; k < MAX_KEY && s->keys[k]; k++, c->nkeys++)
        if ((c->key[k] = find_col(f, n, s->keys[k])) < 0) need = s->keys[k];
    c->x = find_col(f, n, s->x);
    c->x_plus = s->x_plus ? find_col(f, n, s->x_plus) : -1;
    c->latency = find_col(f, n, "latency");
    c->zero = s->zero ? find_col(f, n, s->zero) : -1;
    if (c->x < 0) need = s->x;
    if (s->x_plus && c->x_plus < 0) need = s->x_plus;
    if (c->latency < 0) need = "latency";
    if (need)
        return sim_errf(err, "%s:1: no column '%s' in the header: is this a %s table as AIConfigurator writes it?",
                        path, need, s->name);
    return 0;
}

/* A number field. Whole numbers of up to 15 digits, most of the tables'
 * x values, are read digit by digit (exact, as strtod would give them);
 * the rest by strtod. */
static int parse_num(const char *s, double *v)
{
    size_t d = strspn(s, "0123456789");
    if (d && d <= 15 && !s[d]) {
        int64_t i = 0;
        for (size_t k = 0; k < d; k++) i = 10 * i + (s[k] - '0');
        *v = (double)i;
        return 0;
    }
    char *end;
    *v = strtod(s, &end);
    return end != s && *end == '\0' && isfinite(*v) ? 0 : -1;
}

static int add_row(table *t, const csv_cols *c, char **f, int nf, const char *path, long line, sim_err *err)
{
    char key[512] = "";
    size_t used = 0;
    double x, plus = 0, y;
    int need = c->latency;
    for (int k = 0; k < c->nkeys; k++) need = c->key[k] > need ? c->key[k] : need;
    if (nf <= need || nf <= c->x || nf <= c->zero)
        return sim_errf(err, "%s:%ld: %d fields, fewer than the header's", path, line, nf);
    if (c->zero >= 0 && strtod(f[c->zero], NULL) != 0) return 0; /* a sliding-window kernel: not modelled */
    if (parse_num(f[c->x], &x) || (c->x_plus >= 0 && parse_num(f[c->x_plus], &plus)) || parse_num(f[c->latency], &y) ||
        y < 0)
        return sim_errf(err, "%s:%ld: '%s' or its latency '%s' is not a number (milliseconds, >= 0)", path, line,
                        f[c->x], f[c->latency]);
    for (int k = 0; k < c->nkeys; k++) {
        if (k && used < sizeof key - 1) key[used++] = '|', key[used] = '\0';
        key_part(key, sizeof key, &used, f[c->key[k]]);
    }
    curve_add(table_get(t, key), x + plus, y);
    return 0;
}

static int load_csv(table *t, const char *path, sim_err *err)
{
    sim_infile *in;
    char *line, *f[64];
    size_t len;
    long lineno = 0;
    csv_cols cols = {.nkeys = 0};
    int rc = 0, got;
    if (sim_infile_open(&in, path, NULL, err)) return -1;
    while (rc == 0 && (got = sim_infile_getline(in, &line, &len, err)) > 0) {
        int nf = split_fields(line, f, 64);
        if (++lineno == 1) rc = header_cols(t->spec, f, nf, &cols, path, err);
        else if (nf > 1) rc = add_row(t, &cols, f, nf, path, lineno, err);
    }
    sim_infile_close(in);
    if (rc == 0 && got < 0) rc = -1;
    if (rc == 0 && lineno < 2) rc = sim_errf(err, "%s: no rows", path);
    return rc;
}

/* ---- loading a system ------------------------------------------------------ */

static void find_gemm_limits(sim_optable *t);

static int read_meta(sim_optable *t, const char *dir, json_t **meta, sim_err *err)
{
    char path[PATH_MAX + 16];
    json_error_t je;
    snprintf(path, sizeof path, "%s/meta.json", dir);
    *meta = json_load_file(path, 0, &je);
    if (!*meta)
        return sim_errf(err,
                        "%s:%d: %s (hardware.optables and hardware.allreduce_optables name folders of measured tables: "
                        "configs/optables/*)",
                        path, je.line, je.text);
    const char *sys = json_string_value(json_object_get(*meta, "system"));
    const char *eng = json_string_value(json_object_get(*meta, "engine"));
    json_t *gpu = json_object_get(*meta, "gpu");
    double bw = json_number_value(json_object_get(gpu, "mem_bw"));
    double scale = json_number_value(json_object_get(gpu, "mem_bw_empirical_scaling_factor"));
    if (!sys || !eng || !(bw > 0) || !(scale > 0))
        return sim_errf(err, "%s: needs \"system\", \"engine\" and gpu.mem_bw, gpu.mem_bw_empirical_scaling_factor",
                        path);
    snprintf(t->system, sizeof t->system, "%s", sys);
    snprintf(t->engine, sizeof t->engine, "%s", eng);
    const char *dev = json_string_value(json_object_get(*meta, "device"));
    snprintf(t->device, sizeof t->device, "%s", dev ? dev : "");
    t->mem_Bps = bw * scale;
    t->mem_latency_s = json_number_value(json_object_get(gpu, "mem_empirical_constant_latency"));
    const json_t *node = json_object_get(*meta, "node");
    t->roof = (sim_gpu_roof){bw, json_number_value(json_object_get(gpu, "bfloat16_tc_flops")), t->mem_latency_s,
                             json_number_value(json_object_get(node, "intra_node_bw")),
                             json_number_value(json_object_get(node, "p2p_latency"))};
    return 0;
}

/* The family a table belongs to: 0 for those every model prices with
 * (GEMMs, attention, collectives), loaded with the tables; the fused-MoE
 * and MLA tables (44% of an H100's rows) only when a model has them
 * (sim_optable_need): a dense model's run skips parsing them. */
static unsigned family_of(int i) { return i == T_MOE || i == T_MOEB ? SIM_OPT_MOE : i >= T_CTX_MLA ? SIM_OPT_MLA : 0; }

/* Whether table i is among the families in `want` not loaded yet (want 0:
 * the core tables). */
static bool wanted(const sim_optable *t, int i, unsigned want)
{
    unsigned fam = family_of(i);
    return fam ? (want & fam) && !(t->loaded & fam) : want == 0;
}

/* A family that failed to load is left as if never asked for, so that
 * asking again reads it afresh (and fails the same way). */
static int unload(sim_optable *t, unsigned want, long points, long dropped)
{
    for (int i = 0; i < T_N; i++)
        if (wanted(t, i, want)) table_free(&t->t[i]), memset(&t->t[i], 0, sizeof t->t[i]);
    t->points = points, t->dropped = dropped;
    return -1;
}

/* Load the tables of the families in `want` (0: the core ones) not loaded
 * yet, then clean their curves. */
static int load_tables(sim_optable *t, unsigned want, sim_err *err)
{
    long points = t->points, dropped = t->dropped;
    int cached0 = t->cached;
    for (int i = 0; i < T_N; i++) {
        if (!wanted(t, i, want)) continue;
        t->t[i].spec = &specs[i];
        const char *file = json_string_value(json_object_get(t->files, specs[i].name));
        if (!file && i < T_AR && i != T_MOE)
            return sim_errf(err, "%s/meta.json: files.%s is missing: the measured mode needs GEMM and attention tables",
                            t->dir, specs[i].name);
        char path[PATH_MAX + 256], slot[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", t->dir, file ? file : "");
        bool cache = file && sim_optable_cache_slot(path, specs[i].name, PARSER, slot, sizeof slot);
        bool cached = cache && sim_optable_cache_read(&t->t[i], slot);
        t->cached += cached;
        if (!cached && file && load_csv(&t->t[i], path, err)) {
            t->cached = cached0;
            return unload(t, want, points, dropped);
        }
        if (!cached) table_finish(&t->t[i]);
        if (cache && !cached) sim_optable_cache_write(&t->t[i], slot);
        for (int j = 0; j < t->t[i].n; j++) {
            t->points += t->t[i].c[j].n;
            t->dropped += sim_optable_curve_clean(&t->t[i].c[j], t->glitch_ratio);
        }
    }
    t->loaded |= want;
    return 0;
}

int sim_optable_load(const char *dir, double glitch_ratio, sim_optable **out, sim_err *err)
{
    sim_optable *t = calloc(1, sizeof *t);
    t->glitch_ratio = glitch_ratio;
    snprintf(t->dir, sizeof t->dir, "%s", dir);
    json_t *meta = NULL;
    int rc = read_meta(t, dir, &meta, err);
    if (!rc) t->files = json_incref(json_object_get(meta, "files"));
    json_decref(meta);
    if (!rc) rc = load_tables(t, 0, err);
    if (!rc) find_gemm_limits(t);
    if (rc) {
        sim_optable_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int sim_optable_need(sim_optable *t, unsigned families, sim_err *err)
{
    families &= (SIM_OPT_MOE | SIM_OPT_MLA) & ~t->loaded;
    return families ? load_tables(t, families, err) : 0;
}

/* A lookup in a family never loaded is a caller's bug, not a shape the
 * tables lack: say so rather than price it as unmeasured. */
static void need_loaded(const sim_optable *t, unsigned fam)
{
    if (t->loaded & fam) return;
    fprintf(stderr, "kvsim: internal error: %s tables of %s looked up before sim_optable_need\n",
            fam == SIM_OPT_MOE ? "fused-MoE" : "MLA", t->dir);
    abort();
}

/* What an attention memo owns: its curves by batch and their hints. */
static void attn_memo_clear(attn_memo *m)
{
    for (int h = 0; h < 2; h++) free(m->by_batch[h]), free(m->hint[h]);
}

void sim_optable_free(sim_optable *t)
{
    if (!t) return;
    for (int i = 0; i < T_N; i++) table_free(&t->t[i]);
    for (int i = 0; i < 2; i++) attn_memo_clear(&t->memo[i]);
    for (int i = 0; i < 4; i++) free(t->mla[i].by_batch);
    for (int i = 0; i < t->nnotes; i++) free(t->notes[i]), free(t->note_kinds[i]);
    json_decref(t->files);
    free(t);
}

void sim_optable_clear_notes(sim_optable *t)
{
    for (int i = 0; i < t->nnotes; i++) free(t->notes[i]), free(t->note_kinds[i]);
    t->nnotes = 0;
    for (int i = 0; i < 2; i++) t->memo[i].said = 0;
}

const char *sim_optable_device(const sim_optable *t) { return t->device; }

int sim_optable_cached(const sim_optable *t) { return t->cached; }

const char *sim_optable_system(const sim_optable *t) { return t->system; }

const char *sim_optable_engine(const sim_optable *t) { return t->engine; }

void sim_optable_roof(const sim_optable *t, sim_gpu_roof *out) { *out = t->roof; }

double sim_optable_mem_s(const sim_optable *t, double bytes)
{
    return bytes > 0 ? t->mem_latency_s + bytes / t->mem_Bps : 0;
}

void sim_optable_quiet(sim_optable *t, bool quiet) { t->quiet = quiet; }

void sim_optable_glitches(const sim_optable *t, long *dropped, long *points)
{
    *dropped = t->dropped, *points = t->points;
}

double sim_optable_glitch_ratio(const sim_optable *t) { return t->glitch_ratio; }

bool sim_optable_note_is_glitch(const sim_optable *t, int i) { return i >= 0 && i < t->nnotes && t->note_glitch[i]; }

const char *const *sim_optable_notes(const sim_optable *t, int *n)
{
    *n = t->nnotes;
    return (const char *const *)t->notes;
}

/* ---- lookups ---------------------------------------------------------------- */

/* Whether a note of this kind is recorded. */
static bool noted(const sim_optable *t, const char *kind)
{
    for (int i = 0; i < t->nnotes; i++)
        if (!strcmp(t->note_kinds[i], kind)) return true;
    return false;
}

/* Record a lookup outside the grid once per kind (op, axis, side). */
static void note(sim_optable *t, const char *kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note(sim_optable *t, const char *kind, const char *fmt, ...)
{
    if (t->quiet || noted(t, kind) || t->nnotes == MAX_NOTES) return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    t->note_kinds[t->nnotes] = strdup(kind);
    t->note_glitch[t->nnotes] = !strncmp(kind, "glitch|", 7);
    t->notes[t->nnotes++] = strdup(buf);
}

/* Where q falls among n ascending values: the bracketing pair, or the last
 * pair (extended) above them, or the first value alone below them. */
static span bracket(const double *v, int n, double q)
{
    if (n == 1 || q <= v[0]) return (span){0, 0, 0, q < v[0] ? -1 : 0};
    int lo = 0, hi = n - 1;
    if (q >= v[hi]) return (span){hi - 1, hi, (q - v[hi - 1]) / (v[hi] - v[hi - 1]), q > v[hi]};
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (v[mid] <= q) lo = mid;
        else hi = mid;
    }
    return (span){lo, hi, (q - v[lo]) / (v[hi] - v[lo]), 0};
}

/* bracket, trying first the pair a previous lookup found (*hint, updated):
 * a run's decode steps ask one curve for a context a token longer each
 * time, so the pair mostly still holds. Where v[0] < q and v[h] <= q <
 * v[h + 1], h is the only such index of an ascending array, the one the
 * search would find: the same span, bit for bit (q = v[0] is bracket's
 * own case, left to it). */
static span bracket_hint(const double *v, int n, double q, int *hint)
{
    int h = *hint;
    if (h >= 0 && h + 1 < n && q > v[0] && v[h] <= q && q < v[h + 1])
        return (span){h, h + 1, (q - v[h]) / (v[h + 1] - v[h]), 0};
    span s = bracket(v, n, q);
    *hint = s.lo;
    return s;
}

/* What lookups along curves met: the side of the grid one left by (0
 * inside, 1 above the largest, -1 below the smallest), and a point dropped
 * as a glitch that one priced across (gc NULL: none). */
typedef struct probe {
    int side;
    const curve *gc;
    int gi;
} probe;

/* The curve at x: piecewise linear inside; past its last point the last
 * segment extended (power 0) or the last point times (x / x_last)^power
 * (prefill attention: causal work grows with the square of the sequence;
 * docs/measured.md §2); below its first, the first. hint: see
 * bracket_hint (NULL: none). */
static double curve_at(const curve *c, double x, probe *p, double power, int *hint)
{
    span s = hint ? bracket_hint(c->x, c->n, x, hint) : bracket(c->x, c->n, x);
    if (s.side) p->side = s.side;
    if (s.side > 0 && power > 0) return c->y[c->n - 1] * pow(x / c->x[c->n - 1], power);
    if (c->gn && !p->gc && s.hi > s.lo && s.w > 0 && (s.w < 1 || s.side > 0)) {
        int g = sim_optable_curve_glitch_in(c, s.lo, s.hi);
        if (g >= 0) p->gc = c, p->gi = g;
    }
    return (1 - s.w) * c->y[s.lo] + s.w * c->y[s.hi];
}

/* Say once per dropped point that a lookup (`what`: the op and its shape)
 * was priced across it. */
static void glitch_note(sim_optable *t, const char *what, const char *axis, const probe *p)
{
    if (!p->gc || t->quiet) return;
    const curve *c = p->gc;
    int g = p->gi;
    char kind[600];
    snprintf(kind, sizeof kind, "glitch|%s|%.10g", c->key, c->gx[g]);
    note(t, kind,
         "%s on %s: the measurement at %s=%.10g (%.4g ms) lies %.1f times outside both its neighbours on its curve "
         "(engine.measured.glitch_ratio = %g), a glitch of the collection: dropped, priced between its neighbours "
         "(docs/measured.md §2)",
         what, t->system, axis, c->gx[g], c->gy[g], c->gv[g], t->glitch_ratio);
}

static const curve *find_fmt(const table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const curve *find_fmt(const table *t, const char *fmt, ...)
{
    char key[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(key, sizeof key, fmt, ap);
    va_end(ap);
    return table_find(t, key);
}

static void note_side(sim_optable *t, const char *op, const char *axis, int side, double q, const double *v, int n,
                      const char *shape)
{
    char kind[96];
    if (!side) return;
    snprintf(kind, sizeof kind, "%s %s %d", op, axis, side);
    bool attn = !strcmp(axis, "batch"); /* attention's batch: in proportion (beyond_batch) */
    if (side > 0)
        note(t, kind, "%s %s: %s=%.10g beyond the largest measured %.10g on %s, %s", op, shape, axis, q, v[n - 1],
             t->system, attn ? "the largest measured scaled in proportion" : "extrapolated linearly");
    else
        note(t, kind, "%s %s: %s=%.10g below the smallest measured %.10g on %s, taken at %.10g", op, shape, axis, q,
             v[0], t->system, v[0]);
}

/* The GEMM table of a dtype: fp8_block rows are a table of their own. */
static int gemm_table(const char *dtype) { return strcmp(dtype, "fp8_block") ? T_GEMM : T_GEMMB; }

/* What a GEMM lookup outside the grid, or across a glitch, says. */
static void gemm_note(sim_optable *t, const char *dtype, double m, double n, double k, span sn, span sk,
                      const probe *pm)
{
    bool fresh = pm->gc || (sn.side && !noted(t, sn.side > 0 ? "gemm n 1" : "gemm n -1")) ||
                 (sk.side && !noted(t, sk.side > 0 ? "gemm k 1" : "gemm k -1")) ||
                 (pm->side && !noted(t, pm->side > 0 ? "gemm m 1" : "gemm m -1"));
    if (!fresh || t->quiet) return; /* each said already: no shape to format (a run asks again every pass) */
    const table *g = &t->t[gemm_table(dtype)];
    char shape[96];
    snprintf(shape, sizeof shape, "m=%.0f n=%.0f k=%.0f (%s)", m, n, k, dtype);
    note_side(t, "gemm", "n", sn.side, n, g->vals[0], g->nvals[0], shape);
    note_side(t, "gemm", "k", sk.side, k, g->vals[1], g->nvals[1], shape);
    if (pm->side)
        note(t, pm->side > 0 ? "gemm m 1" : "gemm m -1", "gemm %s: m outside the measured tokens on %s, %s", shape,
             t->system, pm->side > 0 ? "extrapolated linearly" : "taken at the smallest");
    if (pm->gc) {
        char what[128];
        snprintf(what, sizeof what, "gemm %s", shape);
        glitch_note(t, what, "m", pm);
    }
}

/* The memo of a GEMM shape, found or filled (the table's brackets of n
 * and k and the curves at their corners). */
static const gemm_memo *gemm_shape(sim_optable *t, const table *g, const char *dtype, double n, double k)
{
    for (int i = 0; i < GEMM_MEMO; i++) {
        const gemm_memo *e = &t->gemm[i];
        if (e->set && e->n == n && e->k == k && !strcmp(e->dtype, dtype)) return e;
    }
    gemm_memo *e = &t->gemm[t->gemm_next];
    t->gemm_next = (t->gemm_next + 1) % GEMM_MEMO;
    *e = (gemm_memo){.n = n, .k = k};
    e->set = snprintf(e->dtype, sizeof e->dtype, "%s", dtype) < (int)sizeof e->dtype; /* a longer one: never kept */
    e->sn = bracket(g->vals[0], g->nvals[0], n), e->sk = bracket(g->vals[1], g->nvals[1], k);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            e->c[a][b] = find_fmt(g, "%s|%.10g|%.10g", dtype, g->vals[0][a ? e->sn.hi : e->sn.lo],
                                  g->vals[1][b ? e->sk.hi : e->sk.lo]);
    return e;
}

/* GEMM: bilinear across the (n, k) curves that bracket the query, each
 * evaluated at m; a missing corner's weight goes to the others. */
double sim_optable_gemm_ms(sim_optable *t, const char *dtype, double m, double n, double k)
{
    const table *g = &t->t[gemm_table(dtype)];
    if (!g->nvals[0]) return -1;
    const gemm_memo *e = gemm_shape(t, g, dtype, n, k);
    span sn = e->sn, sk = e->sk;
    double sum = 0, wsum = 0;
    probe pm = {0};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            double w = (a ? sn.w : 1 - sn.w) * (b ? sk.w : 1 - sk.w);
            const curve *c = e->c[a][b];
            if (w != 0 && c) sum += w * curve_at(c, m, &pm, 0, NULL), wsum += w;
        }
    if (wsum == 0) return -1;
    if (sn.side || sk.side || pm.side || pm.gc) gemm_note(t, dtype, m, n, k, sn, sk, &pm);
    return sum / wsum;
}

void sim_optable_gemm_limits(const sim_optable *t, const char *dtype, double *max_m, double *max_n)
{
    int i = gemm_table(dtype) == T_GEMM ? 0 : 1;
    *max_m = t->gemm_max_m[i], *max_n = t->gemm_max_n[i];
}

/* The largest m every GEMM curve measures (the smallest of their last
 * points) and the largest measured n. */
static void find_gemm_limits(sim_optable *t)
{
    for (int j = 0; j < 2; j++) {
        const table *g = &t->t[j ? T_GEMMB : T_GEMM];
        double *max_m = &t->gemm_max_m[j];
        *max_m = 0, t->gemm_max_n[j] = g->nvals[0] ? g->vals[0][g->nvals[0] - 1] : 0;
        for (int i = 0; i < g->n; i++)
            if (g->c[i].n && (*max_m == 0 || g->c[i].x[g->c[i].n - 1] < *max_m)) *max_m = g->c[i].x[g->c[i].n - 1];
    }
}

/* Attention: linear across the batch curves that bracket the query. */
/* The measured query-head counts nearest below (*lo) and above (*hi) heads
 * for this KV dtype, KV heads and head size; 0 where there is none. */
static void heads_around(const table *a, const char *kv_dtype, int heads, int kv_heads, int head_dim, int *lo, int *hi)
{
    char prefix[64];
    int n = snprintf(prefix, sizeof prefix, "bfloat16|%s|", kv_dtype);
    *lo = *hi = 0;
    for (int i = 0; i < a->n; i++) {
        int h, kv, hd;
        if (strncmp(a->c[i].key, prefix, (size_t)n) || sscanf(a->c[i].key + n, "%d|%d|%d", &h, &kv, &hd) != 3 ||
            kv != kv_heads || hd != head_dim)
            continue;
        if (h <= heads && h > *lo) *lo = h;
        if (h >= heads && (!*hi || h < *hi)) *hi = h;
    }
}

static const curve **curves_at(const table *a, const char *kv_dtype, int heads, int kv_heads, int head_dim)
{
    const curve **c = calloc((size_t)a->nvals[0] + 1, sizeof *c);
    for (int i = 0; heads && i < a->nvals[0]; i++)
        c[i] = find_fmt(a, "bfloat16|%s|%d|%d|%d|%.10g", kv_dtype, heads, kv_heads, head_dim, a->vals[0][i]);
    return c;
}

/* Attention of a head count the tables lack is interpolated linearly in the
 * query heads between the nearest measured counts with the same KV heads
 * (the work is per query head); past them, the nearest is scaled by the
 * ratio of heads and said (docs/measured.md §2). */
static attn_memo *attn_curves(sim_optable *t, int which, const char *kv_dtype, int heads, int kv_heads, int head_dim)
{
    attn_memo *m = &t->memo[which == T_CTX ? 0 : 1];
    if (m->by_batch[0] && m->heads == heads && m->kv_heads == kv_heads && m->head_dim == head_dim &&
        !strcmp(m->kv_dtype, kv_dtype))
        return m;
    const table *a = &t->t[which];
    attn_memo_clear(m);
    *m = (attn_memo){.heads = heads, .kv_heads = kv_heads, .head_dim = head_dim, .scale = 1};
    snprintf(m->kv_dtype, sizeof m->kv_dtype, "%s", kv_dtype);
    int lo, hi;
    heads_around(a, kv_dtype, heads, kv_heads, head_dim, &lo, &hi);
    if (!lo || !hi) { /* one side only (or none: every curve NULL) */
        int near = lo ? lo : hi;
        if (near) m->scale = (double)heads / near;
        lo = hi = near;
        if (near && near != heads && !t->quiet)
            note(t, which == T_CTX ? "attn heads ctx" : "attn heads gen",
                 "%s attention of %d heads (%d KV heads of %d): past the measured head counts on %s, the nearest (%d) "
                 "scaled by %d/%d",
                 which == T_CTX ? "context" : "generation", heads, kv_heads, head_dim, t->system, near, heads, near);
    }
    m->w = hi > lo ? (double)(heads - lo) / (hi - lo) : 0;
    m->by_batch[0] = curves_at(a, kv_dtype, lo, kv_heads, head_dim);
    m->by_batch[1] = curves_at(a, kv_dtype, hi, kv_heads, head_dim);
    for (int h = 0; h < 2; h++) m->hint[h] = calloc((size_t)a->nvals[0] + 1, sizeof *m->hint[h]);
    return m;
}

static void attn_shape(char *shape, size_t n, const attn_memo *m, int which, double batch, double x)
{
    snprintf(shape, n, "batch=%.10g %s=%.0f heads=%d/%d/%d", batch, which == T_CTX ? "isl" : "context", x, m->heads,
             m->kv_heads, m->head_dim);
}

/* How an attention lookup outside its curve was priced (probe.side). */
static const char *beyond_text(int side, bool context)
{
    if (side < 0) return "taken at the smallest";
    if (context) return "the largest measured scaled by the square of the length";
    return side == 2 ? "its largest measured plus what the largest batch measured there adds, scaled by the batch"
                     : "the largest measured scaled in proportion to the context";
}

/* Say once per shape and kind that a lookup left the grid. */
static void attn_note(sim_optable *t, attn_memo *m, int which, span sb, int side_x, double batch, double x)
{
    unsigned bit_b = sb.side ? 1u << (sb.side + 1) : 0, bit_x = side_x ? 1u << (3 + side_x + 1) : 0;
    if (!((bit_b | bit_x) & ~m->said)) return;
    m->said |= bit_b | bit_x;
    const table *a = &t->t[which];
    const char *op = which == T_CTX ? "context attention" : "generation attention";
    const char *axis = which == T_CTX ? "isl" : "context";
    char shape[128], kind[64];
    attn_shape(shape, sizeof shape, m, which, batch, x);
    note_side(t, op, "batch", sb.side, batch, a->vals[0], a->nvals[0], shape);
    snprintf(kind, sizeof kind, "%s %s %d", op, axis, side_x);
    if (side_x)
        note(t, kind, "%s %s: %s outside the measured on %s, %s", op, shape, axis, t->system,
             beyond_text(side_x, which == T_CTX));
}

/* Decode attention at context x from the curve of batch bv[i]: inside its
 * measured contexts, the curve. The tables stop each batch's curve at a
 * batch x context of about 262,000 tokens, so a large batch's curve ends
 * at a short context, where a launch's fixed cost is most of its time, and
 * its last segment is nearly flat: extended, it once priced 3,000
 * sequences of 1,000 tokens below 2,048 of them, and negative. Past it,
 * the curve's last point plus what the largest smaller batch bv[j] whose
 * curve reaches x adds from there to x, times bv[i] / bv[j]: the fixed
 * cost is this batch's own, and each sequence reads its own KV (every
 * sequence is its own blocks of the kernel's grid: FlashAttention-2,
 * §3.2). A smaller batch's curve that ends before x adds up to its end,
 * and the next smaller batch's from there on: one token past a curve's end
 * once skipped that curve whole, for a smaller batch's slope times twice
 * the factor (Llama-3.1-70B on eight H200s, 64 sequences: 55.0 ms a step
 * at 32,767 tokens of context, 76.9 ms at 32,768). Past every curve, the
 * last point in proportion to the context (the KV bytes read). hints:
 * bracket_hint's, per curve (NULL: none). */
static double gen_at(const curve *const *by_batch, int *hints, const double *bv, int i, double x, probe *px)
{
    const curve *c = by_batch[i];
    double last = c->x[c->n - 1], at = last, y = c->y[c->n - 1];
    for (int j = i; x > at && j-- > 0;) {
        const curve *d = by_batch[j];
        if (!d || d->x[d->n - 1] <= at || at < d->x[0]) continue;
        double to = fmin(x, d->x[d->n - 1]);
        probe in = {0};
        double more =
            curve_at(d, to, to == x ? px : &in, 1, to == x && hints ? &hints[j] : NULL) - curve_at(d, at, &in, 1, NULL);
        y += fmax(more, 0) * bv[i] / bv[j], at = to;
    }
    if (at == last) return curve_at(c, x, px, 1, hints ? &hints[i] : NULL);
    px->side = at < x ? 1 : 2; /* said as in proportion, or as priced from another batch (attn_note) */
    return at < x ? y * x / at : y;
}

/* Past the largest measured batch, attention is that batch's curve times
 * batch / its batch: every sequence of a batch is its own blocks of the
 * kernel's grid, the same work each (docs/measured.md §2). Extending the
 * last two batch curves linearly instead once priced decode attention
 * negative (a100, 3,000 sequences of 1,000 tokens). Returns the factor
 * and points *sb at the largest curve alone; 1 inside the grid. */
static double beyond_batch(span *sb, const double *vals, double batch)
{
    if (sb->side <= 0) return 1;
    sb->lo = sb->hi, sb->w = 0;
    return batch / vals[sb->hi];
}

/* bracket of a batch among the table's batch values, kept for whole
 * batches below BATCH_MEMO (the same inputs, the same span). */
static span batch_span(attn_memo *m, const table *a, double batch)
{
    int b = batch >= 0 && batch < BATCH_MEMO && batch == (double)(int)batch ? (int)batch : -1;
    if (b >= 0 && m->batch_known[b]) return m->batch_at[b];
    span sb = bracket(a->vals[0], a->nvals[0], batch);
    if (b >= 0) m->batch_at[b] = sb, m->batch_known[b] = true;
    return sb;
}

static double attn_ms(sim_optable *t, int which, const char *kv_dtype, int heads, int kv_heads, int head_dim,
                      double batch, double x)
{
    const table *a = &t->t[which];
    if (!a->nvals[0]) return -1;
    attn_memo *m = attn_curves(t, which, kv_dtype, heads, kv_heads, head_dim);
    span sb = batch_span(m, a, batch);
    double scale = beyond_batch(&sb, a->vals[0], batch), sum = 0, wsum = 0;
    probe px = {0};
    for (int h = 0; h < 2; h++) {
        double wh = h ? m->w : 1 - m->w;
        for (int i = 0; wh != 0 && i < 2; i++) {
            double w = wh * (i ? sb.w : 1 - sb.w);
            int k = i ? sb.hi : sb.lo;
            const curve *c = m->by_batch[h][k];
            if (w == 0 || !c) continue;
            sum += w * (which == T_CTX ? curve_at(c, x, &px, 2, &m->hint[h][k])
                                       : gen_at(m->by_batch[h], m->hint[h], a->vals[0], k, x, &px));
            wsum += w;
        }
    }
    if (wsum == 0) return -1;
    if ((sb.side || px.side) && !t->quiet) attn_note(t, m, which, sb, px.side, batch, x);
    if (px.gc && !t->quiet) {
        char what[160], shape[128];
        attn_shape(shape, sizeof shape, m, which, batch, x);
        snprintf(what, sizeof what, "%s attention %s", which == T_CTX ? "context" : "generation", shape);
        glitch_note(t, what, which == T_CTX ? "isl" : "context", &px);
    }
    return m->scale * scale * sum / wsum;
}

double sim_optable_ctx_attn_ms(sim_optable *t, const char *kv_dtype, int heads, int kv_heads, int head_dim,
                               double batch, double isl)
{
    return attn_ms(t, T_CTX, kv_dtype, heads, kv_heads, head_dim, batch, isl);
}

double sim_optable_gen_attn_ms(sim_optable *t, const char *kv_dtype, int heads, int kv_heads, int head_dim,
                               double batch, double kv_len)
{
    return attn_ms(t, T_GEN, kv_dtype, heads, kv_heads, head_dim, batch, kv_len);
}

/* A single curve along x (MoE tokens, message sizes). */
static double one_curve(sim_optable *t, const curve *c, const char *op, const char *shape, double x)
{
    if (!c) return -1;
    probe p = {0};
    double v = curve_at(c, x, &p, 0, NULL);
    if (p.side) {
        char kind[96];
        snprintf(kind, sizeof kind, "%s %d", op, p.side);
        note(t, kind, "%s %s: %.10g outside the measured %.10g..%.10g on %s, %s", op, shape, x, c->x[0], c->x[c->n - 1],
             t->system, p.side > 0 ? "extrapolated linearly" : "taken at the smallest");
    }
    if (p.gc) {
        char what[128];
        snprintf(what, sizeof what, "%s of %.10g %s", op, x, shape);
        glitch_note(t, what, shape, &p);
    }
    return v;
}

double sim_optable_moe_ms(sim_optable *t, const char *dtype, int hidden, int inter, int topk, int experts, int tp,
                          int ep, const char *dist, double tokens)
{
    need_loaded(t, SIM_OPT_MOE);
    moe_query *q = &t->moe_last;
    if (!(q->set && q->hidden == hidden && q->inter == inter && q->topk == topk && q->experts == experts &&
          q->tp == tp && q->ep == ep && !strcmp(q->dtype, dtype) && !strcmp(q->dist, dist))) {
        t->moe_curve = find_fmt(&t->t[strcmp(dtype, "fp8_block") ? T_MOE : T_MOEB], "%s|%d|%d|%d|%d|%d|%d|%s", dtype,
                                hidden, inter, topk, experts, tp, ep, dist);
        *q = (moe_query){.hidden = hidden, .inter = inter, .topk = topk, .experts = experts, .tp = tp, .ep = ep};
        q->set = snprintf(q->dtype, sizeof q->dtype, "%s", dtype) < (int)sizeof q->dtype &&
                 snprintf(q->dist, sizeof q->dist, "%s", dist) < (int)sizeof q->dist; /* a longer one: never kept */
    }
    return one_curve(t, t->moe_curve, "moe", "tokens", tokens);
}

double sim_optable_allreduce_ms(sim_optable *t, int gpus, bool graph, double elements)
{
    bool memo = gpus >= 1 && gpus <= 8;
    const curve *c = memo && t->ar_known[gpus][graph]
                         ? t->ar_curve[gpus][graph]
                         : find_fmt(&t->t[T_AR], "%d|%s", gpus, graph ? "vllm_graph" : "vllm_eager");
    if (memo) t->ar_curve[gpus][graph] = c, t->ar_known[gpus][graph] = true;
    return one_curve(t, c, "all-reduce", "elements", elements);
}

/* NCCL by its measured curve; a system without one (gb200's tables have
 * no NCCL rows) by a ring's roofline over the node's link: the link's
 * latency, then (g − 1)/g of the message per GPU, twice for an all-reduce
 * (AIConfigurator's own speed-of-light for these collectives), said once. */
double sim_optable_nccl_ms(sim_optable *t, const char *op, int gpus, double elements)
{
    const curve *c = find_fmt(&t->t[T_NCCL], "%s|half|%d", op, gpus); /* the int8 rows are for int8 messages */
    if (c) return one_curve(t, c, op, "elements", elements);
    if (!(t->roof.link_Bps > 0) || elements <= 0) return -1;
    char kind[96];
    snprintf(kind, sizeof kind, "nccl|%s|%d", op, gpus);
    note(t, kind, "%s over %d GPUs: no NCCL rows on %s, priced by the link's roofline", op, gpus, t->system);
    double wire = (strcmp(op, "all_reduce") ? 1.0 : 2.0) * (gpus - 1) / gpus * 2 * elements;
    return (t->roof.link_lat_s + wire / t->roof.link_Bps) * 1e3;
}

/* MLA (docs/measured-mla.md): linear across the batch curves that bracket
 * the query, each along the sequence (context, where the largest
 * measurement is scaled by the square of the length beyond it) or the
 * context length (generation, extended linearly). The backend-only tables
 * name a curve by heads per GPU and TP, the module tables by the GEMMs'
 * quantization and heads per GPU. */
static mla_memo *mla_curves(sim_optable *t, int which, const sim_mla_query *q)
{
    mla_memo *m = &t->mla[which - T_CTX_MLA];
    const char *gemm = q->gemm ? q->gemm : "";
    if (m->set && m->heads == q->heads && m->tp == q->tp && !strcmp(m->kv_dtype, q->kv_dtype) && !strcmp(m->gemm, gemm))
        return m;
    const table *a = &t->t[which];
    free(m->by_batch);
    *m = (mla_memo){.set = true, .heads = q->heads, .tp = q->tp};
    snprintf(m->kv_dtype, sizeof m->kv_dtype, "%s", q->kv_dtype);
    snprintf(m->gemm, sizeof m->gemm, "%s", gemm);
    m->by_batch = calloc((size_t)a->nvals[0] + 1, sizeof *m->by_batch);
    for (int i = 0; i < a->nvals[0]; i++) {
        double b = a->vals[0][i];
        m->by_batch[i] = q->module ? find_fmt(a, "bfloat16|%s|%s|%d|%.10g", q->kv_dtype, gemm, q->heads, b)
                                   : find_fmt(a, "bfloat16|%s|%d|%d|%.10g", q->kv_dtype, q->heads, q->tp, b);
    }
    return m;
}

/* Say, when a lookup left the grid, which axis and how it was priced. */
static void mla_note(sim_optable *t, const sim_mla_query *q, span sb, int side_x, double batch, double x)
{
    const table *a = &t->t[q->module ? (q->context ? T_CTX_MLAM : T_GEN_MLAM) : (q->context ? T_CTX_MLA : T_GEN_MLA)];
    char op[64], shape[96], kind[96];
    snprintf(op, sizeof op, "%s MLA%s", q->context ? "context" : "generation", q->module ? " module" : "");
    snprintf(shape, sizeof shape, "batch=%.0f %s=%.0f heads=%d", batch, q->context ? "isl" : "context", x, q->heads);
    note_side(t, op, "batch", sb.side, batch, a->vals[0], a->nvals[0], shape);
    snprintf(kind, sizeof kind, "%s x %d", op, side_x);
    if (side_x)
        note(t, kind, "%s %s: %s outside the measured on %s, %s", op, shape, q->context ? "isl" : "context", t->system,
             beyond_text(side_x, q->context));
}

double sim_optable_mla_ms(sim_optable *t, const sim_mla_query *q, double batch, double x)
{
    need_loaded(t, SIM_OPT_MLA);
    int which = q->module ? (q->context ? T_CTX_MLAM : T_GEN_MLAM) : (q->context ? T_CTX_MLA : T_GEN_MLA);
    const table *a = &t->t[which];
    if (!a->nvals[0]) return -1;
    const mla_memo *m = mla_curves(t, which, q);
    span sb = bracket(a->vals[0], a->nvals[0], batch);
    double scale = beyond_batch(&sb, a->vals[0], batch), sum = 0, wsum = 0;
    probe px = {0};
    for (int i = 0; i < 2; i++) {
        double w = i ? sb.w : 1 - sb.w;
        int k = i ? sb.hi : sb.lo;
        const curve *c = w == 0 ? NULL : m->by_batch[k];
        if (c)
            sum += w * (q->context ? curve_at(c, x, &px, 2, NULL) : gen_at(m->by_batch, NULL, a->vals[0], k, x, &px)),
                wsum += w;
    }
    if (wsum == 0) return -1;
    if ((sb.side || px.side) && !t->quiet) mla_note(t, q, sb, px.side, batch, x);
    if (px.gc && !t->quiet) {
        char what[160];
        snprintf(what, sizeof what, "%s MLA%s batch=%.0f %s=%.0f heads=%d", q->context ? "context" : "generation",
                 q->module ? " module" : "", batch, q->context ? "isl" : "context", x, q->heads);
        glitch_note(t, what, q->context ? "isl" : "context", &px);
    }
    return scale * sum / wsum;
}
