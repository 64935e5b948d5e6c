#!/usr/bin/env python3
"""reports/gemm_probe.py — bf16 GEMM times on a lent GPU at the shapes
kvsim's measured mode prices Llama-3.1-8B with, to check the bundled tables
(configs/optables/CARD/gemm.csv.gz, measured elsewhere by AIConfigurator)
against the card at hand: docs/measured.md §3.

    python3 reports/gemm_probe.py [--shapes NAME=NxK,...] [--out FILE]

Run it on a machine with an NVIDIA GPU and PyTorch (the tool library's
device machine has them). It writes one JSON object (to FILE, default
stdout): the host, the GPU, the versions, and for each GEMM and token count
m, the time of one product of an m × k bf16 activation by the transpose of
an n × k weight (torch.mm into a preallocated output: the cuBLAS GEMM that
torch.nn.functional.linear, which vLLM's unquantized linear layers call,
runs), two ways:

  rotated   each launch reads another of several weight copies that
            together exceed the L2 cache, as a layer in a model does
            (the next layer's weights are never in L2);
  hot       the same weight every launch: what a benchmark that repeats one
            operation measures once the weight fits in L2.

Each is timed as a CUDA graph of L launches replayed (the launch gaps out,
as in vLLM's captured decode), CUDA events around each replay, the median
of 9 replays after 3 warm-ups, divided by L. A short table goes to stderr.

Shapes: Llama-3.1-8B at TP 1 (hidden 4096, 32 query and 8 KV heads of 128,
intermediate 14336, vocabulary 128256): qkv 6144 × 4096, o 4096 × 4096,
gate_up 28672 × 4096, down 4096 × 14336, lm_head 128256 × 4096. The tables
hold the first two exactly and bracket the others (docs/measured.md §2).
--shapes times others instead, or a named set (SHAPE_SETS): `table_points`
the measured shapes that bracket them (reports/gemm_check.py --points
compares those with the tables' own rows), `llama3-70b-tp4` and
`mixtral-8x7b-tp2` one GPU's shard of those models (reports/gemm_check.py
--model and --hardware set kvsim's prices beside them). The JSON names the
set (`shape_set`).

What it does not measure: vLLM's process (its custom ops, torch.compile's
fusions), nor any other operation. A figure from it is "cuBLAS bf16 GEMMs
through PyTorch on that GPU", to be cited as such.
"""
import argparse
import sys

from gpu_host import cuda_device, emit, event_times, host

try:
    import torch
except ImportError:  # --help still answers; main() says what is missing
    torch = None

SHAPES = {"qkv": (6144, 4096), "o": (4096, 4096), "gate_up": (28672, 4096), "down": (4096, 14336),
          "lm_head": (128256, 4096)}
# The tables' measured shapes around gate_up (n 16384 and 51200), down
# (k 12288 and 16384) and the LM head (n 65536, its largest), and qkv's own.
TABLE_POINTS = "n16384=16384x4096,n51200=51200x4096,n65536=65536x4096,k12288=4096x12288,k16384=4096x16384,qkv=6144x4096"
# Named shape sets for --shapes: the tables' bracketing points, and one GPU's
# shard of the tensor-parallel models of the CI latency check
# (docs/validation.md §5; configs/models/NAME.json): Llama-3 70B on four GPUs
# (hidden 8192, 64 query and 8 KV heads of 128, intermediate 28672,
# vocabulary 128256, each split four ways) and Mixtral-8x7B's attention and
# LM head on two (hidden 4096, 32 and 8 heads, vocabulary 32000; its experts
# are reports/moe_probe.py's).
SHAPE_SETS = {
    "table_points": TABLE_POINTS,
    "llama3-70b-tp4": "qkv=2560x8192,o=8192x2048,gate_up=14336x8192,down=8192x7168,lm_head=32064x8192",
    "mixtral-8x7b-tp2": "qkv=3072x4096,o=4096x2048,lm_head=16000x4096",
}
TOKENS = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
L2_BYTES_COVER = 4 * 60 << 20  # weight copies rotated: at least 4 × an H100/H200's 50-60 MB L2
LAUNCHES, REPS, WARM = 16, 9, 3


