/* sim/trace/segments.c — segment traces (docs/pic.md, docs/trace.md): the
 * parser of a line's "segments" list and the content keys of a segment
 * request's blocks.
 *
 * Content keys. A block of B tokens of the packed prompt covers pieces of
 * one or more segments. Each piece is named by what it is a piece of and
 * where: a prefix segment's content block (its chain key over the
 * segment's block ids, so that two prefix block ids share no tokens), a
 * chunk or a named prompt (its id), or a unique prompt (its request line
 * and segment number, which no other request has), plus the piece's start
 * and end offsets inside that unit. The block's content hash is XXH3 over
 * its pieces (one call per block: the pieces are gathered first); its key chains that hash onto the previous block's key as
 * sim_block_key chains hash_ids, so equal keys mean equal token prefixes.
 * The same walk serves every block size: the Mooncake 512-token blocks a
 * segment-only trace is replayed with under kvstore.pic = "none", and the
 * 16-token HBM pages of the PIC policies. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "sim/trace/trace_int.h"

/* ---- parsing ------------------------------------------------------------ */

void sim_seg_buf_free(sim_seg_buf *b)
{
    free(b->segs);
    free(b->ids);
    *b = (sim_seg_buf){0};
}

static const char *const kind_names[SIM_SEG_NKINDS] = {"prefix", "chunk", "prompt"};

int sim_line_verrf(sim_err *err, const char *path, int64_t line, const char *field, const char *fmt, va_list ap)
{
    char problem[768];
    vsnprintf(problem, sizeof problem, fmt, ap);
    return sim_errf(err, "%s:%" PRId64 ": %s: %s", path, line, field, problem);
}

const char *sim_json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "an unknown value";
}

static int seg_kind(const json_t *o, size_t i, sim_seg_kind *out, sim_err *err)
{
    const json_t *k = json_object_get(o, "k");
    if (!k) return sim_errf(err, "segments[%zu].k: missing (prefix|chunk|prompt)", i);
    if (!json_is_string(k))
        return sim_errf(err, "segments[%zu].k: expected a string, got %s", i, sim_json_type_name(k));
    for (int j = 0; j < SIM_SEG_NKINDS; j++)
        if (!strcmp(json_string_value(k), kind_names[j])) {
            *out = (sim_seg_kind)j;
            return 0;
        }
    return sim_errf(err, "segments[%zu].k: \"%s\" is not one of prefix|chunk|prompt", i, json_string_value(k));
}

static int seg_len(const json_t *o, size_t i, int32_t *out, sim_err *err)
{
    const json_t *v = json_object_get(o, "len");
    if (!v) return sim_errf(err, "segments[%zu].len: missing", i);
    if (!json_is_integer(v))
        return sim_errf(err, "segments[%zu].len: expected an integer, got %s", i, sim_json_type_name(v));
    json_int_t n = json_integer_value(v);
    if (n <= 0)
        return sim_errf(err, "segments[%zu].len: %" JSON_INTEGER_FORMAT " tokens (a segment needs at least 1)", i, n);
    if (n > SIM_TRACE_MAX_TOKENS)
        return sim_errf(err, "segments[%zu].len: %" JSON_INTEGER_FORMAT " tokens is too large (max %d)", i, n,
                        SIM_TRACE_MAX_TOKENS);
    *out = (int32_t)n;
    return 0;
}

/* "id": an integer; for a prompt also null (unique text). */
static int seg_id(const json_t *o, size_t i, sim_segment *s, sim_err *err)
{
    const json_t *v = json_object_get(o, "id");
    if (!v)
        return sim_errf(err, "segments[%zu].id: missing%s", i,
                        s->kind == SIM_SEG_PROMPT ? " (null for unique text)" : "");
    if (s->kind == SIM_SEG_PROMPT && json_is_null(v)) {
        s->unique = true;
        return 0;
    }
    if (!json_is_integer(v))
        return sim_errf(err, "segments[%zu].id: expected an integer%s, got %s", i,
                        s->kind == SIM_SEG_PROMPT ? " or null" : "", sim_json_type_name(v));
    s->id = json_integer_value(v);
    return 0;
}

