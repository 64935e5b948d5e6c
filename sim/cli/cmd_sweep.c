/* sim/cli/cmd_sweep.c — `kvsim sweep`: run a grid of config points (policies,
 * capacities, replay speeds, P:D ratios: any config key) as `kvsim run`s in
 * parallel worker processes and record them all in one results database.
 *
 * How a sweep stays cheap to interrupt and to repeat:
 *  - every point is resolved first (config, policies, trace fingerprint), so
 *    a bad grid or key fails before anything runs;
 *  - a point whose (config hash, trace fingerprint) the database already
 *    holds is skipped: re-running a sweep runs only what is missing;
 *  - each point runs as its own process (fork + exec of this very binary,
 *    /proc/self/exe, `kvsim run ... --db PART`) writing its own part database
 *    in DB.parts/; a run commits as one transaction, so a crash (of a worker
 *    or of the sweep) loses at most the points that were running;
 *  - the parts are merged into DB at the end, and at the start of the next
 *    sweep on DB if a crash left some behind (skipping runs already there).
 * `--emit-jobs FILE` writes the same points as self-contained shell command
 * lines instead, for GNU parallel or a Slurm array; `kvsim merge` gathers
 * their part databases. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/cli/cli.h"
#include "sim/serving/serving.h"
#include "sim/config/config.h"
#include "sim/config/grid.h"
#include "sim/index/keymap.h"
#include "sim/results/merge.h"
#include "sim/results/results.h"

static const char sweep_usage[] =
    "usage: kvsim sweep --grid 'key=v1,v2;key2=a,b' [--trace FILE] [--config FILE]\n"
    "                   [--set key.path=value]... [--jobs N] [--db FILE] [--emit-jobs FILE]\n"
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
    "                     then gather them with  kvsim merge DB DB.parts/*.db\n"
    "  -h, --help         this help\n"
    "\n"
    "Progress goes to stderr: a bar on a terminal, one line per point otherwise.\n"
    "SIGINT/SIGTERM stop the workers too; finished points stay recorded in FILE.parts/.\n"
    "Exit status: 0 ok, 2 bad arguments/grid/config/database, 1 a point failed,\n"
    "128+N stopped by signal N.\n";

typedef enum point_state { PT_TODO, PT_RECORDED, PT_DUPLICATE, PT_RUNNING, PT_DONE, PT_FAILED } point_state;

typedef struct sweep_point {
    char **sets;        /* the base sets (borrowed) then the grid sets (owned) */
    char *label;        /* the grid sets, space-separated */
    uint64_t hash, fp;  /* config hash, trace fingerprint */
    char part[PATH_MAX + 64];
    point_state state;
    pid_t pid;
    double t0;
} sweep_point;

typedef struct sweep {
    const char *config, *db, *emit, *grid_spec;
    char **base;        /* --trace and --set, in the order given */
    int nbase, nsets, jobs;
    sim_grid grid;
    sweep_point *pts;
    int64_t n, todo, finished, failed;
    char parts[PATH_MAX];
    double t0;
    bool tty;
} sweep;

/* ---- arguments ---------------------------------------------------------- */

static int parse_jobs(const char *s, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < 1 || v > 1024) return -1;
    *out = (int)v;
    return 0;
}

static int parse_args(int argc, char **argv, sweep *s, int *rc)
{
    static const struct option opts[] = {
        {"grid", required_argument, 0, 'g'},   {"trace", required_argument, 0, 't'},
        {"config", required_argument, 0, 'c'}, {"set", required_argument, 0, 's'},
        {"jobs", required_argument, 0, 'j'},   {"db", required_argument, 0, 'd'},
        {"emit-jobs", required_argument, 0, 'e'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    s->base = sim_xcalloc((size_t)argc + 1, sizeof *s->base);
    opterr = 0;
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
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
        case 'h': fputs(sweep_usage, stdout); *rc = SIM_EXIT_OK; return -1;
        default: *rc = sim_usage_error("sweep", "unknown or incomplete option (see kvsim sweep --help)"); return -1;
        }
    }
    if (optind < argc) return *rc = sim_usage_error("sweep", "unexpected argument (see kvsim sweep --help)"), -1;
    if (!s->grid_spec) return *rc = sim_usage_error("sweep", "--grid is required"), -1;
    return 0;
}

