/* tests/test_docs.c — documentation that cannot go stale (`make doc-test`).
 *
 * Every transcript in README.md and the docs/ pages — a fenced block whose first
 * line starts with "$ " — is re-run and its output compared with what the
 * document shows. A command is the "$ " line plus the lines after it that
 * follow a trailing backslash; its expected output is the lines up to the
 * next "$ " line or the end of the block. Both sides are normalised first
 * (the rules are in docs/doc-test.md and norm_rules below: wall times, the
 * version string, the scratch folder's path); a line that is exactly "..."
 * stands for any number of lines.
 *
 * Each document runs in its own scratch folder, where build/kvsim is the
 * optimized binary and every other top-level entry of the repository is a
 * link, so a command may write build/x.jsonl or results.db and a later
 * command of the same document may read it. A block preceded by the line
 * `<!-- doc-test: skip: REASON -->` is not run and the reason is printed
 * (for GPU transcripts); a command whose tool (sqlite3, jq, gnuplot) is not
 * installed is skipped, saying so.
 *
 * KVSIM_DOC_UPDATE=1 rewrites each stale expected output in place with what
 * the command printed (keeping a "..." elision's head and tail line counts):
 * the way to regenerate a document after a change that moves its numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <regex.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "tests/testutil.h"

enum { MAX_LINES = 20000 };

typedef struct doc {
    const char *path;
    char *lines[MAX_LINES];
    int indent[MAX_LINES]; /* spaces taken off a line of a block fenced inside a list item */
    int n;
} doc;

/* One transcript command: its text (joined continuation lines), the line of
 * its "$ ", and the document lines [out_begin, out_end) of its output. */
typedef struct cmd {
    char text[8192];
    int line, out_begin, out_end;
    bool skip;
    char reason[256];
} cmd;

/* ---- reading and writing a document ------------------------------------ */

/* A prose check (docs/doc-test.md): an HTML comment opened by this line and
 * closed by a line "-->", holding a transcript whose output the prose
 * above it must quote. */
static bool is_prose_open(const char *s) { return !strcmp(s, "<!-- doc-test: prose"); }
static bool is_prose_close(const char *s) { return !strcmp(s, "-->"); }

static void doc_read(doc *d, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("%s: cannot open", path);
    d->path = path;
    d->n = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int fence = -1; /* the indent of the open fence or prose check, -1 outside one */
    bool prose = false;
    while ((len = getline(&line, &cap, f)) >= 0) {
        if (d->n == MAX_LINES) fail_msg("%s: more than %d lines", path, MAX_LINES);
        if (len > 0 && line[len - 1] == '\n') line[len - 1] = 0;
        int sp = (int)strspn(line, " "), cut = 0;
        bool opens = fence < 0 && (!strncmp(line + sp, "```", 3) || is_prose_open(line + sp));
        bool closes = fence >= 0 && (prose ? is_prose_close(line + sp) : !strncmp(line + sp, "```", 3));
        int base = opens ? sp : fence; /* the block's indent: its lines are read as if it had none */
        if (base > 0) cut = sp < base ? sp : base;
        if (opens) fence = sp, prose = is_prose_open(line + sp);
        else if (closes) fence = -1;
        d->indent[d->n] = cut;
        d->lines[d->n++] = strdup(line + cut);
    }
    free(line);
    fclose(f);
}

static void doc_free(doc *d)
{
    for (int i = 0; i < d->n; i++) free(d->lines[i]);
    d->n = 0;
}

static void doc_write(const doc *d)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s.doc-test.tmp", d->path);
    FILE *f = fopen(tmp, "w");
    if (!f) fail_msg("%s: cannot write", tmp);
    for (int i = 0; i < d->n; i++) fprintf(f, "%*s%s\n", d->indent[i], "", d->lines[i]);
    if (fclose(f) || rename(tmp, d->path)) fail_msg("%s: cannot replace", d->path);
}

/* Replace document lines [b, e) with the n lines of repl. */
static void doc_splice(doc *d, int b, int e, char **repl, int n)
{
    if (d->n - (e - b) + n > MAX_LINES) fail_msg("%s: more than %d lines", d->path, MAX_LINES);
    int ind = b > 0 ? d->indent[b - 1] : 0; /* the block's, as its command line has it */
    for (int i = b; i < e; i++) free(d->lines[i]);
    memmove(d->lines + b + n, d->lines + e, (size_t)(d->n - e) * sizeof *d->lines);
    memmove(d->indent + b + n, d->indent + e, (size_t)(d->n - e) * sizeof *d->indent);
    for (int i = 0; i < n; i++) d->lines[b + i] = strdup(repl[i]), d->indent[b + i] = ind;
    d->n += n - (e - b);
}

/* ---- normalisation ----------------------------------------------------- */

/* What may differ between two honest runs of the same command: how long it
 * took, the build's version string, and where its scratch folder is. */
static const struct {
    const char *re, *with;
} norm_rules[] = {
    {" in [0-9]+(\\.[0-9]+)? m?s", " in # s"},
    {"[0-9]+(\\.[0-9]+)? (s|ms) wall", "# s wall"},
    {"[0-9]+(\\.[0-9]+)? s elapsed", "# s elapsed"},
    {"kvsim [0-9a-f]{7}(-dirty)?", "kvsim VERSION"},
    {"\"version\": \"[0-9a-f]{7}(-dirty)?\"", "\"version\": \"VERSION\""},
};
enum { NRULES = sizeof norm_rules / sizeof norm_rules[0] };
static regex_t norm_re[NRULES];

