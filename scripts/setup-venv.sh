#!/usr/bin/env bash
# Makes (once) a virtual environment with torch from PyPI for the python suite's second run:
#   scripts/setup-venv.sh [DIR]        (default build-venv/torch2)
# torch is pinned: 2.13.0 is the CPU build this project's machines hold on disk (an unpinned torch would
# download a CUDA build of several GB). Debian's python3 makes the environment (python3-venv), so the
# extension built for it (build/python) imports there too. Prints the environment's python on stdout.
# Also kubernetes-validate (pinned; its schemas are in the package: offline), which the python suite's
# test_kubernetes.py checks deploy/kubernetes/ with. Idempotent: an environment that already imports this
# torch and those is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-venv/torch2}
torch_version=${SHOAL_VENV_TORCH:-2.13.0}
py="$dir/bin/python"
if [ -x "$py" ] && "$py" -c "import torch, pytest, numpy, kubernetes_validate; assert torch.__version__.split('+')[0] == '$torch_version'" 2>/dev/null; then
  echo "$(cd "$dir" && pwd)/bin/python"
  exit 0
fi
rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
/usr/bin/python3 -m venv "$dir" >&2
"$py" -m pip install -q --disable-pip-version-check "torch==$torch_version" pytest numpy \
  kubernetes-validate==1.37.0 >&2
echo "$(cd "$dir" && pwd)/bin/python"
