/* sim/trace/ragpulse.c — RAGPulse trace directory → segment trace
 * (`kvsim trace import ragpulse`, docs/trace.md, docs/pic.md).
 *
 * Three steps. (1) Load the five id → token_length tables into hash maps
 * (sim/index/keymap.h), rejecting malformed rows and duplicate ids. (2) Read
 * 0_trace.jsonl whole: each line becomes a request whose segments follow
 * RAGPulse's prompt order — sys_prompt (one prefix segment: its ids are the
 * prefix's content blocks, its length their sum), passages_ids (a chunk
 * each), history, web_search, user_input (a prompt segment each, keeping the
 * id) — and input_length minus the parts' sum becomes a final unique prompt
 * segment (RAGPulse's README: the template tokens around the parts). A
 * request whose parts sum to MORE than its input_length is inconsistent
 * data: its parts are kept, input_length is raised to their sum, and the
 * stats count it (first line, largest excess) for the caller to warn about.
 * (3) Stable-sort by timestamp (ties keep file order), number the sessions
 * in order of first appearance, and write the lines.
 *
 * What is written, the trace reader (sim/trace/trace.c) accepts, request
 * for request: every count in its range, a timestamp its ns clock holds, a
 * prefix of one id per 512 tokens, no id that reads back as null, at least
 * one request. Input that would break that is an error naming file, line
 * and field (tests/fuzz/fuzz_ragpulse.c checks the round trip). */
#include "sim/trace/ragpulse.h"
#include "sim/trace/trace_int.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "sim/index/keymap.h"
#include "sim/infile.h"
#include "sim/trace/tracegen_rag.h"

/* ---- growing arrays ------------------------------------------------------- */

/* Make room for one more element in *p (n in use, *cap allocated). */
static void *grow(void *p, size_t n, size_t *cap, size_t elem)
{
    if (n < *cap) return p;
    *cap = *cap ? 2 * *cap : 256;
    return sim_xrealloc(p, *cap * elem);
}

/* ---- reading JSONL files line by line -------------------------------------- */

typedef struct rp_lines {
    char *path;    /* DIR/FILE, as messages name it */
    sim_infile *f; /* plain or gzip (sim/infile.h) */
    char *buf;     /* the current line, the reader's buffer */
    int64_t lineno;
} rp_lines;

static int lines_open(rp_lines *l, const char *path, sim_err *err)
{
    memset(l, 0, sizeof *l);
    l->path = sim_xstrdup(path);
    return sim_infile_open(&l->f, l->path, NULL, err);
}

static void lines_close(rp_lines *l)
{
    sim_infile_close(l->f);
    free(l->path);
}

/* "PATH:LINE: FIELD: problem" into err; returns -1. */
static int at_err(const rp_lines *l, sim_err *err, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int at_err(const rp_lines *l, sim_err *err, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = sim_line_verrf(err, l->path, l->lineno, field, fmt, ap);
    va_end(ap);
    return rc;
}

/* Whitespace only, over all n bytes: a line that starts with a NUL byte is
 * not blank (the JSON parser then says what is wrong with it). */
static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') return false;
    return true;
}

/* The next non-blank line as a JSON object: 1 with *obj set (caller
 * decrefs), 0 at the end of the file, -1 on a bad line or a read error. */
static int lines_next(rp_lines *l, json_t **obj, sim_err *err)
{
    size_t len;
    int got;
    while ((got = sim_infile_getline(l->f, &l->buf, &len, err)) == 1) {
        l->lineno++;
        if (blank(l->buf, len)) continue;
        const char *nul = memchr(l->buf, 0, len);
        if (nul) return at_err(l, err, "json", "a NUL byte at byte %td of the line (not JSON text)", nul - l->buf + 1);
        json_error_t je;
        *obj = json_loadb(l->buf, len, JSON_REJECT_DUPLICATES, &je);
        if (!*obj) return at_err(l, err, "json", "malformed JSON (%s)", je.text);
        if (json_is_object(*obj)) return 1;
        at_err(l, err, "json", "expected an object, got %s", sim_json_type_name(*obj));
        json_decref(*obj);
        return -1;
    }
    return got; /* 0 at the end, -1 on a read error (named) */
}

