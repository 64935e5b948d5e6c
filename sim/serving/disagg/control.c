/* sim/serving/disagg/control.c — the cluster's control plane: periodic samples of every
 * instance and of replica counts, the PD-ratio controller's mechanism
 * (drain → switch → serve the other role), and scheduled failures and
 * recoveries (Mooncake §5.1, §5.3, Fig. 18). Policies decide (sched/pd_*.c);
 * this file carries the decisions out. */
#include "sim/serving/disagg/cluster_int.h"

#include <math.h>
#include <stdlib.h>

static const char *const role_names[] = {[ROLE_PREFILL] = "prefill", [ROLE_DECODE] = "decode"};
static const char *const state_names[] = {[ST_ACTIVE] = "active",
                                          [ST_DRAINING] = "draining",
                                          [ST_SWITCHING] = "switching",
                                          [ST_DOWN] = "down",
                                          [ST_OFF] = "off"};

static void push_load(load_samples *s, double v)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->v = sim_xrealloc(s->v, (size_t)s->cap * sizeof *s->v);
    }
    s->v[s->n++] = v;
}

void sim_control_free(cluster *c)
{
    free(c->ticks.last);
    free(c->ticks.held);
    free(c->ticks.cur);
    free(c->prefill_loads.v);
    free(c->decode_loads.v);
    sim_series_free(&c->series);
}

void sim_control_start(cluster *c)
{
    const sim_config *cfg = c->cfg;
    int64_t t0 = c->run->first_arrival;
    sim_engine_push(c->eng, t0, EV_SAMPLE, -1, 0, NULL);
    if (cfg->replica_period_s > 0)
        sim_engine_push(c->eng, t0 + sim_s_to_ns(cfg->replica_period_s), EV_REPLICAS, -1, 0, NULL);
    if (c->pd->decide) sim_engine_push(c->eng, t0 + sim_s_to_ns(c->pd->period_s(c->pd_st)), EV_CONTROL, -1, 0, NULL);
    for (int i = 0; i < cfg->n_faults; i++)
        sim_engine_push(c->eng, sim_s_to_ns(cfg->faults[i].at_s), EV_FAULT, cfg->faults[i].instance, (uint32_t)i, NULL);
}

/* ---- idle spans -------------------------------------------------------------------
 *
 * Samples and replica snapshots cost what the work costs, not what the
 * simulated time costs. Between events nothing in the cluster changes, and
 * a sample row reads state only — except a prefill instance's queue time,
 * which counts down while it runs or is blocked. So when no prefill
 * instance runs or is blocked, every periodic tick before the next event
 * that is not itself a periodic sample (an arrival, a fault, a transfer…)
 * would read the same values as this one: the cluster is frozen until
 * then. A frozen period is crossed in one step: the next tick is the last
 * one of the span, and the ticks in between are accounted for without
 * being computed (the sample counter advances so the row stride keeps its
 * phase, and the last skipped tick that would have been written is held as
 * record_tick would hold it). Samples rows are therefore exactly the rows of
 * computing every tick; replica snapshots keep the first and last of a
 * frozen span. Not with a PD-ratio controller, which averages every
 * sample of its period. */

static bool changes_state(const sim_event *ev) { return ev->kind != EV_SAMPLE && ev->kind != EV_REPLICAS; }

static bool frozen(const cluster *c)
{
    for (int i = 0; i < c->n_inst; i++) {
        const instance *in = &c->inst[i];
        if (in->role == ROLE_PREFILL && (in->running || in->blocked_until > c->eng->now)) return false;
    }
    return true;
}

/* Whole periods from now that can be crossed at once: ticks now + k·period,
 * k = 1 … K, all strictly before the next state-changing event; the caller
 * steps to k = K (K ≤ 1: no skip). */
static int64_t frozen_ticks(cluster *c, int64_t period)
{
    if (c->pd->decide || !frozen(c)) return 0;
    int64_t next = sim_engine_next_time_of(c->eng, changes_state);
    if (next == INT64_MAX) return 0;
    return (next - c->eng->now - 1) / period;
}

/* Re-arm a periodic event while the replay has work left, `ticks` periods on. */
static void again(cluster *c, int kind, int64_t period, int64_t ticks)
{
    if (!sim_serving_done(c->run)) sim_engine_push(c->eng, c->eng->now + ticks * period, kind, -1, 0, NULL);
}

