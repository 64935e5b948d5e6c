/* sim/sweep/table.c — a finished sweep's results: for every point of the
 * grid, the newest completed run of it in the database (by config hash and
 * trace fingerprint, whether this sweep ran it or an earlier one did) with
 * its summary. The command prints them as a table, or as JSON. */
#include <stdio.h>
#include <string.h>

#include <jansson.h>
#include <sqlite3.h>

#include "sim/sweep/sweep.h"
#include "sim/sweep/sweep_int.h"

/* The point's grid values as an object {key: value} (values as JSON when
 * they parse, else strings, as --set reads them). */
static json_t *point_sets(const sim_sweep *s, const sim_sweep_point *p)
{
    json_t *o = json_object();
    for (int i = s->opt.nbase; i < s->nsets; i++) {
        const char *eq = strchr(p->sets[i], '=');
        if (!eq) continue;
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)(eq - p->sets[i]), p->sets[i]);
        json_t *v = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
        json_object_set_new(o, key, v ? v : json_string(eq + 1));
    }
    return o;
}

/* One point's row: its grid values, and its newest recorded run, if any. */
static json_t *point_row(const sim_sweep *s, const sim_sweep_point *p, sqlite3_stmt *st)
{
    char hash[17], fp[17];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)p->hash);
    snprintf(fp, sizeof fp, "%016llx", (unsigned long long)p->fp);
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, fp, -1, SQLITE_TRANSIENT);
    json_t *row = json_pack("{s:s, s:o}", "point", p->label, "sets", point_sets(s, p));
    if (sqlite3_step(st) == SQLITE_ROW) {
        json_object_set_new(row, "run_id", json_integer(sqlite3_column_int64(st, 0)));
        json_t *summary = json_loads((const char *)sqlite3_column_text(st, 1), 0, NULL);
        if (summary) json_object_set_new(row, "summary", summary);
    }
    return row;
}

int sim_sweep_results(const sim_sweep *s, json_t **out, sim_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(sim_results_handle(s->db),
                           "SELECT id, summary_json FROM runs WHERE config_hash=?1 AND trace_fingerprint=?2"
                           " AND summary_json IS NOT NULL ORDER BY id DESC LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return sim_errf(err, "%s: %s", s->opt.db, sqlite3_errmsg(sim_results_handle(s->db)));
    *out = json_array();
    for (int64_t i = 0; i < s->n; i++) json_array_append_new(*out, point_row(s, &s->pts[i], st));
    sqlite3_finalize(st);
    return 0;
}
