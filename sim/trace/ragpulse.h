/* sim/trace/ragpulse.h — import a RAGPulse trace directory
 * (github.com/flashserve/RAGPulse) as a segment trace (docs/trace.md,
 * docs/pic.md), behind `kvsim trace import ragpulse DIR -o FILE`.
 *
 * DIR holds 0_trace.jsonl (one request a line, not sorted) and the id →
 * token_length tables 1_sys_prompt.jsonl, 2_passages.jsonl, 3_history.jsonl,
 * 4_user_input.jsonl, 5_web_search.jsonl; any of them may be gzip-compressed,
 * as NAME or NAME.gz (read by content, sim/infile.h). Each request becomes, in prompt
 * order: its sys_prompt ids as one prefix segment, each passage as a chunk,
 * each history, web_search and user_input id as a prompt segment with that
 * id, and input_length minus the parts' sum as a final unique prompt segment.
 * Timestamps (seconds, as strings) become ms; requests are stable-sorted by
 * them and session_id strings are numbered 0, 1, 2, … in order of first
 * appearance in the output. The whole trace is held in memory (the public
 * one is 7,106 requests). */
#ifndef SIM_RAGPULSE_H
#define SIM_RAGPULSE_H

#include <stdint.h>
#include <stdio.h>

#include "sim/util.h"

typedef struct sim_ragpulse_stats {
    int64_t requests;   /* requests written */
    int64_t sessions;   /* distinct session_id values */
    int64_t reordered;  /* lines with a timestamp before an earlier line's (the sort moves them) */
    int64_t remainders; /* requests given a final unique prompt segment */
    /* Requests whose parts sum to more than their input_length: the parts
     * are kept and input_length is raised to their sum. */
    int64_t over;
    int64_t over_first_line; /* 0_trace.jsonl line of the first (0: none) */
    int64_t over_max_tokens; /* the largest excess */
    /* Ids whose token_length is 0: left out (a segment has at least 1 token). */
    int64_t empty_parts;
    /* Requests whose sys_prompt blocks before the last are not 512 tokens
     * each (docs/pic.md's prefix block model) but still one per 512 tokens
     * of the prefix: written as they are. Any other count is an error. */
    int64_t irregular_prefix;
    int64_t irregular_prefix_first_line;
} sim_ragpulse_stats;

/* The files of a trace directory: the trace, then the five id tables. */
#define SIM_RAGPULSE_NFILES 6
extern const char *const sim_ragpulse_files[SIM_RAGPULSE_NFILES];

/* Read the trace in `dir` and write the segment trace to `out` (named
 * `out_name` in messages). Returns 0, or -1 with err set: a table file that
 * cannot be opened (named), a malformed line or field or a duplicate id
 * ("FILE:LINE: FIELD: problem"), an id absent from its table or reserved,
 * a bad timestamp, a count outside what the trace reader accepts, a trace
 * of no requests, a write error. Nothing is written unless the whole trace
 * reads, and what is written the trace reader accepts, request for request
 * (tests/fuzz/fuzz_ragpulse.c holds it to that). */
int sim_ragpulse_import(const char *dir, FILE *out, const char *out_name, sim_ragpulse_stats *st, sim_err *err);
/* The same from the six files' paths, paths[i] being sim_ragpulse_files[i]
 * (messages name the paths). */
int sim_ragpulse_import_files(const char *const paths[SIM_RAGPULSE_NFILES], FILE *out, const char *out_name,
                              sim_ragpulse_stats *st, sim_err *err);

#endif
