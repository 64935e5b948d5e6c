/* sim/cli/cmd_check.c — `kvsim check`: the CI regression check. This file
 * parses the options and prints the table; the engine (measurements,
 * tolerance, baseline files) is sim/replay/check.c.
 *
 *   kvsim check --baseline FILE            re-run every measurement FILE names;
 *                                          exit 3 with a table of expected / got /
 *                                          delta when a number moved beyond its
 *                                          tolerance
 *   kvsim check --baseline FILE --write-baseline OUT
 *                                          re-record FILE's measurements into OUT
 *   kvsim check --write-baseline OUT --trace T [--policies L] [--capacity-tokens L]
 *                                          record a new baseline: every policy × capacity
 *   kvsim check --write-baseline OUT [--baseline FILE] [--name N] [--one-sided] -- run|plan slo ARGS...
 *                                          record a measurement of that command (added to
 *                                          FILE's, replacing one of the same name)
 */
#include "sim/replay/check.h"
#include "sim/cli/check_cmd.h"
#include "sim/cli/cli.h"
#include "sim/outfile.h"
#include "sim/replay/hitrate.h"

#include <getopt.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the table ---------------------------------------------------------- */

static void print_table_header(void)
{
    printf("%-36s %-16s %10s %10s %10s %9s  %s\n", "measurement", "metric", "expected", "got", "delta", "tolerance",
           "status");
}

/* "%g", or "null" for a JSON null or NaN (an undefined statistic). */
static const char *gtext(const json_t *v, char *buf, size_t n)
{
    if (json_is_number(v) && !isnan(json_number_value(v))) snprintf(buf, n, "%g", json_number_value(v));
    else snprintf(buf, n, "null");
    return buf;
}

/* Under GitHub Actions (GITHUB_ACTIONS=true), a moved number is also an
 * ::error workflow command, which the run's page shows as an annotation:
 * on stdout beside the table, on stderr when stdout is --json's object. */

static void github_error(FILE *f, const sim_check_row *r)
{
    const char *gha = getenv("GITHUB_ACTIONS");
    if ((r->ok && !r->improved) || !r->expected || !gha || strcmp(gha, "true")) return;
    char e[32], g[32];
    json_t *got = json_real(r->got); /* NULL for NaN: "null" */
    fprintf(f, "::%s title=kvsim check::%s %s %s: expected %s, got %s (tolerance %s)\n", r->ok ? "notice" : "error",
            r->measurement, r->metric, r->ok ? "improved" : "moved", gtext(r->expected, e, sizeof e),
            gtext(got, g, sizeof g), r->tolerance_text);
    json_decref(got);
}

/* A number of the table in 10 columns; "—" for null (undefined: no
 * completed request had it). */
static const char *cell(double v, const char *fmt, char *buf, size_t n)
{
    json_t *j = isnan(v) ? json_null() : json_real(v);
    sim_cli_num(j, fmt, 10, buf, n);
    json_decref(j);
    return buf;
}

static void print_row(const sim_check_row *r)
{
    github_error(stdout, r);
    char e[32], g[32], d[32];
    if (!r->expected) {
        printf("%-36s %-16s %10s %s %10s %9s  %s\n", r->measurement, r->metric, "-", cell(r->got, "%*.6f", g, 32), "-",
               "-", "recorded");
        return;
    }
    double x = json_is_number(r->expected) ? json_number_value(r->expected) : NAN;
    double delta = fabs(r->got - x) < 5e-7 ? 0 : r->got - x;
    printf("%-36s %-16s %s %s %s %9s  %s\n", r->measurement, r->metric, cell(x, "%*.6f", e, 32),
           cell(r->got, "%*.6f", g, 32), cell(delta, "%+*.6f", d, 32), r->tolerance_text,
           !r->ok        ? "FAIL"
           : r->improved ? "improved"
                         : "ok");
}

/* A number of --json's rows: null for NaN (undefined). */
static json_t *num_json(double v) { return isnan(v) ? json_null() : json_real(v); }

