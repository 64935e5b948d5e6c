/* tests/test_pic_store.c — the PIC store's grouped pages (sim/store/pic_store.c):
 * a hash_id block's pages kept as one group with LRU runs must behave
 * exactly as one store object per page (kv_pic_params.pages_apart, the
 * plain implementation). A hand-worked case of a run cut by a shorter
 * request, then long random sequences of admissions (with and without
 * only_if_fits), decode growth and releases in random order, on requests
 * sharing block chains of varying lengths and partial last blocks, with
 * both stores compared after every operation: the outcome, the
 * footprint and its peak, the stored blocks and the evictions. And the
 * prefix policy's unbounded one-at-a-time replay counted without a store
 * (kv_pic_prefix_unbounded, for `kvsim trace stats`): by hand, and equal
 * to the replay on a generated RAG trace and on random hash_id requests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "sim/replay/pic_replay.h"
#include "sim/store/pic.h"
#include "tests/testutil.h"

/* A request of input_len tokens over nblocks blocks named by keys. */
typedef struct req {
    sim_request r;
    uint64_t keys[10];
} req;

static void make_req(req *q, const uint64_t *keys, int32_t nblocks, int32_t input_len)
{
    *q = (req){0};
    for (int32_t i = 0; i < nblocks; i++) q->keys[i] = keys[i];
    q->r.keys = q->keys;
    q->r.nblocks = nblocks;
    q->r.input_len = input_len;
    q->r.output_len = 1;
}

static kv_pic_params params(int block_tokens, int64_t capacity, bool private_counts, bool apart)
{
    return (kv_pic_params){.block_tokens = block_tokens,
                           .prefix_tokens = 512,
                           .cacheblend_ratio = 0.15,
                           .epic_tokens = 16,
                           .capacity_blocks = capacity,
                           .private_counts = private_counts,
                           .pages_apart = apart};
}

/* Capacity 40 pages of 16 tokens, block X = 32 pages. A admits X whole
 * (computes 512) and leaves; B takes X's first 10 pages (hits all 160
 * tokens), cutting them out of A's released run; C (30 pages of its own
 * block) needs 30 with 8 free: 22 evictions, X's pages 31 down to 10.
 * B and C leave; D asks for X whole again: only pages 0–9 hit, 512 − 160
 * = 352 computed, 22 pages stored anew (evicting C's last 22). Both
 * stores agree on every figure. */
static void test_pic_store_run_cut(void **state)
{
    for (int apart = 0; apart < 2; apart++) {
        kv_pic_params p = params(16, 40, false, apart);
        kv_pic *s = kv_pic_create(kv_pic_policy_lookup("prefix"), &p);
        uint64_t x = 0x58, c = 0x43;
        req a, b, cc;
        kv_pic_ticket ta = {0}, tb = {0}, tc = {0};
        kv_pic_outcome o;
        make_req(&a, &x, 1, 512);
        make_req(&b, &x, 1, 160);
        make_req(&cc, &c, 1, 480);
        assert_int_equal(kv_pic_admit(s, &a.r, false, &ta, &o), 0);
        assert_int_equal(o.computed_tokens, 512);
        kv_pic_release(s, &ta);
        assert_int_equal(kv_pic_admit(s, &b.r, false, &tb, &o), 0);
        assert_int_equal(o.computed_tokens, 0);
        assert_int_equal(o.reused_blocks, 10);
        assert_int_equal(kv_pic_admit(s, &cc.r, false, &tc, &o), 0);
        assert_int_equal(o.computed_tokens, 480);
        assert_int_equal(kv_pic_evictions(s), 22);
        assert_int_equal(kv_pic_stored_blocks(s), 40);
        kv_pic_release(s, &tb);
        kv_pic_release(s, &tc);
        assert_int_equal(kv_pic_admit(s, &a.r, false, &ta, &o), 0);
        assert_int_equal(o.computed_tokens, 352);
        assert_int_equal(o.reused_blocks, 10);
        assert_int_equal(kv_pic_evictions(s), 44);
        assert_int_equal(kv_pic_footprint(s), 32);
        kv_pic_release(s, &ta);
        kv_pic_ticket_free(&ta);
        kv_pic_ticket_free(&tb);
        kv_pic_ticket_free(&tc);
        kv_pic_destroy(s);
    }
}

/* A random request: one of 5 chains (or, one time in 4, a chain whose
 * last block is its own), 1–6 blocks, the last one partial or full;
 * one in 20 has no blocks (a unique prompt). */
