/* reports/fig_ladder.c — the hit-rate ladder (`kvsim hitrate --ladder --db`,
 * docs/hitrate-ladder.md): one bar chart per stored ladder, the newest of
 * each trace and setup.
 *
 * One bar per measured rung, a to e, its height the token hit rate (input
 * tokens served from cache over all input tokens, the same denominator on
 * every rung, so a lower rung can only lose). Where a rung has a per-tier
 * split (the pool rungs c and d), the bar is stacked by the tokens each
 * tier adds, HBM at the bottom: drawn as the cumulative sums, tallest
 * first, each over the one before. A rung without a split (a, b, e) is one
 * grey bar. The data file holds the stored numbers as they are (rates,
 * tokens saved, tokens per tier); the script computes the stack. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_int.h"

/* The newest ladder of each trace and setup. */
static const char ladder_ids_sql[] =
    "SELECT MAX(id) FROM ladder GROUP BY trace_fingerprint, trace_block_tokens, block_tokens, full_blocks,"
    " max_model_len, nodes, policy, router, setup ORDER BY 1";
static const char ladder_rows_sql[] =
    "SELECT rung, hit_rate_tokens, hit_rate_blocks, prefill_tokens_saved, tokens, loss_tokens, ttft_p90_ms,"
    " hbm_tokens, dram_tokens, ssd_tokens, remote_tokens FROM ladder WHERE id=?1 ORDER BY rowid";
static const char ladder_setup_sql[] =
    "SELECT trace_path, trace_fingerprint, trace_block_tokens, block_tokens, full_blocks, max_model_len, nodes,"
    " policy, router, setup FROM ladder WHERE id=?1 LIMIT 1";

#define LADDER_TIERS 4
static const char *const tier_titles[LADDER_TIERS] = {"HBM", "DRAM", "SSD", "remote (LMCache)"};
static const char *const tier_colors[LADDER_TIERS] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7"};

static const char *text_at(sqlite3_stmt *st, int i)
{
    const char *s = (const char *)sqlite3_column_text(st, i);
    return s ? s : "";
}

/* The rows of ladder id as one data block: x, "label", the stored numbers,
 * NaN where a tier has no number. has_tier[k]: some rung has tier k. */
static int write_rungs(rep *r, int64_t id, FILE *dat, FILE *caption, bool *has_tier, sim_err *err)
{
    sqlite3_stmt *st = rep_prepare(r, ladder_rows_sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, id);
    fputs("# x\trung\thit_rate_tokens\thit_rate_blocks\tprefill_tokens_saved\ttokens\tloss_tokens"
          "\thbm_tokens\tdram_tokens\tssd_tokens\tremote_tokens\n",
          dat);
    int n = 0;
    for (; sqlite3_step(st) == SQLITE_ROW; n++) {
        fprintf(dat, "%d\t\"%c ", n, 'a' + n);
        rep_dat_text(dat, text_at(st, 0));
        fprintf(dat, "\"\t%.10g\t%.10g\t%lld\t%lld\t%.10g", sqlite3_column_double(st, 1), sqlite3_column_double(st, 2),
                (long long)sqlite3_column_int64(st, 3), (long long)sqlite3_column_int64(st, 4),
                sqlite3_column_double(st, 5));
        for (int k = 0; k < LADDER_TIERS; k++) {
            bool has = sqlite3_column_type(st, 7 + k) != SQLITE_NULL;
            has_tier[k] = has_tier[k] || has;
            if (has) fprintf(dat, "\t%.0f", sqlite3_column_double(st, 7 + k));
            else fputs("\tNaN", dat);
        }
        fputc('\n', dat);
        fprintf(caption, " Rung %c (%s): %.4f of input tokens", 'a' + n, text_at(st, 0), sqlite3_column_double(st, 1));
        if (n) fprintf(caption, ", %.4f below the rung above", sqlite3_column_double(st, 5));
        if (sqlite3_column_type(st, 6) != SQLITE_NULL)
            fprintf(caption, ", TTFT p90 %.1f ms", sqlite3_column_double(st, 6));
        fputc('.', caption);
    }
    sqlite3_finalize(st);
    return n;
}

/* The cumulative sum of the ladder's tiers 0..k over the rung's tokens
 * (column 6); a tier without capacity (NaN throughout) is left out. */
static void stack_using(int k, const bool *has_tier, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "1:((0");
    for (int j = 0; j <= k; j++)
        if (has_tier[j]) used += (size_t)snprintf(buf + used, size - used, "+$%d", 8 + j);
    snprintf(buf + used, size - used, ")/$6)");
}

