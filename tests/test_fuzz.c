/* tests/test_fuzz.c — the fuzzing harness's deterministic corpus run (issue
 * 13): every seed in tests/fuzz/corpus/{trace,config,set,ragpulse,csv,model,validate}/
 * and a fixed
 * number of mutations of each go through the same checks the libFuzzer
 * entry points run (tests/fuzz/fuzz_*.c), in process; a sample of them also
 * goes through the real binary.
 *
 * In process, each case must come back accepted, or rejected with a
 * message; a broken contract fails the test, and a sanitizer report or a
 * signal kills the binary after printing the case (fz_on_death). Through
 * the CLI (`kvsim run --trace`, `kvsim config --config`, `kvsim run
 * --config`, `kvsim run --set`, `kvsim trace import ragpulse|azure|burstgpt`,
 * `kvsim model import`, `kvsim validate --measurements`), each case
 * must exit 0, or 2 with a message starting "kvsim" on stderr: never 1,
 * never a signal, never a hang (each run is under `timeout`); a trace the
 * import wrote must then pass `kvsim trace stats` with as many requests.
 *
 * Mutations come from a seeded PRNG (splitmix64 of family, seed and
 * mutation number), so the cases and the printed counts are the same on
 * every run with the same corpus: bit flips, byte inserts and deletes,
 * numbers replaced by edge tokens (NaN, Infinity, -0, 1e309, digit runs
 * past int64), splices of two seeds, truncation, duplicated keys and lines.
 *
 * How the entry points share one binary: each fuzz_NAME.c keeps its
 * check in a static function fuzz_NAME_check and compiles its
 * LLVMFuzzerTestOneInput only when FUZZ_NO_ENTRY is not defined. Defining
 * it here and including the files gives this file the checks under
 * distinct names, with no clashing entry point and no mock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <dirent.h>

#define FUZZ_NO_ENTRY
#include "tests/fuzz/fuzz_config.c"
#include "tests/fuzz/fuzz_csv.c"
#include "tests/fuzz/fuzz_model.c"
#include "tests/fuzz/fuzz_ragpulse.c"
#include "tests/fuzz/fuzz_set.c"
#include "tests/fuzz/fuzz_trace.c"
#include "tests/fuzz/fuzz_validate.c"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define FZ_ON_DEATH(fn) __asan_set_death_callback(fn)
#else
#define FZ_ON_DEATH(fn) ((void)(fn))
#endif

#define FZ_MAX   16384 /* bytes of one case at most */
#define FZ_SEEDS 32    /* seeds per family at most */
#define FZ_TRACE "tests/fuzz/corpus/trace/mooncake.jsonl"

typedef struct fz_case {
    size_t n;
    uint8_t b[FZ_MAX];
} fz_case;

typedef enum fz_kind {
    FZ_TRACE_FAMILY,
    FZ_CONFIG_FAMILY,
    FZ_SET_FAMILY,
    FZ_RAGPULSE_FAMILY,
    FZ_CSV_FAMILY,
    FZ_MODEL_FAMILY,
    FZ_VALIDATE_FAMILY
} fz_kind;

typedef struct fz_family {
    const char *name; /* corpus folder and label in the count line */
    fz_kind kind;
    fuzz_verdict (*check)(const uint8_t *data, size_t size);
    int mutations;  /* per seed, besides the seed itself */
    int cli_every;  /* mutations cli_every / 2 + j * cli_every also go through the CLI */
    bool cli_seeds; /* instead: the seed itself, then every cli_every-th mutation */
    int nseeds;
    char *names[FZ_SEEDS];
    fz_case *seeds;
    int accepted, rejected, broken;
} fz_family;