static void print_note(void *arg, const char *text) { fprintf(stderr, "kvsim check: %s\n", text); }

/* Every row is kept (for --json and --junit); the table is printed as the
 * rows come unless stdout is --json's object. */
typedef struct check_out {
    bool json;
    json_t *rows;
} check_out;

static void on_row(void *arg, const sim_check_row *r)
{
    check_out *o = arg;
    if (o->json) github_error(stderr, r);
    else print_row(r);
    json_t *j = json_pack(
        "{s:s, s:s, s:o, s:f, s:s, s:o, s:b, s:b}", "measurement", r->measurement, "metric", r->metric, "got",
        num_json(r->got), "tolerance", r->tolerance, "tolerance_text", r->tolerance_text, "worse",
        r->worse ? json_string(r->worse > 0 ? "higher" : "lower") : json_null(), "ok", r->ok, "improved", r->improved);
    if (r->expected) {
        double x = json_is_number(r->expected) ? json_number_value(r->expected) : NAN;
        json_object_set_new(j, "expected", num_json(x));
        json_object_set_new(j, "delta", num_json(r->got - x));
    }
    json_array_append_new(o->rows, j);
}

static void on_begin(void *arg)
{
    if (!((check_out *)arg)->json) print_table_header();
}

/* --json's object; with error (the check could not run: exit 2), status
 * "error" and the message, so that a script reading stdout gets an answer
 * (the rows the check reached are kept). */
static void print_json(json_t *rows, const sim_check_totals *tot, const char *write_path, const char *error)
{
    json_t *o = json_pack("{s:s, s:i, s:i, s:i, s:O}", "status",
                          error        ? "error"
                          : write_path ? "recorded"
                          : tot->moved ? "moved"
                                       : "ok",
                          "numbers", tot->numbers, "moved", tot->moved, "improved", tot->improved, "rows", rows);
    if (error) json_object_set_new(o, "error", json_string(error));
    json_dumpf(o, stdout, JSON_REAL_PRECISION(10));
    putchar('\n');
    json_decref(o);
}

/* ---- JUnit XML (--junit FILE): one testcase per number, a failure per
 * moved number, one error testcase when the check could not run ---------- */

static void junit_case(FILE *f, const json_t *row)
{
    const json_t *e = json_object_get(row, "expected");
    fputs("    <testcase classname=\"", f);
    sim_fput_xml(f, json_string_value(json_object_get(row, "measurement")));
    fputs("\" name=\"", f);
    sim_fput_xml(f, json_string_value(json_object_get(row, "metric")));
    fputs("\">", f);
    char et[32], gt[32];
    if (!json_is_true(json_object_get(row, "ok")))
        fprintf(f, "<failure message=\"moved: expected %s, got %s (tolerance %g)\"/>", gtext(e, et, sizeof et),
                gtext(json_object_get(row, "got"), gt, sizeof gt),
                json_number_value(json_object_get(row, "tolerance")));
    fputs("</testcase>\n", f);
}

static int write_junit(const char *path, const char *baseline, const json_t *rows, const sim_check_totals *tot,
                       const char *error, sim_err *err)
{
    sim_outfile o;
    if (sim_outfile_open(&o, path, err)) return -1;
    FILE *f = o.f;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"kvsim check ");
    sim_fput_xml(f, baseline ? baseline : "(new baseline)");
    fprintf(f, "\" tests=\"%zu\" failures=\"%d\" errors=\"%d\">\n", json_array_size(rows) + (error != NULL),
            error ? 0 : tot->moved, error != NULL);
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row) junit_case(f, row);
    if (error) {
        fputs("    <testcase classname=\"kvsim check\" name=\"setup\"><error message=\"", f);
        sim_fput_xml(f, error);
        fputs("\"/></testcase>\n", f);
    }
    fputs("  </testsuite>\n</testsuites>\n", f);
    return sim_outfile_close(&o, err);
}

