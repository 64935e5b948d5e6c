/* sim/trace/trace.c — the Mooncake JSONL trace reader (docs/trace.md): streaming
 * parse and validation of one request per line, replay speed, sampling,
 * optional sort, the file fingerprint and `kvsim trace stats` statistics.
 *
 * The reader sits on the hot path of every replay (`kvsim hitrate`,
 * `kvsim run`), so it keeps one reusable line buffer (sim/infile.h, which
 * also reads gzip files, recognised by content), parses one
 * line at a time (a strict recognizer for flat lines, jansson's json_loadb
 * for everything else; see "one line -> one request" below), and makes
 * exactly one allocation per request (the struct with its key and id arrays
 * behind it). Memory does not grow with trace length, except under `sort`,
 * which must see the whole file before it can return the first request. */
#include "sim/trace/trace.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <endian.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <jansson.h>
/* The same XXH3 as libxxhash, compiled in here so that the compiler sees the
 * 8-byte input of sim_block_key and keeps only that case's few multiplies:
 * key chaining runs once per block of every trace read. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "sim/index/keyset.h"
#include "sim/infile.h"
#include "sim/trace/trace_int.h"

/* The current line's hash ids and their chained keys, reused across lines. */
typedef struct id_buf {
    int64_t *v;
    uint64_t *k;
    size_t n, cap;
} id_buf;

struct sim_trace {
    sim_trace_opts opts;
    char *name;       /* file name used in messages ("<stdin>" for "-") */
    sim_infile *f;    /* plain or gzip (sim/infile.h) */
    char *line;       /* the current line, the reader's buffer */
    id_buf ids;       /* the current line's hash_ids */
    sim_seg_buf segs; /* the current line's segments */
    int64_t lineno;
    bool have_prev; /* previous accepted timestamp, for the order check */
    double prev_ts;
    gsl_rng *rng; /* sampling draws; NULL when sample == 1 */
    int64_t emitted;
    sim_block_fit fit; /* how the hash_ids read fit opts.block_tokens */
    int64_t skipped;
    char **skips; /* the first SIM_TRACE_SKIPS_KEPT skipped lines' messages */
    /* sort mode: every valid request, loaded on the first sim_trace_next */
    bool loaded;
    sim_request **sorted;
    size_t nsorted, next_sorted;
};

sim_trace_opts sim_trace_default_opts(void)
{
    return (sim_trace_opts){.block_tokens = 512, .speed = 1.0, .sample = 1.0, .seed = 1};
}

/* Keys chain each raw id onto the key of its prefix: XXH3-64 over the id's
 * eight little-endian bytes, seeded with the previous key, so equal ids at
 * different prefixes name different blocks (Mooncake §3.2.1). */
uint64_t sim_block_key(uint64_t prev_key, int64_t hash_id) { return sim_chain_key(prev_key, hash_id); }

static int check_opts(const char *name, const sim_trace_opts *o, sim_err *err)
{
    if (o->block_tokens < 1) return sim_errf(err, "%s: block_tokens must be at least 1", name);
    if (!(o->speed > 0) || !isfinite(o->speed)) return sim_errf(err, "%s: speed must be a positive number", name);
    if (!(o->sample > 0 && o->sample <= 1)) return sim_errf(err, "%s: sample must be in (0, 1]", name);
    if (o->limit < 0) return sim_errf(err, "%s: limit must not be negative", name);
    if (o->resample < SIM_RESAMPLE_NONE || o->resample > SIM_RESAMPLE_SESSIONS)
        return sim_errf(err, "%s: resample must be none, poisson or sessions", name);
    return 0;
}

int sim_trace_open(sim_trace **out, const char *path, const sim_trace_opts *opts, sim_err *err)
{
    *out = NULL;
    bool is_stdin = strcmp(path, "-") == 0;
    const char *name = opts->name ? opts->name : is_stdin ? "<stdin>" : path;
    if (check_opts(name, opts, err)) return -1;
    sim_infile *f;
    if (sim_infile_open(&f, path, name, err)) return -1;
    sim_trace *t = sim_xcalloc(1, sizeof *t);
    t->opts = *opts;
    t->name = sim_xstrdup(name);
    t->f = f;
    t->fit = (sim_block_fit)SIM_BLOCK_FIT_INIT;
    t->ids.cap = 256;
    t->ids.v = sim_xmalloc(t->ids.cap * sizeof *t->ids.v);
    t->ids.k = sim_xmalloc(t->ids.cap * sizeof *t->ids.k);
    if (opts->sample < 1) {
        t->rng = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(t->rng, (unsigned long)opts->seed);
    }
    *out = t;
    return 0;
}

void sim_request_free(sim_request *r) { free(r); }

void sim_trace_close(sim_trace *t)
{
    if (!t) return;
    sim_infile_close(t->f);
    for (size_t i = t->next_sorted; i < t->nsorted; i++) sim_request_free(t->sorted[i]);
    free(t->sorted);
    if (t->rng) gsl_rng_free(t->rng);
    for (int64_t i = 0; t->skips && i < t->skipped && i < SIM_TRACE_SKIPS_KEPT; i++) free(t->skips[i]);
    free(t->skips);
    free(t->ids.v);
    free(t->ids.k);
    sim_seg_buf_free(&t->segs);
    free(t->name);
    free(t);
}

int64_t sim_trace_skipped(const sim_trace *t) { return t->skipped; }

const char *sim_trace_first_skip(const sim_trace *t) { return sim_trace_skip_message(t, 0); }

const char *sim_trace_skip_message(const sim_trace *t, int64_t i)
{
    return i >= 0 && i < t->skipped && i < SIM_TRACE_SKIPS_KEPT ? t->skips[i] : NULL;
}

const char *sim_trace_name(const sim_trace *t) { return t->name; }

const sim_block_fit *sim_trace_block_fit(const sim_trace *t) { return &t->fit; }

