/* sim/replay/hitrate.c — cache-only replay (see hitrate.h): trace loading into a
 * compact key stream, the replay setup (set field by field from the command
 * line or a baseline), the placement rules, the next-use oracle for
 * offline policies, and the replay loop itself. */
#include "sim/replay/hitrate.h"

#include <malloc.h>
#include <math.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/store/evict/registry.h"
#include "sim/index/keymap.h"
#include "sim/index/keyset.h"

/* ======================================================================== */
/* the loaded trace                                                          */
/* ======================================================================== */

static void append_request(kv_replay_trace *t, const sim_request *r, int64_t *req_cap, int64_t *blk_cap)
{
    if (t->nreq + 1 >= *req_cap) {
        *req_cap *= 2;
        t->off = sim_xrealloc(t->off, (size_t)*req_cap * sizeof *t->off);
        t->input_len = sim_xrealloc(t->input_len, (size_t)*req_cap * sizeof *t->input_len);
        t->cls = sim_xrealloc(t->cls, (size_t)*req_cap);
    }
    if (t->nblocks + r->nblocks > *blk_cap) {
        while (t->nblocks + r->nblocks > *blk_cap) *blk_cap *= 2;
        t->keys = sim_xrealloc(t->keys, (size_t)*blk_cap * sizeof *t->keys);
    }
    memcpy(t->keys + t->nblocks, r->keys, (size_t)r->nblocks * sizeof *t->keys);
    t->input_len[t->nreq] = r->input_len;
    t->cls[t->nreq] = (uint8_t)r->cache;
    t->nblocks += r->nblocks;
    t->off[++t->nreq] = t->nblocks;
}

/* Replace every block key by its dense number: 0 for the first distinct
 * key of the trace, 1 for the next new one, and so on. A replay only asks
 * whether two blocks are the same, so numbering changes no result; it lets
 * the replay's indexes be plain arrays (sim_keymap's dense mode) and makes
 * "seen before" a comparison: a key is new exactly when its number equals
 * the count of distinct keys so far. One pass through a numbering key set,
 * requesting buckets a few keys ahead to overlap the cache misses. */
#define NUMBER_PREFETCH 16

static void number_blocks(kv_replay_trace *t)
{
    sim_keyset num; /* sized for a third of the blocks distinct; grows beyond */
    sim_keyset_init(&num, t->nblocks / 3);
    for (int64_t i = 0; i < t->nblocks; i++) {
        if (i + NUMBER_PREFETCH < t->nblocks) sim_keyset_prefetch(&num, t->keys[i + NUMBER_PREFETCH]);
        t->keys[i] = (uint64_t)sim_keyset_number(&num, t->keys[i]);
    }
    t->distinct = num.count;
    sim_keyset_free(&num);
}

void kv_replay_renumber(kv_replay_trace *t)
{
    free(t->next_use);
    t->next_use = NULL;
    number_blocks(t);
}

const char *kv_replay_whole_note(const kv_replay_trace *t, char *buf, size_t n)
{
    if (t->nblocks < KV_REPLAY_WHOLE_BLOCKS) return NULL;
    double mib = (double)t->nblocks * (double)sizeof *t->keys / (1024.0 * 1024.0);
    snprintf(buf, n,
             "the trace is held whole: %" PRId64 " requests, %" PRId64 " blocks, %.0f MiB of block keys, so that "
             "every capacity point replays one stream; memory grows with the trace (docs/run.md, \"Long traces\")",
             t->nreq, t->nblocks, mib);
    return buf;
}

int kv_replay_load(kv_replay_trace *t, const char *path, int block_tokens, sim_err *err)
{
    return kv_replay_load_advice(t, path, block_tokens, "--block-tokens ", err);
}