/* A token count in [min, SIM_TRACE_MAX_TOKENS], the trace reader's range
 * (`field` names it in messages). */
static int get_count(const rp_lines *l, const json_t *v, const char *field, int64_t min, int64_t *out, sim_err *err)
{
    if (!v) return at_err(l, err, field, "missing");
    if (!json_is_integer(v)) return at_err(l, err, field, "expected an integer, got %s", sim_json_type_name(v));
    *out = json_integer_value(v);
    if (*out < 0) return at_err(l, err, field, "%" PRId64 " is negative", *out);
    if (*out < min)
        return at_err(l, err, field, "%" PRId64 " tokens (a request needs at least %" PRId64 ")", *out, min);
    if (*out > SIM_TRACE_MAX_TOKENS)
        return at_err(l, err, field, "%" PRId64 " tokens is too large (at most %d)", *out, SIM_TRACE_MAX_TOKENS);
    return 0;
}

/* ---- the id tables -------------------------------------------------------- */

typedef struct rp_row {
    int64_t len;  /* token_length */
    int64_t line; /* where the row is, for duplicate messages */
} rp_row;

typedef struct rp_table {
    const char *file; /* e.g. "2_passages.jsonl" */
    const char *key;  /* e.g. "passage_id" */
    sim_keymap map;   /* id → row */
    rp_row *row;
    size_t n, cap;
} rp_table;

enum { T_SYS, T_PASSAGES, T_HISTORY, T_USER, T_WEB, NTABLES };

/* Each table's id key; its file is sim_ragpulse_files[1 + table]. */
static const char *const table_keys[NTABLES] = {
    [T_SYS] = "sys_prompt_id",  [T_PASSAGES] = "passage_id", [T_HISTORY] = "history_id",
    [T_USER] = "user_input_id", [T_WEB] = "web_search_id",
};

/* One row {"KEY": id, "token_length": L} into t. */
static int table_row(rp_table *t, const rp_lines *l, const json_t *row, sim_err *err)
{
    const json_t *idv = json_object_get(row, t->key);
    int64_t len;
    if (!idv) return at_err(l, err, t->key, "missing");
    if (!json_is_integer(idv)) return at_err(l, err, t->key, "expected an integer, got %s", sim_json_type_name(idv));
    if (get_count(l, json_object_get(row, "token_length"), "token_length", 0, &len, err)) return -1;
    int64_t id = json_integer_value(idv);
    if (id == SIM_SEG_NULL_ID) /* a segment id of INT64_MIN is written as null: unique text */
        return at_err(l, err, t->key, "id %" PRId64 " is reserved (a segment trace's null id); renumber it", id);
    uint64_t where;
    int64_t prev = sim_keymap_probe(&t->map, (uint64_t)id, &where);
    if (prev != SIM_KEYMAP_ABSENT)
        return at_err(l, err, t->key, "duplicate id %" PRId64 " (first on line %" PRId64 ")", id, t->row[prev].line);
    t->row = grow(t->row, t->n, &t->cap, sizeof *t->row);
    t->row[t->n] = (rp_row){.len = len, .line = l->lineno};
    sim_keymap_put_at(&t->map, where, (uint64_t)id, (int64_t)t->n++);
    return 0;
}

static int table_load(rp_table *t, const char *path, int which, sim_err *err)
{
    memset(t, 0, sizeof *t);
    t->file = sim_ragpulse_files[1 + which];
    t->key = table_keys[which];
    sim_keymap_init(&t->map, 1024);
    rp_lines l;
    int rc = lines_open(&l, path, err);
    json_t *row;
    while (rc == 0 && (rc = lines_next(&l, &row, err)) == 1) {
        rc = table_row(t, &l, row, err);
        json_decref(row);
    }
    lines_close(&l);
    return rc;
}

static void table_free(rp_table *t)
{
    sim_keymap_free(&t->map);
    free(t->row);
}

/* ---- session names --------------------------------------------------------- */

/* Interned session_id strings: open addressing on their XXH3 hash, at most
 * half full. */
typedef struct rp_names {
    char **s;
    size_t *slen;
    int64_t *id; /* order of first appearance in the file; −1: empty bucket */
    size_t cap, n;
} rp_names;

