#!/usr/bin/env python3
"""reports/gemm_check.py — kvsim's measured-mode GEMM prices for
Llama-3.1-8B on h200x1 (the bundled tables, configs/optables/h200_sxm,
measured by AIConfigurator on another H200) against the same GEMMs timed on
a lent H200 by reports/gemm_probe.py (configs/calibration/h200.gemm.json):
docs/measured.md §3.

    python3 reports/gemm_check.py [--probe FILE] [--kvsim build/kvsim]
    python3 reports/gemm_check.py --points FILE

With --points, FILE is reports/gemm_probe.py's output at the tables' own
shapes (`--shapes table_points`): each of its times beside the h200_sxm
table's bf16 row at the same m, n and k, as the table holds it (before
kvsim's glitch rule), so that the tables' transfer to the lent card is
seen apart from kvsim's interpolation between their shapes.

For each token count m of the probe, `kvsim cost --batch m --json` gives
one decode step's operations summed over the 32 layers; this prints, per
layer, kvsim's price and the probe's (its `rotated` time: each launch reads
weights not in L2, as in a model) of the QKV, O, MLP (gate-up + down) and
LM-head GEMMs, with kvsim's error, and the error of the step's GEMMs
together (32 layers and the LM head); then the median and largest
absolute error of each. Standard library only; needs build/kvsim (make).
"""
import argparse
import csv
import gzip
import json
import statistics
import subprocess
import sys

LAYERS = 32  # Llama-3.1-8B (configs/models/llama3.1-8b.json): the probe's shapes are its
OPS = (("qkv", "qkv_gemm", ("qkv",), LAYERS), ("o", "o_gemm", ("o",), LAYERS),
       ("mlp", "mlp_gemm", ("gate_up", "down"), LAYERS), ("lm_head", "lm_head", ("lm_head",), 1))


def kvsim_ops(kvsim, m):
    cmd = [kvsim, "cost", "--set", "model=llama3.1-8b", "--set", "hardware=h200x1", "--batch", str(m),
           "--context", "16", "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit("gemm_check.py: %s: exit %d: %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    return json.loads(r.stdout)["decode_ops_ms"]


def table_rows(path="configs/optables/h200_sxm/gemm.csv.gz"):
    """{(m, n, k): ms} of the table's bf16 GEMM rows."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return {(int(r["m"]), int(r["n"]), int(r["k"])): float(r["latency"]) for r in csv.DictReader(f)
                if r["gemm_dtype"] == "bfloat16"}


def points(probe):
    """Each probed time beside the table's own row at that shape."""
    table = table_rows()
    print("ms: h200_sxm table / %s (reports/gemm_probe.py), the table's error" % probe["host"]["gpu"])
    names = list(dict.fromkeys(r["gemm"] for r in probe["rows"]))
    shape = {r["gemm"]: "%dx%d" % (r["n"], r["k"]) for r in probe["rows"]}
    print("%5s  " % "m" + " ".join("%-22s" % ("%s %s" % (n, shape[n])) for n in names))
    errors = []
    for m in sorted({r["m"] for r in probe["rows"]}):
        cells = []
        for name in names:
            r = next(x for x in probe["rows"] if x["gemm"] == name and x["m"] == m)
            t = table.get((m, r["n"], r["k"]))
            if t is None:
                cells.append("%-22s" % "not in the table")
                continue
            errors.append(100 * (t / r["rotated_ms"] - 1))
            cells.append("%-22s" % ("%.4f/%.4f %+5.1f%%" % (t, r["rotated_ms"], errors[-1])))
        print("%5d  " % m + " ".join(cells))
    abs_err = sorted(abs(x) for x in errors)
    print("table points: median |error| %.1f%%, largest %.1f%% (%d)" % (statistics.median(abs_err), abs_err[-1],
                                                                       len(errors)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--probe", default="configs/calibration/h200.gemm.json",
                    help="reports/gemm_probe.py's output (default: %(default)s)")
    ap.add_argument("--kvsim", default="build/kvsim", help="the kvsim binary (default: %(default)s)")
    ap.add_argument("--points", metavar="FILE", help="compare the probe's times at the tables' own shapes (above)")
    a = ap.parse_args()
    path = a.points or a.probe
    try:
        with open(path, encoding="utf-8") as f:
            probe = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("gemm_check.py: %s: %s (make it with reports/gemm_probe.py on a GPU)" % (path, e))
    if a.points:
        points(probe)
        return
    lent = {(r["gemm"], r["m"]): r["rotated_ms"] for r in probe["rows"]}
    tokens = sorted({m for _, m in lent})
    print("per layer, ms: kvsim (tables) / %s (reports/gemm_probe.py), kvsim's error" % probe["host"]["gpu"])
    print("%5s  %-22s %-22s %-22s %-22s %s" % ("m", "qkv", "o", "mlp", "lm_head", "step"))
    errors, steps = [], []
    for m in tokens:
        ops = kvsim_ops(a.kvsim, m)
        cells, ours_step, theirs_step = [], 0.0, 0.0
        for _, key, parts, layers in OPS:
            ours, theirs = ops[key] / layers, sum(lent[(p, m)] for p in parts)
            ours_step, theirs_step = ours_step + ours * layers, theirs_step + theirs * layers
            errors.append(100 * (ours / theirs - 1))
            cells.append("%.4f/%.4f %+5.1f%%" % (ours, theirs, errors[-1]))
        steps.append(100 * (ours_step / theirs_step - 1))
        print("%5d  %-22s %-22s %-22s %-22s %+5.1f%%" % ((m,) + tuple(cells) + (steps[-1],)))
    for what, e in (("GEMM prices", errors), ("steps", steps)):
        abs_err = [abs(x) for x in e]
        print("%s: median |error| %.1f%%, largest %.1f%% (%d)" % (what, statistics.median(abs_err), max(abs_err),
                                                                 len(e)))


if __name__ == "__main__":
    main()
