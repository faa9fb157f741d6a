#!/usr/bin/env bash
# The training half of the demo: four example trainers (embedded agents, Gloo allreduce) on loopback
# as separate processes; one is killed with SIGKILL mid-run, and the three others rebuild their
# communicator in place and keep training. Prints what each host saw. Needs build/ (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
trainer=build/examples/allreduce_trainer
[[ -x $trainer ]] || { echo "demo: $trainer is missing (built with Gloo? run scripts/build.sh build)" >&2; exit 1; }
dir=$(mktemp -d /tmp/shoal-demo-training.XXXXXX)
pids=()
cleanup() { kill -9 "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT

steps=150
start() {  # name seed
  local args=(--name "$1" --bind 127.0.0.1:0 --steps "$steps" --step-ms 30 --cluster demo-training)
  [[ -n $2 ]] && args+=(--seeds "$2")
  "$trainer" "${args[@]}" > "$dir/$1.out" 2> "$dir/$1.err" &
  pids+=($!)
  for _ in $(seq 100); do grep -q '"addr"' "$dir/$1.out" 2>/dev/null && break; sleep 0.05; done
}
addr_of() { sed -n 's/.*"addr":"\([^"]*\)".*/\1/p' "$dir/$1.out" | head -n1; }

echo "training: 4 hosts, $steps steps of 30 ms, an allreduce checked at every step"
start h0 ""
seed=$(addr_of h0)
for h in h1 h2 h3; do start "$h" "$seed"; done
for _ in $(seq 200); do
  grep -q '"world":4' "$dir/h3.out" 2>/dev/null && break
  sleep 0.05
done
sleep 1
echo "training: kill -9 h2 (pid ${pids[2]}) at $(date +%T.%3N)"
kill -9 "${pids[2]}"
{ wait "${pids[2]}"; } 2>/dev/null || true
status=0
for i in 0 1 3; do wait "${pids[$i]}" || status=1; done
for h in h0 h1 h3; do
  last=$(tail -n1 "$dir/$h.out")
  rebuild=$(grep -o '"world":3,"ok":true,"rebuild_ms":[0-9.]*' "$dir/$h.out" | head -n1 | sed 's/.*rebuild_ms"://')
  bad=$(grep -c '"ok":false' "$dir/$h.out" || true)
  printf 'training: %s: last step %s in a world of %s; rebuilt at world 3 in %s ms; failed checks: %s\n' \
    "$h" "$(sed 's/.*"step":\([0-9]*\).*/\1/' <<<"$last")" "$(sed 's/.*"world":\([0-9]*\).*/\1/' <<<"$last")" \
    "${rebuild:-?}" "$bad"
  [[ $bad == 0 && -n $rebuild ]] || status=1
done
if [[ $status == 0 ]]; then
  echo "training: ok (the survivors rebuilt in place and never restarted)"
else
  echo "training: FAILED (logs: $dir)"
  trap - EXIT
fi
exit $status