static fz_family families[] = {
    {.name = "trace", .kind = FZ_TRACE_FAMILY, .check = fuzz_trace_check, .mutations = 40, .cli_every = 20},
    {.name = "config", .kind = FZ_CONFIG_FAMILY, .check = fuzz_config_check, .mutations = 30, .cli_every = 30},
    {.name = "set", .kind = FZ_SET_FAMILY, .check = fuzz_set_check, .mutations = 30, .cli_every = 15},
    {.name = "ragpulse",
     .kind = FZ_RAGPULSE_FAMILY,
     .check = fuzz_ragpulse_check,
     .mutations = 40,
     .cli_every = 20,
     .cli_seeds = true},
    {.name = "csv", .kind = FZ_CSV_FAMILY, .check = fuzz_csv_check, .mutations = 40, .cli_every = 20},
    {.name = "model", .kind = FZ_MODEL_FAMILY, .check = fuzz_model_check, .mutations = 40, .cli_every = 20},
    {.name = "validate", .kind = FZ_VALIDATE_FAMILY, .check = fuzz_validate_check, .mutations = 40, .cli_every = 20},
};
#define FZ_NFAMILIES (sizeof families / sizeof families[0])

/* ---- printing a case ------------------------------------------------------ */

/* As a printf(1) format that writes the case's bytes back: octal escapes
 * for anything but plain printable ASCII, so NUL bytes survive too. */
static void fz_print_case(FILE *f, const fz_case *c)
{
    fputs("printf '", f);
    for (size_t i = 0; i < c->n; i++) {
        uint8_t ch = c->b[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '\'' && ch != '\\' && ch != '%') fputc(ch, f);
        else fprintf(f, "\\%03o", ch);
    }
    fputs("'\n", f);
}

/* What a sanitizer report or a signal interrupts: printed on the way out. */
static const fz_family *fz_cur_family;
static int fz_cur_seed, fz_cur_k;
static const fz_case *fz_cur_case;

static void fz_on_death(void)
{
    if (!fz_cur_case) return;
    fprintf(stderr, "fuzz: died on %s seed %s mutation %d; the input is\n", fz_cur_family->name,
            fz_cur_family->names[fz_cur_seed], fz_cur_k);
    fz_print_case(stderr, fz_cur_case);
}

/* ---- mutations ------------------------------------------------------------ */

static uint64_t fz_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t fz_below(uint64_t *s, size_t n) { return n ? (size_t)(fz_next(s) % n) : 0; }

/* Replace b[at, at + del) by ins[0, nins), keeping the case within FZ_MAX.
 * ins must not point into c. */
static void fz_edit(fz_case *c, size_t at, size_t del, const void *ins, size_t nins)
{
    if (at > c->n) at = c->n;
    if (del > c->n - at) del = c->n - at;
    if (c->n - del + nins > FZ_MAX) nins = FZ_MAX - (c->n - del);
    memmove(c->b + at + nins, c->b + at + del, c->n - at - del);
    if (nins) memcpy(c->b + at, ins, nins);
    c->n = c->n - del + nins;
}

/* Insert a copy of b[from, from + n) at `at`. */
static void fz_copy_within(fz_case *c, size_t from, size_t n, size_t at)
{
    uint8_t tmp[1024];
    if (n > sizeof tmp) n = sizeof tmp;
    memcpy(tmp, c->b + from, n);
    fz_edit(c, at, 0, tmp, n);
}

static void fz_flip(fz_case *c, uint64_t *s, const fz_family *f)
{
    if (c->n) c->b[fz_below(s, c->n)] ^= (uint8_t)(1u << fz_below(s, 8));
}

static void fz_insert_byte(fz_case *c, uint64_t *s, const fz_family *f)
{
    static const uint8_t bytes[] = "{}[]\":,.-+09eE \n\\\0\xff\xc3\t=";
    uint8_t b = bytes[fz_below(s, sizeof bytes)];
    fz_edit(c, fz_below(s, c->n + 1), 0, &b, 1);
}

static void fz_delete(fz_case *c, uint64_t *s, const fz_family *f)
{
    fz_edit(c, fz_below(s, c->n + 1), 1 + fz_below(s, 8), NULL, 0);
}

