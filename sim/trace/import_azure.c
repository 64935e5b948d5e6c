/* sim/trace/import_azure.c — the Azure LLM inference traces
 * (github.com/Azure/AzurePublicDataset: AzureLLMInferenceDataset2023 and
 * the week-long 2024 traces) for `kvsim trace import azure`
 * (sim/trace/csvimport.h).
 *
 * Header `TIMESTAMP,ContextTokens,GeneratedTokens`; TIMESTAMP is a wall
 * clock time such as `2023-11-16 18:15:46.6805900` (7 fractional digits).
 * It is read exactly: the calendar date becomes a day count (the civil-
 * from-days inverse of H. Hinnant's date algorithms, proleptic Gregorian,
 * no time zone: only differences matter), the time of day seconds, the
 * fraction (up to 9 digits) nanoseconds, all in integers. */
#include "sim/trace/csvimport.h"

#include <stdbool.h>
#include <string.h>

/* Days from 1970-01-01 to y-m-d (Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int days_in_month(int64_t y, int64_t m)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return days[m - 1] + (m == 2 && leap);
}

/* n digits at s as a number; false unless all are digits. */
static bool digits(const char *s, int n, int64_t *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        *v = *v * 10 + (s[i] - '0');
    }
    return true;
}

/* "YYYY-MM-DD HH:MM:SS[.F]" (or a 'T' between date and time) → seconds
 * since 1970 and the fraction in ns. */
static bool parse_time(const char *s, int64_t *sec, int64_t *ns)
{
    int64_t y, mo, d, h, mi, se, frac = 0;
    if (strlen(s) < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' || s[16] != ':')
        return false;
    if (!digits(s, 4, &y) || !digits(s + 5, 2, &mo) || !digits(s + 8, 2, &d) || !digits(s + 11, 2, &h) ||
        !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &se))
        return false;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || se > 59) return false;
    if (s[19] && (s[19] != '.' || sim_csv_fraction_ns(s + 20, strlen(s + 20), &frac))) return false;
    *sec = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60 + se;
    *ns = frac;
    return true;
}

/* The latest second an int64 ns clock from 1970 holds (2262-04-11). */
#define MAX_SEC (INT64_MAX / 1000000000 - 1)

static int parse(const sim_csv_row *row, const sim_csv_import_opts *o, sim_csv_request *req, sim_err *err)
{
    (void)o;
    int64_t sec, frac;
    if (!parse_time(row->col[0], &sec, &frac))
        return sim_csv_errf(row, 0, err,
                            "'%.40s' is not a time such as 2023-11-16 18:15:46.6805900 "
                            "(YYYY-MM-DD HH:MM:SS, up to 9 fractional digits)",
                            row->col[0]);
    if (sec < 0) return sim_csv_errf(row, 0, err, "'%.40s' is before 1970", row->col[0]);
    if (sec > MAX_SEC) return sim_csv_errf(row, 0, err, "'%.40s' is after 2262 (the ns clock's range)", row->col[0]);
    req->ts_ns = sec * 1000000000 + frac;
    if (sim_csv_count(row, 1, &req->input, err) || sim_csv_count(row, 2, &req->output, err)) return -1;
    return 1;
}

static const char *const header[] = {"TIMESTAMP", "ContextTokens", "GeneratedTokens"};

const sim_csv_format sim_csv_azure = {
    .name = "azure",
    .header = header,
    .ncol = sizeof header / sizeof header[0],
    .help = "Azure LLM inference traces (2023, 2024): TIMESTAMP,ContextTokens,GeneratedTokens",
    .parse = parse,
};