/* ---- points ---------------------------------------------------------------- */

static char *join_label(char **sets, int n)
{
    size_t len = 1;
    for (int i = 0; i < n; i++) len += strlen(sets[i]) + 1;
    char *label = sim_xcalloc(1, len);
    for (int i = 0; i < n; i++) {
        if (i) strcat(label, " ");
        strcat(label, sets[i]);
    }
    return label;
}

/* Resolve a point as `kvsim run` will: config hash, policies, trace fingerprint. */
static int resolve_point(const sweep *s, sweep_point *p, sim_err *err)
{
    sim_config cfg;
    if (sim_config_load(&cfg, s->config, p->sets, s->nsets, err)) return -1;
    int rc = sim_serving_check(&cfg, err) || sim_trace_fingerprint(cfg.trace_path, &p->fp, err);
    p->hash = cfg.hash;
    sim_config_free(&cfg);
    return rc ? -1 : 0;
}

static int build_points(sweep *s, sim_err *err)
{
    s->n = s->grid.npoints;
    s->nsets = s->nbase + s->grid.naxes;
    s->pts = sim_xcalloc((size_t)s->n, sizeof *s->pts);
    for (int64_t i = 0; i < s->n; i++) {
        sweep_point *p = &s->pts[i];
        p->sets = sim_xcalloc((size_t)s->nsets, sizeof *p->sets);
        memcpy(p->sets, s->base, (size_t)s->nbase * sizeof *p->sets);
        sim_grid_point_sets(&s->grid, i, p->sets + s->nbase);
        p->label = join_label(p->sets + s->nbase, s->grid.naxes);
        sim_err e = {{0}};
        if (resolve_point(s, p, &e))
            return sim_errf(err, "point %lld of %lld (%s): %s", (long long)i + 1, (long long)s->n, p->label, e.msg);
        snprintf(p->part, sizeof p->part, "%s/%05lld-%016llx.db", s->parts, (long long)i, (unsigned long long)p->hash);
    }
    return 0;
}

/* Mark points already in the database, and repeats of an earlier point. */
static int mark_recorded(sweep *s, sim_results *db, sim_err *err)
{
    sim_keymap seen;
    sim_keymap_init(&seen, s->n);
    int rc = 0;
    for (int64_t i = 0; i < s->n && rc == 0; i++) {
        sweep_point *p = &s->pts[i];
        bool found = false;
        int64_t first = sim_keymap_get(&seen, p->hash ^ (p->fp * 0x9E3779B97F4A7C15ull));
        if (first >= 0 && s->pts[first].hash == p->hash && s->pts[first].fp == p->fp) p->state = PT_DUPLICATE;
        else if (db && (rc = sim_results_has_run(db, p->hash, p->fp, &found, err)) == 0 && found) p->state = PT_RECORDED;
        sim_keymap_put(&seen, p->hash ^ (p->fp * 0x9E3779B97F4A7C15ull), i);
        s->todo += p->state == PT_TODO;
    }
    sim_keymap_free(&seen);
    return rc;
}

/* ---- part databases -------------------------------------------------------- */

