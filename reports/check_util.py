"""reports/check_util.py — what the GPU checks (reports/gemm_check.py,
reports/moe_check.py, reports/attention_check.py) share: reading a probe's
JSON, asking `kvsim cost` for a price, and the error summary line.
Standard library only."""
import argparse
import json
import statistics
import subprocess
import sys


def parser(doc, name, no_kvsim=True):
    """The checks' common options: --probe (default
    configs/calibration/h200.NAME.json, reports/NAME_probe.py's output),
    --kvsim and, with no_kvsim, --no-kvsim."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--probe", default="configs/calibration/h200.%s.json" % name,
                    help="reports/%s_probe.py's output (default: %%(default)s)" % name)
    ap.add_argument("--kvsim", default="build/kvsim", help="the kvsim binary (default: %(default)s)")
    if no_kvsim:
        ap.add_argument("--no-kvsim", action="store_true", help="the table and the probe only (no build/kvsim needed)")
    return ap


def load_probe(path, script, probe):
    """The JSON a probe wrote, or exit naming the file and the probe that makes it."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("%s: %s: %s (make it with reports/%s on a GPU)" % (script, path, e, probe))


def kvsim_cost(kvsim, script, *args):
    """`kvsim cost ARGS --json` as a dict, or exit saying what failed."""
    cmd = [kvsim, "cost"] + list(args) + ["--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit("%s: %s: exit %d: %s" % (script, " ".join(cmd), r.returncode, r.stderr.strip()))
    return json.loads(r.stdout)


def summary(what, errors):
    """'WHAT: median |error| M%, largest L% (N)' over percentage errors."""
    abs_err = sorted(abs(x) for x in errors)
    return "%s: median |error| %.1f%%, largest %.1f%% (%d)" % (what, statistics.median(abs_err), abs_err[-1],
                                                              len(errors))
