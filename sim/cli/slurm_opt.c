/* sim/cli/slurm_opt.c — parsing the Slurm options that `kvsim sweep` and
 * `kvsim plan slo` share (sim/cli/slurm_opt.h). */
#include "sim/cli/slurm_opt.h"

#include <stdlib.h>
#include <string.h>

const char sim_cli_slurm_usage[] = "  --slurm            run the points as Slurm job arrays (sbatch) from this\n"
                                   "                     machine, which must share the file system with the nodes;\n"
                                   "                     --jobs N then caps the tasks running at once (%N, default\n"
                                   "                     none); waits with progress, merging each part as its task\n"
                                   "                     ends; run again to resubmit only the missing points\n"
                                   "                     (docs/slurm.md)\n"
                                   "  --partition P      sbatch --partition=P (default: the cluster's default)\n"
                                   "  --sbatch-args 'A B'  more sbatch options, split at blanks (no quoting), e.g.\n"
                                   "                     '--time=10 --mem=2G'\n";

bool sim_cli_slurm_option(int c, const char *arg, sim_sweep_slurm *sl)
{
    if (c == SIM_CLI_OPT_SLURM) sl->on = true;
    else if (c == SIM_CLI_OPT_PARTITION) sl->partition = arg;
    else if (c != SIM_CLI_OPT_SBATCH) return false;
    else {
        char *copy = sim_xstrdup(arg), *save = NULL;
        for (char *w = strtok_r(copy, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
            sl->sbatch_args = sim_xrealloc(sl->sbatch_args, (size_t)(sl->nsbatch_args + 1) * sizeof *sl->sbatch_args);
            sl->sbatch_args[sl->nsbatch_args++] = sim_xstrdup(w);
        }
        free(copy);
    }
    return true;
}

const char *sim_cli_slurm_check(const sim_sweep_slurm *sl)
{
    if (!sl->on && sl->partition) return "--partition needs --slurm";
    if (!sl->on && sl->nsbatch_args) return "--sbatch-args needs --slurm";
    if (sl->partition && !*sl->partition) return "--partition: empty partition name";
    return NULL;
}

void sim_cli_slurm_free(sim_sweep_slurm *sl)
{
    for (int i = 0; i < sl->nsbatch_args; i++) free(sl->sbatch_args[i]);
    free(sl->sbatch_args);
    sl->sbatch_args = NULL;
    sl->nsbatch_args = 0;
}
