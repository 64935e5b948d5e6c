#!/usr/bin/env bash
# tests/slurm-cluster.sh — a throw-away single-node Slurm cluster on this
# host, for tests/slurm.sh and tests/bench.sh (sourced, never run): munged,
# slurmctld and slurmd started from Debian's munge and slurm-wlm packages
# with a generated config in a temporary folder (one node with 2 CPUs, one
# partition, proctrack/linuxproc, task/none, no accounting; the setup of
# docs/slurm.md), and stopped by the PIDs it started.
#
#   slurm_cluster_why_not        prints why no cluster can start here (exit 1), or nothing
#   slurm_cluster_start DIR      starts it in DIR, exports SLURM_CONF; 0 once the node is idle
#   slurm_cluster_stop           stops every daemon slurm_cluster_start started (trap it)

slurm_cluster_pids=()

slurm_cluster_why_not() {
  [ "$(id -u)" -eq 0 ] || { echo "not root: the Slurm daemons must start as root"; return 1; }
  local b
  for b in munged slurmctld slurmd sbatch squeue scontrol scancel; do
    command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] ||
      { echo "$b not installed (apt-get install -y slurm-wlm munge)"; return 1; }
  done
  return 0
}

# A TCP port nobody listens on (the probe: bash's /dev/tcp connect fails).
slurm_cluster_port() {
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 30000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
  done
  return 1
}

slurm_cluster_config() {
  local dir=$1 ctl slurmd
  ctl=$(slurm_cluster_port) && slurmd=$(slurm_cluster_port) || return 1
  mkdir -p "$dir/state" "$dir/spool"
  cat >"$dir/slurm.conf" <<CONF
ClusterName=kvsimtest
SlurmctldHost=localhost
SlurmctldPort=$ctl
SlurmdPort=$slurmd
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerParameters=sched_interval=1
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
MpiDefault=none
NodeName=kvsim1 NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=kvsim1 Default=YES MaxTime=INFINITE State=UP
CONF
}

slurm_cluster_start() {
  local dir=$1 sbin=/usr/sbin
  slurm_cluster_config "$dir" || { echo "no free TCP port" >&2; return 1; }
  export SLURM_CONF=$dir/slurm.conf
  dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none && chmod 0400 "$dir/munge.key"
  "$sbin/munged" -F --force --socket="$dir/munge.sock" --key-file="$dir/munge.key" --pid-file="$dir/munged.pid" \
    --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" >"$dir/munged.out" 2>&1 &
  slurm_cluster_pids+=($!)
  for _ in $(seq 50); do [ -S "$dir/munge.sock" ] && break; sleep 0.1; done
  "$sbin/slurmctld" -D -c -f "$SLURM_CONF" >"$dir/slurmctld.out" 2>&1 &
  slurm_cluster_pids+=($!)
  "$sbin/slurmd" -D -f "$SLURM_CONF" -N kvsim1 >"$dir/slurmd.out" 2>&1 &
  slurm_cluster_pids+=($!)
  for _ in $(seq 100); do
    [ "$(sinfo -h -n kvsim1 -o %t 2>/dev/null)" = idle ] && return 0
    sleep 0.2
  done
  echo "the single-node cluster did not come up; logs in $dir:" >&2
  tail -n 5 "$dir"/*.log "$dir"/*.out >&2
  return 1
}

slurm_cluster_stop() {
  local i
  # jobs first (a job step outlives its slurmd otherwise), then the daemons
  if [ ${#slurm_cluster_pids[@]} -gt 0 ]; then
    scancel --user="$(id -u)" 2>/dev/null
    for _ in $(seq 50); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.1; done
  fi
  for ((i = ${#slurm_cluster_pids[@]} - 1; i >= 0; i--)); do
    kill "${slurm_cluster_pids[$i]}" 2>/dev/null && wait "${slurm_cluster_pids[$i]}" 2>/dev/null
  done
  slurm_cluster_pids=()
}
