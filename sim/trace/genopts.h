/* sim/trace/genopts.h — the options of `kvsim trace gen`, one table per
 * workload (conversation, rag, multiround-qa, shared-prefix): each flag,
 * where it lands in its generator's options struct, its help line and its
 * default; applying given options, checking and writing the chosen
 * workload's trace. The command (sim/cli/cmd_trace.c) only parses argv
 * through these tables and prints. */
#ifndef SIM_TRACE_GENOPTS_H
#define SIM_TRACE_GENOPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/trace/tracegen.h"
#include "sim/trace/tracegen_mqa.h"
#include "sim/trace/tracegen_rag.h"
#include "sim/trace/tracegen_sp.h"
#include "sim/util.h"

/* SIM_GEN_FLAG: a bool set by the bare flag; SIM_GEN_FN: parsed and printed by
 * functions of its own (gen_fns[offset]), which take the whole options struct. */
typedef enum sim_gen_opt_kind {
    SIM_GEN_I64,
    SIM_GEN_INT,
    SIM_GEN_DOUBLE,
    SIM_GEN_SEED,
    SIM_GEN_PATH,
    SIM_GEN_FLAG,
    SIM_GEN_FN
} sim_gen_opt_kind;

/* Every generator option: its flag, where it lands in its workload's
 * options struct, and its help line (the default printed next to it comes
 * from the defaults). */
typedef struct sim_gen_opt {
    const char *name;
    sim_gen_opt_kind kind;
    size_t offset; /* SIM_GEN_FN: the index of its functions in gen_fns[] */
    const char *help;
} sim_gen_opt;

typedef enum sim_gen_workload {
    SIM_WL_CONVERSATION,
    SIM_WL_RAG,
    SIM_WL_MQA,
    SIM_WL_SP,
    SIM_NWORKLOADS
} sim_gen_workload;

/* A workload: its --workload name, its options and the paragraph of help
 * that introduces them. */
typedef struct sim_gen_workload_info {
    const char *name;
    const sim_gen_opt *opts;
    size_t nopts;
    const char *about;
} sim_gen_workload_info;

const sim_gen_workload_info *sim_gen_info(sim_gen_workload w);

/* Every workload's options, filled before the workload is known. */
typedef struct sim_gen_args {
    sim_gen_workload wl;
    sim_tracegen_opts conv;
    sim_tracegen_rag_opts rag;
    sim_tracegen_mqa_opts mqa;
    sim_tracegen_sp_opts sp;
} sim_gen_args;

sim_gen_args sim_gen_defaults(void);

/* The option's metavar in --help ("N", "X", "FILE", ...), and its value in
 * a (the default when a is sim_gen_defaults() with a->wl its workload). */
const char *sim_gen_metavar(const sim_gen_opt *g);
void sim_gen_format_default(const sim_gen_opt *g, const sim_gen_args *a, char *buf, size_t n);

/* An option as given, applied once the workload is known. */
typedef struct sim_gen_given {
    const char *name, *arg;
} sim_gen_given;

/* Each given option into a's chosen workload; one that it does not have is
 * an error naming the option and the workload. */
int sim_gen_apply(sim_gen_args *a, const sim_gen_given *given, size_t n, sim_err *err);
/* A workload by name; an unknown one is an error listing the names. */
int sim_gen_parse_workload(const char *arg, sim_gen_workload *wl, sim_err *err);
/* The chosen workload's option check: 0, or -1 with err naming the option. */
int sim_gen_check(const sim_gen_args *a, sim_err *err);
/* Write the chosen workload's trace to f (path names it in messages), a
 * line at a time: memory does not grow with --requests. */
int sim_gen_write(const sim_gen_args *a, FILE *f, const char *path, int64_t *written, sim_err *err);

#endif
