/* sim/cli/main.c — the kvsim command-line entry point: dispatches to the
 * subcommand table. The only place in kvsim that decides the exit status,
 * and the one that checks standard output reached its destination. */
#include "sim/cli/cli.h"
#include "sim/results/results.h"
#include "sim/util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const sim_cmd commands[] = {
    {"run", "replay a trace through the simulated cluster (default: bundled trace)", cmd_run},
    {"trace", "trace tools: stats, gen, import (azure, burstgpt, ragpulse), rechunk", cmd_trace},
    {"policies", "list every registered policy with its parameters", cmd_policies},
    {"config", "the resolved config of a run, or every config key's type, range and meaning", cmd_config},
    {"hitrate", "prefix hit rate vs cache capacity by cache-only replay", cmd_hitrate},
    {"plan", "DRAM per node for a hit-rate target; plan slo: the smallest cluster meeting latency targets", cmd_plan},
    {"check", "CI regression check: re-run a baseline's measurements, exit 3 if one moved", cmd_check},
    {"sweep", "run a grid of config points in parallel workers into one results DB", cmd_sweep},
    {"merge", "merge results databases (run ids remapped)", cmd_merge},
    {"compare", "A-vs-B: each metric's difference between groups of runs with a 95% interval, per load", cmd_compare},
    {"report", "HTML report with gnuplot figures from a results DB", cmd_report},
    {"export", "a results DB's runs (config keys and summary as columns) or any table as CSV/TSV", cmd_export},
    {"calibrate", "fit transfer-cost curves to data-path probe output (calibration file)", cmd_calibrate},
    {"cost", "the cost model's decode-iteration terms and prefill time for a config", cmd_cost},
    {"validate", "replay measured runs of a real engine (vLLM) and report kvsim's error per metric", cmd_validate},
    {"model", "model import: a model preset from a Hugging Face config.json", cmd_model},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f, "kvsim — trace-driven simulator of KV-cache-centric LLM serving (Mooncake, LMCache, MEPIC)\n\n"
               "usage: kvsim COMMAND [options]   (kvsim COMMAND --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++) fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

#ifndef KVSIM_GIT
#define KVSIM_GIT "unknown"
#endif

/* Run the command argv[1] names; *name says which, for close_stdout. */
static int dispatch(int argc, char **argv, const char **name)
{
    if (argc < 2) {
        usage(stderr);
        return SIM_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return SIM_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("kvsim %s+%s\n", KVSIM_VERSION, KVSIM_GIT);
        return SIM_EXIT_OK;
    }
    const char *names[NCOMMANDS];
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (!strcmp(argv[1], commands[i].name)) {
            *name = commands[i].name;
            return commands[i].fn(argc - 1, argv + 1);
        }
        names[i] = commands[i].name;
    }
    fprintf(stderr, "kvsim: unknown command '%s'%s\n\n", argv[1], sim_did_you_mean(argv[1], names, NCOMMANDS));
    usage(stderr);
    return SIM_EXIT_USAGE;
}

/* A result printed to standard output that did not get there (a full disk,
 * /dev/full, a closed pipe with SIGPIPE ignored) is an error: flush, check
 * the stream's error flag (set by a write that failed earlier, whose cause
 * stdio does not keep: a one-byte write finds it, EIO if that succeeds)
 * and the close of fd 1. Exit 2 naming the
 * cause, unless the command already failed (its status stands). A close
 * that fails with EBADF after nothing went wrong is stdout closed by the
 * caller (kvsim ... >&-) with nothing written: not an error. */
static int close_stdout(const char *name, int rc)
{
    int e = fflush(stdout) ? errno : 0;
    /* a write that failed earlier left only the error flag: one byte
     * written past stdio finds its cause (the output is incomplete anyway) */
    if (!e && ferror(stdout)) e = write(STDOUT_FILENO, "\n", 1) < 0 ? errno : EIO;
    if (fclose(stdout) && !e && errno != EBADF) e = errno;
    if (!e) return rc;
    fprintf(stderr, "kvsim%s%s: writing standard output: %s\n", *name ? " " : "", name, strerror(e));
    return rc ? rc : SIM_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    /* A file-size limit (ulimit -f) makes write() fail with EFBIG, which
     * every output reports (exit 2, sim/outfile.h), instead of a signal that
     * kills the run without a word. */
    signal(SIGXFSZ, SIG_IGN);
    /* stderr line-buffered: a warning composed of several prints reaches
     * the file in one write per line, so the workers of a sweep (processes
     * sharing one stderr) never splice their lines into each other. What
     * is drawn without a newline (the sweep's progress bar) flushes itself. */
    setvbuf(stderr, NULL, _IOLBF, BUFSIZ);
    const char *name = "";
    int rc = dispatch(argc, argv, &name);
    return close_stdout(name, rc);
}