static void norm_init(void)
{
    for (size_t i = 0; i < NRULES; i++)
        if (regcomp(&norm_re[i], norm_rules[i].re, REG_EXTENDED)) fail_msg("bad rule %s", norm_rules[i].re);
}

/* s normalised into out (size n); scratch is the folder's path, or NULL. */
static void norm_line(const char *s, const char *scratch, char *out, size_t n)
{
    char a[8192], b[8192];
    snprintf(a, sizeof a, "%s", s);
    for (size_t i = 0; i < NRULES; i++) {
        regmatch_t m;
        size_t used = 0, at = 0;
        while (at <= strlen(a) && !regexec(&norm_re[i], a + at, 1, &m, at ? REG_NOTBOL : 0) && m.rm_eo > 0) {
            used += (size_t)snprintf(b + used, sizeof b - used, "%.*s%s", (int)m.rm_so, a + at, norm_rules[i].with);
            at += (size_t)m.rm_eo;
            if (used >= sizeof b) break;
        }
        if (used < sizeof b) snprintf(b + used, sizeof b - used, "%s", a + at);
        snprintf(a, sizeof a, "%s", b);
    }
    const char *hit = scratch ? strstr(a, scratch) : NULL;
    if (hit) snprintf(out, n, "%.*s.%s", (int)(hit - a), a, hit + strlen(scratch));
    else snprintf(out, n, "%s", a);
}

/* ---- matching with "..." elisions -------------------------------------- */

/* The n lines normalised, each once (malloc'd; free with free_lines). */
static char **normalised(char *const *lines, int n, const char *scratch)
{
    char **v = malloc((size_t)(n ? n : 1) * sizeof *v), buf[8192];
    for (int i = 0; i < n; i++) {
        norm_line(lines[i], scratch, buf, sizeof buf);
        v[i] = strdup(buf);
    }
    return v;
}

/* Whether normalised output got matches normalised document lines want. */
static bool lines_match(char **want, int nw, char **got, int ng)
{
    if (nw == 0) return ng == 0;
    if (!strcmp(want[0], "...")) {
        for (int k = 0; k <= ng; k++)
            if (lines_match(want + 1, nw - 1, got + k, ng - k)) return true;
        return false;
    }
    return ng > 0 && !strcmp(want[0], got[0]) && lines_match(want + 1, nw - 1, got + 1, ng - 1);
}

/* ---- finding the transcripts ------------------------------------------- */

static bool is_fence(const char *s)
{
    while (*s == ' ') s++;
    return !strncmp(s, "```", 3);
}

static bool starts_cmd(const char *s) { return !strncmp(s, "$ ", 2); }

/* The skip reason of the block whose fence is at line i, or NULL. */
static const char *skip_reason(const doc *d, int i)
{
    static const char mark[] = "<!-- doc-test: skip: ";
    int j = i - 1;
    while (j >= 0 && !d->lines[j][0]) j--;
    const char *l = j >= 0 ? d->lines[j] + strspn(d->lines[j], " ") : ""; /* a list item's is indented */
    if (strncmp(l, mark, sizeof mark - 1)) return NULL;
    return l + sizeof mark - 1;
}

/* Whether the shell text ends inside a quoted string (so the command goes
 * on at the next line, as an SQL query across lines does). */
static bool open_quote(const char *t)
{
    char q = 0;
    for (; *t; t++) {
        if (q != '\'' && *t == '\\' && t[1]) t++;
        else if (!q && (*t == '\'' || *t == '"')) q = *t;
        else if (q && *t == q) q = 0;
    }
    return q != 0;
}

/* A command that ends in a here-document (`<<'EOF'`, `<<EOF`, `<<-EOF`)
 * takes the lines after line i up to the terminator too; returns the last
 * line of the command. */
static int heredoc_lines(const doc *d, int i, int e, char *text, size_t cap, size_t *used)
{
    const char *h = strstr(text, "<<");
    if (!h) return i;
    h += 2;
    if (*h == '-') h++;
    if (*h == '\'' || *h == '"') h++;
    char word[64];
    size_t k = 0;
    while (k < sizeof word - 1 && (isalnum((unsigned char)h[k]) || h[k] == '_')) word[k] = h[k], k++;
    word[k] = 0;
    if (!k) return i;
    while (i + 1 < e) {
        const char *line = d->lines[++i];
        *used += (size_t)snprintf(text + *used, cap - *used, "%s\n", line);
        if (!strcmp(line, word)) break;
    }
    return i;
}

/* Append the commands of the transcript block whose first line is b (the
 * fence's next line) and whose closing fence is at e. */
static int block_cmds(const doc *d, int b, int e, const char *skip, cmd *out, int max, int n)
{
    for (int i = b; i < e;) {
        if (n == max) fail_msg("%s: more than %d commands", d->path, max);
        cmd *c = &out[n++];
        memset(c, 0, sizeof *c);
        c->line = i + 1;
        c->skip = skip != NULL;
        const char *end = skip ? strstr(skip, " -->") : NULL;
        if (skip) snprintf(c->reason, sizeof c->reason, "%.*s", end ? (int)(end - skip) : (int)strlen(skip), skip);
        size_t used = 0;
        const char *s = d->lines[i] + 2;
        for (;;) {
            used += (size_t)snprintf(c->text + used, sizeof c->text - used, "%s\n", s);
            size_t len = strlen(s);
            if (i + 1 >= e || ((len == 0 || s[len - 1] != '\\') && !open_quote(c->text))) break;
            s = d->lines[++i];
        }
        i = heredoc_lines(d, i, e, c->text, sizeof c->text, &used);
        c->out_begin = ++i;
        while (i < e && !starts_cmd(d->lines[i])) i++;
        c->out_end = i;
    }
    return n;
}

