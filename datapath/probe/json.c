/* datapath/probe/json.c — a minimal streaming JSON writer (printf-based):
 * the probe must not depend on jansson. Strings are escaped per RFC 8259;
 * numbers use %.9g (non-finite numbers become null). */
#include <math.h>

#include "datapath/probe/probe.h"

void dp_jw_init(dp_jw *w, FILE *f)
{
    w->f = f;
    w->depth = 0;
    w->first[0] = true;
    w->inline_[0] = false;
}

static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p == '\n') fputs("\\n", f);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

/* Separator, indentation and key before a value. */
static void member(dp_jw *w, const char *key)
{
    if (!w->first[w->depth]) fputc(',', w->f);
    if (w->inline_[w->depth]) {
        if (!w->first[w->depth]) fputc(' ', w->f);
    } else if (w->depth > 0) {
        fprintf(w->f, "\n%*s", 2 * w->depth, "");
    }
    w->first[w->depth] = false;
    if (key) {
        put_string(w->f, key);
        fputs(": ", w->f);
    }
}

static void open_container(dp_jw *w, const char *key, char open, bool inline_)
{
    member(w, key);
    fputc(open, w->f);
    w->depth++;
    w->first[w->depth] = true;
    w->inline_[w->depth] = inline_ || w->inline_[w->depth - 1];
}

void dp_jw_obj(dp_jw *w, const char *key, bool inline_) { open_container(w, key, '{', inline_); }
void dp_jw_arr(dp_jw *w, const char *key) { open_container(w, key, '[', false); }

void dp_jw_end(dp_jw *w, char close)
{
    bool empty = w->first[w->depth], inl = w->inline_[w->depth];
    w->depth--;
    if (!empty && !inl) fprintf(w->f, "\n%*s", 2 * w->depth, "");
    fputc(close, w->f);
    if (w->depth == 0) fputc('\n', w->f);
}

void dp_jw_str(dp_jw *w, const char *key, const char *v)
{
    member(w, key);
    put_string(w->f, v);
}

void dp_jw_num(dp_jw *w, const char *key, double v)
{
    member(w, key);
    if (isfinite(v)) fprintf(w->f, "%.9g", v);
    else fputs("null", w->f);
}

void dp_jw_int(dp_jw *w, const char *key, long long v)
{
    member(w, key);
    fprintf(w->f, "%lld", v);
}

void dp_jw_bool(dp_jw *w, const char *key, bool v)
{
    member(w, key);
    fputs(v ? "true" : "false", w->f);
}