def parse_shapes(text):
    """NAME=NxK,... into {NAME: (N, K)}; exit 2 naming a bad item."""
    out = {}
    for item in text.split(","):
        try:
            name, dims = item.split("=")
            n, k = (int(x) for x in dims.split("x"))
            if n <= 0 or k <= 0:
                raise ValueError
        except ValueError:
            print("reports/gemm_probe.py: --shapes: '%s' is not NAME=NxK with N, K > 0" % item, file=sys.stderr)
            sys.exit(2)
        out[name] = (n, k)
    return out


def check(dev):
    """The timed product (torch.mm by a transposed weight) against a float64
    reference on the CPU (bf16 operands: a relative error between 1e-3 and
    1e-2 is rounding)."""
    x = torch.randn(64, 4096, device=dev, dtype=torch.bfloat16)
    w = torch.randn(512, 4096, device=dev, dtype=torch.bfloat16)
    got = torch.mm(x, w.t()).double().cpu()
    ref = x.double().cpu() @ w.double().cpu().T
    err = float((got - ref).norm() / ref.norm())
    if not err < 1e-2:
        sys.exit("reports/gemm_probe.py: the product's relative error is %g, want < 1e-2" % err)
    return err


def graph_ms(x, weights, dev):
    """One launch's time: a graph of LAUNCHES launches cycling over weights."""
    outs = [torch.empty(x.shape[0], weights[0].shape[0], device=dev, dtype=torch.bfloat16) for _ in range(2)]
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm cuBLAS (handle, workspace) outside the capture
        for i in range(2):
            torch.mm(x, weights[i % len(weights)].t(), out=outs[i % 2])
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(LAUNCHES):
            torch.mm(x, weights[i % len(weights)].t(), out=outs[i % 2])
    times = event_times(torch, g.replay, REPS, WARM, LAUNCHES)
    return times[REPS // 2], times[0], times[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the JSON object here (default: stdout)")
    ap.add_argument("--shapes", help="NAME=NxK,... instead of Llama-3.1-8B's, or a set: %s" % ", ".join(SHAPE_SETS))
    a = ap.parse_args()
    shapes = SHAPES if not a.shapes else parse_shapes(SHAPE_SETS.get(a.shapes, a.shapes))
    dev = cuda_device(torch, "reports/gemm_probe.py")
    torch.manual_seed(0)
    err = check(dev)
    rows = []
    for name, (n, k) in shapes.items():
        copies = max(2, -(-L2_BYTES_COVER // (2 * n * k)))
        weights = [torch.randn(n, k, device=dev, dtype=torch.bfloat16) for _ in range(copies)]
        for m in TOKENS:
            x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            row = {"gemm": name, "m": m, "n": n, "k": k, "copies": copies}
            for how, ws in (("rotated", weights), ("hot", weights[:1])):
                med, lo, hi = graph_ms(x, ws, dev)
                row[how + "_ms"], row[how + "_min_ms"], row[how + "_max_ms"] = med, lo, hi
            rows.append(row)
            print("%-7s m %4d (n %6d k %5d): rotated %.4f ms, hot %.4f ms" % (name, m, n, k, row["rotated_ms"],
                                                                              row["hot_ms"]), file=sys.stderr)
        del weights
        torch.cuda.empty_cache()
    out = {"about": "cuBLAS bf16 GEMMs through PyTorch, CUDA-graph replays (reports/gemm_probe.py)",
           "host": host(torch, cuda=torch.version.cuda), "check_rel_err": err, "launches_per_graph": LAUNCHES,
           "reps": REPS, "shape_set": a.shapes if a.shapes in SHAPE_SETS else None, "rows": rows}
    emit(out, a.out)


if __name__ == "__main__":
    main()