void sim_block_fit_add(sim_block_fit *f, int64_t input, int64_t n, int block_tokens, int64_t line)
{
    if (n < (input + block_tokens - 1) / block_tokens && f->short_ids++ == 0) f->first_short_line = line;
    if (n == 0) return;
    int64_t lo = (input + n - 1) / n, hi = n > 1 ? (input + n - 2) / (n - 1) - 1 : INT64_MAX;
    if (lo > f->lo) f->lo = lo;
    if (hi < f->hi) f->hi = hi;
}

bool sim_block_fit_wrong(const sim_block_fit *f, int block_tokens)
{
    return f->short_ids > 0 && f->lo <= f->hi && (block_tokens < f->lo || block_tokens > f->hi);
}

const char *sim_block_fit_text(const sim_block_fit *f, char *buf, size_t n)
{
    if (f->lo > f->hi) snprintf(buf, n, "no one block size fits every request (some tails are uncacheable?)");
    else if (f->lo == f->hi) snprintf(buf, n, "blocks of %" PRId64 " tokens fit every request", f->lo);
    else if (f->hi == INT64_MAX) snprintf(buf, n, "its blocks may be %" PRId64 " tokens or more", f->lo);
    else snprintf(buf, n, "blocks of %" PRId64 " to %" PRId64 " tokens fit every request", f->lo, f->hi);
    return buf;
}

const char *sim_trace_block_warning(const sim_trace *t, const char *advice, char *buf, size_t n)
{
    return sim_block_fit_warning(&t->fit, t->name, t->opts.block_tokens, advice, buf, n);
}

const char *sim_block_fit_warning(const sim_block_fit *f, const char *name, int bt, const char *advice, char *buf,
                                  size_t n)
{
    if (!sim_block_fit_wrong(f, bt)) return NULL;
    char fits[128];
    int64_t good = 1; /* the smallest power of two that fits, else the smallest size */
    while (good < f->lo) good *= 2;
    if (good > f->hi) good = f->lo;
    snprintf(buf, n,
             "%s: %" PRId64 " requests have fewer hash_ids than ceil(input_length / %d) (the first: line %" PRId64
             "): the trace's blocks are not %d tokens; %s (%s%" PRId64 ")",
             name, f->short_ids, bt, f->first_short_line, bt, sim_block_fit_text(f, fits, sizeof fits), advice, good);
    return buf;
}

/* ---- one line -> one request ------------------------------------------ *
 *
 * Two front ends fill the same raw_line, one validator turns it into a
 * request, so both give the same requests and the same messages.
 *
 * jansson is the parser of record: any line it would parse differently, or
 * reject, is handed to it. But json_loadb costs ~2 µs per line plus a heap
 * value per hash id, which caps a replay near 3M blocks/s. Nearly every
 * line is a flat object of known keys with plain values, so a strict
 * recognizer for exactly that subset reads those lines directly: known keys
 * without escapes, each at most once; numbers in JSON grammar (integers up to
 * 18 digits, finite reals); ASCII strings without escapes; hash_ids as a list
 * of integers. Anything else — unknown keys, nesting, null, booleans,
 * escapes, non-ASCII, malformed text — makes the recognizer decline and the
 * line goes through jansson, which then also words any syntax error. */

typedef enum field_id {
    F_TIMESTAMP,
    F_INPUT,
    F_OUTPUT,
    F_HASH_IDS,
    F_SESSION,
    F_CACHE,
    F_SLO_TTFT,
    F_SLO_TBT,
    F_SEGMENTS,
    F_TURN,
    F_THINK,
    NFIELDS
} field_id;

/* Each field's name, and its key as it appears on a line (for the recognizer). */
typedef struct field_key {
    const char *name;
    const char *quoted;
    size_t qlen;
} field_key;

#define FIELD_KEY(id, str) [id] = {str, "\"" str "\"", sizeof str + 1}
static const field_key field_keys[NFIELDS] = {
    FIELD_KEY(F_TIMESTAMP, "timestamp"),  FIELD_KEY(F_INPUT, "input_length"),
    FIELD_KEY(F_OUTPUT, "output_length"), FIELD_KEY(F_HASH_IDS, "hash_ids"),
    FIELD_KEY(F_SESSION, "session"),      FIELD_KEY(F_CACHE, "cache"),
    FIELD_KEY(F_SLO_TTFT, "slo_ttft_ms"), FIELD_KEY(F_SLO_TBT, "slo_tbt_ms"),
    FIELD_KEY(F_SEGMENTS, "segments"),    FIELD_KEY(F_TURN, "turn"),
    FIELD_KEY(F_THINK, "think_ms"),
};

typedef enum raw_kind { RAW_ABSENT, RAW_INT, RAW_REAL, RAW_STRING, RAW_IDS, RAW_SEGS, RAW_JSON } raw_kind;

/* One top-level field as found on the line. RAW_IDS: the hash ids are in
 * t->ids already; RAW_SEGS: the segments in t->segs, checked (recognizer).
 * RAW_JSON: any other jansson value. */
typedef struct raw_field {
    raw_kind kind;
    int64_t i;
    double d;
    const char *s;
    size_t slen;
    const json_t *json;
} raw_field;

typedef struct raw_line {
    raw_field f[NFIELDS];
} raw_line;

/* "FILE:LINE: FIELD: problem" */
__attribute__((format(printf, 4, 5))) static int line_err(const sim_trace *t, sim_err *err, const char *field,
                                                          const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = sim_line_verrf(err, t->name, t->lineno, field, fmt, ap);
    va_end(ap);
    return rc;
}

static const char *raw_type_name(const raw_field *v)
{
    static const char *const names[] = {
        [RAW_ABSENT] = "nothing",  [RAW_INT] = "an integer", [RAW_REAL] = "a real number",
        [RAW_STRING] = "a string", [RAW_IDS] = "an array",   [RAW_SEGS] = "an array"};
    return v->kind == RAW_JSON ? sim_json_type_name(v->json) : names[v->kind];
}

/* ---- validation ---- */