/* The line closing the block opened at line i (a fence or a prose check),
 * or d->n when it is never closed. */
static int block_end(const doc *d, int i)
{
    bool prose = is_prose_open(d->lines[i]);
    int e = i + 1;
    while (e < d->n && !(prose ? is_prose_close(d->lines[e]) : is_fence(d->lines[e]))) e++;
    return e;
}

static int find_cmds(const doc *d, cmd *out, int max)
{
    int n = 0;
    for (int i = 0; i < d->n; i++) {
        if (!is_fence(d->lines[i]) && !is_prose_open(d->lines[i])) continue;
        int e = block_end(d, i);
        if (e < d->n && e > i + 1 && starts_cmd(d->lines[i + 1]))
            n = block_cmds(d, i + 1, e, is_fence(d->lines[i]) ? skip_reason(d, i) : NULL, out, max, n);
        i = e;
    }
    return n;
}

/* The prose a check at line i stands under: the lines above it back to the
 * nearest heading or block, at most 40, each without its indent, joined by
 * spaces into buf. */
static void prose_above(const doc *d, int i, char *buf, size_t n)
{
    int b = i;
    while (b > 0 && i - b < 40 && d->lines[b - 1][0] != '#' && !is_fence(d->lines[b - 1]) &&
           !is_prose_close(d->lines[b - 1]))
        b--;
    size_t used = 0;
    buf[0] = 0;
    for (int k = b; k < i && used < n; k++) {
        const char *l = d->lines[k];
        while (*l == ' ') l++; /* a list item's continuation lines are indented */
        used += (size_t)snprintf(buf + used, n - used, "%s ", l);
    }
}

/* The first output line of a prose check that the prose above it does not
 * quote (its line, 1-based, in *line), or NULL: the check keeps a number
 * in a sentence as honest as a transcript keeps its own. */
static const char *uncited(const doc *d, int *line)
{
    static char prose[65536];
    for (int i = 0; i < d->n; i++) {
        if (is_fence(d->lines[i])) i = block_end(d, i); /* a page showing the syntax */
        if (i >= d->n || !is_prose_open(d->lines[i])) continue;
        int e = block_end(d, i);
        prose_above(d, i, prose, sizeof prose);
        for (int k = i + 1; k < e; k++) {
            const char *l = d->lines[k];
            if (starts_cmd(l) || !l[0] || !strcmp(l, "...") || strstr(prose, l)) continue;
            *line = k + 1;
            return l;
        }
        i = e;
    }
    return NULL;
}

/* ---- the scratch folder and running a command -------------------------- */

/* What `git ls-files` prints, a path a line, read once; NULL outside a
 * git checkout (an unpacked tarball) or in an empty one. */
static const char *tracked_files(void)
{
    static char *list;
    static bool asked;
    if (!asked) {
        asked = true;
        FILE *p = popen("git ls-files 2>/dev/null", "r");
        list = p ? tu_slurp(p) : NULL;
        if (p && pclose(p) != 0) free(list), list = NULL;
        if (list && !list[0]) free(list), list = NULL;
    }
    return list;
}

/* Whether a top-level entry is the project's: in a git checkout, the
 * entries git tracks (so a results DB or trace a tutorial left in the
 * clone's root is not seen by the transcripts, which would find their runs
 * "already recorded"); outside one (an unpacked tarball), every entry. */
static bool project_entry(const char *name)
{
    const char *tracked = tracked_files();
    if (!tracked) return true;
    size_t len = strlen(name);
    for (const char *at = tracked; (at = strstr(at, name)) != NULL; at += len)
        if ((at == tracked || at[-1] == '\n') && (at[len] == '\n' || at[len] == '/' || at[len] == '\0')) return true;
    return false;
}

/* The interpreter `python3` on PATH runs, when that python3 is a script: a
 * version manager's shim (pyenv's runs `pyenv exec`, a bash script that
 * resolves the version on every start: about 0.3 s of CPU a start on a
 * 2-core virtual machine, against 0.07 s for the interpreter it finds).
 * Asked once, of the shim itself (sys.executable); "" when python3 is a
 * binary already, or missing. */
static const char *python_behind_shim(void)
{
    static char exe[PATH_MAX];
    static bool asked;
    if (asked) return exe;
    asked = true;
    char head[3] = "";
    FILE *p = popen("f=$(command -v python3) && head -c 2 \"$f\"", "r");
    if (!p) return exe;
    size_t n = fread(head, 1, 2, p);
    pclose(p);
    if (n != 2 || memcmp(head, "#!", 2) != 0) return exe;
    p = popen("python3 -c 'import sys; print(sys.executable)' 2>/dev/null", "r");
    if (p && fgets(exe, sizeof exe, p)) exe[strcspn(exe, "\n")] = 0;
    if (p) pclose(p);
    if (exe[0] != '/' || strchr(exe, '\'') || access(exe, X_OK) != 0) exe[0] = 0;
    return exe;
}

/* build/python3 in the scratch folder: a two-line sh script that starts
 * the interpreter behind the shim directly (docs/doc-test.md, "Where
 * commands run"). A script, not a link, so that a virtual environment's
 * interpreter still finds its pyvenv.cfg beside its own path. */
