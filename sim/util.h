/* sim/util.h — small shared helpers: the error record every layer fills in,
 * size/number parsing with suffixes, and time unit conversions.
 *
 * Errors: functions return 0 on success and -1 on failure after writing a
 * message into a caller-owned sim_err. The message names the bad input
 * (file:line:field, option name, config key) so main can print it verbatim.
 * Nothing below main exits the process. */
#ifndef SIM_UTIL_H
#define SIM_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct sim_err {
    char msg[1024];
} sim_err;

/* Format a message into err (may be NULL) and return -1. */
int sim_errf(sim_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON file that did not load (jansson's error line and text): "WHAT
 * PATH:LINE: TEXT", or "WHAT PATH: TEXT" when it could not be read (line < 1),
 * then " (NEXT)" when next says what to do; what may be "". Returns -1. */
int sim_json_file_errf(sim_err *err, const char *what, const char *path, int line, const char *text, const char *next);

/* Parse a size or count: "3e6", "512GiB", "1TB", "10M", "inf".
 * Decimal suffixes k/K, M, G, T, P (×1000^n; "B" optional: "1TB", "3M");
 * binary suffixes KiB, MiB, GiB, TiB. "inf" gives INFINITY.
 * Negative, empty or trailing garbage is an error naming `what`. */
int sim_parse_size(const char *s, const char *what, double *out, sim_err *err);
/* A count (tokens, blocks): as sim_parse_size with decimal multipliers
 * (3e6, 3M, inf) but no byte suffix — "512GiB" is an error that says the
 * option counts, not bytes, so a byte size is never read as a count. */
int sim_parse_count(const char *s, const char *what, double *out, sim_err *err);

/* What a size holds, counted in blocks, chunks or pages of `unit` bytes
 * (or tokens). "inf" means unbounded, as does any size whose count reaches
 * SIM_COUNT_UNBOUNDED (2.3e18): more than any run fills, yet a few such
 * counts added still fit an int64. A store given it is never full, and it
 * allocates for what it holds, never for its capacity. sim_count_in is
 * floor(size / unit) saturating there (0 for NaN or less than one unit):
 * every size-to-count conversion goes through it, so no double overflows
 * an int64 cast and inf means the same everywhere. */
#define SIM_COUNT_UNBOUNDED (INT64_MAX / 4)
static inline int64_t sim_count_in(double size, double unit)
{
    double n = size / unit;
    if (!(n >= 1)) return 0;
    return n < (double)SIM_COUNT_UNBOUNDED ? (int64_t)n : SIM_COUNT_UNBOUNDED;
}

/* Parse a finite double / a non-negative int64 with the same error style. */
/* Of n candidate names, the one closest to s by edit distance when it is
 * close enough to be a slip (at most 2 edits, or a third of s), else NULL:
 * the "did you mean" of an unknown name. */
const char *sim_closest(const char *s, const char *const *cands, size_t n);
/* " (did you mean 'X'?)" for sim_closest's answer, or "" (static buffer). */
const char *sim_did_you_mean(const char *s, const char *const *cands, size_t n);

int sim_parse_double(const char *s, const char *what, double *out, sim_err *err);
/* A finite number > 0 ("WHAT: S is not a number > 0" otherwise). */
int sim_parse_positive(const char *s, const char *what, double *out, sim_err *err);
int sim_parse_i64(const char *s, const char *what, int64_t *out, sim_err *err);

/* Nanosecond clock of the simulation. */
#define SIM_NS_PER_MS 1000000LL
#define SIM_NS_PER_S  1000000000LL
/* Seconds to the engine's ns clock, rounded, saturating at ±SIM_NS_MAX
 * (73 years; NaN reads as 0): no double ever overflows the int64 cast. */
#define SIM_NS_MAX    (INT64_MAX / 4)
static inline int64_t sim_s_to_ns(double s)
{
    double ns = s * 1e9;
    if (!(ns < (double)SIM_NS_MAX)) return ns == ns ? SIM_NS_MAX : 0;
    if (!(ns > -(double)SIM_NS_MAX)) return -SIM_NS_MAX;
    return (int64_t)(ns + (s >= 0 ? 0.5 : -0.5));
}
static inline double sim_ns_to_s(int64_t ns) { return (double)ns / 1e9; }
static inline double sim_ns_to_ms(int64_t ns) { return (double)ns / 1e6; }

/* path (absolute, or relative to the working directory) as a path relative
 * to folder dir, e.g. "../../traces/default.jsonl": what a file that lives
 * in dir should record to name path. Both must exist; NULL when not. The
 * caller frees. */
char *sim_path_relative(const char *path, const char *dir);

/* Write s to f as HTML/XML text: & < > " escaped (a report page, JUnit XML). */
void sim_fput_xml(FILE *f, const char *s);

/* s as one word of a POSIX shell command line that a user pastes or a job
 * runner executes: as is when it holds only characters no shell treats
 * specially (letters, digits and _ . / = : , + - @ %), else in single quotes
 * with each ' written '\'' ("" gives ''). Within single quotes nothing is
 * expanded, so $(...), backquotes and spaces stay literal. A word with a
 * control byte (a newline, an escape) is written in ANSI-C quotes instead,
 * $'a\nb' (bash, zsh, ksh, busybox sh, POSIX.1-2024), so that the line
 * stays one line and no terminal sees the raw byte (issue 40 item 4). The
 * caller frees. */
char *sim_sh_word(const char *s);
/* Whether s holds a control byte (below 0x20, or 0x7f). */
bool sim_has_control(const char *s);
/* Whether paths a and b name one existing file (links followed): an
 * output that would overwrite a command's own input. */
bool sim_same_file(const char *a, const char *b);

/* Wall-clock seconds (CLOCK_MONOTONIC), for wall_seconds in summaries. */
double sim_wall_seconds(void);

/* malloc/calloc/realloc that never return NULL for nonzero sizes:
 * out-of-memory aborts with a message (the one place allowed to stop). */
void *sim_xmalloc(size_t n);
void *sim_xcalloc(size_t n, size_t size);
void *sim_xrealloc(void *p, size_t n);
char *sim_xstrdup(const char *s);
/* sim_xmalloc for a large table that is filled at once (a hash map's
 * buckets): from SIM_HUGE_MIN bytes up, aligned to 2 MiB and its whole
 * 2 MiB pages advised to the kernel as transparent huge pages (madvise
 * MADV_HUGEPAGE; no effect where THP is off), so that filling it takes one
 * page fault per 2 MiB instead of one per 4 KiB; no byte more is
 * allocated. Freed with free(). */
#define SIM_HUGE_MIN ((size_t)2 << 20)
void *sim_xmalloc_huge(size_t n);

/* A plug-in table's count / at / lookup, generated for a static array of
 * pointers to ops structs that each start with `const char *name`:
 *   size_t PREFIX_count(void); const OPS *PREFIX_at(size_t i) (NULL past the
 *   end); const OPS *PREFIX_lookup(const char *name) (NULL when unknown).
 * The lookup is the only place a plug-in's name is compared. The file using
 * it includes <string.h>. */
#define SIM_REGISTRY(prefix, ops_t, table)                                                                             \
    size_t prefix##_count(void) { return sizeof(table) / sizeof((table)[0]); }                                         \
    const ops_t *prefix##_at(size_t i) { return i < prefix##_count() ? (table)[i] : NULL; }                            \
    const ops_t *prefix##_lookup(const char *name)                                                                     \
    {                                                                                                                  \
        for (size_t i = 0; i < prefix##_count(); i++)                                                                  \
            if (!strcmp((table)[i]->name, name)) return (table)[i];                                                    \
        return NULL;                                                                                                   \
    }

#endif