/* ---- samples -------------------------------------------------------------------- */

/* One instance's row (docs/definitions.md, "The samples table"). queue_len
 * counts the requests waiting there, running those in service: on a
 * prefill instance its FIFO queue and the request it prefills (0 or 1; a
 * pipeline stage of a group member's request is counted on that member);
 * on a decode instance the requests whose KV arrived and wait for room in
 * the batch, and the running batch. Prefill load = estimated queue time /
 * SLO_ttft; decode load = the greater of estimated iteration time / SLO_tbt
 * and reserved KV / HBM capacity, as the policies see it (Mooncake §4.3.1,
 * sched_decode_load). */
static sim_sample_row sample_row(cluster *c, const sched_ctx *ctx, const instance *in, double t_ms)
{
    sim_sample_row row = {
        .t_ms = t_ms, .instance = in->id, .role = role_names[in->role], .state = state_names[in->state]};
    if (in->role == ROLE_PREFILL) {
        row.queue_len = in->queue.n;
        row.running = in->running != NULL;
        row.load = ctx->prefill[in->view].queue_s / (c->cfg->slo_ttft_ms / 1e3);
        int64_t cap = sim_config_blocks(c->cfg, c->cfg->dram_bytes);
        row.kv_used = cap > 0 ? (double)c->cache->footprint(c->cache_st, in->id, KV_TIER_DRAM) / (double)cap : 0;
        if (c->pic) row.kv_used = sim_pic_used(c, in->id);
    } else {
        row.queue_len = in->waiting.n;
        row.running = row.batch = in->nbatch;
        double tbt = in->nbatch ? sim_est_decode_iter_s(&c->est, in->nbatch, in->ctx_tokens) : 0;
        double mem = sim_cluster_decode_mem(c, in), tbt_load = tbt / c->slo_tbt_s;
        row.load = tbt_load > mem ? tbt_load : mem;
        row.kv_used = (double)in->kv_batch / (double)c->kv_capacity;
        row.preemptions = in->preemptions;
    }
    return row;
}

/* ---- samples rows ----------------------------------------------------------------
 *
 * Rows cost what they are worth. A tick (one row per instance, every
 * instance at the same t_ms) is written every stride-th sample period,
 * stride = ceil(instances / (period · metrics.sample_rows_per_s)), so a
 * large cluster writes at most that many rows per simulated second (the
 * control plane still samples every period). And a tick whose rows all
 * equal the last written tick's (an idle cluster) is held back: when a
 * change ends a run of identical ticks, the run's last tick is written
 * first, and a held tick is written at the end. SQL over one t_ms still
 * sees every instance, a line through the rows (kvsim report's load
 * timelines) is the line through every tick, and an idle span costs two
 * ticks however long it lasts. */

static bool same_values(const sim_sample_row *a, const sim_sample_row *b)
{
    return a->role == b->role && a->state == b->state && a->queue_len == b->queue_len && a->running == b->running &&
           a->load == b->load && a->batch == b->batch && a->kv_used == b->kv_used && a->preemptions == b->preemptions;
}

static void write_tick(cluster *c, const sim_sample_row *rows)
{
    for (int i = 0; i < c->n_inst && !c->run->failed; i++)
        if (sim_results_add_sample(c->run->db, &rows[i], c->run->err)) c->run->failed = true;
}

static void swap_rows(sim_sample_row **a, sim_sample_row **b)
{
    sim_sample_row *x = *a;
    *a = *b;
    *b = x;
}

/* ticks.cur holds this tick's rows: write or hold them. */
static void record_tick(cluster *c)
{
    sample_ticks *k = &c->ticks;
    bool same = k->written;
    for (int i = 0; i < c->n_inst && same; i++) same = same_values(&k->cur[i], &k->last[i]);
    if (same) {
        swap_rows(&k->held, &k->cur);
        k->holding = true;
        return;
    }
    if (k->holding) write_tick(c, k->held);
    write_tick(c, k->cur);
    swap_rows(&k->last, &k->cur);
    k->written = true;
    k->holding = false;
}