static void scratch_python(const char *dir)
{
    const char *exe = python_behind_shim();
    if (!exe[0]) return;
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/build/python3", dir);
    FILE *f = fopen(path, "w");
    if (!f) fail_msg("%s: cannot write", path);
    fprintf(f, "#!/bin/sh\nexec '%s' \"$@\"\n", exe); /* python_behind_shim: no quote in it */
    fclose(f);
    chmod(path, 0755);
}

/* A fresh folder where every top-level entry of the repository is a link,
 * except build/, which holds links to the optimized binaries only (and
 * python3, scratch_python), and what the project does not track
 * (project_entry). */
static void scratch_make(char *dir, size_t n)
{
    char root[PATH_MAX], bin[PATH_MAX], link[PATH_MAX * 2], target[PATH_MAX * 2];
    if (!getcwd(root, sizeof root)) fail_msg("getcwd failed");
    const char *doc_bin = getenv("KVSIM_DOC_BIN") ? getenv("KVSIM_DOC_BIN") : "build/kvsim";
    if (!realpath(doc_bin, bin)) fail_msg("%s: not built (make build/kvsim)", doc_bin);
    snprintf(dir, n, "%s/kvsim-doc-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) fail_msg("%s: mkdtemp failed", dir);
    DIR *top = opendir(".");
    for (struct dirent *e; (e = readdir(top)) != NULL;) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "build") || !project_entry(e->d_name)) continue;
        snprintf(target, sizeof target, "%s/%s", root, e->d_name);
        snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
        if (symlink(target, link)) fail_msg("%s: symlink failed", link);
    }
    closedir(top);
    snprintf(link, sizeof link, "%s/build", dir);
    mkdir(link, 0755);
    snprintf(link, sizeof link, "%s/build/kvsim", dir);
    if (symlink(bin, link)) fail_msg("%s: symlink failed", link);
    if (realpath("build/kvsim-probe", bin)) {
        snprintf(link, sizeof link, "%s/build/kvsim-probe", dir);
        if (symlink(bin, link)) fail_msg("%s: symlink failed", link);
    }
    scratch_python(dir);
}

static void scratch_remove(const char *dir)
{
    char cmdline[PATH_MAX + 16];
    snprintf(cmdline, sizeof cmdline, "rm -rf '%s'", dir); /* mkdtemp's name: no quote in it */
    if (system(cmdline) != 0) print_message("could not remove %s\n", dir);
}

/* The first of the tools a command needs that is not installed, or NULL;
 * each tool is looked up once. */
static const char *missing_tool(const char *text)
{
    static const char *const tools[] = {"sqlite3", "jq", "gnuplot", "python3"};
    static int installed[sizeof tools / sizeof *tools]; /* 0 unknown, 1 yes, 2 no */
    for (size_t i = 0; i < sizeof tools / sizeof *tools; i++) {
        if (!strstr(text, tools[i])) continue;
        if (!installed[i]) {
            char probe[64];
            snprintf(probe, sizeof probe, "command -v %s >/dev/null 2>&1", tools[i]);
            installed[i] = system(probe) == 0 ? 1 : 2;
        }
        if (installed[i] == 2) return tools[i];
    }
    return NULL;
}

/* Run text with bash in dir, stdout and stderr merged; its output lines
 * into *lines (caller frees each and the array). */
static int run_cmd(const char *dir, const char *text, char ***lines)
{
    char script[PATH_MAX + 32], cmdline[PATH_MAX * 2];
    snprintf(script, sizeof script, "%s/.doc-test-cmd.sh", dir);
    FILE *f = fopen(script, "w");
    if (!f) fail_msg("%s: cannot write", script);
    fprintf(f, "%s", text);
    fclose(f);
    snprintf(cmdline, sizeof cmdline,
             "cd '%s' && PATH=\"$PWD/build:$PATH\" LC_ALL=C.UTF-8 TZ=UTC COLUMNS=100 timeout 300 bash .doc-test-cmd.sh "
             "2>&1 </dev/null",
             dir);
    FILE *p = popen(cmdline, "r");
    int n = 0, cap = 64;
    char **out = malloc((size_t)cap * sizeof *out), *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    while ((len = getline(&line, &lcap, p)) >= 0) {
        if (len > 0 && line[len - 1] == '\n') line[len - 1] = 0;
        if (n == cap) out = realloc(out, (size_t)(cap *= 2) * sizeof *out);
        out[n++] = strdup(line);
    }
    free(line);
    pclose(p);
    *lines = out;
    return n;
}

/* Seconds on the monotonic clock since *t0. */
static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0->tv_nsec);
}

/* CPU seconds (user and system) of the children waited for so far: what a
 * page's commands cost, whatever else the machine runs. */
static double children_cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_CHILDREN, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

/* ---- checking and updating a document ---------------------------------- */

/* Say where a command's output first differs from the document (both
 * sides normalised). */
static void report_diff(const doc *d, const cmd *c, char **want, int nw, char **got, int ng)
{
    int k = 0;
    while (k < nw && k < ng && strcmp(want[k], "...") && !strcmp(want[k], got[k])) k++;
    print_message("%s:%d: the output of `%.*s` differs from the document at its line %d:\n  document: %s\n"
                  "  printed:  %s\n",
                  d->path, c->line, (int)strcspn(c->text, "\n"), c->text, c->out_begin + k + 1,
                  k < nw ? want[k] : "(end of output)", k < ng ? got[k] : "(end of output)");
}

/* The lines the document should show for output got: all of it, or the
 * head and tail an elision keeps. Returns the count; *out is malloc'd. */
