/* sched/pd_static.c — `static` PD-ratio controller: the configured
 * prefill/decode split holds for the whole run. */
#include "sched/sched.h"

const sched_pd_ops sched_pd_static = {
    .name = "static",
    .help = "keep the configured prefill/decode split for the whole run",
    .params = "",
};
