/* sim/cli/check_cmd.h — what `kvsim check` (cmd_check.c) takes from other
 * commands to record their measurements: a `kvsim run` or `kvsim plan slo`
 * command line made a baseline measurement (check_cmd.c), the plan_slo
 * measurement kind (which runs a plan, a search the check engine below this
 * layer cannot call), and plan slo's option parser (cmd_plan_slo.c). */
#ifndef SIM_CLI_CHECK_CMD_H
#define SIM_CLI_CHECK_CMD_H

#include <stdbool.h>

#include <jansson.h>

#include "sim/replay/check.h"
#include "sim/slo/plan_slo.h"
#include "sim/util.h"

/* `kvsim plan slo`'s options (argv[0] a name, as getopt wants) into *o
 * (initialised here; o->sets allocated: the caller frees it, also after an
 * error); --json and --help are refused. */
int sim_cli_plan_slo_opts(int argc, char **argv, sim_slo_opts *o, sim_err *err);

/* The measurement kind "plan_slo" (args: trace, config, options: plan
 * slo's options as a list of strings); registers itself with the engine. */
void sim_cli_check_add_plan_kind(void);

/* A measurement recording the command argv[0..argc) — "run ..." or
 * "plan slo ..." — named name (NULL: the command line); with one_sided,
 * each metric's worse direction ("worse": {...}) as well. */
int sim_cli_check_measurement(int argc, char **argv, const char *name, bool one_sided, json_t **out, sim_err *err);

#endif
