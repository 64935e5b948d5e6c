#!/usr/bin/env python3
"""reports/attention_check.py — the bundled tables' prefill attention rows
(configs/optables/h200_sxm/context_attention.csv.gz: vLLM's FlashAttention
backend, measured by AIConfigurator on another H200) and kvsim's price from
them, beside PyTorch's attention backends timed on a lent H200 by
reports/attention_probe.py (configs/calibration/h200.attention.json):
docs/measured.md §3.

    python3 reports/attention_check.py [--probe FILE] [--kvsim build/kvsim]

Per head shape of the probe (Llama-3.1-8B on one GPU: 32 query and 8 KV
heads; Mixtral-8x7B on two: 16 and 4 a GPU) and prompt length: the
table's row (batch 1, head size 128, bf16); kvsim's price, a prefill
pass's `attn_context` over the model's layers (`kvsim cost --prefill N
--json`); each backend's time; and the table's error against the fastest
backend. Then, per shape, the median and largest absolute error of the
table against the fastest backend. Standard library only; needs
build/kvsim (make), unless --no-kvsim leaves its column out.
"""
import csv
import gzip

from check_util import kvsim_cost, load_probe, parser, summary

TABLE = "configs/optables/h200_sxm/context_attention.csv.gz"
# probe shape -> (model preset, hardware preset, layers)
PRICED = {"llama3.1-8b": ("llama3.1-8b", "h200x1", 32), "mixtral-8x7b-tp2": ("mixtral-8x7b", "h200x2", 32)}


def table_rows(path=TABLE):
    """{(heads, kv_heads, isl): ms} of the table's batch-1 bf16 rows of head size 128."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return {(int(r["num_heads"]), int(r["num_key_value_heads"]), int(r["isl"])): float(r["latency"])
                for r in csv.DictReader(f) if r["batch_size"] == "1" and r["head_dim"] == "128"
                and r["attn_dtype"] == "bfloat16" and r["kv_cache_dtype"] == "bfloat16"}


def kvsim_ms(kvsim, shape, isl):
    model, hardware, layers = PRICED[shape]
    return kvsim_cost(kvsim, "attention_check.py", "--set", "model=" + model, "--set", "hardware=" + hardware,
                      "--prefill", str(isl))["prefill_ops_ms"]["attn_context"] / layers


def main():
    a = parser(__doc__, "attention").parse_args()
    probe = load_probe(a.probe, "attention_check.py", "attention_probe.py")
    table = table_rows()
    backends = list(dict.fromkeys(r["backend"] for r in probe["rows"]))
    names = [b.split("_")[0].lower() for b in backends]
    print("one layer, ms: h200_sxm table, kvsim; %s (reports/attention_probe.py) by PyTorch backend; "
          "the table's error against the fastest" % probe["host"]["gpu"])
    for shape in dict.fromkeys(r["shape"] for r in probe["rows"]):
        rows = [r for r in probe["rows"] if r["shape"] == shape]
        print("%s (%d query, %d KV heads)" % (shape, rows[0]["heads"], rows[0]["kv_heads"]))
        print("%7s  %-8s %-8s " % ("tokens", "table", "kvsim") + "".join("%-10s" % n for n in names) + "error")
        errors = []
        for isl in dict.fromkeys(r["isl"] for r in rows):
            t = table.get((rows[0]["heads"], rows[0]["kv_heads"], isl))
            times = [next((r.get("ms") for r in rows if r["isl"] == isl and r["backend"] == b), None)
                     for b in backends]
            ran = [x for x in times if x is not None]
            if t is None or not ran:
                continue
            errors.append(100 * (t / min(ran) - 1))
            ours = "-" if a.no_kvsim else "%.4f" % kvsim_ms(a.kvsim, shape, isl)
            print("%7d  %-8.4f %-8s " % (isl, t, ours) +
                  "".join("%-10s" % ("%.4f" % x if x is not None else "-") for x in times) + "%+6.1f%%" % errors[-1])
        print("  " + summary("table against the fastest", errors))


if __name__ == "__main__":
    main()
