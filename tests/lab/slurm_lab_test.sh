#!/usr/bin/env bash
# lab: `srun -N3 --ntasks-per-node=1 shoal agent` under a real Slurm, with no discovery flag at all.
#
# One machine plays a small cluster. A controller host "ctl" (slurmctld, and the login side: srun,
# scontrol, sinfo, squeue, scancel) and three compute hosts node1..node3 (one slurmd each) each get
# their own network, UTS (host name) and mount namespace (own /etc/hosts, /run and /dev/shm). The
# hosts talk over veth pairs on a bridge that lives inside ctl's network namespace, so the root
# namespace's links, addresses and routes are never touched. One munged (own key and socket in the
# temp dir) serves every host through the filesystem.
#
# The agents must find everything from Slurm's environment (job id, SLURM_STEP_NODELIST,
# SLURMD_NODENAME, node count, port 7946), commit one view of node1..node3 together, and, on scancel,
# leave gracefully: every task exits 0 and nothing of the test is left running.
#
# Usage: slurm_lab_test.sh SHOAL_BINARY. Exit 0 pass, 77 skip (not root, Slurm/munge/iproute2
# missing, no network namespaces), anything else fail (with the logs on stderr).
set -euo pipefail

export PATH="$PATH:/usr/sbin:/sbin"
# The script's own stdout and stderr, for the exit trap: a check that fails inside a redirected command
# (wait_until silences its probes) must still be able to say so.
exec {OUT_FD}>&1 {ERR_FD}>&2
skip() {
  echo "SKIP: $*"
  exit 77
}

[[ $# -ge 1 ]] || {
  echo "usage: $0 SHOAL_BINARY" >&2
  exit 2
}
[[ -x $1 ]] || {
  echo "FAIL: '$1' is not an executable shoal binary" >&2
  exit 1
}
SHOAL=$(readlink -f "$1")
# Only this test's Slurm: no job of an outer allocation (a CI runner under Slurm), default log level
# (the checks read the agents' info lines).
while read -r var; do unset "$var"; done < <(compgen -e | grep '^SLURM' || true)
unset SHOAL_LOG
[[ $(id -u) -eq 0 ]] || skip "needs root (network namespaces, slurmd, slurmctld)"
for tool in slurmctld slurmd slurmstepd munged srun scontrol sinfo squeue scancel unshare nsenter ip mount hostname; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed"
done

# ---- Progress log and deadlines -------------------------------------------------------------------------

T0=$EPOCHREALTIME
STEP_T=$T0
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }
log() { echo "[$(elapsed "$T0") s] $*"; }
step_begin() {
  STEP_T=$EPOCHREALTIME
  log "$*..."
}
step_done() { log "  ok ($(elapsed "$STEP_T") s)${1:+: $1}"; }
FAILED_MSG=""
die() {
  FAILED_MSG="$*"
  exit 1
}

# wait_until SECONDS WHAT COMMAND...: runs COMMAND every 0.2 s until it succeeds; dies after SECONDS.
wait_until() {
  local limit=$1 what=$2
  shift 2
  local end
  end=$(awk -v n="$EPOCHREALTIME" -v l="$limit" 'BEGIN { printf "%.3f", n + l }')
  while ! "$@" >/dev/null 2>&1; do
    if awk -v n="$EPOCHREALTIME" -v e="$end" 'BEGIN { exit !(n > e) }'; then
      die "timed out after ${limit} s waiting for $what"
    fi
    sleep 0.2
  done
}

# ---- Names, addresses, temp dir, cleanup ----------------------------------------------------------------

ID=$$
NS_CTL="shoal-lab-$ID-ctl"
NODES=(node1 node2 node3)
NS_NODE=()
for n in "${NODES[@]}"; do NS_NODE+=("shoal-lab-$ID-$n"); done
BRIDGE="br$ID"

# The /24 exists only inside this test's namespaces; still take one the root namespace does not use.
NET=""
for candidate in 10.77.0 10.177.31 10.203.119; do
  if ! ip -4 addr show | grep -q "inet ${candidate//./\\.}\."; then
    NET=$candidate
    break
  fi
done
[[ -n $NET ]] || skip "no free 10.x /24 among the candidates"
CTL_IP="$NET.254"

TMP=$(mktemp -d /tmp/shoal-slurm-lab.XXXXXX)
CONF="$TMP/slurm.conf"
export SLURM_CONF="$CONF"
MUNGE_PID=""
CTLD_PID=""
SRUN_PID=""
SLURMD_PIDS=()
NETNS_MADE=()

