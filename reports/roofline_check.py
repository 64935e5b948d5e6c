#!/usr/bin/env python3
"""reports/roofline_check.py — how far kvsim's spec-sheet roofline is from
measured kernels, on the GPUs that have measured tables.

A GPU with no measured tables and no calibration profile (the Mooncake
presets h800x8, h20x8, a800x8) is priced by the analytic roofline alone:
weights and KV bytes over HBM bandwidth times hardware.hbm_efficiency,
FLOPs at cost.prefill_mfu, all-reduces over NVLink (docs/cost-model.md).
This script asks what error that carries, where an answer exists: on each
GPU that has tables, it prices the same decode steps and prefill passes
twice with `kvsim cost` — once by the roofline from the preset's spec
sheet (`cost.compute=analytic`, its fixed CPU overheads set to 0), once
by the measured kernels (`cost.compute=measured`, its CPU constants set
to 0) — and prints the roofline's error against the tables, per GPU and
pass kind: median, least and most, over the grid below.

The tables are vLLM's own kernels measured per operation (configs/optables,
docs/measured.md), so the error is the roofline's, not the engine's: CPU
time between kernels is out of both sides.

With --transfer it checks the other way of pricing a GPU without tables:
another GPU's tables scaled by each operation's roofline ratio
(hardware.optables_transfer, sim/cost/measured.c). Leave-one-out: each
GPU's grid is priced from each other GPU's tables and compared with its
own tables; a row per (GPU, tables).

Usage: python3 reports/roofline_check.py [--kvsim build/kvsim] [--eta X] [--gpus h100,l40s] [--transfer]
  --eta X   price the roofline with hardware.hbm_efficiency = X instead of
            each preset's own (0.9 is what the tableless presets assume)
  --gpus L  only these GPU families (default: all six)
  --transfer  price each GPU from the other GPUs' tables instead of the roofline
"""
import argparse
import json
import statistics
import subprocess
import sys

TABLES = {"h100": "h100_sxm", "h200": "h200_sxm", "a100": "a100_sxm", "b200": "b200_sxm", "gb200": "gb200",
          "l40s": "l40s"}

# (hardware preset, model): one GPU where the model fits, else the fewest
# that hold it; every family that has tables.
PAIRS = [
    (gpu + "x" + str(n), model)
    for gpu in ("h100", "h200", "a100", "b200", "gb200", "l40s")
    for model, n in (("llama3.1-8b", 1), ("qwen3-14b", 1), ("mixtral-8x7b", 2), ("llama3.1-70b", 4))
]
PAIRS = [(hw, m) if not (hw.startswith("l40s") and m == "mixtral-8x7b") else ("l40sx4", m) for hw, m in PAIRS]
BATCHES = (1, 16, 64, 256)
CONTEXTS = (1024, 4096)
PREFILLS = (512, 2048, 8192)

ANALYTIC = ["--set", "cost.compute=analytic", "--set", "cost.decode_overhead_ms=0",
            "--set", "cost.prefill_chunk_overhead_ms=0"]
MEASURED = ["--set", "cost.compute=measured", "--set", "engine.measured.iter_overhead_ms=0",
            "--set", "engine.measured.seq_overhead_ms=0"]


_priced = {}


def cost(kvsim, hw, model, mode, batch, context, prefill, extra=()):
    """`kvsim cost --json` of one point (each asked once)."""
    key = (hw, model, tuple(mode), batch, context, prefill, tuple(extra))
    if key not in _priced:
        _priced[key] = run_cost(kvsim, hw, model, mode, batch, context, prefill, extra)
    return _priced[key]


def run_cost(kvsim, hw, model, mode, batch, context, prefill, extra):
    cmd = [kvsim, "cost", "--set", "model=" + model, "--set", "hardware=" + hw, "--json",
           "--batch", str(batch), "--context", str(context)] + mode + list(extra)
    if prefill:
        cmd += ["--prefill", str(prefill)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("roofline_check: %s failed: %s" % (" ".join(cmd), out.stderr.strip()))
    return json.loads(out.stdout)


def errors(kvsim, hw, model, mode, extra):
    """The candidate pricing over the measured one, minus 1, at every decode
    and prefill point of the grid."""
    dec, pre = [], []
    for i, (b, c) in enumerate((b, c) for b in BATCHES for c in CONTEXTS):
        p = PREFILLS[i] if i < len(PREFILLS) else 0
        a = cost(kvsim, hw, model, mode, b, c, p, extra)
        m = cost(kvsim, hw, model, MEASURED, b, c, p)
        if not (a["fits"] and m["fits"]):
            continue
        dec.append((a["decode_ms"] / m["decode_ms"] - 1, "%s %s decode %dx%d" % (hw, model, b, c)))
        if p:
            pre.append((a["prefill_ms"] / m["prefill_ms"] - 1, "%s %s prefill %d" % (hw, model, p)))
    return dec, pre


def candidates(args, gpu):
    """(row label, mode, extra --set args) of the pricings checked on gpu."""
    if not args.transfer:
        eta = ["--set", "hardware.hbm_efficiency=%g" % args.eta] if args.eta else []
        return [(gpu, ANALYTIC, eta)]
    # every operation from the other GPU's tables, its all-reduces too (an
    # h200 preset prices its own from the H100's rows: docs/measured.md §1)
    return [("%s from %s" % (gpu, src), MEASURED,
             ["--set", "hardware.optables=configs/optables/" + TABLES[src], "--set", "hardware.optables_transfer=true",
              "--set", 'hardware.allreduce_optables=""'])
            for src in TABLES if src != gpu]


def fmt(pts):
    xs = [x for x, _ in pts]
    if not xs:
        return "| – | – | – |"
    return "| %+.0f%% | %+.0f%% | %+.0f%% |" % (100 * statistics.median(xs), 100 * min(xs), 100 * max(xs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kvsim", default="build/kvsim")
    ap.add_argument("--eta", type=float, default=0)
    ap.add_argument("--gpus", default="")
    ap.add_argument("--transfer", action="store_true")
    args = ap.parse_args()
    only = set(g for g in args.gpus.split(",") if g)
    rows, all_dec, all_pre = {}, [], []
    for hw, model in PAIRS:
        gpu = hw.split("x")[0]
        if only and gpu not in only:
            continue
        for label, mode, extra in candidates(args, gpu):
            dec, pre = errors(args.kvsim, hw, model, mode, extra)
            d, p = rows.setdefault(label, ([], []))
            d += dec
            p += pre
            all_dec += dec
            all_pre += pre
    print("| %s | decode: median | least | most | prefill: median | least | most |"
          % ("GPU from tables" if args.transfer else "GPU"))
    print("|---|---|---|---|---|---|---|")
    for label, (d, p) in rows.items():
        print("| %s %s %s" % (label, fmt(d), fmt(p)[2:]))
    print("| all %s %s" % (fmt(all_dec), fmt(all_pre)[2:]))
    absd = [abs(x) for x, _ in all_dec]
    absp = [abs(x) for x, _ in all_pre]
    print("\nmedian |error|: decode %.0f%%, prefill %.0f%% (%d decode steps, %d prefill passes)"
          % (100 * statistics.median(absd), 100 * statistics.median(absp), len(absd), len(absp)))
    for kind, pts in (("decode", all_dec), ("prefill", all_pre)):
        lo, hi = min(pts), max(pts)
        print("%s: most too fast %+.0f%% (%s), most too slow %+.0f%% (%s)" % (kind, 100 * lo[0], lo[1], 100 * hi[0], hi[1]))


if __name__ == "__main__":
    main()
