#!/usr/bin/env bash
# Sets everything up and runs the main job on a fresh Debian 12 machine (as root): installs the
# Debian packages, builds shoal, runs `shoal demo` (the local multi-host demo on loopback: failure
# detection and committed views), then scripts/demo_training.sh (trainers rebuilding after a kill).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh
echo "demo: building (first build takes a few minutes on 2 cores)" >&2
scripts/build.sh build
build/shoal demo "$@"
exec scripts/demo_training.sh