static bool fz_is_num(uint8_t ch) { return (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '+'; }

/* A number in the text (the first digit at or after a random place) is
 * replaced by an edge token; with no digit, the token is inserted. */
static void fz_token(fz_case *c, uint64_t *s, const fz_family *f)
{
    static const char *const tokens[] = {
        "9999999999999999999",
        "-9223372036854775809",
        "18446744073709551616",
        "2147483648",
        "2147483647",
        "4611686018427387904",
        "NaN",
        "Infinity",
        "-Infinity",
        "-0",
        "1e309",
        "-1e309",
        "1e-400",
        "0",
        "0.5",
        "1e18",
        "null",
        "true",
        "\"1\"",
        "[]",
        "{}",
        "\"inf\"",
        "\"1TB\"",
        "-1",
    };
    const char *t = tokens[fz_below(s, sizeof tokens / sizeof tokens[0])];
    size_t p = fz_below(s, c->n + 1), i = p;
    while (i < c->n && !(c->b[i] >= '0' && c->b[i] <= '9')) i++;
    if (i == c->n) {
        fz_edit(c, p, 0, t, strlen(t));
        return;
    }
    size_t start = i, end = i;
    while (start > 0 && fz_is_num(c->b[start - 1])) start--;
    while (end < c->n && (fz_is_num(c->b[end]) || c->b[end] == 'e' || c->b[end] == 'E')) end++;
    fz_edit(c, start, end - start, t, strlen(t));
}

/* This case up to a random place, then another seed from a random place. */
static void fz_splice(fz_case *c, uint64_t *s, const fz_family *f)
{
    const fz_case *o = &f->seeds[fz_below(s, (size_t)f->nseeds)];
    size_t from = fz_below(s, o->n + 1);
    c->n = fz_below(s, c->n + 1);
    fz_edit(c, c->n, 0, o->b + from, o->n - from);
}

static void fz_truncate(fz_case *c, uint64_t *s, const fz_family *f) { c->n = fz_below(s, c->n + 1); }

/* "key": value, → "key": value, "key": value, (a duplicated member). */
static void fz_dup_key(fz_case *c, uint64_t *s, const fz_family *f)
{
    size_t q = fz_below(s, c->n + 1), comma;
    while (q < c->n && c->b[q] != '"') q++;
    for (comma = q; comma < c->n && c->b[comma] != ',' && c->b[comma] != '\n'; comma++) continue;
    if (comma < c->n && c->b[comma] == ',') fz_copy_within(c, q, comma + 1 - q, comma + 1);
    else fz_token(c, s, f);
}

/* A random line duplicated, deleted or moved to the end. */
static void fz_line(fz_case *c, uint64_t *s, const fz_family *f)
{
    size_t p = fz_below(s, c->n + 1), start = p, end = p;
    while (start > 0 && c->b[start - 1] != '\n') start--;
    while (end < c->n && c->b[end++] != '\n') continue;
    size_t how = fz_below(s, 3), n = end - start;
    if (how == 0) {
        fz_copy_within(c, start, n, start);
        return;
    }
    if (how == 2) fz_copy_within(c, start, n, c->n);
    fz_edit(c, start, n, NULL, 0);
}

/* fz_token twice: edge values in otherwise valid input reach the checks
 * behind the parsers, where a flipped bit mostly stops at the parser. */
typedef void (*fz_op)(fz_case *c, uint64_t *s, const fz_family *f);
static const fz_op fz_ops[] = {fz_flip,   fz_insert_byte, fz_delete,  fz_token, fz_token,
                               fz_splice, fz_truncate,    fz_dup_key, fz_line};

/* Case k of seed i: k = 0 is the seed itself, k ≥ 1 its mutation k: one
 * operation (3 times in 4), else two or three stacked. */
static void fz_make(const fz_family *f, int i, int k, fz_case *c)
{
    memcpy(c, &f->seeds[i], sizeof *c);
    if (k == 0) return;
    uint64_t s = (uint64_t)f->kind << 48 ^ (uint64_t)i << 24 ^ (uint64_t)k;
    fz_next(&s);
    for (size_t nops = fz_below(&s, 4) ? 1 : 2 + fz_below(&s, 2); nops > 0; nops--)
        fz_ops[fz_below(&s, sizeof fz_ops / sizeof fz_ops[0])](c, &s, f);
}

/* ---- the corpus ----------------------------------------------------------- */

static int fz_visible(const struct dirent *e) { return e->d_name[0] != '.'; }

/* The seeds of one family, in name order. */
static void fz_load(fz_family *f)
{
    char dir[256], path[512];
    snprintf(dir, sizeof dir, "tests/fuzz/corpus/%s", f->name);
    struct dirent **list;
    int n = scandir(dir, &list, fz_visible, alphasort);
    if (n <= 0) fail_msg("%s: no seeds", dir);
    if (n > FZ_SEEDS) fail_msg("%s: %d seeds, at most %d", dir, n, FZ_SEEDS);
    f->seeds = calloc(n > 0 ? (size_t)n : 1, sizeof *f->seeds); /* fail_msg returns, as gcc -O2 sees it */
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, list[i]->d_name);
        FILE *in = fopen(path, "rb");
        if (!in) fail_msg("%s: cannot open", path);
        f->seeds[i].n = fread(f->seeds[i].b, 1, FZ_MAX, in);
        fclose(in);
        f->names[i] = strdup(list[i]->d_name);
        free(list[i]);
    }
    free(list);
    f->nseeds = n;
}

