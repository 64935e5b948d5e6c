/* sim/cli/cmd_sweep.c — `kvsim sweep`: run a grid of config points (policies,
 * capacities, replay speeds, P:D ratios: any config key) as `kvsim run`s in
 * parallel worker processes and record them all in one results database.
 * This file parses the options and prints; the engine (points, worker
 * processes or Slurm job arrays, part databases, the lock, `--emit-jobs`
 * lines, the array task) is sim/sweep. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sim/cli/cli.h"
#include "sim/cli/slurm_opt.h"
#include "sim/config/schema.h"
#include "sim/sweep/sweep.h"

static const char sweep_usage[] =
    "usage: kvsim sweep --grid 'key=v1,v2;key2=a,b' [--trace FILE] [--config FILE]\n"
    "                   [--set key.path=value]... [--jobs N] [--db FILE]\n"
    "                   [--emit-jobs FILE | --merge-parts | --slurm [--partition P] [--sbatch-args 'A B']]\n"
    "\n"
    "Run every point of a parameter grid as a `kvsim run` and record all of them in\n"
    "one results database. The grid is the cartesian product of its entries (the last\n"
    "key varies fastest); a key is any config key `kvsim run --set` accepts, e.g.\n"
    "  --grid 'policy.router=random,least_loaded;trace.speed=1,2'\n"
    "Points already recorded in the database (same config hash and trace fingerprint)\n"
    "are skipped, so re-running an interrupted sweep completes only what is missing.\n"
    "\n"
    "  --grid SPEC        the grid: entries 'key=v1,v2,...' separated by ';'\n"
    "  --trace FILE       trace to replay (sets trace.path for every point)\n"
    "  --config FILE      config file merged over configs/default.json\n"
    "  --set KEY=VALUE    fixed override for every point (the grid's keys win)\n"
    "  --jobs N           worker processes (default: the number of CPUs)\n"
    "  --db FILE          results database (default sweep.db); workers write their own\n"
    "                     databases in FILE.parts/, merged into FILE at the end\n"
    "  --emit-jobs FILE   do not run: write one self-contained `kvsim run` command per\n"
    "                     line for the points not yet recorded, e.g. for\n"
    "                       parallel --jobs 8 < FILE\n"
    "                       sbatch --array=1-N --wrap 'sed -n ${SLURM_ARRAY_TASK_ID}p FILE | sh'\n"
    "                     then gather them with  kvsim sweep ... --merge-parts\n"
    "  --merge-parts      do not run: merge the part databases that have landed in\n"
    "                     FILE.parts/ (any number of times) and list the points still\n"
    "                     missing (exit 1 while one is)\n"
    "%s"
    "  --array-task FILE  (what a --slurm array task runs) run the point of job file\n"
    "                     FILE that SLURM_ARRAY_TASK_ID names\n"
    "  --json             print the results as one JSON object instead of the table\n"
    "  -h, --help         this help\n"
    "\n"
    "At the end a table gives every point's run (this sweep's or an earlier one's):\n"
    "SLO attainment, TTFT p90, TBT p99, block hit rate and rejections.\n"
    "Progress goes to stderr: a bar on a terminal, one line per point otherwise.\n"
    "SIGINT/SIGTERM stop the workers too; finished points stay recorded in FILE.parts/.\n"
    "Exit status: 0 ok, 2 bad arguments/grid/config/database, 1 a point failed\n"
    "(or, with --merge-parts, is missing), 128+N stopped by signal N.\n";

/* What the command does besides a sweep: merge parts, or be an array task. */
typedef struct sweep_mode {
    bool merge_parts;
    const char *array_task;
} sweep_mode;

/* ---- arguments ---------------------------------------------------------- */

static int parse_jobs(const char *s, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < 1 || v > 1024) return -1;
    *out = (int)v;
    return 0;
}

