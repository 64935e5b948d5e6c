#!/usr/bin/env python3
"""reports/gpu_calibration.py — the GPU calibration's tables, from the
committed measurements (configs/calibration/CARD.probe.json and
CARD.layers.json, made on a GPU machine: docs/gpu-calibration.md).

  reports/gpu_calibration.py [--cards h100,h200] [--out DIR] [--docs]

For each card it runs `kvsim calibrate` (rewriting configs/calibration/CARD.json,
the file the CARDx1 hardware preset names), then writes Markdown tables:
the data path against docs/datapath.md's targets, the curves the simulator
uses, the analytic and calibrated compute models against every measured
point, and two end-to-end cases run through `kvsim run` (one request on one
instance, beside the probe's whole-model measurement; a short multi-round QA
trace on one LMCache instance). Output: DIR/gpu-calibration.md (default
build/gpu-calibration); with --docs also docs/data/gpu-calibration-tables.md,
the data page docs/gpu-calibration.md links to.
Needs build/kvsim (make). About a minute on two cores.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

KVSIM = os.environ.get("KVSIM", "build/kvsim")
LABEL = {"h100": "cuda: NVIDIA H100 80GB HBM3 (PCIe Gen5 x16)", "h200": "cuda: NVIDIA H200 (PCIe Gen5 x16)"}
ONE_REQ = {"timestamp": 0, "input_length": 4096, "output_length": 129, "hash_ids": list(range(8))}
GPU_ONLY = ["--set", "cost.decode_overhead_ms=0", "--set", "cost.prefill_chunk_overhead_ms=0"]
NOCAL = ["--set", 'hardware.calibration=""', "--set", "cost.compute=analytic"]
# An aggregated run's cost.compute is the engine mode unless asked (docs/validation.md):
# the tables here compare the profile tables with the analytic model.
PROFILE = ["--set", "cost.compute=profile"]


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"gpu_calibration.py: {' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def calibrate(card):
    cmd = [KVSIM, "calibrate", "--probe-json", f"configs/calibration/{card}.probe.json", "--layers-json",
           f"configs/calibration/{card}.layers.json", "--hardware", f"{card}x1", "--out",
           f"configs/calibration/{card}.json", "--label", LABEL[card]]
    out = run(cmd)
    return " ".join(cmd[:1] + [c if " " not in c else f'"{c}"' for c in cmd[1:]]), out


def fmt_cmd(cmd):
    return " ".join(c if " " not in c and '"' not in c else "'" + c + "'" for c in cmd)


def datapath_table(card):
    probe = json.load(open(f"configs/calibration/{card}.probe.json"))
    s = {(x["shape"], x["direction"], x["method"], x["tokens"]): x for x in probe["samples"] if x["backend"] == "cuda"}
    peak = {p["direction"]: p["GBps"] for p in probe["peaks"] if p["backend"] == "cuda"}
    rows = ["| shape | tokens | MiB | dir | cudaMemcpy GB/s | fused kernel (DMA) GB/s | vs copy | per-page GB/s | kernel vs per-page |",
            "|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for shape in ("llama3.1-8b", "llama3-70b-tp8", "qwen2.5-32b"):
        for tokens in (16, 256, 2048) if shape == "llama3.1-8b" else (256,):
            for d in ("load", "store"):
                c, k, p = (s.get((shape, d, m, tokens)) for m in ("cuda_memcpy", "kernel_dma", "per_page"))
                if not (c and k and p):
                    continue
                rows.append(f"| {shape} | {tokens} | {k['bytes'] / 2**20:.1f} | {d} | {c['GBps']:.1f} | {k['GBps']:.1f} | "
                            f"{k['GBps'] / c['GBps']:.2f} | {p['GBps']:.2f} | {p['median_s'] / k['median_s']:.1f}× |")
    head = f"Pinned 256 MiB copy (the copy engine's peak): {peak.get('load', 0):.1f} GB/s host→GPU, {peak.get('store', 0):.1f} GB/s GPU→host."
    return head + "\n\n" + "\n".join(rows)


def curves_table(card):
    cal = json.load(open(f"configs/calibration/{card}.json"))
    use = cal["use"]
    rows = ["| transfer | method | alpha (µs) | beta (GB/s) | max residual |", "|---|---|---:|---:|---:|"]
    for key, (d, t) in {"load_dram": ("load", "dram"), "store_dram": ("store", "dram"), "load_ssd": ("load", "ssd"),
                        "store_ssd": ("store", "ssd")}.items():
        c = next(c for c in cal["curves"] if c["direction"] == d and c["tier"] == t and c["method"] == use[key])
        rows.append(f"| {key} | {use[key]} | {c['alpha_s'] * 1e6:.2f} | {c['beta_Bps'] / 1e9:.3f} | {100 * c['max_rel_residual']:.1f}% |")
    pc = cal.get("page_copies")
    if pc:
        for d in ("load", "store"):
            rows.append(f"| {d}_dram page by page | per_page: {pc[d]['per_copy_s'] * 1e6:.2f} µs a copy | | "
                        f"{pc[d]['beta_Bps'] / 1e9:.3f} | {100 * pc[d]['max_rel_residual']:.1f}% |")
    return "\n".join(rows)


def err(model, measured):
    return 100 * (model - measured) / measured


def compute_summary(card):
    comp = json.load(open(f"configs/calibration/{card}.json"))["compute"]
    rows = ["| model | kind | points | analytic: median \\|err\\| | max \\|err\\| | calibrated: median \\|err\\| | max \\|err\\| | prefill FLOP rate |",
            "|---|---|---:|---:|---:|---:|---:|---:|"]
    for m in comp["models"]:
        for kind in ("prefill", "decode"):
            pts = [p for p in m["points"] if p["kind"] == kind]
            a = [abs(err(p["analytic_s"], p["measured_s"])) for p in pts]
            c = [abs(err(p["calibrated_s"], p["measured_s"])) for p in pts]
            rate = f"{m['flops_per_s'] / 1e12:.0f} TFLOP/s ({m['flops_vs_hardware_peak']:.2f} of 989)" if kind == "prefill" else ""
            rows.append(f"| {m['name']} | {kind} | {len(pts)} | {statistics.median(a):.1f}% | {max(a):.1f}% | "
                        f"{statistics.median(c):.1f}% | {max(c):.1f}% | {rate} |")
    return "\n".join(rows)


def points_table(card, select):
    comp = json.load(open(f"configs/calibration/{card}.json"))["compute"]
    rows = ["| model | pass | measured (ms) | analytic (ms) | err | calibrated (ms) | err |", "|---|---|---:|---:|---:|---:|---:|"]
    for m in comp["models"]:
        for p in m["points"]:
            pre = "new" in p
            key = (m["name"], p["kind"], p["new"] if pre else p["batch"], p["cached"] if pre else p["context"])
            if select and key not in select:
                continue
            what = (f"{p['kind']} {p['new']} new after {p['cached']} cached" if pre
                    else f"{p['kind']} batch {p['batch']} × {p['context']} context")
            rows.append(f"| {m['name']} | {what} | {1e3 * p['measured_s']:.3f} | {1e3 * p['analytic_s']:.3f} | "
                        f"{err(p['analytic_s'], p['measured_s']):+.1f}% | {1e3 * p['calibrated_s']:.3f} | "
                        f"{err(p['calibrated_s'], p['measured_s']):+.1f}% |")
    return "\n".join(rows)


README_POINTS = {("llama3.1-8b", "prefill", n, c) for n in (512, 4096, 32768) for c in (0, 8192)} | \
    {("llama3.1-8b", "decode", b, 2048) for b in (1, 32, 256)} | \
    {("llama3-70b", "prefill", n, 0) for n in (512, 4096, 32768)} | \
    {("llama3-70b", "decode", b, 8192) for b in (1, 64)}


def kvsim_run(args):
    out = json.loads(run([KVSIM, "run", "--json"] + args))
    return out["ttft_ms"], out["tbt_ms"]


def one_request(card, outdir):
    path = os.path.join(outdir, "one-request.jsonl")
    with open(path, "w") as f:
        f.write(json.dumps(ONE_REQ) + "\n")
    base = ["--trace", path, "--set", "model=llama3.1-8b", "--set", f"hardware={card}x1", "--set",
            "cluster.mode=aggregated", "--set", "cluster.instances=1"] + GPU_ONLY + PROFILE
    e2e = json.load(open(f"configs/calibration/{card}.layers.json")).get("e2e", [{}])[0]
    cal, ana = kvsim_run(base), kvsim_run(base[:-2] + NOCAL)
    rows = ["| | TTFT (ms) | err | TBT (ms) | err |", "|---|---:|---:|---:|---:|",
            f"| measured: whole model, prefill of 4096 tokens; one decode step at 4097 | {e2e['ttft_ms']:.2f} | | {e2e['tbt_ms']:.3f} | |"]
    for name, (t, b) in (("kvsim, calibrated (profile tables)", cal), ("kvsim, analytic", ana)):
        rows.append(f"| {name} | {t['mean']:.2f} | {err(t['mean'], e2e['ttft_ms']):+.1f}% | {b['mean']:.3f} | "
                    f"{err(b['mean'], e2e['tbt_ms']):+.1f}% |")
    cmd = fmt_cmd([KVSIM, "run"] + base)
    return "\n".join(rows), cmd


def short_trace(card, outdir):
    path = os.path.join(outdir, "mqa.jsonl")
    gen = [KVSIM, "trace", "gen", "--workload", "multiround-qa", "--requests", "300", "--rate", "2", "--documents", "10", "--users", "10", "--rounds", "5", "--seed", "3", "-o", path]
    run(gen)
    base = ["--config", "configs/clusters/lmcache-cpu-offload.json", "--set", f"hardware={card}x1", "--trace", path] + PROFILE
    cal, ana = kvsim_run(base), kvsim_run(base[:-2] + NOCAL)
    rows = ["| kvsim | TTFT p50 (ms) | TTFT p90 (ms) | TBT p50 (ms) | TBT p90 (ms) |", "|---|---:|---:|---:|---:|"]
    for name, (t, b) in (("calibrated (profile tables, measured transfer curves)", cal), ("analytic", ana)):
        rows.append(f"| {name} | {t['p50']:.1f} | {t['p90']:.1f} | {b['p50']:.2f} | {b['p90']:.2f} |")
    return "\n".join(rows), fmt_cmd(gen), fmt_cmd([KVSIM, "run"] + base)


def card_section(card, outdir, full):
    cmd, _ = calibrate(card)
    probe = json.load(open(f"configs/calibration/{card}.layers.json"))
    dev = probe["device"]
    one, one_cmd = one_request(card, outdir)
    mqa, gen_cmd, mqa_cmd = short_trace(card, outdir)
    parts = [f"#### {dev['name']} (PyTorch {dev['torch']}, CUDA {dev['cuda']})",
             f"Calibration: `{cmd}`", "", "Data path (`build/kvsim-probe`, 256-token chunks unless noted):", "",
             datapath_table(card), "", "Transfer costs the simulator takes:", "", curves_table(card), "",
             "Compute, every measured point (whole model = layers × one layer + LM head; errors against the measurement):",
             "", compute_summary(card), "", points_table(card, None if full else README_POINTS), "",
             f"One request (4096-token prompt, 129 output tokens) on one instance, GPU work only: `{one_cmd}` "
             "(analytic: the same with `--set 'hardware.calibration=\"\"' --set cost.compute=analytic`)", "", one, "",
             f"A short multi-round QA trace on one LMCache instance: `{gen_cmd}`, then `{mqa_cmd}`", "", mqa]
    return "\n".join(parts)


DATA_PAGE = "docs/data/gpu-calibration-tables.md"
DATA_HEAD = """# GPU calibration tables: every measured point (data)