/* ---- command ------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "usage: kvsim check --baseline FILE [--write-baseline OUT]\n"
               "       kvsim check --write-baseline OUT --trace FILE [--policies LIST]\n"
               "                   [--capacity-tokens LIST] [--tolerance X]\n"
               "       kvsim check --write-baseline OUT [--baseline FILE] [--name NAME] [--one-sided]\n"
               "                   [--tolerance X] [--worse higher|lower] -- run|plan slo ARGS...\n\n"
               "CI regression check. With --baseline, re-runs every measurement the baseline\n"
               "names and compares each expected number with the new one: exit 3 and FAIL\n"
               "rows when it moved beyond tolerance, exit 0 otherwise. With\n"
               "--write-baseline, records the current numbers instead (into OUT; from\n"
               "--baseline's measurements, new hitrate measurements of every policy x\n"
               "capacity on --trace, or the measurement of the command after --, added to\n"
               "--baseline's).\n\n"
               "A tolerance is absolute (0.002) or relative (\"2%%\": 2%% of the expected\n"
               "number). \"worse\": \"higher\" or \"lower\" (the file's, a measurement's, or per\n"
               "metric: {\"ttft_ms.p90\": \"higher\"}) makes a check one-sided: only a move\n"
               "that way beyond tolerance fails; one the other way passes, as \"improved\".\n\n"
               "Baseline format (JSON): {\"kvsim_baseline\": 1, \"tolerance\": 0.002,\n"
               "  \"measurements\": [{\"name\": \"lru 3e6\", \"kind\": \"hitrate\",\n"
               "    \"args\": {\"trace\": \"traces/default.jsonl\", \"capacity_tokens\": \"3e6\"},\n"
               "    \"tolerance\": 0.002, \"expect\": {\"hit_rate_blocks\": 0.3094}}]}\n"
               "hitrate args are kvsim hitrate's options with _ for - (one capacity; \"route\"\n"
               "is still read as placement's deprecated name).\n\n"
               "  --baseline FILE         the baseline to check (or to re-record)\n"
               "  --write-baseline OUT    record current numbers into OUT and exit 0\n"
               "  --trace FILE            new baseline: the trace\n"
               "  --policies LIST         new baseline: policies (default: all registered)\n"
               "  --capacity-tokens LIST  new baseline: capacities (default inf)\n"
               "  --tolerance X           new baseline: tolerance, absolute (default 0.002) or \"2%%\"\n"
               "  --worse higher|lower    new baseline: the file's worse direction (one-sided)\n"
               "  --name NAME             the measurement of -- COMMAND: its name (default: the command)\n"
               "  --one-sided             the measurement of -- COMMAND: each metric's worse direction\n"
               "                          (latencies, rejections, GPUs higher; attainment, goodput,\n"
               "                          hit rates, feasible lower)\n"
               "  --junit FILE            also write JUnit XML (a testcase per number, a failure per\n"
               "                          moved one, an error when the check cannot run) for CI\n"
               "  --json                  one JSON object (status, numbers, moved, rows) instead of\n"
               "                          the table; the exit status is the same (on exit 2, status\n"
               "                          \"error\" and the message as \"error\")\n"
               "With GITHUB_ACTIONS=true, each moved number is also an ::error line.\n"
               "  -h, --help              this text\n\nmeasurement kinds:\n");
    for (size_t i = 0; i < sim_check_kind_count(); i++)
        fprintf(f, "  %-23s %s\n", sim_check_kind_at(i)->name, sim_check_kind_at(i)->help);
}

typedef struct check_args {
    const char *baseline, *write_path, *junit;
    const char *tolerance, *worse, *name; /* --tolerance as given, --worse, --name */
    bool json, one_sided;
    char **command; /* after --: run ... or plan slo ... */
    int ncommand;
    sim_check_new_opts nb;
} check_args;

