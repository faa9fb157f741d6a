#!/usr/bin/env bash
# What a trainer's author meets first: `meson install` puts shoal, libshoal, the public headers and
# shoal.pc in place; the installed prefix still works after it is moved elsewhere; `pkg-config --cflags
# --libs shoal` alone builds a program against it, with nothing private on the compile line; the program
# runs an embedded session and catches shoal::Error thrown inside the library; and libshoal.so exports the
# public API and nothing else.
# usage: pkgconfig_install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

meson install -C "$build" --destdir "$stage/dest" --no-rebuild --quiet >/dev/null
pc=$(find "$stage/dest" -name shoal.pc | head -n 1)
[ -n "$pc" ] || fail "no shoal.pc installed"
[ -n "$(find "$stage/dest" -type f -name shoal -perm -u+x | head -n 1)" ] || fail "no shoal binary installed"
[ -f "$(find "$stage/dest" -path '*/include/shoal/session.hpp' | head -n 1)" ] || fail "headers missing"

# Move the whole installed prefix: nothing may point back to where it was installed.
prefix=$(meson introspect "$build" --buildoptions | /usr/bin/python3 -c \
  'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
mv "$stage/dest$prefix" "$stage/moved"
pcdir=$(dirname "$(find "$stage/moved" -name shoal.pc | head -n 1)")
libdir=$(dirname "$(find "$stage/moved" -name 'libshoal.so' | head -n 1)")
export PKG_CONFIG_PATH=$pcdir
unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_LIBDIR
flags=$(pkg-config --cflags --libs shoal) || fail "pkg-config cannot read the moved shoal.pc"
inc=$(pkg-config --cflags-only-I shoal | sed 's/^ *-I//; s/ *$//')
lib=$(pkg-config --libs-only-L shoal | sed 's/^ *-L//; s/ *$//')
[ "$(realpath -m "$inc")" = "$stage/moved/include" ] || fail "the include path does not follow the moved prefix: $flags"
[ "$(realpath -m "$lib")" = "$libdir" ] || fail "the library path does not follow the moved prefix: $flags"
[[ " $flags " != *" -D"* ]] || fail "private definitions reach a consumer's compile line: $flags"
[[ "$flags" != *"$build"* && "$flags" != *"$src"* ]] || fail "build-machine paths in the flags: $flags"
if grep -q "$build" "$pcdir/shoal.pc"; then fail "shoal.pc names the build directory"; fi

cat >"$stage/trainer.cpp" <<'CPP'
#include <shoal/errors.hpp>
#include <shoal/session.hpp>
#include <shoal/version.hpp>

#include <chrono>
#include <cstdio>

int main() {
  shoal::SessionOptions opt;
  opt.name = "pkgconfig-consumer";
  opt.bind = "127.0.0.1:0";
  opt.control_path = "none";
  opt.log_spec = "warn";
  opt.insecure = true;  // loopback only
  auto session = shoal::Session::start(opt);
  const shoal::RankInfo r = session->wait_for_view(0, std::chrono::seconds(10));
  session->leave();
  bool caught = false;
  try {
    shoal::SessionOptions bad;
    bad.control_path = "/nonexistent/shoal.sock";
    shoal::Session::connect(bad);
  } catch (const shoal::Error& e) {
    caught = true;
  }
  std::printf("%.*s rank %d of %d, error caught: %s\n", int(shoal::build::version().size()),
              shoal::build::version().data(), r.rank, r.world_size, caught ? "yes" : "no");
  return caught ? 0 : 1;
}
CPP
# shellcheck disable=SC2086
c++ -std=c++20 "$stage/trainer.cpp" $flags -o "$stage/trainer" || fail "the consumer does not build with: $flags"
out=$(LD_LIBRARY_PATH=$libdir "$stage/trainer") || fail "the consumer failed: $out"
want=$(meson introspect "$build" --projectinfo | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
[ "$out" = "$want rank 0 of 1, error caught: yes" ] || fail "the consumer printed '$out'"

# The dynamic symbols: the public API (namespace shoal, capitalised types, shoal::build) alone.
extra=$(nm -D --defined-only -C "$libdir/libshoal.so" | sed 's/^[0-9a-f]* [A-Za-z] //' |
  grep -vE '^(shoal::[A-Z]|shoal::build::|typeinfo for shoal::[A-Z]|typeinfo name for shoal::[A-Z]|vtable for shoal::[A-Z])' || true)
[ -z "$extra" ] || fail "libshoal.so exports more than the public API:
$(echo "$extra" | head -n 20)"
count=$(nm -D --defined-only "$libdir/libshoal.so" | wc -l)
echo "ok: installed shoal $want, moved the prefix, built and ran a trainer with pkg-config only ($flags);" \
  "libshoal.so exports $count symbols, all public API"