static void remove_db_files(const char *path)
{
    char side[PATH_MAX + 8];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

/* Merge every part database into db (name order = grid order), skipping runs
 * already there, and remove the parts that held a run. A part without a
 * completed run is left alone: its point may still be running elsewhere. */
static int merge_parts(const sweep *s, sim_results *db, sim_merge_stats *st, sim_err *err)
{
    char pattern[PATH_MAX + 8];
    glob_t g;
    snprintf(pattern, sizeof pattern, "%s/*.db", s->parts);
    if (glob(pattern, 0, NULL, &g) != 0) return 0;
    int rc = 0;
    for (size_t i = 0; i < g.gl_pathc && rc == 0; i++) {
        sim_merge_stats one = {0};
        rc = sim_merge_db(db, g.gl_pathv[i], true, &one, err);
        if (rc == 0 && one.runs + one.skipped > 0) remove_db_files(g.gl_pathv[i]);
        st->runs += one.runs;
        st->skipped += one.skipped;
        if (one.runs && !st->first_run) st->first_run = one.first_run;
        if (one.runs) st->last_run = one.last_run;
    }
    globfree(&g);
    return rc;
}

/* The parts directory, locked so that two sweeps never share one database. */
static int lock_parts(const sweep *s, int *fd, sim_err *err)
{
    if (mkdir(s->parts, 0777) != 0 && errno != EEXIST)
        return sim_errf(err, "cannot create %s: %s", s->parts, strerror(errno));
    *fd = open(s->parts, O_RDONLY | O_DIRECTORY);
    if (*fd < 0) return sim_errf(err, "cannot open %s: %s", s->parts, strerror(errno));
    if (flock(*fd, LOCK_EX | LOCK_NB) != 0) return sim_errf(err, "another kvsim sweep is using %s", s->db);
    return 0;
}

/* ---- progress ----------------------------------------------------------------- */

static void fmt_duration(double sec, char *buf, size_t n)
{
    long t = (long)(sec + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, n, "%ld:%02ld", t / 60, t % 60);
}

/* Estimated time left: the elapsed time per finished point, times the rest. */
static void fmt_eta(const sweep *s, char *buf, size_t n)
{
    if (!s->finished) snprintf(buf, n, "?");
    else fmt_duration((sim_wall_seconds() - s->t0) / (double)s->finished * (double)(s->todo - s->finished), buf, n);
}

static void draw_bar(const sweep *s, int running)
{
    char eta[32], elapsed[32], bar[41];
    int fill = s->todo ? (int)(40 * s->finished / s->todo) : 40;
    for (int i = 0; i < 40; i++) bar[i] = i < fill ? '#' : '.';
    bar[40] = 0;
    fmt_eta(s, eta, sizeof eta);
    fmt_duration(sim_wall_seconds() - s->t0, elapsed, sizeof elapsed);
    fprintf(stderr, "\r\033[K[%s] %lld/%lld points  %d running  %s elapsed  ETA %s", bar, (long long)s->finished,
            (long long)s->todo, running, elapsed, eta);
}

static void report_point(const sweep *s, const sweep_point *p, int status, int running)
{
    char eta[32];
    fmt_eta(s, eta, sizeof eta);
    if (s->tty && p->state == PT_DONE) return draw_bar(s, running);
    if (s->tty) fputs("\r\033[K", stderr);
    if (p->state == PT_DONE)
        fprintf(stderr, "kvsim sweep: [%lld/%lld] done %s (%.1f s), ETA %s\n", (long long)s->finished,
                (long long)s->todo, p->label, sim_wall_seconds() - p->t0, eta);
    else
        fprintf(stderr, "kvsim sweep: [%lld/%lld] FAILED %s (%s %d)\n", (long long)s->finished, (long long)s->todo,
                p->label, WIFEXITED(status) ? "exit" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    if (s->tty) draw_bar(s, running);
}

/* ---- workers -------------------------------------------------------------------- */

/* argv of `kvsim run` for one point. */
static char **run_argv(const sweep *s, const sweep_point *p)
{
    char **argv = sim_xcalloc((size_t)(2 * s->nsets + 8), sizeof *argv);
    int n = 0;
    argv[n++] = "kvsim";
    argv[n++] = "run";
    if (s->config) argv[n++] = "--config", argv[n++] = (char *)s->config;
    for (int i = 0; i < s->nsets; i++) argv[n++] = "--set", argv[n++] = p->sets[i];
    argv[n++] = "--db";
    argv[n++] = (char *)p->part;
    return argv;
}

static int spawn(const sweep *s, sweep_point *p, sim_err *err)
{
    char **argv = run_argv(s, p);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, STDOUT_FILENO);
        execv("/proc/self/exe", argv);
        _exit(127); /* only a failed exec gets here, in the child */
    }
    free(argv);
    if (pid < 0) return sim_errf(err, "fork: %s", strerror(errno));
    p->pid = pid;
    p->state = PT_RUNNING;
    p->t0 = sim_wall_seconds();
    return 0;
}

