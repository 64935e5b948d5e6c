"""reports/moe_kernel.py — the fused-MoE-shaped Triton GEMM that the MoE
probes share (reports/moe_compile_probe.py times its compiles,
reports/moe_probe.py its runs), and the routing it reads.

The kernel is written here (not vLLM's code) to the same plan as vLLM's
fused-MoE Triton kernel: a block of token-expert pairs sorted by expert and
that block's expert (blocks past the sorted pairs return at once), a tiled
product over K with tl.dot, the weights' columns wrapped modulo N and K
unmasked where the tile divides it (as in Triton's matrix-product
tutorial), the routing weight multiplied in on the second GEMM, integer arguments N, K, EM (the padded
sorted length) and the count of valid pairs, which Triton specializes on
divisibility by 16. A pair p is token p // TOP_K's j-th choice (p = token ×
top-k + j), as in vLLM's flattened top-k ids.

Importing this module imports Triton: a caller that wants a fresh compile
cache sets TRITON_CACHE_DIR first.
"""
try:
    import torch
    import triton
    import triton.language as tl
except ImportError:  # --help still answers; the probes' main() says what is missing
    torch = triton = None

    class tl:  # noqa: N801 — only so that the kernel's annotations evaluate
        constexpr = None

TUNING = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")


def _moe_gemm(a_ptr, b_ptr, c_ptr, w_ptr, sorted_ptr, expert_ptr, post_ptr, N, K, EM, num_valid,
             stride_am, stride_ak, stride_be, stride_bn, stride_bk, stride_cm, stride_cn,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
             TOP_K: tl.constexpr, MUL_W: tl.constexpr, EVEN_K: tl.constexpr):
    pid = tl.program_id(0)
    pid_ms, pid_ns = tl.cdiv(EM, BLOCK_M), tl.cdiv(N, BLOCK_N)
    group = GROUP_M * pid_ns
    first = (pid // group) * GROUP_M
    size = tl.minimum(pid_ms - first, GROUP_M)
    pid_m = first + (pid % group) % size
    pid_n = (pid % group) // size
    if pid_m * BLOCK_M >= tl.load(post_ptr):  # a block past the sorted pairs: nothing to do
        return
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    tok = tl.load(sorted_ptr + offs_m, mask=offs_m < EM, other=num_valid)
    valid = tok < num_valid
    e = tl.load(expert_ptr + pid_m)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_bn = offs_n % N  # columns past N read a valid row, never stored: no mask on the weights' loads
    offs_k = tl.arange(0, BLOCK_K)
    a = a_ptr + (tok[:, None] // TOP_K) * stride_am + offs_k[None, :] * stride_ak
    b = b_ptr + e * stride_be + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN_K:
            x = tl.load(a, mask=valid[:, None], other=0.0)
            y = tl.load(b)
        else:
            kk = k * BLOCK_K + offs_k
            x = tl.load(a, mask=valid[:, None] & (kk[None, :] < K), other=0.0)
            y = tl.load(b, mask=kk[:, None] < K, other=0.0)
        acc += tl.dot(x, y)
        a += BLOCK_K * stride_ak
        b += BLOCK_K * stride_bk
    if MUL_W:
        w = tl.load(w_ptr + tok, mask=valid, other=0.0)
        acc = acc * w[:, None]
    c = c_ptr + tok[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=valid[:, None] & (offs_n[None, :] < N))


moe_gemm = triton.jit(_moe_gemm) if triton else None


def sort_pairs(experts, n_experts, block_m, dev):
    """The pairs (a flat list of each pair's expert, pair p = token × top-k
    + j) sorted by expert, each expert's run padded to a whole block
    (padding ids = the count of pairs), and each block's expert; the padded
    length EM, bounded as vLLM's launch sizes it (pairs + experts ×
    (block_m − 1)); and, on the device, the sorted length itself, past
    which the kernel's blocks return at once (vLLM's
    num_tokens_post_padded)."""
    pairs = len(experts)
    ids, blocks = [], []
    for x in range(n_experts):
        mine = [p for p, e in enumerate(experts) if e == x]
        pad = (-len(mine)) % block_m
        ids += mine + [pairs] * pad
        blocks += [x] * ((len(mine) + pad) // block_m)
    post = len(ids)
    em = pairs + n_experts * (block_m - 1)
    ids += [pairs] * (em - len(ids))
    blocks += [0] * (-(-em // block_m) - len(blocks))
    i32 = {"device": dev, "dtype": torch.int32}
    return torch.tensor(ids, **i32), torch.tensor(blocks, **i32), em, torch.tensor([post], **i32)


def launch(cfg, a, b, c, w, routing, pairs, top_k, mul_w):
    """One launch of the kernel under cfg (BLOCK_M, BLOCK_N, BLOCK_K,
    GROUP_M, num_warps, num_stages): c[pair] = a[pair // top_k] · b[expert]ᵀ
    (× w[pair] when mul_w) for the pairs of routing (sort_pairs' four
    values); b is [experts, N, K]."""
    ids, blocks, em, post = routing
    n, k = b.shape[1], b.shape[2]
    grid = (triton.cdiv(em, cfg["BLOCK_M"]) * triton.cdiv(n, cfg["BLOCK_N"]),)
    moe_gemm[grid](a, b, c, w, ids, blocks, post, n, k, em, pairs, a.stride(0), a.stride(1), b.stride(0),
                   b.stride(1), b.stride(2), c.stride(0), c.stride(1), TOP_K=top_k, MUL_W=mul_w,
                   EVEN_K=k % cfg["BLOCK_K"] == 0, num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
                   **{key: cfg[key] for key in TUNING})
