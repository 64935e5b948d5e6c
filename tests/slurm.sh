#!/usr/bin/env bash
# tests/slurm.sh — `kvsim sweep --slurm` and `kvsim plan slo --slurm` against
# a real single-node Slurm cluster started on this host for the test
# (tests/slurm-cluster.sh: munged, slurmctld, slurmd from Debian's munge and
# slurm-wlm packages, a generated config in a temporary folder, every
# daemon stopped by its PID on exit). Skipped, with the reason, where the
# daemons cannot start (not root, packages missing).
#
# Checks: a sweep through Slurm, one of its array tasks cancelled while it
# waits, fails that point only; run again it submits that point alone; its
# runs equal a local `kvsim sweep --jobs 2` by config hash and summary; a
# stopped sweep cancels its array; `plan slo --slurm` answers exactly as the
# local search. Prints cmocka-style lines for tests/run.sh.
set -u
cd "$(dirname "$0")/.."
kvsim=$(realpath "${KVSIM_BIN:-build/kvsim}")
source tests/slurm-cluster.sh
run=0 failed=0 names=()

if ! why=$(slurm_cluster_why_not); then
  echo "[==========] 1 test(s) run."
  echo "[  SKIPPED ] 1 test(s), listed below:"
  echo "[  SKIPPED ] slurm: $why"
  exit 0