static int fz_setup(void **state)
{
    for (size_t i = 0; i < FZ_NFAMILIES; i++) fz_load(&families[i]);
    FZ_ON_DEATH(fz_on_death);
    return 0;
}

static int fz_teardown(void **state)
{
    for (size_t i = 0; i < FZ_NFAMILIES; i++) {
        for (int j = 0; j < families[i].nseeds; j++) free(families[i].names[j]);
        free(families[i].seeds);
    }
    return 0;
}

/* ---- in process ----------------------------------------------------------- */

static void fz_run_family(fz_family *f, fz_case *c)
{
    for (int i = 0; i < f->nseeds; i++)
        for (int k = 0; k <= f->mutations; k++) {
            fz_make(f, i, k, c);
            fz_cur_family = f, fz_cur_seed = i, fz_cur_k = k, fz_cur_case = c;
            fuzz_verdict v = f->check(c->b, c->n);
            fz_cur_case = NULL;
            if (v == FUZZ_ACCEPTED) f->accepted++;
            else if (v == FUZZ_REJECTED) f->rejected++;
            else {
                f->broken++;
                fprintf(stderr, "fuzz: %s seed %s mutation %d is broken; the input is\n", f->name, f->names[i], k);
                fz_print_case(stderr, c);
            }
        }
}

static void test_mutations_in_process(void **state)
{
    fz_case *c = malloc(sizeof *c);
    int broken = 0;
    for (size_t i = 0; i < FZ_NFAMILIES; i++) {
        fz_run_family(&families[i], c);
        broken += families[i].broken;
    }
    free(c);
    if (broken) fail_msg("%d broken cases (printed above)", broken);
}

/* ---- through the binary --------------------------------------------------- */

#define FZ_CLI_TIMEOUT 60 /* seconds a run may take before it counts as a hang */

/* Append s to args, single-quoted for the shell. */
static void fz_quote(char *args, size_t cap, const char *s)
{
    size_t n = strlen(args);
    args[n++] = '\'';
    for (; *s; s++) {
        if (n + 6 >= cap) fail_msg("a --set list too long for one command line");
        if (*s == '\'') memcpy(args + n, "'\\''", 4), n += 4;
        else args[n++] = *s;
    }
    args[n++] = '\'';
    args[n] = 0;
}

