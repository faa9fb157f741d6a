#!/usr/bin/env bash
# The pip install a user does, checked: a fresh virtual environment (build-venv/pip), torch 2.13.0 from PyPI
# (pinned: the CPU build this project's machines hold on disk), then `pip install .` of this checkout
# (meson-python builds libshoal, the extension and the `shoal` program against the system's libraries), then
# tests/pip/train_from_install.py trains from the installed package alone.
#   scripts/pip-install-check.sh [--build-only]     (--build-only: stop after the install)
# The wheel's build directory (build-pip) is kept, so a second run rebuilds only what changed. Ends with
# "pip install: ok ..." and exit 0, or says what failed.
set -uo pipefail
cd "$(dirname "$0")/.."
venv=build-venv/pip
mkdir -p build-logs
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv" || { echo "pip install: cannot make a virtual environment (python3-venv)"; exit 1; }
if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check torch==2.13.0 >build-logs/pip-torch.log 2>&1; then
  tail -n 20 build-logs/pip-torch.log; echo "pip install: torch 2.13.0 did not install"; exit 1
fi
# build-dir keeps the build between runs; the compile options are the wheel's own (release) plus those below.
if ! "$venv/bin/python" -m pip install -v --disable-pip-version-check . --config-settings=build-dir=build-pip \
    ${SHOAL_PIP_SETUP_ARGS:-} >build-logs/pip-install.log 2>&1; then
  tail -n 60 build-logs/pip-install.log; echo "pip install: pip install . failed (build-logs/pip-install.log)"; exit 1
fi
[ "${1:-}" = "--build-only" ] && { echo "pip install: built"; exit 0; }
"$venv/bin/python" tests/pip/train_from_install.py