static int updated_lines(const doc *d, const cmd *c, char **got, int ng, const char *scratch, char ***out)
{
    int nw = c->out_end - c->out_begin, head = nw, tail = 0;
    for (int k = 0; k < nw; k++)
        if (!strcmp(d->lines[c->out_begin + k], "...")) {
            if (head == nw) head = k;
            tail = nw - k - 1;
        }
    bool elide = head < nw && head + tail < ng;
    int n = elide ? head + 1 + tail : ng;
    char **v = malloc((size_t)(n ? n : 1) * sizeof *v), buf[8192];
    for (int k = 0; k < n; k++) {
        const char *src = !elide || k < head ? got[k] : k == head ? "..." : got[ng - (n - k)];
        const char *hit = strstr(src, scratch);
        if (hit) snprintf(buf, sizeof buf, "%.*s.%s", (int)(hit - src), src, hit + strlen(scratch));
        else snprintf(buf, sizeof buf, "%s", src);
        v[k] = strdup(buf);
    }
    *out = v;
    return n;
}

static void free_lines(char **v, int n)
{
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* Run one command; on a mismatch report it and, when updating, rewrite its
 * output in the document. Returns 1 for a mismatch. */
static int check_cmd(doc *d, cmd *c, const char *scratch, bool update)
{
    const char *tool = missing_tool(c->text);
    if (c->skip || tool) {
        print_message("skip: %s:%d: %s\n", d->path, c->line, c->skip ? c->reason : tool);
        if (tool) print_message("  (%s is not installed)\n", tool);
        return 0;
    }
    char **got;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int ng = run_cmd(scratch, c->text, &got);
    double secs = seconds_since(&t0);
    if (secs > 2) print_message("slow: %s:%d: %.1f s\n", d->path, c->line, secs);
    int nw = c->out_end - c->out_begin;
    char **want_n = normalised(d->lines + c->out_begin, nw, NULL), **got_n = normalised(got, ng, scratch);
    int bad = !lines_match(want_n, nw, got_n, ng);
    if (bad) report_diff(d, c, want_n, nw, got_n, ng);
    free_lines(want_n, nw);
    free_lines(got_n, ng);
    if (bad && update) {
        char **v;
        int n = updated_lines(d, c, got, ng, scratch, &v);
        doc_splice(d, c->out_begin, c->out_end, v, n);
        free_lines(v, n);
    }
    free_lines(got, ng);
    return bad;
}

/* Check every transcript of the document at path (in its own scratch
 * folder); returns the number of commands whose output differed. */
/* The first line (1-based) of d that shows a command no one runs: a "$ "
 * line outside every fenced block, or a fence left open; 0 when none. A
 * lost fence once hid traces/README.md's error example and the transcript
 * after it from this suite. */
static int stray_line(const doc *d)
{
    for (int i = 0; i < d->n; i++) {
        if (is_fence(d->lines[i]) || is_prose_open(d->lines[i])) {
            int e = block_end(d, i);
            if (e == d->n) return i + 1;
            i = e;
        } else if (starts_cmd(d->lines[i])) return i + 1;
    }
    return 0;
}

/* The first file git tracks whose modification time is at or after t0
 * (NULL: none, or not a git checkout). A transcript that writes through the
 * scratch folder's links (`-o traces/x`) writes into the repository: an
 * output that happened to be the same bytes went unseen (traces/README.md
 * once regenerated traces/default.jsonl in place, docs/calibration.md the
 * shipped calibration). */
static const char *tracked_written_since(const struct timespec *t0)
{
    static char name[PATH_MAX];
    for (const char *at = tracked_files(); at && *at;) {
        size_t len = strcspn(at, "\n");
        struct stat st;
        snprintf(name, sizeof name, "%.*s", (int)len, at);
        if (!lstat(name, &st) &&
            (st.st_mtim.tv_sec > t0->tv_sec || (st.st_mtim.tv_sec == t0->tv_sec && st.st_mtim.tv_nsec >= t0->tv_nsec)))
            return name;
        at += len + (at[len] == '\n');
    }
    return NULL;
}

static int check_doc(const char *path, bool update)
{
    static doc d;
    static cmd cmds[1024];
    doc_read(&d, path);
    int stray = stray_line(&d);
    if (stray)
        fail_msg("%s:%d: a command outside a closed ``` block is never run: fence it with its output", path, stray);
    char scratch[PATH_MAX];
    struct timespec t0;
    clock_gettime(CLOCK_REALTIME, &t0);
    scratch_make(scratch, sizeof scratch);
    int n = find_cmds(&d, cmds, 1024), bad = 0;
    /* Commands run in order; a rewrite shifts the lines after it, so the
     * later commands' positions move by the same amount. */
    for (int i = 0; i < n; i++) {
        int before = d.n;
        bad += check_cmd(&d, &cmds[i], scratch, update);
        for (int j = i + 1; j < n; j++) {
            cmds[j].line += d.n - before;
            cmds[j].out_begin += d.n - before;
            cmds[j].out_end += d.n - before;
        }
    }
    if (bad && update) doc_write(&d);
    scratch_remove(scratch);
    const char *wrote = update ? NULL : tracked_written_since(&t0);
    if (wrote)
        fail_msg("%s: %s, which git tracks, was written while this page's commands ran: a command writes through the "
                 "scratch folder's links into the repository (write into the scratch folder itself), or another "
                 "test running beside it does",
                 path, wrote);
    int line = 0;
    const char *missing = bad ? NULL : uncited(&d, &line);
    if (missing)
        fail_msg("%s:%d: the prose above this check does not quote '%s', which its command prints now: update the "
                 "prose",
                 path, line, missing);
    doc_free(&d);
    return bad;
}

/* ---- the tests --------------------------------------------------------- */

static bool updating(void)
{
    const char *u = getenv("KVSIM_DOC_UPDATE");
    return u && strcmp(u, "0");
}

static void test_document(void **state)
{
    const char *path = *state;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double cpu0 = children_cpu_s();
    int bad = check_doc(path, updating());
    /* The page's CPU seconds are what the shard table (doc_cost) records. */
    print_message("page: %s %.1f s CPU, %.1f s wall\n", path, children_cpu_s() - cpu0, seconds_since(&t0));
    if (bad && updating()) print_message("%s: %d transcript(s) rewritten\n", path, bad);
    else if (bad)
        fail_msg("%s: %d transcript(s) differ from what the commands print now: regenerate with "
                 "`make doc-update` and review the diff",
                 path, bad);
}

/* The checker itself: a transcript whose number was edited fails, the true
 * one passes, an elision matches any lines, and update restores it. */
static void test_edited_number_fails(void **state)
{
    (void)state;
    const char *truth = "```\n$ printf 'requests 12031\\nblocks 7\\nend\\n'\nrequests 12031\n...\nend\n```\n";
    const char *edited = "```\n$ printf 'requests 12031\\nblocks 7\\nend\\n'\nrequests 12032\n...\nend\n```\n";
    char *ok = tu_write_temp(truth), *bad = tu_write_temp(edited);
    assert_int_equal(check_doc(ok, false), 0);
    assert_int_equal(check_doc(bad, false), 1);
    assert_int_equal(check_doc(bad, true), 1);
    assert_int_equal(check_doc(bad, false), 0);
    doc d;
    doc_read(&d, bad);
    assert_string_equal(d.lines[2], "requests 12031");
    assert_string_equal(d.lines[3], "...");
    doc_free(&d);
    tu_remove_temp(ok);
    tu_remove_temp(bad);
}

/* A transcript fenced inside a list item (indented) runs like any other,
 * and update rewrites its output at the block's indent (it once was shown
 * and never run). */
static void test_indented_transcript_runs(void **state)
{
    (void)state;
    char *bad = tu_write_temp("- item:\n\n  ```\n  $ echo 42\n  41\n  ```\n");
    assert_int_equal(check_doc(bad, false), 1);
    assert_int_equal(check_doc(bad, true), 1);
    assert_int_equal(check_doc(bad, false), 0);
    FILE *f = fopen(bad, "r");
    char text[256] = "";
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    assert_string_equal(text, "- item:\n\n  ```\n  $ echo 42\n  42\n  ```\n");
    tu_remove_temp(bad);
    /* a prose check in a list item, indented with it */
    char *good = tu_write_temp("- The mean is 42 ms.\n  <!-- doc-test: prose\n  $ echo 42\n  42\n  -->\n");
    char *stale = tu_write_temp("- The mean is 41 ms.\n  <!-- doc-test: prose\n  $ echo 42\n  42\n  -->\n");
    doc d;
    int line = 0;
    assert_int_equal(check_doc(good, false), 0);
    doc_read(&d, stale);
    assert_string_equal(uncited(&d, &line), "42");
    doc_free(&d);
    tu_remove_temp(good);
    tu_remove_temp(stale);
}

/* A "$ " line outside a fence, or a fence left open, fails the page
 * (stray_line); fenced, the same command is a transcript. */
static void test_stray_command_fails(void **state)
{
    (void)state;
    doc d;
    char *outside = tu_write_temp("text\n$ echo hi\n```\n$ echo hi\nhi\n```\n");
    char *unclosed = tu_write_temp("text\n```\n$ echo hi\nhi\n");
    char *fine = tu_write_temp("text $ 5\n```\n$ echo hi\nhi\n```\n");
    doc_read(&d, outside);
    assert_int_equal(stray_line(&d), 2);
    doc_free(&d);
    doc_read(&d, unclosed);
    assert_int_equal(stray_line(&d), 2);
    doc_free(&d);
    doc_read(&d, fine);
    assert_int_equal(stray_line(&d), 0);
    doc_free(&d);
    tu_remove_temp(outside);
    tu_remove_temp(unclosed);
    tu_remove_temp(fine);
}

/* A prose check: its transcript runs like any other, and the prose above
 * must quote what it prints. A stale check fails as a transcript does; once
 * `make doc-update` has rewritten it, the prose still quoting the old
 * number fails (uncited) until it is updated too. */
static void test_prose_check(void **state)
{
    (void)state;
    doc d;
    int line = 0;
    char *good = tu_write_temp("# T\nThe mean is 42 ms.\n<!-- doc-test: prose\n$ echo 42\n42\n-->\n");
    char *stale = tu_write_temp("# T\nThe mean is 41 ms.\n<!-- doc-test: prose\n$ echo 42\n41\n-->\n");
    assert_int_equal(check_doc(good, false), 0);
    doc_read(&d, good);
    assert_int_equal(stray_line(&d), 0);
    assert_null(uncited(&d, &line));
    doc_free(&d);
    assert_int_equal(check_doc(stale, false), 1);
    assert_int_equal(check_doc(stale, true), 1);
    doc_read(&d, stale);
    assert_string_equal(uncited(&d, &line), "42");
    assert_int_equal(line, 5);
    doc_free(&d);
    tu_remove_temp(good);
    tu_remove_temp(stale);
}

/* docs/kvsim.1 is what mk/man.sh writes from the --help texts now. */
static void test_man_page_is_the_help(void **state)
{
    (void)state;
    char cmdline[PATH_MAX];
    snprintf(cmdline, sizeof cmdline, "KVSIM='%s' mk/man.sh", tu_kvsim_bin());
    cli_result r = tu_shell(cmdline);
    assert_int_equal(r.status, 0);
    FILE *f = fopen("docs/kvsim.1", "r");
    assert_non_null(f);
    char *page = tu_slurp(f);
    fclose(f);
    if (strcmp(page, r.out)) fail_msg("docs/kvsim.1 differs from the --help texts: run `make man`");
    free(page);
    tu_free(&r);
}

/* The text between the markers `<!-- fidelity:begin` and `<!-- fidelity:end`
 * of the document at path (malloc'd), or NULL. */
static char *between_markers(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *all = tu_slurp(f);
    fclose(f);
    char *b = strstr(all, "\n<!-- fidelity:begin"), *e = b ? strstr(b, "\n<!-- fidelity:end") : NULL;
    char *out = NULL;
    if (b && e && (b = strchr(b + 1, '\n')) != NULL && b < e) out = strndup(b + 1, (size_t)(e - b));
    free(all);
    return out;
}

/* docs/fidelity.md's claim table is what reports/fidelity.sh writes now
 * (run in a scratch folder, as the transcripts are). */
static void test_fidelity_table_is_current(void **state)
{
    (void)state;
    if (system("command -v sqlite3 >/dev/null 2>&1") != 0) {
        print_message("skip: reports/fidelity.sh needs the sqlite3 shell (apt-get install sqlite3)\n");
        skip();
    }
    char scratch[PATH_MAX], cmdline[PATH_MAX * 2], made[PATH_MAX + 32];
    scratch_make(scratch, sizeof scratch);
    snprintf(cmdline, sizeof cmdline,
             "cd '%s' && bash reports/fidelity.sh --out build/fidelity --jobs 2 >build/fidelity.log 2>&1", scratch);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double cpu0 = children_cpu_s();
    int rc = system(cmdline);
    print_message("page: fidelity_table %.1f s CPU, %.1f s wall\n", children_cpu_s() - cpu0, seconds_since(&t0));
    snprintf(made, sizeof made, "%s/build/fidelity/fidelity.md", scratch);
    FILE *f = fopen(made, "r");
    char *now = f ? tu_slurp(f) : NULL, *table = between_markers("docs/fidelity.md");
    if (f) fclose(f);
    bool same = rc == 0 && now && table && !strcmp(now, table);
    if (!same) print_message("reports/fidelity.sh exit %d; see %s/build/fidelity.log\n", rc, scratch);
    else scratch_remove(scratch);
    free(now);
    free(table);
    if (!same)
        fail_msg("docs/fidelity.md's claim table differs from what reports/fidelity.sh writes now: run "
                 "`reports/fidelity.sh --readme` and review the diff");
}

/* README.md, CONTRIBUTING.md, the docs/ pages and the data folders' READMEs. */
static int doc_paths(char **out, int max)
{
    static const char *const fixed[] = {"README.md",
                                        "CONTRIBUTING.md",
                                        "traces/README.md",
                                        "traces/mooncake/README.md",
                                        "traces/ragpulse-sample/README.md",
                                        "validation/README.md"};
    int n = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        if (access(fixed[i], R_OK) == 0) out[n++] = strdup(fixed[i]);
    struct dirent **ents;
    int k = scandir("docs", &ents, NULL, alphasort);
    for (int i = 0; i < k; i++) {
        size_t len = strlen(ents[i]->d_name);
        if (n < max && len > 3 && !strcmp(ents[i]->d_name + len - 3, ".md")) {
            char p[PATH_MAX];
            snprintf(p, sizeof p, "docs/%s", ents[i]->d_name);
            out[n++] = strdup(p);
        }
        free(ents[i]);
    }
    if (k >= 0) free(ents);
    return n;
}

/* A page's commands (lines starting "$ "). */
static int page_commands(const char *path)
{
    FILE *f = fopen(path, "r");
    char *text = f ? tu_slurp(f) : NULL;
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, "\n$ ")) != NULL; p += 3) n++;
    if (f) fclose(f);
    free(text);
    return n;
}