void sim_seg_push_id(sim_seg_buf *b, int64_t id)
{
    if (b->nids == b->ids_cap)
        b->ids = sim_xrealloc(b->ids, (b->ids_cap = b->ids_cap ? 2 * b->ids_cap : 64) * sizeof *b->ids);
    b->ids[b->nids++] = id;
}

/* A prefix segment's hash_ids: integers, one per prefix_tokens-token block. */
static int seg_prefix_ids(const json_t *o, size_t i, int prefix_tokens, sim_seg_buf *b, sim_segment *s, sim_err *err)
{
    if (i != 0) return sim_errf(err, "segments[%zu].k: a prefix segment must come first (and only once)", i);
    const json_t *v = json_object_get(o, "hash_ids");
    if (!v) return sim_errf(err, "segments[%zu].hash_ids: missing (a prefix needs one id per block)", i);
    if (!json_is_array(v))
        return sim_errf(err, "segments[%zu].hash_ids: expected an array, got %s", i, sim_json_type_name(v));
    int64_t want = ((int64_t)s->len + prefix_tokens - 1) / prefix_tokens;
    if ((int64_t)json_array_size(v) != want)
        return sim_errf(err, "segments[%zu].hash_ids: %zu ids but len %" PRId32 " is %" PRId64 " blocks of %d tokens",
                        i, json_array_size(v), s->len, want, prefix_tokens);
    s->first = (int32_t)b->nids;
    s->nids = (int32_t)want;
    for (size_t j = 0; j < json_array_size(v); j++) {
        const json_t *e = json_array_get(v, j);
        if (!json_is_integer(e))
            return sim_errf(err, "segments[%zu].hash_ids: element %zu is not an integer (got %s)", i, j,
                            sim_json_type_name(e));
        sim_seg_push_id(b, json_integer_value(e));
    }
    return 0;
}

static int seg_keys_known(const json_t *o, size_t i, sim_seg_kind kind, sim_err *err)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        bool ok = !strcmp(key, "k") || !strcmp(key, "len") || !strcmp(key, kind == SIM_SEG_PREFIX ? "hash_ids" : "id");
        if (!ok) return sim_errf(err, "segments[%zu].%s: unknown key for a %s segment", i, key, kind_names[kind]);
    }
    return 0;
}

static int seg_parse_one(const json_t *o, size_t i, int prefix_tokens, sim_seg_buf *b, sim_err *err)
{
    if (!json_is_object(o)) return sim_errf(err, "segments[%zu]: expected an object, got %s", i, sim_json_type_name(o));
    sim_segment s = {0};
    if (seg_kind(o, i, &s.kind, err) || seg_keys_known(o, i, s.kind, err) || seg_len(o, i, &s.len, err)) return -1;
    if (s.kind == SIM_SEG_PREFIX ? seg_prefix_ids(o, i, prefix_tokens, b, &s, err) : seg_id(o, i, &s, err)) return -1;
    if (b->total + s.len > SIM_TRACE_MAX_TOKENS)
        return sim_errf(err, "segments[%zu].len: the prompt exceeds %d tokens", i, SIM_TRACE_MAX_TOKENS);
    sim_seg_push(b, &s);
    return 0;
}

void sim_seg_push(sim_seg_buf *b, const sim_segment *s)
{
    b->total += s->len;
    if (b->nsegs == b->segs_cap)
        b->segs = sim_xrealloc(b->segs, (b->segs_cap = b->segs_cap ? 2 * b->segs_cap : 16) * sizeof *b->segs);
    b->segs[b->nsegs++] = *s;
}

int sim_seg_parse(const json_t *v, int prefix_tokens, sim_seg_buf *b, sim_err *err)
{
    b->nsegs = b->nids = 0;
    b->total = 0;
    if (!json_is_array(v)) return sim_errf(err, "segments: expected an array, got %s", sim_json_type_name(v));
    if (json_array_size(v) == 0) return sim_errf(err, "segments: empty (a prompt needs at least one segment)");
    for (size_t i = 0; i < json_array_size(v); i++)
        if (seg_parse_one(json_array_get(v, i), i, prefix_tokens, b, err)) return -1;
    return 0;
}

