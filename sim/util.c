/* sim/util.c — error formatting, number parsing with size suffixes, wall
 * clock and checked allocation shared by every layer. */
#include "sim/util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

int sim_errf(sim_err *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int sim_json_file_errf(sim_err *err, const char *what, const char *path, int line, const char *text, const char *next)
{
    char at[32] = "";
    if (line > 0) snprintf(at, sizeof at, ":%d", line);
    return sim_errf(err, "%s%s%s%s: %s%s%s%s", what, *what ? " " : "", path, at, text, next ? " (" : "",
                    next ? next : "", next ? ")" : "");
}

typedef struct size_suffix {
    const char *name;
    double mult;
} size_suffix;

/* Longest names first so "KiB" is tried before "K". */
static const size_suffix size_suffixes[] = {
    {"KiB", 1024.0},
    {"MiB", 1048576.0},
    {"GiB", 1073741824.0},
    {"TiB", 1099511627776.0},
    {"KB", 1e3},
    {"MB", 1e6},
    {"GB", 1e9},
    {"TB", 1e12},
    {"PB", 1e15},
    {"k", 1e3},
    {"K", 1e3},
    {"M", 1e6},
    {"G", 1e9},
    {"T", 1e12},
    {"P", 1e15},
    {"B", 1.0},
};

int sim_parse_size(const char *s, const char *what, double *out, sim_err *err)
{
    if (!s || !*s) return sim_errf(err, "%s: empty value (expected a size such as 3e6, 512GiB or inf)", what);
    if (strcasecmp(s, "inf") == 0 || strcasecmp(s, "infinity") == 0) {
        *out = INFINITY;
        return 0;
    }
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !isfinite(v))
        return sim_errf(err, "%s: '%s' is not a size (expected e.g. 3e6, 512GiB, 1TB or inf)", what, s);
    double mult = 1.0;
    if (*end) {
        size_t i, n = sizeof size_suffixes / sizeof size_suffixes[0];
        for (i = 0; i < n && strcmp(end, size_suffixes[i].name) != 0; i++) {
        }
        if (i == n)
            return sim_errf(err,
                            "%s: '%s' has an unknown suffix '%s' (use k, M, G, T, KB, MB, GB, TB, KiB, MiB, GiB, TiB; "
                            "case matters: 250GB, not 250gb)",
                            what, s, end);
        mult = size_suffixes[i].mult;
    }
    if (v < 0) return sim_errf(err, "%s: '%s' is negative", what, s);
    *out = v * mult;
    return 0;
}

/* Levenshtein distance, two rows. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t n = strlen(b), prev[128], cur[128];
    if (n >= 128 || strlen(a) >= 128) return (size_t)-1;
    for (size_t j = 0; j <= n; j++) prev[j] = j;
    for (size_t i = 1; a[i - 1]; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= n; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]), del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, (n + 1) * sizeof *prev);
    }
    return prev[n];
}

static size_t common_prefix(const char *a, const char *b)
{
    size_t k = 0;
    while (a[k] && a[k] == b[k]) k++;
    return k;
}

/* The nearest candidate by edit distance; of equally near ones, the one
 * sharing the longest prefix with s (kvstore.evict: kvstore.eviction, not
 * kvstore.pic; issue 40 item 10). */
const char *sim_closest(const char *s, const char *const *cands, size_t n)
{
    size_t limit = strlen(s) / 3 > 2 ? strlen(s) / 3 : 2, best = limit + 1, best_prefix = 0;
    const char *pick = NULL;
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(s, cands[i]), p = common_prefix(s, cands[i]);
        if (d < best || (d == best && pick && p > best_prefix)) best = d, pick = cands[i], best_prefix = p;
    }
    return pick;
}

const char *sim_did_you_mean(const char *s, const char *const *cands, size_t n)
{
    static char buf[160];
    const char *c = sim_closest(s, cands, n);
    if (!c || !strcmp(c, s)) return ""; /* the name itself is no suggestion */
    snprintf(buf, sizeof buf, " (did you mean '%s'?)", c);
    return buf;
}

int sim_parse_count(const char *s, const char *what, double *out, sim_err *err)
{
    if (sim_parse_size(s, what, out, err)) return -1;
    if (strchr(s, 'B') || strstr(s, "iB"))
        return sim_errf(err, "%s: '%s' is a byte size, but %s is a count (tokens or blocks): give e.g. 3e6 or 3M%s",
                        what, s, what,
                        strstr(what, "token") ? ", or a capacity in bytes where the option takes one" : "");
    return 0;
}

int sim_parse_double(const char *s, const char *what, double *out, sim_err *err)
{
    char *end;
    errno = 0;
    double v = s ? strtod(s, &end) : 0;
    if (!s || end == s || *end || errno || !isfinite(v))
        return sim_errf(err, "%s: '%s' is not a number", what, s ? s : "");
    *out = v;
    return 0;
}

