#!/usr/bin/env python3
"""What doubling a fused MoE's tensor-parallel degree costs, from the tables.

For every bundled system and expert shape measured at both TP t and 2t
(EP 1, bfloat16), the ratio of the two latencies at each token count the
two curves share. Halving each expert's shard halves its weights and its
FLOPs, so a roofline says 0.5; the tables say how far the kernel follows
it as the shard shrinks. Prints one line per shard size after doubling
(the median, the least and the most ratio over systems, shapes and token
counts) and, last, the same over all shards of 256 columns and over, and
under.

    python3 reports/moe_tp_halving.py [configs/optables]
"""
import collections
import csv
import gzip
import os
import statistics
import sys


def curves(path):
    """(shape, tp) -> {tokens: ms} for bfloat16 EP-1 rows of one system."""
    out = collections.defaultdict(dict)
    with gzip.open(path, "rt") as f:
        for r in csv.DictReader(f):
            if r["moe_dtype"] != "bfloat16" or r["moe_ep_size"] != "1":
                continue
            shape = (int(r["hidden_size"]), int(r["inter_size"]), r["topk"], r["num_experts"], r["distribution"])
            out[(shape, int(r["moe_tp_size"]))][int(r["num_tokens"])] = float(r["latency"])
    return out


def ratios(root):
    """shard columns after doubling -> list of t(2tp) / t(tp)."""
    by_shard = collections.defaultdict(list)
    for system in sorted(os.listdir(root)):
        path = os.path.join(root, system, "moe.csv.gz")
        if not os.path.exists(path):
            continue
        c = curves(path)
        for (shape, tp), cur in c.items():
            nxt = c.get((shape, 2 * tp))
            if not nxt:
                continue
            shard = shape[1] // (2 * tp)
            by_shard[shard] += [nxt[n] / cur[n] for n in cur if n in nxt and cur[n] > 0]
    return by_shard


def line(label, v):
    return "%-22s median %.2f  least %.2f  most %.2f  (%d pairs)" % (label, statistics.median(v), min(v), max(v), len(v))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "configs/optables"
    by_shard = ratios(root)
    for shard in sorted(by_shard, reverse=True):
        print(line("shard %d columns" % shard, by_shard[shard]))
    print(line("all of 256 and over", [x for s, v in by_shard.items() if s >= 256 for x in v]))
    print(line("all under 256", [x for s, v in by_shard.items() if s < 256 for x in v]))


if __name__ == "__main__":
    main()