/* A required token count in [1, SIM_TRACE_MAX_TOKENS]. */
static int get_length(const sim_trace *t, const raw_line *raw, field_id f, int32_t *out, sim_err *err)
{
    const raw_field *v = &raw->f[f];
    const char *name = field_keys[f].name;
    if (v->kind == RAW_ABSENT) return line_err(t, err, name, "missing");
    if (v->kind != RAW_INT) return line_err(t, err, name, "expected an integer, got %s", raw_type_name(v));
    if (v->i < 0) return line_err(t, err, name, "%" PRId64 " is negative", v->i);
    if (v->i == 0) return line_err(t, err, name, "0 tokens (a request needs at least 1)");
    if (v->i > SIM_TRACE_MAX_TOKENS)
        return line_err(t, err, name, "%" PRId64 " tokens is too large (max %d)", v->i, SIM_TRACE_MAX_TOKENS);
    *out = (int32_t)v->i;
    return 0;
}

/* A non-negative number (timestamp, SLOs); *out untouched when absent and optional. */
static int get_number(const sim_trace *t, const raw_line *raw, field_id f, bool required, double *out, sim_err *err)
{
    const raw_field *v = &raw->f[f];
    const char *name = field_keys[f].name;
    if (v->kind == RAW_ABSENT) return required ? line_err(t, err, name, "missing") : 0;
    if (v->kind == RAW_STRING && f == F_TIMESTAMP)
        return line_err(t, err, name,
                        "expected a number, got a string: a trace in another format? convert it with "
                        "`kvsim trace import ragpulse|azure|burstgpt`");
    if (v->kind != RAW_INT && v->kind != RAW_REAL)
        return line_err(t, err, name, "expected a number, got %s", raw_type_name(v));
    double x = v->kind == RAW_INT ? (double)v->i : v->d;
    if (x < 0) return line_err(t, err, name, "%.15g is negative", x);
    *out = x;
    return 0;
}

/* An optional non-negative integer ("session", "turn"); -1 when absent. */
static int get_id(const sim_trace *t, const raw_line *raw, field_id f, int64_t *out, sim_err *err)
{
    const raw_field *v = &raw->f[f];
    const char *name = field_keys[f].name;
    *out = -1;
    if (v->kind == RAW_ABSENT) return 0;
    if (v->kind != RAW_INT) return line_err(t, err, name, "expected an integer, got %s", raw_type_name(v));
    if (v->i < 0) return line_err(t, err, name, "%" PRId64 " is negative", v->i);
    *out = v->i;
    return 0;
}

/* "turn" and "think_ms" (closed-loop replay, docs/trace.md) only mean
 * something within a session. think_ms is -1 when absent. */
static int get_turn(const sim_trace *t, const raw_line *raw, sim_request *r, sim_err *err)
{
    r->think_ms = -1;
    if (get_id(t, raw, F_TURN, &r->turn, err) || get_number(t, raw, F_THINK, false, &r->think_ms, err)) return -1;
    if (r->session < 0 && (r->turn >= 0 || r->think_ms >= 0))
        return line_err(t, err, r->turn >= 0 ? "turn" : "think_ms",
                        "given without \"session\" (it orders a session's turns)");
    if (r->think_ms > SIM_TRACE_MAX_THINK_MS)
        return line_err(t, err, "think_ms", "%.15g is too large (max %.0f, a year)", r->think_ms,
                        SIM_TRACE_MAX_THINK_MS);
    return 0;
}

typedef struct cache_name {
    const char *name;
    sim_cache_class cls;
} cache_name;

static const cache_name cache_names[] = {
    {"ephemeral", SIM_CACHE_EPHEMERAL},
    {"context", SIM_CACHE_CONTEXT},
};

static int get_cache(const sim_trace *t, const raw_line *raw, sim_cache_class *out, sim_err *err)
{
    const raw_field *v = &raw->f[F_CACHE];
    *out = SIM_CACHE_DEFAULT;
    if (v->kind == RAW_ABSENT) return 0;
    if (v->kind != RAW_STRING) return line_err(t, err, "cache", "expected a string, got %s", raw_type_name(v));
    for (size_t i = 0; i < sizeof cache_names / sizeof cache_names[0]; i++)
        if (strlen(cache_names[i].name) == v->slen && memcmp(v->s, cache_names[i].name, v->slen) == 0) {
            *out = cache_names[i].cls;
            return 0;
        }
    return line_err(t, err, "cache", "\"%.*s\" is not one of ephemeral|context", (int)v->slen, v->s);
}

/* Append an id and its chained key. Hashing as each id is read lets the
 * CPU overlap the key chain's latency with the parsing of the next id. */
static inline void ids_push(id_buf *b, int64_t v)
{
    if (b->n == b->cap) {
        b->cap *= 2;
        b->v = sim_xrealloc(b->v, b->cap * sizeof *b->v);
        b->k = sim_xrealloc(b->k, b->cap * sizeof *b->k);
    }
    b->k[b->n] = sim_block_key(b->n ? b->k[b->n - 1] : 0, v);
    b->v[b->n++] = v;
}

/* hash_ids into t->ids: an array of integers, at most
 * ceil(input_length / block_tokens) of them. */
static int get_hash_ids(sim_trace *t, const raw_line *raw, int32_t input_len, sim_err *err)
{
    const raw_field *v = &raw->f[F_HASH_IDS];
    if (v->kind == RAW_ABSENT) return line_err(t, err, "hash_ids", "missing");
    if (v->kind == RAW_JSON && json_is_array(v->json)) {
        t->ids.n = 0;
        for (size_t i = 0; i < json_array_size(v->json); i++) {
            const json_t *e = json_array_get(v->json, i);
            if (!json_is_integer(e))
                return line_err(t, err, "hash_ids", "element %zu is not an integer (got %s)", i, sim_json_type_name(e));
            ids_push(&t->ids, json_integer_value(e));
        }
    } else if (v->kind != RAW_IDS) {
        return line_err(t, err, "hash_ids", "expected an array, got %s", raw_type_name(v));
    }
    int64_t bt = t->opts.block_tokens;
    int64_t max_blocks = (input_len + bt - 1) / bt;
    if ((int64_t)t->ids.n > max_blocks)
        return line_err(t, err, "hash_ids",
                        "%zu ids but input_length %" PRId32 " allows at most %" PRId64 " blocks of %" PRId64 " tokens",
                        t->ids.n, input_len, max_blocks, bt);
    return 0;
}

