#!/usr/bin/env bash
# Finds NCCL's headers and library for the build, so that the NCCL backend is compiled (and its code never
# rots) wherever a CUDA toolkit is installed, GPU or not. Prints the NCCL root (with include/nccl.h and
# lib/libnccl.so) on stdout, or nothing when there is no CUDA toolkit or no NCCL to be had.
#   1. under the CUDA toolkit (/usr/local/cuda), where some images ship it;
#   2. else PyPI's nvidia-nccl-cu13 wheel (CUDA 13), unpacked once into build-deps/nccl.
# Idempotent: an unpacked wheel is kept.
set -uo pipefail
cd "$(dirname "$0")/.."
cuda=${CUDA_HOME:-/usr/local/cuda}
[ -f "$cuda/include/cuda_runtime_api.h" ] || exit 0
if [ -f "$cuda/include/nccl.h" ]; then echo "$cuda"; exit 0; fi
root=build-deps/nccl
if [ ! -f "$root/include/nccl.h" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  if ! python3 -m pip download -q --disable-pip-version-check --no-deps -d "$tmp" "nvidia-nccl-cu13" >&2; then
    echo "setup-nccl: no NCCL under $cuda and the nvidia-nccl-cu13 wheel could not be had: NCCL backend not built" >&2
    exit 0
  fi
  rm -rf "$root" && mkdir -p "$root"
  python3 - "$tmp" "$root" <<'PY' || { echo "setup-nccl: unpacking the NCCL wheel failed" >&2; rm -rf "$root"; exit 0; }
import glob, os, shutil, sys, zipfile
tmp, root = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(tmp, "nvidia_nccl_cu13-*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith("nvidia/nccl/include/") or name.startswith("nvidia/nccl/lib/libnccl.so"):
            dest = os.path.join(root, name[len("nvidia/nccl/"):])
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with z.open(name) as src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out)
PY
  ln -sf libnccl.so.2 "$root/lib/libnccl.so"
fi
echo "$(cd "$root" && pwd)"
