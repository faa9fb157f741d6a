#!/usr/bin/env bash
# The training half of the demo, the real thing on one machine: four example trainers (each embeds a
# shoal agent and acts as its own host with --host) train over Gloo allreduce on loopback and save
# their state every 20 steps to shoal's in-memory checkpoints, which each agent copies to a peer host.
# h2 is killed with SIGKILL mid-run: the survivors see the view change, rebuild their communicator in
# place, restore the newest step they all saved (each from its own host's memory) and train on. Then a
# fifth host joins with no state and receives the live state from a survivor (nobody rolls back). Prints
# a timeline (t=0 is the start of the first trainer) built only from what was measured: the trainers'
# JSON step lines ("t"), their agents' log lines and the clock read when the kill is sent; then a summary. Exits 0 only when every
# trainer finished with every allreduce and restore checked ok. Needs build/ (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
trainer=build/examples/allreduce_trainer
[[ -x $trainer ]] || { echo "demo: $trainer is missing (built with Gloo? run scripts/build.sh build)" >&2; exit 1; }
dir=$(mktemp -d /tmp/shoal-demo-training.XXXXXX)
job="demo-$$"
pids=() keep=
cleanup() {
  exec 2>/dev/null  # no "Killed" notices for the trainers stopped here
  kill -9 "${pids[@]}" || true
  wait || true
  [[ -n $keep ]] || rm -rf "$dir"
  rm -f /dev/shm/shoal."$job"-*
}
trap cleanup EXIT

steps=300 step_ms=30 every=20
# Like a real job, the demo's hosts share a cluster key made for this run (in the private directory).
build/shoal keygen --output "$dir/cluster.key"
start() {  # name seed
  local args=(--key-file "$dir/cluster.key" --name "$1" --bind 127.0.0.1:0 --steps "$steps" --step-ms "$step_ms" --cluster demo-training
              --ckpt-every "$every" --job "$job" --host "$1" --log-level info)
  [[ -n $2 ]] && args+=(--seeds "$2")
  "$trainer" "${args[@]}" > "$dir/$1.out" 2> "$dir/$1.err" &
  pids+=($!)
  for _ in $(seq 100); do grep -q '"addr"' "$dir/$1.out" 2>/dev/null && break; sleep 0.05; done
}
addr_of() { sed -n 's/.*"addr":"\([^"]*\)".*/\1/p' "$dir/$1.out" | head -n1; }
field() { sed -n "s/.*\"$2\":\\([^,}]*\\).*/\\1/p" <<<"$1" | tr -d '"'; }
now() { date +%s.%N; }

echo "training: 4 hosts on loopback (h0..h3), $steps steps of $step_ms ms compute, allreduce checked at each, checkpoint every $every"
t0=$(now)
start h0 ""
seed=$(addr_of h0)
[[ -n $seed ]] || { echo "training: FAILED: h0 did not start (logs: $dir)"; keep=1; exit 1; }
for h in h1 h2 h3; do start "$h" "$seed"; done
for _ in $(seq 200); do grep -q '"world":4' "$dir/h3.out" 2>/dev/null && break; sleep 0.05; done
sleep 1.5
tk=$(now)
{ kill -9 "${pids[2]}"; wait "${pids[2]}"; } 2>/dev/null || true  # both in the braces: no "Killed" notice
for _ in $(seq 200); do grep -q '"world":3' "$dir/h0.out" 2>/dev/null && break; sleep 0.05; done
sleep 0.5
tj=$(now)
start h4 "$seed"
status=0
for i in 0 1 3 4; do wait "${pids[$i]}" || status=1; done

set +e  # from here on a missing event only leaves its line out; status says whether the run passed