/* One allocation (sim_request_new) with the line's segments copied in. */
static sim_request *request_alloc(const sim_request *fields, size_t n, const sim_seg_buf *sb)
{
    size_t ni = sb ? sb->nids : 0, ns = sb ? sb->nsegs : 0;
    sim_request *r = sim_request_new(fields, n, ni, ns);
    if (ni) memcpy(r->seg_ids, sb->ids, ni * sizeof *r->seg_ids);
    if (ns) memcpy(r->segs, sb->segs, ns * sizeof *r->segs);
    return r;
}

/* "segments" (optional): parsed into t->segs; input_length, when given,
 * must equal their sum, and is their sum when absent. */
static int get_segments(sim_trace *t, const raw_line *raw, int32_t *input_len, sim_err *err)
{
    const raw_field *v = &raw->f[F_SEGMENTS];
    if (v->kind != RAW_JSON && v->kind != RAW_SEGS)
        return line_err(t, err, "segments", "expected an array, got %s", raw_type_name(v));
    sim_err e;
    if (v->kind == RAW_JSON && sim_seg_parse(v->json, t->opts.block_tokens, &t->segs, &e))
        return sim_errf(err, "%s:%" PRId64 ": %s", t->name, t->lineno, e.msg);
    if (raw->f[F_INPUT].kind == RAW_ABSENT) {
        *input_len = (int32_t)t->segs.total;
        return 0;
    }
    if (get_length(t, raw, F_INPUT, input_len, err)) return -1;
    if (*input_len != t->segs.total)
        return line_err(t, err, "input_length", "%" PRId32 " but the segments' lengths sum to %" PRId64, *input_len,
                        t->segs.total);
    return 0;
}

/* The request with its blocks: the file's hash_ids, or (a segment trace
 * without them) keys derived from the segments' content, one per
 * block_tokens-token block of the packed prompt. */
static sim_request *request_build(sim_trace *t, const raw_line *raw, const sim_request *fields, sim_err *err)
{
    bool segs = raw->f[F_SEGMENTS].kind != RAW_ABSENT;
    if (!segs || raw->f[F_HASH_IDS].kind != RAW_ABSENT) {
        if (get_hash_ids(t, raw, fields->input_len, err)) return NULL;
        if (!segs) sim_block_fit_add(&t->fit, fields->input_len, (int64_t)t->ids.n, t->opts.block_tokens, t->lineno);
        sim_request *r = request_alloc(fields, t->ids.n, segs ? &t->segs : NULL);
        memcpy(r->hash_ids, t->ids.v, t->ids.n * sizeof *r->hash_ids);
        memcpy(r->keys, t->ids.k, t->ids.n * sizeof *r->keys);
        return r;
    }
    int bt = t->opts.block_tokens;
    int64_t n = ((int64_t)fields->input_len + bt - 1) / bt;
    sim_request *r = request_alloc(fields, (size_t)n, &t->segs);
    sim_segments_keys(r, bt, bt, fields->input_len, (int32_t)n, r->keys, r->hash_ids);
    return r;
}

static sim_request *request_from_raw(sim_trace *t, const raw_line *raw, sim_err *err)
{
    sim_request fields = {.line = t->lineno};
    bool segs = raw->f[F_SEGMENTS].kind != RAW_ABSENT;
    if (get_number(t, raw, F_TIMESTAMP, true, &fields.timestamp_ms, err) ||
        (segs ? get_segments(t, raw, &fields.input_len, err) : get_length(t, raw, F_INPUT, &fields.input_len, err)) ||
        get_length(t, raw, F_OUTPUT, &fields.output_len, err) || get_id(t, raw, F_SESSION, &fields.session, err) ||
        get_turn(t, raw, &fields, err) || get_cache(t, raw, &fields.cache, err) ||
        get_number(t, raw, F_SLO_TTFT, false, &fields.slo_ttft_ms, err) ||
        get_number(t, raw, F_SLO_TBT, false, &fields.slo_tbt_ms, err))
        return NULL;
    double arrival_ns = fields.timestamp_ms * (double)SIM_NS_PER_MS / t->opts.speed;
    if (arrival_ns >= 0x1p62) { /* int64 nanoseconds: ~146 years */
        line_err(t, err, "timestamp", "%.15g is too large", fields.timestamp_ms);
        return NULL;
    }
    fields.arrival_ns = llround(arrival_ns);
    return request_build(t, raw, &fields, err);
}

/* ---- front end 1: jansson ---- */

static raw_field raw_from_json_value(const json_t *v)
{
    if (!v) return (raw_field){.kind = RAW_ABSENT};
    switch (json_typeof(v)) {
    case JSON_INTEGER: return (raw_field){.kind = RAW_INT, .i = json_integer_value(v)};
    case JSON_REAL: return (raw_field){.kind = RAW_REAL, .d = json_real_value(v)};
    case JSON_STRING: return (raw_field){.kind = RAW_STRING, .s = json_string_value(v), .slen = json_string_length(v)};
    default: return (raw_field){.kind = RAW_JSON, .json = v};
    }
}

