#!/usr/bin/env bash
# Runs on a machine with an NVIDIA GPU, from a checkout that holds the folder scripts/gpu-bundle.sh made
# (default .gpu), with that machine's own python3, torch, CUDA runtime and NCCL:
#   1. the gpu suite's programs (NCCL communicator, device checkpoint copies, the probe);
#   2. tests/gpu/python_gpu_check.py: the Python package's GPU path (every collective of the shoal process
#      group on CUDA tensors over NCCL, stream order, DDP, Checkpointer CUDA save/load against a plain copy);
#   3. the python suite on the machine's CPU against its torch (test_install excepted: meson install).
# Prints every step's output and one closing line "gpu-check: N passed, N failed".
#   scripts/gpu-check.sh [DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=$(cd "${1:-.gpu}" && pwd)
passed=0 failed=0
step() {  # step NAME COMMAND...: runs it, counts it (exit 77 is a skip)
  local name=$1 rc
  shift
  echo "== $name"
  "$@"
  rc=$?
  if [ $rc -eq 0 ]; then passed=$((passed + 1)); echo "== $name: ok"
  elif [ $rc -eq 77 ]; then echo "== $name: skipped"
  else failed=$((failed + 1)); echo "== $name: FAILED (exit $rc)"; fi
}

# This machine's CUDA runtime and NCCL: its CUDA toolkit's, or the ones torch's wheels brought.
libdirs=$(python3 - <<'PY'
import glob, os, site
roots = site.getsitepackages() + ["/usr/local/cuda/lib64", "/usr/local/cuda/lib", "/usr/lib/x86_64-linux-gnu"]
dirs = []
for pattern in ("libnccl.so.2*", "libcudart.so.13*", "libcublas.so.13*"):
    for root in roots:
        hits = glob.glob(os.path.join(root, "**", pattern), recursive=True)
        if hits:
            d = os.path.dirname(hits[0])
            if d not in dirs:
                dirs.append(d)
            break
print(":".join(dirs))
PY
)
export LD_LIBRARY_PATH="$bundle:$bundle/lib${libdirs:+:$libdirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$bundle/python" SHOAL_BUILD_DIR="$bundle" SHOAL_LOG=${SHOAL_LOG:-warn} PYTHONUNBUFFERED=1
echo "gpu-check: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1); \
python $(python3 -c 'import sys; print(sys.version.split()[0])'), torch $(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null), \
glibc $(ldd --version | head -n 1 | awk '{print $NF}'); libraries from $libdirs"

for t in test_gpu_probe test_gpu_ckpt_device_save test_nccl_communicator; do
  step "$t" "$bundle/tests/$t"
done
step "python gpu check" python3 tests/gpu/python_gpu_check.py
step "python suite (CPU, this machine's torch)" python3 -m pytest -q -p no:cacheprovider -o console_output_style=classic \
  --deselect tests/python/test_install.py tests/python
echo "gpu-check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
