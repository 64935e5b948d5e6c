#!/usr/bin/env python3
"""reports/attention_probe.py — prefill (context) attention's GPU time on
a lent GPU, to check the bundled tables' context_attention rows
(configs/optables/CARD/context_attention.csv.gz, measured elsewhere by
AIConfigurator timing vLLM's FlashAttention backend) against the card at
hand: docs/measured.md §3.

    python3 reports/attention_probe.py [--out FILE]

Run it on a machine with an NVIDIA GPU and PyTorch (the tool library's
device machine has it). It writes one JSON object (to FILE, default
stdout): the host, the GPU, the versions, and for each head shape, prompt
length and PyTorch attention backend, the time of one causal attention of
a batch of one prompt over itself (no cached prefix), bf16, head size 128:
torch.nn.functional.scaled_dot_product_attention under
torch.nn.attention.sdpa_kernel(backend), with grouped KV heads
(enable_gqa), or the KV heads repeated where a backend refuses that
(the row's `gqa` says which). Head shapes: Llama-3.1-8B on one GPU (32
query and 8 KV heads) and Mixtral-8x7B on two (16 and 4 a GPU).

Each time is the median of REPS replays of a CUDA graph of the call
(`how`: graph), or, where capture fails, of REPS timings of LOOP calls
back to back between CUDA events (`how`: loop). Before timing, each
backend's output at 512 tokens is checked against the math backend in
float32 (relative error).

What it does not measure: vLLM's kernels (FlashAttention 3 on Hopper,
through vLLM's own build), its paged KV cache and the writes into it, or
decode attention. A figure from it is "PyTorch's BACKEND attention on this
card", to be cited as such: how far the tables are from what stock kernels
reach here, not a second measurement of vLLM.
"""
import argparse
import sys

from gpu_host import cuda_device, emit, event_times, host

try:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError:  # --help still answers; main() says what is missing
    torch = None

SHAPES = {"llama3.1-8b": (32, 8), "mixtral-8x7b-tp2": (16, 4)}
HEAD_DIM = 128
ISL = [512, 1024, 2048, 4096, 8192, 16384]
BACKENDS = ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION")
REPS, WARM, LOOP = 15, 3, 10


def inputs(heads, kv_heads, isl, dev, dtype=None):
    dtype = dtype or torch.bfloat16
    q = torch.randn(1, heads, isl, HEAD_DIM, device=dev, dtype=dtype)
    k = torch.randn(1, kv_heads, isl, HEAD_DIM, device=dev, dtype=dtype)
    v = torch.randn(1, kv_heads, isl, HEAD_DIM, device=dev, dtype=dtype)
    return q, k, v


def call(backend, q, k, v, gqa):
    """The attention under one backend; gqa False repeats the KV heads."""
    if not gqa:
        rep = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    with sdpa_kernel(getattr(SDPBackend, backend)):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)


def runnable(backend, q, k, v):
    """(gqa, output) for the first way the backend accepts, or None."""
    for gqa in (True, False):
        try:
            out = call(backend, q, k, v, gqa)
            torch.cuda.synchronize()
            return gqa, out
        except (RuntimeError, NotImplementedError, ValueError):
            continue
    return None


def median_ms(fn):
    """(median ms, how): graph replays, or back-to-back calls if capture fails."""
    for _ in range(WARM):
        fn()
    torch.cuda.synchronize()
    try:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        run, per, how = g.replay, 1, "graph"
    except RuntimeError:
        torch.cuda.synchronize()
        run, per, how = (lambda: [fn() for _ in range(LOOP)]), LOOP, "loop"
    return event_times(torch, run, REPS, WARM, per)[REPS // 2], how


def check(dev):
    """Each backend at 512 tokens against the math backend in float32."""
    errors = {}
    for name, (heads, kv_heads) in SHAPES.items():
        q, k, v = inputs(heads, kv_heads, 512, dev)
        ref = call("MATH", q.float(), k.float(), v.float(), False)
        for backend in BACKENDS:
            got = runnable(backend, q, k, v)
            if got is None:
                continue
            err = float((got[1].float() - ref).norm() / ref.norm())
            errors["%s %s" % (name, backend)] = err
            print("check %s %s: relative error %.2e" % (name, backend, err), file=sys.stderr)
            if not err < 2e-2:
                sys.exit("reports/attention_probe.py: %s %s: relative error %g against float32, want < 2e-2" % (
                    name, backend, err))
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the JSON object here (default: stdout)")
    a = ap.parse_args()
    dev = cuda_device(torch, "reports/attention_probe.py")
    torch.manual_seed(0)
    errors = check(dev)
    rows = []
    for name, (heads, kv_heads) in SHAPES.items():
        for isl in ISL:
            q, k, v = inputs(heads, kv_heads, isl, dev)
            for backend in BACKENDS:
                row = {"shape": name, "heads": heads, "kv_heads": kv_heads, "head_dim": HEAD_DIM, "batch": 1,
                       "isl": isl, "backend": backend}
                way = runnable(backend, q, k, v)
                if way is None:
                    row["error"] = "the backend refused this shape"
                else:
                    row["gqa"] = way[0]
                    row["ms"], row["how"] = median_ms(lambda: call(backend, q, k, v, way[0]))
                rows.append(row)
                print("%-17s isl %5d %-19s %s" % (name, isl, backend, "%.4f ms (%s)" % (row["ms"], row["how"])
                                                   if "ms" in row else row["error"]), file=sys.stderr)
            del q, k, v
    out = {"about": "causal prefill attention through PyTorch's SDPA backends (reports/attention_probe.py)",
           "host": host(torch), "check_relative_error": errors, "rows": rows}
    emit(out, a.out)
    if not any("ms" in r for r in rows):
        sys.exit("reports/attention_probe.py: no backend ran (the rows say why)")


if __name__ == "__main__":
    main()
