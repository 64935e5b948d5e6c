/* sim/trace/import_burstgpt.c — BurstGPT (github.com/HPMLL/BurstGPT) for
 * `kvsim trace import burstgpt` (sim/trace/csvimport.h).
 *
 * Header `Timestamp,Model,Request tokens,Response tokens,Total tokens,Log
 * Type`; Timestamp is seconds from the trace's start as a decimal number
 * ("5", "45.25"), read exactly into ns (up to 9 fractional digits). Model
 * ("ChatGPT", "GPT-4") and Log Type ("Conversation log", "API log") select
 * rows when --model / --log-type are given. Total tokens must be a count
 * but is not used (the request and response columns are). */
#include "sim/trace/csvimport.h"

#include <string.h>

enum { C_TIME, C_MODEL, C_REQUEST, C_RESPONSE, C_TOTAL, C_LOG };

/* Seconds "S[.F]" → ns, exactly; false for anything else or above 2^62 ns. */
static bool parse_seconds(const char *s, int64_t *ns)
{
    size_t n = strspn(s, "0123456789");
    if (n == 0 || n > 10) return false; /* 10 digits: 317 years of seconds */
    int64_t sec = 0, frac = 0;
    for (size_t i = 0; i < n; i++) sec = sec * 10 + (s[i] - '0');
    if (s[n] && (s[n] != '.' || sim_csv_fraction_ns(s + n + 1, strlen(s + n + 1), &frac))) return false;
    *ns = sec * 1000000000 + frac;
    return *ns < (int64_t)0x1p62;
}

static int parse(const sim_csv_row *row, const sim_csv_import_opts *o, sim_csv_request *req, sim_err *err)
{
    if (!parse_seconds(row->col[C_TIME], &req->ts_ns))
        return sim_csv_errf(row, C_TIME, err, "'%.40s' is not seconds from the start (such as 5 or 45.25)",
                            row->col[C_TIME]);
    int64_t total;
    if (sim_csv_count(row, C_REQUEST, &req->input, err) || sim_csv_count(row, C_RESPONSE, &req->output, err) ||
        sim_csv_count(row, C_TOTAL, &total, err))
        return -1;
    if (o->model && strcmp(row->col[C_MODEL], o->model)) return 0;
    if (o->log_type && strcmp(row->col[C_LOG], o->log_type)) return 0;
    return 1;
}

static const char *const header[] = {"Timestamp",       "Model",        "Request tokens",
                                     "Response tokens", "Total tokens", "Log Type"};

const sim_csv_format sim_csv_burstgpt = {
    .name = "burstgpt",
    .header = header,
    .ncol = sizeof header / sizeof header[0],
    .help = "BurstGPT: Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type",
    .filters = true,
    .parse = parse,
};
