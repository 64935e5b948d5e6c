#!/usr/bin/env python3
"""reports/moe_compile_probe.py — how long Triton takes to compile a
fused-MoE kernel variant on a GPU host: the one input of the Mixtral
validation run that no table measures (engine.measured.moe_jit_compile_ms,
docs/validation.md §1, docs/measured.md §4).

    python3 reports/moe_compile_probe.py [--out FILE]

Run it on a machine with an NVIDIA GPU, PyTorch and Triton (the device
machine of the tool library has them; nothing else is needed). It writes
one JSON object (to FILE, default stdout): the host, the GPU, the versions,
and for each launch config and kernel, the first launch's wall time less a
warm launch's, per token count, in a fresh Triton cache (a trivial kernel
is compiled first, so that Triton's one-time start is not in the first
row). Run it again for another pass.

What it compiles: reports/moe_kernel.py's grouped GEMM over tokens sorted
by expert, written there (not vLLM's code) to the same plan as vLLM's
fused-MoE Triton kernel. The shapes are
Mixtral-8x7B's on two GPUs (8 experts, top 2, hidden 4096, intermediate
7168 per GPU: the gate-up GEMM N = 14336, K = 4096; the down GEMM
N = 4096, K = 7168), with the tile configs vLLM's tuned table for that
shape on an H100 gives the batches the validation run compiles at run
time (CONFIGS), each at token counts in the three alignment classes
kvsim counts (sim_measured_moe_variant: tokens ≡ 4, ≡ other, ≡ 0 mod 8).
Thirty compiles in all, each a row: kvsim charges two kernels a
variant at engine.measured.moe_jit_compile_ms each, so the rows' median
is the figure to set, and their spread says how much one value covers.

What it does not measure: vLLM's own kernel (its code has more branches;
the compile of a GEMM is mostly its tiling and software pipeline, which
these configs fix), nor vLLM's other first-use costs. A figure from it is
"a fused-MoE-shaped Triton kernel on this host", to be cited as such.
"""
import argparse
import os
import sys
import tempfile
import time

from gpu_host import cuda_device, emit, host

# A fresh cache before Triton is imported: every first launch compiles.
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="moe-probe-")

from moe_kernel import launch as moe_launch, sort_pairs, torch, triton

if triton:
    import triton.language as tl
else:
    class tl:  # noqa: N801 — only so that warm_up's annotations evaluate
        constexpr = None

E, TOPK, HIDDEN, INTER = 8, 2, 4096, 7168
# The tuned configs vLLM takes for Mixtral-8x7B at TP 2 on an H100
# (vllm/model_executor/layers/fused_moe/configs/E=8,N=7168,device_name=
# NVIDIA_H100_80GB_HBM3.json) at the batch keys of the passes that run
# outside the CUDA graphs (above 256 tokens, vLLM's capture limit
# min(2 × max_num_seqs, 512) at the run's max_num_seqs 128, up to its
# 2,048-token budget): the variants the validation run compiles while it
# serves. Each with token counts of that key in the three alignment
# classes kvsim counts (sim_measured_moe_variant: tokens ≡ 4, ≡ other,
# ≡ 0 mod 8).
CONFIGS = [
    {"key": 256, "BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 64, "num_warps": 4, "num_stages": 4,
     "tokens": [260, 261, 264]},
    {"key": 512, "BLOCK_M": 64, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 32, "num_warps": 4, "num_stages": 4,
     "tokens": [516, 517, 520]},
    {"key": 1024, "BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 16, "num_warps": 8, "num_stages": 4,
     "tokens": [1020, 1021, 1016]},
    {"key": 1536, "BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 64, "num_warps": 8, "num_stages": 4,
     "tokens": [1532, 1533, 1528]},
    {"key": 2048, "BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 32, "num_warps": 8, "num_stages": 4,
     "tokens": [2044, 2045, 2040]},
]


if triton:
    @triton.jit
    def warm_up(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def launch(cfg, gemm, tokens, dev):
    n, k = (2 * INTER, HIDDEN) if gemm == "gate_up" else (HIDDEN, INTER)
    top_k, mul = (TOPK, False) if gemm == "gate_up" else (1, True)
    rows = tokens if gemm == "gate_up" else tokens * TOPK
    a = torch.randn(rows, k, device=dev, dtype=torch.float16)
    b = torch.randn(E, n, k, device=dev, dtype=torch.float16)
    c = torch.empty(tokens * TOPK, n, device=dev, dtype=torch.float16)
    w = torch.rand(tokens * TOPK, device=dev, dtype=torch.float32)
    experts = torch.randint(0, E, (tokens * TOPK,), device=dev).tolist()
    routing = sort_pairs(experts, E, cfg["BLOCK_M"], dev)

    def run():
        torch.cuda.synchronize()
        t = time.perf_counter()
        moe_launch(cfg, a, b, c, w, routing, tokens * TOPK, top_k, mul)
        torch.cuda.synchronize()
        return time.perf_counter() - t
    first = run()
    warm = min(run() for _ in range(3))
    return 1e3 * (first - warm)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the JSON object here (default: stdout)")
    a = ap.parse_args()
    dev = cuda_device(torch if triton else None, "reports/moe_compile_probe.py",
                      "PyTorch and Triton (pip packages torch, triton; the device machine has them)")
    x = torch.zeros(16, device=dev)
    warm_up[(1,)](x, 16, BLOCK=16)
    torch.cuda.synchronize()
    rows = []
    for cfg in CONFIGS:
        for gemm in ("gate_up", "down"):
            for tokens in cfg["tokens"]:
                row = {"key": cfg["key"], "gemm": gemm, "tokens": tokens}
                try:  # one config the GPU cannot run (shared memory) must not lose the other rows
                    row["first_less_warm_ms"] = launch(cfg, gemm, tokens, dev)
                    print("key %4d %-7s tokens %d: %.1f ms" % (cfg["key"], gemm, tokens, row["first_less_warm_ms"]),
                          file=sys.stderr)
                except Exception as e:  # noqa: BLE001 — recorded in the row and the log
                    row["error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
                    print("key %4d %-7s tokens %d: %s" % (cfg["key"], gemm, tokens, row["error"]), file=sys.stderr)
                rows.append(row)
    out = {"about": "first launch less a warm launch of a fused-MoE-shaped Triton GEMM (reports/moe_compile_probe.py)",
           "host": host(torch, triton=triton.__version__), "configs": CONFIGS,
           "shapes": {"experts": E, "top_k": TOPK, "hidden": HIDDEN, "inter_per_gpu": INTER}, "rows": rows}
    emit(out, a.out)
    if all("error" in r for r in rows):
        sys.exit("reports/moe_compile_probe.py: no config compiled and ran (the rows' errors say why)")


if __name__ == "__main__":
    main()
