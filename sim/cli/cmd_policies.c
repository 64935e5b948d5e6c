/* sim/cmd_policies.c — `kvsim policies`: every registered policy of every
 * kind, with its one-line help and parameters (from the registry tables). */
#include <stdio.h>
#include <string.h>

#include "sched/sched.h"
#include "sim/cli/cli.h"

int cmd_policies(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        puts("usage: kvsim policies\n\nList every registered policy (routers, decode selectors, admission,\n"
             "PD-ratio controllers, eviction) with its help and parameters.\n"
             "Select them in the config: policy.router, policy.decode, policy.admission,\n"
             "policy.pd_controller, kvstore.eviction; parameters go in policy.params.");
        return SIM_EXIT_OK;
    }
    if (argc > 1) return sim_usage_error("policies", "takes no arguments (see kvsim policies --help)");
    sched_print_policies(stdout);
    return SIM_EXIT_OK;
}
