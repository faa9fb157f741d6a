#!/usr/bin/env bash
# Installs every Debian package that shoal's build, tests, benchmarks and demo need.
# Idempotent: when everything is present it prints nothing and returns at once.
set -euo pipefail

packages=(
  g++ git meson ninja-build pkg-config cmake
  libboost-dev libprotobuf-dev protobuf-compiler libspdlog-dev libfmt-dev doctest-dev
  libgloo-dev systemd libsodium-dev nlohmann-json3-dev libcli11-dev libopenblas-dev
  iproute2 nftables procps dnsmasq-base
  python3-torch python3-pytest python3-pybind11 pybind11-dev python3-venv
  slurm-wlm munge clang libclang-rt-14-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: run as root (missing: ${missing[*]})" >&2; exit 1; }
  sudo=sudo
fi
echo "setup: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done" >&2