/* What each page's transcripts cost, in CPU seconds (user and system, of
 * the commands the page runs): the `page:` lines this binary prints, from
 * one run of both shards at once on the 2-core machine (`make test`,
 * 2026-12-01, re-recorded when the machine ran every page 1.4 to 1.7 times
 * slower than in the run before, and not in the same ratio).
 * CPU time moves less than wall time with what else the machine runs.
 * Pages under a second are left out; a page not listed weighs
 * PER_COMMAND_S a command. Re-record a page's line when its commands
 * change much. */
static const struct {
    const char *path;
    double s;
} doc_cost[] = {
    {"docs/planning.md", 41.1},
    {"docs/hardware.md", 39.0},
    {"docs/compare.md", 22.1},
    {"docs/overload.md", 21.6},
    {"docs/fidelity-measured.md", 21.6},
    {"docs/validation.md", 19.5},
    {"README.md", 19.0},
    {"docs/planning-confirm.md", 17.9},
    {"docs/measured.md", 15.5},
    {"docs/fidelity-gaps.md", 13.1},
    {"docs/reports.md", 4.8},
    {"docs/lmcache.md", 4.5},
    {"docs/pic.md", 2.4},
    {"docs/planning-tiers.md", 2.2},
    {"docs/models.md", 2.0},
    {"docs/hitrate-ladder.md", 1.7},
    {"docs/pic-mepic.md", 1.6},
    {"docs/store.md", 1.5},
    {"docs/reliability.md", 1.5},
    {"docs/conductor.md", 1.3},
    {"docs/paper-figures.md", 1.2},
};
#define PER_COMMAND_S  0.1
/* Shard 0 also runs fidelity_table (reports/fidelity.sh, its CPU seconds
 * in the same run) and the man page check: counted as shard 0's load from
 * the start. */
