/* sim/trace/trace_parse.c — one trace line into one request: two front ends
 * (a strict recognizer for flat lines, jansson for everything else) fill one
 * raw line, and one validator turns it into a request with its chained block
 * keys (docs/trace.md). Called by the stream of sim/trace/trace.c. */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
/* The same XXH3 as libxxhash, compiled in here so that the compiler sees the
 * 8-byte input of sim_block_key and keeps only that case's few multiplies:
 * key chaining runs once per block of every trace read. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "sim/trace/trace_int.h"

/* Keys chain each raw id onto the key of its prefix: XXH3-64 over the id's
 * eight little-endian bytes, seeded with the previous key, so equal ids at
 * different prefixes name different blocks (Mooncake §3.2.1). */
uint64_t sim_block_key(uint64_t prev_key, int64_t hash_id) { return sim_chain_key(prev_key, hash_id); }

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
int sim_trace_line_err(const sim_trace *t, sim_err *err, const char *field, const char *fmt, ...)
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
    if (v->kind == RAW_ABSENT) return sim_trace_line_err(t, err, name, "missing");
    if (v->kind != RAW_INT) return sim_trace_line_err(t, err, name, "expected an integer, got %s", raw_type_name(v));
    if (v->i < 0) return sim_trace_line_err(t, err, name, "%" PRId64 " is negative", v->i);
    if (v->i == 0) return sim_trace_line_err(t, err, name, "0 tokens (a request needs at least 1)");
    if (v->i > SIM_TRACE_MAX_TOKENS)
        return sim_trace_line_err(t, err, name, "%" PRId64 " tokens is too large (max %d)", v->i, SIM_TRACE_MAX_TOKENS);
    *out = (int32_t)v->i;
    return 0;
}

/* A non-negative number (timestamp, SLOs); *out untouched when absent and optional. */
static int get_number(const sim_trace *t, const raw_line *raw, field_id f, bool required, double *out, sim_err *err)
{
    const raw_field *v = &raw->f[f];
    const char *name = field_keys[f].name;
    if (v->kind == RAW_ABSENT) return required ? sim_trace_line_err(t, err, name, "missing") : 0;
    if (v->kind == RAW_STRING && f == F_TIMESTAMP)
        return sim_trace_line_err(t, err, name,
                                  "expected a number, got a string: a trace in another format? convert it with "
                                  "`kvsim trace import ragpulse|azure|burstgpt`");
    if (v->kind != RAW_INT && v->kind != RAW_REAL)
        return sim_trace_line_err(t, err, name, "expected a number, got %s", raw_type_name(v));
    double x = v->kind == RAW_INT ? (double)v->i : v->d;
    if (x < 0) return sim_trace_line_err(t, err, name, "%.15g is negative", x);
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
    if (v->kind != RAW_INT) return sim_trace_line_err(t, err, name, "expected an integer, got %s", raw_type_name(v));
    if (v->i < 0) return sim_trace_line_err(t, err, name, "%" PRId64 " is negative", v->i);
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
        return sim_trace_line_err(t, err, r->turn >= 0 ? "turn" : "think_ms",
                                  "given without \"session\" (it orders a session's turns)");
    if (r->think_ms > SIM_TRACE_MAX_THINK_MS)
        return sim_trace_line_err(t, err, "think_ms", "%.15g is too large (max %.0f, a year)", r->think_ms,
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
    if (v->kind != RAW_STRING)
        return sim_trace_line_err(t, err, "cache", "expected a string, got %s", raw_type_name(v));
    for (size_t i = 0; i < sizeof cache_names / sizeof cache_names[0]; i++)
        if (strlen(cache_names[i].name) == v->slen && memcmp(v->s, cache_names[i].name, v->slen) == 0) {
            *out = cache_names[i].cls;
            return 0;
        }
    return sim_trace_line_err(t, err, "cache", "\"%.*s\" is not one of ephemeral|context", (int)v->slen, v->s);
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
    if (v->kind == RAW_ABSENT) return sim_trace_line_err(t, err, "hash_ids", "missing");
    if (v->kind == RAW_JSON && json_is_array(v->json)) {
        t->ids.n = 0;
        for (size_t i = 0; i < json_array_size(v->json); i++) {
            const json_t *e = json_array_get(v->json, i);
            if (!json_is_integer(e))
                return sim_trace_line_err(t, err, "hash_ids", "element %zu is not an integer (got %s)", i,
                                          sim_json_type_name(e));
            ids_push(&t->ids, json_integer_value(e));
        }
    } else if (v->kind != RAW_IDS) {
        return sim_trace_line_err(t, err, "hash_ids", "expected an array, got %s", raw_type_name(v));
    }
    int64_t bt = t->opts.block_tokens;
    int64_t max_blocks = (input_len + bt - 1) / bt;
    if ((int64_t)t->ids.n > max_blocks)
        return sim_trace_line_err(t, err, "hash_ids",
                                  "%zu ids but input_length %" PRId32 " allows at most %" PRId64 " blocks of %" PRId64
                                  " tokens",
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
        return sim_trace_line_err(t, err, "segments", "expected an array, got %s", raw_type_name(v));
    sim_err e;
    if (v->kind == RAW_JSON && sim_seg_parse(v->json, t->opts.block_tokens, &t->segs, &e))
        return sim_errf(err, "%s:%" PRId64 ": %s", t->name, t->lineno, e.msg);
    if (raw->f[F_INPUT].kind == RAW_ABSENT) {
        *input_len = (int32_t)t->segs.total;
        return 0;
    }
    if (get_length(t, raw, F_INPUT, input_len, err)) return -1;
    if (*input_len != t->segs.total)
        return sim_trace_line_err(t, err, "input_length", "%" PRId32 " but the segments' lengths sum to %" PRId64,
                                  *input_len, t->segs.total);
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
        sim_trace_line_err(t, err, "timestamp", "%.15g is too large", fields.timestamp_ms);
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
        sim_trace_line_err(
            t, err, "json", "malformed JSON (%s at column %d)%s", je.text, je.column,
            csv ? ": a CSV file? kvsim reads Mooncake-format JSONL; convert a CSV trace with `kvsim trace import "
                  "azure|burstgpt`"
                : "");
        return NULL;
    }
    sim_request *r = NULL;
    if (!json_is_object(obj)) {
        sim_trace_line_err(t, err, "json", "expected an object, got %s", sim_json_type_name(obj));
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
int sim_trace_parse_line(sim_trace *t, size_t len, sim_request **out, sim_err *err)
{
    *out = NULL;
    if (is_blank(t->line, len)) return 0;
    raw_line raw;
    if (recognize_line(t, t->line, t->line + len, &raw)) *out = request_from_raw(t, &raw, err);
    else *out = request_from_jansson(t, len, err);
    return *out ? 1 : -1;
}
