#!/usr/bin/env bash
# tests/run.sh — run every cmocka test binary, then print one closing line.
#
# Each binary prints cmocka's own report; this script adds the totals across
# binaries ("tests: N passed, N failed, N skipped") and exits non-zero when any
# test failed or any binary crashed.
set -u
passed=0; failed=0; skipped=0; crashed=()
for bin in "$@"; do
  echo "== $(basename "$bin")"
  out=$("$bin" 2>&1); rc=$?
  printf '%s\n' "$out"
  run=$(printf '%s\n' "$out" | sed -n 's/^\[==========\] \([0-9]*\) test(s) run\..*/\1/p' | tail -1)
  p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\..*/\1/p' | tail -1)
  s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test(s).*/\1/p' | tail -1)
  f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:.*/\1/p' | tail -1)
  if [ -z "$run" ]; then crashed+=("$(basename "$bin") (exit $rc)"); continue; fi
  passed=$((passed + ${p:-0})); skipped=$((skipped + ${s:-0})); failed=$((failed + ${f:-0}))
  [ "$rc" -ne 0 ] && [ -z "$f" ] && crashed+=("$(basename "$bin") (exit $rc)")
done
for c in "${crashed[@]}"; do echo "crashed: $c"; done
failed=$((failed + ${#crashed[@]}))
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