static sim_request *request_from_jansson(sim_trace *t, size_t len, sim_err *err)
{
    json_error_t je;
    json_t *obj = json_loadb(t->line, len, JSON_REJECT_DUPLICATES, &je);
    if (!obj) {
        /* a first line with commas and no brace: a CSV export (Azure, BurstGPT) given as a trace (issue 40 item 10) */
        bool csv = t->lineno == 1 && memchr(t->line, ',', len) && !memchr(t->line, '{', len);
        line_err(t, err, "json", "malformed JSON (%s at column %d)%s", je.text, je.column,
                 csv ? ": a CSV file? kvsim reads Mooncake-format JSONL; convert a CSV trace with `kvsim trace import "
                       "azure|burstgpt`"
                     : "");
        return NULL;
    }
    sim_request *r = NULL;
    if (!json_is_object(obj)) {
        line_err(t, err, "json", "expected an object, got %s", sim_json_type_name(obj));
    } else {
        raw_line raw;
        for (int f = 0; f < NFIELDS; f++) raw.f[f] = raw_from_json_value(json_object_get(obj, field_keys[f].name));
        r = request_from_raw(t, &raw, err);
    }
    json_decref(obj);
    return r;
}

/* ---- front end 2: the recognizer for flat lines ---- */

static bool is_json_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && is_json_ws(*p)) p++;
    return p;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static const char *skip_digits(const char *p, const char *end)
{
    while (p < end && is_digit(*p)) p++;
    return p;
}

/* A string of printable ASCII without escapes; *s, *n: its contents. */
static const char *scan_plain_string(const char *p, const char *end, const char **s, size_t *n)
{
    if (p == end || *p != '"') return NULL;
    const char *q = ++p;
    while (q < end && *q != '"') {
        if (*q < 0x20 || *q == '\\' || (unsigned char)*q >= 0x7f) return NULL;
        q++;
    }
    if (q == end) return NULL;
    *s = p;
    *n = (size_t)(q - p);
    return q + 1;
}

/* A JSON integer of at most 18 digits (so it fits an int64), not followed
 * by a fraction or exponent. Accumulated unsigned: a longer run of digits
 * wraps harmlessly before it is rejected (the slow path reports it). */
static inline const char *scan_int(const char *p, const char *end, int64_t *out)
{
    bool neg = p < end && *p == '-';
    const char *digits = p += neg;
    uint64_t v = 0;
    while (p < end && is_digit(*p)) v = v * 10 + (uint64_t)(*p++ - '0');
    size_t nd = (size_t)(p - digits);
    if (nd == 0 || nd > 18 || (nd > 1 && *digits == '0')) return NULL;
    if (p < end && (*p == '.' || *p == 'e' || *p == 'E')) return NULL;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return p;
}

/* A JSON number with a fraction or an exponent, finite. */
static const char *scan_real(const char *p, const char *end, double *out)
{
    const char *start = p;
    p += p < end && *p == '-';
    const char *digits = p;
    p = skip_digits(p, end);
    if (p == digits || (p - digits > 1 && *digits == '0')) return NULL;
    bool real = false;
    if (p < end && *p == '.') {
        const char *frac = ++p;
        if ((p = skip_digits(p, end)) == frac) return NULL;
        real = true;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        p += p < end && (*p == '+' || *p == '-');
        const char *exp = p;
        if ((p = skip_digits(p, end)) == exp) return NULL;
        real = true;
    }
    char buf[64];
    size_t n = (size_t)(p - start);
    if (!real || n >= sizeof buf) return NULL;
    memcpy(buf, start, n);
    buf[n] = 0;
    *out = strtod(buf, NULL);
    return isfinite(*out) ? p : NULL;
}

/* p is at '['; each integer goes to push(ctx, v); returns the position
 * after ']'. Inline, so that each caller's push is inlined into its loop. */
static inline const char *scan_ints(const char *p, const char *end, void (*push)(void *, int64_t), void *ctx)
{
    p = skip_ws(p + 1, end);
    if (p < end && *p == ']') return p + 1;
    for (;;) {
        int64_t v;
        if (!(p = scan_int(p, end, &v))) return NULL;
        push(ctx, v);
        p = skip_ws(p, end);
        if (p < end && *p == ']') return p + 1;
        if (p == end || *p != ',') return NULL;
        p = skip_ws(p + 1, end);
    }
}

static void push_hash_id(void *ids, int64_t v) { ids_push(ids, v); }
static void push_seg_id(void *segs, int64_t v) { sim_seg_push_id(segs, v); }

/* p is at '['; t->ids gets the integers. */
static const char *scan_int_array(const char *p, const char *end, id_buf *ids)
{
    ids->n = 0;
    return scan_ints(p, end, push_hash_id, ids);
}

/* A segment object's fields as found (recognizer). */
typedef struct seg_fields {
    const char *k;
    size_t klen;
    bool has_len, has_id, has_ids, id_null;
    int64_t len, id;
    size_t first; /* hash_ids: where they start in the buffer */
} seg_fields;

/* One "key": value of a segment object into f; NULL to decline (an
 * unknown or repeated key, or a value outside the subset). */
static const char *scan_seg_field(const char *p, const char *end, sim_seg_buf *b, seg_fields *f)
{
    const char *key;
    size_t n;
    if (!(p = scan_plain_string(p, end, &key, &n))) return NULL;
    p = skip_ws(p, end);
    if (p == end || *p++ != ':') return NULL;
    p = skip_ws(p, end);
    if (n == 1 && key[0] == 'k' && !f->k) return scan_plain_string(p, end, &f->k, &f->klen);
    if (n == 3 && !memcmp(key, "len", 3) && !f->has_len) {
        f->has_len = true;
        return scan_int(p, end, &f->len);
    }
    if (n == 2 && !memcmp(key, "id", 2) && !f->has_id) {
        f->has_id = true;
        if (end - p >= 4 && !memcmp(p, "null", 4)) return f->id_null = true, p + 4;
        return scan_int(p, end, &f->id);
    }
    if (n == 8 && !memcmp(key, "hash_ids", 8) && !f->has_ids && p < end && *p == '[') {
        f->has_ids = true;
        f->first = b->nids;
        return scan_ints(p, end, push_seg_id, b);
    }
    return NULL;
}

/* The segment f describes, if sim_seg_parse would accept it as segment i
 * (same rules; the recognizer declines whatever it would reject, so that
 * jansson and sim_seg_parse word the message). */
