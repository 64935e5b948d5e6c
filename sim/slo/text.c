/* sim/slo/text.c — a `kvsim plan slo` result as text (the command's
 * default output; sim_slo_json is the same as JSON): the setup and targets,
 * the floors, every point run, the frontier, an aggregated plan's cliff,
 * the cheapest point in full with the `kvsim run` line that reproduces it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/config/config.h"
#include "sim/config/scope.h"
#include "sim/slo/slo_int.h"

static void print_targets(const sim_slo_opts *o)
{
    printf("targets   ");
    const char *sep = "";
    for (int t = 0; t < SIM_SLO_NTARGETS; t++)
        if (o->target[t] > 0) printf("%s%s <= %g ms", sep, sim_slo_label(t), o->target[t]), sep = ", ";
    if (o->attainment > 0) printf("%sSLO attainment >= %g, not overloaded", sep, o->attainment);
    else printf("%sSLOs ignored (--attainment 0)", sep);
    printf(", %s\n", o->allow_rejected ? "requests may be rejected" : "no request rejected or lost");
}

static void print_floors(const sim_slo_opts *o, const sim_slo_result *r)
{
    for (int i = 0; i < r->nfloor; i++) {
        const sim_slo_floor *f = &r->floor[i];
        printf("floor     cpp_group %d:", f->cpp);
        for (int t = 0; t < SIM_SLO_NTARGETS; t++)
            if (o->target[t] > 0) printf(" %s >= %.1f ms,", sim_slo_label(t), f->value[t]);
        printf(" attainment <= %.4f%s\n", f->attainment, f->blocks ? "  (blocks a target)" : "");
    }
    printf("          (each request alone on one idle instance, prefix hit of an unbounded cache: %.3f of tokens;\n"
           "          the %s prompt, %d tokens, takes %.1f ms alone, %.1f ms with its hit)\n",
           r->hit_rate_tokens, r->prompt_q, r->prompt_tokens, r->prompt_alone_ms, r->prompt_hit_ms);
    if (r->note[0]) printf("note      %s\n", r->note);
}

/* What an aggregated cluster without LMCache has instead (slo_no_cpu_tier). */
#define NO_CPU_TIER "no CPU tier (kvstore.lmcache off: prefixes cached in HBM)"

/* What a DRAM level is per: "instance", or "node" of instances sharing a CPU pool. */
static const char *dram_per(const sim_slo_result *r)
{
    return r->aggregated && r->instances_per_node <= 1 ? "instance" : "node";
}

/* ", 16384 per TP rank": each of tp GPUs holds its share of the KV heads,
 * so a tier's bytes per block per rank are the block's / tp (vLLM's and
 * LMCache's per-worker stores); kvsim's budgets are the instance's sum. */
static const char *per_rank(const sim_slo_result *r)
{
    static char buf[64];
    buf[0] = 0;
    if (r->tp > 1) snprintf(buf, sizeof buf, " (%.0f per TP rank)", r->kv_bytes_per_token / r->tp);
    return buf;
}

static void print_header(const sim_slo_opts *o, const sim_slo_result *r)
{
    printf("trace     %s (%lld requests, speed %g, fingerprint %016llx)\n", r->trace, (long long)r->requests, r->speed,
           (unsigned long long)r->fingerprint);
    if (r->aggregated)
        printf("cluster   %s on %s, aggregated%s: %d GPU%s per instance, %.0f KV bytes per token, up to %d instances; "
               "DRAM is the CPU pool per %s\n",
               r->model, r->hardware, r->lmcache ? " with LMCache" : " (kvstore.lmcache off: DRAM not searched)",
               r->gpus_per_instance, r->gpus_per_instance == 1 ? "" : "s", r->kv_bytes_per_token, o->max_instances,
               dram_per(r));
    else
        printf("cluster   %s on %s: %d GPUs per instance, %.0f KV bytes per token%s, up to %d instances\n", r->model,
               r->hardware, r->gpus_per_instance, r->kv_bytes_per_token, per_rank(r), o->max_instances);
    print_targets(o);
    print_floors(o, r);
}

