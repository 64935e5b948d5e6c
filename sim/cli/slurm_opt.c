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
                                   "  --sbatch-args 'A B'  more sbatch options, split into words as a shell would\n"
                                   "                     (quotes and backslashes, no expansion), e.g.\n"
                                   "                     '--time=10 --mem=2G --comment=\"two words\"'\n";

static void add_word(sim_sweep_slurm *sl, const char *w, size_t n)
{
    sl->sbatch_args = sim_xrealloc(sl->sbatch_args, (size_t)(sl->nsbatch_args + 1) * sizeof *sl->sbatch_args);
    sl->sbatch_args[sl->nsbatch_args++] = strndup(w, n);
}

/* Split s into words as a POSIX shell does, without expanding anything:
 * blanks separate words; 'single quotes' keep everything; "double quotes"
 * keep all but a backslash before " or \; outside quotes a backslash
 * keeps the next character. A quote left open sets sbatch_args_open. */
static void split_words(sim_sweep_slurm *sl, const char *s)
{
    char *w = sim_xmalloc(strlen(s) + 1);
    size_t n = 0;
    bool in_word = false;
    for (char q = 0; *s; s++) {
        if (q == '\'' && *s != '\'') w[n++] = *s;
        else if (q == '"' && *s == '\\' && (s[1] == '"' || s[1] == '\\')) w[n++] = *++s;
        else if (q && *s == q) q = 0;
        else if (q) w[n++] = *s;
        else if (*s == '\'' || *s == '"') q = *s, in_word = true;
        else if (*s == '\\' && s[1]) w[n++] = *++s, in_word = true;
        else if (strchr(" \t\n", *s)) {
            if (in_word) add_word(sl, w, n);
            n = 0, in_word = false;
        } else w[n++] = *s, in_word = true;
        if (!s[1] && q) sl->sbatch_args_open = true;
    }
    if (in_word) add_word(sl, w, n);
    free(w);
}

bool sim_cli_slurm_option(int c, const char *arg, sim_sweep_slurm *sl)
{
    if (c == SIM_CLI_OPT_SLURM) sl->on = true;
    else if (c == SIM_CLI_OPT_PARTITION) sl->partition = arg;
    else if (c != SIM_CLI_OPT_SBATCH) return false;
    else split_words(sl, arg);
    return true;
}

const char *sim_cli_slurm_check(const sim_sweep_slurm *sl)
{
    if (!sl->on && sl->partition) return "--partition needs --slurm";
    if (!sl->on && sl->nsbatch_args) return "--sbatch-args needs --slurm";
    if (sl->sbatch_args_open) return "--sbatch-args: a quote is not closed (quote as for a shell: 'a b' or \"a b\")";
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
