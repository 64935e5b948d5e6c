/* sim/cli/cmd_cost.c — `kvsim cost`: the cost model's time for one decode
 * iteration (its memory-bound, compute-bound, all-reduce and overhead terms)
 * and one prefill, for a config, so that a published measurement can be put
 * beside kvsim's number with the command that computed it
 * (docs/cost-model.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/cli/cli.h"
#include "sim/config/config.h"
#include "sim/cost/cost.h"
#include "sim/serving/serving.h"

static const char cost_usage[] =
    "usage: kvsim cost [--config FILE] [--set key.path=value]... [--batch B] [--context C]\n"
    "                  [--prefill N] [--cached P] [--json]\n"
    "\n"
    "The cost model's times for the resolved config (docs/cost-model.md): one\n"
    "decode iteration of B requests holding C tokens of context each (the\n"
    "memory-bound, compute-bound, all-reduce and overhead terms), one prefill of\n"
    "N tokens of which the first P are cached, the KV tokens HBM holds, the KV\n"
    "bytes per token, and (with --cached P) the break-even loading bandwidth above\n"
    "which loading a cached P-token prefix beats recomputing it: Mooncake's Eq. 2\n"
    "(compute at the hardware's peak FLOP/s), and at this breakdown's own prices\n"
    "(the prefix's KV bytes over the time its recompute adds to the prefill).\n"
    "\n"
    "  --config FILE      config file merged over configs/default.json\n"
    "  --set KEY=VALUE    override one config key (e.g. hardware=h100x8)\n"
    "  --batch B          decode batch (default 1)\n"
    "  --context C        context tokens per request in the batch (default 1: a decode\n"
    "                     step's request holds at least its prompt, and vLLM refuses an\n"
    "                     empty one; 0 reads no KV: the roofline's weight floor, below\n"
    "                     the smallest context the measured tables hold)\n"
    "  --prefill N        prompt tokens (default 0: no prefill line)\n"
    "  --cached P         of which cached (default 0)\n"
    "  --json             one JSON object instead of text; its \"caveats\" array (absent when\n"
    "                     there is none) holds the warnings stderr also gets. Under\n"
    "                     compute_model \"measured\" the tables price each operation\n"
    "                     (decode_ops_ms, prefill_ops_ms), not a roofline's terms:\n"
    "                     memory_ms and compute_ms are both their sum, all-reduces\n"
    "                     included, and allreduce_ms is 0\n"
    "  -h, --help         this help\n"
    "\n"
    "Exit status: 0 ok, 2 bad arguments or config (message on stderr).\n";

typedef struct cost_args {
    long batch, context, prefill, cached;
    bool json, context_given; /* --context given: the HBM line counts requests of that context */
} cost_args;

/* The model and hardware line; for a mixture of experts its total and
 * active parameters and what a step of `batch` tokens reads. */
static void print_model(const sim_cost *c, long batch)
{
    if (c->hw->pp > 1)
        printf("model %s on %s (%d GPUs: tensor parallel %d within a node x pipeline parallel %d nodes)\n",
               c->model->name, c->hw->name, c->hw->gpus, c->hw->tp, c->hw->pp);
    else printf("model %s on %s (%d GPU%s)\n", c->model->name, c->hw->name, c->hw->gpus, c->hw->gpus == 1 ? "" : "s");
    if (sim_model_moe_layers(c->model) > 0)
        printf("mixture of experts: %.2fe9 parameters in HBM, %.2fe9 active per token (%d of %d experts); batch %ld "
               "touches %.2f experts per layer, %.2f GB of weights a step%s\n",
               c->model->params / 1e9, sim_model_active_params(c->model) / 1e9, c->model->experts_per_token,
               c->model->experts, batch, sim_model_experts_touched(c->model, (double)batch),
               sim_cost_pass_bytes(c, (double)batch) / 1e9,
               c->ep_imbalance > 0 ? " (the busiest GPU's share: expert parallel)" : "");
}

/* Measured mode: each operation's time and share of the pass, so a user
 * sees what binds (text), or one JSON object of milliseconds. */
static void print_ops(const char *what, const sim_op_times *t, bool json)
{
    if (json) {
        printf("\"%s_ops_ms\": {", what);
        for (int i = 0; i < SIM_OP_N; i++) printf("%s\"%s\": %.4f", i ? ", " : "", sim_op_names[i], 1e3 * t->s[i]);
        printf("}, ");
        return;
    }
    printf("  %s GPU time by operation (measured tables):\n", what);
    for (int i = 0; i < SIM_OP_N; i++)
        if (t->s[i] > 0)
            printf("    %-16s %9.3f ms  %5.1f%%\n", sim_op_names[i], 1e3 * t->s[i],
                   t->total_s > 0 ? 100 * t->s[i] / t->total_s : 0);
    printf("    %-16s %9.3f ms\n", "sum", 1e3 * t->total_s);
}