static bool seg_from_fields(const seg_fields *f, size_t i, int prefix_tokens, sim_seg_buf *b)
{
    static const char *const kinds[SIM_SEG_NKINDS] = {"prefix", "chunk", "prompt"};
    sim_segment s = {.kind = SIM_SEG_NKINDS};
    for (int j = 0; j < SIM_SEG_NKINDS; j++)
        if (f->k && f->klen == strlen(kinds[j]) && !memcmp(f->k, kinds[j], f->klen)) s.kind = (sim_seg_kind)j;
    if (s.kind == SIM_SEG_NKINDS || !f->has_len || f->len < 1 || f->len > SIM_TRACE_MAX_TOKENS ||
        b->total + f->len > SIM_TRACE_MAX_TOKENS)
        return false;
    s.len = (int32_t)f->len;
    if (s.kind == SIM_SEG_PREFIX) {
        int64_t want = (f->len + prefix_tokens - 1) / prefix_tokens;
        if (i != 0 || f->has_id || !f->has_ids || (int64_t)(b->nids - f->first) != want) return false;
        s.first = (int32_t)f->first;
        s.nids = (int32_t)want;
    } else {
        if (f->has_ids || !f->has_id || (f->id_null && s.kind != SIM_SEG_PROMPT)) return false;
        s.unique = f->id_null;
        s.id = f->id_null ? 0 : f->id;
    }
    sim_seg_push(b, &s);
    return true;
}

/* p is at '['; a "segments" list of flat objects into t->segs, or NULL. */
static const char *scan_segments(sim_trace *t, const char *p, const char *end)
{
    sim_seg_buf *b = &t->segs;
    b->nsegs = b->nids = 0;
    b->total = 0;
    p = skip_ws(p + 1, end);
    for (size_t i = 0;; i++) {
        if (p == end || *p != '{') return NULL;
        seg_fields f = {0};
        p = skip_ws(p + 1, end);
        for (;;) {
            if (!(p = scan_seg_field(p, end, b, &f))) return NULL;
            p = skip_ws(p, end);
            if (p < end && *p == '}') break;
            if (p == end || *p++ != ',') return NULL;
            p = skip_ws(p, end);
        }
        if (!seg_from_fields(&f, i, t->opts.block_tokens, b)) return NULL;
        p = skip_ws(p + 1, end);
        if (p < end && *p == ']') return p + 1;
        if (p == end || *p++ != ',') return NULL;
        p = skip_ws(p, end);
    }
}

static const char *scan_value(sim_trace *t, field_id f, const char *p, const char *end, raw_field *out)
{
    if (p == end) return NULL;
    if (*p == '"') {
        out->kind = RAW_STRING;
        return scan_plain_string(p, end, &out->s, &out->slen);
    }
    if (*p == '[' && f == F_SEGMENTS) {
        out->kind = RAW_SEGS;
        return scan_segments(t, p, end);
    }
    if (*p == '[') {
        out->kind = RAW_IDS;
        return f == F_HASH_IDS ? scan_int_array(p, end, &t->ids) : NULL;
    }
    const char *q = scan_int(p, end, &out->i);
    out->kind = q ? RAW_INT : RAW_REAL;
    return q ? q : scan_real(p, end, &out->d);
}

/* Whether the n bytes at p and q are equal, for 4 ≤ n ≤ 16 (quoted field
 * keys are 7 to 15 bytes): two overlapping word comparisons, the first and
 * the last 8 (or 4) bytes, instead of a memcmp call per key of every line. */
static inline bool same_key_bytes(const char *p, const char *q, size_t n)
{
    if (n >= 8) {
        uint64_t a0, b0, a1, b1;
        memcpy(&a0, p, 8), memcpy(&b0, q, 8), memcpy(&a1, p + n - 8, 8), memcpy(&b1, q + n - 8, 8);
        return a0 == b0 && a1 == b1;
    }
    uint32_t a0, b0, a1, b1;
    memcpy(&a0, p, 4), memcpy(&b0, q, 4), memcpy(&a1, p + n - 4, 4), memcpy(&b1, q + n - 4, 4);
    return a0 == b0 && a1 == b1;
}

/* A known key at p, tried from `expect` on (lines list their fields in a
 * fixed order, so the first try nearly always matches); -1 if none. */
static int match_key(const char *p, const char *end, int expect)
{
    for (int i = 0; i < NFIELDS; i++) {
        int f = (expect + i) % NFIELDS;
        if ((size_t)(end - p) >= field_keys[f].qlen && same_key_bytes(p, field_keys[f].quoted, field_keys[f].qlen))
            return f;
    }
    return -1;
}

/* Fill raw from a flat line; false when the line is outside the subset. */
static bool recognize_line(sim_trace *t, const char *p, const char *end, raw_line *raw)
{
    unsigned seen = 0;
    for (int f = 0; f < NFIELDS; f++) raw->f[f].kind = RAW_ABSENT;
    p = skip_ws(p, end);
    if (p == end || *p++ != '{') return false;
    p = skip_ws(p, end);
    if (p < end && *p == '}') return skip_ws(p + 1, end) == end;
    for (int f = 0;;) {
        if ((f = match_key(p, end, f)) < 0 || (seen & 1u << f)) return false;
        seen |= 1u << f;
        p = skip_ws(p + field_keys[f].qlen, end);
        if (p == end || *p++ != ':') return false;
        if (!(p = scan_value(t, (field_id)f, skip_ws(p, end), end, &raw->f[f]))) return false;
        p = skip_ws(p, end);
        if (p < end && *p == '}') return skip_ws(p + 1, end) == end;
        if (p == end || *p++ != ',') return false;
        p = skip_ws(p, end);
    }
}

static bool is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isspace((unsigned char)s[i])) return false;
    return true;
}