static void names_resize(rp_names *t, size_t cap)
{
    rp_names old = *t;
    t->s = sim_xcalloc(cap, sizeof *t->s);
    t->slen = sim_xcalloc(cap, sizeof *t->slen);
    t->id = sim_xmalloc(cap * sizeof *t->id);
    t->cap = cap;
    for (size_t b = 0; b < cap; b++) t->id[b] = -1;
    for (size_t b = 0; b < old.cap; b++) {
        if (old.id[b] < 0) continue;
        size_t nb = XXH3_64bits(old.s[b], old.slen[b]) & (cap - 1);
        while (t->id[nb] >= 0) nb = (nb + 1) & (cap - 1);
        t->s[nb] = old.s[b], t->slen[nb] = old.slen[b], t->id[nb] = old.id[b];
    }
    free(old.s), free(old.slen), free(old.id);
}

/* The number of string s (n bytes, may hold NULs): its first appearance. */
static int64_t names_intern(rp_names *t, const char *s, size_t n)
{
    if (2 * (t->n + 1) > t->cap) names_resize(t, t->cap ? 2 * t->cap : 1024);
    size_t b = XXH3_64bits(s, n) & (t->cap - 1);
    for (; t->id[b] >= 0; b = (b + 1) & (t->cap - 1))
        if (t->slen[b] == n && !memcmp(t->s[b], s, n)) return t->id[b];
    t->s[b] = sim_xmalloc(n + 1);
    memcpy(t->s[b], s, n);
    t->s[b][n] = 0;
    t->slen[b] = n;
    t->id[b] = (int64_t)t->n++;
    return t->id[b];
}

static void names_free(rp_names *t)
{
    for (size_t b = 0; b < t->cap; b++) free(t->s[b]);
    free(t->s), free(t->slen), free(t->id);
}

/* ---- the requests ---------------------------------------------------------- */

typedef struct rp_seg {
    sim_seg_kind kind;
    int64_t id, len;
    size_t hash_off, nhash; /* prefix: its ids in the shared id array */
} rp_seg;

typedef struct rp_req {
    double ts_ms;
    int64_t line, input, output;
    int64_t session; /* interned name number; −1: none */
    size_t seg_off, nseg;
} rp_req;

typedef struct rp_import {
    rp_table tables[NTABLES];
    rp_names names;
    rp_req *req;
    size_t nreq, capreq;
    rp_seg *seg;
    size_t nseg, capseg;
    int64_t *ids;
    size_t nids, capids;
    double max_ts; /* for counting out-of-order lines */
    sim_ragpulse_stats *st;
} rp_import;

static rp_seg *push_seg(rp_import *im, sim_seg_kind kind, int64_t id, int64_t len)
{
    im->seg = grow(im->seg, im->nseg, &im->capseg, sizeof *im->seg);
    rp_seg *s = &im->seg[im->nseg++];
    *s = (rp_seg){.kind = kind, .id = id, .len = len, .hash_off = im->nids};
    return s;
}

static bool is_decimal(const char *s)
{
    size_t digits = 0, dots = 0;
    for (; *s; s++) {
        if (*s >= '0' && *s <= '9') digits++;
        else if (*s == '.' && dots++ == 0) continue;
        else return false;
    }
    return digits > 0;
}

/* timestamp: seconds as a decimal string (or a JSON number) → ms, kept to
 * the microsecond, and below 2^62 ns (146 years), as the trace reader's
 * int64 ns clock needs. */
static int parse_timestamp(const rp_lines *l, const json_t *v, double *ms, sim_err *err)
{
    double s;
    if (!v) return at_err(l, err, "timestamp", "missing");
    if (json_is_string(v)) {
        const char *str = json_string_value(v);
        if (!is_decimal(str)) return at_err(l, err, "timestamp", "'%.40s' is not a decimal number of seconds", str);
        s = strtod(str, NULL);
    } else if (json_is_number(v)) {
        s = json_number_value(v);
        if (s < 0) return at_err(l, err, "timestamp", "%g is negative", s);
    } else {
        return at_err(l, err, "timestamp", "expected seconds as a string, got %s", sim_json_type_name(v));
    }
    *ms = round(s * 1e6) / 1e3;
    if (!(*ms * (double)SIM_NS_PER_MS < 0x1p62))
        return at_err(l, err, "timestamp", "%g s is too large (at most %.0f s)", s, 0x1p62 / 1e9);
    return 0;
}

