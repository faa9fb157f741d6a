#!/usr/bin/env bash
# The training half of the demo: four example trainers (embedded agents, Gloo allreduce) on loopback
# as separate processes, each acting as its own host (--host) and saving its state to shoal's
# in-memory checkpoints every 20 steps, which its agent copies to a peer host. One is killed with
# SIGKILL mid-run: the three others rebuild their communicator in place, restore the newest step every
# rank saved (the dead host's rank from the replica a peer holds) and keep training. Then a fifth host
# joins and restores too. Prints what each host saw. Needs
# build/ (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
trainer=build/examples/allreduce_trainer
[[ -x $trainer ]] || { echo "demo: $trainer is missing (built with Gloo? run scripts/build.sh build)" >&2; exit 1; }
dir=$(mktemp -d /tmp/shoal-demo-training.XXXXXX)
job="demo-$$"
pids=()
cleanup() {
  kill -9 "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$dir"
  rm -f /dev/shm/shoal."$job"-*
}
trap cleanup EXIT

steps=300
start() {  # name seed
  local args=(--name "$1" --bind 127.0.0.1:0 --steps "$steps" --step-ms 30 --cluster demo-training
              --ckpt-every 20 --job "$job" --host "$1")
  [[ -n $2 ]] && args+=(--seeds "$2")
  "$trainer" "${args[@]}" > "$dir/$1.out" 2> "$dir/$1.err" &
  pids+=($!)
  for _ in $(seq 100); do grep -q '"addr"' "$dir/$1.out" 2>/dev/null && break; sleep 0.05; done
}
addr_of() { sed -n 's/.*"addr":"\([^"]*\)".*/\1/p' "$dir/$1.out" | head -n1; }
field() { sed -n "s/.*\"$2\":\\([^,}]*\\).*/\\1/p" <<<"$1" | tr -d '"'; }

echo "training: 4 hosts, $steps steps of 30 ms, an allreduce checked at every step, a checkpoint every 20 steps"
start h0 ""
seed=$(addr_of h0)
for h in h1 h2 h3; do start "$h" "$seed"; done
for _ in $(seq 200); do
  grep -q '"world":4' "$dir/h3.out" 2>/dev/null && break
  sleep 0.05
done
sleep 1.5
echo "training: kill -9 h2 (pid ${pids[2]}) at $(date +%T.%3N)"
kill -9 "${pids[2]}"
{ wait "${pids[2]}"; } 2>/dev/null || true
for _ in $(seq 200); do
  grep -q '"world":3' "$dir/h0.out" 2>/dev/null && break
  sleep 0.05
done
sleep 0.5
echo "training: h4 joins at $(date +%T.%3N); it has no state of its own"
start h4 "$seed"
status=0
for i in 0 1 3 4; do wait "${pids[$i]}" || status=1; done
for h in h0 h1 h3; do
  last=$(tail -n1 "$dir/$h.out")
  rebuild=$(grep -o '"world":3,"ok":true,"rebuild_ms":[0-9.]*' "$dir/$h.out" | head -n1 | sed 's/.*rebuild_ms"://')
  restored=$(grep '"world":3' "$dir/$h.out" | grep -m1 '"restored_step"' || true)
  bad=$(grep -c '"ok":false\|"state_ok":false' "$dir/$h.out" || true)
  printf 'training: %s: last step %s in a world of %s; rebuilt at world 3 in %s ms, restored step %s from %s (state_ok %s); failed checks: %s\n' \
    "$h" "$(field "$last" step)" "$(field "$last" world)" "${rebuild:-?}" "$(field "$restored" restored_step)" \
    "$(field "$restored" restore_source)" "$(field "$restored" state_ok)" "$bad"
  [[ $bad == 0 && -n $rebuild ]] || status=1
done
joined=$(grep -m1 '"restored_step"' "$dir/h4.out" || true)
source=$(field "$joined" restore_source)
# "local" for h4 means this host's memory: the placement of the new view had already sent it a replica.
[[ $source == local ]] && source="its own memory (a replica a peer sent it when it joined)"
printf 'training: h4: restored step %s from %s in %s ms (state_ok %s), then trained to step %s\n' \
  "$(field "$joined" restored_step)" "$source" "$(field "$joined" restore_ms)" \
  "$(field "$joined" state_ok)" "$(field "$(tail -n1 "$dir/h4.out")" step)"
[[ $(field "$joined" state_ok) == true ]] || status=1
if [[ $status == 0 ]]; then
  echo "training: ok (the survivors rebuilt in place and never restarted; every restore matched its step)"
else
  echo "training: FAILED (logs: $dir)"
  trap - EXIT
fi
exit $status