static sweep_point *by_pid(sweep *s, pid_t pid)
{
    for (int64_t i = 0; i < s->n; i++)
        if (s->pts[i].state == PT_RUNNING && s->pts[i].pid == pid) return &s->pts[i];
    return NULL;
}

/* SIGINT, SIGTERM or SIGHUP stop the sweep: the running workers get the same
 * signal (their open transactions roll back) and the sweep reports what is
 * left for the next run instead of leaving workers behind. */
static volatile sig_atomic_t stop_signal;

static void on_stop(int sig) { stop_signal = sig; }

static void catch_stop_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa = {.sa_handler = on_stop}; /* no SA_RESTART: waitpid returns EINTR */
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
}

static int stop_workers(sweep *s, sim_err *err)
{
    for (int64_t i = 0; i < s->n; i++)
        if (s->pts[i].state == PT_RUNNING) kill(s->pts[i].pid, stop_signal);
    for (int64_t i = 0; i < s->n; i++)
        if (s->pts[i].state == PT_RUNNING) waitpid(s->pts[i].pid, NULL, 0);
    if (s->tty) fputc('\n', stderr);
    return sim_errf(err, "stopped by signal %d: %lld of %lld points done; run the same sweep again to finish",
                    (int)stop_signal, (long long)(s->finished - s->failed), (long long)s->todo);
}

/* Keep `jobs` points running until every point has finished. */
static int run_points(sweep *s, sim_err *err)
{
    int64_t next = 0;
    int running = 0;
    catch_stop_signals();
    if (s->tty) draw_bar(s, 0);
    for (;;) {
        for (; running < s->jobs && next < s->n && !stop_signal; next++) {
            if (s->pts[next].state != PT_TODO) continue;
            if (spawn(s, &s->pts[next], err)) return -1;
            running++;
        }
        if (stop_signal) return stop_workers(s, err);
        if (!running) break;
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0 && errno == EINTR) continue;
        if (pid < 0) return sim_errf(err, "waitpid: %s", strerror(errno));
        sweep_point *p = by_pid(s, pid);
        if (!p) continue;
        running--;
        s->finished++;
        bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        p->state = ok ? PT_DONE : PT_FAILED;
        s->failed += !ok;
        report_point(s, p, status, running);
    }
    if (s->tty) fputc('\n', stderr);
    return 0;
}

/* ---- emitting jobs -------------------------------------------------------------- */

/* A word for sh: as is when it is plain, else single-quoted. */
static void put_word(FILE *f, const char *w)
{
    if (*w && strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./=:,+-@%") == strlen(w)) {
        fprintf(f, " %s", w);
        return;
    }
    fputs(" '", f);
    for (; *w; w++) *w == '\'' ? fputs("'\\''", f) : fputc(*w, f);
    fputc('\'', f);
}

static int emit_jobs(const sweep *s, int64_t recorded, sim_err *err)
{
    char cwd[PATH_MAX], exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (!getcwd(cwd, sizeof cwd) || n <= 0) return sim_errf(err, "cannot find the working directory or kvsim binary");
    exe[n] = 0;
    if (mkdir(s->parts, 0777) != 0 && errno != EEXIST)
        return sim_errf(err, "cannot create %s: %s", s->parts, strerror(errno));
    FILE *f = fopen(s->emit, "w");
    if (!f) return sim_errf(err, "--emit-jobs: cannot write %s: %s", s->emit, strerror(errno));
    for (int64_t i = 0; i < s->n; i++) {
        if (s->pts[i].state != PT_TODO) continue;
        char **argv = run_argv(s, &s->pts[i]);
        fputs("cd", f);
        put_word(f, cwd);
        fputs(" &&", f);
        put_word(f, exe);
        for (int k = 1; argv[k]; k++) put_word(f, argv[k]);
        fputc('\n', f);
        free(argv);
    }
    if (fclose(f) != 0) return sim_errf(err, "--emit-jobs: writing %s: %s", s->emit, strerror(errno));
    printf("kvsim sweep: wrote %lld commands to %s (%lld points already recorded in %s)\n", (long long)s->todo,
           s->emit, (long long)recorded, s->db);
    printf("  run them:    parallel --jobs %d < %s\n", s->jobs, s->emit);
    printf("  or (Slurm):  sbatch --array=1-%lld --wrap 'sed -n ${SLURM_ARRAY_TASK_ID}p %s | sh'\n", (long long)s->todo,
           s->emit);
    printf("  then:        kvsim merge %s %s/*.db\n", s->db, s->parts);
    return 0;
}

