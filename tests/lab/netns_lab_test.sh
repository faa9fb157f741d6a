#!/usr/bin/env bash
# lab: K hosts as network namespaces on a bridge, one real `shoal agent` each, under faults
# (partitions, SIGSTOP, kill -9, random loss, garbage input, outsiders with the wrong key); see
# lab_scenarios.py. This wrapper only finds Debian's Python (the scenarios use nothing beyond its
# standard library) so that a machine without it skips instead of failing.
#
# Usage: netns_lab_test.sh SHOAL_BINARY [SCENARIO...]. Exit 0 pass, 77 skip, 1 fail.
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"
skip() {
  echo "SKIP: $*"
  exit 77
}
PYTHON=/usr/bin/python3
[[ -x $PYTHON ]] || PYTHON=$(command -v python3 || true)
[[ -n $PYTHON ]] || skip "python3 is not installed"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 9))' || skip "$PYTHON is older than 3.9"
exec "$PYTHON" "$(dirname "$(readlink -f "$0")")/lab_scenarios.py" "$@"
