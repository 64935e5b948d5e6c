/* sim/trace/sessions.c — closed-loop session replay: held turns, think
 * times and arrival shifts (the rule and why: sim/trace/sessions.h). */
#include "sim/trace/sessions.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "sim/index/keymap.h"

/* A turn read before the one before it finished, and its think time. */
typedef struct held {
    sim_request *r;
    int64_t think_ns;
} held;

typedef struct session {
    int64_t last_index;  /* its last request in the replayed order (the pass) */
    int64_t last_turn;   /* the pass: the latest "turn" given, −1 none */
    int64_t read_index;  /* its latest request read by the replay, −1 none */
    int64_t prev_rec_ns; /* that request's recorded arrival */
    int64_t outstanding; /* its requests read and not finished */
    int64_t done_ns;     /* when its latest finished request finished */
    bool wanted;         /* a turn finished and the next is not read yet */
    held *q;             /* held turns, in order: q[qhead, qn) */
    size_t qhead, qn, qcap;
} session;

struct sim_sessions {
    double speed;
    sim_keymap ids; /* session id → index in v */
    session *v;
    size_t n, cap;
    int64_t nwanted; /* sessions with wanted set */
    int64_t turns;
    double *shift_ms; /* per scheduled request */
    size_t nshift, shift_cap;
};

/* The session's slot, made when first seen. */
static session *slot_of(sim_sessions *s, int64_t id)
{
    int64_t i = sim_keymap_get(&s->ids, (uint64_t)id);
    if (i != SIM_KEYMAP_ABSENT) return &s->v[i];
    if (s->n == s->cap) s->v = sim_xrealloc(s->v, (s->cap = s->cap ? 2 * s->cap : 256) * sizeof *s->v);
    sim_keymap_put(&s->ids, (uint64_t)id, (int64_t)s->n);
    s->v[s->n] = (session){.last_turn = -1, .read_index = -1};
    return &s->v[s->n++];
}

/* One request of the pass: its session's last index, and the turn order. */
static int pass_add(sim_sessions *s, const sim_trace *t, const sim_request *r, sim_err *err)
{
    if (r->session < 0) return 0;
    session *x = slot_of(s, r->session);
    x->last_index = r->index;
    if (r->turn < 0) return 0;
    if (x->last_turn >= 0 && r->turn <= x->last_turn)
        return sim_errf(err,
                        "%s:%" PRId64 ": turn: %" PRId64 " does not follow turn %" PRId64 " of session %" PRId64
                        " (a session's turns must increase in trace order)",
                        sim_trace_name(t), r->line, r->turn, x->last_turn, r->session);
    x->last_turn = r->turn;
    return 0;
}

int sim_sessions_open(sim_sessions **out, const char *path, const sim_trace_opts *opts, sim_err *err)
{
    *out = NULL;
    sim_trace *t;
    if (sim_trace_open(&t, path, opts, err)) return -1;
    sim_sessions *s = sim_xcalloc(1, sizeof *s);
    s->speed = opts->speed;
    sim_keymap_init(&s->ids, 1024);
    sim_request *r;
    int rc;
    while ((rc = sim_trace_next(t, &r, err)) == 1) {
        rc = pass_add(s, t, r, err) ? -1 : 1;
        sim_request_free(r);
        if (rc < 0) break;
    }
    sim_trace_close(t);
    if (rc < 0) {
        sim_sessions_free(s);
        return -1;
    }
    *out = s;
    return 0;
}

void sim_sessions_free(sim_sessions *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) {
        for (size_t j = s->v[i].qhead; j < s->v[i].qn; j++) sim_request_free(s->v[i].q[j].r);
        free(s->v[i].q);
    }
    free(s->v);
    sim_keymap_free(&s->ids);
    free(s->shift_ms);
    free(s);
}

/* r is scheduled at `at`: its shift from the recorded arrival. */
static void schedule(sim_sessions *s, sim_request *r, int64_t at)
{
    if (s->nshift == s->shift_cap)
        s->shift_ms =
            sim_xrealloc(s->shift_ms, (s->shift_cap = s->shift_cap ? 2 * s->shift_cap : 1024) * sizeof *s->shift_ms);
    s->shift_ms[s->nshift++] = (double)(at - r->arrival_ns) / (double)SIM_NS_PER_MS;
    r->arrival_ns = at;
}

/* The think time before r: its think_ms on the trace's clock, else the
 * recorded gap since the previous turn's arrival. */
static int64_t think_ns(const sim_sessions *s, const session *x, const sim_request *r)
{
    if (r->think_ms >= 0) return llround(r->think_ms * (double)SIM_NS_PER_MS / s->speed);
    return r->arrival_ns - x->prev_rec_ns;
}

bool sim_sessions_admit(sim_sessions *s, sim_request *r, int64_t now)
{
    if (r->session < 0) {
        schedule(s, r, r->arrival_ns);
        return true;
    }
    session *x = slot_of(s, r->session);
    bool first = x->read_index < 0;
    int64_t think = first ? 0 : think_ns(s, x, r);
    x->read_index = r->index;
    x->prev_rec_ns = r->arrival_ns;
    x->outstanding++;
    if (x->wanted) x->wanted = false, s->nwanted--;
    if (first) {
        schedule(s, r, r->arrival_ns);
        return true;
    }
    s->turns++;
    if (x->outstanding == 1) { /* the turn before has finished */
        int64_t at = x->done_ns + think;
        schedule(s, r, at > now ? at : now);
        return true;
    }
    if (x->qn == x->qcap) x->q = sim_xrealloc(x->q, (x->qcap = x->qcap ? 2 * x->qcap : 2) * sizeof *x->q);
    x->q[x->qn++] = (held){r, think};
    return false;
}

sim_request *sim_sessions_finish(sim_sessions *s, const sim_request *r, int64_t now)
{
    if (r->session < 0) return NULL;
    session *x = slot_of(s, r->session);
    x->outstanding--;
    x->done_ns = now;
    if (x->qhead < x->qn) {
        held h = x->q[x->qhead++];
        if (x->qhead == x->qn) x->qhead = x->qn = 0;
        schedule(s, h.r, now + h.think_ns);
        return h.r;
    }
    if (x->outstanding == 0 && x->read_index < x->last_index && !x->wanted) x->wanted = true, s->nwanted++;
    return NULL;
}

bool sim_sessions_wanting(const sim_sessions *s) { return s->nwanted > 0; }

void sim_sessions_stats_get(sim_sessions *s, sim_sessions_stats *out)
{
    *out = (sim_sessions_stats){.sessions = (int64_t)s->n, .turns = s->turns, .requests = (int64_t)s->nshift};
    if (!s->nshift) return;
    gsl_sort(s->shift_ms, 1, s->nshift);
    out->shift_mean_ms = gsl_stats_mean(s->shift_ms, 1, s->nshift);
    out->shift_p99_ms = gsl_stats_quantile_from_sorted_data(s->shift_ms, 1, s->nshift, 0.99);
    out->shift_max_ms = s->shift_ms[s->nshift - 1];
}
