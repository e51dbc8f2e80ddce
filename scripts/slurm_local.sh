#!/usr/bin/env bash
# A real single-node SLURM on this machine, for tests/test_slurm.py and for trying profiles/slurm by hand:
#
#   bash scripts/slurm_local.sh start    # munged, slurmctld, slurmd as root; waits until `sinfo` shows the node idle
#   bash scripts/slurm_local.sh status   # the daemons this script started, and sinfo
#   bash scripts/slurm_local.sh stop     # cancels the jobs, stops exactly the daemons `start` started, removes its config
#
# Needs root and Debian's packages (apt-get install --no-install-recommends slurmctld slurmd slurm-client munge;
# .ci/run installs them). Everything lives in $DIRDP_SLURM_STATE (default /tmp/dirdp-slurm): its own munge key and
# socket (a munged already running on the machine is left alone), the controller's state, the spool, the logs,
# slurm.conf and gres.conf. /etc/slurm/slurm.conf and /etc/slurm/gres.conf are made symbolic links to those two
# files, because the SLURM executor plugin's job step drops SLURM_CONF from the environment of its nested `srun`,
# which then reads the default path; `start` refuses where a slurm.conf that is not its own is there already.
#
# The cluster: one node (this host, as `hostname -s` names it) with the CPUs slurmd detects (2 here), partition
# `debug` (default), and one generic resource gpu (gres.conf: Name=gpu File=/dev/null), so that
# `--gres=gpu:1` jobs schedule on a machine without a GPU (a job is given CUDA_VISIBLE_DEVICES=0, which names
# nothing here); training runs on the CPU as its profile says. Memory is declared, not enforced: the node says it has
# $DIRDP_SLURM_MEM_MB (default 65536) MB (SlurmdParameters=config_overrides, memory is not a consumable resource), so
# profiles/slurm's requests as written (--mem 32000 for a training run) schedule on a small machine. No cgroups
# (proctrack/linuxproc, task/none): this also runs in a container. No accounting database (slurmdbd): job states come
# from the controller, which keeps a finished job for MinJobAge = 600 s; Snakemake reads them with
# `--slurm-status-command squeue` (snakemake-executor-plugin-slurm >= 2.x), not sacct.
#
# Run it under `nice -n 19` on a busy machine: the daemons, and so every job they start, inherit the nice value.
set -euo pipefail

STATE=${DIRDP_SLURM_STATE:-/tmp/dirdp-slurm}
NODE=$(hostname -s)
PARTITION=debug
CTLD_PORT=${DIRDP_SLURM_PORT:-6817}
SLURMD_PORT=$((CTLD_PORT + 1))
MEM_MB=${DIRDP_SLURM_MEM_MB:-65536}
ETC=/etc/slurm
MARK="# written by dirdp scripts/slurm_local.sh"

die() { echo "slurm_local: $*" >&2; exit 1; }