/* `run --trace T --set A --set B ...`: the case split as fuzz_set_check splits it. */
static void fz_set_args(const fz_case *c, char *args, size_t cap)
{
    char *buf = malloc(c->n + 1), *sets[FUZZ_MAX_SETS];
    memcpy(buf, c->b, c->n);
    buf[c->n] = 0;
    int n = fuzz_set_split(buf, c->n, sets);
    snprintf(args, cap, "run --trace %s --json", FZ_TRACE);
    for (int j = 0; j < n; j++) {
        if (strlen(args) + 8 >= cap) fail_msg("a --set list too long for one command line");
        strcat(args, " --set ");
        fz_quote(args, cap, sets[j]);
    }
    free(buf);
}

/* The command line of case (seed i) of family f, its bytes in `file`. */
static void fz_cli_args(const fz_family *f, const fz_case *c, int i, const char *file, char *args, size_t cap)
{
    switch (f->kind) {
    case FZ_TRACE_FAMILY:
        snprintf(args, cap, "run --trace %s --json%s", file, i % 2 ? " --skip-bad --sort" : "");
        break;
    case FZ_CONFIG_FAMILY:
        if (i % 2) snprintf(args, cap, "config --config %s", file);
        else snprintf(args, cap, "run --config %s --trace %s --json", file, FZ_TRACE);
        break;
    case FZ_SET_FAMILY: fz_set_args(c, args, cap); break;
    case FZ_RAGPULSE_FAMILY: snprintf(args, cap, "trace import ragpulse %s -o %s/out.jsonl", file, file); break;
    case FZ_CSV_FAMILY:
        snprintf(args, cap, "trace import %s %s -o %s.jsonl", i % 2 ? "azure" : "burstgpt", file, file);
        break;
    case FZ_MODEL_FAMILY: snprintf(args, cap, "model import %s -o %s.jsonl --name fuzz", file, file); break;
    case FZ_VALIDATE_FAMILY: snprintf(args, cap, "validate --measurements %s --json", file); break;
    }
}

/* A file of b[0, n) at path. */
static void fz_write(const char *path, const uint8_t *b, size_t n)
{
    FILE *out = fopen(path, "wb");
    assert_non_null(out);
    fwrite(b, 1, n, out);
    fclose(out);
}

/* Where a case goes for the binary: a temp file, or for the importer a temp
 * directory of its six files (fuzz_ragpulse_split). */
static char *fz_case_path(const fz_family *f, const fz_case *c)
{
    if (f->kind != FZ_RAGPULSE_FAMILY) {
        char *file = tu_temp_path();
        fz_write(file, c->b, c->n);
        return file;
    }
    char *dir = strdup("/tmp/kvsim-fuzz-XXXXXX"), path[512];
    assert_non_null(mkdtemp(dir));
    size_t start[SIM_RAGPULSE_NFILES], len[SIM_RAGPULSE_NFILES];
    fuzz_ragpulse_split(c->b, c->n, start, len);
    for (int j = 0; j < SIM_RAGPULSE_NFILES; j++) {
        snprintf(path, sizeof path, "%s/%s", dir, sim_ragpulse_files[j]);
        fz_write(path, c->b + start[j], len[j]);
    }
    return dir;
}

static void fz_case_remove(const fz_family *f, char *file)
{
    char path[512];
    for (int j = 0; f->kind == FZ_RAGPULSE_FAMILY && j <= SIM_RAGPULSE_NFILES; j++) {
        snprintf(path, sizeof path, "%s/%s", file, j < SIM_RAGPULSE_NFILES ? sim_ragpulse_files[j] : "out.jsonl");
        unlink(path);
    }
    if (f->kind == FZ_CSV_FAMILY || f->kind == FZ_MODEL_FAMILY)
        snprintf(path, sizeof path, "%s.jsonl", file), unlink(path);
    if (f->kind == FZ_RAGPULSE_FAMILY) rmdir(file);
    else unlink(file);
    free(file);
}

/* What `kvsim trace import` wrote (dir/out.jsonl, or FILE.jsonl beside a
 * CSV): `kvsim trace stats` reads it with as many requests as the import
 * reported ("wrote N requests"). */