static void print_measured(const sim_cost *c, const cost_args *a)
{
    sim_op_times d, p;
    if (!sim_cost_decode_ops(c, (int)a->batch, a->batch * a->context, &d)) return;
    const sim_optable *t = sim_measured_tables(c->measured);
    long dropped, points;
    sim_optable_glitches(t, &dropped, &points);
    if (a->json) printf("\"measured_points\": %ld, \"glitches_dropped\": %ld, ", points, dropped);
    else {
        printf("compute: measured (tables %s, %s, %s%s%s%s; docs/measured.md)\n", c->hw->optables,
               sim_optable_system(t), sim_optable_engine(t),
               c->hw->optables_transfer ? ", scaled to this hardware's roofline" : "",
               c->hw->allreduce_optables[0] ? "; all-reduces from " : "", c->hw->allreduce_optables);
        printf("  %ld of the tables' %ld measured points dropped as glitches (engine.measured.glitch_ratio %g; "
               "docs/measured.md §2)\n",
               dropped, points, sim_optable_glitch_ratio(t));
        double lo, hi;
        if (sim_measured_fp16_nccl(c->measured, &lo, &hi))
            printf("  fp16 (model.torch_dtype): all-reduces of %.0f KiB to %.0f MiB from NCCL's rows, as vLLM sends "
                   "them (its symmetric-memory path takes bf16 only; docs/measured.md §1)\n",
                   lo / 1024, hi / 1048576);
    }
    print_ops("decode", &d, a->json);
    if (a->prefill > 0 && sim_cost_prefill_ops(c, (int32_t)a->prefill, (int32_t)a->cached, &p))
        print_ops("prefill", &p, a->json);
}

/* The caveats of the figures as one JSON array (`, "caveats": [...]`,
 * nothing when there is none): the config's, then the shapes the pricing
 * just looked up outside the tables. */
static void print_json_caveats(const json_t *config_caveats)
{
    json_t *all = json_deep_copy(config_caveats), *notes = sim_measured_caveats();
    json_array_extend(all, notes);
    if (json_array_size(all)) {
        char *text = json_dumps(all, JSON_COMPACT);
        printf(", \"caveats\": %s", text);
        free(text);
    }
    json_decref(notes);
    json_decref(all);
}

/* What prices the step where the measured tables do not (their own line
 * is print_measured's). */
static void print_compute_mode(const sim_cost *c)
{
    if (c->profiled) printf("compute: profile tables measured on %d GPU (%s)\n", c->profile.gpus, c->hw->calibration);
    if (c->engine && !c->measured)
        printf("compute: engine (cost.compute = engine: weights less the %.2f GB input embedding stream once a step; "
               "docs/validation.md)\n",
               (c->weight_bytes - c->pass_weight_bytes) / 1e9);
    else if (c->profile_gpus_mismatch && !c->measured)
        printf("compute: analytic (%s was measured on %d GPU, this hardware has %d)\n", c->hw->calibration,
               c->profile.gpus, c->hw->gpus);
}

/* The decode iteration of a text breakdown, term by term. */
static void print_decode_terms(const sim_cost *c, const cost_args *a, const sim_decode_terms *t)
{
    if (t->profiled) {
        printf("decode iteration, batch %ld x %ld context tokens: %.3f ms\n", a->batch, a->context, 1e3 * t->total_s);
        printf("  measured   %9.3f ms  (%s)\n", 1e3 * t->mem_s,
               c->measured ? "the sum of the operations above, all-reduces included"
                           : "profile: the layer probe's step, interpolated");
    } else {
        printf("decode iteration, batch %ld x %ld context tokens: %.3f ms (%s-bound)\n", a->batch, a->context,
               1e3 * t->total_s, t->mem_s >= t->compute_s ? "memory" : "compute");
        printf("  memory     %9.3f ms  (weights + KV over achievable HBM bandwidth)\n", 1e3 * t->mem_s);
        printf("  compute    %9.3f ms  (2 x params x batch + attention over the context, at mfu)\n",
               1e3 * t->compute_s);
    }
    if (!c->measured)
        printf("  all-reduce %9.3f ms  (%s)\n", 1e3 * t->allreduce_s,
               c->ep_imbalance > 0 ? "an all-reduce a layer, a dispatch and a combine all-to-all a MoE layer"
               : c->hw->pp > 1     ? "2 x layers tensor-parallel all-reduces + the pipeline's stage hops"
                                   : "2 x layers tensor-parallel all-reduces");
    if (c->engine)
        printf("  overhead   %9.3f ms  (engine.%siter_overhead_ms + engine.%sseq_overhead_ms x batch)\n",
               1e3 * t->overhead_s, c->measured ? "measured." : "", c->measured ? "measured." : "");
    else printf("  overhead   %9.3f ms  (cost.decode_overhead_ms)\n", 1e3 * t->overhead_s);
}