dump_file() {
  [[ -f $1 ]] || return 0
  echo "----- $1 (last ${2:-80} lines) -----" >&2
  tail -n "${2:-80}" "$1" >&2
}

dump_logs() {
  echo "===== logs of the failed run =====" >&2
  dump_file "$TMP/srun.out" 200
  for n in "${NODES[@]}"; do
    for f in "$TMP/$n"/view.json "$TMP/$n"/status.json; do dump_file "$f" 5; done
  done
  dump_file "$TMP/ctl/slurmctld.log" 120
  for n in "${NODES[@]}"; do dump_file "$TMP/$n/slurmd.log" 80; done
  dump_file "$TMP/ctl/slurmctld.stdout" 20
  for n in "${NODES[@]}"; do dump_file "$TMP/$n/slurmd.stdout" 20; done
  dump_file "$TMP/munge/munged.log" 20
  echo "===== end of logs =====" >&2
}

alive() { [[ -n $1 ]] && kill -0 "$1" 2>/dev/null; }

# stop_pids WHAT PID...: SIGTERM to the live ones, up to 10 s to exit, then SIGKILL (and a note).
stop_pids() {
  local what=$1 pid i
  shift
  local live=()
  for pid in "$@"; do alive "$pid" && live+=("$pid"); done
  [[ ${#live[@]} -gt 0 ]] || return 0
  kill -TERM "${live[@]}" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    local left=0
    for pid in "${live[@]}"; do alive "$pid" && left=1; done
    [[ $left -eq 0 ]] && break
    sleep 0.1
  done
  for pid in "${live[@]}"; do
    if alive "$pid"; then
      echo "cleanup: $what (pid $pid) still running 10 s after SIGTERM; SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null
    fi
  done
  for pid in "${live[@]}"; do wait "$pid" 2>/dev/null || true; done
  return 0
}

# Every process in one of this test's network namespaces (slurmd, slurmstepd, agents, their children).
netns_pids() {
  local ns
  for ns in "${NETNS_MADE[@]}"; do ip netns pids "$ns" 2>/dev/null || true; done
}

cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  exec 1>&"$OUT_FD" 2>&"$ERR_FD"
  if [[ $rc -ne 0 && $rc -ne 77 ]]; then
    echo "FAIL: ${FAILED_MSG:-exit status $rc (line ${FAIL_LINE:-?})}" >&2
    dump_logs
  fi
  local t_clean=$EPOCHREALTIME
  stop_pids srun "$SRUN_PID"
  stop_pids slurmctld "$CTLD_PID"
  stop_pids slurmd "${SLURMD_PIDS[@]}"
  # Whatever is still inside the namespaces was started by this test (slurmstepd, agents).
  local left
  left=$(netns_pids)
  if [[ -n $left ]]; then
    # shellcheck disable=SC2086
    kill -KILL $left 2>/dev/null
    sleep 0.2
  fi
  stop_pids munged "$MUNGE_PID"
  local ns
  for ns in "${NETNS_MADE[@]}"; do ip netns delete "$ns" 2>/dev/null; done
  rm -rf "$TMP"
  log "cleaned up ($(elapsed "$t_clean") s)"
  [[ $rc -eq 0 ]] && log "PASS"
  exit "$rc"
}
trap 'FAIL_LINE=$LINENO' ERR
trap cleanup EXIT
trap 'FAILED_MSG="interrupted"; exit 130' INT TERM

# ---- The network: a bridge in ctl's namespace, a veth to each node ------------------------------------

step_begin "network namespaces ($NS_CTL, ${NS_NODE[*]}) on $NET.0/24"
ip netns add "$NS_CTL" 2>/dev/null || skip "cannot create network namespaces (ip netns add failed)"
NETNS_MADE+=("$NS_CTL")
ip -n "$NS_CTL" link set lo up
ip -n "$NS_CTL" link add "$BRIDGE" type bridge 2>/dev/null || skip "cannot create a bridge in a network namespace"
ip -n "$NS_CTL" addr add "$CTL_IP/24" dev "$BRIDGE"
ip -n "$NS_CTL" link set "$BRIDGE" up
for i in "${!NODES[@]}"; do
  ns=${NS_NODE[$i]}
  ip netns add "$ns"
  NETNS_MADE+=("$ns")
  ip -n "$ns" link set lo up
  # Both ends are created inside the test's namespaces: names cannot clash with anything outside.
  ip -n "$NS_CTL" link add "v$ID-$((i + 1))" type veth peer name eth0 netns "$ns" 2>/dev/null ||
    skip "cannot create veth pairs between network namespaces"
  ip -n "$NS_CTL" link set "v$ID-$((i + 1))" master "$BRIDGE" up
  ip -n "$ns" addr add "$NET.$((i + 1))/24" dev eth0
  ip -n "$ns" link set eth0 up
done
step_done

# ---- Files: hosts, munge key, slurm.conf -----------------------------------------------------------------

mkdir -p "$TMP/munge" "$TMP/ctl/state" "$TMP/ctl/run"
{
  echo "127.0.0.1 localhost"
  echo "$CTL_IP ctl"
  for i in "${!NODES[@]}"; do echo "$NET.$((i + 1)) ${NODES[$i]}"; done
} >"$TMP/hosts"
for n in "${NODES[@]}"; do
  mkdir -p "$TMP/$n/run" "$TMP/$n/spool"
  chmod 755 "$TMP/$n" "$TMP/$n/spool"
done
chmod 755 "$TMP"

cat >"$CONF" <<EOF
# shoal lab: three one-CPU nodes in network namespaces, everything under $TMP.
ClusterName=shoallab
SlurmctldHost=ctl($CTL_IP)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$TMP/munge/munge.sock
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
SelectType=select/linear
SchedulerType=sched/builtin
PlugStackConfig=$TMP/plugstack.conf
ReturnToService=2
# SIGTERM, then SIGKILL this much later: an agent leaves within about 3 s.
KillWait=15
InactiveLimit=0
MessageTimeout=10
StateSaveLocation=$TMP/ctl/state
SlurmctldPidFile=$TMP/ctl/slurmctld.pid
SlurmctldLogFile=$TMP/ctl/slurmctld.log
SlurmctldDebug=info
SlurmdSpoolDir=$TMP/%n/spool
SlurmdPidFile=$TMP/%n/slurmd.pid
SlurmdLogFile=$TMP/%n/slurmd.log
SlurmdDebug=verbose
NodeName=node1 NodeAddr=$NET.1 CPUs=1 RealMemory=1 State=UNKNOWN
NodeName=node2 NodeAddr=$NET.2 CPUs=1 RealMemory=1 State=UNKNOWN
NodeName=node3 NodeAddr=$NET.3 CPUs=1 RealMemory=1 State=UNKNOWN
PartitionName=lab Nodes=node[1-3] Default=YES MaxTime=INFINITE State=UP
EOF
: >"$TMP/plugstack.conf"

# ---- munged ------------------------------------------------------------------------------------------------

step_begin "munged"
dd if=/dev/urandom of="$TMP/munge/munge.key" bs=1 count=1024 status=none
chmod 400 "$TMP/munge/munge.key"
munged --foreground --force --key-file="$TMP/munge/munge.key" --socket="$TMP/munge/munge.sock" \
  --pid-file="$TMP/munge/munged.pid" --log-file="$TMP/munge/munged.log" --seed-file="$TMP/munge/munged.seed" \
  </dev/null >"$TMP/munge/munged.stdout" 2>&1 &
MUNGE_PID=$!
wait_until 10 "munged's socket" test -S "$TMP/munge/munge.sock"
step_done

# ---- slurmctld on ctl -------------------------------------------------------------------------------------

# A host of its own: its name (UTS), /etc/hosts, /run (so /run/shoal/NAME.sock is per host and reachable
# from here as $TMP/HOST/run/shoal/NAME.sock) and /dev/shm; then exec the daemon. Used as
#   nsenter --net=/run/netns/NS -- unshare --uts --mount sh -c "$HOST_SETUP" sh HOST RUNDIR COMMAND...
# (not `ip netns exec`: it remounts /sys, which hides /sys/fs/cgroup, and slurmd 22.05 refuses to
# start without a cgroup filesystem even with proctrack/linuxproc and task/none).
# shellcheck disable=SC2016
HOST_SETUP='set -e; hostname "$1"; mount --bind "$HOSTS" /etc/hosts; mount --bind "$2" /run;
  mount -t tmpfs -o size=64m tmpfs /dev/shm; shift 2; exec "$@"'
export HOSTS="$TMP/hosts"

step_begin "slurmctld on ctl ($CTL_IP)"
nsenter --net="/run/netns/$NS_CTL" -- unshare --uts --mount sh -c "$HOST_SETUP" sh ctl "$TMP/ctl/run" \
  slurmctld -D -c -f "$CONF" </dev/null >"$TMP/ctl/slurmctld.stdout" 2>&1 &
CTLD_PID=$!
# ctl is also the login host: Slurm's commands run in its namespaces.
on_ctl() { nsenter -t "$CTLD_PID" -n -u -m -- "$@"; }
ctld_up() {
  alive "$CTLD_PID" || die "slurmctld exited"
  on_ctl scontrol ping | grep -q "is UP"
}
wait_until 20 "slurmctld to answer scontrol ping" ctld_up
step_done

# ---- slurmd on node1..node3 -------------------------------------------------------------------------------

step_begin "slurmd on ${NODES[*]}"
for i in "${!NODES[@]}"; do
  n=${NODES[$i]}
  nsenter --net="/run/netns/${NS_NODE[$i]}" -- unshare --uts --mount sh -c "$HOST_SETUP" sh "$n" "$TMP/$n/run" \
    slurmd -D -f "$CONF" </dev/null >"$TMP/$n/slurmd.stdout" 2>&1 &
  SLURMD_PIDS+=($!)
done
nodes_idle() {
  local pid
  for pid in "${SLURMD_PIDS[@]}"; do alive "$pid" || die "a slurmd exited (pids ${SLURMD_PIDS[*]})"; done
  local states
  states=$(on_ctl sinfo -h -N -o '%N=%t' | sort | tr '\n' ' ')
  [[ $states == "node1=idle node2=idle node3=idle " ]]
}
wait_until 30 "node1..node3 idle in sinfo" nodes_idle
step_done "$(on_ctl sinfo -h -N -o '%N=%t' | tr '\n' ' ')"

# ---- The job: srun -N3 --ntasks-per-node=1 shoal agent ----------------------------------------------------

# The cluster key the way a batch script hands it to its job: a file every node reads, named by
# SHOAL_KEY_FILE, which srun passes on (the agent refuses to run without a key unless --insecure).
"$SHOAL" keygen --output "$TMP/cluster.key" || die "shoal keygen --output failed"
[[ $(stat -c %a "$TMP/cluster.key") == 600 ]] || die "shoal keygen --output did not make the key file 0600"
step_begin "srun -N3 --ntasks-per-node=1 $SHOAL agent"
SHOAL_KEY_FILE="$TMP/cluster.key" nsenter -t "$CTLD_PID" -n -u -m -- srun -N3 --ntasks-per-node=1 --label \
  --job-name=shoal-lab "$SHOAL" agent </dev/null >"$TMP/srun.out" 2>&1 &
SRUN_PID=$!
JOB_ID=""
job_running() {
  alive "$SRUN_PID" || die "srun exited before the job ran"
  JOB_ID=$(on_ctl squeue -h -n shoal-lab -t R -o %i)
  [[ -n $JOB_ID ]]
}
wait_until 20 "the job to run" job_running
job_running
step_done "job $JOB_ID"

# ---- One committed view of 3 members ------------------------------------------------------------------------

control() { echo "$TMP/$1/run/shoal/$1.sock"; }
# field JSON KEY: the first string or number value of KEY in the agent's one-line JSON (enough here).
field() { grep -o "\"$2\":\"\{0,1\}[^\",}]*" <<<"$1" | head -n 1 | sed 's/^"[^"]*":"\{0,1\}//'; }
member_names() { sed -n 's/.*"members":\[\([^]]*\)\].*/\1/p' <<<"$1" | grep -o '"name":"[^"]*"' | cut -d'"' -f4 | sort | tr '\n' ' '; }
member_addrs() { sed -n 's/.*"members":\[\([^]]*\)\].*/\1/p' <<<"$1" | grep -o '"addr":"[^"]*"' | cut -d'"' -f4 | sort | tr '\n' ' '; }

view_committed() {
  alive "$SRUN_PID" || die "srun exited while the agents were forming their view"
  local n json
  for n in "${NODES[@]}"; do
    json=$("$SHOAL" view --control "$(control "$n")" --json 2>/dev/null) || return 1
    printf '%s\n' "$json" >"$TMP/$n/view.json"
    [[ $(field "$json" status) == stable && $(member_names "$json") == "node1 node2 node3 " ]] || return 1
  done
}

step_begin "waiting for all three agents to commit one view of 3 members"
wait_until 30 "a committed view of node1..node3 at every agent" view_committed
step_done

step_begin "checking the view, the members and the Slurm-derived settings"
expected_addrs="$NET.1:7946 $NET.2:7946 $NET.3:7946 "
first_epoch="" first_hash=""
for n in "${NODES[@]}"; do
  sock=$(control "$n")
  json=$(cat "$TMP/$n/view.json")
  [[ $(field "$json" self) == "$n" ]] || die "$n: the agent's name is '$(field "$json" self)', not $n (SLURMD_NODENAME)"
  [[ $(member_addrs "$json") == "$expected_addrs" ]] ||
    die "$n: member addresses are '$(member_addrs "$json")', expected '$expected_addrs'"
  [[ $(field "$json" world_size) == 3 ]] || die "$n: world size $(field "$json" world_size), expected 3"
  epoch=$(field "$json" epoch)
  hash=$(field "$json" hash)
  if [[ -z $first_epoch ]]; then
    first_epoch=$epoch first_hash=$hash
  elif [[ $epoch != "$first_epoch" || $hash != "$first_hash" ]]; then
    die "$n committed epoch $epoch hash $hash, node1 epoch $first_epoch hash $first_hash: not one view"
  fi
  status=$("$SHOAL" status --control "$sock" --json) || die "$n: shoal status failed"
  printf '%s\n' "$status" >"$TMP/$n/status.json"
  [[ $status == *"\"cluster\":\"slurm-$JOB_ID\""* ]] || die "$n: the cluster id is not slurm-$JOB_ID (SLURM_JOB_ID)"
  [[ $status == *"\"job\":\"slurm-$JOB_ID\""* ]] || die "$n: the checkpoint job is not slurm-$JOB_ID"
  [[ $status == *"\"alive\":3,"* ]] || die "$n: members by state are not 3 alive"
  members=$("$SHOAL" members --control "$sock") || die "$n: shoal members failed"
  for m in "${NODES[@]}"; do
    grep -q "$m" <<<"$members" || die "$n: 'shoal members' does not list $m"
  done
done
# Each agent said what it took from Slurm, and where its control socket is.
for i in "${!NODES[@]}"; do
  n=${NODES[$i]}
  grep -q "^$i: .*under Slurm: 3 nodes node\[1-3\] from SLURM_STEP_NODELIST" "$TMP/srun.out" ||
    die "task $i did not log the node list from SLURM_STEP_NODELIST"
  grep -q "^$i: .*under Slurm: name $n from SLURMD_NODENAME" "$TMP/srun.out" ||
    die "task $i did not log its name $n from SLURMD_NODENAME"
  grep -q "^$i: shoal agent $n listening on $NET.$((i + 1)):7946 control /run/shoal/$n.sock" "$TMP/srun.out" ||
    die "task $i did not print 'shoal agent $n listening on $NET.$((i + 1)):7946 control /run/shoal/$n.sock'"
  grep -q "^$i: .*cluster key from SHOAL_KEY_FILE: $TMP/cluster.key" "$TMP/srun.out" ||
    die "task $i did not run with the job's key from SHOAL_KEY_FILE"
done
step_done "epoch $first_epoch hash $first_hash, members $expected_addrs"

# ---- scancel: every agent leaves and exits 0 ------------------------------------------------------------------

step_begin "scancel $JOB_ID"
on_ctl scancel "$JOB_ID"
srun_gone() { ! alive "$SRUN_PID"; }
wait_until 40 "srun to end after scancel" srun_gone
srun_rc=0
wait "$SRUN_PID" || srun_rc=$?
SRUN_PID=""
job_gone() { [[ -z $(on_ctl squeue -h -j "$JOB_ID" -o %i 2>/dev/null) ]]; }
wait_until 20 "job $JOB_ID to leave squeue" job_gone
# slurmstepd logs each task's end in the node's slurmd log (SlurmdDebug=verbose).
task_ended() { grep -q "task [0-9]* ([0-9]*) exited" "$TMP/$1/slurmd.log"; }
for n in "${NODES[@]}"; do
  wait_until 10 "$n's slurmstepd to log the task's end" task_ended "$n"
  line=$(grep "task [0-9]* ([0-9]*) exited" "$TMP/$n/slurmd.log" | tail -n 1)
  [[ $line == *"exited with exit code 0."* ]] || die "$n: the agent did not exit 0: ${line#*] }"
done
for i in "${!NODES[@]}"; do
  grep -q "^$i: .*leaving the cluster" "$TMP/srun.out" || die "task $i did not log 'leaving the cluster'"
done
# Nothing but slurmd itself may be left in the compute nodes' namespaces: no agent, no slurmstepd.
only_slurmd_left() {
  local i pid
  for i in "${!NODES[@]}"; do
    for pid in $(ip netns pids "${NS_NODE[$i]}"); do
      [[ $pid == "${SLURMD_PIDS[$i]}" ]] || return 1
    done
  done
}
wait_until 10 "slurmstepd and the agents to be gone" only_slurmd_left
for n in "${NODES[@]}"; do
  [[ ! -e $(control "$n") ]] || die "$n: the agent exited but left its control socket /run/shoal/$n.sock behind"
done
step_done "srun exit status $srun_rc; every agent exited 0"

log "all checks passed"