# Reading the outputs. The timeline gathers "epoch-seconds<TAB>what<TAB>note" lines in $tl, printed sorted.
tl="$dir/timeline"
ev() { [[ -z $1 ]] || printf '%s\t%s\t%s\n' "$1" "$2" "${3:-}" >> "$tl"; }  # TIME WHAT [NOTE]; no time, no line
ms() { [[ -n $1 && -n $2 ]] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", (b - a) * 1000 }' || echo "?"; }
minus() { [[ -n $1 && -n $2 ]] && echo $(($1 - $2)) || echo "?"; }
stamp() { date -d "@$1" +%Y-%m-%dT%H:%M:%S.%3N; }  # the agents' log format (local time, ms)
logt() {  # SINCE PATTERN HOST...: the time of the earliest log line matching PATTERN at or after SINCE
  local since=$1 pat=$2 line; shift 2
  line=$(for h; do grep -h -- "$pat" "$dir/$h.err"; done | awk -v k="$(stamp "$since")" '$1 >= k' | sort | head -n1)
  [[ -n $line ]] && date -d "${line:0:10} ${line:11:12}" +%s.%N
}
hosts_with() {  # SINCE PATTERN HOST...: the hosts with such a line, "h0, h1"
  local since=$1 pat=$2 out=; shift 2
  for h; do [[ -n $(logt "$since" "$pat" "$h") ]] && out+="${out:+, }$h"; done
  echo "$out"
}
after() {  # HOST TIME PATTERN: the first step line of HOST at or after TIME that matches PATTERN, and the one before it
  awk -v k="$2" -v p="$3" 'match($0, /"t":[0-9.]+/) { if (substr($0, RSTART + 4, RLENGTH - 4) + 0 >= k + 0 && index($0, p)) {
    print; print l; exit } l = $0 }' "$dir/$1.out"
}
list() { local out= x; for x; do out+="${out:+, }$x"; done; echo "$out"; }
in_epoch() { local h out=(); for h in h0 h1 h3 h4; do grep -q "\"epoch\":$1," "$dir/$h.out" && out+=("$h"); done; list "${out[@]}"; }
range() { sort -n | awk 'NR == 1 { a = $1 } { b = $1 } END { if (NR) print (a == b ? a : a "-" b) }'; }
whence() {  # HOST JSON-LINE: where the host's restore came from, in words
  local src rank step from
  src=$(field "$2" restore_source) rank=$(field "$2" rank) step=$(field "$2" restored_step)
  [[ $src == local ]] && src=$1
  [[ -n $src ]] || return 0
  from=$(grep -h "kept rank $rank step $step from " "$dir/$src.err" | head -n1 | sed 's/.* from \([^ ]*\) .*/\1/')
  if [[ $src == "$1" && -z $from ]]; then echo "its own memory"
  elif [[ $src == "$1" ]]; then echo "a replica $from had sent it"
  elif [[ -n $from ]]; then echo "$src (a replica of $from's rank $rank)"
  else echo "$src (rank $rank)"; fi
}

# The checks: no failed allreduce or restore on any host, a rebuild at world 3 on every survivor.
for h in h0 h1 h3 h4; do
  [[ $(grep -c '"ok":false\|"state_ok":false' "$dir/$h.out") == 0 ]] || status=1
done
for h in h0 h1 h3; do  # the first step in a world of 3 after the kill: rebuilt, restored, checked ok
  [[ $(after "$h" "$tk" '"world":3' | head -n1) =~ '"ok":true,"rebuild_ms":'.*'"state_ok":true' ]] || status=1
done
# The joiner: the live state handed over (no checkpoint read, nobody rolls back), checked ok.
[[ $(field "$(grep -m1 '"synced_step"' "$dir/h4.out")" state_ok) == true ]] || status=1

# The timeline.
ev "$t0" "h0 started, h1..h3 join through it"
w4=$(grep -m1 '"world":4' "$dir/h0.out")
[[ -n $w4 ]] && ev "$(field "$w4" t)" "world of 4 formed (view epoch $(field "$w4" epoch)), training"
killed_at=$(field "$(tail -n1 "$dir/h2.out")" step)
ev "$tk" "kill -9 h2 (pid ${pids[2]}), its last step $killed_at"
who=$(hosts_with "$tk" 'aborted (allreduce failed' h0 h1 h3)
t=$(logt "$tk" 'aborted (allreduce failed' h0 h1 h3)
[[ -n $t ]] && ev "$t" "$who: allreduce failed, a peer is gone; step aborted" "kill +$(ms "$tk" "$t") ms"
t=$(logt "$tk" 'member h2 suspect' h0 h1 h3) && sus=" (suspect at +$(ms "$tk" "$t") ms)"
t_dead=$(logt "$tk" 'member h2 dead' h0 h1 h3) && ev "$t_dead" "gossip: h2 dead${sus:-}" "kill +$(ms "$tk" "$t_dead") ms"
w3=$(after h0 "$tk" '"world":3' | head -n1)
e3=$(field "$w3" epoch)
t_view=$(logt "$tk" "view epoch $e3 committed" h0 h1 h3) &&
  ev "$t_view" "view epoch $e3 committed: $(in_epoch "$e3")" "kill +$(ms "$tk" "$t_view") ms"
