#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ with clang (no meson) and runs each for a bounded time:
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 20)
#   scripts/fuzz.sh --build-only             (compile and link every target, run nothing; exit 1 on a failure)
# Objects are cached in build-fuzz/ (a rerun only recompiles what changed). Each target starts from its
# committed corpus tests/fuzz/corpus/<target>/ plus the seeds make_corpus writes, in a working copy
# build-fuzz/corpus/<target>/ (new inputs go there, never into the repository); crash files go to
# build-fuzz/artifacts/<target>/. Prints one line per target and "N passed, N failed"; exits 0 only
# when every target built and ran without a crash, 77 when clang++ or libFuzzer is missing.
# Environment: FUZZ_CXX (default clang++).
set -uo pipefail
cd "$(dirname "$0")/.."

build_only=0
if [ "${1:-}" = "--build-only" ]; then build_only=1; shift; fi
seconds=${1:-20}
if ! [[ $seconds =~ ^[0-9]+$ ]] || [ "$seconds" -eq 0 ]; then
  echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET] | --build-only" >&2
  exit 2
fi
cxx=${FUZZ_CXX:-clang++}
out=build-fuzz
mkdir -p "$out/logs" "$out/bin"

if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "fuzz: $cxx not found; install clang (Debian: clang, libclang-rt-14-dev)" >&2
  exit 77
fi
probe_log=$out/logs/libfuzzer-probe.log
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' |
  "$cxx" -x c++ - -fsanitize=fuzzer,address,undefined -o "$out/bin/libfuzzer-probe" >"$probe_log" 2>&1; then
  echo "fuzz: $cxx cannot link libFuzzer (Debian: libclang-rt-14-dev); see $probe_log" >&2
  exit 77
fi

# Targets, the shoal sources each needs besides its own file, and its libraries.
proto=$out/proto
targets=(fuzz_packet fuzz_sealed fuzz_frame fuzz_hello fuzz_handshake fuzz_sealed_stream fuzz_view_codec fuzz_ckpt_header
  fuzz_json fuzz_key_text fuzz_swim fuzz_manifest fuzz_rendezvous_request fuzz_config_file fuzz_health_record
  fuzz_health_report fuzz_trainer_stats)
gossip="src/gossip/broadcast_queue.cpp src/gossip/codec.cpp src/gossip/member_table.cpp src/gossip/text_arena.cpp src/gossip/name_index.cpp
  src/gossip/probe_order.cpp src/gossip/push_pull.cpp src/gossip/suspicion.cpp src/gossip/swim.cpp
  src/gossip/swim_probe.cpp src/gossip/swim_streams.cpp src/gossip/swim_updates.cpp src/gossip/swim_evidence.cpp
  src/gossip/types.cpp
  src/base/log.cpp $proto/gossip.pb.cc"
# The control socket's typed replies (nlohmann-json is header-only: nothing to link).
replies="src/control/replies/ckpt_ls.cpp src/control/replies/document.cpp src/control/replies/errors_and_acks.cpp
  src/control/replies/members.cpp src/control/replies/session.cpp src/control/replies/stats.cpp
  src/control/replies/status.cpp src/control/replies/view.cpp src/control/replies/health.cpp
  src/control/replies/check.cpp"
