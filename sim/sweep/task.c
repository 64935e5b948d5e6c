/* sim/sweep/task.c — the job file of a Slurm array (slurm.c) and the array
 * task that reads it. The file is JSON, {"cwd": DIR, "runs": [[argv of
 * `kvsim run`], ...]}, task i running runs[i] in DIR: each argument stays
 * one string end to end (no shell line to quote or to parse), and the
 * task is this very binary (`kvsim sweep --array-task FILE`), which execs
 * its `kvsim run` in place, so Slurm sees the run's exit status. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "sim/sweep/sweep.h"
#include "sim/sweep/sweep_int.h"

int sim_sweep_write_jobfile(const sim_sweep *s, const int64_t *idx, int n, const char *cwd, const char *path,
                            sim_err *err)
{
    json_t *runs = json_array();
    for (int i = 0; i < n; i++) {
        char **argv = sim_sweep_run_argv(s, &s->pts[idx[i]]);
        json_t *a = json_array();
        for (int k = 0; argv[k]; k++) json_array_append_new(a, json_string(argv[k]));
        json_array_append_new(runs, a);
        free(argv);
    }
    json_t *o = json_pack("{s:s, s:o}", "cwd", cwd, "runs", runs);
    int rc = json_dump_file(o, path, JSON_COMPACT);
    json_decref(o);
    return rc ? sim_errf(err, "cannot write %s: %s", path, strerror(errno)) : 0;
}

/* Task SLURM_ARRAY_TASK_ID's argv from the job file (free the array only). */
static char **task_argv(const json_t *runs, const char *id, const char *file, sim_err *err)
{
    char *end;
    long i = id ? strtol(id, &end, 10) : -1;
    if (!id || *end || i < 0 || (size_t)i >= json_array_size(runs))
        return sim_errf(err, "%s: SLURM_ARRAY_TASK_ID %s is not one of its %zu tasks", file, id ? id : "(unset)",
                        json_array_size(runs)),
               NULL;
    const json_t *a = json_array_get(runs, (size_t)i);
    char **argv = sim_xcalloc(json_array_size(a) + 1, sizeof *argv);
    for (size_t k = 0; k < json_array_size(a); k++) argv[k] = (char *)json_string_value(json_array_get(a, k));
    return argv;
}

int sim_sweep_array_task(const char *file, sim_err *err)
{
    json_error_t je;
    json_t *o = json_load_file(file, 0, &je);
    if (!o) return sim_json_file_errf(err, "", file, je.line, je.text, NULL);
    const char *cwd = json_string_value(json_object_get(o, "cwd"));
    const json_t *runs = json_object_get(o, "runs");
    char **argv = NULL;
    if (!cwd || !json_is_array(runs)) sim_errf(err, "%s: not a kvsim sweep job file (no cwd or runs)", file);
    else if ((argv = task_argv(runs, getenv("SLURM_ARRAY_TASK_ID"), file, err)) == NULL) (void)0;
    else if (chdir(cwd) != 0) sim_errf(err, "cannot enter %s: %s", cwd, strerror(errno));
    else {
        execv("/proc/self/exe", argv);
        sim_errf(err, "cannot run kvsim: %s", strerror(errno));
    }
    free(argv);
    json_decref(o);
    return -1;
}
