/* sim/slo/command.c — the `kvsim run` line of a point of `kvsim plan
 * slo`: the plan's trace, config, speed and --set, then the point's split,
 * DRAM and knobs, each word quoted for the shell (sim_sh_word), so that a
 * planner can replay any point the plan reports. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/slo/slo_int.h"

/* Append arg to buf as a shell word (sim_sh_word), after a space. */
static size_t shell_arg(char *buf, size_t used, size_t n, const char *arg)
{
    if (used >= n) return used;
    char *q = sim_sh_word(arg);
    used += (size_t)snprintf(buf + used, n - used, " %s", q);
    free(q);
    return used;
}

/* A byte size as a config value people read: "1TB", "104GB" when it is
 * a whole number of them, else the bytes. */
static void size_value(double b, char *buf, size_t n)
{
    static const struct {
        double unit;
        const char *name;
    } units[] = {{1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (b >= units[i].unit && fmod(b, units[i].unit) == 0)
            return (void)snprintf(buf, n, "%.17g%s", b / units[i].unit, units[i].name);
    snprintf(buf, n, "%.17g", b);
}

char *slo_command(const slo_plan *pl, int P, int D, int lv, int k)
{
    const sim_slo_opts *o = pl->o;
    const sim_slo_result *r = pl->r;
    size_t n = 8192, u;
    char *c = sim_xmalloc(n), v[160], dram[64], ks[3][64];
    u = (size_t)snprintf(c, n, "kvsim run");
    const char *fixed[] = {"--trace", o->trace ? o->trace : r->trace, "--config", o->config, "--speed", o->speed};
    for (int i = 0; i < 6; i += 2)
        if (fixed[i + 1]) u = shell_arg(c, shell_arg(c, u, n, fixed[i]), n, fixed[i + 1]);
    for (int i = 0; i < o->nsets; i++) u = shell_arg(c, shell_arg(c, u, n, "--set"), n, o->sets[i]);
    size_value(r->dram[lv], dram, sizeof dram);
    if (slo_no_cpu_tier(r)) snprintf(v, sizeof v, " --set cluster.instances=%d", P);
    else if (pl->agg) snprintf(v, sizeof v, " --set cluster.instances=%d --set kvstore.dram_bytes=%s", P, dram);
    else
        snprintf(v, sizeof v, " --set cluster.prefill=%d --set cluster.decode=%d --set kvstore.dram_bytes=%s", P, D,
                 dram);
    u += (size_t)snprintf(c + u, u < n ? n - u : 0, "%s", v);
    int nk = slo_knob_sets(pl, k, ks);
    for (int i = 0; i < nk; i++) u = shell_arg(c, shell_arg(c, u, n, "--set"), n, ks[i]);
    return c;
}