static void print_cost(const sim_cost *c, const cost_args *a, const json_t *caveats)
{
    int64_t ctx = a->batch * a->context;
    sim_decode_terms t = sim_cost_decode_terms(c, (int)a->batch, ctx);
    double pre = a->prefill > 0 ? sim_cost_prefill_s(c, (int32_t)a->prefill, (int32_t)a->cached) : 0,
           pre_over = a->prefill > 0 ? sim_cost_prefill_overhead_s(c, (int32_t)a->prefill, (int32_t)a->cached) : 0;
    bool fits = c->hbm_kv_bytes > 0; /* else the times still print; a run refuses the pairing */
    int64_t kv = fits ? sim_cost_decode_kv_tokens(c) : 0;
    double bpt = sim_model_kv_bytes_per_token(c->model);
    double eq2 = a->cached > 0 ? sim_eq2_min_bandwidth(c->model, c->hw->flops, (double)a->cached) / 1e9 : 0;
    double saved = a->cached > 0 ? sim_cost_prefill_s(c, (int32_t)a->prefill, 0) - pre : 0,
           priced = saved > 0 ? (double)a->cached * bpt / saved / 1e9 : 0; /* 0: loading never pays */
    if (a->json) {
        printf("{");
        print_measured(c, a);
        char *model = sim_cli_json_string(c->model->name), *hw = sim_cli_json_string(c->hw->name);
        printf("\"model\": %s, \"hardware\": %s, ", model, hw);
        free(model), free(hw);
        printf("\"batch\": %ld, \"context\": %ld, \"decode_ms\": %.4f, \"memory_ms\": %.4f, \"compute_ms\": %.4f, "
               "\"allreduce_ms\": %.4f, \"overhead_ms\": %.4f, \"prefill_ms\": %.4f, \"prefill_overhead_ms\": %.4f, "
               "\"hbm_kv_tokens\": %lld, "
               "\"kv_bytes_per_token\": %.0f, \"eq2_min_GBps\": %.4f, \"breakeven_GBps\": %.4f, "
               "\"compute_model\": \"%s\", \"fits\": %s",
               a->batch, a->context, 1e3 * t.total_s, 1e3 * t.mem_s, 1e3 * t.compute_s, 1e3 * t.allreduce_s,
               1e3 * t.overhead_s, 1e3 * pre, 1e3 * pre_over, (long long)kv, bpt, eq2, priced,
               c->measured   ? "measured"
               : c->profiled ? "profile"
               : c->engine   ? "engine"
                             : "analytic",
               fits ? "true" : "false");
        print_json_caveats(caveats);
        printf("}\n");
        return;
    }
    print_model(c, a->batch);
    print_measured(c, a);
    print_compute_mode(c);
    print_decode_terms(c, a, &t);
    if (a->prefill > 0) printf("prefill of %ld tokens, %ld cached: %.3f ms\n", a->prefill, a->cached, 1e3 * pre);
    if (pre_over > 0) /* the breakdown above is the passes' (it once summed short of this line, unsaid) */
        printf("  chunks     %9.3f ms  (cost.prefill_chunk_overhead_ms for each of its %d-token chunks)\n",
               1e3 * pre_over, c->prefill_chunk);
    if (!fits)
        printf("weights (%.0f GB) do not fit in %s's HBM (%.0f GB x cluster.decode_hbm_frac): a run refuses this "
               "pairing; pick larger hardware\n",
               c->weight_bytes / 1e9, c->hw->name, c->hw->hbm_bytes / 1e9);
    if (a->context_given && a->context > 0)
        printf("HBM holds %lld KV tokens (%lld request%s of %ld context), %.0f bytes each\n", (long long)kv,
               (long long)(kv / a->context), kv / a->context == 1 ? "" : "s", a->context, bpt);
    else printf("HBM holds %lld KV tokens, %.0f bytes each\n", (long long)kv, bpt);
    if (a->cached > 0)
        printf("Mooncake Eq. 2: loading the %ld-token prefix beats recomputing it above %.3f GB/s\n", a->cached, eq2);
    if (a->cached > 0 && priced > 0) /* Eq. 2 prices compute at peak FLOPs, not as the breakdown above does */
        printf("  at this breakdown's prices: above %.3f GB/s (the prefix's %.3f GB of KV against the %.3f ms its "
               "recompute would add)\n",
               priced, (double)a->cached * bpt / 1e9, 1e3 * saved);
    else if (a->cached > 0) printf("  at this breakdown's prices: never (its recompute adds no time)\n");
}

