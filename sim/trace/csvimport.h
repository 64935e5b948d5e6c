/* sim/trace/csvimport.h — import length-only CSV traces (Azure LLM
 * inference traces, BurstGPT) as Mooncake JSONL, behind
 * `kvsim trace import azure|burstgpt FILE -o OUT` (docs/trace.md).
 *
 * These traces carry arrival times and token counts but no prefix
 * information, so every request gets fresh hash blocks (ids 0, 1, 2, ...
 * in order, ceil(input / block_tokens) each): nothing is shared and the
 * infinite-cache hit rate of the result is 0. The import streams (one row
 * in memory at a time: the 2024 Azure traces have millions of rows).
 *
 * The rule for rows that are not requests (docs/trace.md):
 *   - a row another --model / --log-type selects out is skipped (filtered);
 *   - a row of 0 input tokens is skipped (zero_input: nothing to prefill);
 *   - a row of 0 output tokens is a failed request (BurstGPT logs failures
 *     with 0 response tokens) and is skipped (failed).
 * Each count is reported with its first line. Timestamps are ms from the
 * first written request, exact to the ns the CSV gives (no float parsing);
 * rows must be in time order (the output is written as it is read). */
#ifndef SIM_CSVIMPORT_H
#define SIM_CSVIMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/util.h"

typedef struct sim_csv_import_opts {
    int block_tokens;     /* tokens per fresh hash block; 512 (the trace reader's default) */
    int64_t limit;        /* stop after this many written requests; 0 = all */
    const char *model;    /* burstgpt: keep only rows of this Model; NULL = all */
    const char *log_type; /* burstgpt: keep only rows of this Log Type; NULL = all */
} sim_csv_import_opts;

typedef struct sim_csv_import_stats {
    int64_t rows;     /* data rows read (not the header, not blank lines) */
    int64_t requests; /* written */
    int64_t blocks;   /* hash ids written (= the next fresh id) */
    int64_t filtered, zero_input, failed;
    int64_t zero_input_first_line, failed_first_line; /* 0: none */
    bool limited;                                     /* stopped by limit before the end */
} sim_csv_import_stats;

/* One data row, split: its columns (NUL-terminated, unquoted) and where it
 * is, for messages. */
typedef struct sim_csv_row {
    const char *path;
    int64_t line;
    const char *const *header; /* the format's column names */
    char **col;
    size_t ncol;
} sim_csv_row;

/* What a format's row parser returns. */
typedef struct sim_csv_request {
    int64_t ts_ns; /* on the format's own clock (any origin) */
    int64_t input, output;
} sim_csv_request;

typedef struct sim_csv_format {
    const char *name;
    const char *const *header; /* the exact column names, in order */
    size_t ncol;
    const char *help; /* one line for the usage text */
    bool filters;     /* takes --model / --log-type */
    /* 1: a request in *req; 0: selected out by the options; -1: err set
     * ("FILE:LINE: COLUMN: problem", sim_csv_errf). */
    int (*parse)(const sim_csv_row *row, const sim_csv_import_opts *o, sim_csv_request *req, sim_err *err);
} sim_csv_format;

/* The formats (the one table: sim/trace/csvimport.c). */
size_t sim_csv_format_count(void);
const sim_csv_format *sim_csv_format_at(size_t i);
const sim_csv_format *sim_csv_format_find(const char *name);

sim_csv_import_opts sim_csv_import_default_opts(void);

/* Read path ("-" = stdin; plain or gzip, sim/infile.h) and write Mooncake
 * JSONL to out (named out_name in messages). 0, or -1 with err: a missing
 * or different header, a row of the wrong column count, a bad number or
 * timestamp, a row earlier than the one before, no requests at all, a
 * write error. */
int sim_csv_import(const sim_csv_format *fmt, const char *path, const sim_csv_import_opts *o, FILE *out,
                   const char *out_name, sim_csv_import_stats *st, sim_err *err);

/* For row parsers: "FILE:LINE: COLUMN: problem" for column c; returns -1. */
int sim_csv_errf(const sim_csv_row *row, size_t c, sim_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Column c as a token count: a non-negative decimal integer. */
int sim_csv_count(const sim_csv_row *row, size_t c, int64_t *out, sim_err *err);
/* Parse digits s[0..n) as a fraction of a second, exactly: up to 9 digits → ns. */
int sim_csv_fraction_ns(const char *s, size_t n, int64_t *ns);

extern const sim_csv_format sim_csv_azure, sim_csv_burstgpt;

#endif
