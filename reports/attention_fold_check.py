#!/usr/bin/env python3
"""reports/attention_fold_check.py — how well the attention fold rule of
sim/cost/measured.c (attn_fold) prices a head shape from another one.

When the measured tables hold no attention of a model's h heads and h_kv KV
heads (per GPU), kvsim looks up h/f and h_kv/f heads at f times the batch:
FlashAttention runs each (sequence, KV head) as its own blocks of one grid,
so the work is the same. This script checks the rule where both shapes are
measured: for every bf16 attention row (head_dim 128) of (b, h, h_kv) whose
fold (f·b, h/f, h_kv/f) is also a row at the same sequence length, with the
smallest such f as kvsim picks it, it prints the folded row's time over the
row's own, minus one: per system and table, the median, the median of its
absolute value and the 5th and 95th percentiles; and the same for the rows
with a KV head per query head (the shapes kvsim folds: Llama-2's).

A second implementation: it reads the CSVs directly, with the median of a
shape's repeated rows; kvsim drops glitches first (docs/measured.md §2).

Usage: python3 reports/attention_fold_check.py [SYSTEM ...]   (default: all six)
"""
import collections
import csv
import gzip
import statistics
import sys

SYSTEMS = ("h100_sxm", "h200_sxm", "a100_sxm", "b200_sxm", "gb200", "l40s")


def load(system, table):
    rows = collections.defaultdict(list)
    with gzip.open("configs/optables/%s/%s.csv.gz" % (system, table), "rt") as f:
        for r in csv.DictReader(f):
            if r["attn_dtype"] != "bfloat16" or r["kv_cache_dtype"] != "bfloat16" or r["head_dim"] != "128":
                continue
            key = (int(r["num_heads"]), int(r["num_key_value_heads"]), int(r["batch_size"]), int(r["isl"]),
                   int(r["step"]))
            rows[key].append(float(r["latency"]))
    return {k: statistics.median(v) for k, v in rows.items()}


def folds(t):
    """(error, is MHA) for every row whose smallest fold is also a row."""
    out = []
    shapes = set((h, hk) for h, hk, *_ in t)
    for (h, hk, b, isl, step), v in t.items():
        for f in range(2, hk + 1):
            if h % f or hk % f or (h // f, hk // f) not in shapes:
                continue
            other = t.get((h // f, hk // f, b * f, isl, step))
            if other is not None:
                out.append((other / v - 1, h == hk))
            break
    return out


def line(label, errs):
    if not errs:
        return "| %s | 0 | – | – | – | – |" % label
    errs = sorted(errs)
    n = len(errs)
    return "| %s | %d | %+.1f%% | %.1f%% | %+.1f%% | %+.1f%% |" % (
        label, n, 100 * statistics.median(errs), 100 * statistics.median([abs(e) for e in errs]),
        100 * errs[n // 20], 100 * errs[(19 * n) // 20])


def main():
    systems = sys.argv[1:] or SYSTEMS
    print("| system, table | rows | median | median abs | 5th pct | 95th pct |")
    print("|---|---|---|---|---|---|")
    for s in systems:
        for table in ("generation_attention", "context_attention"):
            errs = folds(load(s, table))
            print(line("%s %s" % (s, table.split("_")[0]), [e for e, _ in errs]))
            print(line("%s %s, MHA" % (s, table.split("_")[0]), [e for e, mha in errs if mha]))


if __name__ == "__main__":
    main()