/* The figures asked for may hold more KV than the HBM does (the times
 * still print, priced as if it fit): said as the caveat `kv_overflow`. */
static void add_overflow_caveat(const sim_cost *c, const cost_args *a, json_t *caveats)
{
    if (c->hbm_kv_bytes <= 0) return; /* the weights alone do not fit: said under the figures */
    long long kv = (long long)sim_cost_decode_kv_tokens(c), decode = (long long)a->batch * a->context;
    long long prefill = (long long)a->prefill;
    if (decode <= kv && prefill <= kv) return;
    char text[1024];
    int u = 0;
    if (decode > kv)
        u = snprintf(text, sizeof text,
                     "%ld requests of %ld tokens of context are %lld KV tokens, more than the %lld the HBM holds "
                     "(%lld such requests): the decode step is priced as if they fit; a run would queue or preempt "
                     "the rest",
                     a->batch, a->context, decode, kv, a->context > 0 ? kv / a->context : 0LL);
    if (prefill > kv) /* both, when both overflow (the prefill's was once dropped) */
        snprintf(text + u, sizeof text - (size_t)u,
                 "%sa prompt of %lld tokens needs more KV than the %lld tokens the HBM holds: the prefill is priced "
                 "as if it fit; a run would reject the request",
                 u ? "; " : "", prefill, kv);
    json_array_append_new(caveats, json_pack("{s:s, s:s}", "name", "kv_overflow", "text", text));
}

/* Shapes no run forms: a batch above cluster.decode_max_batch (vLLM's
 * max_num_seqs: a run decodes no more at once) and a context or prompt
 * longer than the model's window (vLLM refuses the request): priced all
 * the same, said as the caveats `batch_cap` and `context_window`. */
static void add_shape_caveats(const sim_config *cfg, const cost_args *a, json_t *caveats)
{
    char text[512];
    if (a->batch > cfg->decode_max_batch) {
        snprintf(text, sizeof text,
                 "a batch of %ld is more than cluster.decode_max_batch (%d, vLLM's max_num_seqs): a run never decodes "
                 "more requests at once; the step is priced all the same (--set cluster.decode_max_batch=%ld to allow "
                 "it)",
                 a->batch, cfg->decode_max_batch, a->batch);
        json_array_append_new(caveats, json_pack("{s:s, s:s}", "name", "batch_cap", "text", text));
    }
    long window = cfg->model.context_window, longest = a->context > a->prefill ? a->context : a->prefill;
    if (window > 0 && longest > window) {
        snprintf(text, sizeof text,
                 "%s of %ld tokens is longer than %s's context window of %ld tokens (model.context_window, its "
                 "config.json's max_position_embeddings): vLLM refuses such a request; priced all the same",
                 a->context > a->prefill ? "a context" : "a prompt", longest, cfg->model.name, window);
        json_array_append_new(caveats, json_pack("{s:s, s:s}", "name", "context_window", "text", text));
    }
}

/* A decode batch beyond the sequences the CPU constants were fitted on
 * extrapolates their per-sequence term (agg.c's fit_range of a run). */
static void add_fit_range_caveat(const sim_cost *c, const cost_args *a, json_t *caveats)
{
    int fit = sim_cost_fit_seqs(c);
    if (!fit || a->batch <= fit) return;
    sim_decode_terms t = sim_cost_decode_terms(c, (int)a->batch, (int64_t)a->batch * a->context);
    char tail[560], text[640];
    sim_serving_fit_range_tail(tail, sizeof tail, c, t.total_s > 0 ? t.overhead_s / t.total_s : 0, "this step",
                               "the step is");
    snprintf(text, sizeof text, "a batch of %ld sequences is beyond %s", a->batch, tail);
    json_array_append_new(caveats, json_pack("{s:s, s:s}", "name", "fit_range", "text", text));
}

/* A step shorter on the GPU than any the CPU constants were fitted on
 * (sim_cost_short_step_s). */