fi
command -v sqlite3 >/dev/null || {
  echo "[==========] 1 test(s) run."
  echo "[  SKIPPED ] 1 test(s), listed below:"
  echo "[  SKIPPED ] slurm: sqlite3 not installed (apt-get install -y sqlite3)"
  exit 0
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-slurm-XXXXXX")
trap 'slurm_cluster_stop; rm -rf "$tmp"' EXIT
slurm_cluster_start "$tmp/cluster" || { echo "[  FAILED  ] 1 test(s), listed below:"; echo "[  FAILED  ] slurm: cluster"; exit 1; }

fail() { echo "$1: $2" >&2; return 1; }

# Every run of a database as "config hash, trace fingerprint, summary" (no wall time).
runs_of() {
  sqlite3 "$1" "SELECT config_hash, trace_fingerprint, json_remove(summary_json, '\$.wall_seconds', '\$.run_id')
                FROM runs ORDER BY config_hash"
}

# Wait (10 s at most) for a line matching $2 in file $1; print its job id.
job_of() {
  for _ in $(seq 100); do
    sed -n 's/.*submitted Slurm array job \([0-9]*\).*/\1/p' "$1" | head -1 | grep . && return 0
    sleep 0.1
  done
  return 1
}

w="$tmp/dir with space%"
mkdir -p "$w" && head -n 40 traces/default.jsonl >"$w/t.jsonl"
grid='policy.router=random,least_loaded,round_robin;trace.speed=1,2'

test_sweep_resume_equals_local() {
  "$kvsim" sweep --jobs 2 --trace "$w/t.jsonl" --grid "$grid" --db "$w/local.db" >/dev/null 2>&1 || fail local "exit $?" || return 1
  # one task at a time (%1): the last one is still pending when cancelled
  "$kvsim" sweep --slurm --jobs 1 --trace "$w/t.jsonl" --grid "$grid" --db "$w/slurm.db" >"$w/1.out" 2>"$w/1.err" &
  local pid=$! job rc
  job=$(job_of "$w/1.err") || fail submit "no job id in $(cat "$w/1.err")" || return 1
  scancel "${job}_5"
  wait $pid; rc=$?
  [ $rc -eq 1 ] || fail "first sweep" "exit $rc, not 1: $(cat "$w/1.err")" || return 1
  grep -q "6 points: 5 run, 0 already recorded, 1 failed" "$w/1.out" || fail "first sweep" "$(cat "$w/1.out")" || return 1
  grep -q "FAILED policy.router=round_robin trace.speed=2 (Slurm task ${job}_5" "$w/1.err" || fail "first sweep" "$(cat "$w/1.err")" || return 1
  "$kvsim" sweep --slurm --trace "$w/t.jsonl" --grid "$grid" --db "$w/slurm.db" >"$w/2.out" 2>"$w/2.err" || fail resume "exit $?: $(cat "$w/2.err")" || return 1
  grep -q "6 points, 5 already recorded, running 1 on Slurm" "$w/2.err" || fail resume "$(cat "$w/2.err")" || return 1
  grep -q "submitted Slurm array job [0-9]*: 1 points" "$w/2.err" || fail resume "$(cat "$w/2.err")" || return 1
  [ "$(runs_of "$w/slurm.db")" = "$(runs_of "$w/local.db")" ] || fail compare "Slurm and local runs differ" || return 1
  [ "$(runs_of "$w/local.db" | wc -l)" -eq 6 ] || fail compare "not 6 runs" || return 1
  [ ! -e "$w/slurm.db.parts" ] || fail parts "$(ls "$w/slurm.db.parts") left behind"
}

test_stop_cancels_array() {
  "$kvsim" sweep --slurm --jobs 1 --trace "$w/t.jsonl" --grid "$grid" --set trace.limit=30 --db "$w/stop.db" >/dev/null 2>"$w/3.err" &
  local pid=$! job rc
  job=$(job_of "$w/3.err") || fail submit "no job id in $(cat "$w/3.err")" || return 1
  kill -TERM $pid
  wait $pid; rc=$?
  [ $rc -eq 143 ] || fail stop "exit $rc, not 143: $(cat "$w/3.err")" || return 1
  grep -q "the Slurm arrays cancelled; run the same sweep again" "$w/3.err" || fail stop "$(cat "$w/3.err")" || return 1
  for _ in $(seq 50); do [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && return 0; sleep 0.1; done
  fail stop "array job $job still queued"
}

test_plan_slo_equals_local() {
  local a=(plan slo --trace traces/default.jsonl --speed 2 --ttft-p90-ms 2000 --tbt-p99-ms 50 --max-instances 6
           --scopes global,local --cpp 1 --dram 1TB --json)
  "$kvsim" "${a[@]}" --db "$w/plan-local.db" >"$w/plan-local.json" 2>/dev/null || fail local "exit $?" || return 1
  "$kvsim" "${a[@]}" --slurm --db "$w/plan-slurm.db" >"$w/plan-slurm.json" 2>"$w/plan.err" || fail slurm "exit $?: $(tail -3 "$w/plan.err")" || return 1
  # one array per probe and one per confirmed candidate (its seeds x workloads)
  local arrays=$(( $(grep -c "plan slo: probe " "$w/plan.err") + $(grep -c "plan slo: confirming " "$w/plan.err") ))
  [ "$(grep -c "submitted Slurm array job" "$w/plan.err")" -eq "$arrays" ] || fail slurm "not $arrays arrays: $(cat "$w/plan.err")" || return 1
  grep -q '"recommended": {' "$w/plan-slurm.json" || fail slurm "no recommendation: $(cat "$w/plan-slurm.json")" || return 1
  local strip='s/"wall_seconds": *[-0-9.e+]*//'
  [ "$(sed "$strip" "$w/plan-slurm.json")" = "$(sed "$strip" "$w/plan-local.json")" ] ||
    fail compare "answers differ: $(cat "$w/plan-slurm.json") vs $(cat "$w/plan-local.json")" || return 1
  grep -q '"status": "feasible"' "$w/plan-local.json" || fail local "not feasible: $(cat "$w/plan-local.json")"
}

tests=(test_sweep_resume_equals_local test_stop_cancels_array test_plan_slo_equals_local)
echo "[==========] Running ${#tests[@]} test(s)."
for t in "${tests[@]}"; do
  echo "[ RUN      ] $t"
  run=$((run + 1))
  if "$t"; then echo "[       OK ] $t"; else echo "[  FAILED  ] $t"; failed=$((failed + 1)); names+=("$t"); fi
done
echo "[==========] $run test(s) run."
echo "[  PASSED  ] $((run - failed)) test(s)."
if [ $failed -gt 0 ]; then
  echo "[  FAILED  ] $failed test(s), listed below:"
  for n in "${names[@]}"; do echo "[  FAILED  ] $n"; done
  exit 1
fi
