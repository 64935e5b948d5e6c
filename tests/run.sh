#!/usr/bin/env bash
# tests/run.sh — run every cmocka test binary, then print one closing line.
#
# Each binary prints cmocka's own report; this script adds the totals across
# binaries ("tests: N passed, N failed, N skipped") and exits non-zero when any
# test failed or any binary crashed. KVSIM_TEST_JOBS=N runs N binaries at a
# time (default 1); reports are still printed whole and in the given order.
# A test named in KVSIM_TEST_WAITING (space-separated base names) mostly
# waits (tests/slurm.sh waits on Slurm's scheduler): it runs beside the N,
# not in one of their slots.
# The ten slowest binaries (KVSIM_TEST_SLOWEST=N: N) are printed with their
# wall times at the end, so that a slow suite shows where its time goes.
# Under CI (CI set, not "false"), a test that skips because a package is
# not installed ("skip: ... not installed") counts as a failure: .ci/run
# installs every Debian package a test uses, so such a skip means a
# package is missing from its list, not that the test cannot run there.
set -u
jobs=${KVSIM_TEST_JOBS:-1}
case $jobs in '' | *[!0-9]* | 0) echo "tests/run.sh: KVSIM_TEST_JOBS must be a positive integer, not '$jobs'" >&2; exit 2 ;; esac
slowest=${KVSIM_TEST_SLOWEST:-10}
case $slowest in '' | *[!0-9]*) echo "tests/run.sh: KVSIM_TEST_SLOWEST must be a count, not '$slowest'" >&2; exit 2 ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-run-XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
bins=("$@")
passed=0; failed=0; skipped=0; crashed=(); ciskips=(); next=0
in_ci=""; [ -n "${CI:-}" ] && [ "${CI}" != false ] && in_ci=1

# Print and count the reports of binaries 'next'.. that have finished, in order.
report() {
  while [ "$next" -lt ${#bins[@]} ] && [ -e "$tmp/$next.rc" ]; do
    local bin=${bins[$next]} out rc run p s f
    out=$(cat "$tmp/$next.out"); rc=$(cat "$tmp/$next.rc")
    echo "== $(basename "$bin")"
    printf '%s\n' "$out"
    run=$(printf '%s\n' "$out" | sed -n 's/^\[==========\] \([0-9]*\) test(s) run\..*/\1/p' | tail -1)
    p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\..*/\1/p' | tail -1)
    s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test(s).*/\1/p' | tail -1)
    f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:.*/\1/p' | tail -1)
    next=$((next + 1))
    if [ "$in_ci" ]; then
      while IFS= read -r line; do ciskips+=("$(basename "$bin"): $line"); done \
        < <(printf '%s\n' "$out" | grep -E 'skip: .*not installed|is not installed\)|SKIPPED .*not installed' || true)
    fi
    if [ -z "$run" ]; then crashed+=("$(basename "$bin") (exit $rc)"); continue; fi
    passed=$((passed + ${p:-0})); skipped=$((skipped + ${s:-0})); failed=$((failed + ${f:-0}))
    [ "$rc" -ne 0 ] && [ -z "$f" ] && crashed+=("$(basename "$bin") (exit $rc)")
  done
}

waiting=" ${KVSIM_TEST_WAITING:-} "
waiters=() # pids of the waiting tests, outside the count
running() {
  local n; n=$(jobs -rp | wc -l)
  for p in "${waiters[@]}"; do kill -0 "$p" 2>/dev/null && n=$((n - 1)); done
  echo "$n"
}
for i in "${!bins[@]}"; do
  ( t0=$(date +%s.%N); "${bins[$i]}" >"$tmp/$i.out" 2>&1; rc=$?
    echo "$(date +%s.%N) $t0 $(basename "${bins[$i]}")" | awk '{ printf "%8.1f s  %s\n", $1 - $2, $3 }' >"$tmp/$i.time"
    echo $rc >"$tmp/$i.rc.tmp"; mv "$tmp/$i.rc.tmp" "$tmp/$i.rc" ) &
  case $waiting in *" $(basename "${bins[$i]}") "*) waiters+=($!) ;; esac
  while [ "$(running)" -ge "$jobs" ]; do wait -n; report; done
  report
done
wait
report
echo "slowest test binaries (wall):"
cat "$tmp"/*.time 2>/dev/null | sort -rn | head -"$slowest"
for c in "${crashed[@]}"; do echo "crashed: $c"; done
for c in "${ciskips[@]}"; do echo "CI skipped for want of a package (add it to .ci/run): $c"; done
failed=$((failed + ${#crashed[@]} + ${#ciskips[@]}))
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
