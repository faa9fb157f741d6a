#!/usr/bin/env bash
# Configures (once) and builds shoal into build/ (or $1). Requires scripts/setup-debian.sh first.
# Extra meson options can be passed after the directory; --configure-only (right after it) stops after
# the configuration, for a caller that builds chosen targets itself.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
configure_only=0
if [ "${1:-}" = "--configure-only" ]; then configure_only=1; shift; fi
opts=(--wrap-mode=nofallback -Dgloo=enabled)
# NCCL and CUDA live under /usr/local/cuda on the project's machines: insist on them there.
# (Unless the caller chose: a later -Dnccl=... in "$@" decides.)
if [ -f /usr/local/cuda/include/nccl.h ] && [[ " $* " != *" -Dnccl="* ]]; then opts+=(-Dnccl=enabled); fi
mkdir -p build-logs
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" "${opts[@]}" "$@" >"build-logs/$dir.setup.log" 2>&1 || { cat "build-logs/$dir.setup.log" >&2; exit 1; }
fi
[ "$configure_only" -eq 1 ] && exit 0
ninja -C "$dir" -j "$(nproc)" >"build-logs/$dir.ninja.log" 2>&1 || { tail -n 60 "build-logs/$dir.ninja.log" >&2; exit 1; }
