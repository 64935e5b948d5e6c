/* sim/cli.c — helpers shared by the subcommands. Kept out of main.c so that
 * test binaries, which link every object except main.o, can link cmd_*.o. */
#include "sim/cli.h"

#include <stdio.h>

int sim_usage_error(const char *cmd, const char *msg)
{
    fprintf(stderr, "kvsim %s: %s\n", cmd, msg);
    return SIM_EXIT_USAGE;
}