static const char ladder_settings[] = "set title figure_title\n"
                                      "set ylabel \"prefix hit rate (input tokens from cache / all input tokens)\"\n"
                                      "set xlabel \"rung\"\n"
                                      "set yrange [0:1]\n"
                                      "set xrange [-0.6:%d.6]\n"
                                      "set style fill solid 0.85 border rgb \"#333333\"\n"
                                      "set boxwidth 0.6\n"
                                      "set grid ytics\n"
                                      "set key outside right top\n";

/* Grey totals (the rungs without a split show only these), the tiers'
 * cumulative stacks over them, the rates as labels. */
static void write_plot(FILE *b, int nrungs, const bool *has_tier, const char *file)
{
    fprintf(b, ladder_settings, nrungs - 1);
    rep_plot_clause(b, true, file, 0, "1:3:xtic(2)", "boxes linecolor rgb \"#999999\"", "no tier split");
    for (int k = LADDER_TIERS - 1; k >= 0; k--) {
        if (!has_tier[k]) continue;
        char using[96], style[64];
        stack_using(k, has_tier, using, sizeof using);
        snprintf(style, sizeof style, "boxes linecolor rgb \"%s\"", tier_colors[k]);
        rep_plot_clause(b, false, file, 0, using, style, tier_titles[k]);
    }
    rep_plot_clause(b, false, file, 0, "1:3:(sprintf(\"%.3f\", $3))", "labels offset 0,0.8", NULL);
    fputc('\n', b);
}

/* The figure's title and the caption's opening: what was measured on what. */
static int describe(rep *r, int64_t id, char *title, size_t tsize, FILE *caption, sim_err *err)
{
    sqlite3_stmt *st = rep_prepare(r, ladder_setup_sql, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) == SQLITE_ROW) {
        snprintf(title, tsize, "Hit-rate ladder #%lld: token hit rate per rung, trace %s", (long long)id,
                 text_at(st, 0));
        fprintf(caption,
                "Where the prefix hits go (kvsim hitrate --ladder --db; docs/hitrate-ladder.md): the share of input "
                "tokens served from cache at each rung, from the trace's ceiling (a) down to what the configured "
                "cluster gets (e). Trace %s (fingerprint %s, %d-token blocks); engine %d-token blocks%s, context cap ",
                text_at(st, 0), text_at(st, 1), sqlite3_column_int(st, 2), sqlite3_column_int(st, 3),
                sqlite3_column_int(st, 4) ? ", full blocks only" : "");
        if (sqlite3_column_int64(st, 5) > 0) fprintf(caption, "%lld tokens", (long long)sqlite3_column_int64(st, 5));
        else fputs("none", caption);
        fprintf(caption,
                "; %d cache nodes, eviction %s, router %s; %s. Stacked bars: the tokens each tier adds (HBM at "
                "the bottom); grey: a rung without a tier split.",
                sqlite3_column_int(st, 6), text_at(st, 7), text_at(st, 8), text_at(st, 9));
    }
    sqlite3_finalize(st);
    return 0;
}

static int ladder_figure(rep *r, int64_t id, sim_err *err)
{
    char name[64], file[80], title[4352];
    snprintf(name, sizeof name, "ladder_id%lld", (long long)id);
    snprintf(file, sizeof file, "%s.dat", name);
    FILE *dat = rep_open(r, file, err);
    if (!dat) return -1;
    rep_body caption;
    rep_body_open(&caption);
    bool has_tier[LADDER_TIERS] = {0};
    int n = describe(r, id, title, sizeof title, caption.f, err);
    if (n == 0) n = write_rungs(r, id, dat, caption.f, has_tier, err);
    int rc = rep_close(r, dat, file, n > 0, err) || n < 0 ? -1 : 0;
    fclose(caption.f);
    if (rc == 0 && n > 0) {
        rep_body b;
        rep_body_open(&b);
        write_plot(b.f, n, has_tier, file);
        rc = rep_body_finish(r, &b, name, title, REP_WIDTH, REP_HEIGHT, err);
        if (rc == 0) rep_section(r, name, title, caption.text, NULL);
    }
    free(caption.text);
    return rc ? -1 : n > 0;
}

int rep_fig_ladder(rep *r, sim_err *err)
{
    if (!rep_table_exists(r, "ladder")) return 0;
    sqlite3_stmt *st = rep_prepare(r, ladder_ids_sql, err);
    if (!st) return -1;
    int made = 0, rc = 0;
    while (rc >= 0 && sqlite3_step(st) == SQLITE_ROW) {
        rc = ladder_figure(r, sqlite3_column_int64(st, 0), err);
        if (rc > 0) made++;
    }
    sqlite3_finalize(st);
    return rc < 0 ? -1 : made > 0;
}
