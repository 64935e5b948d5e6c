/* sim/trace/rechunk.c — coarser hash blocks for a Mooncake trace
 * (sim/trace/rechunk.h has the rule and why it is exact).
 *
 * One pass, one line in memory: parse the line (jansson), chain its fine
 * ids into keys as the trace reader does (sim_block_key), number the keys
 * that end a coarse block in order of first appearance (sim/index/keyset.h),
 * put those numbers in place of hash_ids and write the line back with its
 * other fields as they were. Reals (a timestamp such as 4314.48) are
 * written with the fewest digits that read back to the same double. With
 * key ids (SIM_RECHUNK_IDS_KEY) a coarse id is its key itself, so no set is
 * kept: memory does not grow with the trace (docs/run.md, "Long traces"). */
#include "sim/trace/rechunk.h"
#include "sim/trace/trace.h"
#include "sim/trace/trace_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sim/index/keyset.h"
#include "sim/infile.h"

int sim_rechunk_check(int from_tokens, int to_tokens, sim_err *err)
{
    if (to_tokens < from_tokens)
        return sim_errf(err,
                        "--block-tokens %d is finer than the trace's %d-token blocks: splitting a block would "
                        "invent prefix structure the trace does not record (only coarsening is exact)",
                        to_tokens, from_tokens);
    if (to_tokens % from_tokens)
        return sim_errf(err,
                        "--block-tokens %d is not a multiple of the trace's %d-token blocks: a coarse block must "
                        "be whole fine blocks (try %d or %d)",
                        to_tokens, from_tokens, to_tokens / from_tokens * from_tokens,
                        (to_tokens / from_tokens + 1) * from_tokens);
    return 0;
}

typedef struct rechunk {
    const char *path;
    int64_t line;
    int from, factor;
    bool key_ids; /* ids are the keys themselves: no sets, no distinct counts */
    sim_keyset fine, coarse;
    sim_block_fit fit; /* how the ids fit --from-block-tokens (a wrong size empties hash_ids) */
    sim_rechunk_stats *st;
} rechunk;

static int line_err(const rechunk *rc, sim_err *err, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int line_err(const rechunk *rc, sim_err *err, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = sim_line_verrf(err, rc->path, rc->line, field, fmt, ap);
    va_end(ap);
    return r;
}

/* The line's input_length and hash_ids, checked against the fine block size. */
static int line_fields(rechunk *rc, json_t *obj, json_t **ids, int64_t *nfine_full, sim_err *err)
{
    if (json_object_get(obj, "segments"))
        return line_err(rc, err, "segments",
                        "a segment trace: its blocks are cut at replay by trace.block_tokens, there are no "
                        "hash blocks to coarsen");
    json_t *in = json_object_get(obj, "input_length");
    if (!json_is_integer(in) || json_integer_value(in) < 1)
        return line_err(rc, err, "input_length", "expected a positive integer");
    *ids = json_object_get(obj, "hash_ids");
    if (!json_is_array(*ids)) return line_err(rc, err, "hash_ids", "expected an array");
    int64_t input = json_integer_value(in);
    *nfine_full = (input + rc->from - 1) / rc->from;
    sim_block_fit_add(&rc->fit, input, (int64_t)json_array_size(*ids), rc->from, rc->line);
    if ((int64_t)json_array_size(*ids) > *nfine_full)
        return line_err(rc, err, "hash_ids",
                        "%zu ids, but input_length %" PRId64 " makes ceil(%" PRId64 " / %d) = %" PRId64
                        ": the trace's blocks are smaller than %d tokens (give its block size with "
                        "--from-block-tokens)",
                        json_array_size(*ids), input, input, rc->from, *nfine_full, rc->from);
    return 0;
}

/* A coarse block's id: its number in order of first appearance, or under
 * key ids its chained key less the top bit (a JSON integer is signed). */
static json_int_t coarse_id(rechunk *rc, uint64_t key)
{
    return rc->key_ids ? (json_int_t)(key & INT64_MAX) : (json_int_t)sim_keyset_number(&rc->coarse, key);
}

/* Replace obj's hash_ids by the coarse ids (rechunk.h's rule). */
static int coarsen(rechunk *rc, json_t *obj, sim_err *err)
{
    json_t *ids = NULL;
    int64_t full = 0;
    if (line_fields(rc, obj, &ids, &full, err)) return -1;
    size_t n = json_array_size(ids);
    json_t *out = json_array();
    uint64_t key = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(ids, i);
        if (!json_is_integer(e)) {
            json_decref(out);
            return line_err(rc, err, "hash_ids", "element %zu is not an integer", i);
        }
        key = sim_block_key(key, json_integer_value(e));
        if (!rc->key_ids) sim_keyset_add(&rc->fine, key);
        bool ends = (i + 1) % (size_t)rc->factor == 0 || (i + 1 == n && (int64_t)n == full);
        if (ends) json_array_append_new(out, json_integer(coarse_id(rc, key)));
    }
    rc->st->fine_blocks += (int64_t)n;
    rc->st->coarse_blocks += (int64_t)json_array_size(out);
    json_object_set_new(obj, "hash_ids", out);
    return 0;
}