static bool fz_import_stats(const fz_family *f, const char *file, const char *import_err)
{
    const char *w = strstr(import_err, "wrote ");
    char args[600];
    snprintf(args, sizeof args, "trace stats --json %s%s", file, f->kind == FZ_CSV_FAMILY ? ".jsonl" : "/out.jsonl");
    cli_result r = tu_kvsim(args);
    json_t *j = r.status == 0 ? json_loads(r.out, 0, NULL) : NULL;
    long long n = json_integer_value(json_object_get(j, "requests"));
    bool ok = j && w && n == strtoll(w + 6, NULL, 10);
    if (!ok)
        fprintf(stderr, "fuzz: kvsim %s after an import that said '%s': exit %d, %s", args, import_err, r.status,
                r.err);
    json_decref(j);
    tu_free(&r);
    return ok;
}

/* One case through the binary: exit 0, or 2 with a message from kvsim. */
static bool fz_cli_one(const fz_family *f, const fz_case *c, int i, int k, int *status)
{
    char *file = fz_case_path(f, c), args[7168];
    fz_cli_args(f, c, i, file, args, sizeof args);
    cli_result r = tu_kvsim(args);
    *status = r.status;
    bool ok = r.status == 0 || (r.status == 2 && !strncmp(r.err, "kvsim", 5));
    if (ok && r.status == 0 && (f->kind == FZ_RAGPULSE_FAMILY || f->kind == FZ_CSV_FAMILY))
        ok = fz_import_stats(f, file, r.err);
    if (!ok) {
        fprintf(stderr, "fuzz: kvsim %s: exit %d%s; stderr:\n%s\nthe input (%s seed %s mutation %d) is\n", args,
                r.status, r.status == 124 || r.status == 137 ? " (a hang: killed by timeout)" : "", r.err, f->name,
                f->names[i], k);
        fz_print_case(stderr, c);
    }
    tu_free(&r);
    fz_case_remove(f, file);
    return ok;
}

/* Every cli_every-th mutation of each seed, from cli_every / 2 on (from the
 * seed itself with cli_seeds). */
static int fz_cli_family(const fz_family *f, fz_case *c, int *runs, int *exit0)
{
    int bad = 0;
    for (int i = 0; i < f->nseeds; i++)
        for (int k = f->cli_seeds ? 0 : f->cli_every / 2; k <= f->mutations; k += f->cli_every) {
            int status;
            fz_make(f, i, k, c);
            (*runs)++;
            if (!fz_cli_one(f, c, i, k, &status)) bad++;
            else if (status == 0) (*exit0)++;
        }
    return bad;
}

static void test_mutations_through_cli(void **state)
{
    const char *bin = getenv("KVSIM_BIN");
    char *saved = bin ? strdup(bin) : NULL, wrapped[1024];
    snprintf(wrapped, sizeof wrapped, "timeout -k 5 %d %s", FZ_CLI_TIMEOUT, tu_kvsim_san_bin());
    setenv("KVSIM_BIN", wrapped, 1);
    fz_case *c = malloc(sizeof *c);
    int runs = 0, exit0 = 0, bad = 0;
    for (size_t i = 0; i < FZ_NFAMILIES; i++) bad += fz_cli_family(&families[i], c, &runs, &exit0);
    free(c);
    if (saved) setenv("KVSIM_BIN", saved, 1);
    else unsetenv("KVSIM_BIN");
    free(saved);
    printf("fuzz:");
    for (size_t i = 0; i < FZ_NFAMILIES; i++) {
        const fz_family *f = &families[i];
        printf(" %s %d cases (%d rejected, %d accepted),", f->name, f->accepted + f->rejected + f->broken, f->rejected,
               f->accepted);
    }
    printf(" cli %d (%d exit 0, %d exit 2)\n", runs, exit0, runs - exit0 - bad);
    if (bad) fail_msg("%d of %d command lines exited other than 0 or 2 (printed above)", bad, runs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mutations_in_process),
        cmocka_unit_test(test_mutations_through_cli),
    };
    return cmocka_run_group_tests(tests, fz_setup, fz_teardown);
}