static void random_req(req *q, unsigned *seed)
{
    int32_t nblocks = 1 + (int32_t)(rand_r(seed) % 6), fam = (int32_t)(rand_r(seed) % 5);
    uint64_t keys[10];
    for (int32_t i = 0; i < nblocks; i++) keys[i] = ((uint64_t)(fam + 1) << 32) | (uint64_t)i;
    if (rand_r(seed) % 4 == 0) keys[nblocks - 1] = 0xF00000000ull + (uint64_t)rand_r(seed);
    int32_t input = (nblocks - 1) * 512 + 1 + (int32_t)(rand_r(seed) % 512);
    if (rand_r(seed) % 20 == 0) nblocks = 0;
    make_req(q, keys, nblocks, input);
}

static void assert_same_outcome(const kv_pic_outcome *a, const kv_pic_outcome *b)
{
    assert_int_equal(a->input_tokens, b->input_tokens);
    assert_int_equal(a->computed_tokens, b->computed_tokens);
    assert_int_equal(a->computed_positions, b->computed_positions);
    assert_int_equal(a->chunks, b->chunks);
    assert_int_equal(a->chunk_hits, b->chunk_hits);
    assert_int_equal(a->reused_blocks, b->reused_blocks);
    assert_int_equal(a->private_blocks, b->private_blocks);
    assert_int_equal(a->unsegmented, b->unsegmented);
    assert_int_equal(a->adds_blocks, b->adds_blocks);
}

static void assert_same_store(kv_pic *g, kv_pic *p)
{
    assert_int_equal(kv_pic_footprint(g), kv_pic_footprint(p));
    assert_int_equal(kv_pic_peak_footprint(g), kv_pic_peak_footprint(p));
    assert_int_equal(kv_pic_stored_blocks(g), kv_pic_stored_blocks(p));
    assert_int_equal(kv_pic_evictions(g), kv_pic_evictions(p));
    kv_pic_peak a = kv_pic_peak_state(g), b = kv_pic_peak_state(p);
    assert_int_equal(a.inflight, b.inflight);
    assert_int_equal(a.shared_blocks, b.shared_blocks);
    assert_int_equal(a.held_blocks, b.held_blocks);
    assert_int_equal(a.private_blocks, b.private_blocks);
}

#define INFLIGHT 12

/* One random operation on both stores: admit a new request (while
 * fewer than INFLIGHT are in), grow a random one, or release one. */
static void random_op(kv_pic *g, kv_pic *p, kv_pic_ticket (*t)[2], int *n, unsigned *seed)
{
    int op = (int)(rand_r(seed) % 10);
    if (op < 6 && *n < INFLIGHT) {
        req q;
        random_req(&q, seed);
        bool fits = rand_r(seed) % 2;
        kv_pic_outcome og, op_;
        int rg = kv_pic_admit(g, &q.r, fits, &t[*n][0], &og), rp = kv_pic_admit(p, &q.r, fits, &t[*n][1], &op_);
        assert_int_equal(rg, rp);
        assert_same_outcome(&og, &op_);
        if (rg == 0) (*n)++;
    } else if (op < 7 && *n > 0) {
        int i = (int)(rand_r(seed) % (unsigned)*n);
        int64_t blocks = 1 + rand_r(seed) % 3;
        assert_int_equal(kv_pic_grow(g, &t[i][0], blocks), kv_pic_grow(p, &t[i][1], blocks));
    } else if (*n > 0) {
        int i = (int)(rand_r(seed) % (unsigned)*n);
        kv_pic_release(g, &t[i][0]);
        kv_pic_release(p, &t[i][1]);
        kv_pic_ticket keep[2] = {t[i][0], t[i][1]};
        t[i][0] = t[*n - 1][0], t[i][1] = t[*n - 1][1];
        t[*n - 1][0] = keep[0], t[*n - 1][1] = keep[1];
        (*n)--;
    }
    assert_same_store(g, p);
}

/* 20,000 random operations per setting: 16-token pages (32 a block) and
 * 128-token pages (4 a block), capacities from a few blocks' worth to
 * more than everything, private blocks sharing the capacity or not. */
