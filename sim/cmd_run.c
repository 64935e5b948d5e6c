/* sim/cmd_run.c — `kvsim run`: replay a trace through the simulated cluster. */
#include "sim/cli.h"

#include <stdio.h>

int cmd_run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kvsim run: under construction\n");
    return SIM_EXIT_INTERNAL;
}