int kv_replay_load_advice(kv_replay_trace *t, const char *path, int block_tokens, const char *advice, sim_err *err)
{
    *t = (kv_replay_trace){.block_tokens = block_tokens};
    sim_trace_opts opts = sim_trace_default_opts();
    opts.block_tokens = block_tokens;
    sim_trace *tr;
    if (sim_trace_open(&tr, path, &opts, err)) return -1;
    int64_t req_cap = 1024, blk_cap = 1 << 16;
    t->off = sim_xcalloc((size_t)req_cap, sizeof *t->off);
    t->input_len = sim_xmalloc((size_t)req_cap * sizeof *t->input_len);
    t->cls = sim_xmalloc((size_t)req_cap);
    t->keys = sim_xmalloc((size_t)blk_cap * sizeof *t->keys);
    sim_request *r;
    int rc;
    while ((rc = sim_trace_next(tr, &r, err)) == 1) {
        append_request(t, r, &req_cap, &blk_cap);
        sim_request_free(r);
    }
    char warn[768];
    if (rc == 0 &&
        (sim_trace_block_warning(tr, advice, warn, sizeof warn) || sim_trace_hash_warning(tr, warn, sizeof warn)))
        t->block_warning = sim_xstrdup(warn);
    sim_trace_close(tr);
    if (rc == 0 && t->nreq == 0) rc = sim_errf(err, "%s: empty trace (no requests)", path);
    if (rc < 0) {
        kv_replay_free(t);
        return -1;
    }
    number_blocks(t);
    t->path = sim_xstrdup(path);
    return 0;
}

/* Every replay builds its store's tables and frees them at the end. Given
 * back to the kernel, that memory costs a page fault per 4 KiB page on the
 * next replay (on a virtual machine, a third of a replay's time); kept in
 * the process — no trimming of the heap, no separate mapping per large
 * block — the next replay reuses it. */
void kv_replay_keep_memory(void)
{
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, -1);
}

void kv_replay_free(kv_replay_trace *t)
{
    free(t->path);
    free(t->off);
    free(t->keys);
    free(t->input_len);
    free(t->cls);
    free(t->next_use);
    free(t->block_warning);
    *t = (kv_replay_trace){0};
}

/* The oracle offline policies need: for each position in the block stream,
 * the next position holding the same key. One backward pass with, per
 * (dense) key, the nearest later position seen so far. */
static void build_next_use(kv_replay_trace *t)
{
    int64_t *later = sim_xmalloc((size_t)t->distinct * sizeof *later);
    for (int64_t k = 0; k < t->distinct; k++) later[k] = INT64_MAX;
    t->next_use = sim_xmalloc((size_t)t->nblocks * sizeof *t->next_use);
    for (int64_t p = t->nblocks - 1; p >= 0; p--) {
        t->next_use[p] = later[t->keys[p]];
        later[t->keys[p]] = p;
    }
    free(later);
}

/* ======================================================================== */
/* placement: which node serves a request                                    */
/* ======================================================================== */

/* Without timing there are no queues: a placement rule sees the store and
 * how many requests each node has served so far. */
typedef struct replay_placement {
    const char *name, *help;
    int (*pick)(const kv_store *s, int nodes, const int64_t *served, int64_t seq, const uint64_t *keys, int32_t n);
} replay_placement;

/* Of the nodes that have served fewer than cap requests, the one with the
 * longest prefix in its own tiers; ties go to the node that has served the
 * fewest requests, then the lowest index. */
static int longest_prefix_under(const kv_store *s, int nodes, const int64_t *served, int64_t cap, const uint64_t *keys,
                                int32_t n)
{
    int best = -1;
    int32_t best_len = -1;
    for (int i = 0; i < nodes; i++) {
        if (served[i] >= cap) continue;
        int32_t len = kv_store_prefix_local(s, i, keys, n);
        if (len > best_len || (len == best_len && served[i] < served[best])) {
            best = i;
            best_len = len;
        }
    }
    return best;
}

/* Mooncake §7.3.2: the node with the longest prefix in its own tiers. */
static int pick_longest_prefix(const kv_store *s, int nodes, const int64_t *served, int64_t seq, const uint64_t *keys,
                               int32_t n)
{
    return longest_prefix_under(s, nodes, served, INT64_MAX, keys, n);
}

/* Longest prefix with bounded loads (consistent hashing with bounded loads,
 * Mirrokni et al. 2018, over prefixes): only nodes that have served fewer
 * than ⌈1.25 · (seq + 1) / nodes⌉ requests may take this one, so no node gets
 * more than 1.25× its share while the cache still steers every request it
 * can. A trace whose every request shares its first block (a system prompt)
 * spreads over all nodes instead of piling onto the first, as a timed
 * cluster's load-aware router would spread it. */
static int pick_bounded(const kv_store *s, int nodes, const int64_t *served, int64_t seq, const uint64_t *keys,
                        int32_t n)
{
    return longest_prefix_under(s, nodes, served, (int64_t)ceil(1.25 * (double)(seq + 1) / nodes), keys, n);
}

