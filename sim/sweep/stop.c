/* sim/sweep/stop.c — how a sweep learns that it must stop: SIGINT, SIGTERM
 * or SIGHUP set a flag (no SA_RESTART, so a blocking waitpid or sleep returns
 * EINTR at once) that the local pool (pool.c) and the Slurm driver (slurm.c)
 * read between steps, to stop their workers or cancel their job arrays
 * instead of leaving them behind. */
#include <signal.h>

#include "sim/sweep/sweep_int.h"

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig) { stop_signal = sig; }

void sim_sweep_catch_stop(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
}

int sim_sweep_stop_signal(void) { return stop_signal; }