static void add_short_step_caveat(const sim_cost *c, json_t *caveats)
{
    char text[800];
    if (sim_serving_short_step_text(text, sizeof text, c))
        json_array_append_new(caveats, json_pack("{s:s, s:s}", "name", "short_steps", "text", text));
}

static int run_cost(const char *file, char **sets, int nsets, const cost_args *a)
{
    sim_config cfg;
    sim_cost c;
    sim_err err = {0};
    if (sim_config_load(&cfg, file, sets, nsets, &err)) return sim_usage_error("cost", err.msg);
    if (cfg.hetero) { /* one hardware a command: it once priced `hardware` and named neither side */
        snprintf(err.msg, sizeof err.msg,
                 "prices one hardware, and cluster.prefill_hardware (%s) and cluster.decode_hardware (%s) split "
                 "this cluster: price each side with --set hardware=NAME (its prefill figures with --prefill)",
                 cfg.prefill_hw.name, cfg.decode_hw.name);
        sim_config_free(&cfg);
        return sim_usage_error("cost", err.msg);
    }
    int rc = sim_cost_setup(&c, &cfg, &err); /* a model too large still gets its times and KV bytes */
    /* the glitch count is over every table of the system, the model's or not */
    if (!rc && c.measured) rc = sim_measured_load_all(c.measured, &err);
    if (rc) rc = sim_usage_error("cost", err.msg);
    else {
        json_t *caveats = sim_serving_caveats(&cfg); /* on stderr before the figures they qualify */
        add_overflow_caveat(&c, a, caveats);
        add_shape_caveats(&cfg, a, caveats);
        add_fit_range_caveat(&c, a, caveats);
        add_short_step_caveat(&c, caveats);
        sim_cli_warn_caveats("cost", caveats, NULL);
        print_cost(&c, a, caveats);
        json_decref(caveats);
        json_t *notes = sim_measured_caveats(); /* the shapes the figures above looked up outside the tables */
        sim_cli_warn_caveats("cost", notes, NULL);
        json_decref(notes);
    }
    sim_config_free(&cfg);
    return rc;
}

/* A non-negative integer option; -1 when it is not one. */
/* A count option: a whole number in [lo, 1e8], the message naming it
 * (out-of-range values once all got one line for the four options). */
static int count_arg(const char *opt, const char *s, long lo, long *out)
{
    int64_t v = 0;
    sim_err err;
    if (sim_parse_i64(s, opt, &v, &err)) return sim_usage_error("cost", err.msg);
    if (v < lo || v > 100000000) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s: %s is not in [%ld, 100000000]", opt, s, lo);
        return sim_usage_error("cost", msg);
    }
    *out = (long)v;
    return SIM_EXIT_OK;
}

int cmd_cost(int argc, char **argv)
{
    static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                         {"set", required_argument, NULL, 's'},
                                         {"batch", required_argument, NULL, 'b'},
                                         {"context", required_argument, NULL, 'x'},
                                         {"prefill", required_argument, NULL, 'p'},
                                         {"cached", required_argument, NULL, 'k'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *file = NULL;
    char **sets = sim_xcalloc((size_t)argc + 1, sizeof *sets);
    cost_args a = {.batch = 1, .context = 1};
    int nsets = 0, rc = SIM_EXIT_OK;
    optind = 1;
    for (int ch; rc == SIM_EXIT_OK && (ch = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        switch (ch) {
        case 'c': file = optarg; break;
        case 's': sets[nsets++] = optarg; break;
        case 'b': rc = count_arg("--batch", optarg, 1, &a.batch); break;
        case 'x': rc = count_arg("--context", optarg, 0, &a.context), a.context_given = true; break;
        case 'p': rc = count_arg("--prefill", optarg, 0, &a.prefill); break;
        case 'k': rc = count_arg("--cached", optarg, 0, &a.cached); break;
        case 'j': a.json = true; break;
        case 'h': fputs(cost_usage, stdout), free(sets); return SIM_EXIT_OK;
        default: rc = sim_usage_error("cost", "bad option (see kvsim cost --help)");
        }
    }
    if (rc == SIM_EXIT_OK) {
        if (optind < argc) rc = sim_cli_unexpected_error("cost", argv[optind], "--config");
        else if (a.cached > a.prefill)
            rc = sim_usage_error("cost", a.prefill ? "--cached exceeds --prefill"
                                                   : "--cached exceeds --prefill (0 when not given: give the prompt's "
                                                     "tokens with --prefill N)");
        else rc = run_cost(file, sets, nsets, &a);
    }
    free(sets);
    return rc;
}
