#!/usr/bin/env python3
"""reports/moe_check.py — the bundled tables' fused-MoE rows for
Mixtral-8x7B on two GPUs (configs/optables/h200_sxm/moe.csv.gz: bf16,
balanced routing, measured by AIConfigurator on another H200) and kvsim's
price from them, beside one layer timed on a lent H200 by
reports/moe_probe.py (configs/calibration/h200.moe.json): docs/measured.md §3.

    python3 reports/moe_check.py [--probe FILE] [--kvsim build/kvsim]

Per token count m of the probe: the table's row at m; kvsim's price, one
decode step's `moe` operation at batch m (`kvsim cost --set
engine.measured.moe_distribution=balanced --json`) over the 32 layers;
the probe's layer in a CUDA graph (its `layer_graph_ms`: the two GEMMs,
PyTorch's unfused activation and sum) and its two GEMMs alone
(`gemms_graph_ms`); the table's error against each. Then the median and
largest absolute error of the table against the layer and against the
GEMMs, up to 256 tokens (decode batches) and above (prefill chunks); and
how far kvsim's price is above the table's row. --no-kvsim leaves kvsim
out.
Standard library only; needs build/kvsim (make).
"""
import csv
import gzip

from check_util import kvsim_cost, load_probe, parser, summary

LAYERS = 32  # Mixtral-8x7B (configs/models/mixtral-8x7b.json)
TABLE = "configs/optables/h200_sxm/moe.csv.gz"


def table_rows(path=TABLE):
    """{tokens: ms} of the table's bf16 balanced rows at the probe's shape."""
    want = {"moe_dtype": "bfloat16", "hidden_size": "4096", "inter_size": "14336", "topk": "2",
            "num_experts": "8", "moe_tp_size": "2", "moe_ep_size": "1", "distribution": "balanced"}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return {int(r["num_tokens"]): float(r["latency"]) for r in csv.DictReader(f)
                if all(r[k] == v for k, v in want.items())}


def kvsim_layer_ms(kvsim, m):
    return kvsim_cost(kvsim, "moe_check.py", "--set", "model=mixtral-8x7b", "--set", "hardware=h200x2", "--set",
                      "engine.measured.moe_distribution=balanced", "--batch", str(m), "--context",
                      "16")["decode_ops_ms"]["moe"] / LAYERS


def main():
    a = parser(__doc__, "moe").parse_args()
    probe = load_probe(a.probe, "moe_check.py", "moe_probe.py")
    table = table_rows()
    print("one layer, ms: h200_sxm table, kvsim; %s (reports/moe_probe.py): layer, GEMMs; the table's error" %
          probe["host"]["gpu"])
    print("%5s  %-8s %-8s %-8s %-8s %-8s %s" % ("m", "table", "kvsim", "layer", "GEMMs", "/layer", "/GEMMs"))
    errors = {False: ([], []), True: ([], [])}
    over = []
    for r in probe["rows"]:
        m, t = r["tokens"], table.get(r["tokens"])
        if t is None:
            continue
        e_layer, e_gemms = 100 * (t / r["layer_graph_ms"] - 1), 100 * (t / r["gemms_graph_ms"] - 1)
        errors[m > 256][0].append(e_layer)
        errors[m > 256][1].append(e_gemms)
        ours = None if a.no_kvsim else kvsim_layer_ms(a.kvsim, m)
        if ours is not None:
            over.append(ours - t)
        print("%5d  %-8.4f %-8s %-8.4f %-8.4f %+6.1f%%  %+6.1f%%" % (
            m, t, "-" if ours is None else "%.4f" % ours, r["layer_graph_ms"], r["gemms_graph_ms"], e_layer, e_gemms))
    for prefill, name in ((False, "up to 256 tokens"), (True, "above 256 tokens")):
        print(summary("table against the layer, %s" % name, errors[prefill][0]))
        print(summary("table against the GEMMs, %s" % name, errors[prefill][1]))
    if over:
        print("kvsim above the table: %.3f to %.3f ms (the router's GEMM and top-k)" % (min(over), max(over)))


if __name__ == "__main__":
    main()