declare -A sources=(
  [fuzz_packet]="src/wire/packet.cpp src/wire/reject.cpp $proto/envelope.pb.cc"
  [fuzz_sealed]="src/wire/sealed_packet.cpp src/wire/cluster_key.cpp src/wire/replay_guard.cpp"
  [fuzz_frame]="src/wire/frame.cpp src/wire/reject.cpp"
  [fuzz_hello]="src/net/stream_hello.cpp src/wire/packet.cpp src/wire/reject.cpp $proto/envelope.pb.cc"
  [fuzz_handshake]="src/wire/stream_handshake.cpp src/wire/frame_cipher.cpp src/wire/sealed_packet.cpp
    src/wire/cluster_key.cpp src/wire/replay_guard.cpp"
  [fuzz_sealed_stream]="src/net/blocking_conn.cpp src/net/bulk_buffers.cpp src/net/host_port.cpp src/base/tcp_backoff.cpp
    src/base/log.cpp src/wire/frame_cipher.cpp src/wire/stream_handshake.cpp src/wire/sealed_packet.cpp src/wire/cluster_key.cpp
    src/wire/replay_guard.cpp src/wire/frame.cpp"
  [fuzz_view_codec]="src/membership/view_codec.cpp src/membership/view.cpp src/wire/reject.cpp $proto/membership.pb.cc"
  [fuzz_ckpt_header]="src/ckpt_shm/version_layout.cpp src/ckpt_shm/version_stream.cpp src/ckpt_shm/checksum.cpp
    src/ckpt_shm/chunk_lists.cpp src/ckpt_shm/chunk_ranges.cpp
    src/ckpt_shm/shm_segment.cpp src/ckpt_shm/segment_trust.cpp src/ckpt_shm/device/absent_copy.cpp src/base/log.cpp"
  [fuzz_json]="$replies src/control/handlers.cpp src/base/log.cpp"
  [fuzz_key_text]="src/wire/cluster_key.cpp"
  [fuzz_swim]="$gossip src/wire/packet.cpp src/wire/reject.cpp $proto/envelope.pb.cc"
  [fuzz_manifest]="src/ckpt_shm/persist_files.cpp src/ckpt_shm/persist_io.cpp src/ckpt_shm/persist_trust.cpp src/ckpt_shm/version_layout.cpp
    src/ckpt_shm/checksum.cpp src/ckpt_shm/shm_segment.cpp src/ckpt_shm/segment_trust.cpp src/ckpt_shm/device/absent_copy.cpp
    src/base/log.cpp"
  [fuzz_rendezvous_request]="src/comm_wrap/stores/rendezvous_table.cpp $proto/rendezvous.pb.cc"
  [fuzz_config_file]="src/ops/config_file.cpp"
  [fuzz_health_record]="src/health/step_record.cpp src/health/straggler_judge.cpp"
  [fuzz_health_report]="src/health/health_report.cpp src/health/straggler_judge.cpp src/base/member_name.cpp"
  [fuzz_trainer_stats]="src/health/trainer_stats.cpp"
  [make_corpus]="tests/fuzz/corpus_stream_seeds.cpp src/wire/packet.cpp src/wire/reject.cpp src/wire/frame.cpp src/wire/sealed_packet.cpp
    src/wire/stream_handshake.cpp src/wire/cluster_key.cpp src/wire/replay_guard.cpp src/net/stream_hello.cpp src/membership/view_codec.cpp
    src/membership/view.cpp src/ckpt_shm/version_layout.cpp src/ckpt_shm/checksum.cpp src/ckpt_shm/shm_segment.cpp src/ckpt_shm/segment_trust.cpp
    src/ckpt_shm/device/absent_copy.cpp src/ckpt_shm/persist_files.cpp src/ckpt_shm/persist_io.cpp src/ckpt_shm/persist_trust.cpp
    $proto/envelope.pb.cc $proto/membership.pb.cc $proto/rendezvous.pb.cc $gossip $replies"
)
declare -A libs=(
  [fuzz_packet]="-lprotobuf" [fuzz_sealed]="-lsodium" [fuzz_frame]="" [fuzz_hello]="-lprotobuf"
  [fuzz_handshake]="-lsodium" [fuzz_sealed_stream]="-lsodium -lfmt"
  [fuzz_view_codec]="-lprotobuf" [fuzz_ckpt_header]="-lfmt" [fuzz_json]="-lfmt" [fuzz_key_text]="-lsodium"
  [fuzz_swim]="-lprotobuf -lfmt" [fuzz_manifest]="-lfmt" [fuzz_rendezvous_request]="-lprotobuf" [fuzz_config_file]=""
  [fuzz_health_record]="" [fuzz_health_report]="-lfmt" [fuzz_trainer_stats]="-lfmt"
  [make_corpus]="-lprotobuf -lsodium -lfmt"
)

