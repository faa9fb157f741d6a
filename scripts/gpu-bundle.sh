#!/usr/bin/env bash
# Prepares, on a build machine without a GPU, what scripts/gpu-check.sh runs on a machine with one: a folder
# (default .gpu) laid out like a build directory, so the python suite's SHOAL_BUILD_DIR can point at it:
#   shoal, libshoal.so*, tests/  the program, the library and the gpu suite's programs, built here (build/,
#                                configured with NCCL: scripts/build.sh does that where a CUDA toolkit is)
#   lib/                         the shared libraries they need that a GPU machine's image may lack
#                                (Protobuf, spdlog, fmt, libsodium, Gloo, OpenBLAS, ...; never CUDA, NCCL or
#                                the C library: the GPU machine's own are used)
#   python/shoal                 the Python package, with the extension built for the GPU machine's Python
#                                (--python-version, default 3.12: a pyenv interpreter of that version here,
#                                pybind11 from PyPI)
#   scripts/gpu-bundle.sh [DIR] [--python-version X.Y]
set -euo pipefail
cd "$(dirname "$0")/.."
out=.gpu
pyver=3.12
while [ $# -gt 0 ]; do
  case "$1" in
    --python-version) pyver=$2; shift 2 ;;
    *) out=$1; shift ;;
  esac
done
grep -q "SHOAL_HAVE_NCCL" build/build.ninja 2>/dev/null || {
  echo "gpu-bundle: build/ has no NCCL backend (scripts/build.sh configures it where a CUDA toolkit is)" >&2; exit 1; }
ninja -C build shoal libshoal.so tests/test_gpu_probe tests/test_gpu_ckpt_device_save tests/test_nccl_communicator \
  >build-logs/gpu-bundle.ninja.log 2>&1 || { tail -n 40 build-logs/gpu-bundle.ninja.log >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/lib" "$out/tests" "$out/python"
cp -a build/shoal "$out/"
cp -a build/libshoal.so build/libshoal.so.0 build/libshoal.so.0.*[0-9] "$out/"
cp -a build/tests/test_gpu_probe build/tests/test_gpu_ckpt_device_save build/tests/test_nccl_communicator "$out/tests/"

# The libraries the programs and libshoal load, except the C library's, the toolchain's runtime and CUDA's.
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libpthread|libdl\.|librt\.|libgcc_s|libcuda\.|libcudart|libnccl|libshoal)'
for f in "$out/shoal" "$out/libshoal.so" "$out"/tests/*; do
  ldd "$f" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ "$name" =~ $skip ]] && continue
  cp -L "$path" "$out/lib/$name"
done

# The Python package, and its extension for the GPU machine's interpreter.
py="$HOME/.pyenv/versions/$(ls "$HOME/.pyenv/versions" 2>/dev/null | grep -E "^${pyver//./\\.}(\.|$)" | sort -V | tail -n 1)/bin/python3"
[ -x "$py" ] || { echo "gpu-bundle: no Python $pyver here (pyenv) to build the extension for" >&2; exit 1; }
venv=build-venv/py$pyver
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
"$venv/bin/python" -c "import pybind11" 2>/dev/null || "$venv/bin/python" -m pip install -q pybind11
cp -a python/shoal "$out/python/"
find "$out/python" -name meson.build -delete
find "$out/python" -name __pycache__ -prune -exec rm -rf {} +
suffix=$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
# shellcheck disable=SC2046
g++ -O2 -std=c++20 -shared -fPIC -fvisibility=hidden -Wall -Wextra -Werror -Iinclude -Ipython/src \
  $("$venv/bin/python" -m pybind11 --includes) python/src/*.cpp -L"$out" -lshoal -Wl,-rpath,'$ORIGIN/../..' \
  -o "$out/python/shoal/_shoal$suffix"
# Small enough to travel: no debug information, and one compressed archive beside the folder.
find "$out" -type f \( -name '*.so*' -o -perm -u+x \) -exec strip --strip-debug {} + 2>/dev/null || true
tar -C "$(dirname "$out")" -cJf "$out.tar.xz" "$(basename "$out")"
echo "gpu-bundle: $(du -sh "$out" | cut -f1) in $out, $(du -h "$out.tar.xz" | cut -f1) as $out.tar.xz (extension _shoal$suffix)"