static int pick_in_turn(const kv_store *s, int nodes, const int64_t *served, int64_t seq, const uint64_t *keys,
                        int32_t n)
{
    return (int)(seq % nodes);
}

static const replay_placement placements[] = {
    {"bounded", "longest prefix among the nodes under 1.25x their share of requests (the default)", pick_bounded},
    {"longest_prefix", "longest prefix held by the node itself, ties to the least-used node", pick_longest_prefix},
    {"in_turn", "requests to nodes in turn, ignoring the cache", pick_in_turn},
};

#define NPLACEMENTS (sizeof placements / sizeof placements[0])

static const replay_placement *placement_lookup(const char *name)
{
    for (size_t i = 0; i < NPLACEMENTS; i++)
        if (!strcmp(placements[i].name, name)) return &placements[i];
    return NULL;
}

/* The names of --route, placement's deprecated spelling, which borrowed the
 * conductor's router names (sched/) for different code. */
static const struct {
    const char *old, *now;
} placement_aliases[] = {{"cache_aware_local", "longest_prefix"}, {"round_robin", "in_turn"}};

#define NALIASES (sizeof placement_aliases / sizeof placement_aliases[0])

/* The current name of an old placement name, or NULL. */
static const char *placement_alias(const char *old)
{
    for (size_t i = 0; i < NALIASES; i++)
        if (!strcmp(placement_aliases[i].old, old)) return placement_aliases[i].now;
    return NULL;
}

/* ======================================================================== */
/* the replay setup                                                          */
/* ======================================================================== */

void kv_hitrate_spec_init(kv_hitrate_spec *s)
{
    *s = (kv_hitrate_spec){
        .scope = KV_SCOPE_GLOBAL, .nodes = 1, .block_tokens = 512, .promote = true, .semantics = true};
    snprintf(s->policy, sizeof s->policy, "lru");
    snprintf(s->placement, sizeof s->placement, "bounded");
}

void kv_hitrate_spec_free(kv_hitrate_spec *s)
{
    free(s->trace);
    free(s->capacity);
    json_decref(s->params);
    s->trace = NULL;
    s->capacity = NULL;
    s->params = NULL;
}

int64_t kv_tokens_to_blocks(double tokens, int block_tokens) { return sim_count_in(tokens, block_tokens); }

static int set_trace(kv_hitrate_spec *s, const char *key, const char *v, sim_err *err)
{
    free(s->trace);
    s->trace = sim_xstrdup(v);
    return 0;
}

/* LIST: comma-separated sizes ("1e6,3e6,10e6", "inf"); each ≥ 0. */
static int set_capacity(kv_hitrate_spec *s, const char *key, const char *v, sim_err *err)
{
    size_t len = strlen(v);
    if (len == 0 || v[0] == ',' || v[len - 1] == ',' || strstr(v, ",,"))
        return sim_errf(err, "%s: '%s' is not a list of sizes (expected e.g. 1e6,3e6,inf)", key, v);
    char *copy = sim_xstrdup(v), *save = NULL;
    double *caps = sim_xmalloc((len / 2 + 1) * sizeof *caps);
    int n = 0, rc = 0;
    for (char *item = strtok_r(copy, ",", &save); item && rc == 0; item = strtok_r(NULL, ",", &save))
        rc = sim_parse_count(item, key, &caps[n++], err);
    free(copy);
    if (rc) {
        free(caps);
        return -1;
    }
    free(s->capacity);
    s->capacity = caps;
    s->ncapacity = n;
    return 0;
}

static int set_policy(kv_hitrate_spec *s, const char *key, const char *v, sim_err *err)
{
    const kv_evict_entry *e;
    if (kv_evict_find(v, &e, err)) return -1;
    snprintf(s->policy, sizeof s->policy, "%s", e->name);
    return 0;
}

static int set_scope(kv_hitrate_spec *s, const char *key, const char *v, sim_err *err)
{
    if (kv_scope_from_name(v, &s->scope)) return sim_errf(err, "%s: '%s' is not a scope (global or local)", key, v);
    return 0;
}

static int set_nodes(kv_hitrate_spec *s, const char *key, const char *v, sim_err *err)
{
    int64_t n;
    if (sim_parse_i64(v, key, &n, err)) return -1;
    if (n < 1 || n > 65536) return sim_errf(err, "%s: %s is outside [1, 65536]", key, v);
    s->nodes = (int)n;
    return 0;
}