#define RP_PREFIX_BLOCK 512 /* tokens of a prefix content block but the last (docs/pic.md) */

/* RAGPulse's prompt parts in prompt order, each with its table and the kind
 * of segment its ids become. */
static const struct {
    const char *name;
    int table;
    sim_seg_kind kind;
} parts[] = {
    {"sys_prompt", T_SYS, SIM_SEG_PREFIX},  {"passages_ids", T_PASSAGES, SIM_SEG_CHUNK},
    {"history", T_HISTORY, SIM_SEG_PROMPT}, {"web_search", T_WEB, SIM_SEG_PROMPT},
    {"user_input", T_USER, SIM_SEG_PROMPT},
};
#define NPARTS (sizeof parts / sizeof parts[0])

/* A prefix segment takes one id per RP_PREFIX_BLOCK tokens (the trace
 * reader holds it to that): sys_prompt blocks that add up to another count
 * cannot be written, and blocks that only differ in size (a short one
 * before the last) are written as they are, counted for a warning. */
static int check_prefix(rp_import *im, const rp_lines *l, const char *field, const rp_seg *prefix, bool irregular,
                        sim_err *err)
{
    int64_t want = (prefix->len + RP_PREFIX_BLOCK - 1) / RP_PREFIX_BLOCK;
    if ((int64_t)prefix->nhash != want)
        return at_err(l, err, field,
                      "%zu blocks of %" PRId64 " tokens in all, but a prefix segment takes one id per %d-token block "
                      "(%" PRId64 " here): every sys_prompt block but the last must be %d tokens",
                      prefix->nhash, prefix->len, RP_PREFIX_BLOCK, want, RP_PREFIX_BLOCK);
    if ((irregular || prefix->len > (int64_t)prefix->nhash * RP_PREFIX_BLOCK) && im->st->irregular_prefix++ == 0)
        im->st->irregular_prefix_first_line = l->lineno;
    return 0;
}

/* One part's ids → segments (the prefix part: one segment for all its
 * ids); *sum gains their token lengths. */
static int parse_part(rp_import *im, const rp_lines *l, size_t p, const json_t *arr, int64_t *sum, sim_err *err)
{
    char field[48];
    snprintf(field, sizeof field, "hash_ids.%s", parts[p].name);
    if (!arr) return at_err(l, err, field, "missing");
    if (!json_is_array(arr)) return at_err(l, err, field, "expected an array, got %s", sim_json_type_name(arr));
    const rp_table *t = &im->tables[parts[p].table];
    rp_seg *prefix = NULL;
    bool irregular = false; /* a block before the last is not RP_PREFIX_BLOCK tokens */
    size_t i;
    const json_t *e;
    json_array_foreach(arr, i, e)
    {
        if (!json_is_integer(e))
            return at_err(l, err, field, "element %zu is not an integer (got %s)", i, sim_json_type_name(e));
        int64_t id = json_integer_value(e);
        int64_t row = sim_keymap_get(&t->map, (uint64_t)id);
        if (row == SIM_KEYMAP_ABSENT) return at_err(l, err, field, "id %" PRId64 " not in %s", id, t->file);
        int64_t len = t->row[row].len;
        *sum += len;
        if (len == 0) {
            im->st->empty_parts++;
            continue;
        }
        if (parts[p].kind != SIM_SEG_PREFIX) {
            push_seg(im, parts[p].kind, id, len);
            continue;
        }
        if (!prefix) prefix = push_seg(im, SIM_SEG_PREFIX, 0, 0);
        if (prefix->len != (int64_t)prefix->nhash * RP_PREFIX_BLOCK) irregular = true;
        prefix->len += len;
        prefix->nhash++;
        im->ids = grow(im->ids, im->nids, &im->capids, sizeof *im->ids);
        im->ids[im->nids++] = id;
    }
    return prefix ? check_prefix(im, l, field, prefix, irregular, err) : 0;
}