static void test_pic_store_groups_match_pages(void **state)
{
    const int bts[] = {16, 128};
    const int64_t caps[] = {40, 200, 1000, 100000};
    for (int b = 0; b < 2; b++)
        for (int c = 0; c < 4; c++)
            for (int pc = 0; pc < 2; pc++) {
                kv_pic_params pg = params(bts[b], caps[c], pc, false), pp = params(bts[b], caps[c], pc, true);
                kv_pic *g = kv_pic_create(kv_pic_policy_lookup("prefix"), &pg);
                kv_pic *p = kv_pic_create(kv_pic_policy_lookup("prefix"), &pp);
                kv_pic_ticket t[INFLIGHT][2] = {{{0}}};
                unsigned seed = (unsigned)(1 + b * 8 + c * 2 + pc);
                int n = 0;
                for (int i = 0; i < 20000; i++) random_op(g, p, t, &n, &seed);
                assert_true(kv_pic_evictions(g) > 0 || caps[c] == 100000);
                for (int i = 0; i < INFLIGHT; i++) kv_pic_ticket_free(&t[i][0]), kv_pic_ticket_free(&t[i][1]);
                kv_pic_destroy(g);
                kv_pic_destroy(p);
            }
}

/* Input and computed tokens of the prefix replay, one request at a time
 * through an unbounded store. */
static void replay_unbounded(sim_request *const *reqs, int64_t n, const kv_pic_params *p, int64_t *in, int64_t *comp)
{
    kv_pic *s = kv_pic_create(kv_pic_policy_lookup("prefix"), p);
    kv_pic_ticket t = {0};
    *in = *comp = 0;
    for (int64_t i = 0; i < n; i++) {
        kv_pic_outcome o;
        assert_int_equal(kv_pic_admit(s, reqs[i], false, &t, &o), 0);
        kv_pic_release(s, &t);
        *in += o.input_tokens;
        *comp += o.computed_tokens;
    }
    kv_pic_ticket_free(&t);
    kv_pic_destroy(s);
}

/* By hand (16-token pages, 512-token blocks): A = block x, 512 tokens,
 * all computed; B = x then y, 700 tokens: x's 32 pages hit, 700 − 512 =
 * 188 computed; C = x, 100 tokens: its 6 full pages hit, 100 − 96 = 4.
 * Σ input 1312, Σ computed 704. Then random hash_id requests (spans, the
 * last block often partial) and a generated RAG trace (segment chains):
 * the same sums as the store's replay. Pages of 1 token (512 to a block,
 * more than KV_PIC_MEMBERS): not counted (false). */
static void test_prefix_unbounded_matches_replay(void **state)
{
    uint64_t xy[2] = {0x78, 0x79};
    req h[3];
    make_req(&h[0], xy, 1, 512);
    make_req(&h[1], xy, 2, 700);
    make_req(&h[2], xy, 1, 100);
    sim_request *hr[3] = {&h[0].r, &h[1].r, &h[2].r};
    kv_pic_params p = params(16, SIM_COUNT_UNBOUNDED, false, false);
    int64_t in, comp, rin, rcomp;
    assert_true(kv_pic_prefix_unbounded(&p, hr, 3, &in, &comp));
    assert_int_equal(in, 1312);
    assert_int_equal(comp, 704);
    kv_pic_params one = params(1, SIM_COUNT_UNBOUNDED, false, false);
    assert_false(kv_pic_prefix_unbounded(&one, hr, 3, &in, &comp));
    enum { N = 2000 };
    static req rq[N];
    static sim_request *rr[N];
    unsigned seed = 7;
    for (int i = 0; i < N; i++) random_req(&rq[i], &seed), rr[i] = &rq[i].r;
    assert_true(kv_pic_prefix_unbounded(&p, rr, N, &in, &comp));
    replay_unbounded(rr, N, &p, &rin, &rcomp);
    assert_int_equal(in, rin);
    assert_int_equal(comp, rcomp);
    assert_true(comp < in);
    kv_pic_trace t;
    sim_err err;
    sim_trace_opts topts = sim_trace_default_opts();
    char *path = tu_temp_path(), args[512];
    snprintf(args, sizeof args, "trace gen --workload rag --requests 300 --seed 5 -o %s", path);
    tu_expect_exit(args, 0, NULL);
    assert_int_equal(kv_pic_trace_load(&t, path, &topts, &err), 0);
    assert_true(kv_pic_prefix_unbounded(&p, t.req, t.n, &in, &comp));
    replay_unbounded(t.req, t.n, &p, &rin, &rcomp);
    assert_int_equal(in, rin);
    assert_int_equal(comp, rcomp);
    assert_true(comp < in);
    kv_pic_trace_free(&t);
    tu_remove_temp(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pic_store_run_cut),
        cmocka_unit_test(test_pic_store_groups_match_pages),
        cmocka_unit_test(test_prefix_unbounded_matches_replay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
