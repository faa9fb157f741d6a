#!/usr/bin/env bash
# Deletes the precompiled headers (*.gch, 100-270 MB each) of a finished meson build directory, or of the
# given subdirectories of one, and says how much that freed. Only for a build nothing rebuilds afterwards:
# ninja would rebuild every object of a target whose header is gone.
#   scripts/drop-pch.sh DIR [DIR ...]
set -uo pipefail
freed=0
for dir in "$@"; do
  [ -d "$dir" ] || continue
  while IFS= read -r -d '' f; do
    size=$(stat -c %s "$f" 2>/dev/null || echo 0)
    rm -f "$f" && freed=$((freed + size))
  done < <(find "$dir" -name '*.gch' -type f -print0)
done
echo "drop-pch: freed $((freed / 1048576)) MiB of precompiled headers in $*" >&2
