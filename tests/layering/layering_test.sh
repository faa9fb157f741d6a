#!/usr/bin/env bash
# The layering test: the tree keeps the layer order of docs/architecture.md (check_layers.py), and the
# check itself still fails on a planted upward include and on a sideways one, so it cannot pass vacuously.
# usage: layering_test.sh SOURCE_ROOT [PYTHON]
set -uo pipefail
root=$1
py=${2:-/usr/bin/python3}
check="$(dirname "$0")/check_layers.py"
"$py" "$check" "$root" || { echo "FAIL: includes against the layer order (above)"; exit 1; }

plant=$(mktemp -d)
trap 'rm -rf "$plant"' EXIT
cp -r "$root/src" "$root/include" "$plant/"
echo '#include "daemon/agent.hpp"' >>"$plant/src/gossip/swim.cpp"
out=$("$py" "$check" "$plant" 2>&1)
if [ $? -eq 0 ] || ! grep -q 'src/gossip/swim.cpp:.*daemon, a layer above it' <<<"$out"; then
  echo "FAIL: an upward include (gossip -> daemon) went unnoticed:"; echo "$out"; exit 1
fi
cp "$root/src/gossip/swim.cpp" "$plant/src/gossip/swim.cpp"
echo '#include "comm_wrap/communicator.hpp"' >>"$plant/src/ckpt_shm/rank_store.cpp"
out=$("$py" "$check" "$plant" 2>&1)
if [ $? -eq 0 ] || ! grep -q 'src/ckpt_shm/rank_store.cpp:.*comm_wrap, a layer beside it' <<<"$out"; then
  echo "FAIL: a sideways include (ckpt_shm -> comm_wrap) went unnoticed:"; echo "$out"; exit 1
fi
echo "ok: the layer order holds, and planted upward and sideways includes are caught"