static void ticks_init(cluster *c)
{
    sample_ticks *k = &c->ticks;
    size_t n = (size_t)c->n_inst;
    k->last = sim_xcalloc(n, sizeof *k->last);
    k->held = sim_xcalloc(n, sizeof *k->held);
    k->cur = sim_xcalloc(n, sizeof *k->cur);
    k->stride = 1;
    double r = c->cfg->sample_rows_per_s, s = r > 0 ? ceil(c->n_inst / (c->cfg->sample_period_s * r)) : 1;
    if (s > 1) k->stride = s < 1e15 ? (int64_t)s : (int64_t)1e15;
}

/* Record skipped tick j (the rows now, at its time). */
static void record_skipped(cluster *c, int64_t period, int64_t j)
{
    sched_ctx ctx = sim_cluster_ctx(c, false);
    double t_ms = sim_ns_to_ms(c->eng->now + j * period);
    for (int i = 0; i < c->n_inst; i++) c->ticks.cur[i] = sample_row(c, &ctx, &c->inst[i], t_ms);
    record_tick(c);
}

/* Ticks 1 … n after this one, frozen: advance the counter, and record the
 * first and the last of them that the stride would have written — the first
 * is written when it differs from the last written tick, the last is held —
 * which is what recording every one of them does. */
static void skip_ticks(cluster *c, int64_t period, int64_t n)
{
    sample_ticks *k = &c->ticks;
    if (k->cur) { /* tick j's counter is k->tick + j - 1 */
        int64_t first = 1 + (k->stride - k->tick % k->stride) % k->stride;
        int64_t last = n - (k->tick + n - 1) % k->stride;
        if (first <= n) record_skipped(c, period, first);
        if (last > first) record_skipped(c, period, last);
    }
    k->tick += n;
}

/* This tick: every instance's row (kept in ticks.cur when rows are
 * written), the active instances' loads for the PD-ratio controller, and
 * the pools' mean loads (prefill, decode) into *pool. */
static void sample_now(cluster *c, bool rows, double pool[2])
{
    sched_ctx ctx = sim_cluster_ctx(c, false);
    double t_ms = sim_ns_to_ms(c->eng->now), sum[2] = {0, 0};
    int n[2] = {0, 0};
    for (int i = 0; i < c->n_inst; i++) {
        const instance *in = &c->inst[i];
        sim_sample_row row = sample_row(c, &ctx, in, t_ms);
        if (rows) c->ticks.cur[i] = row;
        if (in->state != ST_ACTIVE) continue;
        /* Loads feed the PD-ratio controller, which empties them each
         * period; without one nothing reads them (nor may they pile up). */
        if (c->pd->decide) push_load(in->role == ROLE_PREFILL ? &c->prefill_loads : &c->decode_loads, row.load);
        sum[in->role] += row.load, n[in->role]++;
    }
    for (int r = 0; r < 2; r++) pool[r] = n[r] ? sum[r] / n[r] : 0;
}

void sim_control_on_sample(cluster *c, const sim_event *ev)
{
    sample_ticks *k = &c->ticks;
    bool rows = sim_results_keeps_samples(c->run->db);
    if (rows && !k->cur) ticks_init(c);
    rows = rows && k->tick++ % k->stride == 0;
    double pool[2];
    sample_now(c, rows, pool);
    if (rows) record_tick(c);
    if (k->holding && sim_serving_done(c->run)) write_tick(c, k->held), k->holding = false;
    int64_t period = sim_s_to_ns(c->cfg->sample_period_s), K = frozen_ticks(c, period);
    if (K > 1) skip_ticks(c, period, K - 1);
    /* frozen ticks repeat this one's loads */
    c->series.period_s = c->cfg->sample_period_s;
    sim_series_add(&c->series, sim_ns_to_s(c->eng->now), pool[ROLE_PREFILL], pool[ROLE_DECODE], K > 1 ? K : 1);
    again(c, EV_SAMPLE, period, K > 1 ? K : 1);
}

/* ---- load dynamics ------------------------------------------------------------ */

#define MAX_LAG_S 120.0 /* corr(P, D)'s lags: up to 2 minutes either way (Fig. 6's cycles are shorter) */

static json_t *num_or_null(double v) { return isnan(v) ? json_null() : json_real(v); }

