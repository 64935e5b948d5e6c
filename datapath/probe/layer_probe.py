#!/usr/bin/env python3
"""datapath/probe/layer_probe.py — time one transformer layer on a GPU.

The compute side of kvsim's cost model (prefill FLOPs at an assumed MFU,
memory-bound decode: docs/cost-model.md) checked against a measurement.
For each model preset (configs/models/NAME.json) it builds ONE decoder
layer of the LLaMA/Qwen shape with random bf16 weights on one GPU and times:

  prefill  a forward pass of `new` tokens over a cached prefix of `cached`
           tokens: RMSNorm, fused QKV projection, RoPE, the new K/V written
           behind the prefix, causal attention over prefix + new tokens
           (lower-right aligned), output projection, RMSNorm, SwiGLU MLP,
           residuals;
  decode   one step of `batch` requests each holding `context` tokens of KV:
           the same layer on one token per request, attention over its context;
  head     the final RMSNorm and LM head over `batch` tokens (prefill
           computes it for the last token only: batch 1);
  e2e      for --e2e MODEL, the whole model (every layer with its own
           weights, then the head): one prefill of --e2e-tokens tokens and one
           decode step at that context, so a one-request TTFT/TBT is measured
           rather than summed from layers.

Every point runs under a CUDA graph when capture works (else eagerly; the JSON
says which), after warm-up, timed with CUDA events around `inner` replays;
the median of --reps such timings is reported (milliseconds). The device's
two ceilings are measured first: a bf16 8192^3 matrix product and a 1 GiB
device-to-device copy. Output: one JSON document (--out), a short table on
stdout. Needs only Python 3 and PyTorch with CUDA: it runs on a GPU machine
with no package registry. `kvsim calibrate --layers-json FILE` reads the JSON.

The FFN width and vocabulary come from the presets' `intermediate` and
`vocab` (each model's public config.json on Hugging Face, cited in the
preset's "about").
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

PREFILL_NEW = [128, 512, 1024, 2048, 4096, 8192, 16384, 32768]
PREFILL_CACHED = [0, 2048, 8192, 32768]
DECODE_BATCH = [1, 2, 4, 8, 16, 32, 64, 128, 256]
DECODE_CONTEXT = [512, 2048, 8192, 32768]
DECODE_KV_TOKENS_MAX = 1 << 21  # batch x context cap: 8 GiB of K/V per layer at 4 KiB/token


def parse_args(argv):
    p = argparse.ArgumentParser(description="Time one transformer layer (prefill, decode, head) per model preset on a GPU; write JSON.")
    p.add_argument("--models", default="llama3.1-8b,llama3-70b,qwen2.5-32b", help="comma list of configs/models/NAME.json presets")
    p.add_argument("--configs", default="configs/models", help="folder of the model presets")
    p.add_argument("--out", required=True, help="JSON output file")
    p.add_argument("--reps", type=int, default=7, help="timings per point, median reported (default 7)")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs before capture (default 2)")
    p.add_argument("--min-ms", type=float, default=3.0, help="each timing spans at least this long (default 3 ms)")
    p.add_argument("--e2e", default="llama3.1-8b", help="model to run whole for one request ('' = none)")
    p.add_argument("--e2e-tokens", type=int, default=4096, help="prompt tokens of the whole-model request")
    p.add_argument("--max-seconds", type=float, default=300, help="stop adding points after this long (the JSON says truncated)")
    p.add_argument("--quick", action="store_true", help="a few points per model (a smoke test)")
    a = p.parse_args(argv)
    if a.reps < 1 or a.warmup < 1:
        p.error("--reps and --warmup must be at least 1")
    return a


def load_model(folder, name):
    path = os.path.join(folder, name + ".json")
    with open(path) as f:
        m = json.load(f)
    for k in ("layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab"):
        if k not in m:
            sys.exit(f"layer_probe: {path}: key '{k}' missing (kvsim model import writes it from a config.json)")
    m["name"], m["ffn"] = name, m["intermediate"]
    return m


class Timer:
    """Graph capture (when it works), warm-up, then the median of `reps`
    event-timed spans of `inner` replays each."""

    def __init__(self, torch, args):
        self.torch, self.args = torch, args

    def capture(self, fn, graph):
        """Warm up eagerly; a pass that takes under 5 ms is then captured in a
        CUDA graph (launch gaps would otherwise count), a longer one runs
        eagerly (its launches hide behind the kernels)."""
        torch = self.torch
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(self.args.warmup):
                fn()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        if graph is False or (graph is None and self.span(fn, 1) >= 5.0):
            return None, fn, False
        try:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                fn()
            torch.cuda.synchronize()
            return g, g.replay, True
        except Exception as e:  # capture refused: time it eagerly
            torch.cuda.synchronize()
            print(f"  (no graph: {type(e).__name__}: {str(e)[:80]})", flush=True)
            return None, fn, False

    def span(self, run, inner):
        torch = self.torch
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(inner):
            run()
        b.record()
        b.synchronize()
        return a.elapsed_time(b) / inner

    def time(self, fn, graph=None):
        """graph: True always captures, False never, None when a pass is short."""
        g, run, graphed = self.capture(fn, graph)
        once = self.span(run, 1)
        inner = max(1, min(200, math.ceil(self.args.min_ms / max(once, 1e-3))))
        ms = statistics.median(self.span(run, inner) for _ in range(self.args.reps))
        del g
        return ms, graphed


class Layer:
    """One decoder layer's weights (random bf16) and its two passes."""

    def __init__(self, torch, m, dev):
        self.torch, self.m = torch, m
        d, H, KV, hd, F = m["hidden"], m["heads"], m["kv_heads"], m["head_dim"], m["ffn"]
        bf = torch.bfloat16
        r = lambda *s: torch.randn(*s, device=dev, dtype=bf) * 0.02  # noqa: E731
        self.wqkv, self.wo = r(d, (H + 2 * KV) * hd), r(H * hd, d)
        self.wgu, self.wd = r(d, 2 * F), r(F, d)
        self.n1 = torch.ones(d, device=dev, dtype=bf)
        self.n2 = torch.ones(d, device=dev, dtype=bf)
        self.sizes = (H * hd, KV * hd, KV * hd)

    def rms(self, x, w):
        t = self.torch
        return (x.float() * t.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * w

    def rope(self, x, cos, sin):
        h = x.shape[-1] // 2
        x1, x2 = x[..., :h], x[..., h:]
        return self.torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    def qkv(self, x, cos, sin):
        m = self.m
        q, k, v = (self.rms(x, self.n1) @ self.wqkv).split(self.sizes, dim=-1)
        q = self.rope(q.view(-1, m["heads"], m["head_dim"]), cos, sin)
        k = self.rope(k.view(-1, m["kv_heads"], m["head_dim"]), cos, sin)
        return q, k, v.view(-1, m["kv_heads"], m["head_dim"])

    def mlp(self, x, a):
        t = self.torch
        h = x + a.reshape(x.shape[0], -1) @ self.wo
        g, u = (self.rms(h, self.n2) @ self.wgu).chunk(2, dim=-1)
        return h + (t.nn.functional.silu(g) * u) @ self.wd


def rope_tables(torch, hd, positions, dev):
    inv = 1.0 / (500000.0 ** (torch.arange(0, hd, 2, device=dev, dtype=torch.float32) / hd))
    f = positions.float()[:, None] * inv[None, :]
    return f.cos().to(torch.bfloat16)[:, None, :], f.sin().to(torch.bfloat16)[:, None, :]


FLASH = {"ok": False}


def flash(torch, q, K, V):
    """q [1, T, H, hd] after S - T cached tokens, K/V [1, S, KV, hd] ->
    [1, T, H, hd]: FlashAttention-2 as serving engines call it (GQA without
    repeating K/V; causal aligned bottom-right, so the T new tokens see the
    whole prefix and skip the masked blocks)."""
    return torch.ops.aten._flash_attention_forward(q, K, V, None, None, q.shape[1], K.shape[1], 0.0, True, False)[0]


def check_flash(torch, dev):
    """Compare flash() with a float32 reference on random inputs with a
    prefix (T = 64 new after 128 cached); use it only if it matches."""
    T, S, H, KV, hd = 64, 192, 8, 2, 128
    q = torch.randn(1, T, H, hd, device=dev, dtype=torch.bfloat16)
    K, V = (torch.randn(1, S, KV, hd, device=dev, dtype=torch.bfloat16) for _ in range(2))
    try:
        out = flash(torch, q, K, V).float()
    except Exception as e:
        FLASH.update(ok=False, error=f"{type(e).__name__}: {str(e)[:160]}")
        return
    Kf, Vf = (x.float().repeat_interleave(H // KV, dim=2).transpose(1, 2) for x in (K, V))
    s = q.float().transpose(1, 2) @ Kf.transpose(-1, -2) / math.sqrt(hd)
    keep = torch.arange(S, device=dev)[None, :] <= torch.arange(T, device=dev)[:, None] + (S - T)
    ref = (s.masked_fill(~keep, float("-inf")).softmax(-1) @ Vf).transpose(1, 2)
    err = float((out - ref).norm() / ref.norm())
    FLASH.update(ok=err < 2e-2, rel_err=err)


def attention(torch, q, K, V, causal):
    """Decode (causal False): q [B, H, 1, hd] over K, V [B, KV, S, hd].
    Prefill (causal True): q [1, T, H, hd] over K, V [1, S, KV, hd], the
    last T of the S tokens being the new ones. Returns (out, path)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if causal and FLASH["ok"]:
        return flash(torch, q, K, V), "flash_bottom_right"
    # Never the math backend: it materialises the scores (and, with GQA, the
    # repeated K/V), which no serving engine does.
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION]):
        if causal:
            o, how = sdpa_causal(torch, q.transpose(1, 2), K.transpose(1, 2), V.transpose(1, 2))
            return o.transpose(1, 2), how
        return sdpa_decode(torch, q, K, V)


def sdpa_decode(torch, q, K, V):
    F = torch.nn.functional
    try:
        return F.scaled_dot_product_attention(q, K, V, enable_gqa=True), "sdpa_gqa"
    except Exception:
        B, H, T, hd = q.shape
        KV = K.shape[1]
        s = (q.view(B, KV, H // KV * T, hd) @ K.transpose(-1, -2)) / math.sqrt(hd)
        return (s.float().softmax(-1).to(q.dtype) @ V).view(B, H, T, hd), "bmm"


def sdpa_causal(torch, q, K, V):
    """The fallback when flash() is unusable: q [1, H, T, hd], K/V [1, KV, S, hd]."""
    F = torch.nn.functional
    G = q.shape[1] // K.shape[1]
    if q.shape[2] == K.shape[2]:
        try:
            return F.scaled_dot_product_attention(q, K, V, is_causal=True, enable_gqa=True), "sdpa_causal_gqa"
        except Exception:
            pass
    from torch.nn.attention.bias import causal_lower_right

    Ke, Ve = K.repeat_interleave(G, dim=1), V.repeat_interleave(G, dim=1)
    return F.scaled_dot_product_attention(q, Ke, Ve, attn_mask=causal_lower_right(q.shape[2], K.shape[2])), "sdpa_lower_right"


def prefill_fn(torch, L, new, cached, dev):
    m = L.m
    x = torch.randn(new, m["hidden"], device=dev, dtype=torch.bfloat16)
    n = cached + new
    K = torch.randn(1, n, m["kv_heads"], m["head_dim"], device=dev, dtype=torch.bfloat16)
    V = torch.randn_like(K)
    cos, sin = rope_tables(torch, m["head_dim"], torch.arange(cached, n, device=dev), dev)
    how = {}

    def fn():
        q, k, v = L.qkv(x, cos, sin)
        K[0, cached:] = k
        V[0, cached:] = v
        a, how["attn"] = attention(torch, q.unsqueeze(0), K, V, True)
        return L.mlp(x, a[0])

    return fn, how


def decode_fn(torch, L, batch, context, dev):
    m = L.m
    x = torch.randn(batch, m["hidden"], device=dev, dtype=torch.bfloat16)
    K = torch.randn(batch, m["kv_heads"], context, m["head_dim"], device=dev, dtype=torch.bfloat16)
    V = torch.randn_like(K)
    cos, sin = rope_tables(torch, m["head_dim"], torch.full((batch,), context - 1, device=dev), dev)
    how = {}

    def fn():
        q, k, v = L.qkv(x, cos, sin)
        K[:, :, context - 1] = k
        V[:, :, context - 1] = v
        a, how["attn"] = attention(torch, q.unsqueeze(2), K, V, False)
        return L.mlp(x, a.squeeze(2))

    return fn, how


def head_fn(torch, m, batch, dev, w):
    x = torch.randn(batch, m["hidden"], device=dev, dtype=torch.bfloat16)
    n = torch.ones(m["hidden"], device=dev, dtype=torch.bfloat16)

    def fn():
        h = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * n
        return h @ w

    return fn


def peaks(torch, timer, dev):
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    mm, _ = timer.time(lambda: a @ b)
    src = torch.randn(1 << 29, device=dev, dtype=torch.bfloat16)  # 1 GiB
    dst = torch.empty_like(src)
    cp, _ = timer.time(lambda: dst.copy_(src))
    return {"bf16_matmul_8192_TFLOPs": 2 * 8192**3 / (mm * 1e-3) / 1e12, "d2d_copy_1GiB_GBps": 2 * src.numel() * 2 / (cp * 1e-3) / 1e9}


def grid(args):
    if args.quick:
        return [(512, 0), (4096, 0), (4096, 8192)], [(1, 2048), (64, 2048)]
    pre = [(n, c) for c in PREFILL_CACHED for n in PREFILL_NEW if n + c <= 65536]
    dec = [(b, c) for c in DECODE_CONTEXT for b in DECODE_BATCH if b * c <= DECODE_KV_TOKENS_MAX]
    return pre, dec


def point(torch, timer, build, rec, label, out, free):
    """Time one point; a failure (out of memory, a refused kernel) is
    recorded in the point and the sweep goes on."""
    try:
        fn, how = build()
        ms, graphed = timer.time(fn)
        rec.update(ms=round(ms, 5), graph=graphed, **how)
        del fn
    except Exception as e:
        torch.cuda.synchronize()
        rec["error"], ms = f"{type(e).__name__}: {str(e)[:160]}", float("nan")
    out.append(rec)
    keys = " ".join(f"{k}={v}" for k, v in rec.items() if k not in ("ms", "graph", "attn", "error"))
    print(f"  {label:<9} {keys:<28} {ms:10.4f} ms {rec.get('attn', '')} {rec.get('error', '')}", flush=True)
    free()


def probe_model(torch, timer, m, args, dev, t0):
    L = Layer(torch, m, dev)
    w = torch.randn(m["hidden"], m["vocab"], device=dev, dtype=torch.bfloat16) * 0.02
    res = {k: m[k] for k in ("name", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab")}
    res.update(prefill=[], decode=[], head=[], truncated=False)
    pre, dec = grid(args)
    free = torch.cuda.empty_cache
    for b in DECODE_BATCH if not args.quick else [1, 64]:
        point(torch, timer, lambda: (head_fn(torch, m, b, dev, w), {}), {"batch": b}, "head", res["head"], free)
    for new, cached in pre:
        if time.time() - t0 > args.max_seconds:
            res["truncated"] = True
            break
        point(torch, timer, lambda: prefill_fn(torch, L, new, cached, dev), {"new": new, "cached": cached}, "prefill", res["prefill"], free)
    for batch, ctx in dec:
        if time.time() - t0 > args.max_seconds:
            res["truncated"] = True
            break
        point(torch, timer, lambda: decode_fn(torch, L, batch, ctx, dev), {"batch": batch, "context": ctx}, "decode", res["decode"], free)
    return res


def e2e(torch, timer, m, tokens, dev):
    """The whole model for one request: prefill of `tokens`, then one decode
    step at context tokens + 1 (both through every layer and the head)."""
    layers = [Layer(torch, m, dev) for _ in range(m["layers"])]
    w = torch.randn(m["hidden"], m["vocab"], device=dev, dtype=torch.bfloat16) * 0.02
    pf = [prefill_fn(torch, L, tokens, 0, dev)[0] for L in layers]
    df = [decode_fn(torch, L, 1, tokens + 1, dev)[0] for L in layers]
    h1 = head_fn(torch, m, 1, dev, w)

    def prefill():
        for f in pf:
            f()
        h1()

    def step():
        for f in df:
            f()
        h1()

    p_ms, pg = timer.time(prefill, graph=False)
    d_ms, dg = timer.time(step, graph=True)
    r = {"model": m["name"], "tokens": tokens, "ttft_ms": round(p_ms, 4), "tbt_ms": round(d_ms, 4), "prefill_graph": pg, "decode_graph": dg}
    print(f"  e2e {m['name']}: prefill {tokens} tokens {p_ms:.3f} ms, decode step {d_ms:.4f} ms", flush=True)
    return r


def device_info(torch):
    p = torch.cuda.get_device_properties(0)
    return {
        "name": p.name,
        "sms": p.multi_processor_count,
        "memory_GiB": round(p.total_memory / 2**30, 1),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
    }


def write(doc, path):
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(path + ".tmp", path)


def main(argv):
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("skip: layer_probe needs PyTorch (python3 -c 'import torch' failed)")
        return 0
    if not torch.cuda.is_available():
        print("skip: layer_probe needs a CUDA GPU (torch.cuda.is_available() is False)")
        return 0
    models = [load_model(args.configs, n) for n in args.models.split(",") if n]
    dev, t0 = torch.device("cuda"), time.time()
    torch.manual_seed(7)
    timer = Timer(torch, args)
    doc = {"kind": "kvsim-layer-probe", "version": 1, "device": device_info(torch)}
    doc["method"] = {"reps": args.reps, "warmup": args.warmup, "min_ms": args.min_ms, "timer": "CUDA events, median of reps, graph replay when captured", "dtype": "bf16"}
    doc["peaks"] = peaks(torch, timer, dev)
    check_flash(torch, dev)
    doc["flash_check"] = dict(FLASH)
    print(f"flash attention with a prefix: {FLASH}", flush=True)
    print(f"device {doc['device']['name']}: bf16 matmul {doc['peaks']['bf16_matmul_8192_TFLOPs']:.0f} TFLOP/s, d2d copy {doc['peaks']['d2d_copy_1GiB_GBps']:.0f} GB/s", flush=True)
    doc["models"] = []
    for m in models:
        print(f"model {m['name']}", flush=True)
        try:
            doc["models"].append(probe_model(torch, timer, m, args, dev, t0))
        except Exception as e:
            doc["models"].append({"name": m["name"], "error": f"{type(e).__name__}: {e}"})
            print(f"  failed: {e}", flush=True)
        torch.cuda.empty_cache()
        write(doc, args.out)
    if args.e2e:
        try:
            doc["e2e"] = [e2e(torch, timer, load_model(args.configs, args.e2e), args.e2e_tokens, dev)]
        except Exception as e:
            doc["e2e"] = [{"model": args.e2e, "error": f"{type(e).__name__}: {e}"}]
            print(f"  e2e failed: {e}", flush=True)
    doc["wall_s"] = round(time.time() - t0, 1)
    write(doc, args.out)
    print(f"wrote {args.out} ({doc['wall_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
