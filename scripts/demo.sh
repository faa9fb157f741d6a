#!/usr/bin/env bash
# Sets everything up and runs the main job on a fresh Debian 12 machine (as root): installs the
# Debian packages, builds shoal, runs `shoal demo` (the local multi-host demo on loopback: failure
# detection and committed views), then scripts/demo_training.sh (trainers rebuilding after a kill).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh
# Only what the demo runs: the shoal program and the example trainer (the tests are scripts/test.sh's).
echo "demo: building shoal and the example trainer (the first build takes a few minutes on 2 cores)" >&2
scripts/build.sh build --configure-only -Dcpp_args=-g1  # line tables only, as scripts/test.sh builds
ninja -C build -j "$(nproc)" shoal examples/allreduce_trainer >build-logs/demo.ninja.log 2>&1 ||
  { tail -n 60 build-logs/demo.ninja.log >&2; exit 1; }
build/shoal demo "$@"
exec scripts/demo_training.sh
