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
one decode step's operations summed over the model's layers; this prints,
per layer, kvsim's price and the probe's (its `rotated` time: each launch
reads weights not in L2, as in a model) of the QKV, O, MLP (gate-up +
down) and LM-head GEMMs the probe timed, with kvsim's error, and the error
of the step's GEMMs together (every layer and the LM head); then the
median and largest absolute error of each. --model and --hardware price
another model's shard (a probe run with --shapes llama3-70b-tp4 is
--model llama3-70b --hardware h200x4). Standard library only; needs build/kvsim (make).
"""
import csv
import gzip
import json
import sys

from check_util import kvsim_cost, load_probe, parser, summary

# (column, kvsim's operation, the probe's GEMMs in it, priced once a layer?)
OPS = (("qkv", "qkv_gemm", ("qkv",), True), ("o", "o_gemm", ("o",), True),
       ("mlp", "mlp_gemm", ("gate_up", "down"), True), ("lm_head", "lm_head", ("lm_head",), False))


def layers(model):
    path = "configs/models/%s.json" % model
    try:
        with open(path, encoding="utf-8") as f:
            return int(json.load(f)["layers"])
    except (OSError, ValueError, KeyError) as e:
        sys.exit("gemm_check.py: %s: %s (--model names a preset of configs/models)" % (path, e))


def kvsim_ops(kvsim, m, model, hardware):
    return kvsim_cost(kvsim, "gemm_check.py", "--set", "model=" + model, "--set", "hardware=" + hardware, "--batch",
                      str(m), "--context", "16")["decode_ops_ms"]


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
    print(summary("table points", errors))


def main():
    ap = parser(__doc__, "gemm", no_kvsim=False)
    ap.add_argument("--points", metavar="FILE", help="compare the probe's times at the tables' own shapes (above)")
    ap.add_argument("--model", default="llama3.1-8b", help="the model the probe's shapes are one GPU's shard of "
                    "(default: %(default)s)")
    ap.add_argument("--hardware", default="h200x1", help="the hardware preset to price it on (default: %(default)s)")
    ap.add_argument("--tokens", help="comma list: only these of the probe's token counts")
    a = ap.parse_args()
    probe = load_probe(a.points or a.probe, "gemm_check.py", "gemm_probe.py")
    if a.points:
        points(probe)
        return
    lent = {(r["gemm"], r["m"]): r["rotated_ms"] for r in probe["rows"]}
    tokens = sorted({m for _, m in lent})
    if a.tokens:
        want = {int(x) for x in a.tokens.split(",") if x.strip().isdigit()}
        tokens = [m for m in tokens if m in want]
        if not tokens:
            sys.exit("gemm_check.py: --tokens %s: none of the probe's token counts (%s)" % (
                a.tokens, ",".join(str(m) for m in sorted({m for _, m in lent}))))
    ops_here = [op for op in OPS if all((p, tokens[0]) in lent for p in op[2])]
    n_layers = layers(a.model)
    print("per layer, ms: kvsim (tables, %s on %s) / %s (reports/gemm_probe.py), kvsim's error" % (
        a.model, a.hardware, probe["host"]["gpu"]))
    print("%5s  " % "m" + "".join("%-23s" % op[0] for op in ops_here) + "step")
    errors, steps = [], []
    for m in tokens:
        ops = kvsim_ops(a.kvsim, m, a.model, a.hardware)
        cells, ours_step, theirs_step = [], 0.0, 0.0
        for _, key, parts, per_layer in ops_here:
            count = n_layers if per_layer else 1
            ours, theirs = ops[key] / count, sum(lent[(p, m)] for p in parts)
            ours_step, theirs_step = ours_step + ours * count, theirs_step + theirs * count
            errors.append(100 * (ours / theirs - 1))
            cells.append("%-23s" % ("%.4f/%.4f %+5.1f%%" % (ours, theirs, errors[-1])))
        steps.append(100 * (ours_step / theirs_step - 1))
        print("%5d  " % m + "".join(cells) + "%+5.1f%%" % steps[-1])
    for what, e in (("GEMM prices", errors), ("steps", steps)):
        print(summary(what, e))


if __name__ == "__main__":
    main()
