#!/bin/sh
# reports/device_checks.sh — the checks prepared for a lent GPU, in one call
# (the tool library's device machine: PyTorch, Triton, no package registry):
#
#   reports/moe_compile_probe.py   Triton's compile time of the fused-MoE
#                                  variants the Mixtral validation run
#                                  compiles while serving (docs/validation.md §1)
#   reports/gemm_probe.py          cuBLAS bf16 GEMMs at Llama-3.1-8B's shapes,
#                                  against the bundled tables (docs/measured.md §3)
#   reports/sampler_probe.py       the sampler's GPU time by mode, vocabulary
#                                  and batch (docs/measured.md §1)
#
# Writes moe.json, gemm.json, sampler.json, their logs and the GPU's state
# under $OUT (default build/device) and prints the tables last. Each probe
# runs even when another fails; the exit status is the first failure's.
set -u
out=${OUT:-build/device}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv \
    >"$out/gpu.csv" 2>&1
status=0
for probe in moe_compile:moe gemm:gemm sampler:sampler; do
    script=reports/${probe%%:*}_probe.py
    name=${probe##*:}
    python3 "$script" --out "$out/$name.json" 2>"$out/$name.log"
    rc=$?
    echo "$script: exit $rc" >>"$out/gpu.csv"
    [ "$status" -eq 0 ] && status=$rc
done
cat "$out/gpu.csv"
for name in moe gemm sampler; do
    echo "== $name.log"
    tail -n 60 "$out/$name.log"
done
exit "$status"