static int set_placement(kv_hitrate_spec *s, const char *key, const char *v, sim_err *err)
{
    if (!placement_lookup(v)) {
        char known[256] = "";
        for (size_t i = 0; i < NPLACEMENTS; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", placements[i].name);
        return sim_errf(err, "%s: unknown placement '%s' (known: %s)", key, v, known);
    }
    snprintf(s->placement, sizeof s->placement, "%s", v);
    return 0;
}

/* Deprecated: "route" with the old names (or the new ones) sets placement
 * and is remembered for kv_hitrate_deprecation. */
static int set_route(kv_hitrate_spec *s, const char *key, const char *v, sim_err *err)
{
    const char *now = placement_alias(v);
    if (set_placement(s, key, now ? now : v, err)) return -1;
    snprintf(s->route_given, sizeof s->route_given, "%s", v);
    return 0;
}

/* SPEC: comma-separated TIER=TOKENS with TIER in hbm, dram, ssd. */
static int set_tiers(kv_hitrate_spec *s, const char *key, const char *v, sim_err *err)
{
    static const char *const names[KV_NTIERS] = {"hbm", "dram", "ssd"};
    char *copy = sim_xstrdup(v), *save = NULL;
    int rc = 0;
    unsigned seen = 0; /* a tier named twice once kept the last silently */
    for (char *item = strtok_r(copy, ",", &save); item && rc == 0; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        kv_tier t = 0;
        if (eq) *eq = 0;
        while (t < KV_NTIERS && strcmp(item, names[t])) t++;
        char what[64];
        snprintf(what, sizeof what, "%s %s", key, item);
        if (!eq || t == KV_NTIERS)
            rc = sim_errf(err, "%s: '%s' is not TIER=TOKENS with TIER hbm, dram or ssd (e.g. dram=3e6,ssd=30e6)", key,
                          item);
        else if (seen & (1u << t)) rc = sim_errf(err, "%s: %s given twice in '%s'", key, item, v);
        else rc = sim_parse_count(eq + 1, what, &s->tier_tokens[t], err);
        seen |= 1u << t;
        if (rc == 0 && t == KV_TIER_DRAM) s->dram_in_tiers = true;
    }
    free(copy);
    return rc;
}

static int set_block_tokens(kv_hitrate_spec *s, const char *key, const char *v, sim_err *err)
{
    int64_t n;
    if (sim_parse_i64(v, key, &n, err)) return -1;
    if (n < 1 || n > (1 << 30)) return sim_errf(err, "%s: %s is outside [1, 2^30]", key, v);
    s->block_tokens = (int)n;
    return 0;
}

static const struct {
    const char *word;
    bool value;
} bool_words[] = {{"true", true}, {"on", true}, {"1", true}, {"false", false}, {"off", false}, {"0", false}};

static int parse_bool(const char *key, const char *v, bool *out, sim_err *err)
{
    for (size_t i = 0; i < sizeof bool_words / sizeof bool_words[0]; i++)
        if (!strcmp(v, bool_words[i].word)) {
            *out = bool_words[i].value;
            return 0;
        }
    return sim_errf(err, "%s: '%s' is not true or false", key, v);
}

static int set_promote(kv_hitrate_spec *s, const char *key, const char *v, sim_err *err)
{
    return parse_bool(key, v, &s->promote, err);
}

static int set_semantics(kv_hitrate_spec *s, const char *key, const char *v, sim_err *err)
{
    return parse_bool(key, v, &s->semantics, err);
}

static int set_params(kv_hitrate_spec *s, const char *key, const char *v, sim_err *err)
{
    json_error_t je;
    json_t *p = json_loads(v, 0, &je);
    if (!p || !json_is_object(p)) {
        json_decref(p);
        return sim_errf(err, "%s: expected a JSON object such as {\"lfu_age_period\": 1000}", key);
    }
    json_decref(s->params);
    s->params = p;
    return 0;
}

static int set_no_promote(kv_hitrate_spec *s, const char *key, const char *v, sim_err *err)
{
    s->promote = false;
    return 0;
}

static int set_no_semantics(kv_hitrate_spec *s, const char *key, const char *v, sim_err *err)
{
    s->semantics = false;
    return 0;
}

typedef int (*spec_setter)(kv_hitrate_spec *s, const char *key, const char *value, sim_err *err);

static const struct {
    const char *key;
    spec_setter set;
} setters[] = {
    {"trace", set_trace},
    {"capacity-tokens", set_capacity},
    {"policy", set_policy},
    {"scope", set_scope},
    {"nodes", set_nodes},
    {"placement", set_placement},
    {"route", set_route},
    {"tiers", set_tiers},
    {"block-tokens", set_block_tokens},
    {"promote", set_promote},
    {"semantics", set_semantics},
    {"params", set_params},
    {"no-promote", set_no_promote},
    {"no-semantics", set_no_semantics},
};

void kv_hitrate_print_options(FILE *f, bool with_capacity)
{
    fprintf(f, "  --trace FILE            Mooncake JSONL trace (required)\n");
    if (with_capacity)
        fprintf(f, "  --capacity-tokens LIST  DRAM capacity per node in tokens, comma-separated;\n"
                   "                          sizes like 1e6, 3M, inf (default inf)\n");
    fprintf(f, "  --policy NAME           eviction policy of every tier (default lru; see\n"
               "                          kvsim policies); belady = offline optimum, DRAM only\n"
               "  --scope global|local    global: any node's blocks serve every node, stored\n"
               "                          once (Mooncake Store); local: a node sees only its\n"
               "                          own (default global)\n"
               "  --nodes N               nodes, each with the given capacity (default 1)\n"
               "  --placement RULE        how requests pick a node when N > 1 (this replay's\n"
               "                          own rules, not the conductor's policy.router):\n"
               "                          bounded (default): longest prefix held by the\n"
               "                          node, among nodes under 1.25x their share of\n"
               "                          requests; longest_prefix: the same, unbounded\n"
               "                          (ties to the node that served the fewest);\n"
               "                          in_turn: nodes in turn\n"
               "  --route NAME            deprecated name of --placement (cache_aware_local =\n"
               "                          longest_prefix, round_robin = in_turn)\n"
               "  --tiers SPEC            tiers per node, TIER=TOKENS comma-separated, TIER =\n"
               "                          hbm (instance prefix cache), dram, ssd; e.g. ssd=30e6\n"
               "                          or dram=3e6,ssd=30e6 (dram= instead of\n"
               "                          --capacity-tokens). DRAM victims are demoted to SSD.\n"
               "  --block-tokens N        tokens per hash block (default 512)\n"
               "  --params JSON           policy parameters, e.g. '{\"lfu_age_period\": 1000}'\n"
               "  --no-promote            SSD hits stay in SSD (default: promoted to DRAM)\n"
               "  --no-semantics          ignore the trace's \"cache\" field (plain eviction);\n"
               "                          by default ephemeral blocks are not admitted and\n"
               "                          context blocks are never dropped (Mooncake 5.2)\n");
}

int kv_hitrate_set(kv_hitrate_spec *s, const char *key, const char *value, sim_err *err)
{
    for (size_t i = 0; i < sizeof setters / sizeof setters[0]; i++)
        if (!strcmp(setters[i].key, key)) return setters[i].set(s, key, value, err);
    return sim_errf(err, "unknown hitrate field '%s'", key);
}

/* JSON names use '_' where options use '-' (capacity_tokens). */
int kv_hitrate_set_json(kv_hitrate_spec *s, const char *key, const json_t *value, sim_err *err)
{
    char name[64], buf[64];
    snprintf(name, sizeof name, "%s", key);
    for (char *p = name; *p; p++)
        if (*p == '_') *p = '-';
    if (json_is_string(value)) return kv_hitrate_set(s, name, json_string_value(value), err);
    if (json_is_boolean(value)) return kv_hitrate_set(s, name, json_is_true(value) ? "true" : "false", err);
    if (json_is_number(value)) {
        snprintf(buf, sizeof buf, "%.17g", json_number_value(value));
        return kv_hitrate_set(s, name, buf, err);
    }
    if (json_is_object(value)) {
        char *text = json_dumps(value, JSON_COMPACT);
        int rc = kv_hitrate_set(s, name, text, err);
        free(text);
        return rc;
    }
    return sim_errf(err, "%s: expected a string, number, boolean or object", key);
}

int kv_hitrate_finish(kv_hitrate_spec *s, sim_err *err)
{
    if (!s->trace) return sim_errf(err, "a trace is required (--trace FILE)");
    if (s->ncapacity > 0 && s->dram_in_tiers)
        return sim_errf(err, "--tiers dram= and --capacity-tokens both set the DRAM capacity; use one");
    if (s->ncapacity == 0) {
        s->capacity = sim_xmalloc(sizeof *s->capacity);
        s->capacity[0] = s->dram_in_tiers ? s->tier_tokens[KV_TIER_DRAM] : INFINITY;
        s->ncapacity = 1;
    }
    const kv_evict_entry *e = kv_evict_lookup(s->policy);
    if (s->params && kv_evict_params_check(e, s->params, "--params", err)) return -1;
    if (e->offline && (s->tier_tokens[KV_TIER_HBM] > 0 || s->tier_tokens[KV_TIER_SSD] > 0))
        return sim_errf(err, "policy %s: the offline reference supports a DRAM tier only (no hbm/ssd in --tiers)",
                        s->policy);
    return 0;
}

static void format_tokens(double tokens, char *buf, size_t n)
{
    if (isinf(tokens)) snprintf(buf, n, "inf");
    else snprintf(buf, n, "%.6g", tokens);
}

void kv_hitrate_describe(const kv_hitrate_spec *s, char *buf, size_t n)
{
    char hbm[32], ssd[32];
    format_tokens(s->tier_tokens[KV_TIER_HBM], hbm, sizeof hbm);
    format_tokens(s->tier_tokens[KV_TIER_SSD], ssd, sizeof ssd);
    snprintf(buf, n, "policy %s, %s scope, %d node%s%s%s, %d-token blocks, hbm %s, ssd %s tokens/node%s%s", s->policy,
             kv_scope_name(s->scope), s->nodes, s->nodes > 1 ? "s" : "", s->nodes > 1 ? " placed by " : "",
             s->nodes > 1 ? s->placement : "", s->block_tokens, hbm, ssd, s->semantics ? "" : ", cache classes ignored",
             s->promote ? "" : ", no promotion");
}

bool kv_hitrate_deprecation(const kv_hitrate_spec *s, bool json, char *buf, size_t n)
{
    if (!s->route_given[0]) return false;
    const char *now = placement_alias(s->route_given);
    int len = snprintf(buf, n, "%s is deprecated, use %s", json ? "\"route\"" : "--route",
                       json ? "\"placement\"" : "--placement");
    if (now && len >= 0 && (size_t)len < n)
        snprintf(buf + len, n - (size_t)len, " (%s is now %s)", s->route_given, now);
    return true;
}

/* ======================================================================== */
/* replay                                                                    */
/* ======================================================================== */

/* One request's prefix hit into the totals (docs/store.md: hit tokens are
 * capped by the request's input length). */
static void tally_request(const kv_replay_trace *t, int64_t r, int32_t hit, kv_replay_result *out)
{
    int64_t hit_tokens = (int64_t)hit * t->block_tokens;
    out->hit_blocks += hit;
    out->blocks += t->off[r + 1] - t->off[r];
    out->hit_tokens += hit_tokens < t->input_len[r] ? hit_tokens : t->input_len[r];
    out->tokens += t->input_len[r];
}

static void finish_rates(kv_replay_result *out)
{
    out->hit_rate_blocks = out->blocks ? (double)out->hit_blocks / (double)out->blocks : 0;
    out->hit_rate_tokens = out->tokens ? (double)out->hit_tokens / (double)out->tokens : 0;
}

/* docs/store.md: per request, count the prefix hit as the chosen node sees the
 * store, then access every block in order (kv_store_access). */
static int replay(const kv_replay_trace *t, const kv_store_cfg *cfg, const replay_placement *place, bool oracle,
                  kv_replay_result *out, sim_err *err)
{
    kv_store *st;
    if (kv_store_new(&st, cfg, err)) return -1;
    int64_t *served = sim_xcalloc((size_t)cfg->nodes, sizeof *served);
    *out = (kv_replay_result){.requests = t->nreq};
    for (int64_t r = 0; r < t->nreq; r++) {
        const uint64_t *keys = t->keys + t->off[r];
        int32_t n = (int32_t)(t->off[r + 1] - t->off[r]);
        int node = cfg->nodes > 1 ? place->pick(st, cfg->nodes, served, r, keys, n) : 0;
        if (cfg->nodes == 1 && r + 1 < t->nreq)
            kv_store_prefetch(st, 0, t->keys + t->off[r + 1], (int32_t)(t->off[r + 2] - t->off[r + 1]));
        int32_t hit =
            kv_store_access(st, node, keys, n, (sim_cache_class)t->cls[r], oracle ? t->next_use + t->off[r] : NULL);
        tally_request(t, r, hit, out);
        served[node]++;
    }
    finish_rates(out);
    for (kv_tier k = 0; k < KV_NTIERS; k++) kv_store_stats(st, k, &out->tier[k]);
    for (int i = 1; i < cfg->nodes; i++)
        if (served[i] > served[out->busiest_node]) out->busiest_node = i;
    out->busiest_share = t->nreq ? (double)served[out->busiest_node] / (double)t->nreq : 0;
    free(served);
    kv_store_free(st);
    return 0;
}

void kv_replay_skew_note(const kv_hitrate_spec *s, const kv_replay_result *r, char *buf, size_t n)
{
    snprintf(buf, n,
             "placement %s sent %.0f%% of the requests to node %d of %d (fair share %.0f%%): the hit rate and "
             "capacity describe one busy node and %d idle ones; compare --placement bounded (the default) or in_turn",
             s->placement, 100 * r->busiest_share, r->busiest_node, s->nodes, 100.0 / s->nodes, s->nodes - 1);
}

/* Dense indexes cost 4 bytes per distinct key, per node and tier, whatever
 * the capacity: beyond this many entries in all (256 MiB), hashed indexes
 * (which cost per resident block) are used instead. */
#define DENSE_MAX_ENTRIES ((int64_t)1 << 26)

int kv_hitrate_point(kv_replay_trace *t, const kv_hitrate_spec *s, double capacity_tokens, kv_replay_result *out,
                     sim_err *err)
{
    if (t->block_tokens != s->block_tokens)
        return sim_errf(err, "%s: loaded with %d-token blocks, replay asks for %d", t->path, t->block_tokens,
                        s->block_tokens);
    kv_store_cfg cfg = {.nodes = s->nodes,
                        .scope = s->scope,
                        .params = s->params,
                        .promote = s->promote,
                        .ignore_class = !s->semantics};
    for (kv_tier k = 0; k < KV_NTIERS; k++) {
        cfg.tier_blocks[k] =
            kv_tokens_to_blocks(k == KV_TIER_DRAM ? capacity_tokens : s->tier_tokens[k], s->block_tokens);
        cfg.policy[k] = s->policy;
    }
    if (s->nodes == 1) cfg.expected_keys = t->distinct;
    int tiers = 0;
    for (kv_tier k = 0; k < KV_NTIERS; k++) tiers += cfg.tier_blocks[k] > 0;
    if ((int64_t)tiers * s->nodes * t->distinct <= DENSE_MAX_ENTRIES) cfg.key_universe = t->distinct;
    bool oracle = kv_evict_lookup(s->policy)->offline;
    if (oracle && !t->next_use) build_next_use(t);
    cfg.next_use_hints = oracle;
    return replay(t, &cfg, placement_lookup(s->placement), oracle, out, err);
}

/* An infinite cache that admits every block never evicts, so its replay
 * needs no store, only whether each block was seen before — with dense
 * numbering (number_blocks), whether its number is below the count of
 * distinct keys so far. A request's prefix hit is the leading run of seen
 * keys; each unseen key is a miss. The DRAM counters are those an
 * unbounded DRAM tier would keep. */
int kv_hitrate_max(kv_replay_trace *t, kv_replay_result *out, sim_err *err)
{
    *out = (kv_replay_result){.requests = t->nreq};
    kv_cache_stats *dram = &out->tier[KV_TIER_DRAM];
    uint64_t seen = 0;
    for (int64_t r = 0; r < t->nreq; r++) {
        int32_t hit = 0;
        bool leading = true;
        for (int64_t i = t->off[r]; i < t->off[r + 1]; i++) {
            bool new_key = t->keys[i] >= seen;
            seen += new_key;
            leading &= !new_key;
            hit += leading;
        }
        tally_request(t, r, hit, out);
    }
    dram->misses = dram->inserts = (int64_t)seen;
    dram->hits = t->nblocks - (int64_t)seen;
    finish_rates(out);
    return 0;
}