static int parse_args(int argc, char **argv, sim_sweep_opts *s, sweep_mode *m, int *rc)
{
    static const struct option opts[] = {
        {"grid", required_argument, 0, 'g'},
        {"trace", required_argument, 0, 't'},
        {"config", required_argument, 0, 'c'},
        {"set", required_argument, 0, 's'},
        {"jobs", required_argument, 0, 'j'},
        {"db", required_argument, 0, 'd'},
        {"emit-jobs", required_argument, 0, 'e'},
        {"json", no_argument, 0, 'J'},
        {"merge-parts", no_argument, 0, 'M'},
        {"array-task", required_argument, 0, 'A'},
        {"help", no_argument, 0, 'h'},
        SIM_CLI_SLURM_OPTIONS,
        {0, 0, 0, 0},
    };
    s->base = sim_xcalloc((size_t)argc + 1, sizeof *s->base);
    opterr = 0;
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        if (sim_cli_slurm_option(ch, optarg, &s->slurm)) continue;
        switch (ch) {
        case 'g': s->grid_spec = optarg; break;
        case 't': s->base[s->nbase++] = sim_cli_string_set("trace.path", optarg); break;
        case 'c': s->config = optarg; break;
        case 's': s->base[s->nbase++] = sim_xstrdup(optarg); break;
        case 'j':
            if (parse_jobs(optarg, &s->jobs)) return *rc = sim_usage_error("sweep", "--jobs: expected 1..1024"), -1;
            break;
        case 'd': s->db = optarg; break;
        case 'e': s->emit = optarg; break;
        case 'J': s->json = true; break;
        case 'M': m->merge_parts = true; break;
        case 'A': m->array_task = optarg; break;
        case 'h':
            printf(sweep_usage, sim_cli_slurm_usage);
            *rc = SIM_EXIT_OK;
            return -1;
        default: *rc = sim_cli_bad_option("sweep", argv[optind - 1]); return -1;
        }
    }
    if (optind < argc) return *rc = sim_cli_unexpected_error("sweep", argv[optind], "--trace"), -1;
    const char *bad = sim_cli_slurm_check(&s->slurm);
    if (!bad && s->slurm.on + m->merge_parts + (s->emit != NULL) > 1)
        bad = "--slurm, --merge-parts and --emit-jobs exclude each other";
    if (!bad && !s->grid_spec && !m->array_task)
        bad = "--grid KEY=V1,V2,... is required (e.g. --grid policy.router=round_robin,cache_aware_local)";
    if (bad) return *rc = sim_usage_error("sweep", bad), -1;
    return 0;
}

/* ---- printing ------------------------------------------------------------------ */

static void print_emitted(const sim_sweep *s)
{
    printf("kvsim sweep: wrote %lld commands to %s (%lld points already recorded in %s)\n", (long long)s->todo,
           s->opt.emit, (long long)s->recorded, s->opt.db);
    printf("  run them:    parallel --jobs %d < %s\n", s->opt.jobs, s->opt.emit);
    printf("  or (Slurm):  sbatch --array=1-%lld --wrap 'sed -n ${SLURM_ARRAY_TASK_ID}p %s | sh'\n", (long long)s->todo,
           s->opt.emit);
    printf("  then:        kvsim sweep (the same options) --merge-parts  (or kvsim merge %s %s/*.db)\n", s->opt.db,
           s->parts);
}

/* --merge-parts: what landed, and what is still missing. */
static int print_merged(const sim_sweep *s)
{
    printf("kvsim sweep: merged %lld runs from %s; %lld of %lld points recorded in %s\n", (long long)s->recovered,
           s->parts, (long long)(s->n - sim_sweep_missing(s, NULL)), (long long)s->n, s->opt.db);
    int64_t missing = sim_sweep_missing(s, stdout);
    if (missing) printf("kvsim sweep: %lld points missing: run them, then --merge-parts again\n", (long long)missing);
    else rmdir(s->parts);
    return missing ? SIM_EXIT_INTERNAL : SIM_EXIT_OK;
}

static void print_totals(FILE *f, const sim_sweep *s)
{
    const sim_merge_stats *st = &s->merged;
    fprintf(f, "kvsim sweep: %lld points: %lld run, %lld already recorded, %lld failed in %.1f s -> %s",
            (long long)s->n, (long long)(s->finished - s->failed), (long long)s->recorded, (long long)s->failed,
            sim_wall_seconds() - s->opt.t0, s->opt.db);
    if (st->runs) fprintf(f, " (runs %lld-%lld)", (long long)st->first_run, (long long)st->last_run);
    fputc('\n', f);
}

#define J_NUM(o, path) json_number_value(sim_config_path_get(o, path))

