#!/usr/bin/env bash
# Sets everything up and runs shoal's tests on a fresh Debian 12 machine (as root):
#   1. installs the Debian packages (scripts/setup-debian.sh) and makes a virtual environment with torch
#      2.13.0 from PyPI (scripts/setup-venv.sh),
#   2. builds build/ and runs its suites (integration, python, lab, gpu, bench); the python suite runs
#      twice, under Debian's python3 with its torch 1.13 and in the virtual environment with torch 2.13,
#   3. builds build-asan/ with AddressSanitizer + UBSan (and NCCL off) and runs unit and sim there (only
#      there: their programs are compiled once, with the sanitizers, not a second time in build/),
#   4. builds the libFuzzer targets with clang and runs each for $SHOAL_FUZZ_SECONDS (10) seconds
#      (scripts/fuzz.sh: every target counts as one test),
#   5. the README's install block as written, in a fresh clone (scripts/build-wheel.sh: the release build a
#      user gets, as a self-contained wheel, installed with pip), then trains from it
#      (scripts/pip-install-check.sh: one test),
# then prints how long each stage took and one line "N passed, N failed" summed over all of it. Exit
# status 0 only when nothing failed and at least one test passed.
#
# Most of build/'s test time is spent waiting (agents detecting faults, the lab's 5-minute loss run), so
# the sanitizer build, the fuzz targets and the pip install's build compile meanwhile at the lowest CPU
# priority (scripts/background-builds.sh): the tests keep the processor whenever they want it. The sanitizer build compiles only
# what its suites run; the pip install's build is the user's own (release, from a fresh clone).
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
log_dir=${SHOAL_TEST_LOG_DIR:-build-logs}
mkdir -p "$log_dir"
passed=0 failed=0 skipped=0
stages=()
clk_tck=$(getconf CLK_TCK)
cpu_busy() {  # the machine's busy CPU time since boot, in seconds (all cores; /proc/stat: user..steal, not idle/iowait)
  awk -v hz="$clk_tck" '/^cpu /{print int(($2 + $3 + $4 + $7 + $8 + $9) / hz); exit}' /proc/stat
}
stage_start=$(date +%s)
all_start=$stage_start
stage_cpu=$(cpu_busy)
all_cpu=$stage_cpu

disk_free_gib() { df -P -k . | awk 'NR == 2 { printf "%.1f", $4 / 1048576 }'; }  # free space where the builds go

stage_done() {  # records how long the stage that just ended took, the CPU the whole machine spent meanwhile, and the disk left
  local now cpu
  now=$(date +%s)
  cpu=$(cpu_busy)
  stages+=("$(printf '%-44s %5d s   cpu %5d s (%3d%% of %d cores)   disk free %s GiB' "$1" $((now - stage_start)) \
    $((cpu - stage_cpu)) $(( (cpu - stage_cpu) * 100 / ( (now - stage_start > 0 ? now - stage_start : 1) * jobs ) )) \
    "$jobs" "$(disk_free_gib)")")
  stage_start=$now
  stage_cpu=$cpu
}

summarise() {  # adds meson's closing block (Ok/Expected Fail/Fail/Unexpected Pass/Skipped/Timeout) to the totals
  local f=$1 ok xfail fail xpass skip tmo
  ok=$(awk '/^Ok:/{print $2}' "$f"); xfail=$(awk '/^Expected Fail:/{print $3}' "$f")
  fail=$(awk '/^Fail:/{print $2}' "$f"); xpass=$(awk '/^Unexpected Pass:/{print $3}' "$f")
  skip=$(awk '/^Skipped:/{print $2}' "$f"); tmo=$(awk '/^Timeout:/{print $2}' "$f")
  if [ -z "$ok" ]; then failed=$((failed + 1)); echo "test: no meson summary in $f" >&2; return; fi
  passed=$((passed + ok + ${xfail:-0}))
  failed=$((failed + ${fail:-0} + ${xpass:-0} + ${tmo:-0}))
  skipped=$((skipped + ${skip:-0}))
}

finish() {
  # The failing tests' own lines, here at the end where CI's tail keeps them (meson printed them long before).
  [ "$failed" -gt 0 ] && python3 scripts/failed-logs.py build/meson-logs/testlog.json build-asan/meson-logs/testlog.json >&2
  {
    echo "== stage durations"
    printf '  %s\n' "${stages[@]}"
    printf '  %-44s %5d s   cpu %5d s\n' "total" $(($(date +%s) - all_start)) $(($(cpu_busy) - all_cpu))
    [ -s "$log_dir/background-cpu.txt" ] && sed 's/^/  background build: /' "$log_dir/background-cpu.txt"
  } | tee "$log_dir/stages.txt" >&2
  echo "$passed passed, $failed failed, $skipped skipped"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
  exit $?
}

# A whole run writes about 12 GB at its peak (measured: docs/building.md); need_gib adds a margin. With less free it fails late, in a link or
# a log write, so say so first. Not fatal: an earlier run's builds may already hold most of it.
need_gib=14
echo "test: $(disk_free_gib) GiB free on the disk of $(pwd) (a run from scratch needs about $need_gib GiB)" >&2
if awk -v f="$(disk_free_gib)" -v n="$need_gib" 'BEGIN { exit !(f < n) }'; then
  echo "test: warning: less than $need_gib GiB free; builds and logs may fail with 'No space left on device'" >&2