/* ---- the command ------------------------------------------------------------------ */

static void print_totals(const sweep *s, int64_t recorded, const sim_merge_stats *st)
{
    printf("kvsim sweep: %lld points: %lld run, %lld already recorded, %lld failed in %.1f s -> %s", (long long)s->n,
           (long long)(s->finished - s->failed), (long long)recorded, (long long)s->failed,
           sim_wall_seconds() - s->t0, s->db);
    if (st->runs) printf(" (runs %lld-%lld)", (long long)st->first_run, (long long)st->last_run);
    putchar('\n');
}

/* Open the database, recover parts a crashed sweep left, mark what is recorded. */
static int prepare_db(sweep *s, sim_results **db, int *lock_fd, int64_t *recorded, sim_err *err)
{
    sim_merge_stats st = {0};
    bool emit_only = s->emit != NULL;
    if (emit_only && access(s->db, F_OK) != 0) return mark_recorded(s, NULL, err);
    if (sim_results_open(db, s->db, err)) return -1;
    if (!emit_only && (lock_parts(s, lock_fd, err) || merge_parts(s, *db, &st, err))) return -1;
    if (st.runs) fprintf(stderr, "kvsim sweep: recovered %lld runs from %s\n", (long long)st.runs, s->parts);
    if (mark_recorded(s, *db, err)) return -1;
    for (int64_t i = 0; i < s->n; i++) *recorded += s->pts[i].state == PT_RECORDED;
    return 0;
}

static int sweep_main(sweep *s)
{
    sim_err err = {{0}};
    sim_results *db = NULL;
    int lock_fd = -1, rc = SIM_EXIT_USAGE;
    int64_t recorded = 0;
    sim_merge_stats st = {0};
    snprintf(s->parts, sizeof s->parts, "%s.parts", s->db);
    if (sim_grid_parse(s->grid_spec, &s->grid, &err) || build_points(s, &err) ||
        prepare_db(s, &db, &lock_fd, &recorded, &err))
        goto out;
    if (s->emit) {
        rc = emit_jobs(s, recorded, &err) ? SIM_EXIT_USAGE : SIM_EXIT_OK;
        goto out;
    }
    fprintf(stderr, "kvsim sweep: %lld points, %lld already recorded, running %lld with %d jobs -> %s\n",
            (long long)s->n, (long long)recorded, (long long)s->todo, s->jobs, s->db);
    rc = SIM_EXIT_INTERNAL;
    if (run_points(s, &err)) {
        if (stop_signal) rc = 128 + stop_signal;
        goto out;
    }
    if (merge_parts(s, db, &st, &err)) goto out;
    rmdir(s->parts);
    print_totals(s, recorded, &st);
    rc = s->failed ? SIM_EXIT_INTERNAL : SIM_EXIT_OK;
out:
    if (err.msg[0]) fprintf(stderr, "kvsim sweep: %s\n", err.msg);
    if (lock_fd >= 0) close(lock_fd);
    sim_results_close(db);
    return rc;
}

int cmd_sweep(int argc, char **argv)
{
    sweep s = {.db = "sweep.db", .jobs = (int)sysconf(_SC_NPROCESSORS_ONLN), .t0 = sim_wall_seconds(),
               .tty = isatty(STDERR_FILENO)};
    if (s.jobs < 1) s.jobs = 1;
    int rc = SIM_EXIT_OK;
    if (parse_args(argc, argv, &s, &rc) == 0) rc = sweep_main(&s);
    for (int64_t i = 0; i < s.n && s.pts; i++) {
        for (int k = s.nbase; k < s.nsets && s.pts[i].sets; k++) free(s.pts[i].sets[k]);
        free(s.pts[i].sets);
        free(s.pts[i].label);
    }
    free(s.pts);
    for (int i = 0; i < s.nbase; i++) free(s.base[i]);
    free(s.base);
    sim_grid_free(&s.grid);
    return rc;
}
