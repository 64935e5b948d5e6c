/* sim/cli/cmd_merge.c — `kvsim merge OUT.db IN.db...`: gather the databases that
 * sweep workers or cluster jobs wrote (one per job) into one, run ids
 * remapped (sim/results/merge.c). */
#include <getopt.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>
#include <errno.h>

#include "sim/cli/cli.h"
#include "sim/results/merge.h"

static const char merge_usage[] = "usage: kvsim merge [--keep-duplicates] OUT.db IN.db...\n"
                                  "\n"
                                  "Copy every completed run of each IN.db (runs, requests, samples, replicas and\n"
                                  "any other per-run table, plus hitrate points) into OUT.db, which is created when\n"
                                  "missing. Run ids are renumbered in OUT.db; inputs are merged in the order given,\n"
                                  "each in one transaction.\n"
                                  "\n"
                                  "Runs OUT.db already holds (same config hash and trace fingerprint) and hitrate\n"
                                  "sets it already holds (identical rows) are left out: merging twice changes\n"
                                  "nothing.\n"
                                  "\n"
                                  "  --keep-duplicates  copy them anyway (e.g. repeated runs of a noisy config)\n"
                                  "  --skip-existing    the default; accepted for old scripts\n"
                                  "  -h, --help         this help\n"
                                  "\n"
                                  "Exit status: 0 ok, 2 bad arguments or an unreadable database, 1 internal error.\n";

static void print_stats(const char *in, const sim_merge_stats *s)
{
    printf("kvsim merge: %s: %lld run%s", in, (long long)s->runs, s->runs == 1 ? "" : "s");
    if (s->runs == 1) printf(" (now %lld)", (long long)s->first_run);
    else if (s->runs) printf(" (now %lld-%lld)", (long long)s->first_run, (long long)s->last_run);
    printf(", %lld already present, %lld hitrate set%s", (long long)s->skipped, (long long)s->hitrate_sets,
           s->hitrate_sets == 1 ? "" : "s");
    if (s->hitrate_skipped) printf(" (%lld already present)", (long long)s->hitrate_skipped);
    putchar('\n');
}

int cmd_merge(int argc, char **argv)
{
    static const struct option opts[] = {{"skip-existing", no_argument, 0, 's'},
                                         {"keep-duplicates", no_argument, 0, 'k'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    bool skip = true;
    opterr = 0;
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        if (ch == 'h') return fputs(merge_usage, stdout), SIM_EXIT_OK;
        if (ch != 's' && ch != 'k') return sim_cli_bad_option("merge", argv[optind - 1]);
        skip = ch == 's';
    }
    if (argc - optind < 2) return sim_usage_error("merge", "expected OUT.db and at least one IN.db");
    sim_err err = {{0}};
    for (int i = optind + 1; i < argc; i++) /* before OUT exists: a missing IN once left an empty OUT behind */
        if (access(argv[i], R_OK)) {
            sim_errf(&err, "%s: cannot read: %s", argv[i], strerror(errno));
            return sim_usage_error("merge", err.msg);
        }
    sim_results *out;
    if (sim_results_open(&out, argv[optind], &err)) return sim_usage_error("merge", err.msg);
    int rc = SIM_EXIT_OK;
    for (int i = optind + 1; i < argc && rc == SIM_EXIT_OK; i++) {
        sim_merge_stats st = {0};
        if (sim_merge_db(out, argv[i], skip, &st, &err)) rc = sim_usage_error("merge", err.msg);
        else print_stats(argv[i], &st);
    }
    sim_results_close(out);
    return rc;
}