need_prereqs() {
  [ "$(id -u)" = 0 ] || die "needs root (slurmd starts jobs as their user; munged and slurmctld run as root here)"
  local missing=()
  for cmd in munged slurmctld slurmd sinfo sbatch squeue scancel scontrol; do
    command -v "$cmd" >/dev/null || missing+=("$cmd")
  done
  [ ${#missing[@]} = 0 ] || die "missing ${missing[*]} (apt-get install --no-install-recommends slurmctld slurmd slurm-client munge)"
}

# pid of daemon $1 if it is alive and is that program (a recycled pid is not ours)
alive() {
  local pidfile="$STATE/$1.pid" pid
  [ -f "$pidfile" ] || return 1
  pid=$(cat "$pidfile")
  [ -n "$pid" ] && [ -e "/proc/$pid" ] || return 1
  # Debian installs slurmctld as an alternative (slurmctld -> slurmctld-wlm): compare the resolved programs
  [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$(command -v "$1")")" ] || return 1
  echo "$pid"
}

write_conf() {
  local hw
  # the CPU layout slurmd detects (CPUs, boards, sockets, cores, threads), without its memory (declared below)
  hw=$(slurmd -C | head -1 | sed -e 's/^NodeName=[^ ]* //' -e 's/ RealMemory=[0-9]*//')
  cat >"$STATE/slurm.conf" <<EOF
$MARK: a single-node cluster for tests, in $STATE
ClusterName=dirdp
SlurmctldHost=$NODE
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$STATE/munge/munge.socket.2
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.daemon.pid
SlurmdPidFile=$STATE/slurmd.daemon.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=600
KillWait=10
SlurmdTimeout=60
GresTypes=gpu
NodeName=$NODE NodeAddr=127.0.0.1 $hw RealMemory=$MEM_MB Gres=gpu:1 State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
  cat >"$STATE/gres.conf" <<EOF
$MARK: one GPU slot backed by /dev/null, so that --gres=gpu:1 schedules (SLURM 22.05 counts a gpu without
# a File as 0 and drains the node: "gres/gpu count reported lower than configured (0 < 1)")
AutoDetect=off
NodeName=$NODE Name=gpu File=/dev/null
EOF
}

link_etc() {
  mkdir -p "$ETC"
  for f in slurm.conf gres.conf; do
    if [ -e "$ETC/$f" ] || [ -L "$ETC/$f" ]; then
      if [ "$(readlink "$ETC/$f" || true)" != "$STATE/$f" ]; then
        die "$ETC/$f exists and is not this script's (a link to $STATE/$f): not touching a SLURM set up otherwise"
      fi
    fi
    ln -sfn "$STATE/$f" "$ETC/$f"
  done
}

unlink_etc() {
  for f in slurm.conf gres.conf; do
    if [ -L "$ETC/$f" ] && [ "$(readlink "$ETC/$f")" = "$STATE/$f" ]; then rm -f "$ETC/$f"; fi
  done
}

# start daemon $1 in the foreground mode of its program, in its own session, recording its pid
launch() {
  local name=$1; shift
  setsid "$@" >>"$STATE/$name.out" 2>&1 < /dev/null &
  echo $! >"$STATE/$name.pid"
}

start() {
  need_prereqs
  if alive slurmctld >/dev/null || alive slurmd >/dev/null || alive munged >/dev/null; then
    die "already running from $STATE (bash $0 stop first)"
  fi
  local t0=$SECONDS
  rm -rf "$STATE"
  mkdir -p "$STATE"/{munge,ctld,spool}
  chmod 755 "$STATE" "$STATE/munge"  # munged: its socket directory must be searchable by all
  write_conf
  link_etc
  # munge: its own key and socket, so that a munged of the machine is neither used nor disturbed
  dd if=/dev/urandom of="$STATE/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$STATE/munge/munge.key"
  launch munged munged --foreground --force --key-file="$STATE/munge/munge.key" \
    --socket="$STATE/munge/munge.socket.2" --pid-file="$STATE/munge/munged.pid" \
    --log-file="$STATE/munge/munged.log" --seed-file="$STATE/munge/munged.seed"
  for _ in $(seq 100); do [ -S "$STATE/munge/munge.socket.2" ] && break; sleep 0.1; done
  [ -S "$STATE/munge/munge.socket.2" ] || { cat "$STATE/munged.out" >&2; die "munged did not start"; }
  launch slurmctld slurmctld -D -c -f "$STATE/slurm.conf"
  launch slurmd slurmd -D -f "$STATE/slurm.conf" -N "$NODE"
  # the node comes up 'unknown', then 'idle' once slurmd registered
  local state=""
  for _ in $(seq 120); do
    state=$(sinfo -h -n "$NODE" -o %t 2>/dev/null || true)
    [ "$state" = idle ] && break
    alive slurmctld >/dev/null || { tail -n 20 "$STATE/slurmctld.log" "$STATE/slurmctld.out" >&2; die "slurmctld died"; }
    alive slurmd >/dev/null || { tail -n 20 "$STATE/slurmd.log" "$STATE/slurmd.out" >&2; die "slurmd died"; }
    sleep 0.5
  done
  if [ "$state" != idle ]; then
    tail -n 20 "$STATE/slurmctld.log" "$STATE/slurmd.log" >&2 || true
    stop
    die "node $NODE not idle after 60 s (sinfo says '${state}')"
  fi
  sinfo -N -o "%N %P %t %c %m %G"
  echo "slurm_local: up in $((SECONDS - t0)) s: munged $(alive munged), slurmctld $(alive slurmctld), slurmd $(alive slurmd); state in $STATE"
}

stop() {
  local any=""
  if alive slurmctld >/dev/null; then
    scancel --full --quiet --user=root 2>/dev/null || true  # the jobs of this throwaway cluster, before its daemons go
    for _ in $(seq 40); do [ -z "$(squeue -h -t running,completing,pending 2>/dev/null)" ] && break; sleep 0.5; done
  fi
  for name in slurmd slurmctld munged; do
    local pid
    if pid=$(alive "$name"); then
      any=1
      kill -TERM "$pid"
      for _ in $(seq 50); do [ -e "/proc/$pid" ] || break; sleep 0.2; done
      [ -e "/proc/$pid" ] && kill -KILL "$pid"
      echo "slurm_local: stopped $name ($pid)"
    fi
    rm -f "$STATE/$name.pid"
  done
  unlink_etc
  [ -n "$any" ] || echo "slurm_local: nothing of $STATE was running"
}

status() {
  for name in munged slurmctld slurmd; do
    if pid=$(alive "$name"); then echo "$name: $pid"; else echo "$name: not running"; fi
  done
  alive slurmctld >/dev/null && sinfo -N -o "%N %P %t %c %m %G"
  return 0
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
