/* sim/cli/slurm_opt.h — the Slurm options that `kvsim sweep` and `kvsim plan
 * slo` share: --slurm, --partition P, --sbatch-args 'WORDS' (the engine is
 * sim/sweep/slurm.c; docs/slurm.md). */
#ifndef SIM_CLI_SLURM_OPT_H
#define SIM_CLI_SLURM_OPT_H

#include <getopt.h>

#include "sim/sweep/sweep.h"

enum { SIM_CLI_OPT_SLURM = 0x3000, SIM_CLI_OPT_PARTITION, SIM_CLI_OPT_SBATCH };

#define SIM_CLI_SLURM_OPTIONS                                                                                          \
    {"slurm", no_argument, 0, SIM_CLI_OPT_SLURM}, {"partition", required_argument, 0, SIM_CLI_OPT_PARTITION},          \
    {                                                                                                                  \
        "sbatch-args", required_argument, 0, SIM_CLI_OPT_SBATCH                                                        \
    }

/* The options' lines of a --help text. */
extern const char sim_cli_slurm_usage[];

/* Take option c with its argument into sl: true when c is one of them.
 * --sbatch-args is split at blanks into words (no quoting), and may repeat. */
bool sim_cli_slurm_option(int c, const char *arg, sim_sweep_slurm *sl);

/* What is wrong with the options taken together, or NULL. */
const char *sim_cli_slurm_check(const sim_sweep_slurm *sl);

/* Free the words of --sbatch-args. */
void sim_cli_slurm_free(sim_sweep_slurm *sl);

#endif