built=$(grep -h "communicator of epoch $e3 ready" "$dir"/h{0,1,3}.err | sed 's/.*(\([0-9]*\) ms)$/\1/' | range)
t=$(for h in h0 h1 h3; do logt "$tk" "communicator of epoch $e3 ready" "$h"; done | sort -n | tail -n1)
[[ -n $t ]] && ev "$t" "communicator of epoch $e3 rebuilt in place on each (${built} ms)" "kill +$(ms "$tk" "$t") ms"
own=() own_ms=() all_ms=() t_own= peer=()
for h in h0 h1 h3; do
  r=$(after "$h" "$tk" '"world":3' | head -n1); [[ $r == *restored_step* ]] || continue
  d=$(whence "$h" "$r") rms=$(field "$r" restore_ms) t=$(logt "$tk" "ckpt: restored rank" "$h") all_ms+=("$rms")
  if [[ $d == "its own memory" ]]; then own+=("$h") own_ms+=("$rms"); [[ $t > $t_own ]] && t_own=$t
  elif [[ -n $t ]]; then peer+=("$t"$'\t'"$h restored step $(field "$r" restored_step) from $d, $rms ms"$'\t'"kill +$(ms "$tk" "$t") ms"); fi
done
restored=$(field "$w3" restored_step)
(( ${#own[@]} )) && ev "$t_own" "$(list "${own[@]}") restored step $restored from $( ((${#own[@]} > 1)) && echo their || echo its)\
 own memory, $(printf '%s\n' "${own_ms[@]}" | range) ms" "kill +$(ms "$tk" "$t_own") ms"
(( ${#peer[@]} )) && printf '%s\n' "${peer[@]}" >> "$tl"  # after the line above when at the same time
t_back=$(for h in h0 h1 h3; do field "$(after "$h" "$tk" '"world":3' | head -n1)" t; done | sort -n | tail -n1)
lost=$(minus "$(field "$(after h0 "$tk" '"world":3' | tail -n1)" step)" "$restored")
ev "$t_back" "training again in a world of 3 from step $((restored + 1)) ($lost steps redone)" "kill +$(ms "$tk" "$t_back") ms"
ev "$tj" "h4 started with no state, joins through h0"
j=$(grep -m1 '"synced_step"' "$dir/h4.out")
ej=$(field "$j" epoch) sj=$(field "$j" synced_step)
t=$(logt "$tj" "view epoch $ej committed" h0 h1 h3 h4) && ev "$t" "view epoch $ej committed: $(in_epoch "$ej")" "join +$(ms "$tj" "$t") ms"
lost2=$(minus "$(field "$(after h0 "$tj" "\"epoch\":$ej," | tail -n1)" step)" "$sj")
ev "$(field "$j" t)" "h4 has rank $(field "$j" synced_from)'s live state of step $sj; world of 4 from step $((sj + 1))\
 ($lost2 steps redone)" "join +$(ms "$tj" "$(field "$j" t)") ms"
t=$(for h in h0 h1 h3 h4; do tail -n1 "$dir/$h.out"; done | sed 's/.*"t":\([0-9.]*\).*/\1/' | sort -n | tail -n1)
done_=() short=()
for h in h0 h1 h3 h4; do
  l=$(field "$(tail -n1 "$dir/$h.out")" step)
  if [[ $l == $((steps - 1)) ]]; then done_+=("$h"); else short+=("$h stopped at step ${l:-?}"); fi
done
ev "$t" "$(list ${done_[@]+"${done_[@]}"}) finished at step $((steps - 1))${short[*]+; $(list "${short[@]}")}"

sort -s -t$'\t' -k1,1n "$tl" | awk -F'\t' -v t0="$t0" '
  { t[NR] = $1; w[NR] = $2; n[NR] = $3; if (length($2) > m) m = length($2) }
  END { for (i = 1; i <= NR; i++)
          printf "  t=%7s s  %-*s  %s\n", sprintf("+%.3f", t[i] - t0), m, w[i], (n[i] == "" ? "" : "(" n[i] ")") }' |
  sed 's/ *$//'
if [[ -z $t_back ]]; then
  echo "summary: the survivors did not train on in a world of 3"
else
  echo "summary: h2 declared dead $(ms "$tk" "$t_dead") ms after the kill, view committed at +$(ms "$tk" "$t_view") ms," \
    "training again at +$(ms "$tk" "$t_back") ms"
  echo "  in the same 3 processes (communicator rebuilt in $built ms, restored in $(printf '%s\n' "${all_ms[@]}" | range) ms);" \
    "steps redone: $lost after the kill, $lost2 after the join"
fi
if [[ $status == 0 ]]; then
  echo "training: ok (no process restarted; every allreduce and every restore checked ok)"
else
  echo "training: FAILED (logs: $dir)"
  keep=1
fi
exit $status
