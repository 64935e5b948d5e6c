/* sim/cli/cli.c — helpers shared by the subcommands. Kept out of main.c so that
 * test binaries, which link every object except main.o, can link cmd_*.o. */
#include "sim/cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sim/util.h"

char *sim_cli_string_set(const char *key, const char *value)
{
    json_t *s = json_string(value);
    char *enc = json_dumps(s, JSON_ENCODE_ANY);
    size_t n = strlen(key) + strlen(enc) + 2;
    char *set = sim_xmalloc(n);
    snprintf(set, n, "%s=%s", key, enc);
    free(enc);
    json_decref(s);
    return set;
}

int sim_usage_error(const char *cmd, const char *msg)
{
    fprintf(stderr, "kvsim %s: %s\n", cmd, msg);
    return SIM_EXIT_USAGE;
}
