/* sim/trace/csvfield.c — column parsers the CSV trace formats share
 * (sim/trace/csvimport.h): counts and fractions of a second, read exactly
 * as integers, and the "FILE:LINE: COLUMN: problem" message. Apart from
 * the importer (sim/trace/csvimport.c) so that the formats it lists can
 * call them without a circle between the files. */
#include "sim/trace/csvimport.h"
#include "sim/trace/trace.h"
#include "sim/trace/trace_int.h"

#include <stdarg.h>

int sim_csv_errf(const sim_csv_row *row, size_t c, sim_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = sim_line_verrf(err, row->path, row->line, row->header[c], fmt, ap);
    va_end(ap);
    return rc;
}

int sim_csv_count(const sim_csv_row *row, size_t c, int64_t *out, sim_err *err)
{
    const char *s = row->col[c];
    int64_t v = 0;
    if (!*s) return sim_csv_errf(row, c, err, "empty (expected a token count)");
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return sim_csv_errf(row, c, err, "'%.40s' is not a token count (a non-negative integer)", s);
        if (v > SIM_TRACE_MAX_TOKENS)
            return sim_csv_errf(row, c, err, "%.40s tokens is too large (at most %d)", s, SIM_TRACE_MAX_TOKENS);
        v = v * 10 + (*p - '0');
    }
    if (v > SIM_TRACE_MAX_TOKENS)
        return sim_csv_errf(row, c, err, "%.40s tokens is too large (at most %d)", s, SIM_TRACE_MAX_TOKENS);
    *out = v;
    return 0;
}

int sim_csv_fraction_ns(const char *s, size_t n, int64_t *ns)
{
    if (n == 0 || n > 9) return -1;
    int64_t v = 0;
    for (size_t i = 0; i < 9; i++) {
        int d = 0;
        if (i < n) {
            if (s[i] < '0' || s[i] > '9') return -1;
            d = s[i] - '0';
        }
        v = v * 10 + d;
    }
    *ns = v;
    return 0;
}
