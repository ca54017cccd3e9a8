#!/usr/bin/env bash
# A single-node Slurm cluster in a directory, for the Slurm tests: munged, slurmctld and
# slurmd from Debian's packages, started without systemd, stopped by their pid files.
#
#   cluster.sh start DIR   make DIR, start the daemons, wait until the node is idle
#   cluster.sh stop DIR    cancel every job, stop the daemons, fail if any is left
#   cluster.sh env DIR     print the line that points Slurm's commands at DIR
#                          (eval "$(cluster.sh env DIR)")
#
# Environment: TK_SLURM_PORT (slurmctld's port, slurmd takes the next; default: the
# first free pair from 6817), TK_SLURM_CPUS (CPUs the node offers, default 4: more than
# the cores, so that array tasks and MPI ranks run side by side on a small machine),
# TK_SLURM_START_TIMEOUT (seconds to wait for the idle node, default 60).
set -euo pipefail

prog=cluster.sh
die() { echo "$prog: error: $*" >&2; exit 1; }

usage() { echo "usage: $prog start|stop|env DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1
dir=$2
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
marker=$dir/.tk-slurm-cluster

# The unix socket of munged must fit sockaddr_un (108 bytes with the NUL).
check_dir() {
  local sock=$dir/munge/munge.socket
  [ ${#sock} -lt 100 ] || die "directory path too long for munge's socket: ${#sock} bytes ($sock)"
}

require_tools() {
  local t missing=()
  for t in munged slurmctld slurmd sinfo sbatch squeue scontrol scancel srun; do
    command -v "$t" >/dev/null 2>&1 || missing+=("$t")
  done
  [ ${#missing[@]} -eq 0 ] ||
    die "not installed: ${missing[*]} (scripts/install-deps.sh installs slurm-wlm and munge)"
}

port_in_use() { ss -Htln "sport = :$1" | grep -q .; }

pick_ports() {
  if [ -n "${TK_SLURM_PORT:-}" ]; then
    ctl_port=$TK_SLURM_PORT
  else
    ctl_port=6817
    while port_in_use "$ctl_port" || port_in_use $((ctl_port + 1)); do
      ctl_port=$((ctl_port + 2))
      [ "$ctl_port" -lt 6900 ] || die "no free port pair between 6817 and 6899"
    done
  fi
  d_port=$((ctl_port + 1))
  ! port_in_use "$ctl_port" || die "port $ctl_port is in use (TK_SLURM_PORT)"
  ! port_in_use "$d_port" || die "port $d_port is in use (TK_SLURM_PORT + 1)"
}

write_conf() {
  local host
  host=$(hostname -s)
  cat >"$dir/slurm.conf" <<EOF
ClusterName=tk
SlurmctldHost=$host(127.0.0.1)
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=600
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=${TK_SLURM_CPUS:-4} RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

# pid_of NAME PIDFILE: the pid in PIDFILE when that process is alive and is NAME.
pid_of() {
  local name=$1 file=$2 pid
  [ -f "$file" ] || return 1
  pid=$(tr -dc 0-9 <"$file")
  [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] && [ "$(cat "/proc/$pid/comm")" = "$name" ] || return 1
  echo "$pid"
}

# stop_daemons NAME=PIDFILE...: SIGTERM to all at once (each takes about 2 s to exit),
# SIGKILL to any still there after 10 s; fail if one survives that.
stop_daemons() {
  local spec pid pids=() names=() i rc=0
  for spec in "$@"; do
    pid=$(pid_of "${spec%%=*}" "${spec#*=}") || { rm -f "${spec#*=}"; continue; }
    kill -TERM "$pid" 2>/dev/null || true
    pids+=("$pid") names+=("${spec%%=*}")
  done
  for i in $(seq 100); do
    alive=0
    for pid in "${pids[@]}"; do [ ! -d "/proc/$pid" ] || alive=1; done
    [ $alive = 1 ] || break
    sleep 0.1
  done
  for i in "${!pids[@]}"; do
    pid=${pids[i]}
    [ -d "/proc/$pid" ] || continue
    echo "$prog: warning: ${names[i]} (pid $pid) ignored SIGTERM, killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.5
    [ ! -d "/proc/$pid" ] || { echo "$prog: error: ${names[i]} (pid $pid) is still running" >&2; rc=1; }
  done
  for spec in "$@"; do rm -f "${spec#*=}"; done
  return $rc
}

# Processes of this cluster other than the daemons in the pid files: slurmscriptd (a
# child of slurmctld), and slurmstepd with what it started, which outlive slurmd. They
# carry this cluster's SLURM_CONF in their environment; the job processes also a
# SLURM_JOB_ID, which tells them from the shells that submitted.
cluster_processes() {
  local entry pid env
  for entry in /proc/[0-9]*; do
    pid=${entry#/proc/}
    [ "$pid" != $$ ] || continue
    env=$(tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ") || continue
    grep -qxF "SLURM_CONF=$dir/slurm.conf" <<<"$env" || continue
    if grep -q '^SLURM_JOB_ID=' <<<"$env" || [[ $(cat "/proc/$pid/comm" 2>/dev/null) == slurm* ]]; then
      echo "$pid"
    fi
  done
  pgrep -f -- "--socket=$dir/munge/munge.socket" || true
}

stop_cluster() {
  local rc=0 i left
  export SLURM_CONF=$dir/slurm.conf
  if pid_of slurmctld "$dir/slurmctld.pid" >/dev/null; then
    scancel --full --quiet --partition=debug 2>/dev/null || true
    for i in $(seq 100); do
      [ -z "$(squeue -h -t running,completing -o %i 2>/dev/null)" ] && break
      sleep 0.2
    done
  fi
  stop_daemons slurmd="$dir/slurmd.pid" slurmctld="$dir/slurmctld.pid" \
    munged="$dir/munge/munged.pid" || rc=1
  left=$(cluster_processes)
  if [ -n "$left" ]; then
    echo "$prog: warning: killing processes of the cluster left behind:" $left >&2
    kill -KILL $left 2>/dev/null || true
    sleep 0.5
    left=$(cluster_processes)
    [ -z "$left" ] || { echo "$prog: error: still running:" $left >&2; rc=1; }
  fi
  return $rc
}

show_logs() {
  local f
  for f in "$dir"/log/*.log "$dir"/munge/munged.log; do
    [ -f "$f" ] && { echo "--- $f (last lines)" >&2; tail -n 15 "$f" >&2; }
  done
  return 0
}

start_cluster() {
  require_tools
  check_dir
  if [ -e "$dir" ]; then
    [ -z "$(ls -A "$dir")" ] || [ -e "$marker" ] || die "$dir exists and is not a cluster directory"
    [ ! -e "$marker" ] || stop_cluster || die "could not stop the cluster that was running in $dir"
    rm -rf "$dir"
  fi
  mkdir -p "$dir"/{munge,state,spool,log}
  touch "$marker"
  pick_ports
  write_conf

  # From here on a failure stops whatever was started.
  trap 'echo "$prog: error: start failed, stopping the daemons" >&2; show_logs; stop_cluster || true' ERR
  set -E

  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
  chmod 755 "$dir/munge"
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed"
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -f "$SLURM_CONF"
  slurmd -f "$SLURM_CONF"

  local timeout=${TK_SLURM_START_TIMEOUT:-60} state=""
  local deadline=$((SECONDS + timeout))
  while [ $SECONDS -lt $deadline ]; do
    state=$(sinfo -h -N -o %t 2>/dev/null || true)
    [ "$state" = idle ] && break
    sleep 0.5
  done
  if [ "$state" != idle ]; then
    echo "$prog: error: node not idle after ${timeout} s (sinfo state: '${state:-no answer}')" >&2
    false
  fi
  trap - ERR
  echo "$prog: cluster up in $dir (slurmctld port $ctl_port, slurmd port $d_port)" >&2
}

case $cmd in
  start) start_cluster ;;
  stop)
    [ -e "$marker" ] || { echo "$prog: no cluster in $dir" >&2; exit 0; }
    stop_cluster || die "some daemons of $dir could not be stopped"
    echo "$prog: cluster in $dir stopped" >&2
    ;;
  env)
    [ -f "$dir/slurm.conf" ] || die "no cluster in $dir"
    printf 'export SLURM_CONF=%q\n' "$dir/slurm.conf"
    ;;
  *) usage ;;
esac
