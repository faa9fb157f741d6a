#!/usr/bin/env bash
# scripts/test.sh's background builds, while the suites of build/ run: the sanitizer build of what the unit
# and sim suites run, then the fuzz targets, then the user's release build of the wheel (the README's
# install block). Each writes its exit status to LOG_DIR/<part>.rc, and build-asan's end time to
# LOG_DIR/asan-build.end.
#
# At the lowest CPU priority, for real: under the kernel's autogroup scheduling (sched_autogroup_enabled=1,
# Debian's default) `nice` orders processes only within one session, and the tests that start daemons or
# trainers give each one a session of its own, so a plainly niced compile got as much CPU as each of four
# trainers. The caller starts this script with `setsid` (a session, so an autogroup, of its own), and it
# nices that autogroup to 19 before it compiles anything.
#
# usage: setsid scripts/background-builds.sh LOG_DIR
set -uo pipefail
cd "$(dirname "$0")/.."
log_dir=$1
jobs=$(nproc)
echo 19 >/proc/self/autogroup 2>/dev/null || true  # no autogroup (kernel option off): plain nice below still applies

# The CPU seconds (user + system) this script's finished children have used so far, from bash's `times`,
# into cpu_now. Through files, not a pipe or $(...): either forks a subshell, whose own children used nothing.
cpu_log=$log_dir/background-cpu.txt
times_out=$log_dir/background-times.txt
children_cpu() {
  times >"$times_out"
  awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%d\n", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' \
    "$times_out" >"$times_out.sum"
  read -r cpu_now <"$times_out.sum"
}
: >"$cpu_log"
children_cpu
part_cpu=$cpu_now
part_start=$(date +%s)
part_done() {  # one line per part in LOG_DIR/background-cpu.txt: its wall time and its own CPU time
  local now
  children_cpu
  now=$(date +%s)
  printf '%-10s %5d s wall  %5d s cpu\n' "$1" $((now - part_start)) $((cpu_now - part_cpu)) >>"$cpu_log"
  part_cpu=$cpu_now
  part_start=$now
}

# The build targets (paths relative to the build directory) that the tests of the given suites run.
suite_targets() {
  local dir=$1
  shift
  meson introspect "$dir" --tests --targets 2>/dev/null | /usr/bin/python3 -c '
import json, os, sys
doc = json.load(sys.stdin)
d, suites = os.path.abspath(sys.argv[1]), {"shoal:" + s for s in sys.argv[2:]}
files = {t["id"]: t["filename"] for t in doc["targets"]}
out = set()
for t in doc["tests"]:
    if not suites & set(t["suite"]):
        continue
    for dep in t["depends"]:
        out.update(files.get(dep, []))
    if t["cmd"] and t["cmd"][0].startswith(d + "/"):
        out.add(t["cmd"][0])
print(" ".join(sorted(os.path.relpath(f, d) for f in out if f.startswith(d + "/"))))
' "$dir" "$@"
}

# Unoptimized with line tables: the sanitizers' instrumentation makes -O2 -g compiles about 3.4 times
# slower (78 s against 23 s for src/ckpt_service/service.cpp), and what runs here is unit and sim tests.
# Unity (-Dunity=on: a library's files compiled a few at a time as one unit, the test programs file by file):
# measured below in docs/building.md. build/ compiles every file alone, so a file that misses an include
# still fails there.
asan_opts=(-Db_sanitize=address,undefined -Db_lundef=false -Dnccl=disabled -Doptimization=0 -Ddebug=false
  -Dcpp_args=-g1 -Dunity=on)
rc=0
if scripts/build.sh build-asan --configure-only "${asan_opts[@]}"; then
  targets=$(suite_targets build-asan unit sim)
  if [ -z "$targets" ]; then
    echo "test: no build-asan targets for the unit and sim suites" >&2; rc=1
  elif ! nice -n 19 ninja -C build-asan -j "$jobs" $targets >"build-logs/build-asan.ninja.log" 2>&1; then
    tail -n 60 build-logs/build-asan.ninja.log >&2; rc=1
  fi
else
  rc=1
fi
# In CI (a clean clone, built once): the precompiled headers served the compile and nothing rebuilds
# build-asan/ later (its suites run with --no-rebuild), so their 2.6 GB go back to the disk before the fuzz
# and wheel builds need it (CI's machine once ran out of space here). A developer's rerun keeps them.
[ "$rc" -eq 0 ] && [ "${CI:-}" = "true" ] && scripts/drop-pch.sh build-asan
echo "$rc" >"$log_dir/asan-build.rc"
date +%s >"$log_dir/asan-build.end"
part_done build-asan
nice -n 19 scripts/fuzz.sh --build-only >"$log_dir/fuzz-build.txt" 2>&1
echo $? >"$log_dir/fuzz-build.rc"
part_done fuzz
nice -n 19 scripts/pip-install-check.sh --build-only >"$log_dir/pip-build.txt" 2>&1
echo $? >"$log_dir/pip-build.rc"
part_done pip
