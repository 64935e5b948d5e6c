#!/usr/bin/env python3
"""reports/validate_fit.py — fit the production-engine constants that a bare
GPU cannot measure (docs/validation.md): the CPU time per iteration
(engine.iter_overhead_ms), per scheduled sequence per iteration
(engine.seq_overhead_ms) and the API server's latency per request
(engine.frontend_ms), on the dense training runs of a measurements file.
With --mode measured the same three constants of the measured mode
(engine.measured.*, cost.compute = measured: GPU time from the measured
per-operation tables, docs/measured.md) are fitted, on every run of the
file by default (Mixtral included).

The objective is the sum over the named experiments of the squared relative
errors of mean end-to-end latency, mean inter-token latency and mean TTFT,
each prediction made by `kvsim validate` itself (so the fit sees the same
simulation the users do): the mean over its draws of each workload (8 by
default, --draws N; docs/validation.md section 2). Gauss-Newton with a finite-difference Jacobian,
parameters kept >= 0; a handful of steps converge since the model is close
to linear in these constants (each step is halved until it lowers the cost). Prints the fitted values, the residuals per
run and metric, and the `--set` line that reproduces them.

usage: python3 reports/validate_fit.py [--kvsim build/kvsim]
           [--measurements validation/vllm-h100-train.json] [--ids ID,ID,...]
           [--start ITER,SEQ,FRONT] [--steps N] [--mode engine|measured] [--loss l2|l1]
           [--draws N]
Standard library only.
"""
import argparse
import json
import subprocess
import sys

KEYS = ("engine.iter_overhead_ms", "engine.seq_overhead_ms", "engine.frontend_ms")
MEASURED_KEYS = ("engine.measured.iter_overhead_ms", "engine.measured.seq_overhead_ms", "engine.measured.frontend_ms")
METRICS = (("e2e_ms", "mean"), ("itl_ms", "mean"), ("ttft_ms", "mean"))
DENSE = ("llama3.1-8b-tp1-general-mnbt2048-run16", "llama3.1-8b-tp1-general-mnbt1024-run22",
         "qwen3-14b-tp1-general-mnbt2048-run13")


def predict(args, theta, ident):
    sets = ["--set", f"cost.compute={args.mode}"]
    for k, v in zip(args.keys, theta):
        sets += ["--set", f"{k}={v:.6f}"]
    cmd = [args.kvsim, "validate", "--measurements", args.measurements, "--only", ident, "--json"] + sets
    if args.draws:
        cmd += ["--draws", str(args.draws)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    row = json.loads(out)["experiments"][0]
    if row["status"] != "ok":
        sys.exit(f"validate_fit: {ident}: {row['status']}: {row.get('why')}")
    return row


def all_ids(path):
    with open(path, encoding="utf-8") as f:
        return [x["id"] for x in json.load(f)["experiments"]]


def residuals(args, theta):
    r, rows = [], []
    for ident in args.ids:
        row = predict(args, theta, ident)
        rows.append(row)
        for m, s in METRICS:
            r.append(row["mpe"][m][s] / 100)
    return r, rows


def loss(args, r):
    """l2: the sum of squared relative errors; l1: the sum of their absolute
    values, which one residual that the fitted constants cannot explain
    (a start-up effect, not a per-iteration cost) does not dominate."""
    return sum(x * x for x in r) if args.loss == "l2" else sum(abs(x) for x in r)


def weights(args, r):
    """Iteratively reweighted least squares: l1 as weighted l2 with 1/|r|."""
    return [1.0] * len(r) if args.loss == "l2" else [1.0 / max(abs(x), 0.005) for x in r]


def solve(a, b):
    """Gaussian elimination with partial pivoting for a small dense system."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda i: abs(m[i][c]))
        m[c], m[p] = m[p], m[c]
        if abs(m[c][c]) < 1e-300:
            return [0.0] * n
        for i in range(c + 1, n):
            f = m[i][c] / m[c][c]
            for j in range(c, n + 1):
                m[i][j] -= f * m[c][j]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (m[i][n] - sum(m[i][j] * x[j] for j in range(i + 1, n))) / m[i][i]
    return x


def step(args, theta):
    r0, _ = residuals(args, theta)
    jac = []
    for k in range(len(theta)):
        h = max(1e-3, abs(theta[k]) * 1e-2)
        t = list(theta)
        t[k] += h
        rk, _ = residuals(args, t)
        jac.append([(x - y) / h for x, y in zip(rk, r0)])
    w = weights(args, r0)
    jtj = [[sum(w[n] * jac[i][n] * jac[j][n] for n in range(len(r0))) for j in range(len(theta))]
           for i in range(len(theta))]
    jtr = [-sum(w[n] * jac[i][n] * r0[n] for n in range(len(r0))) for i in range(len(theta))]
    for i in range(len(theta)):
        jtj[i][i] *= 1 + 1e-6  # a touch of damping
    d = solve(jtj, jtr)
    cost0, alpha = loss(args, r0), 1.0
    while alpha > 1e-3:  # halve the step until it lowers the cost (a line search)
        cand = [max(0.0, t + alpha * x) for t, x in zip(theta, d)]
        rc, _ = residuals(args, cand)
        if loss(args, rc) < cost0:
            return cand, cost0
        alpha /= 2
    return theta, cost0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kvsim", default="build/kvsim")
    ap.add_argument("--measurements", default="validation/vllm-h100-train.json")
    ap.add_argument("--ids", default=None, help="default: the dense runs (engine), every run (measured)")
    ap.add_argument("--mode", choices=("engine", "measured"), default="engine")
    ap.add_argument("--loss", choices=("l2", "l1"), default=None, help="default: l2 (engine), l1 (measured)")
    ap.add_argument("--start", default="1,0.05,20")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--draws", type=int, default=0, help="workload draws per prediction (default: kvsim validate's)")
    args = ap.parse_args()
    args.keys = KEYS if args.mode == "engine" else MEASURED_KEYS
    args.loss = args.loss or ("l2" if args.mode == "engine" else "l1")
    if args.ids is None:
        args.ids = ",".join(DENSE) if args.mode == "engine" else ",".join(all_ids(args.measurements))
    args.ids = [i for i in args.ids.split(",") if i]
    theta = [float(x) for x in args.start.split(",")]
    for n in range(args.steps):
        theta, cost = step(args, theta)
        print(f"step {n + 1}: " + ", ".join(f"{k} = {v:.4f}" for k, v in zip(args.keys, theta)) + f"  (cost before {cost:.6f})")
    # The defaults carry three decimals, and the replays' means move with the
    # last digits (a shallow optimum): the table is what the rounded values,
    # the ones a user sets, give.
    r_fit, _ = residuals(args, theta)
    theta = [round(v, 3) for v in theta]
    r, rows = residuals(args, theta)
    print("\nfitted: " + " ".join(f"--set {k}={v:.3f}" for k, v in zip(args.keys, theta)))
    print(f"loss ({args.loss}) of the relative errors: {loss(args, r):.6f} at these values, "
          f"{loss(args, r_fit):.6f} at the fit's own (unrounded)\n")
    print("| run | metric | measured | kvsim | error |")
    print("|---|---|---|---|---|")
    for row in rows:
        for m, s in METRICS:
            print(f"| {row['id']} | {m} {s} | {row['measured'][m][s]:.2f} | {row['predicted'][m][s]:.2f} | "
                  f"{row['mpe'][m][s]:+.1f}% |")


if __name__ == "__main__":
    main()