The measurements behind [docs/gpu-calibration.md](../gpu-calibration.md):
one NVIDIA H100 80GB HBM3 and one NVIDIA H200 (2026-11-27), each point
beside the analytic and the calibrated model's time. Written whole by
`reports/gpu_calibration.py --docs` from `configs/calibration/CARD.probe.json`
and `CARD.layers.json`; do not edit by hand.
"""


def write_data_page(text):
    """The tables go to a data file that docs/gpu-calibration.md links to (issue 44: raw tables off the page)."""
    with open(DATA_PAGE, "w") as f:
        f.write(DATA_HEAD + text.rstrip("\n") + "\n")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cards", default="h100,h200")
    ap.add_argument("--out", default="build/gpu-calibration")
    ap.add_argument("--docs", action="store_true", help=f"also write {DATA_PAGE}, the tables docs/gpu-calibration.md links to")
    a = ap.parse_args(argv)
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    os.makedirs(a.out, exist_ok=True)
    cards = [c for c in a.cards.split(",") if c]
    full = "\n\n".join(card_section(c, a.out, True) for c in cards)
    with open(os.path.join(a.out, "gpu-calibration.md"), "w") as f:
        f.write(full + "\n")
    if a.docs:
        write_data_page(full)
    print(f"wrote {a.out}/gpu-calibration.md" + (f" and {DATA_PAGE}" if a.docs else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