/* Points by size: instances, prefill, DRAM (most first), then knobs. */
static int by_size(const void *x, const void *y, void *arg)
{
    const sim_slo_point *a = x, *b = y;
    const sim_slo_result *r = arg;
    double da = r->dram[a->dram_level], db = r->dram[b->dram_level];
    if (a->prefill + a->decode != b->prefill + b->decode)
        return a->prefill + a->decode < b->prefill + b->decode ? -1 : 1;
    if (a->prefill != b->prefill) return a->prefill < b->prefill ? -1 : 1;
    if (da != db) return da > db ? -1 : 1;
    return (a->knob > b->knob) - (a->knob < b->knob);
}

/* A byte size as people read it: "1 TB", "256 GB", "30 GB". */
static const char *human_bytes(double b, char *buf, size_t n)
{
    static const struct {
        double unit;
        const char *name;
    } units[] = {{1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "kB"}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (b >= units[i].unit) return snprintf(buf, n, "%.4g %s", b / units[i].unit, units[i].name), buf;
    return snprintf(buf, n, "%.0f B", b), buf;
}

/* A token count as people read it: "7.63M", "512k". */
static const char *human_count(double v, char *buf, size_t n)
{
    if (v >= 1e9) snprintf(buf, n, "%.3gG", v / 1e9);
    else if (v >= 1e6) snprintf(buf, n, "%.3gM", v / 1e6);
    else if (v >= 1e3) snprintf(buf, n, "%.3gk", v / 1e3);
    else snprintf(buf, n, "%.0f", v);
    return buf;
}

static const char *verdict(const sim_slo_point *p) { return !p->ran ? "FAILED" : p->feasible ? "yes" : "no"; }

static const char *load_name(int load) { return sim_load_names[load]; }

/* The split and knob columns of a point (and of the table's header, p NULL). */
static void print_knobs(const sim_slo_opts *o, const sim_slo_result *r, const sim_slo_point *p)
{
    char b[32], t[32];
    if (!p) {
        if (r->aggregated)
            printf("probe inst  GPUs DRAM/%-4.4s  tokens%s%s%s", dram_per(r), o->nssd ? "       SSD" : "",
                   o->nremote ? "    remote" : "", o->nload ? " load    " : "");
        else printf("probe   P   D  GPUs DRAM/node  tokens scope  CPP");
        return;
    }
    double dram = r->dram[p->dram_level];
    if (!r->aggregated)
        return (void)printf("%5d %3d %3d %5d %9s %7s %-6s %3d", p->probe, p->prefill, p->decode, sim_slo_gpus(r, p),
                            human_bytes(dram, b, sizeof b), human_count(dram / r->kv_bytes_per_token, t, sizeof t),
                            kv_scope_name((kv_scope)p->scope), p->cpp);
    printf("%5d %4d %5d %9s %7s", p->probe, p->prefill, sim_slo_gpus(r, p), human_bytes(dram, b, sizeof b),
           human_count(dram / r->kv_bytes_per_token, t, sizeof t));
    if (o->nssd) printf(" %9s", human_bytes(p->ssd, b, sizeof b));
    if (o->nremote) printf(" %9s", human_bytes(p->remote, b, sizeof b));
    if (o->nload) printf(" %-8s", load_name(p->load));
}

static void print_row(const sim_slo_opts *o, const sim_slo_result *r, const sim_slo_point *p)
{
    print_knobs(o, r, p);
    for (int k = 0; k < SIM_SLO_NTARGETS; k++)
        if (o->target[k] > 0) printf(" %9.1f", p->value[k]);
    printf(" %7.4f %5lld %4s  %s\n", p->attainment, (long long)p->rejected, p->overloaded ? "yes" : "-", verdict(p));
}

static void print_points(const sim_slo_opts *o, const sim_slo_result *r)
{
    sim_slo_point *s = sim_xmalloc((size_t)(r->npts ? r->npts : 1) * sizeof *s);
    memcpy(s, r->pts, (size_t)r->npts * sizeof *s);
    qsort_r(s, (size_t)r->npts, sizeof *s, by_size, (void *)r);
    printf("\n");
    print_knobs(o, r, NULL);
    for (int t = 0; t < SIM_SLO_NTARGETS; t++)
        if (o->target[t] > 0) printf(" %9s", sim_slo_label(t));
    printf("  attain   rej over  feasible\n");
    for (int i = 0; i < r->npts; i++) print_row(o, r, &s[i]);
    free(s);
}

static void print_frontier(const sim_slo_opts *o, const sim_slo_result *r)
{
    bool priced = sim_slo_price(r, &(sim_slo_point){.prefill = 1, .decode = 1}) > 0;
    printf("\nfrontier: %s for each DRAM level\n", priced ? "lowest price an hour" : "fewest GPUs");
    if (r->aggregated)
        printf("DRAM/%-4.4s  tokens  GPUs inst%s%s%s\n", dram_per(r), o->nssd ? "       SSD" : "",
               o->nremote ? "    remote" : "", o->nload ? " load" : "");
    else printf("DRAM/node  tokens  GPUs   P   D  scope  CPP\n");
    for (int lv = 0; lv < r->nlisted; lv++) {
        int i = r->frontier[lv];
        char b[32], t[32];
        printf("%9s %7s", human_bytes(r->dram[lv], b, sizeof b),
               human_count(r->dram[lv] / r->kv_bytes_per_token, t, sizeof t));
        if (i < 0) {
            printf("  none up to %d instances\n", o->max_instances);
            continue;
        }
        const sim_slo_point *p = &r->pts[i];
        if (!r->aggregated) {
            printf(" %5d %3d %3d  %-6s %3d", sim_slo_gpus(r, p), p->prefill, p->decode,
                   kv_scope_name((kv_scope)p->scope), p->cpp);
            if (priced) printf("  $%.2f an hour", sim_slo_price(r, p));
            putchar('\n');
            continue;
        }
        printf(" %5d %4d", sim_slo_gpus(r, p), p->prefill);
        if (o->nssd) printf(" %9s", human_bytes(p->ssd, b, sizeof b));
        if (o->nremote) printf(" %9s", human_bytes(p->remote, b, sizeof b));
        printf("%s%s", o->nload ? " " : "", o->nload ? load_name(p->load) : "");
        if (priced) printf("  $%.2f an hour", sim_slo_price(r, p)); /* as a split's (it was missing here) */
        putchar('\n');
    }
    for (int lv = 0; lv < r->nlisted; lv++)
        if (r->frontier_command[lv])
            printf("run %9s  %s\n", human_bytes(r->dram[lv], (char[32]){0}, 32), r->frontier_command[lv]);
}

/* The first target's value of a point, or its SLO attainment: "TTFT p90 1025.9 ms". */
static void first_value(const sim_slo_opts *o, const sim_slo_point *p, char *buf, size_t n)
{
    for (int t = 0; t < SIM_SLO_NTARGETS; t++)
        if (o->target[t] > 0)
            return (void)snprintf(buf, n, "%s %.1f ms, SLO attainment %.4f", sim_slo_label(t), p->value[t],
                                  p->attainment);
    snprintf(buf, n, "SLO attainment %.4f", p->attainment);
}

/* An aggregated plan's cliff: the least DRAM passing with the fewest
 * instances and the most failing below it. */
static void print_cliff(const sim_slo_opts *o, const sim_slo_result *r)
{
    if (r->cliff_pass < 0) return;
    const sim_slo_point *p = &r->pts[r->cliff_pass];
    char b[32], v[128];
    first_value(o, p, v, sizeof v);
    printf("\ncliff     with %d instance%s: %s of CPU DRAM per %s passes (%s)\n", p->prefill,
           p->prefill == 1 ? "" : "s", human_bytes(r->dram[p->dram_level], b, sizeof b), dram_per(r), v);
    if (r->cliff_fail < 0) return (void)printf("          and so does no DRAM at all: the trace needs no CPU tier\n");
    const sim_slo_point *f = &r->pts[r->cliff_fail];
    first_value(o, f, v, sizeof v);
    printf("          %s fails (%s); the levels are %s apart (--dram-step)\n",
           human_bytes(r->dram[f->dram_level], b, sizeof b), v,
           human_bytes(r->dram[p->dram_level] - r->dram[f->dram_level], (char[32]){0}, 32));
}

/* " ($12.61 an hour: GPUs $12.00, DRAM and disk $0.61; $3.21 per million
 * output tokens)", or "" when not priced. */
static void price_text(const sim_slo_result *r, const sim_slo_point *p, char *buf, size_t n)
{
    double price = sim_slo_price(r, p), tier = sim_slo_tier_price(r, p);
    buf[0] = 0;
    if (!(price > 0)) return;
    size_t u = (size_t)snprintf(buf, n, " ($%.2f an hour", price);
    if (tier > 0)
        u += (size_t)snprintf(buf + u, u < n ? n - u : 0, ": GPUs $%.2f, DRAM and disk $%.2f", price - tier, tier);
    if (sim_slo_price_per_mtok(r, p) > 0)
        u += (size_t)snprintf(buf + u, u < n ? n - u : 0, "; $%.3f per million output tokens",
                              sim_slo_price_per_mtok(r, p));
    snprintf(buf + u, u < n ? n - u : 0, ")");
}

/* The cheapest point in full: every TTFT and TBT statistic, SLO
 * attainment against what, rejections, the diagnosis's busiest resource. */
static void print_cheapest(const sim_slo_opts *o, const sim_slo_result *r, const sim_slo_point *p)
{
    char b[32], t[32];
    const char *dram = human_bytes(r->dram[p->dram_level], b, sizeof b),
               *tokens = human_count(r->dram[p->dram_level] / r->kv_bytes_per_token, t, sizeof t);
    char price[160] = "";
    price_text(r, p, price, sizeof price);
    char tier[160];
    if (!slo_no_cpu_tier(r))
        snprintf(tier, sizeof tier, "%s (%s tokens) of CPU DRAM per %s, kvstore.load %s", dram, tokens, dram_per(r),
                 load_name(p->load));
    else snprintf(tier, sizeof tier, "%s", NO_CPU_TIER);
    if (r->aggregated)
        printf("\ncheapest  %d instance%s = %d GPU%s%s, %s\n", p->prefill, p->prefill == 1 ? "" : "s",
               sim_slo_gpus(r, p), sim_slo_gpus(r, p) == 1 ? "" : "s", price, tier);
    else
        printf("\ncheapest  %dP%dD = %d GPUs%s, %s (%s tokens) of DRAM per node, %s scope, cpp_group %d\n", p->prefill,
               p->decode, sim_slo_gpus(r, p), price, dram, tokens, kv_scope_name((kv_scope)p->scope), p->cpp);
    for (int m = 0; m < 2; m++) {
        printf("          %-4s", m ? "TBT" : "TTFT");
        for (int k = 0; k < SIM_SLO_NSTATS; k++) {
            double v = p->value[m * SIM_SLO_NSTATS + k]; /* NaN: no request had one (single-token answers) */
            if (isnan(v)) printf("%s %s \u2014", k ? "," : "", sim_slo_stat_key(k));
            else printf("%s %s %.1f", k ? "," : "", sim_slo_stat_key(k), v);
        }
        printf(" ms\n");
    }
    printf("          SLO attainment %.4f (slo.ttft_ms %g, slo.tbt_ms %g, a request's own in the trace first%s), "
           "%lld rejected or lost, %s; busiest: %s %.2f\n",
           p->attainment, r->slo_ttft_ms, r->slo_tbt_ms, o->attainment > 0 ? "" : "; not required: --attainment 0",
           (long long)p->rejected, p->overloaded ? "overloaded" : "not overloaded", p->busiest[0] ? p->busiest : "-",
           p->busiest_util);
    printf("run       %s\n", r->command);
    if (!(o->attainment > 0) && (p->overloaded || !(p->attainment >= 0.9)))
        fprintf(stderr,
                "kvsim plan slo: warning: the cheapest point misses the SLOs (attainment %.4f, %s): --attainment 0 "
                "ignores them; leave it out to require SLO attainment >= 0.9 and no overload\n",
                p->attainment, p->overloaded ? "overloaded" : "not overloaded");
}

/* ---- non-monotone results ---------------------------------------------------- */

/* One measure of a run that can explain a change: its name and value. */
static double measure(const sim_slo_point *p, int k)
{
    return k == 0 ? p->hit_rate : k == 1 ? p->util_prefill : k == 2 ? p->decode_load : p->busiest_util;
}
static const char *const measure_names[] = {"prefix hit rate (tokens)", "prefill busy", "decode load",
                                            "busiest resource"};
/* What a change of each measure does to the targets. */
static const char *const measure_why[] = {
    "more prefix hits shorten prefills, so requests reach the decode instances closer together and the TBT tail grows",
    "the prefill instances' load moved, and with it the queueing before the first token",
    "the decode instances hold more KV per iteration, which lengthens every token gap", ""};

/* A split and knob that fails at a DRAM level while it passes at a smaller
 * one: the runs are not monotone in DRAM. Say so, with what the two runs
 * differ in — the prefix hit rate, the prefill instances' busy share, the
 * decode load — naming the one that moved most (relative change): more
 * DRAM means more hits, shorter prefills, so requests reach decode closer
 * together, and TBT may rise. */
void slo_print_nonmonotone(const sim_slo_opts *o, const sim_slo_result *r)
{
    int shown = 0;
    for (int i = 0; i < r->npts && shown < 4; i++)
        for (int j = 0; j < r->npts; j++) {
            const sim_slo_point *a = &r->pts[i], *b = &r->pts[j];
            if (a->feasible || !a->ran || !b->feasible || a->prefill != b->prefill || a->decode != b->decode ||
                a->knob != b->knob || !(r->dram[a->dram_level] > r->dram[b->dram_level]))
                continue;
            char miss[256], x[32], y[32];
            slo_describe_miss(o, a, miss, sizeof miss);
            printf("%s %dP%dD %s scope, cpp_group %d fails with %s of DRAM (%s) but passes with %s; from %s to %s:",
                   shown ? "         " : "\nnon-monotone", a->prefill, a->decode, kv_scope_name((kv_scope)a->scope),
                   a->cpp, human_bytes(r->dram[a->dram_level], x, sizeof x), miss,
                   human_bytes(r->dram[b->dram_level], y, sizeof y), y, x);
            int most = 0;
            double d_most = -1;
            for (int k = 0; k < 3; k++) {
                double va = measure(a, k), vb = measure(b, k), d = fabs(va - vb) / fmax(fabs(vb), 1e-9);
                printf("%s %s %.3f -> %.3f", k ? "," : "", measure_names[k], vb, va);
                if (d > d_most) d_most = d, most = k;
            }
            printf("; %s moved most (%+.1f%%): %s\n", measure_names[most],
                   100 * (measure(a, most) - measure(b, most)) / fmax(fabs(measure(b, most)), 1e-9), measure_why[most]);
            shown++;
            break;
        }
}

/* ---- confirmation ------------------------------------------------------------- */

static const char *resample_name(int w) { return w == 2 ? "sessions" : w == 1 ? "poisson" : "none"; }

static void print_margins(const sim_slo_opts *o, const sim_slo_candidate *c)
{
    printf("          worst of %d:", c->nrun);
    const char *sep = " ";
    for (int t = 0; t < SIM_SLO_NTARGETS; t++)
        if (o->target[t] > 0)
            printf("%s%s %.1f ms (margin %.1f ms, %.1f%% of the target)", sep, sim_slo_label(t), c->worst[t],
                   o->target[t] - c->worst[t], 100 * (o->target[t] - c->worst[t]) / o->target[t]),
                sep = ", ";
    printf("%sSLO attainment %.4f", sep, c->worst_attainment);
    if (o->attainment > 0) /* the check that binds may be this one, not a target's */
        printf(" (margin %.4f over the %.4g asked)", c->worst_attainment - o->attainment, o->attainment);
    printf("\n");
}

/* Confirmations that repeated a run say nothing more than it did. */
static void print_alike(const sim_slo_candidate *c)
{
    int d = sim_slo_distinct(c);
    if (d < c->nrun)
        printf("          %d of the %d distinct: %d gave another's numbers exactly (the trace as recorded, on a seed "
               "that changed nothing)\n",
               d, c->nrun, c->nrun - d);
}

/* What the recommendation's passes say of a fresh draw of the load. */
static void print_draws(const sim_slo_opts *o, const sim_slo_candidate *c)
{
    int n = sim_slo_draws(c);
    if (n == 0) return (void)printf("draws     none: --confirm-resample none confirms on the trace as recorded only\n");
    printf("draws     %d resampled workload%s (trace.resample=%s), all passed: at 95%% confidence a fresh draw "
           "fails at most %.1f%% of the time (1 - 0.05^(1/%d)); more --confirm-seeds narrow it\n",
           n, n == 1 ? "" : "s", resample_name(o->confirm_resample), 100 * sim_slo_fail_bound(n), n);
}

static void print_candidate(const sim_slo_opts *o, const sim_slo_result *r, int i)
{
    const sim_slo_candidate *c = &r->cand[i];
    const sim_slo_point *p = &c->run[0];
    char b[32];
    printf("\ncandidate %d: ", i + 1);
    if (r->aggregated) printf("%d instance%s", p->prefill, p->prefill == 1 ? "" : "s");
    else printf("%dP%dD %s scope, cpp_group %d", p->prefill, p->decode, kv_scope_name((kv_scope)p->scope), p->cpp);
    printf(", %s DRAM: %d of %d confirmations pass with the headroom (%.0f%%), %d of %d without%s\n",
           human_bytes(r->dram[p->dram_level], b, sizeof b), c->pass, c->nrun,
           100.0 * c->pass / (c->nrun ? c->nrun : 1), c->pass_bare, c->nrun, c->knife_edge ? ": a knife edge" : "");
    printf(" seed resample");
    for (int t = 0; t < SIM_SLO_NTARGETS; t++)
        if (o->target[t] > 0) printf(" %9s", sim_slo_label(t));
    printf("  attain   rej over  passes (edge: the target, not the headroom)\n");
    for (int k = 0; k < c->nrun; k++) {
        const sim_slo_point *q = &c->run[k];
        printf("%5llu %-8s", (unsigned long long)q->seed, resample_name(q->resample));
        for (int t = 0; t < SIM_SLO_NTARGETS; t++)
            if (o->target[t] > 0) printf(" %9.1f", q->value[t]);
        printf(" %7.4f %5lld %4s  %s\n", q->attainment, (long long)q->rejected, q->overloaded ? "yes" : "-",
               !q->ran            ? "FAILED"
               : q->feasible      ? "yes"
               : q->feasible_bare ? "edge"
                                  : "no");
    }
    print_margins(o, c);
    if (c->miss[0]) printf("          first miss: %s\n", c->miss);
    printf("run       %s\n", c->command);
}

static void print_confirmation(const sim_slo_opts *o, const sim_slo_result *r)
{
    printf("\nconfirm   each candidate on seeds %llu-%llu", (unsigned long long)r->cand[0].run[0].seed,
           (unsigned long long)r->cand[0].run[r->cand[0].nrun - 1].seed);
    if (o->confirm_resample)
        printf(", the trace as recorded and with trace.resample=%s", resample_name(o->confirm_resample));
    printf("; a confirmation passes when every target holds with %g%% headroom (", 100 * o->headroom);
    const char *sep = "";
    for (int t = 0; t < SIM_SLO_NTARGETS; t++)
        if (o->target[t] > 0)
            printf("%s%s <= %.4g ms", sep, sim_slo_label(t), o->target[t] * (1 - o->headroom)), sep = ", ";
    printf(")%s\n", o->attainment > 0 ? " and the SLOs as in the search" : "");
    for (int i = 0; i < r->ncand; i++) print_candidate(o, r, i);
    if (r->recommended < 0) return (void)printf("\nno recommendation: %s\n", r->confirm_note);
    const sim_slo_candidate *c = &r->cand[r->recommended];
    const sim_slo_point *p = &c->run[0];
    char b[32], price[160], tier[160] = NO_CPU_TIER;
    price_text(r, p, price, sizeof price);
    if (!slo_no_cpu_tier(r))
        snprintf(tier, sizeof tier, "%s of CPU DRAM per %s", human_bytes(r->dram[p->dram_level], b, sizeof b),
                 dram_per(r));
    if (r->aggregated)
        printf("\nrecommended %d instance%s = %d GPU%s%s, %s: passes all %d confirmations\n", p->prefill,
               p->prefill == 1 ? "" : "s", sim_slo_gpus(r, p), sim_slo_gpus(r, p) == 1 ? "" : "s", price, tier,
               c->nrun);
    else
        printf("\nrecommended %dP%dD = %d GPUs%s, %s of DRAM per node, %s scope, cpp_group %d: passes all %d "
               "confirmations\n",
               p->prefill, p->decode, sim_slo_gpus(r, p), price, human_bytes(r->dram[p->dram_level], b, sizeof b),
               kv_scope_name((kv_scope)p->scope), p->cpp, c->nrun);
    print_alike(c);
    print_margins(o, c);
    print_draws(o, c);
    printf("run       %s\n", c->command);
}

void sim_slo_print(const sim_slo_opts *o, const sim_slo_result *r)
{
    print_header(o, r);
    printf("search    %d probes, %lld runs (%lld already recorded, %lld failed) in %.1f s %s %d %s\n", r->nprobes,
           (long long)r->runs, (long long)r->recorded, (long long)r->failed, r->wall_seconds,
           o->slurm.on ? "on Slurm, at most" : "with", o->jobs, o->slurm.on ? "at once" : "jobs");
    if (r->npts) print_points(o, r);
    if (r->status != SIM_SLO_FEASIBLE) return (void)printf("\ninfeasible: %s\n", r->reason);
    print_frontier(o, r);
    print_cliff(o, r);
    slo_print_nonmonotone(o, r);
    print_cheapest(o, r, &r->pts[r->cheapest]);
    if (r->ncand) print_confirmation(o, r);
}

/* ---- one search per kind and GPUs per instance ------------------------------------ */

/* "5P2D = 7 GPUs ($43.09 an hour; ...)" of a variant's answer, or why it has none. */
static void variant_answer(const sim_slo_variant *v, char *buf, size_t n)
{
    const sim_slo_point *a = sim_slo_answer(&v->r);
    if (v->why[0]) return (void)snprintf(buf, n, "%s", v->why);
    if (!a && v->r.status != SIM_SLO_FEASIBLE) return (void)snprintf(buf, n, "infeasible: %.400s", v->r.reason);
    if (!a) return (void)snprintf(buf, n, "no recommendation: %.400s", v->r.confirm_note);
    char price[160];
    price_text(&v->r, a, price, sizeof price);
    if (v->r.aggregated)
        snprintf(buf, n, "%d instance%s = %d GPU%s%s", a->prefill, a->prefill == 1 ? "" : "s", sim_slo_gpus(&v->r, a),
                 sim_slo_gpus(&v->r, a) == 1 ? "" : "s", price);
    else snprintf(buf, n, "%dP%dD = %d GPUs%s", a->prefill, a->decode, sim_slo_gpus(&v->r, a), price);
}

/* The cheapest answer of each kind but best's, cheapest first: the runner-up. */
static int runner_up(const sim_slo_multi *m)
{
    int second = -1;
    for (int i = 0; i < m->n; i++) {
        if (m->best < 0 || !strcmp(m->v[i].kind, m->v[m->best].kind) || sim_slo_multi_best_of(m, m->v[i].kind) != i)
            continue;
        if (second < 0 || sim_slo_multi_cost(m, i) < sim_slo_multi_cost(m, second)) second = i;
    }
    return second;
}

/* Why the answers were compared by GPUs: the searches whose answer has no price. */
static void print_unpriced(const sim_slo_multi *m)
{
    printf("compared  by GPUs, not price: no hardware.price_per_hour for");
    const char *sep = " ";
    for (int i = 0; i < m->n; i++) {
        const sim_slo_point *a = m->v[i].why[0] ? NULL : sim_slo_answer(&m->v[i].r);
        if (a && !(sim_slo_price(&m->v[i].r, a) > 0))
            printf("%s%s", sep, m->v[i].hardware[0] ? m->v[i].hardware : m->v[i].r.hardware), sep = ", ";
    }
    printf("; dollars and GPU counts are not compared (a copy of a preset with its price_per_hour, given to "
           "--hardware by path, prices it)\n");
}

void sim_slo_multi_print(const sim_slo_opts *o, const sim_slo_multi *m)
{
    printf("hardware  one search per kind and GPUs per instance; prices are the presets' (hardware.price_per_hour,\n"
           "          dram_price_per_GB_hour, ssd_price_per_GB_hour: inputs, cited in each preset's about)\n");
    printf("kind       preset      mode           GPUs/inst  $/inst-h  $/GB-h DRAM  $/GB-h disk  answer\n");
    for (int i = 0; i < m->n; i++) {
        const sim_slo_variant *v = &m->v[i];
        char ans[512];
        variant_answer(v, ans, sizeof ans);
        bool ran = !v->why[0];
        const char *mode = v->mode[0] ? v->mode : !ran ? "-" : v->r.aggregated ? "aggregated" : "disaggregated";
        char inst[16];
        if (ran && v->r.prefill_price > 0) snprintf(inst, sizeof inst, "%9.3f", v->r.prefill_price);
        else snprintf(inst, sizeof inst, "%9s", ran ? "\u2014" : "0.000"); /* no price is not free */
        printf("%-10s %-11s %-14s %9d %s %12.5f %12.7f  %s%s\n", v->kind[0] ? v->kind : "-",
               v->hardware[0] ? v->hardware : v->r.hardware, mode, ran ? v->r.gpus_per_instance : v->tp, inst,
               ran ? v->r.dram_price : 0, ran ? v->r.ssd_price : 0, ans,
               i != m->best ? ""
               : m->by_gpus ? "  <- fewest GPUs"
                            : "  <- cheapest");
    }
    int second = runner_up(m);
    if (m->best >= 0) {
        char a[512];
        variant_answer(&m->v[m->best], a, sizeof a);
        printf("%-9s %s: %s\n", m->by_gpus ? "fewest" : "cheapest",
               m->v[m->best].hardware[0] ? m->v[m->best].hardware : m->v[m->best].r.hardware, a);
    }
    if (m->by_gpus) print_unpriced(m);
    if (second >= 0) {
        char a[512];
        variant_answer(&m->v[second], a, sizeof a);
        printf("runner-up %s: %s\n", m->v[second].hardware, a);
    }
    printf("\n");
    int shown = m->best;
    for (int i = m->n - 1; shown < 0 && i >= 0; i--) shown = m->v[i].why[0] ? -1 : i;
    if (shown >= 0) sim_slo_print(o, &m->v[shown].r);
}

/* ---- kvsim plan tiers ------------------------------------------------------------ */

void sim_slo_tiers_print(const sim_tiers_opts *o, const sim_tiers *t)
{
    const sim_slo_result *r = &t->r;
    const char *tier = t->ssd ? "disk" : "DRAM";
    char b[32];
    printf("trace     %s (fingerprint %016llx)\n", r->trace, (unsigned long long)r->fingerprint);
    if (r->aggregated)
        printf("cluster   %s on %s, aggregated: %d instance%s", r->model, r->hardware, t->P, t->P == 1 ? "" : "s");
    else printf("cluster   %s on %s: %dP%dD", r->model, r->hardware, t->P, t->D);
    printf("; %s per %s on a log grid%s, the other tier fixed at %s\n", tier,
           r->aggregated && r->instances_per_node <= 1 ? "instance" : "node", t->ssd ? "" : " (kvstore.dram_bytes)",
           human_bytes(t->fixed, b, sizeof b));
    printf("knee      the smallest size whose prefix hit rate is within %g of the best on the grid (%.4f)\n", o->knee,
           t->best_hit);
    printf("\n%9s %8s %8s %10s %9s %7s %4s %9s %10s\n", tier, "tokens", "hit", "TTFT p90", "goodput", "attain", "over",
           "$/h", "$/M out");
    int over = 0;
    for (int i = 0; i < t->n; i++) {
        const sim_slo_point *p = &t->pt[i];
        char tok[32];
        printf("%9s %8s", human_bytes(t->size[i], b, sizeof b),
               human_count(t->size[i] / r->kv_bytes_per_token, tok, sizeof tok));
        if (!p->ran) {
            printf("  the run failed\n");
            continue;
        }
        printf(" %8.4f %10.1f %9.3f %7.4f %4s", p->hit_rate, p->value[2], p->goodput, p->attainment,
               p->overloaded ? "yes" : "-");
        over += p->overloaded;
        if (sim_slo_price(r, p) > 0) printf(" %9.2f %10.3f", sim_slo_price(r, p), sim_slo_price_per_mtok(r, p));
        else printf(" %11s %12s", "\u2014", "\u2014"); /* a preset without a price: not free (it once read 0.00) */
        printf("%s\n", i == t->knee ? "  <- knee" : "");
    }
    if (over) /* a queue that grew with the trace: its TTFT is the trace's length, not the size's */
        printf("\nover      %d size%s overloaded the cluster (its queue grew with the trace): %s TTFT and goodput "
               "are those of a run with no steady state, longer with a longer trace (docs/overload.md)\n",
               over, over == 1 ? "" : "s", over == 1 ? "its" : "their");
    if (sim_slo_tiers_knee_at_top(t)) /* "at most the remaining 5%" once stood here, of sizes never run */
        printf("\nknee      none within the grid: its largest size, %s of %s, is the first within %g of the best "
               "(hit rate %.4f); the curve had not flattened, so a larger tier may still gain: raise --max\n",
               human_bytes(t->size[t->knee], b, sizeof b), tier, o->knee, t->pt[t->knee].hit_rate);
    else if (t->knee >= 0)
        printf("\nknee      %s of %s (hit rate %.4f of the best %.4f); more buys at most the remaining %.0f%%\n",
               human_bytes(t->size[t->knee], b, sizeof b), tier, t->pt[t->knee].hit_rate, t->best_hit,
               100 * (1 - o->knee));
}
