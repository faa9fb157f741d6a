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
mkdir -p build-logs
# Where a CUDA toolkit is installed, the NCCL backend is compiled, GPU or not: NCCL from the toolkit, else
# from PyPI's wheel (scripts/setup-nccl.sh). Unless the caller chose: a -Dnccl=... in "$@" decides.
if [ ! -f "$dir/build.ninja" ] && [[ " $* " != *" -Dnccl="* ]]; then
  nccl_root=$(scripts/setup-nccl.sh 2>>build-logs/setup-nccl.log)
  if [ -n "$nccl_root" ]; then opts+=(-Dnccl=enabled "-Dnccl_root=$nccl_root"); fi
fi
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" "${opts[@]}" "$@" >"build-logs/$dir.setup.log" 2>&1 || { cat "build-logs/$dir.setup.log" >&2; exit 1; }
fi
[ "$configure_only" -eq 1 ] && exit 0
ninja -C "$dir" -j "$(nproc)" >"build-logs/$dir.ninja.log" 2>&1 || { tail -n 60 "build-logs/$dir.ninja.log" >&2; exit 1; }