void sim_control_summarize(cluster *c, json_t *summary)
{
    const sim_series *s = &c->series;
    const json_t *st = json_object_get(summary, "steady_state");
    double from = json_number_value(json_object_get(st, "start_s")),
           to = json_number_value(json_object_get(st, "end_s"));
    double dt = s->period_s * (double)s->step;
    size_t lo = 0, hi = 0;
    while (lo < s->n && s->t0_s + (double)lo * dt < from) lo++;
    for (hi = lo; hi < s->n && s->t0_s + (double)hi * dt <= to;) hi++;
    sim_oscillation o;
    size_t max_lag = dt > 0 ? (size_t)(MAX_LAG_S / dt) : 0;
    sim_oscillation_of(s->p ? s->p + lo : NULL, s->d ? s->d + lo : NULL, hi - lo, max_lag, &o);
    if (o.n < 2) /* one sample swings nothing: undefined, not 0 (a burst's zero-length window said "no swing") */
        o.std_p = o.std_d = o.p2t_p = o.p2t_d = NAN;
    json_t *j = json_pack("{s:I, s:f}", "samples", (json_int_t)o.n, "period_s", dt);
    json_object_set_new(j, "prefill_std", num_or_null(o.std_p));
    json_object_set_new(j, "decode_std", num_or_null(o.std_d));
    json_object_set_new(j, "prefill_p2t", num_or_null(o.p2t_p));
    json_object_set_new(j, "decode_p2t", num_or_null(o.p2t_d));
    json_object_set_new(j, "corr_pd", num_or_null(o.corr));
    json_object_set_new(j, "best_lag_s", num_or_null(o.best_lag * dt));
    json_object_set_new(j, "best_lag_corr", num_or_null(o.best_corr));
    json_object_set_new(summary, "load_dynamics", j);
}

typedef struct replica_ctx {
    cluster *c;
    double t_ms;
} replica_ctx;

static void record_replica(void *ctx, uint64_t key, int replicas)
{
    replica_ctx *rc = ctx;
    if (replicas >= 2 && !rc->c->run->failed &&
        sim_results_add_replica(rc->c->run->db, rc->t_ms, key, replicas, rc->c->run->err))
        rc->c->run->failed = true;
}

/* Keys with two or more replicas (a key with one copy is implied by the
 * cache contents), every metrics.replica_period_ms as in Mooncake Fig. 18. */
void sim_control_on_replicas(cluster *c, const sim_event *ev)
{
    replica_ctx rc = {c, sim_ns_to_ms(c->eng->now)};
    c->cache->foreach_replica(c->cache_st, record_replica, &rc);
    int64_t period = sim_s_to_ns(c->cfg->replica_period_s), K = frozen_ticks(c, period);
    again(c, EV_REPLICAS, period, K > 1 ? K : 1);
}

/* ---- PD-ratio control ------------------------------------------------------------ */

/* The active instance of `role` with the least work: the cheapest to drain. */
static instance *least_busy(cluster *c, inst_role role)
{
    instance *best = NULL;
    int best_work = 0;
    for (int i = 0; i < c->n_inst; i++) {
        instance *in = &c->inst[i];
        if (in->role != role || in->state != ST_ACTIVE) continue;
        int work = role == ROLE_PREFILL ? in->queue.n + (in->running != NULL) : in->nbatch + in->pending;
        if (!best || work < best_work) best = in, best_work = work;
    }
    return best;
}

static int active_in_role(const cluster *c, inst_role role)
{
    int n = 0;
    for (int i = 0; i < c->n_inst; i++) n += c->inst[i].role == role && c->inst[i].state == ST_ACTIVE;
    return n;
}

static int powered_on(const cluster *c)
{
    int n = 0;
    for (int i = 0; i < c->n_inst; i++) n += c->inst[i].state != ST_OFF;
    return n;
}

static instance *first_off(cluster *c)
{
    for (int i = 0; i < c->n_inst; i++)
        if (c->inst[i].state == ST_OFF) return &c->inst[i];
    return NULL;
}

/* Drain `in`; when idle it switches to next_role, or powers off. */
static void start_drain(cluster *c, instance *in, inst_role next_role, bool power_off)
{
    in->state = ST_DRAINING;
    in->next_role = next_role;
    in->power_off = power_off;
    c->switching = true;
    sim_cluster_check_drained(c, in);
}

/* Power an off instance on into `role`; it serves after cluster.switch_ms. */
static void power_on(cluster *c, instance *in, inst_role role)
{
    in->state = ST_SWITCHING;
    in->next_role = role;
    c->switching = true;
    sim_engine_push(c->eng, c->eng->now + sim_s_to_ns(c->cfg->switch_s), EV_SWITCH_DONE, in->id, in->gen, NULL);
}