/* ---- content keys ------------------------------------------------------- */

/* What one piece of a block is a piece of, and which part. */
typedef struct piece {
    uint32_t tag, start, end, pad;
    uint64_t unit; /* prefix: chain key; chunk/prompt: id; unique: request line */
    uint64_t sub;  /* unique: segment number; else 0 */
} piece;

/* One unit of content: a prefix block, a chunk or a prompt. */
typedef struct unit {
    uint32_t tag;
    uint64_t a, b;
    int64_t len;
} unit;

#define WALK_PIECES 8

typedef struct key_walk {
    const sim_request *r;
    int B;
    int64_t limit, pos, block_end;
    int32_t nblocks, done;
    uint64_t prev;
    uint64_t *keys;
    int64_t *raw;
    /* the current block's pieces; a block of many pieces folds every
     * WALK_PIECES of them into `fold` */
    piece buf[WALK_PIECES];
    int nbuf;
    uint64_t fold;
} key_walk;

static void walk_block_start(key_walk *w)
{
    w->nbuf = 0;
    w->fold = 0;
    w->block_end = w->pos + w->B;
}

/* Feed a unit's tokens into the blocks they fall in; false once done. */
static bool walk_unit(key_walk *w, const unit *u)
{
    for (int64_t o = 0; o < u->len && w->done < w->nblocks && w->pos < w->limit;) {
        int64_t n = u->len - o;
        if (n > w->block_end - w->pos) n = w->block_end - w->pos;
        if (n > w->limit - w->pos) n = w->limit - w->pos;
        piece p = {.tag = u->tag, .start = (uint32_t)o, .end = (uint32_t)(o + n), .unit = u->a, .sub = u->b};
        if (w->nbuf == WALK_PIECES) {
            w->fold = XXH3_64bits_withSeed(w->buf, sizeof w->buf, w->fold);
            w->nbuf = 0;
        }
        w->buf[w->nbuf++] = p;
        o += n;
        w->pos += n;
        if (w->pos == w->block_end || w->pos == w->limit) {
            uint64_t h = XXH3_64bits_withSeed(w->buf, (size_t)w->nbuf * sizeof *w->buf, w->fold);
            w->prev = w->keys[w->done] = sim_chain_key(w->prev, (int64_t)h);
            if (w->raw) w->raw[w->done] = (int64_t)h;
            w->done++;
            walk_block_start(w);
        }
    }
    return w->done < w->nblocks && w->pos < w->limit;
}

static bool walk_prefix(key_walk *w, const sim_segment *s, int prefix_tokens)
{
    uint64_t chain = 0;
    for (int32_t j = 0; j < s->nids; j++) {
        chain = sim_chain_key(chain, w->r->seg_ids[s->first + j]);
        int64_t left = s->len - (int64_t)j * prefix_tokens;
        unit u = {.tag = 1, .a = chain, .len = left < prefix_tokens ? left : prefix_tokens};
        if (!walk_unit(w, &u)) return false;
    }
    return true;
}

void sim_segments_keys(const sim_request *r, int prefix_tokens, int B, int64_t limit, int32_t nblocks, uint64_t *keys,
                       int64_t *raw)
{
    key_walk w = {.r = r, .B = B, .limit = limit, .nblocks = nblocks, .keys = keys, .raw = raw};
    if (nblocks <= 0 || limit <= 0) return;
    walk_block_start(&w);
    for (int32_t i = 0; i < r->nsegs; i++) {
        const sim_segment *s = &r->segs[i];
        bool more;
        if (s->kind == SIM_SEG_PREFIX) {
            more = walk_prefix(&w, s, prefix_tokens);
        } else {
            unit u = {.tag = s->kind == SIM_SEG_CHUNK ? 2u : 3u, .a = (uint64_t)s->id, .len = s->len};
            if (s->unique) u = (unit){.tag = 4, .a = (uint64_t)r->line, .b = (uint64_t)i, .len = s->len};
            more = walk_unit(&w, &u);
        }
        if (!more) return;
    }
}