/* Parse the current line. Returns 1 with *out, 0 for a blank line, -1 bad. */
static int parse_line(sim_trace *t, size_t len, sim_request **out, sim_err *err)
{
    *out = NULL;
    if (is_blank(t->line, len)) return 0;
    raw_line raw;
    if (recognize_line(t, t->line, t->line + len, &raw)) *out = request_from_raw(t, &raw, err);
    else *out = request_from_jansson(t, len, err);
    return *out ? 1 : -1;
}

/* Under skip_bad a bad line is counted (first message kept) and reading goes on. */
static bool absorb_bad_line(sim_trace *t, const sim_err *err)
{
    if (!t->opts.skip_bad) return false;
    if (t->skipped < SIM_TRACE_SKIPS_KEPT) {
        if (!t->skips) t->skips = sim_xcalloc(SIM_TRACE_SKIPS_KEPT, sizeof *t->skips);
        t->skips[t->skipped] = sim_xstrdup(err->msg);
    }
    t->skipped++;
    return true;
}

static int check_order(sim_trace *t, const sim_request *r, sim_err *err)
{
    if (t->opts.sort) return 0;
    if (t->have_prev && r->timestamp_ms < t->prev_ts)
        return line_err(t, err, "timestamp", "%.15g is before the previous request's %.15g (use --sort to reorder)",
                        r->timestamp_ms, t->prev_ts);
    t->have_prev = true;
    t->prev_ts = r->timestamp_ms;
    return 0;
}

/* The next valid request in file order: 1, 0 at end of file, -1 on error. */
static int read_valid(sim_trace *t, sim_request **out, sim_err *err)
{
    for (;;) {
        size_t len;
        int got = sim_infile_getline(t->f, &t->line, &len, err);
        if (got <= 0) return got; /* a read error is an error, never a short trace */
        t->lineno++;
        int rc = parse_line(t, len, out, err);
        if (rc == 1 && check_order(t, *out, err)) {
            sim_request_free(*out);
            *out = NULL;
            rc = -1;
        }
        if (rc == 1) return 1;
        if (rc < 0 && !absorb_bad_line(t, err)) return -1;
    }
}

/* ---- sort mode: load everything, stable-sort by timestamp -------------- */

