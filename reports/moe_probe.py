#!/usr/bin/env python3
"""reports/moe_probe.py — one fused-MoE layer's GPU time on a lent GPU at
Mixtral-8x7B's two-GPU shapes, to check the bundled tables' MoE rows
(configs/optables/CARD/moe.csv.gz, measured elsewhere by AIConfigurator
timing vLLM's fused_experts) against the card at hand: docs/measured.md §3.

    python3 reports/moe_probe.py [--tokens LIST] [--out FILE]

Run it on a machine with an NVIDIA GPU, PyTorch and Triton (the tool
library's device machine has them). It writes one JSON object (to FILE,
default stdout): the host, the GPU, the versions, and for each token count
the time of one layer's experts as vLLM's fused_experts runs them:

  gate-up   reports/moe_kernel.py's grouped GEMM, tokens × top 2 pairs by
            the [8, 14336, 4096] gate-up weights (7,168 of intermediate a GPU);
  act       SiLU of the gate half times the up half (PyTorch: vLLM fuses
            them into one kernel);
  down      the same GEMM by the [8, 4096, 7168] down weights, each pair's
            routing weight multiplied in;
  sum       the two pairs of each token added (PyTorch).

Routing is the tables' `balanced` rows': token t's j-th expert is
(t + j·s) mod 8 with s = ⌈8 / 2⌉ = 4, or ⌊t·s/M + j·s⌋ mod 8 for M < s
tokens (AIConfigurator's balanced_logits), the pairs sorted by expert on
the host beforehand: vLLM's moe_align_block_size, a GPU kernel of a few
microseconds, is not timed. Tile configs are vLLM's tuned ones for this
shape on an H200 (H200_CONFIGS), the key nearest to the token count taken,
as vLLM's try_get_optimal_moe_config takes it.

Three times per token count, each the median of REPS:
  layer_graph_ms  the four steps captured in a CUDA graph, replayed;
  gemms_graph_ms  the two GEMMs alone, likewise;
  eager_ms        the four steps launched from Python, CUDA events around
                  6 runs after 3 warm-ups, divided by 6 (the collector's way).
Weights are 1.4 GB, far past L2, so every run reads them from HBM.
Before timing, the layer's output at two token counts is checked against a
float32 reference (relative error, every element written).

What it does not measure: vLLM's own kernel (reports/moe_kernel.py is
written to its plan, with its configs), its alignment kernel, or routing
other than balanced. A figure from it is "a fused-MoE-shaped Triton layer on
this card", to be cited as such.
"""
import argparse
import math
import sys

from gpu_host import cuda_device, emit, event_times, host
from moe_kernel import launch, sort_pairs, torch, triton

E, TOPK, HIDDEN, INTER = 8, 2, 4096, 7168
# vLLM's tuned fused-MoE configs for E=8, N=7168 on an H200
# (vllm/model_executor/layers/fused_moe/configs/E=8,N=7168,device_name=
# NVIDIA_H200.json at commit c6991a3bffc217a79a1c2413da13be7ce923dbf0, the
# file configs/vllm/fused_moe_configs.json indexes): batch key ->
# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages).
H200_CONFIGS = {
    1: (16, 128, 128, 64, 4, 5), 2: (16, 128, 256, 16, 4, 3), 4: (16, 128, 128, 32, 8, 4),
    8: (32, 128, 128, 1, 4, 3), 16: (16, 128, 128, 16, 4, 5), 24: (16, 64, 256, 16, 4, 3),
    32: (16, 128, 128, 1, 4, 5), 48: (32, 128, 128, 1, 4, 5), 64: (32, 128, 128, 1, 4, 4),
    96: (64, 128, 128, 1, 8, 4), 128: (64, 128, 128, 1, 8, 4), 256: (128, 256, 64, 1, 8, 4),
    512: (128, 256, 64, 32, 8, 4), 1024: (128, 256, 64, 64, 8, 4), 1536: (128, 256, 64, 16, 8, 4),
    2048: (128, 256, 64, 16, 8, 4), 3072: (128, 256, 64, 64, 8, 4), 4096: (128, 256, 64, 16, 8, 3),
}
FIELDS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
# The tables' token counts (the collector's list) up to 8,192.
TOKENS = [1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192]
CHECK_TOKENS = (16, 300)
REPS, WARM, EAGER_RUNS = 15, 3, 6


def config(tokens):
    """vLLM's choice: the config of the key nearest to the token count."""
    key = min(H200_CONFIGS, key=lambda k: abs(k - tokens))
    return key, dict(zip(FIELDS, H200_CONFIGS[key]))


def balanced(tokens):
    """Each pair's expert, pair p = token × TOPK + j (AIConfigurator's
    balanced_logits: the experts a token is given, which its top-k then
    picks)."""
    s = math.ceil(E / TOPK)
    if tokens >= s:
        return [(t + j * s) % E for t in range(tokens) for j in range(TOPK)]
    return [int(t * s / tokens + j * s) % E for t in range(tokens) for j in range(TOPK)]


