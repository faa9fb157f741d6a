#!/usr/bin/env bash
# The README's install, run as written: the shell block under "## Install" in README.md, line by line, in a
# fresh clone of this checkout (nothing of the test build is reused: scripts/build-wheel.sh builds the
# wheel with pip in its own temporary directory with the wheel's own options, a release build, and vendors
# its C++ libraries), with HOME set to a fresh folder so that the block's `~/venv` is new. Then `ldd` of
# every installed binary shows only the wheel's own libraries and manylinux's system ones, and
# tests/pip/train_from_install.py trains from the installed package alone.
#   scripts/pip-install-check.sh [--build-only]     (--build-only: stop after the README's block)
# The clone is of HEAD plus the checkout's uncommitted changes to tracked files (`git stash create`);
# untracked files are not in it. The build's compiler warnings fail the check, although the build itself
# does not stop for them (a user's build has werror off, see pyproject.toml): CI sees every warning of
# the build a user runs (PIP_VERBOSE=1 makes pip show the compiler's output). Ends with "pip install: ok ..." and exit 0, or says what failed.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
work=$repo/build-venv/readme
logs=$repo/build-logs
mkdir -p "$logs"
rm -rf "$work"
mkdir -p "$work/home"

rev=$(git stash create 2>/dev/null)
rev=${rev:-HEAD}
if ! git clone -q --no-hardlinks "$repo" "$work/shoal" >"$logs/pip-clone.log" 2>&1 ||
    ! git -C "$work/shoal" checkout -q --detach "$rev" >>"$logs/pip-clone.log" 2>&1; then
  cat "$logs/pip-clone.log"; echo "pip install: cannot clone this checkout"; exit 1
fi

# The block between "## Install" and the next heading: its first ```sh fence.
block=$(awk '/^## Install/{on=1; next} on && /^## /{exit} on && /^```sh/{f=1; next} f && /^```/{exit} f' README.md)
if [ -z "$block" ]; then echo "pip install: README.md has no shell block under '## Install'"; exit 1; fi
printf '%s\n' "$block" >"$work/install.sh"

echo "pip install: running README.md's install block in $work/shoal (HOME=$work/home):" >&2
sed 's/^/  | /' "$work/install.sh" >&2
start=$(date +%s)
if ! (cd "$work/shoal" && HOME="$work/home" PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_VERBOSE=1 bash -e -x "$work/install.sh") \
    >"$logs/pip-install.log" 2>&1 </dev/null; then
  tail -n 60 "$logs/pip-install.log"; echo "pip install: the README's install block failed (build-logs/pip-install.log)"
  exit 1
fi
echo "pip install: the README's install block took $(( $(date +%s) - start )) s" >&2
# A warning in the user's build is a defect here even though it did not stop the build.
if grep -E '(^|: )warning: ' "$logs/pip-install.log" | grep -v '^pip' >"$logs/pip-warnings.log"; then
  head -n 40 "$logs/pip-warnings.log"
  echo "pip install: the build a user runs printed compiler warnings (build-logs/pip-warnings.log)"; exit 1
fi
venv_python=$work/home/venv/bin/python
[ -x "$venv_python" ] || { echo "pip install: the README's block made no $venv_python"; exit 1; }

# What the installed binaries load, as auditwheel show would judge it: every library that the extension
# modules, libshoal and the `shoal` program need resolves either inside the environment's site-packages
# (the wheel's vendored shoal.libs/, libshoal beside the package) or to a library that the manylinux policy
# assumes on every system: glibc's own (libc, libm, libresolv, ...), libstdc++, libgcc_s, libatomic and zlib
# (Debian's zlib1g is a required package). A library found anywhere else (a Debian -dev package's) would be
# missing on a machine without the build's packages.
site=$("$venv_python" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
mapfile -t binaries < <(find "$site/shoal" "$site/shoal.libs" "$site/shoal.scripts" "$site/.shoal.mesonpy.libs" \
  -type f \( -name '*.so*' -o -perm -u+x \) 2>/dev/null | while read -r f; do
    [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = "177ELF" ] && echo "$f"; done)
[ ${#binaries[@]} -gt 0 ] || { echo "pip install: no ELF files installed under $site/shoal*"; exit 1; }
[ -d "$site/shoal.libs" ] || { echo "pip install: no $site/shoal.libs: the installed wheel was not repaired"; exit 1; }
ldd_problems=0
for f in "${binaries[@]}"; do
  while read -r name arrow path _; do
    case "$name" in linux-vdso.so.*|/lib64/ld-linux-x86-64.so.*|ld-linux-x86-64.so.*) continue ;; esac
    case "$name" in
      libc.so.6|libm.so.6|libmvec.so.1|libpthread.so.0|libdl.so.2|librt.so.1|libresolv.so.2|libanl.so.1) continue ;;
      libutil.so.1|libnsl.so.1|libstdc++.so.6|libgcc_s.so.1|libatomic.so.1|libz.so.1) continue ;;
    esac
    [ "$arrow" = "=>" ] && case "$path" in "$site"/*) continue ;; esac
    [ "$path" = "not" ] && path="nowhere (not found)"
    echo "pip install: ${f#"$site"/} needs $name, found at ${path:-nowhere} (not in the wheel, not a manylinux system library)"
    ldd_problems=$((ldd_problems + 1))
  done < <(ldd "$f" 2>&1 | sed 's/^[[:space:]]*//')
done
[ "$ldd_problems" -eq 0 ] || { echo "pip install: the installed wheel is not self-contained"; exit 1; }
echo "pip install: ${#binaries[@]} installed ELF files load only the wheel's own libraries and manylinux's system ones" >&2
[ "${1:-}" = "--build-only" ] && { echo "pip install: built ($venv_python)"; exit 0; }
"$venv_python" tests/pip/train_from_install.py
