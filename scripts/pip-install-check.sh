#!/usr/bin/env bash
# The README's install, run as written: the shell block under "## Install" in README.md, line by line, in a
# fresh clone of this checkout (nothing of the test build is reused: pip builds in its own temporary
# directory with the wheel's own options, a release build), with HOME set to a fresh folder so that the
# block's `~/venv` is new. Then tests/pip/train_from_install.py trains from the installed package alone.
#   scripts/pip-install-check.sh [--build-only]     (--build-only: stop after the README's block)
# The clone is of HEAD plus the checkout's uncommitted changes to tracked files (`git stash create`);
# untracked files are not in it. The build's compiler warnings fail the check, although the build itself
# does not stop for them (a user's build has werror off, see pyproject.toml): CI sees every warning of
# the build a user runs (PIP_VERBOSE=1 makes pip show the compiler's output). Ends with "pip install: ok ..." and exit 0, or says what failed.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
work=$repo/build-venv/readme
logs=$repo/build-logs
mkdir -p "$logs"
rm -rf "$work"
mkdir -p "$work/home"

rev=$(git stash create 2>/dev/null)
rev=${rev:-HEAD}
if ! git clone -q --no-hardlinks "$repo" "$work/shoal" >"$logs/pip-clone.log" 2>&1 ||
    ! git -C "$work/shoal" checkout -q --detach "$rev" >>"$logs/pip-clone.log" 2>&1; then
  cat "$logs/pip-clone.log"; echo "pip install: cannot clone this checkout"; exit 1
fi

# The block between "## Install" and the next heading: its first ```sh fence.
block=$(awk '/^## Install/{on=1; next} on && /^## /{exit} on && /^```sh/{f=1; next} f && /^```/{exit} f' README.md)
if [ -z "$block" ]; then echo "pip install: README.md has no shell block under '## Install'"; exit 1; fi
printf '%s\n' "$block" >"$work/install.sh"

echo "pip install: running README.md's install block in $work/shoal (HOME=$work/home):" >&2
sed 's/^/  | /' "$work/install.sh" >&2
start=$(date +%s)
if ! (cd "$work/shoal" && HOME="$work/home" PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_VERBOSE=1 bash -e -x "$work/install.sh") \
    >"$logs/pip-install.log" 2>&1 </dev/null; then
  tail -n 60 "$logs/pip-install.log"; echo "pip install: the README's install block failed (build-logs/pip-install.log)"
  exit 1
fi
echo "pip install: the README's install block took $(( $(date +%s) - start )) s" >&2
# A warning in the user's build is a defect here even though it did not stop the build.
if grep -E '(^|: )warning: ' "$logs/pip-install.log" | grep -v '^pip' >"$logs/pip-warnings.log"; then
  head -n 40 "$logs/pip-warnings.log"
  echo "pip install: the build a user runs printed compiler warnings (build-logs/pip-warnings.log)"; exit 1
fi
venv_python=$work/home/venv/bin/python
[ "${1:-}" = "--build-only" ] && { echo "pip install: built ($venv_python)"; exit 0; }
"$venv_python" tests/pip/train_from_install.py
