#!/usr/bin/env bash
# The wheel of scripts/build-wheel.sh on a bare Debian 12: a minimal bookworm root made with debootstrap
# (python3 and python3-venv, no compiler, no -dev package), the wheel and torch's CPU wheel with its
# dependencies copied in, and then, inside it (chroot, no network: a network namespace of its own with only
# loopback), an offline `pip install --no-index` into a virtual environment, `import shoal.torch`,
# `shoal --version`, two `shoal agent` programs forming a view, tests/pip/train_from_install.py (two hosts
# with embedded agents, a 2-rank DDP run with flash checkpoints), and pip refusing the wheel for a platform
# with an older glibc than its tag. Not part of CI (root, debootstrap, about 2 minutes to make the root once).
#   scripts/test-wheel-debootstrap.sh [WHEEL]    (default: the newest dist/shoal-*.whl)
#   scripts/test-wheel-debootstrap.sh --prepare  (only the cached root and wheels below, no wheel needed)
# The root is cached (SHOAL_DEBOOTSTRAP_ROOT, default /var/cache/shoal/debootstrap-bookworm) and so are
# torch's dependency wheels (beside it, wheels/): a rerun takes seconds plus the install. Needs root. Prints
# timings, the wheel's size and its vendored libraries, and ends with "wheel test: ok" or says what failed.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${SHOAL_DEBOOTSTRAP_ROOT:-/var/cache/shoal/debootstrap-bookworm}
wheels=$(dirname "$cache")/wheels
torch_wheel=${SHOAL_TORCH_WHEEL:-/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl}
mirror=${SHOAL_DEBIAN_MIRROR:-http://deb.debian.org/debian}
t0=$(date +%s)

say() { echo "wheel test: $*" >&2; }
fail() { echo "wheel test: FAILED: $*"; exit 1; }
since() { echo "$(( $(date +%s) - $1 )) s"; }

[ "$(id -u)" -eq 0 ] || fail "needs root (debootstrap, chroot, mounts)"
[ -f "$torch_wheel" ] || fail "no torch wheel at $torch_wheel (SHOAL_TORCH_WHEEL names another)"
prepare_only=0
if [ "${1:-}" = "--prepare" ]; then
  prepare_only=1
else
  wheel=${1:-$(ls -t dist/shoal-*.whl 2>/dev/null | head -n 1 || true)}
  [ -n "$wheel" ] && [ -f "$wheel" ] || fail "no wheel: give its path, or build one with scripts/build-wheel.sh dist"
  wheel=$(cd "$(dirname "$wheel")" && pwd)/$(basename "$wheel")
fi

if [ "$prepare_only" -eq 0 ]; then
  say "$(basename "$wheel"): $(du -k "$wheel" | cut -f1) KiB; vendored libraries:"
  /usr/bin/python3 - "$wheel" <<'EOF'
import sys, zipfile
names = [i for i in zipfile.ZipFile(sys.argv[1]).infolist()]
for i in names:
    if i.filename.startswith("shoal.libs/") and not i.filename.endswith("/"):
        print("  %-52s %8d KiB" % (i.filename[len("shoal.libs/"):], i.file_size // 1024))
for i in names:
    if i.filename.endswith(".so") or "/scripts/" in i.filename or i.filename.startswith("shoal.scripts/"):
        if not i.filename.startswith("shoal.libs/") and not i.filename.endswith("/"):
            print("  (ours) %-45s %8d KiB" % (i.filename, i.file_size // 1024))
EOF
fi

# ---- the Debian 12 root, made once ----
if [ ! -f "$cache/.shoal-root-ready" ]; then
  command -v debootstrap >/dev/null || {
    say "installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null || fail "cannot install debootstrap"
  }
  t=$(date +%s)
  rm -rf "$cache.partial"
  mkdir -p "$(dirname "$cache")"
  say "debootstrap bookworm into $cache (minbase + python3, python3-venv)"
  debootstrap --variant=minbase --include=python3,python3-venv bookworm "$cache.partial" "$mirror" \
    >"$(dirname "$cache")/debootstrap.log" 2>&1 ||
    { tail -n 20 "$(dirname "$cache")/debootstrap.log"; fail "debootstrap failed ($(dirname "$cache")/debootstrap.log)"; }
  rm -rf "$cache"
  mv "$cache.partial" "$cache"
  touch "$cache/.shoal-root-ready"
  say "root made in $(since "$t")"
else
  say "root cached at $cache"
fi
compilers=$(chroot "$cache" /bin/sh -c 'for c in cc gcc g++ c++ clang; do command -v $c; done' || true)
[ -z "$compilers" ] || fail "the root has a compiler ($compilers): it is to be a machine without one"
devs=$(chroot "$cache" dpkg-query -W -f='${Package}\n' | grep -E -- '-dev$' || true)
[ -z "$devs" ] || fail "the root has -dev packages: $devs"
say "root: $(chroot "$cache" sh -c '. /etc/os-release; echo "$PRETTY_NAME"'), $(chroot "$cache" /usr/bin/python3 --version), $(chroot "$cache" getconf GNU_LIBC_VERSION), no compiler, no -dev package"

# ---- torch's dependency wheels, downloaded once on this machine for the offline install ----
if [ ! -f "$wheels/.complete" ]; then
  t=$(date +%s)
  rm -rf "$wheels"
  mkdir -p "$wheels"
  # This machine's python3 stands for the root's: both CPython 3.11 on glibc 2.36 (the install inside says
  # at once when a wheel does not fit).
  python3 -m pip download -q --disable-pip-version-check --only-binary=:all: -d "$wheels" "$torch_wheel" ||
    fail "pip download of torch's dependencies failed"
  touch "$wheels/.complete"
  say "torch and its dependency wheels downloaded in $(since "$t")"
fi

[ "$prepare_only" -eq 0 ] || { echo "wheel test: prepared ($cache, $wheels) in $(since "$t0")"; exit 0; }

# ---- the test inside the root ----
test_dir=$cache/opt/shoal-test
rm -rf "$test_dir"
mkdir -p "$test_dir/wheels"
cp "$wheel" "$test_dir/"
cp -l "$wheels"/*.whl "$test_dir/wheels/" 2>/dev/null || cp "$wheels"/*.whl "$test_dir/wheels/"
cp tests/pip/train_from_install.py "$test_dir/"
cat >"$test_dir/run.sh" <<EOF
set -euo pipefail
cd /opt/shoal-test
t=\$(date +%s)
/usr/bin/python3 -m venv venv
. venv/bin/activate
pip install -q --disable-pip-version-check --no-index --find-links wheels torch "$(basename "$wheel")"
echo "wheel test: offline install of torch and shoal took \$(( \$(date +%s) - t )) s" >&2
cd /
python -c 'import shoal.torch'
shoal --version
export SHOAL_LOG=warn
bash /opt/shoal-test/agents.sh
python /opt/shoal-test/train_from_install.py
# An older glibc than the tag: pip's own refusal, not a build attempt or a broken import.
if out=\$(pip install --dry-run --no-deps --no-index --target /tmp/old-glibc --platform manylinux_2_31_x86_64 \
    --only-binary=:all: "/opt/shoal-test/$(basename "$wheel")" 2>&1); then
  echo "wheel test: pip accepted the wheel for glibc 2.31"; exit 1
fi
echo "\$out" | grep -q "is not a supported wheel on this platform" ||
  { echo "\$out"; echo "wheel test: pip refused the wheel for glibc 2.31, but not as an unsupported platform"; exit 1; }
echo "wheel test: for glibc 2.31 pip says: \$(echo "\$out" | grep 'not a supported wheel' | head -n 1)" >&2
EOF
# Two `shoal agent` programs on loopback with one key form a committed view of both.
cat >"$test_dir/agents.sh" <<'EOF'
set -euo pipefail
cd /tmp
rm -f job.key
shoal keygen --output job.key >/dev/null
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT
shoal agent --name a0 --bind 127.0.0.1:17946 --min-hosts 2 --key-file job.key --control /tmp/a0.sock \
  >/tmp/a0.log 2>&1 & pids+=($!)
shoal agent --name a1 --bind 127.0.0.1:17947 --min-hosts 2 --key-file job.key --control /tmp/a1.sock \
  --seeds 127.0.0.1:17946 >/tmp/a1.log 2>&1 & pids+=($!)
for _ in $(seq 1 150); do
  if view=$(shoal view --control /tmp/a1.sock 2>/dev/null) && echo "$view" | grep -q a0 && echo "$view" | grep -q a1; then
    echo "wheel test: two shoal agents in one committed view:" >&2
    echo "$view" | sed 's/^/  | /' >&2
    exit 0
  fi
  sleep 0.2
done
cat /tmp/a0.log /tmp/a1.log >&2
shoal view --control /tmp/a1.sock >&2 || true
echo "wheel test: the two agents formed no view of both in 30 s"; exit 1
EOF

mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[$i]}" 2>/dev/null || umount -l "${mounted[$i]}" || true; done
}
trap cleanup EXIT
mount -t proc proc "$cache/proc" && mounted+=("$cache/proc")
mount --bind /dev "$cache/dev" && mounted+=("$cache/dev")
mount -t tmpfs -o size=2g,mode=1777 shm "$cache/dev/shm" && mounted+=("$cache/dev/shm")

t=$(date +%s)
# No network inside: a namespace of its own with loopback only, so that the install is offline for certain.
if unshare --net true 2>/dev/null && command -v ip >/dev/null; then
  runner=(unshare --net /bin/sh -c 'ip link set lo up && exec chroot "$0" /bin/bash /opt/shoal-test/run.sh' "$cache")
  net="no network (a namespace with loopback only)"
else
  runner=(chroot "$cache" /bin/bash /opt/shoal-test/run.sh)
  net="the host's network (no network namespace here); pip ran with --no-index"
fi
say "inside the root, $net:"
if ! env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/root LANG=C.UTF-8 "${runner[@]}"; then
  fail "inside the Debian 12 root (above)"
fi
say "inside the root: $(since "$t"); whole test $(since "$t0")"
echo "wheel test: ok ($(basename "$wheel"), $(du -k "$wheel" | cut -f1) KiB, on $(chroot "$cache" sh -c '. /etc/os-release; echo "$PRETTY_NAME"'))"
