#!/bin/sh
# reports/device_checks.sh — the checks prepared for a lent GPU, in one call
# (the tool library's device machine: PyTorch, Triton, no package registry):
#
#   reports/device_checks.sh [CHECK...]     (default: every check)
#
#   moe_compile  reports/moe_compile_probe.py   Triton's compile time of the
#                fused-MoE variants the Mixtral validation run compiles while
#                serving (docs/validation.md §1)
#   gemm         reports/gemm_probe.py   cuBLAS bf16 GEMMs at Llama-3.1-8B's
#                shapes, against the bundled tables (docs/measured.md §3)
#   sampler      reports/sampler_probe.py   the sampler's GPU time by mode,
#                vocabulary and batch (docs/measured.md §1)
#   gemm_70b     reports/gemm_probe.py --shapes llama3-70b-tp4   one GPU's
#                GEMMs of Llama-3 70B on four (docs/measured.md §3)
#   gemm_mixtral reports/gemm_probe.py --shapes mixtral-8x7b-tp2   one GPU's
#                attention and LM-head GEMMs of Mixtral-8x7B on two
#   moe          reports/moe_probe.py   one fused-MoE layer's time at
#                Mixtral-8x7B's two-GPU shapes (docs/measured.md §3)
#   attention    reports/attention_probe.py   prefill attention through
#                PyTorch's backends (docs/measured.md §3)
#
# Writes CHECK.json for each check, their logs one after another in
# checks.log and the GPU's state in gpu.csv under $OUT (default
# build/device: a device call brings back at most 8 files) and prints the
# log's end last. Each check runs even when another fails; the exit status is the
# first failure's, 2 for a name that is no check.
set -u
out=${OUT:-build/device}
all="moe_compile gemm sampler gemm_70b gemm_mixtral moe attention"
checks=${*:-$all}
for c in $checks; do
    case " $all " in
    *" $c "*) ;;
    *) echo "reports/device_checks.sh: '$c' is no check (checks: $all)" >&2; exit 2 ;;
    esac
done
mkdir -p "$out"
: >"$out/checks.log"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv \
    >"$out/gpu.csv" 2>&1
status=0
for c in $checks; do
    case $c in
    moe_compile) set -- reports/moe_compile_probe.py ;;
    gemm) set -- reports/gemm_probe.py ;;
    sampler) set -- reports/sampler_probe.py ;;
    gemm_70b) set -- reports/gemm_probe.py --shapes llama3-70b-tp4 ;;
    gemm_mixtral) set -- reports/gemm_probe.py --shapes mixtral-8x7b-tp2 ;;
    moe) set -- reports/moe_probe.py ;;
    attention) set -- reports/attention_probe.py ;;
    esac
    start=$(date +%s)
    echo "== $c" >>"$out/checks.log"
    python3 "$@" --out "$out/$c.json" 2>>"$out/checks.log"
    rc=$?
    echo "$c ($*): exit $rc in $(($(date +%s) - start)) s" >>"$out/gpu.csv"
    [ "$status" -eq 0 ] && status=$rc
done
cat "$out/gpu.csv"
tail -n 150 "$out/checks.log"
exit "$status"
