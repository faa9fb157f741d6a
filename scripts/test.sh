#!/usr/bin/env bash
# Sets everything up and runs shoal's tests on a fresh Debian 12 machine (as root):
#   1. installs the Debian packages (scripts/setup-debian.sh),
#   2. builds build/ and runs every suite (unit, sim, integration, lab, gpu),
#   3. builds build-asan/ with AddressSanitizer + UBSan (and NCCL off) and runs unit and sim,
#   4. builds the libFuzzer targets with clang and runs each for $SHOAL_FUZZ_SECONDS (10) seconds
#      (scripts/fuzz.sh: every target counts as one test),
# then prints one line "N passed, N failed" summed over all of them. Exit status 0 only when
# nothing failed and at least one test passed.
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
log_dir=${SHOAL_TEST_LOG_DIR:-build-logs}
mkdir -p "$log_dir"
passed=0 failed=0 skipped=0

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
  echo "$passed passed, $failed failed, $skipped skipped"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
  exit $?
}

if ! scripts/setup-debian.sh; then failed=$((failed + 1)); echo "test: setup failed" >&2; finish; fi

echo "== build (build/)" >&2
if scripts/build.sh build; then
  echo "== meson test: all suites" >&2
  meson test -C build --num-processes "$jobs" --print-errorlogs 2>&1 | tee "$log_dir/test-all.txt" | grep -vE '^\s*$' | tail -n 200 >&2
  summarise "$log_dir/test-all.txt"
else
  echo "test: build failed" >&2; failed=$((failed + 1))
fi

echo "== build (build-asan/: address,undefined; nccl disabled)" >&2
if scripts/build.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dnccl=disabled; then
  echo "== meson test under sanitizers: unit, sim" >&2
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
    meson test -C build-asan --suite unit --suite sim --num-processes "$jobs" --print-errorlogs 2>&1 \
    | tee "$log_dir/test-asan.txt" | tail -n 40 >&2
  summarise "$log_dir/test-asan.txt"
else
  echo "test: sanitizer build failed" >&2; failed=$((failed + 1))
fi

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
finish