/* hash_ids: every part present, no unknown one, ids in their tables. */
static int parse_parts(rp_import *im, const rp_lines *l, const json_t *h, int64_t *sum, sim_err *err)
{
    if (!h) return at_err(l, err, "hash_ids", "missing");
    if (!json_is_object(h)) return at_err(l, err, "hash_ids", "expected an object, got %s", sim_json_type_name(h));
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)h, key, v)
    {
        size_t p = 0;
        while (p < NPARTS && strcmp(parts[p].name, key)) p++;
        if (p == NPARTS) return at_err(l, err, "hash_ids", "unknown part '%.40s'", key);
    }
    for (size_t p = 0; p < NPARTS; p++)
        if (parse_part(im, l, p, json_object_get(h, parts[p].name), sum, err)) return -1;
    return 0;
}

/* The remainder segment or the over-length rule (see the top of the file),
 * then the request joins the list. */
static int finish_request(rp_import *im, const rp_lines *l, rp_req *r, int64_t sum, sim_err *err)
{
    sim_ragpulse_stats *st = im->st;
    if (sum < r->input) {
        push_seg(im, SIM_SEG_PROMPT, SIM_SEG_NULL_ID, r->input - sum);
        st->remainders++;
    } else if (sum > r->input) {
        if (st->over++ == 0) st->over_first_line = l->lineno;
        if (sum - r->input > st->over_max_tokens) st->over_max_tokens = sum - r->input;
        r->input = sum;
    }
    if (r->input < 1) return at_err(l, err, "input_length", "0 tokens and no parts (a request needs at least 1)");
    if (r->input > SIM_TRACE_MAX_TOKENS)
        return at_err(l, err, "input_length", "the parts sum to %" PRId64 " tokens (at most %d)", sum,
                      SIM_TRACE_MAX_TOKENS);
    r->nseg = im->nseg - r->seg_off;
    if (im->nreq > 0 && r->ts_ms < im->max_ts) st->reordered++;
    im->max_ts = im->nreq > 0 ? fmax(im->max_ts, r->ts_ms) : r->ts_ms;
    im->req = grow(im->req, im->nreq, &im->capreq, sizeof *im->req);
    im->req[im->nreq++] = *r;
    return 0;
}

static int parse_request(rp_import *im, const rp_lines *l, const json_t *obj, sim_err *err)
{
    rp_req r = {.line = l->lineno, .session = -1, .seg_off = im->nseg};
    if (parse_timestamp(l, json_object_get(obj, "timestamp"), &r.ts_ms, err) ||
        get_count(l, json_object_get(obj, "input_length"), "input_length", 0, &r.input, err) ||
        get_count(l, json_object_get(obj, "output_length"), "output_length", 1, &r.output, err))
        return -1;
    const json_t *sv = json_object_get(obj, "session_id");
    if (sv && !json_is_null(sv)) {
        if (!json_is_string(sv))
            return at_err(l, err, "session_id", "expected a string, got %s", sim_json_type_name(sv));
        r.session = names_intern(&im->names, json_string_value(sv), json_string_length(sv));
    }
    int64_t sum = 0;
    if (parse_parts(im, l, json_object_get(obj, "hash_ids"), &sum, err)) return -1;
    return finish_request(im, l, &r, sum, err);
}

/* Every request of the trace file; a file of none is an error (a trace
 * needs at least one request: kvsim run refuses an empty one). */
static int read_trace(rp_import *im, const char *path, sim_err *err)
{
    rp_lines l;
    int rc = lines_open(&l, path, err);
    json_t *obj;
    while (rc == 0 && (rc = lines_next(&l, &obj, err)) == 1) {
        rc = parse_request(im, &l, obj, err);
        json_decref(obj);
    }
    if (rc == 0 && im->nreq == 0) rc = sim_errf(err, "%s: no requests (every line is blank)", l.path);
    lines_close(&l);
    return rc;
}

/* ---- sort and write ---------------------------------------------------------- */

