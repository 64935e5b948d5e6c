/* sim/cli/cli.h — the kvsim subcommand table.
 *
 * Each subcommand is one function `int cmd_NAME(int argc, char **argv)`
 * (argv[0] is the subcommand name) living in sim/cmd_NAME.c, and one line in
 * the table in sim/cli/main.c. Every command accepts --help.
 *
 * Exit codes shared by all commands: */
#ifndef SIM_CLI_H
#define SIM_CLI_H

#include <stddef.h>
#include <jansson.h>

enum {
    SIM_EXIT_OK = 0,
    SIM_EXIT_INTERNAL = 1, /* a bug or an I/O failure we did not expect */
    SIM_EXIT_USAGE = 2,    /* bad arguments, config or input file; an output that cannot
                            * be written (no folder, disk full, file-size limit) */
    SIM_EXIT_CHECK = 3,    /* `kvsim check`: a number moved beyond tolerance */
};

typedef int (*sim_cmd_fn)(int argc, char **argv);

typedef struct sim_cmd {
    const char *name;
    const char *summary;
    sim_cmd_fn fn;
} sim_cmd;

int cmd_run(int argc, char **argv);
int cmd_trace(int argc, char **argv);
/* kvsim trace import, kvsim trace rechunk (sim/cli/cmd_trace_import.c). */
int cmd_trace_import(int argc, char **argv);
int cmd_trace_rechunk(int argc, char **argv);
int cmd_policies(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_hitrate(int argc, char **argv);
/* kvsim hitrate --pic: the PIC replay (sim/cli/cmd_hitrate_pic.c). */
int cmd_hitrate_pic(int argc, char **argv);
/* kvsim hitrate --ladder: the hit-rate ladder (sim/cli/cmd_hitrate_ladder.c). */
int cmd_hitrate_ladder(int argc, char **argv);
/* kvsim plan crossover (sim/cli/cmd_plan_crossover.c). */
int cmd_plan_crossover(int argc, char **argv);
/* kvsim plan slo (sim/cli/cmd_plan_slo.c). */
int cmd_plan_slo(int argc, char **argv);
/* kvsim plan tiers (sim/cli/cmd_plan_tiers.c). */
int cmd_plan_tiers(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
/* kvsim cost: the cost model's decode and prefill times for a config. */
int cmd_cost(int argc, char **argv);
/* kvsim validate: predictions of measured real-engine runs (sim/cli/cmd_validate.c). */
int cmd_validate(int argc, char **argv);
/* kvsim model import: a model preset from a Hugging Face config.json. */
int cmd_model(int argc, char **argv);

/* value as a JSON string, quoted and escaped (caller frees). */
char *sim_cli_json_string(const char *value);
/* "key=VALUE" with VALUE the JSON encoding of a string (a --set that stays a
 * string whatever it looks like, e.g. a trace path). Caller frees. */
char *sim_cli_string_set(const char *key, const char *value);

/* A summary number as text right-aligned in width columns through fmt (a
 * "%*.1f"-style format taking the width), or "—" when it is not a number:
 * a null statistic is undefined (no request had one), never 0. */
struct json_t;
const char *sim_cli_num(const struct json_t *v, const char *fmt, int width, char *buf, size_t n);

/* Print "kvsim NAME: message" to stderr and return SIM_EXIT_USAGE. */
int sim_usage_error(const char *cmd, const char *msg);
/* A command's output file, written whole or not at all (sim/outfile.h):
 * open it, or the usage exit naming cmd; close it after the writer returned
 * rc (err set when rc != 0), aborting on failure; the exit code. */
struct sim_outfile;
struct sim_err;
int sim_cli_out_open(struct sim_outfile *o, const char *cmd, const char *path);
int sim_cli_out_close(struct sim_outfile *o, const char *cmd, int rc, const struct sim_err *err);

/* The message for a positional argument the command does not take:
 * "unexpected argument 'ARG' (see kvsim CMD --help)", or, when ARG is an
 * existing file and flag the option that takes one (e.g. "--db"), "(did you
 * mean FLAG ARG? see kvsim CMD --help)". Written into buf, which it returns. */
const char *sim_cli_unexpected(char *buf, size_t n, const char *cmd, const char *arg, const char *flag);
/* sim_usage_error with that message. */
int sim_cli_unexpected_error(const char *cmd, const char *arg, const char *flag);
/* "kvsim CMD: unknown option or missing value 'OPT' (see kvsim CMD --help)",
 * returning SIM_EXIT_USAGE; for getopt_long with opterr off, OPT is
 * argv[optind - 1]. */
int sim_cli_bad_option(const char *cmd, const char *opt);
struct option;
/* An option of opts that takes one value given more than once ("--only a
 * --only b": getopt_long keeps the last, so the first was dropped without
 * a word) is "kvsim CMD: --only given twice ('a', then 'b'): give it once"
 * (SIM_EXIT_USAGE); the options named in `repeatable` (NULL-ended, e.g.
 * "set", "metric") may repeat. Options are matched by their full name,
 * as --name VALUE or --name=VALUE. 0 when none repeats. */
int sim_cli_once(const char *cmd, int argc, char **argv, const struct option *opts, const char *const *repeatable);
/* Each caveat of `caveats` (sim_serving_caveats' {"name", "text"} array) as
 * "kvsim CMD: warning: not validated: TEXT" on stderr (a caveat the run
 * found, "found": true, as "kvsim CMD: warning: TEXT"), skipping a text
 * already in `said` and adding each printed one to it (said NULL: print
 * all). */
void sim_cli_warn_caveats(const char *cmd, const json_t *caveats, json_t *said);

#endif
