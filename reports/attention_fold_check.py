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

With --head-dim it checks the widening of the same function instead: a
head_dim e the tables lack is looked up at 2e, h/f and h_kv/f heads over
f·b/2 sequences (the smallest f ≥ 2 dividing both whose shape is held, else
f = 1), the same query work and KV bytes. Only b200_sxm's tables hold two
head_dims (128 and 256), so it prices each of their head_dim-128 rows from
the 256 rows by that rule, as kvsim prices Llama-3.2-1B's 64 from 128.

A second implementation: it reads the CSVs directly, with the median of a
shape's repeated rows; kvsim drops glitches first (docs/measured.md §2).

Usage: python3 reports/attention_fold_check.py [--head-dim] [SYSTEM ...]
       (default: all six; with --head-dim, b200_sxm)
"""
import collections
import csv
import gzip
import statistics
import sys

SYSTEMS = ("h100_sxm", "h200_sxm", "a100_sxm", "b200_sxm", "gb200", "l40s")


def load(system, table, head_dim=128):
    rows = collections.defaultdict(list)
    with gzip.open("configs/optables/%s/%s.csv.gz" % (system, table), "rt") as f:
        for r in csv.DictReader(f):
            if r["attn_dtype"] != "bfloat16" or r["kv_cache_dtype"] != "bfloat16" or r["head_dim"] != str(head_dim):
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


def widenings(narrow, wide):
    """The error of every narrow row priced from the wide table (twice its
    head_dim) by the rule above, where that row is measured."""
    out = []
    shapes = set((h, hk) for h, hk, *_ in wide)
    for (h, hk, b, isl, step), v in narrow.items():
        held = [f for f in range(1, hk + 1) if h % f == 0 and hk % f == 0 and (h // f, hk // f) in shapes]
        f = next((f for f in held if f >= 2), held[0] if held else None)
        if f is None or (b * f) % 2:
            continue
        other = wide.get((h // f, hk // f, b * f // 2, isl, step))
        if other is not None:
            out.append(other / v - 1)
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
    args = sys.argv[1:]
    if args[:1] == ["--head-dim"]:
        print("| system, table | rows | median | median abs | 5th pct | 95th pct |")
        print("|---|---|---|---|---|---|")
        for s in args[1:] or ["b200_sxm"]:
            for table in ("generation_attention", "context_attention"):
                errs = widenings(load(s, table, 128), load(s, table, 256))
                print(line("%s %s, 128 from 256" % (s, table.split("_")[0]), errs))
        return
    systems = args or SYSTEMS
    print("| system, table | rows | median | median abs | 5th pct | 95th pct |")
    print("|---|---|---|---|---|---|")
    for s in systems:
        for table in ("generation_attention", "context_attention"):
            errs = folds(load(s, table))
            print(line("%s %s" % (s, table.split("_")[0]), [e for e, _ in errs]))
            print(line("%s %s, MHA" % (s, table.split("_")[0]), [e for e, mha in errs if mha]))


if __name__ == "__main__":
    main()