fi
if ! scripts/setup-debian.sh; then failed=$((failed + 1)); echo "test: setup failed" >&2; finish; fi
stage_done "setup (Debian packages)"
if ! venv_python=$(scripts/setup-venv.sh build-venv/torch2); then
  failed=$((failed + 1)); echo "test: the virtual environment with torch 2.13.0 could not be made" >&2; finish
fi
stage_done "setup (virtual environment, torch 2.13.0)"

echo "== build (build/)" >&2
built=0
# The python suite's second interpreter, and no unit or sim programs (build-asan/ runs those suites); an
# existing build/ is told too (build.sh configures only once).
[ -f build/build.ninja ] && meson configure build "-Dtest_pythons=$venv_python" -Dunit_programs=false -Doptimization=1 >/dev/null
# Line tables only (-g1) where this script configures build/ itself: backtraces keep file and line,
# and the compile is about a quarter faster than with full debug information (-g). -O1, not the default
# -O2: about 30% less compile time (measured: gossip/swim.cpp 10.8 s -> 7.1 s), and what build/ runs is
# tests, whose speed is not what they measure (the benchmarks compare against baselines of the same run; the
# wheel that users run is built at -O3 by the pip check).
if scripts/build.sh build -Dcpp_args=-g1 -Doptimization=1 "-Dtest_pythons=$venv_python" -Dunit_programs=false; then
  built=1
else
  echo "test: build failed" >&2; failed=$((failed + 1))
fi
# In CI, the test programs' precompiled headers (1.1 GB) go back to the disk: they are built, and the one
# test that calls ninja again (readme_demo) builds only shoal and the example trainer, whose headers stay.
[ "$built" -eq 1 ] && [ "${CI:-}" = "true" ] && scripts/drop-pch.sh build/tests
stage_done "build/ (all targets)"

# In the background, at the lowest CPU priority: the sanitizer build of what unit and sim run, then the fuzz
# targets, then the user's release build (scripts/background-builds.sh: it runs in a session of its own
# whose autogroup is niced, since a plain `nice` does not lower a process against the tests' own sessions).
setsid --wait scripts/background-builds.sh "$log_dir" &
background=$!
# Its session is not ours, so an interrupt of this script does not reach it: stop it on the way out.
trap 'kill -- -"$background" 2>/dev/null' EXIT

if [ "$built" -eq 1 ]; then
  echo "== meson test: all suites but unit and sim (the sanitizer build compiles meanwhile at the lowest priority)" >&2
  meson test -C build --no-rebuild --no-suite unit --no-suite sim --num-processes "$jobs" --print-errorlogs 2>&1 | tee "$log_dir/test-all.txt" | grep -vE '^\s*$' | tail -n 200 >&2
  summarise "$log_dir/test-all.txt"
fi
stage_done "build/ tests (all suites but unit, sim)"

wait "$background"
stage_done "rest of build-asan/ and fuzz targets"

echo "== meson test under sanitizers: unit, sim" >&2
if [ "$(cat "$log_dir/asan-build.rc" 2>/dev/null)" = "0" ]; then
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
    meson test -C build-asan --no-rebuild --suite unit --suite sim --num-processes "$jobs" --print-errorlogs 2>&1 \
    | tee "$log_dir/test-asan.txt" | tail -n 40 >&2
  summarise "$log_dir/test-asan.txt"
else
  echo "test: sanitizer build failed" >&2; failed=$((failed + 1))
fi
stage_done "build-asan/ tests (unit, sim)"

echo "== fuzz: the decoders of untrusted bytes, ${SHOAL_FUZZ_SECONDS:-10} s per target (scripts/fuzz.sh)" >&2
scripts/fuzz.sh "${SHOAL_FUZZ_SECONDS:-10}" > "$log_dir/fuzz.txt" 2>&1
fuzz_rc=$?
grep -E '^fuzz: ' "$log_dir/fuzz.txt" >&2
fuzz_line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log_dir/fuzz.txt" | tail -n 1)
if [ "$fuzz_rc" -eq 77 ]; then
  skipped=$((skipped + 1)); echo "test: fuzzing skipped (no clang/libFuzzer)" >&2
elif [ -n "$fuzz_line" ]; then
  passed=$((passed + ${fuzz_line%% passed*}))
  rest=${fuzz_line#*passed, }; failed=$((failed + ${rest%% failed*}))
else
  failed=$((failed + 1)); echo "test: scripts/fuzz.sh printed no summary (exit $fuzz_rc); see $log_dir/fuzz.txt" >&2
fi
stage_done "fuzz (every target)"

echo "== the wheel built and installed into a fresh virtual environment, then training from it (scripts/pip-install-check.sh)" >&2
if [ "$(cat "$log_dir/pip-build.rc" 2>/dev/null)" = "0" ] && \
    build-venv/readme/home/venv/bin/python tests/pip/train_from_install.py >"$log_dir/pip-check.txt" 2>&1; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
fi
cat "$log_dir/pip-build.txt" "$log_dir/pip-check.txt" 2>/dev/null | tail -n 30 >&2
stage_done "pip install check"
finish