#define SHARD0_FIXED_S 22.5

static double page_cost(const char *path)
{
    for (size_t i = 0; i < sizeof doc_cost / sizeof *doc_cost; i++)
        if (!strcmp(doc_cost[i].path, path)) return doc_cost[i].s;
    return PER_COMMAND_S * page_commands(path);
}

/* Sharding (`make test` runs two shards at once: this binary with
 * KVSIM_DOC_SHARD=0/2 and test_docs_b, built with KVSIM_DOC_SECOND, as
 * shard 1/2). The rule: greedy longest-first by recorded CPU cost — the
 * pages go, costliest first (ties in path order), each to the shard with
 * the least recorded seconds so far, shard 0 starting with SHARD0_FIXED_S —
 * so both binaries compute the same split and end at about the same time.
 * Without KVSIM_DOC_SHARD every page is run. */
static void shard_split(char **paths, int np, int n, int *shard_of_page, double *load)
{
    double w[64];
    for (int j = 0; j < n; j++) load[j] = j ? 0 : SHARD0_FIXED_S;
    for (int i = 0; i < np; i++) w[i] = page_cost(paths[i]), shard_of_page[i] = -1;
    for (int done = 0; done < np; done++) {
        int best = -1, lightest = 0;
        for (int i = 0; i < np; i++)
            if (shard_of_page[i] < 0 && (best < 0 || w[i] > w[best])) best = i;
        for (int j = 1; j < n; j++)
            if (load[j] < load[lightest]) lightest = j;
        shard_of_page[best] = lightest, load[lightest] += w[best];
    }
}