/* One line per point: its run, the headline numbers, its grid values. */
static void print_table(const json_t *points)
{
    printf("\n%6s %7s %10s %10s %9s %9s  %s\n", "run", "attain", "TTFT p90", "TBT p99", "hit rate", "rejected",
           "point");
    size_t i;
    const json_t *p;
    json_array_foreach(points, i, p)
    {
        const json_t *s = json_object_get(p, "summary");
        const char *point = json_string_value(json_object_get(p, "point"));
        char *label = sim_has_control(point) ? sim_sh_word(point) : sim_xstrdup(point); /* no raw escape byte */
        if (!s) {
            printf("%6s %7s %10s %10s %9s %9s  %s\n", "-", "-", "-", "-", "-", "-", label);
            free(label);
            continue;
        }
        char ttft[32], tbt[32]; /* "—" when null: no request completed */
        printf("%6lld %7.3f %s %s %9.4f %9.0f  %s\n", (long long)json_integer_value(json_object_get(p, "run_id")),
               J_NUM(s, "slo_attainment"), sim_cli_num(sim_config_path_get(s, "ttft_ms.p90"), "%*.1f", 10, ttft, 32),
               sim_cli_num(sim_config_path_get(s, "tbt_ms.p99"), "%*.2f", 10, tbt, 32), J_NUM(s, "hit_rate_blocks"),
               J_NUM(s, "rejected.total"), label);
        free(label);
    }
}

/* After a run: the totals line (stderr under --json), then the table or
 * one JSON object {"db", "points": [...]}. */
static int print_results(const sim_sweep *s, sim_err *err)
{
    json_t *points;
    print_totals(s->opt.json ? stderr : stdout, s);
    if (sim_sweep_results(s, &points, err)) return -1;
    if (s->opt.json) {
        json_t *o = json_pack("{s:s, s:o}", "db", s->opt.db, "points", points);
        json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        putchar('\n');
        json_decref(o);
    } else {
        print_table(points);
        json_decref(points);
    }
    return 0;
}

/* ---- the command ------------------------------------------------------------------ */

static int sweep_main(const sim_sweep_opts *o, const sweep_mode *m)
{
    sim_err err = {{0}};
    sim_sweep s;
    int rc = SIM_EXIT_USAGE, bad = sim_sweep_open(&s, o, &err);
    if (s.recovered && !m->merge_parts)
        fprintf(stderr, "kvsim sweep: recovered %lld runs from %s\n", (long long)s.recovered, s.parts);
    if (bad) goto out;
    if (m->merge_parts) {
        rc = print_merged(&s);
        goto out;
    }
    if (o->emit) {
        rc = sim_sweep_emit(&s, &err) ? SIM_EXIT_USAGE : SIM_EXIT_OK;
        if (rc == SIM_EXIT_OK) print_emitted(&s);
        goto out;
    }
    fprintf(stderr, "kvsim sweep: %lld points, %lld already recorded, running %lld %s %d %s -> %s\n", (long long)s.n,
            (long long)s.recorded, (long long)s.todo, o->slurm.on ? "on Slurm, at most" : "with", o->jobs,
            o->slurm.on ? "at once" : "jobs", o->db);
    rc = SIM_EXIT_INTERNAL;
    if (sim_sweep_run(&s, &err)) {
        if (s.stop_signal) rc = 128 + s.stop_signal;
        goto out;
    }
    if (print_results(&s, &err)) goto out;
    rc = s.failed ? SIM_EXIT_INTERNAL : SIM_EXIT_OK;
out:
    if (err.msg[0]) fprintf(stderr, "kvsim sweep: %s\n", err.msg);
    sim_sweep_free(&s);
    return rc;
}

int cmd_sweep(int argc, char **argv)
{
    sim_sweep_opts o = {.db = "sweep.db", .t0 = sim_wall_seconds(), .tty = isatty(STDERR_FILENO)};
    sweep_mode m = {0};
    int rc = SIM_EXIT_OK;
    bool parsed = parse_args(argc, argv, &o, &m, &rc) == 0;
    if (parsed && m.array_task) {
        sim_err err = {{0}};
        sim_sweep_array_task(m.array_task, &err); /* returns only on error */
        rc = sim_usage_error("sweep", err.msg);
    } else if (parsed) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        if (!o.jobs) o.jobs = o.slurm.on ? 1000 : cpus > 0 ? (int)cpus : 1; /* Slurm: no cap below the array's */
        rc = sweep_main(&o, &m);
    }
    for (int i = 0; i < o.nbase; i++) free(o.base[i]);
    free(o.base);
    sim_cli_slurm_free(&o.slurm);
    return rc;
}
