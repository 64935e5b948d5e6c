/* sim/trace/tracegen_mqa.h — the seeded multi-round QA workload behind
 * `kvsim trace gen --workload multiround-qa` (LMCache §7.2): users ask short
 * unique questions about a long document over several rounds, and each
 * round's prompt is the document + the conversation so far + the new
 * question, so the KV of earlier rounds is a reusable prefix.
 *
 * The output is an ordinary Mooncake-format trace (hash_ids + "session"),
 * streamed: memory is the documents and the live users, never the number of
 * requests. The same options and seed give byte-identical output. */
#ifndef SIM_TRACEGEN_MQA_H
#define SIM_TRACEGEN_MQA_H

#include <stdint.h>
#include <stdio.h>

#include "sim/util.h"

typedef struct sim_tracegen_mqa_opts {
    int64_t requests;       /* how many requests to write */
    double rate;            /* Poisson arrivals over all users, requests per second (QPS) */
    int block_tokens;       /* tokens per hash block */
    int documents;          /* D documents; document d's full blocks have fixed ids */
    double doc_tokens;      /* mean document tokens; drawn once per document */
    double doc_sigma;       /* lognormal sigma of document lengths; 0 = every document doc_tokens long */
    double doc_zipf;        /* 0: user s reads document s mod D; > 0: Zipf pick, weight 1/(d+1)^doc_zipf */
    int users;              /* U concurrent users, taking turns round-robin */
    int rounds;             /* R questions per user; then a new user takes the turn */
    double question_tokens; /* mean new-question tokens */
    double question_sigma;  /* lognormal sigma; 0 = fixed */
    double answer_tokens;   /* mean output (answer) tokens */
    double answer_sigma;    /* lognormal sigma; 0 = fixed */
    uint64_t seed;
} sim_tracegen_mqa_opts;

/* LMCache §7.2's CPU-offload workload (see docs/trace.md for each value). */
sim_tracegen_mqa_opts sim_tracegen_mqa_default_opts(void);

/* Check the options; the message names the option (--rounds, --users, ...). */
int sim_tracegen_mqa_check(const sim_tracegen_mqa_opts *o, sim_err *err);

/* Write the trace to `out` (named `out_name` in messages). Returns 0, or -1
 * with err set (bad options, write error); *written = requests written. */
int sim_tracegen_mqa_write(const sim_tracegen_mqa_opts *o, FILE *out, const char *out_name, int64_t *written,
                           sim_err *err);

#endif