/* 15 significant digits when every real of the line reads back from them
 * (4314.48, not 4314.4799999999996), else 17. */
static size_t real_precision(json_t *obj)
{
    const char *k;
    json_t *v;
    char buf[40];
    json_object_foreach(obj, k, v)
    {
        if (!json_is_real(v)) continue;
        snprintf(buf, sizeof buf, "%.15g", json_real_value(v));
        if (strtod(buf, NULL) != json_real_value(v)) return JSON_REAL_PRECISION(17);
    }
    return JSON_REAL_PRECISION(15);
}

static int rechunk_line(rechunk *rc, const char *line, size_t len, FILE *out, sim_err *err)
{
    json_error_t je;
    json_t *obj = json_loadb(line, len, 0, &je);
    if (!obj) return line_err(rc, err, "json", "%s", je.text);
    int r = -1;
    if (!json_is_object(obj)) line_err(rc, err, "json", "expected an object, got %s", sim_json_type_name(obj));
    else if ((r = coarsen(rc, obj, err)) == 0) {
        json_dumpf(obj, out, real_precision(obj));
        fputc('\n', out);
        rc->st->requests++;
    }
    json_decref(obj);
    return r;
}

int sim_rechunk(const char *path, int from_tokens, int to_tokens, sim_rechunk_ids ids, FILE *out, const char *out_name,
                sim_rechunk_stats *st, sim_err *err)
{
    *st = (sim_rechunk_stats){0};
    if (sim_rechunk_check(from_tokens, to_tokens, err)) return -1;
    rechunk rc = {.path = strcmp(path, "-") ? path : "<stdin>",
                  .from = from_tokens,
                  .factor = to_tokens / from_tokens,
                  .key_ids = ids == SIM_RECHUNK_IDS_KEY,
                  .fit = SIM_BLOCK_FIT_INIT,
                  .st = st};
    sim_infile *in;
    if (sim_infile_open(&in, path, rc.path, err)) return -1;
    sim_keyset_init_plain(&rc.fine, rc.key_ids ? 1 : 1 << 15);
    sim_keyset_init(&rc.coarse, rc.key_ids ? 1 : 1 << 14);
    char *line;
    size_t len;
    int r;
    while ((r = sim_infile_getline(in, &line, &len, err)) == 1 && !ferror(out)) {
        rc.line++;
        if (strspn(line, " \t\r\n") == len) continue;
        if ((r = rechunk_line(&rc, line, len, out, err))) break;
    }
    st->fine_distinct = rc.key_ids ? -1 : rc.fine.count;
    st->coarse_distinct = rc.key_ids ? -1 : rc.coarse.count;
    sim_keyset_free(&rc.fine);
    sim_keyset_free(&rc.coarse);
    sim_infile_close(in);
    if (r < 0) return -1;
    char text[768];
    if (sim_block_fit_warning(&rc.fit, rc.path, from_tokens, "--from-block-tokens ", text, sizeof text))
        return sim_errf(err, "%s: coarse blocks cut from the wrong fine ones would be wrong or empty", text);
    if (fflush(out) || ferror(out)) return sim_errf(err, "%s: write error: %s", out_name, strerror(errno));
    return 0;
}
