/* sim/sweep/sweep.c — a sweep's points: each grid point resolved as
 * `kvsim run` will resolve it (so a bad grid or key fails before anything
 * runs), matched against the database (points already recorded, and repeats
 * of an earlier point, are not run again), and turned into the argv of its
 * `kvsim run`. Opening and freeing a sweep (sim/sweep/sweep.h). */
#include "sim/sweep/sweep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/config/config.h"
#include "sim/config/grid.h"
#include "sim/index/keymap.h"
#include "sim/results/merge.h"
#include "sim/results/results.h"
#include "sim/serving/serving.h"
#include "sim/sweep/sweep_int.h"
#include "sim/trace/trace.h"

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

/* The fingerprint of the trace at path: hashed once per sweep while the
 * points name the same file unchanged (same device, inode, size and
 * modification time), not once per point: it reads the whole trace, and it
 * is done before any point starts. */
static int fingerprint(sim_sweep_fp *c, const char *path, uint64_t *fp, sim_err *err)
{
    struct stat st;
    bool have = stat(path, &st) == 0 && S_ISREG(st.st_mode);
    if (have && c->valid && !strcmp(c->path, path) && c->dev == st.st_dev && c->ino == st.st_ino &&
        c->size == st.st_size && c->mtime.tv_sec == st.st_mtim.tv_sec && c->mtime.tv_nsec == st.st_mtim.tv_nsec)
        return *fp = c->fp, 0;
    if (sim_trace_fingerprint(path, fp, err)) return -1;
    if (!have || strlen(path) >= sizeof c->path) return 0;
    *c = (sim_sweep_fp){
        .valid = true, .dev = st.st_dev, .ino = st.st_ino, .size = st.st_size, .mtime = st.st_mtim, .fp = *fp};
    snprintf(c->path, sizeof c->path, "%s", path);
    return 0;
}

/* Resolve a point as `kvsim run` will: config hash, policies, trace fingerprint. */
static int resolve_point(sim_sweep *s, sim_sweep_point *p, sim_err *err)
{
    sim_config cfg;
    if (sim_config_load(&cfg, s->opt.config, p->sets, s->nsets, err)) return -1;
    int rc = sim_serving_check(&cfg, err) || fingerprint(&s->fp, cfg.trace_path, &p->fp, err);
    p->hash = cfg.hash;
    sim_config_free(&cfg);
    return rc ? -1 : 0;
}

static int build_points(sim_sweep *s, sim_err *err)
{
    s->n = s->grid.npoints;
    s->nsets = s->opt.nbase + s->grid.naxes;
    s->pts = sim_xcalloc((size_t)s->n, sizeof *s->pts);
    for (int64_t i = 0; i < s->n; i++) {
        sim_sweep_point *p = &s->pts[i];
        p->sets = sim_xcalloc((size_t)s->nsets, sizeof *p->sets);
        memcpy(p->sets, s->opt.base, (size_t)s->opt.nbase * sizeof *p->sets);
        sim_grid_point_sets(&s->grid, i, p->sets + s->opt.nbase);
        p->label = join_label(p->sets + s->opt.nbase, s->grid.naxes);
        sim_err e = {{0}};
        if (resolve_point(s, p, &e))
            return sim_errf(err, "point %lld of %lld (%s): %s", (long long)i + 1, (long long)s->n, p->label, e.msg);
        snprintf(p->part, sizeof p->part, "%s/%05lld-%016llx.db", s->parts, (long long)i, (unsigned long long)p->hash);
    }
    return 0;
}

/* Mark points already in the database, and repeats of an earlier point. */
static int mark_recorded(sim_sweep *s, sim_results *db, sim_err *err)
{
    sim_keymap seen;
    sim_keymap_init(&seen, s->n);
    int rc = 0;
    for (int64_t i = 0; i < s->n && rc == 0; i++) {
        sim_sweep_point *p = &s->pts[i];
        bool found = false;
        int64_t first = sim_keymap_get(&seen, p->hash ^ (p->fp * 0x9E3779B97F4A7C15ull));
        if (first >= 0 && s->pts[first].hash == p->hash && s->pts[first].fp == p->fp) p->state = PT_DUPLICATE;
        else if (db && (rc = sim_results_has_run(db, p->hash, p->fp, &found, err)) == 0 && found)
            p->state = PT_RECORDED;
        sim_keymap_put(&seen, p->hash ^ (p->fp * 0x9E3779B97F4A7C15ull), i);
        s->todo += p->state == PT_TODO;
    }
    sim_keymap_free(&seen);
    return rc;
}

char **sim_sweep_run_argv(const sim_sweep *s, const sim_sweep_point *p)
{
    char **argv = sim_xcalloc((size_t)(2 * s->nsets + 8), sizeof *argv);
    int n = 0;
    argv[n++] = "kvsim";
    argv[n++] = "run";
    if (s->opt.config) argv[n++] = "--config", argv[n++] = (char *)s->opt.config;
    for (int i = 0; i < s->nsets; i++) argv[n++] = "--set", argv[n++] = p->sets[i];
    argv[n++] = "--db";
    argv[n++] = (char *)p->part;
    argv[n++] = "--part";
    return argv;
}

/* Open the database, recover parts a crashed sweep left, mark what is recorded. */
static int prepare_db(sim_sweep *s, sim_err *err)
{
    sim_merge_stats st = {0};
    bool emit_only = s->opt.emit != NULL;
    if (emit_only && access(s->opt.db, F_OK) != 0) return mark_recorded(s, NULL, err);
    if (sim_results_open(&s->db, s->opt.db, err)) return -1;
    if (!emit_only && (sim_sweep_lock_parts(s, &s->lock_fd, err) || sim_sweep_merge_parts(s, s->db, &st, err)))
        return -1;
    s->recovered = st.runs;
    if (mark_recorded(s, s->db, err)) return -1;
    for (int64_t i = 0; i < s->n; i++) s->recorded += s->pts[i].state == PT_RECORDED;
    return 0;
}

int sim_sweep_open(sim_sweep *s, const sim_sweep_opts *o, sim_err *err)
{
    *s = (sim_sweep){.opt = *o, .lock_fd = -1};
    snprintf(s->parts, sizeof s->parts, "%s.parts", s->opt.db);
    if (sim_grid_parse(s->opt.grid_spec, &s->grid, err) || build_points(s, err) || prepare_db(s, err)) return -1;
    return 0;
}

void sim_sweep_free(sim_sweep *s)
{
    if (s->lock_fd >= 0) close(s->lock_fd);
    sim_results_close(s->db);
    for (int64_t i = 0; i < s->n && s->pts; i++) {
        for (int k = s->opt.nbase; k < s->nsets && s->pts[i].sets; k++) free(s->pts[i].sets[k]);
        free(s->pts[i].sets);
        free(s->pts[i].label);
    }
    free(s->pts);
    sim_grid_free(&s->grid);
    *s = (sim_sweep){.lock_fd = -1};
}

int64_t sim_sweep_missing(const sim_sweep *s, FILE *f)
{
    int64_t missing = 0;
    for (int64_t i = 0; i < s->n; i++) {
        if (s->pts[i].state != PT_TODO) continue;
        missing++;
        if (f) fprintf(f, "  missing: %s\n", s->pts[i].label);
    }
    return missing;
}