static void carry_out(cluster *c, const sched_pd_decision *d)
{
    inst_role role = d->role == SCHED_DECODE ? ROLE_DECODE : ROLE_PREFILL;
    instance *in;
    if (d->scale > 0 && (in = first_off(c)) != NULL) power_on(c, in, role);
    else if (d->scale < 0 && (in = least_busy(c, role)) != NULL) start_drain(c, in, role, true);
    else if (d->move > 0 && (in = least_busy(c, ROLE_PREFILL)) != NULL) start_drain(c, in, ROLE_DECODE, false);
    else if (d->move < 0 && (in = least_busy(c, ROLE_DECODE)) != NULL) start_drain(c, in, ROLE_PREFILL, false);
}

void sim_control_on_control(cluster *c, const sim_event *ev)
{
    sched_pd_view view = {
        .t_s = sim_ns_to_s(c->eng->now),
        .prefill_loads = c->prefill_loads.v,
        .n_prefill_loads = c->prefill_loads.n,
        .decode_loads = c->decode_loads.v,
        .n_decode_loads = c->decode_loads.n,
        .n_prefill = active_in_role(c, ROLE_PREFILL),
        .n_decode = active_in_role(c, ROLE_DECODE),
        .n_on = powered_on(c),
        .n_max = c->n_inst,
        .switching = c->switching,
    };
    sched_pd_decision d;
    c->pd->decide(c->pd_st, &view, &d);
    carry_out(c, &d);
    c->prefill_loads.n = c->decode_loads.n = 0;
    again(c, EV_CONTROL, sim_s_to_ns(c->pd->period_s(c->pd_st)), 1);
}

void sim_control_on_switch_done(cluster *c, const sim_event *ev)
{
    instance *in = &c->inst[ev->target];
    if (ev->gen != in->gen) return; /* it failed while switching */
    c->decode_role_ns += sim_cluster_decode_span_ns(c, in, c->eng->now);
    in->role_since = c->eng->now;
    in->role = in->next_role;
    in->state = in->power_off ? ST_OFF : ST_ACTIVE;
    in->power_off = false;
    c->switching = false;
    sim_cluster_refresh_views(c);
}

/* ---- failures (§5.3: the conductor's shadow view is rebuilt from the
 * surviving nodes — here the store itself, which drops the node's blocks) -- */

static void lose_queue(cluster *c, req_queue *q, bool detach_decode)
{
    for (req_state *s; (s = q->head) != NULL;) {
        q->head = s->next;
        if (detach_decode) s->decode = -1;
        sim_cluster_lost_work(c, s);
    }
    q->tail = NULL;
    q->n = 0;
}

void sim_control_on_fault(cluster *c, const sim_event *ev)
{
    instance *in = &c->inst[ev->target];
    if (in->state == ST_DOWN || in->state == ST_OFF) return;
    if (in->state != ST_ACTIVE) c->switching = false; /* its switch is abandoned */
    in->power_off = false;
    in->gen++;
    in->state = ST_DOWN;
    in->running = NULL; /* its PREFILL_DONE event now carries a stale generation */
    in->blocked_until = 0;
    in->queued_est_s = 0;
    if (in->iterating) sim_cluster_decode_held(c, in);
    lose_queue(c, &in->queue, false);
    lose_queue(c, &in->waiting, true);
    for (int b = 0; b < in->nbatch; b++) {
        in->batch[b]->decode = -1;
        sim_cluster_lost_work(c, in->batch[b]);
    }
    in->nbatch = in->pending = 0;
    in->kv_reserved = in->kv_batch = in->kv_waiting = in->ctx_tokens = 0;
    in->iterating = false;
    in->nic_tx_free = in->nic_rx_free = in->h2d_free = c->eng->now;
    in->nloading = 0; /* their KV_LOADED events are stale now */
    c->cache->drop_node(c->cache_st, in->id);
    double down = c->cfg->faults[ev->gen].down_s;
    sim_engine_push(c->eng, c->eng->now + sim_s_to_ns(down), EV_RECOVER, in->id, in->gen, NULL);
}

void sim_control_on_recover(cluster *c, const sim_event *ev)
{
    instance *in = &c->inst[ev->target];
    if (ev->gen == in->gen && in->state == ST_DOWN) in->state = ST_ACTIVE;
}