sanitize=(-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
cflags=(-std=c++20 -g1 -O1 -DSPDLOG_FMT_EXTERNAL -DBOOST_ASIO_NO_DEPRECATED -Isrc -Iinclude "-I$proto")
harness_flags=(-Wall -Wextra -Werror)  # our own fuzz code; shoal and generated sources build as meson builds them

# Objects compiled with other flags or another compiler are thrown away.
flags_now="$("$cxx" --version | head -n 1) ${sanitize[*]} ${cflags[*]} ${harness_flags[*]}"
if [ "$(cat "$out/obj/flags" 2>/dev/null)" != "$flags_now" ]; then
  rm -rf "$out/obj"
  mkdir -p "$out/obj"
  echo "$flags_now" >"$out/obj/flags"
fi

# True when $1 is missing or older than any file its dependency file $2 names.
stale() {
  local obj=$1 dep=$2 f
  [ -f "$obj" ] && [ -f "$dep" ] || return 0
  for f in $(sed -e 's/^[^:]*://' -e 's/\\$//' "$dep"); do
    [ -e "$f" ] && ! [ "$f" -nt "$obj" ] || return 0
  done
  return 1
}

# compile SRC LOG [extra flags...]: prints the object's path; fails when the compiler does.
compile() {
  local src=$1 log=$2
  shift 2
  local obj=$out/obj/${src%.*}.o
  local dep=${obj%.o}.d
  if stale "$obj" "$dep"; then
    mkdir -p "$(dirname "$obj")"
    "$cxx" "${sanitize[@]}" "${cflags[@]}" "$@" -MMD -MF "$dep" -c "$src" -o "$obj" >>"$log" 2>&1 || return 1
  fi
  echo "$obj"
}

# The Protobuf code, generated as proto/meson.build does (headers included as "envelope.pb.h").
gen_proto() {
  local stamp=$proto/.stamp f
  if [ -f "$stamp" ]; then
    local newer=0
    for f in proto/*.proto; do [ "$f" -nt "$stamp" ] && newer=1; done
    [ "$newer" -eq 0 ] && return 0
  fi
  mkdir -p "$proto"
  protoc --proto_path=proto "--cpp_out=$proto" proto/*.proto >"$out/logs/protoc.log" 2>&1 || return 1
  touch "$stamp"
}

# build NAME MAIN_SRC [link flags...]: compiles what changed and links build-fuzz/bin/NAME.
build() {
  local name=$1 main=$2
  shift 2
  local log=$out/logs/$name.build.log objs=() obj src
  : >"$log"
  obj=$(compile "$main" "$log" "${harness_flags[@]}") || return 1
  objs+=("$obj")
  for src in ${sources[$name]}; do
    obj=$(compile "$src" "$log") || return 1
    objs+=("$obj")
  done
  local bin=$out/bin/$name relink=0
  [ -f "$bin" ] || relink=1
  for obj in "${objs[@]}"; do [ "$obj" -nt "$bin" ] && relink=1; done
  if [ "$relink" -eq 1 ]; then
    # shellcheck disable=SC2086  # the library list is words
    "$cxx" "$@" "${objs[@]}" -o "$bin" ${libs[$name]} -lpthread >>"$log" 2>&1 || return 1
  fi
}

# Compiles every shoal source the targets share, $(nproc) at a time, before the targets link one by one:
# each object once, never two compilers writing the same one. A failure is reported by the build below.
precompile() {
  local jobs=$1 src running=0 all=""
  declare -A seen=()
  for t in "${targets[@]}" make_corpus; do
    for src in ${sources[$t]}; do
      [ -n "${seen[$src]:-}" ] && continue
      seen[$src]=1
      all+=" $src"
    done
  done
  for t in "${targets[@]}" make_corpus; do all+=" tests/fuzz/$t.cpp"; done
  for src in $all; do
    if [[ $src == tests/fuzz/* ]]; then
      compile "$src" "$out/logs/precompile.log" "${harness_flags[@]}" >/dev/null &
    else
      compile "$src" "$out/logs/precompile.log" >/dev/null &
    fi
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
      wait -n || true
      running=$((running - 1))
    fi
  done
  wait || true
}

passed=0 failed=0
proto_ok=1
gen_proto || { proto_ok=0; echo "fuzz: protoc failed; see $out/logs/protoc.log" >&2; }
: >"$out/logs/precompile.log"
[ "$proto_ok" -eq 1 ] && precompile "$(nproc)"

if [ "$build_only" -eq 1 ]; then
  ok=$proto_ok
  build make_corpus tests/fuzz/make_corpus.cpp -fsanitize=fuzzer-no-link,address,undefined ||
    { echo "fuzz: make_corpus BUILD FAILED (see $out/logs/make_corpus.build.log)"; ok=0; }
  for t in "${targets[@]}"; do
    build "$t" "tests/fuzz/$t.cpp" "${sanitize[@]}" || { echo "fuzz: $t BUILD FAILED (see $out/logs/$t.build.log)"; ok=0; }
  done
  [ "$ok" -eq 1 ]
  exit $?
fi

# The seeds, from the current encoders. make_corpus links the instrumented objects, without libFuzzer's main.
rm -rf "$out/seeds"
if [ "$proto_ok" -eq 1 ] && build make_corpus tests/fuzz/make_corpus.cpp -fsanitize=fuzzer-no-link,address,undefined &&
  "$out/bin/make_corpus" "$out/seeds" >"$out/logs/make_corpus.log" 2>&1; then
  :
else
  echo "fuzz: make_corpus FAILED (see $out/logs/make_corpus.build.log, $out/logs/make_corpus.log)"
  failed=$((failed + 1))
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
built=()
for t in "${targets[@]}"; do
  if { [ "$proto_ok" -eq 0 ] && [[ ${sources[$t]} == *.pb.cc* ]]; } ||
    ! build "$t" "tests/fuzz/$t.cpp" "${sanitize[@]}"; then
    echo "fuzz: $t BUILD FAILED (see $out/logs/$t.build.log)"
    failed=$((failed + 1))
    continue
  fi
  built+=("$t")
done

# fuzz_one TARGET: runs it for $seconds and writes its verdict line to $out/logs/TARGET.result ("ok ..." or
# "CRASH ..."), so that $(nproc) targets run at once (each libFuzzer process uses one core).
fuzz_one() {
  local t=$1 corpus artifacts log rc crash runs inputs
  corpus=$out/corpus/$t
  artifacts=$out/artifacts/$t/
  log=$out/logs/$t.log
  mkdir -p "$corpus"
  rm -rf "$artifacts"
  mkdir -p "$artifacts"
  # Committed inputs (seeds and crash regressions) are replayed first, as part of loading the corpus.
  for dir in "tests/fuzz/corpus/$t" "$out/seeds/$t"; do
    [ -d "$dir" ] && cp -f "$dir"/* "$corpus"/ 2>/dev/null
  done
  "$out/bin/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts" "$corpus" >"$log" 2>&1
  rc=$?
  crash=$(find "$artifacts" -type f | head -n 1)
  if [ "$rc" -eq 0 ] && [ -z "$crash" ]; then
    runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n 1)
    inputs=$(find "$corpus" -type f | wc -l)
    echo "ok (${runs:-?} runs, $inputs inputs)" >"$out/logs/$t.result"
  else
    echo "CRASH: ${crash:-no crash file, exit status $rc; see $log}" >"$out/logs/$t.result"
  fi
}

running=0
for t in "${built[@]}"; do
  rm -f "$out/logs/$t.result"
  fuzz_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$(nproc)" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true
for t in "${built[@]}"; do
  result=$(cat "$out/logs/$t.result" 2>/dev/null || echo "CRASH: no verdict; see $out/logs/$t.log")
  echo "fuzz: $t $result"
  if [[ $result == ok* ]]; then
    passed=$((passed + 1))
  else
    grep -m 3 -E '^SUMMARY|ERROR: (libFuzzer|AddressSanitizer)|runtime error' "$out/logs/$t.log" | sed 's/^/  /' >&2
    failed=$((failed + 1))
  fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
