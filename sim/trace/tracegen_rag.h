/* sim/trace/tracegen_rag.h — segment traces (docs/trace.md, docs/pic.md): the
 * line writer shared by every producer of them, and the seeded RAG workload
 * behind `kvsim trace gen --workload rag`.
 *
 * A segment trace line is a Mooncake-style request whose prompt is given as
 * `"segments"` in prompt order instead of `"hash_ids"`:
 *   {"k":"prefix","hash_ids":[…],"len":L}  a chain of up to 512-token blocks
 *   {"k":"chunk","id":N,"len":L}           a reusable passage
 *   {"k":"prompt","id":N|null,"len":L}     request-specific text (null = unique)
 * and input_length is the sum of the lengths.
 *
 * The RAG workload imitates the question-answering traces MEPIC evaluates
 * (SQuAD, NewsQA; MEPIC §4.1): a corpus of passages with Zipf retrieval
 * popularity, k distinct passages per request in random order between a
 * shared system prompt and a unique question. Same options and seed, same
 * bytes; memory is the corpus, never the number of requests. */
#ifndef SIM_TRACEGEN_RAG_H
#define SIM_TRACEGEN_RAG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/trace/trace.h" /* sim_seg_kind */
#include "sim/util.h"

/* ---- writing segment-trace lines ---------------------------------------- */

/* A prompt segment's id when it is null (unique text). */
#define SIM_SEG_NULL_ID INT64_MIN

typedef struct sim_seg_out {
    sim_seg_kind kind;
    int64_t id;              /* chunk, prompt: the id (SIM_SEG_NULL_ID: null); prefix: unused */
    int64_t len;             /* tokens */
    const int64_t *hash_ids; /* prefix: its block ids */
    size_t nhash;
} sim_seg_out;

typedef struct sim_seg_request {
    double timestamp_ms; /* written as an integer when it is one */
    int64_t input_len;   /* the caller makes it the sum of the segments' lengths */
    int64_t output_len;
    int64_t session; /* -1: no "session" field */
    const sim_seg_out *segs;
    size_t nsegs;
} sim_seg_request;

/* One JSONL line: {"timestamp": …, "input_length": …, "output_length": …,
 * ["session": …,] "segments": [ … ]}. Write errors show in ferror(out). */
void sim_segtrace_write(FILE *out, const sim_seg_request *r);

/* ---- the RAG workload ----------------------------------------------------- */

typedef struct sim_tracegen_rag_opts {
    int64_t requests;
    double rate;         /* Poisson arrivals, requests per second */
    int passages;        /* corpus size P; passage ids are 0 .. P−1 by popularity rank */
    int k;               /* distinct passages per request, 1 ≤ k ≤ P */
    double passage_mean; /* passage tokens, lognormal, drawn once per passage */
    double passage_sigma;
    int max_passage;      /* passage lengths are clamped to [1, max_passage] */
    double zipf;          /* retrieval popularity: weight 1/(rank+1)^zipf; 0 = uniform */
    int system_tokens;    /* the shared system prompt, one prefix segment; 0 = none */
    double question_mean; /* the unique question, lognormal, clamped to [1, 32768] */
    double question_sigma;
    double output_mean, output_sigma; /* lognormal */
    int max_output;                   /* output lengths are clamped to [1, max_output] */
    uint64_t seed;
} sim_tracegen_rag_opts;

/* A SQuAD-like workload (see docs/trace.md for the values and their source). */
sim_tracegen_rag_opts sim_tracegen_rag_default_opts(void);

/* Check the options; the message names the option (--k, --passages, ...). */
int sim_tracegen_rag_check(const sim_tracegen_rag_opts *o, sim_err *err);

/* Write the trace to `out` (named `out_name` in messages). Returns 0, or -1
 * with err set (bad options, write error); *written = requests written. */
int sim_tracegen_rag_write(const sim_tracegen_rag_opts *o, FILE *out, const char *out_name, int64_t *written,
                           sim_err *err);

#endif