/* By timestamp, then by line: a stable sort. */
static int by_time(const void *a, const void *b)
{
    const rp_req *x = a, *y = b;
    if (x->ts_ms != y->ts_ms) return x->ts_ms < y->ts_ms ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

/* Sessions are numbered in order of first appearance in the sorted output. */
static void write_all(rp_import *im, FILE *out)
{
    int64_t *dense = sim_xmalloc((im->names.n ? im->names.n : 1) * sizeof *dense);
    for (size_t i = 0; i < im->names.n; i++) dense[i] = -1;
    size_t maxseg = 1;
    for (size_t i = 0; i < im->nreq; i++) maxseg = im->req[i].nseg > maxseg ? im->req[i].nseg : maxseg;
    sim_seg_out *segs = sim_xmalloc(maxseg * sizeof *segs);
    int64_t next = 0;
    for (size_t i = 0; i < im->nreq && !ferror(out); i++) {
        const rp_req *r = &im->req[i];
        int64_t session = r->session < 0           ? -1
                          : dense[r->session] >= 0 ? dense[r->session]
                                                   : (dense[r->session] = next++);
        for (size_t j = 0; j < r->nseg; j++) {
            const rp_seg *s = &im->seg[r->seg_off + j];
            segs[j] = (sim_seg_out){.kind = s->kind,
                                    .id = s->id,
                                    .len = s->len,
                                    .hash_ids = s->nhash ? im->ids + s->hash_off : NULL,
                                    .nhash = s->nhash};
        }
        sim_segtrace_write(out, &(sim_seg_request){.timestamp_ms = r->ts_ms,
                                                   .input_len = r->input,
                                                   .output_len = r->output,
                                                   .session = session,
                                                   .segs = segs,
                                                   .nsegs = r->nseg});
    }
    im->st->sessions = (int64_t)im->names.n;
    free(segs);
    free(dense);
}

static void import_free(rp_import *im)
{
    for (int t = 0; t < NTABLES; t++) table_free(&im->tables[t]);
    names_free(&im->names);
    free(im->req);
    free(im->seg);
    free(im->ids);
}

const char *const sim_ragpulse_files[SIM_RAGPULSE_NFILES] = {
    "0_trace.jsonl",   "1_sys_prompt.jsonl", "2_passages.jsonl",
    "3_history.jsonl", "4_user_input.jsonl", "5_web_search.jsonl",
};

/* DIR/NAME, or DIR/NAME.gz when only that exists (a compressed copy of the
 * trace; either is read by content, sim/infile.h). The caller frees. */
static char *member_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 5;
    char *p = sim_xmalloc(n);
    snprintf(p, n, "%s/%s.gz", dir, name);
    if (access(p, F_OK) == 0) {
        p[n - 4] = 0; /* the plain file, when both exist */
        if (access(p, F_OK)) strcat(p, ".gz");
        return p;
    }
    snprintf(p, n, "%s/%s", dir, name); /* neither: opening it names the plain one */
    return p;
}

int sim_ragpulse_import(const char *dir, FILE *out, const char *out_name, sim_ragpulse_stats *st, sim_err *err)
{
    *st = (sim_ragpulse_stats){0};
    struct stat sb;
    if (stat(dir, &sb)) return sim_errf(err, "%s: cannot open: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return sim_errf(err, "%s: not a directory (a RAGPulse trace is a directory of 0_trace.jsonl and its tables)",
                        dir);
    char *paths[SIM_RAGPULSE_NFILES];
    for (int i = 0; i < SIM_RAGPULSE_NFILES; i++) paths[i] = member_path(dir, sim_ragpulse_files[i]);
    int rc = sim_ragpulse_import_files((const char *const *)paths, out, out_name, st, err);
    for (int i = 0; i < SIM_RAGPULSE_NFILES; i++) free(paths[i]);
    return rc;
}

int sim_ragpulse_import_files(const char *const paths[SIM_RAGPULSE_NFILES], FILE *out, const char *out_name,
                              sim_ragpulse_stats *st, sim_err *err)
{
    *st = (sim_ragpulse_stats){0};
    rp_import im = {.st = st};
    int rc = 0;
    for (int t = 0; rc == 0 && t < NTABLES; t++) rc = table_load(&im.tables[t], paths[1 + t], t, err);
    if (rc == 0) rc = read_trace(&im, paths[0], err);
    if (rc == 0) {
        qsort(im.req, im.nreq, sizeof *im.req, by_time);
        write_all(&im, out);
        st->requests = (int64_t)im.nreq;
        if (fflush(out) || ferror(out)) rc = sim_errf(err, "%s: write error: %s", out_name, strerror(errno));
    }
    import_free(&im);
    return rc;
}