/* Line numbers are unique, so ordering ties by line makes qsort stable. */
static int cmp_request_time(const void *a, const void *b)
{
    const sim_request *x = *(sim_request *const *)a, *y = *(sim_request *const *)b;
    if (x->timestamp_ms != y->timestamp_ms) return x->timestamp_ms < y->timestamp_ms ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

static int load_sorted(sim_trace *t, sim_err *err)
{
    size_t cap = 0;
    sim_request *r;
    int rc;
    t->loaded = true;
    while ((rc = read_valid(t, &r, err)) == 1) {
        if (t->nsorted == cap) t->sorted = sim_xrealloc(t->sorted, (cap = cap ? 2 * cap : 1024) * sizeof *t->sorted);
        t->sorted[t->nsorted++] = r;
    }
    if (rc < 0) return -1;
    if (t->nsorted) qsort(t->sorted, t->nsorted, sizeof *t->sorted, cmp_request_time);
    return sim_trace_resample(&t->sorted, &t->nsorted, &t->opts, t->name, err);
}

static int next_sorted(sim_trace *t, sim_request **out, sim_err *err)
{
    if (!t->loaded && load_sorted(t, err)) return -1;
    if (t->next_sorted == t->nsorted) return 0;
    *out = t->sorted[t->next_sorted++];
    return 1;
}

/* ---- the public stream: order, then sampling, then limit --------------- */

int sim_trace_next(sim_trace *t, sim_request **req, sim_err *err)
{
    *req = NULL;
    while (!t->opts.limit || t->emitted < t->opts.limit) {
        sim_request *r;
        int rc = t->opts.sort || t->opts.resample ? next_sorted(t, &r, err) : read_valid(t, &r, err);
        if (rc <= 0) return rc;
        if (t->rng && gsl_rng_uniform(t->rng) >= t->opts.sample) {
            sim_request_free(r);
            continue;
        }
        r->index = t->emitted++;
        *req = r;
        return 1;
    }
    return 0;
}

/* ---- fingerprint -------------------------------------------------------- */

/* The fingerprint is of the decompressed text, so a trace and its gzip
 * copy are the same trace to every record (run rows, baselines, sweep
 * dedup). f is hashed to its end; with o, every byte is also copied there. */
static int hash_text(sim_infile *f, FILE *o, uint64_t *fp, bool *wbad, sim_err *err)
{
    XXH64_state_t *st = XXH64_createState();
    XXH64_reset(st, 0);
    char buf[1 << 16];
    ssize_t k;
    while ((k = sim_infile_read(f, buf, sizeof buf, err)) > 0) {
        XXH64_update(st, buf, (size_t)k);
        if (o) *wbad = *wbad || fwrite(buf, 1, (size_t)k, o) != (size_t)k;
    }
    *fp = XXH64_digest(st);
    XXH64_freeState(st);
    return k < 0 ? -1 : 0;
}

int sim_trace_fingerprint(const char *path, uint64_t *out, sim_err *err)
{
    sim_infile *f;
    if (sim_infile_open(&f, path, NULL, err)) return -1;
    int rc = hash_text(f, NULL, out, NULL, err);
    sim_infile_close(f);
    return rc;
}

/* Copy f's text to a new temporary file (its path into out) while hashing. */
static int spool(sim_infile *f, const char *name, char *out, size_t n, uint64_t *fp, sim_err *err)
{
    const char *dir = getenv("TMPDIR");
    snprintf(out, n, "%s/kvsim-trace-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(out);
    FILE *o = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!o) return sim_errf(err, "%s: cannot make a temporary copy in %s: %s", name, out, strerror(errno));
    bool wbad = false;
    int rc = hash_text(f, o, fp, &wbad, err);
    wbad = fclose(o) != 0 || wbad;
    if (rc == 0 && wbad) rc = sim_errf(err, "%s: cannot write its temporary copy (disk full?)", name);
    if (rc) unlink(out);
    return rc;
}

int sim_trace_materialize(const char *path, char *out, size_t n, bool *spooled, uint64_t *fp, sim_err *err)
{
    struct stat sb;
    bool is_stdin = !strcmp(path, "-");
    *spooled = false;
    if (!is_stdin && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
        snprintf(out, n, "%s", path);
        return sim_trace_fingerprint(path, fp, err);
    }
    sim_infile *f;
    if (sim_infile_open(&f, path, NULL, err)) return -1;
    int rc = spool(f, is_stdin ? "<stdin>" : path, out, n, fp, err);
    sim_infile_close(f);
    *spooled = rc == 0;
    return rc;
}

/* ---- statistics --------------------------------------------------------- */

/* A growable array of doubles (request lengths, for the quantiles). */
typedef struct dvec {
    double *v;
    size_t n, cap;
} dvec;

static void dvec_push(dvec *d, double x)
{
    if (d->n == d->cap) d->v = sim_xrealloc(d->v, (d->cap = d->cap ? 2 * d->cap : 1024) * sizeof *d->v);
    d->v[d->n++] = x;
}

static void summarize(dvec *d, double *mean, double *p50, double *p99)
{
    *mean = *p50 = *p99 = 0;
    if (!d->n) return;
    gsl_sort(d->v, 1, d->n);
    *mean = gsl_stats_mean(d->v, 1, d->n);
    *p50 = gsl_stats_quantile_from_sorted_data(d->v, 1, d->n, 0.50);
    *p99 = gsl_stats_quantile_from_sorted_data(d->v, 1, d->n, 0.99);
}

typedef struct stats_acc {
    sim_keyset seen;
    dvec input, output;
    int64_t first_ns, last_ns;
    int64_t hit_blocks;
    double tokens, hit_tokens;
} stats_acc;

/* docs/definitions.md against an infinite cache: the prefix hit is the leading run of
 * keys already seen; then every key of the request enters the cache. */
static void stats_add(stats_acc *a, sim_trace_stats *s, const sim_request *r, int block_tokens)
{
    if (s->requests == 0 || r->arrival_ns < a->first_ns) a->first_ns = r->arrival_ns;
    if (s->requests == 0 || r->arrival_ns > a->last_ns) a->last_ns = r->arrival_ns;
    s->requests++;
    s->segment_requests += r->nsegs > 0;
    dvec_push(&a->input, r->input_len);
    dvec_push(&a->output, r->output_len);
    int32_t hit = 0;
    while (hit < r->nblocks && sim_keyset_has(&a->seen, r->keys[hit])) hit++;
    for (int32_t i = hit; i < r->nblocks; i++) sim_keyset_add(&a->seen, r->keys[i]);
    s->blocks += r->nblocks;
    a->hit_blocks += hit;
    a->tokens += r->input_len;
    a->hit_tokens += fmin((double)hit * block_tokens, (double)r->input_len);
    if (r->nsegs == 0) sim_block_fit_add(&s->fit, r->input_len, r->nblocks, block_tokens, r->line);
}

static void stats_finish(stats_acc *a, sim_trace_stats *s)
{
    s->duration_s = s->requests ? sim_ns_to_s(a->last_ns - a->first_ns) : 0;
    s->arrival_rate = s->duration_s > 0 ? (double)s->requests / s->duration_s : 0;
    summarize(&a->input, &s->input_mean, &s->input_p50, &s->input_p99);
    summarize(&a->output, &s->output_mean, &s->output_p50, &s->output_p99);
    s->distinct_blocks = (int64_t)a->seen.count;
    s->max_hit_rate_blocks = s->blocks ? (double)a->hit_blocks / (double)s->blocks : 0;
    s->max_hit_rate_tokens = a->tokens > 0 ? a->hit_tokens / a->tokens : 0;
}

/* r joins the kept requests, or is freed: kept from the first request
 * on when it has segments. */
static void keep_or_free(sim_request ***kept, int64_t *n, int64_t *cap, sim_request *r)
{
    if (!kept || *n < 0 || (*n == 0 && r->nsegs == 0)) {
        if (kept && *n == 0) *n = -1; /* the first has no segments: keep none */
        sim_request_free(r);
        return;
    }
    if (*n == *cap) *kept = sim_xrealloc(*kept, (size_t)(*cap = *cap ? 2 * *cap : 1024) * sizeof **kept);
    (*kept)[(*n)++] = r;
}

int sim_trace_compute_stats(const char *path, const sim_trace_opts *opts, sim_trace_stats *out, sim_err *err)
{
    return sim_trace_compute_stats_keep(path, opts, out, NULL, NULL, err);
}

int sim_trace_compute_stats_keep(const char *path, const sim_trace_opts *opts, sim_trace_stats *out,
                                 sim_request ***kept, int64_t *nkept, sim_err *err)
{
    sim_trace *t;
    memset(out, 0, sizeof *out);
    out->block_tokens = opts->block_tokens;
    out->fit = (sim_block_fit)SIM_BLOCK_FIT_INIT;
    if (kept) *kept = NULL, *nkept = 0;
    if (sim_trace_open(&t, path, opts, err)) return -1;
    stats_acc acc = {0};
    sim_keyset_init(&acc.seen, 1 << 15);
    sim_request *r;
    int rc;
    int64_t cap = 0;
    while ((rc = sim_trace_next(t, &r, err)) == 1) {
        stats_add(&acc, out, r, opts->block_tokens);
        keep_or_free(kept, nkept, &cap, r);
    }
    if (rc == 0) {
        stats_finish(&acc, out);
        out->skipped = sim_trace_skipped(t);
    }
    if (kept && (rc != 0 || *nkept < 0)) {
        for (int64_t i = 0; i < *nkept; i++) sim_request_free((*kept)[i]);
        free(*kept);
        *kept = NULL, *nkept = 0;
    }
    sim_keyset_free(&acc.seen);
    free(acc.input.v);
    free(acc.output.v);
    sim_trace_close(t);
    return rc;
}