/* --tolerance: a non-negative number, or a percentage "2%". */
static int parse_tolerance(const char *s, check_args *a)
{
    sim_err err;
    size_t n = strlen(s);
    char num[64];
    bool pct = n > 1 && n < sizeof num && s[n - 1] == '%';
    snprintf(num, sizeof num, "%.*s", pct ? (int)n - 1 : (int)n, s);
    if (sim_parse_double(num, "--tolerance", &a->nb.tolerance, &err)) return sim_usage_error("check", err.msg);
    if (!(a->nb.tolerance >= 0)) return sim_usage_error("check", "--tolerance: negative");
    a->tolerance = s;
    return 0;
}

/* The measurement of -- COMMAND into root's list, replacing one of its
 * name; its paths (the working directory's) rewritten for base_dir, where
 * the measurements run. */
static int add_command(const check_args *a, json_t *root, const char *base_dir, sim_err *err)
{
    json_t *m, *ms = json_object_get(root, "measurements"), *e;
    if (sim_cli_check_measurement(a->ncommand, a->command, a->name, a->one_sided, &m, err)) return -1;
    sim_check_rebase_measurement(m, ".", base_dir);
    if (!json_is_array(ms)) json_object_set_new(root, "measurements", ms = json_array());
    const char *name = json_string_value(json_object_get(m, "name"));
    size_t i;
    json_array_foreach(ms, i, e)
    {
        const char *other = json_string_value(json_object_get(e, "name"));
        if (other && !strcmp(name, other)) return json_array_set_new(ms, i, m), 0;
    }
    json_array_append_new(ms, m);
    return 0;
}

static int load_or_create(const check_args *a, const char *base_dir, json_t **root, sim_err *err)
{
    int rc;
    if (a->baseline) rc = sim_check_load(a->baseline, root, err);
    else if (a->ncommand)
        rc = (*root = json_pack("{s:i, s:f, s:[]}", "kvsim_baseline", SIM_CHECK_VERSION, "tolerance", a->nb.tolerance,
                                "measurements"))
                 ? 0
                 : -1;
    else rc = sim_check_new_baseline(&a->nb, root, err);
    if (rc == 0 && !a->baseline && a->tolerance && strchr(a->tolerance, '%'))
        json_object_set_new(*root, "tolerance", json_string(a->tolerance));
    if (rc == 0 && !a->baseline && a->worse) json_object_set_new(*root, "worse", json_string(a->worse));
    return rc == 0 && a->ncommand ? add_command(a, *root, base_dir, err) : rc;
}

static int finish(json_t *root, const char *base_dir, const char *write_path, const sim_check_totals *tot, json_t *rows)
{
    sim_err err;
    if (write_path && sim_check_save(root, base_dir, write_path, &err)) return sim_usage_error("check", err.msg);
    if (rows) {
        print_json(rows, tot, write_path, NULL);
        return !write_path && tot->moved ? SIM_EXIT_CHECK : SIM_EXIT_OK;
    }
    if (write_path) {
        printf("kvsim check: recorded %d numbers into %s\n", tot->numbers, write_path);
        return SIM_EXIT_OK;
    }
    if (tot->moved) {
        printf("kvsim check: %d of %d numbers moved beyond tolerance\n", tot->moved, tot->numbers);
        fprintf(stderr, "kvsim check: %d of %d numbers moved beyond tolerance (FAIL rows above)\n", tot->moved,
                tot->numbers);
        return SIM_EXIT_CHECK;
    }
    if (tot->improved)
        printf("kvsim check: all %d numbers within tolerance; %d improved beyond it (re-record with "
               "--write-baseline to keep the gain)\n",
               tot->numbers, tot->improved);
    else printf("kvsim check: all %d numbers within tolerance\n", tot->numbers);
    return SIM_EXIT_OK;
}