class Layer:
    """One layer's buffers and its steps at a token count."""

    def __init__(self, w1, w2, tokens, dev):
        self.key, self.cfg = config(tokens)
        self.experts = balanced(tokens)
        self.pairs = tokens * TOPK
        self.routing = sort_pairs(self.experts, E, self.cfg["BLOCK_M"], dev)
        self.w1, self.w2, self.tokens = w1, w2, tokens
        self.x = torch.randn(tokens, HIDDEN, device=dev, dtype=torch.bfloat16)
        self.rw = torch.full((self.pairs,), 1.0 / TOPK, device=dev, dtype=torch.float32)
        self.c1 = torch.empty(self.pairs, 2 * INTER, device=dev, dtype=torch.bfloat16)
        self.c2 = torch.empty(self.pairs, INTER, device=dev, dtype=torch.bfloat16)
        self.c3 = torch.empty(self.pairs, HIDDEN, device=dev, dtype=torch.bfloat16)
        self.out = torch.empty(tokens, HIDDEN, device=dev, dtype=torch.bfloat16)

    def gemms(self):
        launch(self.cfg, self.x, self.w1, self.c1, self.rw, self.routing, self.pairs, TOPK, False)
        launch(self.cfg, self.c2, self.w2, self.c3, self.rw, self.routing, self.pairs, 1, True)

    def run(self):
        launch(self.cfg, self.x, self.w1, self.c1, self.rw, self.routing, self.pairs, TOPK, False)
        torch.mul(torch.nn.functional.silu(self.c1[:, :INTER]), self.c1[:, INTER:], out=self.c2)
        launch(self.cfg, self.c2, self.w2, self.c3, self.rw, self.routing, self.pairs, 1, True)
        torch.sum(self.c3.view(self.tokens, TOPK, HIDDEN), dim=1, out=self.out)

    def reference(self):
        """The layer in float32, expert by expert."""
        ref = torch.zeros(self.tokens, HIDDEN, device=self.x.device, dtype=torch.float32)
        ex = torch.tensor(self.experts, device=self.x.device)
        for e in range(E):
            pairs = (ex == e).nonzero().flatten()
            if len(pairs) == 0:
                continue
            rows = pairs // TOPK
            h = self.x[rows].float() @ self.w1[e].float().t()
            g = torch.nn.functional.silu(h[:, :INTER]) * h[:, INTER:]
            g = g.to(torch.bfloat16).float()  # the kernel's intermediate is bf16
            ref.index_add_(0, rows, (g @ self.w2[e].float().t()) / TOPK)
        return ref


def graph_ms(fn):
    """Median, least and most of REPS replays of fn captured in a graph."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    times = event_times(torch, g.replay, REPS, WARM)
    return times[REPS // 2], times[0], times[-1]


def eager_ms(fn):
    """The collector's way: events around EAGER_RUNS launches after WARM."""
    times = []
    for _ in range(REPS):
        for _ in range(WARM):
            fn()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(EAGER_RUNS):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / EAGER_RUNS)
    return sorted(times)[REPS // 2]


def check(w1, w2, dev):
    """The layer against its float32 reference at CHECK_TOKENS; exit 1 if off."""
    out = {}
    for tokens in CHECK_TOKENS:
        layer = Layer(w1, w2, tokens, dev)
        layer.out.fill_(float("nan"))
        layer.run()
        torch.cuda.synchronize()
        ref = layer.reference()
        got = layer.out.float()
        if torch.isnan(got).any():
            sys.exit("reports/moe_probe.py: %d tokens: some outputs were never written" % tokens)
        err = float((got - ref).norm() / ref.norm())
        print("check %d tokens: relative error %.2e" % (tokens, err), file=sys.stderr)
        if not err < 3e-2:
            sys.exit("reports/moe_probe.py: %d tokens: relative error %g against float32, want < 3e-2" % (tokens, err))
        out[str(tokens)] = err
    return out


def parse_tokens(text):
    try:
        tokens = [int(x) for x in text.split(",")]
        if min(tokens) < 1:
            raise ValueError
    except ValueError:
        print("reports/moe_probe.py: --tokens: '%s' is not a list of positive integers" % text, file=sys.stderr)
        sys.exit(2)
    return tokens


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the JSON object here (default: stdout)")
    ap.add_argument("--tokens", help="comma list of token counts (default: the tables' up to 8,192)")
    a = ap.parse_args()
    tokens_list = parse_tokens(a.tokens) if a.tokens else TOKENS
    dev = cuda_device(torch if triton else None, "reports/moe_probe.py",
                      "PyTorch and Triton (pip packages torch, triton; the device machine has them)")
    torch.manual_seed(0)
    w1 = torch.randn(E, 2 * INTER, HIDDEN, device=dev, dtype=torch.bfloat16).mul_(0.02)
    w2 = torch.randn(E, HIDDEN, INTER, device=dev, dtype=torch.bfloat16).mul_(0.02)
    errors = check(w1, w2, dev)
    rows = []
    for tokens in tokens_list:
        layer = Layer(w1, w2, tokens, dev)
        row = {"tokens": tokens, "key": layer.key, "config": layer.cfg, "experts_touched": len(set(layer.experts))}
        row["layer_graph_ms"], row["layer_graph_min_ms"], row["layer_graph_max_ms"] = graph_ms(layer.run)
        row["gemms_graph_ms"] = graph_ms(layer.gemms)[0]
        row["eager_ms"] = eager_ms(layer.run)
        rows.append(row)
        print("tokens %5d (key %4d): layer %.4f ms in a graph (GEMMs %.4f), %.4f eager" % (
            tokens, layer.key, row["layer_graph_ms"], row["gemms_graph_ms"], row["eager_ms"]), file=sys.stderr)
        del layer
    out = {"about": "one fused-MoE layer at Mixtral-8x7B's two-GPU shapes, balanced routing (reports/moe_probe.py)",
           "host": host(torch, triton=triton.__version__),
           "shapes": {"experts": E, "top_k": TOPK, "hidden": HIDDEN, "inter_per_gpu": INTER, "dtype": "bfloat16"},
           "configs": "vllm/model_executor/layers/fused_moe/configs/E=8,N=7168,device_name=NVIDIA_H200.json",
           "check_relative_error": errors, "rows": rows}
    emit(out, a.out)


if __name__ == "__main__":
    main()
