#!/usr/bin/env bash
# A single-node Slurm cluster on localhost from Debian's packages, for tests/slurm.rs and
# for trying `ladder slurm` (docs/scale-out.md).
#
#   local-cluster.sh start   install slurm-wlm and munge if missing (root, apt), write a
#                            slurm.conf for one node "localhost", start munged, slurmctld
#                            and slurmd, wait until the node is idle; prints the state dir
#   local-cluster.sh stop    stop the daemons this script started
#
# Exit 0 when the cluster is up; otherwise a line saying why on stderr and exit 1 (not root,
# no apt, packages not installable, daemons did not come up). Everything lives under
# $LADDER_SLURM_STATE (default /tmp/ladder-slurm): config, spool, logs, pid files.
set -euo pipefail

state="${LADDER_SLURM_STATE:-/tmp/ladder-slurm}"
why() { echo "local-cluster: $*" >&2; exit 1; }

stop() {
  for d in slurmd slurmctld munged; do
    if [[ -f "$state/$d.pid" ]]; then
      kill "$(cat "$state/$d.pid")" 2>/dev/null || true
      rm -f "$state/$d.pid"
    fi
  done
}

install() {
  command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null && return
  [[ $(id -u) -eq 0 ]] || why "slurm-wlm and munge are not installed, and installing them needs root"
  command -v apt-get >/dev/null || why "slurm-wlm and munge are not installed, and there is no apt-get"
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 apt-get update -qq >/dev/null 2>&1 || why "apt-get update failed"
  timeout 900 apt-get install -y -qq slurm-wlm munge >/dev/null 2>&1 || why "apt-get install slurm-wlm munge failed"
}

start() {
  [[ $(id -u) -eq 0 ]] || why "the daemons run as root here (slurmd must); run as root"
  install
  stop
  mkdir -p "$state"/{spool/ctld,spool/d,log,munge}
  # munge: a key of our own, its socket and state under $state (never the system's).
  local key="$state/munge/munge.key"
  [[ -s "$key" ]] || { dd if=/dev/urandom of="$key" bs=1024 count=1 status=none; chmod 400 "$key"; }
  local sock="$state/munge/munge.socket"
  munged --force --key-file="$key" --socket="$sock" --pid-file="$state/munged.pid" \
    --log-file="$state/log/munged.log" --seed-file="$state/munge/munge.seed" \
    || why "munged did not start (see $state/log/munged.log)"
  # Four CPUs declared on the node whatever it has (config_overrides): four shards of a
  # test are mostly waiting on the network.
  cat > "$state/slurm.conf" <<CONF
ClusterName=ladder
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
StateSaveLocation=$state/spool/ctld
SlurmdSpoolDir=$state/spool/d
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd.log
SlurmctldPort=${LADDER_SLURMCTLD_PORT:-16817}
SlurmdPort=${LADDER_SLURMD_PORT:-16818}
NodeName=localhost NodeAddr=127.0.0.1 CPUs=4 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
  export SLURM_CONF="$state/slurm.conf"
  slurmctld -f "$SLURM_CONF" || why "slurmctld did not start (see $state/log/slurmctld.log)"
  slurmd -f "$SLURM_CONF" || why "slurmd did not start (see $state/log/slurmd.log)"
  for _ in $(seq 60); do
    if sinfo -h -N -o '%T' 2>/dev/null | grep -qE '^(idle|mixed)'; then
      echo "$state"
      return 0
    fi
    sleep 1
  done
  why "the node did not become idle within 60 s: $(sinfo -h -N -o '%N %T %E' 2>&1 | head -1) (logs in $state/log)"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