/* Parse argv into a; 0, or an exit status (help printed, or a usage error). */
static int parse_args(int argc, char **argv, check_args *a)
{
    static const struct option longopts[] = {
        {"baseline", required_argument, NULL, 'b'},
        {"write-baseline", required_argument, NULL, 'w'},
        {"trace", required_argument, NULL, 't'},
        {"policies", required_argument, NULL, 'p'},
        {"capacity-tokens", required_argument, NULL, 'c'},
        {"tolerance", required_argument, NULL, 'T'},
        {"worse", required_argument, NULL, 'W'},
        {"name", required_argument, NULL, 'N'},
        {"one-sided", no_argument, NULL, 'O'},
        {"json", no_argument, NULL, 'j'},
        {"junit", required_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1;) {
        switch (c) {
        case 'b': a->baseline = optarg; break;
        case 'w': a->write_path = optarg; break;
        case 't': a->nb.trace = optarg; break;
        case 'p': a->nb.policies = optarg; break;
        case 'c': a->nb.capacities = optarg; break;
        case 'T':
            if (parse_tolerance(optarg, a)) return SIM_EXIT_USAGE;
            break;
        case 'W':
            if (strcmp(optarg, "higher") && strcmp(optarg, "lower"))
                return sim_usage_error("check", "--worse: give higher or lower");
            a->worse = optarg;
            break;
        case 'N': a->name = optarg; break;
        case 'O': a->one_sided = true; break;
        case 'j': a->json = true; break;
        case 'J': a->junit = optarg; break;
        case 'h': usage(stdout); return -1;
        default: usage(stderr); return SIM_EXIT_USAGE;
        }
    }
    if (optind < argc && strcmp(argv[optind - 1], "--"))
        return sim_cli_unexpected_error("check", argv[optind], "--baseline");
    a->command = argv + optind;
    a->ncommand = argc - optind;
    if (!a->baseline && !a->write_path) return sim_usage_error("check", "give --baseline FILE or --write-baseline OUT");
    if (a->junit && (sim_same_file(a->junit, a->baseline) || sim_same_file(a->junit, a->write_path)))
        return sim_usage_error("check", "--junit names the baseline file: write the JUnit XML elsewhere (it once "
                                        "replaced the baseline)");
    if (a->ncommand && !a->write_path) return sim_usage_error("check", "-- COMMAND needs --write-baseline OUT");
    if ((a->name || a->one_sided) && !a->ncommand)
        return sim_usage_error("check", "--name and --one-sided describe the measurement of -- COMMAND");
    return 0;
}

int cmd_check(int argc, char **argv)
{
    kv_replay_keep_memory();
    check_args a = {.nb = {.policies = NULL, .capacities = "inf", .tolerance = 0.002}};
    int st = parse_args(argc, argv, &a);
    if (st) return st < 0 ? SIM_EXIT_OK : st;
    json_t *root = NULL;
    check_out out = {.json = a.json, .rows = json_array()};
    sim_check_report rep = {.begin = on_begin, .row = on_row, .note = print_note, .arg = &out};
    sim_check_totals tot = {0};
    sim_err err, jerr;
    /* measurements run in the baseline's folder; a new one's from a command in OUT's */
    const char *home = a.baseline ? a.baseline : a.ncommand ? a.write_path : NULL;
    char *dir = home ? sim_xstrdup(home) : NULL, *base_dir = dir ? dirname(dir) : NULL;
    sim_cli_check_add_plan_kind();
    int rc = load_or_create(&a, base_dir ? base_dir : ".", &root, &err);
    if (rc == 0) rc = sim_check_run(root, base_dir, a.write_path != NULL, &rep, &tot, &err);
    if (rc && a.json) print_json(out.rows, &tot, a.write_path, err.msg);
    int status =
        rc ? sim_usage_error("check", err.msg) : finish(root, base_dir, a.write_path, &tot, a.json ? out.rows : NULL);
    if (a.junit && write_junit(a.junit, a.baseline, out.rows, &tot, rc ? err.msg : NULL, &jerr))
        status = sim_usage_error("check", jerr.msg);
    free(dir);
    json_decref(root);
    json_decref(out.rows);
    return status;
}
