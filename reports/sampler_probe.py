#!/usr/bin/env python3
"""reports/sampler_probe.py — the GPU time of a vLLM-style sampler over a
batch's logits: the one operation of a decode step that the measured tables
(configs/optables/) do not time and kvsim's measured mode leaves inside its
fitted CPU constants (docs/measured.md §1).

    python3 reports/sampler_probe.py [--out FILE]

Run it on a machine with an NVIDIA GPU and PyTorch (the tool library's
device machine has them). It writes one JSON object (to FILE, default
stdout): the host, the GPU, the versions, and for each sampling mode, vocab
size and batch, the median GPU time of one sampling step over fresh bf16
logits (CUDA events around the step, after warm-up, several input sets
rotated so that no run reads its logits from the L2 cache). A short table
goes to stderr.

What it runs: PyTorch operations in the order vLLM V1's sampler applies them
to seqs × V logits (vllm/v1/sample/sampler.py and ops/topk_topp_sampler.py,
re-written here from their description, not copied):
  greedy    the logits to float32, then the argmax of each row;
  random    to float32, divided by the temperature, softmax, then one
            exponential draw per entry, the probabilities divided by it and
            the argmax (the exponential race: a categorical draw);
  top_p     to float32, temperature, each row sorted, the softmax of the
            sorted row and its running sum, the entries past p = 0.9 masked
            to -inf, scattered back to vocabulary order, then as random.
Vocabularies: 32,000 (Mixtral, Mistral), 128,256 (Llama-3) and 151,936
(Qwen3). Batches 1 to 256.

What it does not measure: vLLM's own code on vLLM's process (its FlashInfer
sampler where enabled, penalties, logprobs, structured output), nor the CPU
side of sampling. A figure from it is "PyTorch's sampler operations on that
GPU", to be cited as such.
"""
import argparse
import sys

from gpu_host import cuda_device, emit, host

try:
    import torch
except ImportError:  # --help still answers; main() says what is missing
    torch = None

VOCABS = [32000, 128256, 151936]
BATCHES = [1, 8, 32, 64, 128, 256]
MODES = ["greedy", "random", "top_p"]
TEMPERATURE, TOP_P, SETS, REPS = 0.7, 0.9, 4, 50


def race(probs):
    """A categorical draw per row: argmax of p / Exp(1) (the exponential race)."""
    q = torch.empty_like(probs).exponential_()
    return probs.div_(q).argmax(dim=-1)


def top_p_mask(logits):
    """Rows sorted ascending; the smallest entries whose probabilities sum
    to at most 1 − p are set to -inf (the largest entry always kept)."""
    sorted_logits, order = logits.sort(dim=-1, descending=False)
    cum = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    drop = cum <= 1 - TOP_P
    drop[:, -1] = False
    sorted_logits.masked_fill_(drop, float("-inf"))
    return sorted_logits.scatter(dim=-1, index=order, src=sorted_logits)


def step(mode, logits_bf16):
    logits = logits_bf16.to(torch.float32)
    if mode == "greedy":
        return logits.argmax(dim=-1)
    logits.div_(TEMPERATURE)
    if mode == "top_p":
        logits = top_p_mask(logits)
    return race(logits.softmax(dim=-1))


def check(dev):
    """The top-p mask keeps the smallest set of entries holding p of the
    mass, against a float64 reference on the CPU; greedy is the argmax."""
    x = torch.randn(4, 1000, device=dev)
    kept = torch.isfinite(top_p_mask(x.clone())).cpu()
    ref = x.double().cpu().softmax(dim=-1)
    for r in range(4):
        p, _ = ref[r].sort(descending=True)
        need = int((p.cumsum(0) < TOP_P).sum()) + 1  # entries until the mass reaches p
        if abs(int(kept[r].sum()) - need) > 1:
            sys.exit("reports/sampler_probe.py: the top-p mask kept %d entries of row %d, want %d"
                     % (int(kept[r].sum()), r, need))
    y = torch.randn(8, 32000, device=dev, dtype=torch.bfloat16)
    if not torch.equal(step("greedy", y).cpu(), y.float().cpu().argmax(dim=-1)):
        sys.exit("reports/sampler_probe.py: greedy is not the argmax")


def time_ms(mode, vocab, batch, dev):
    inputs = [torch.randn(batch, vocab, device=dev, dtype=torch.bfloat16) for _ in range(SETS)]
    for x in inputs:  # warm-up: allocator, kernel selection
        step(mode, x)
    torch.cuda.synchronize()
    times = []
    for i in range(REPS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step(mode, inputs[i % SETS])
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2], times[0], times[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the JSON object here (default: stdout)")
    a = ap.parse_args()
    dev = cuda_device(torch, "reports/sampler_probe.py")
    torch.manual_seed(0)
    check(dev)
    rows = []
    for mode in MODES:
        for vocab in VOCABS:
            for batch in BATCHES:
                med, lo, hi = time_ms(mode, vocab, batch, dev)
                rows.append({"mode": mode, "vocab": vocab, "batch": batch, "median_ms": med, "min_ms": lo,
                             "max_ms": hi})
                print("%-6s V %6d batch %3d: %.3f ms (%.3f..%.3f)" % (mode, vocab, batch, med, lo, hi),
                      file=sys.stderr)
    out = {"about": "GPU time of PyTorch sampler operations over bf16 logits (reports/sampler_probe.py)",
           "host": host(torch, cuda=torch.version.cuda), "temperature": TEMPERATURE, "top_p": TOP_P, "reps": REPS,
           "rows": rows}
    emit(out, a.out)


if __name__ == "__main__":
    main()
