#!/bin/sh
# reports/device_checks.sh — the checks prepared for a lent GPU, in one call
# (the tool library's device machine: PyTorch, Triton, no package registry):
#
#   reports/moe_compile_probe.py   Triton's compile time of the fused-MoE
#                                  variants the Mixtral validation run
#                                  compiles while serving (docs/validation.md §1)
#   reports/sampler_probe.py       the sampler's GPU time by mode, vocabulary
#                                  and batch (docs/measured.md §1)
#
# Writes moe.json, sampler.json, their logs and the GPU's state under $OUT
# (default build/device) and prints the tables last. Each probe runs even
# when the other fails; the exit status is the first failure's.
set -u
out=${OUT:-build/device}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv \
    >"$out/gpu.csv" 2>&1
python3 reports/moe_compile_probe.py --out "$out/moe.json" 2>"$out/moe.log"
moe=$?
python3 reports/sampler_probe.py --out "$out/sampler.json" 2>"$out/sampler.log"
sampler=$?
cat "$out/gpu.csv"
echo "== reports/moe_compile_probe.py (exit $moe)"
tail -n 40 "$out/moe.log"
echo "== reports/sampler_probe.py (exit $sampler)"
tail -n 60 "$out/sampler.log"
[ "$moe" -ne 0 ] && exit "$moe"
exit "$sampler"