int sim_parse_positive(const char *s, const char *what, double *out, sim_err *err)
{
    if (sim_parse_double(s, what, out, err)) return -1;
    if (!(*out > 0) || isinf(*out)) return sim_errf(err, "%s: %s is not a number > 0", what, s);
    return 0;
}

int sim_parse_i64(const char *s, const char *what, int64_t *out, sim_err *err)
{
    char *end;
    errno = 0;
    long long v = s ? strtoll(s, &end, 10) : 0;
    if (!s || end == s || *end || errno) return sim_errf(err, "%s: '%s' is not an integer", what, s ? s : "");
    if (v < 0) return sim_errf(err, "%s: '%s' is negative", what, s);
    *out = v;
    return 0;
}

double sim_wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *oom(size_t n)
{
    fprintf(stderr, "kvsim: out of memory allocating %zu bytes\n", n);
    abort();
}

void *sim_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    return p ? p : oom(n);
}

void *sim_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    return p ? p : oom(n * size);
}

void *sim_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    return q ? q : oom(n);
}

/* Why: in a disaggregated replay of the Mooncake conversation trace (4P2D,
 * 250 GB of DRAM), filling new buckets as sim_keymap grew was 37% of the
 * process's page faults (`perf record -e page-faults`), and in a virtual
 * machine a fault costs microseconds (docs/store-internals.md). */
void *sim_xmalloc_huge(size_t n)
{
    if (n < SIM_HUGE_MIN) return sim_xmalloc(n);
    const size_t huge = (size_t)2 << 20;
    void *p;
    if (posix_memalign(&p, huge, n)) return oom(n);
#ifdef MADV_HUGEPAGE
    /* Advice only, on the whole 2 MiB pages (a failure leaves 4 KiB ones). */
    (void)madvise(p, n & ~(huge - 1), MADV_HUGEPAGE);
#endif
    return p;
}

char *sim_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(sim_xmalloc(n), s, n);
}

/* Split a canonical absolute path into its components (in place). */
static int path_parts(char *p, char **parts, int max)
{
    int n = 0;
    for (char *save, *t = strtok_r(p, "/", &save); t && n < max; t = strtok_r(NULL, "/", &save)) parts[n++] = t;
    return n;
}

char *sim_path_relative(const char *path, const char *dir)
{
    char *p = realpath(path, NULL), *d = realpath(dir, NULL), *out = NULL;
    char *pp[256], *dp[256];
    if (p && d) {
        int np = path_parts(p, pp, 256), nd = path_parts(d, dp, 256), c = 0;
        while (c < np && c < nd && !strcmp(pp[c], dp[c])) c++;
        size_t len = 1;
        for (int i = c; i < nd; i++) len += 3;
        for (int i = c; i < np; i++) len += strlen(pp[i]) + 1;
        out = sim_xcalloc(1, len + 1);
        for (int i = c; i < nd; i++) strcat(out, "../");
        for (int i = c; i < np; i++) strcat(strcat(out, pp[i]), i + 1 < np ? "/" : "");
        if (!*out) strcpy(out, ".");
    }
    free(p);
    free(d);
    return out;
}

/* s in ANSI-C quotes, $'...': \\, \', \n, \t, \r and other control bytes as \ooo. */
static char *ansi_c_word(const char *s)
{
    char *out = sim_xmalloc(4 * strlen(s) + 4), *o = out;
    o += sprintf(o, "$'");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '\\' || *c == '\'') o += sprintf(o, "\\%c", *c);
        else if (*c == '\n') o += sprintf(o, "\\n");
        else if (*c == '\t') o += sprintf(o, "\\t");
        else if (*c == '\r') o += sprintf(o, "\\r");
        else if (*c < 0x20 || *c == 0x7f) o += sprintf(o, "\\%03o", *c);
        else *o++ = (char)*c;
    }
    strcpy(o, "'");
    return out;
}

bool sim_has_control(const char *s)
{
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        if (*c < 0x20 || *c == 0x7f) return true;
    return false;
}

char *sim_sh_word(const char *s)
{
    static const char plain[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./=:,+-@%";
    size_t n = strlen(s), quotes = 0;
    if (n && strspn(s, plain) == n) return sim_xstrdup(s);
    if (sim_has_control(s)) return ansi_c_word(s);
    for (const char *c = s; *c; c++) quotes += *c == '\'';
    char *out = sim_xmalloc(n + 3 * quotes + 3), *o = out;
    *o++ = '\'';
    for (; *s; s++) {
        if (*s != '\'') {
            *o++ = *s;
        } else { /* close the quotes, an escaped quote, reopen */
            memcpy(o, "'\\''", 4);
            o += 4;
        }
    }
    strcpy(o, "'");
    return out;
}

void sim_fput_xml(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

bool sim_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
