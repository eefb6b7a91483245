#!/usr/bin/env bash
# A real single-node Slurm on this machine, from Debian's slurm-wlm and munge packages, for testing the
# job scripts:  source <(tools/slurm-local.sh start)   ...   tools/slurm-local.sh stop
# `start` installs the packages if needed, writes a slurm.conf describing this machine into a private
# state directory, starts munged (as user munge), slurmctld and slurmd (as root), waits for the node
# to be idle and prints the `export SLURM_CONF=...` line clients need.  `stop` cancels every job and
# stops and removes everything `start` made.  Needs root.
set -euo pipefail
state=${ICL_SLURM_DIR:-/tmp/icl-slurm}
cmd=${1:-}
log() { echo "slurm-local: $*" >&2; }

stop() {
  export SLURM_CONF=$state/slurm.conf
  if [ -f "$state/slurm.conf" ]; then
    scancel --full --quiet --user=root 2>/dev/null || true
    for d in slurmd slurmctld; do
      [ -f "$state/$d.pid" ] && kill "$(cat "$state/$d.pid")" 2>/dev/null || true
    done
    sleep 1
    pkill -9 -f "slurmd -f $state/slurm.conf" 2>/dev/null || true
    pkill -9 -f "slurmctld -f $state/slurm.conf" 2>/dev/null || true
  fi
  if [ -f "$state/munged.started" ] && [ -f /run/munge/munged.pid ]; then
    kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true
  fi
  rm -rf "$state"
  log "stopped"
}

start() {
  [ "$(id -u)" -eq 0 ] || { log "needs root"; exit 2; }
  if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
  fi
  mkdir -p "$state/ctld" "$state/d"
  # munge: the package's key, a runtime directory, the daemon as its own user
  [ -s /etc/munge/munge.key ] || { dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null; }
  chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
  mkdir -p /run/munge /var/lib/munge /var/log/munge && chown munge:munge /run/munge /var/lib/munge /var/log/munge
  if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    runuser -u munge -- /usr/sbin/munged
    touch "$state/munged.started"
    for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
  fi
  local host mem
  host=$(hostname -s)
  mem=$(awk '/MemTotal/ {printf "%d", $2 / 1024 * 0.9}' /proc/meminfo)
  cat > "$state/slurm.conf" <<CONF
ClusterName=icl-local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/d
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
KillWait=15
MinJobAge=30
InactiveLimit=0
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$state/slurm.conf
  slurmctld -f "$state/slurm.conf"
  slurmd -f "$state/slurm.conf"
  for _ in $(seq 100); do
    sinfo -h -o %t 2>/dev/null | grep -q idle && break
    sleep 0.2
  done
  sinfo -h -o %t | grep -q idle || { log "node did not become idle"; cat "$state"/*.log >&2; exit 1; }
  log "running: $(sinfo -h -o '%P %D nodes %c cpus %t')"
  echo "export SLURM_CONF=$state/slurm.conf"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: tools/slurm-local.sh start|stop" >&2; exit 2 ;;
esac
