#!/usr/bin/env bash
# `meson install` puts shoal, libshoal, the public headers and shoal.pc in place, and a trainer builds
# against the installed copy with nothing but `pkg-config --cflags --libs shoal`.
# usage: pkgconfig_install_test.sh BUILD_DIR
set -euo pipefail
build=$1
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
meson install -C "$build" --destdir "$stage" --no-rebuild --quiet >/dev/null
pc=$(find "$stage" -name shoal.pc | head -n 1)
[ -n "$pc" ] || { echo "FAIL: no shoal.pc installed"; exit 1; }
bin=$(find "$stage" -type f -name shoal -perm -u+x | head -n 1)
[ -n "$bin" ] || { echo "FAIL: no shoal binary installed"; exit 1; }
[ -f "$(find "$stage" -path '*/include/shoal/version.hpp' | head -n 1)" ] || { echo "FAIL: headers missing"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$stage
flags=$(pkg-config --cflags --libs shoal)
cat >"$stage/trainer.cpp" <<'CPP'
#include <shoal/version.hpp>
#include <cstdio>
int main() { std::printf("%.*s\n", int(shoal::build::version().size()), shoal::build::version().data()); }
CPP
# shellcheck disable=SC2086
c++ -std=c++20 "$stage/trainer.cpp" $flags -o "$stage/trainer"
libdir=$(dirname "$(find "$stage" -name 'libshoal.so' | head -n 1)")
out=$(LD_LIBRARY_PATH=$libdir "$stage/trainer")
want=$(meson introspect "$build" --projectinfo | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
[ "$out" = "$want" ] || { echo "FAIL: trainer printed '$out', want '$want'"; exit 1; }
echo "ok: installed shoal $out, built a trainer with pkg-config ($flags)"
