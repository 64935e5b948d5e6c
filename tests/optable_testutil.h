/* tests/optable_testutil.h — a second reader of the bundled per-operation
 * tables (configs/optables/SYSTEM/NAME.csv.gz), for the tests that check the
 * measured mode against the rows themselves (tests/test_measured.c,
 * tests/test_measured_mla.c): a plain scan of the gzipped CSV with zlib,
 * sharing nothing with sim/cost/optable.c.
 *
 * Header-only (static functions); include after <cmocka.h>. */
#ifndef TESTS_OPTABLE_TESTUTIL_H
#define TESTS_OPTABLE_TESTUTIL_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Does column `col`'s value `val` pass every "col=value" of match
 * (NULL-ended; a match naming another column passes)? */
static bool ot_col_ok(const char *col, const char *val, const char *const *match)
{
    for (int m = 0; match[m]; m++) {
        size_t k = strcspn(match[m], "=");
        if (strlen(col) == k && !strncmp(col, match[m], k) && strcmp(val, match[m] + k + 1)) return false;
    }
    return true;
}

/* The rows of DIR/FILE whose named columns have the given values, in file
 * order, at most max: ys[i] its latency (ms), xs[i] (when xs) the sum of
 * columns xcol and xplus (either may be NULL). Returns the count. */
static int ot_scan(const char *dir, const char *file, const char *const *match, const char *xcol, const char *xplus,
                   double *xs, double *ys, int max)
{
    char path[512], line[1024], head[1024], *cols[64];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    gzFile f = gzopen(path, "rb");
    assert_non_null(f);
    assert_non_null(gzgets(f, head, sizeof head));
    head[strcspn(head, "\r\n")] = 0;
    int ncol = 0, n = 0;
    for (char *p = strtok(head, ","); p && ncol < 64; p = strtok(NULL, ",")) cols[ncol++] = p;
    while (n < max && gzgets(f, line, sizeof line)) {
        line[strcspn(line, "\r\n")] = 0;
        char *vals[64];
        int nv = 0;
        for (char *p = strtok(line, ","); p && nv < 64; p = strtok(NULL, ",")) vals[nv++] = p;
        bool ok = true;
        double x = 0, y = -1;
        for (int c = 0; c < nv && c < ncol; c++) {
            if (!strcmp(cols[c], "latency")) y = atof(vals[c]);
            if ((xcol && !strcmp(cols[c], xcol)) || (xplus && !strcmp(cols[c], xplus))) x += atof(vals[c]);
            ok = ok && ot_col_ok(cols[c], vals[c], match);
        }
        if (ok) {
            if (xs) xs[n] = x;
            ys[n++] = y;
        }
    }
    gzclose(f);
    return n;
}

#endif
