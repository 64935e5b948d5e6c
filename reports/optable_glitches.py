#!/usr/bin/env python3
"""reports/optable_glitches.py — the isolated glitches of the bundled
measured tables, counted by a second implementation of kvsim's rule, and
how far the collector's own repeated measurements disagree.

    python3 reports/optable_glitches.py [--ratio R] [SYSTEM_DIR ...]

SYSTEM_DIR: folders of configs/optables/ (default: every one). For each
system it prints the measured points (one per shape, the first row of a
repeated shape, as kvsim's loader keeps), how many of them kvsim drops as
glitches at --ratio (engine.measured.glitch_ratio, default 2), and the
shapes the tables measure twice with how far the two rows disagree (the
larger over the smaller: median, 90th and 99th percentile, and the share
beyond the ratio). `kvsim cost --set hardware=...` prints the same
dropped count from sim/cost/optable_glitch.c: the two must agree.

The rule (docs/measured.md §2): along each curve (the rows that share every
column but the one interpolated), a point more than R times above both of
its neighbours, or below both by that factor, is dropped; so are two
neighbouring points that both stand that far outside the two points around
them. The worst goes first and the test is repeated on what is left;
endpoints stay. Standard library only.
"""
import argparse
import csv
import glob
import gzip
import json
import os
import sys

# table name -> (key columns, x column, column added to x, column that must be 0)
SPECS = {
    "gemm": (["gemm_dtype", "n", "k"], "m", None, None),
    "gemm_fp8_block": (["gemm_dtype", "n", "k"], "m", None, None),
    "context_attention": (["attn_dtype", "kv_cache_dtype", "num_heads", "num_key_value_heads", "head_dim",
                           "batch_size"], "isl", None, "window_size"),
    "generation_attention": (["attn_dtype", "kv_cache_dtype", "num_heads", "num_key_value_heads", "head_dim",
                              "batch_size"], "isl", "step", "window_size"),
    "moe": (["moe_dtype", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size",
             "distribution"], "num_tokens", None, None),
    "moe_fp8_block": (["moe_dtype", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size",
                       "moe_ep_size", "distribution"], "num_tokens", None, None),
    "custom_allreduce": (["num_gpus", "backend"], "message_size", None, None),
    "nccl": (["op_name", "nccl_dtype", "num_gpus"], "message_size", None, None),
    "context_mla": (["mla_dtype", "kv_cache_dtype", "num_heads", "tp_size", "batch_size"], "isl", None, "step"),
    "generation_mla": (["mla_dtype", "kv_cache_dtype", "num_heads", "tp_size", "batch_size"], "isl", "step", None),
    "mla_context_module": (["mla_dtype", "kv_cache_dtype", "gemm_type", "num_heads", "batch_size"], "isl", None,
                           "step"),
    "mla_generation_module": (["mla_dtype", "kv_cache_dtype", "gemm_type", "num_heads", "batch_size"], "isl",
                              "step", None),
}
MAX_RUN = 2


def key_part(v):
    """'4096' and '4096.0' are one key, as kvsim's loader reads them."""
    try:
        return repr(float(v))
    except ValueError:
        return v


def curves_of(path, spec, repeats):
    keys, x, plus, zero = spec
    curves = {}
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as f:
        for row in csv.DictReader(f):
            if zero and row.get(zero) not in (None, "") and float(row[zero]) != 0:
                continue
            k = tuple(key_part(row[c]) for c in keys)
            xv = float(row[x]) + (float(row[plus]) if plus else 0)
            y = float(row["latency"])
            pts = curves.setdefault(k, {})
            if xv in pts:
                repeats.append(max(y, pts[xv]) / min(y, pts[xv]) if min(y, pts[xv]) > 0 else float("inf"))
            else:
                pts[xv] = y
    return [[pts[v] for v in sorted(pts)] for pts in curves.values()]


def off_by(y, i, n):
    """How far the run y[i:i+n] stands outside y[i-1] and y[i+n]."""
    hi, lo = max(y[i - 1], y[i + n]), min(y[i - 1], y[i + n])
    run = y[i:i + n]
    if all(v > hi for v in run):
        return min(v / hi if hi > 0 else float("inf") for v in run)
    if all(v < lo for v in run):
        return min(lo / v if v > 0 else float("inf") for v in run)
    return 1.0


def dropped(y, ratio):
    y, count = list(y), 0
    while ratio > 0:
        best = None
        for n in range(1, MAX_RUN + 1):
            for i in range(1, len(y) - n):
                v = off_by(y, i, n)
                if v > ratio and (best is None or v > best[0]):
                    best = (v, i, n)
        if best is None:
            return count
        del y[best[1]:best[1] + best[2]]
        count += best[2]
    return count


def quantile(v, q):
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


def system(d, ratio):
    meta = json.load(open(os.path.join(d, "meta.json")))
    points = drops = 0
    repeats = []
    for name, file in sorted(meta["files"].items()):
        if name not in SPECS:
            continue
        for y in curves_of(os.path.join(d, file), SPECS[name], repeats):
            points += len(y)
            drops += dropped(y, ratio)
    repeats.sort()
    beyond = sum(r > ratio for r in repeats)
    print("%-10s %8d points %5d dropped (%.2f%%)   %6d measured twice: p50 %.3f p90 %.3f p99 %.3f, %.2f%% beyond %g"
          % (meta["system"], points, drops, 100.0 * drops / points, len(repeats), quantile(repeats, .5),
             quantile(repeats, .9), quantile(repeats, .99), 100.0 * beyond / max(1, len(repeats)), ratio))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ratio", type=float, default=2, help="engine.measured.glitch_ratio (default 2)")
    ap.add_argument("dirs", nargs="*", help="configs/optables/SYSTEM folders (default: all)")
    a = ap.parse_args()
    dirs = a.dirs or sorted(os.path.dirname(p) for p in glob.glob("configs/optables/*/meta.json"))
    if not dirs:
        sys.exit("reports/optable_glitches.py: no configs/optables/*/meta.json: run it from the project root")
    for d in dirs:
        system(d, a.ratio)


if __name__ == "__main__":
    main()