static void shard_of(char **paths, int np, int *shard_of_page, int *mine)
{
    const char *s = getenv("KVSIM_DOC_SHARD");
    int k = 0, n = 1;
    double load[16];
    if (s && (sscanf(s, "%d/%d", &k, &n) != 2 || n < 1 || n > 16 || k < 0 || k >= n)) k = 0, n = 1;
#ifdef KVSIM_DOC_SECOND
    k = (k + 1) % n;
#endif
    *mine = k;
    shard_split(paths, np, n, shard_of_page, load);
}

static char *all_paths[64];
static int all_np;

/* The split of the pages into two shards: every page in exactly one, and
 * the shards' recorded seconds differ by at most the costliest page's (what
 * longest-first greedy guarantees), worked here on the recorded table. */
static void test_shards_balanced(void **state)
{
    (void)state;
    int shard[64], seen[2] = {0};
    double load[2], total = SHARD0_FIXED_S, most = 0;
    shard_split(all_paths, all_np, 2, shard, load);
    for (int i = 0; i < all_np; i++) {
        assert_in_range(shard[i], 0, 1);
        seen[shard[i]]++;
        double c = page_cost(all_paths[i]);
        total += c;
        if (c > most) most = c;
    }
    assert_int_equal(seen[0] + seen[1], all_np);
    assert_double_equal(load[0] + load[1], total, 1e-9);
    print_message("doc shards: %.1f s and %.1f s recorded (%d and %d pages)\n", load[0], load[1], seen[0], seen[1]);
    assert_true(fabs(load[0] - load[1]) <= most + 1e-9);
}

int main(void)
{
    norm_init();
    char **paths = all_paths;
    static struct CMUnitTest tests[72];
    const char *only = getenv("KVSIM_DOC_ONLY"); /* one document, e.g. docs/trace.md */
    int n = 0, np = all_np = doc_paths(paths, 64), shard[64], mine;
    shard_of(paths, np, shard, &mine);
    if (mine == 0) {
        tests[n++] = (struct CMUnitTest){"edited_number_fails", test_edited_number_fails, NULL, NULL, NULL};
        tests[n++] = (struct CMUnitTest){"stray_command_fails", test_stray_command_fails, NULL, NULL, NULL};
        tests[n++] = (struct CMUnitTest){"indented_transcript_runs", test_indented_transcript_runs, NULL, NULL, NULL};
        tests[n++] = (struct CMUnitTest){"prose_check", test_prose_check, NULL, NULL, NULL};
        tests[n++] = (struct CMUnitTest){"man_page_is_the_help", test_man_page_is_the_help, NULL, NULL, NULL};
        tests[n++] = (struct CMUnitTest){"shards_balanced", test_shards_balanced, NULL, NULL, NULL};
        if (!only) tests[n++] = (struct CMUnitTest){"fidelity_table", test_fidelity_table_is_current, NULL, NULL, NULL};
    }
    for (int i = 0; i < np; i++)
        if ((!only || !strcmp(only, paths[i])) && shard[i] == mine)
            tests[n++] = (struct CMUnitTest){paths[i], test_document, NULL, NULL, paths[i]};
    return _cmocka_run_group_tests("docs", tests, (size_t)n, NULL, NULL);
}
