// Fuzz target: the checkpoint MANIFEST's text parser (ckpt::parse_manifest), which reads what a
// previous run (or a damaged disk) left in <dir>/<job>/MANIFEST.
// Asserts: an accepted text lists each version under its own key and file name; formatting what it
// lists gives a text that parses to the same versions and formats to itself; and listing one of
// those versions twice, or dropping the header, is refused.
#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/log.hpp"
#include "ckpt_shm/persist_files.hpp"

namespace {

using namespace shoal;

bool same(const ckpt::Entries& a, const ckpt::Entries& b) {
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    const auto& x = ia->second;
    const auto& y = ib->second;
    if (ia->first != ib->first || x.rank != y.rank || x.step != y.step || x.sequence != y.sequence ||
        x.world != y.world || x.bytes != y.bytes || x.path != y.path) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  shoal::log::LevelSpec quiet;
  quiet.fallback = spdlog::level::off;
  shoal::log::setup(quiet);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto entries = ckpt::parse_manifest(text);
  if (!entries) {
    if (entries.error().message.empty()) __builtin_trap();
    return 0;
  }
  for (const auto& [key, e] : *entries) {
    if (key != ckpt::Key{e.rank, e.step} || e.path != ckpt::file_name(e.rank, e.step)) __builtin_trap();
    if (ckpt::parse_file_name(e.path) != key) __builtin_trap();
  }

  const std::string formatted = ckpt::format_manifest(*entries);
  auto again = ckpt::parse_manifest(formatted);
  if (!again || !same(*entries, *again) || ckpt::format_manifest(*again) != formatted) __builtin_trap();

  // The header's line is the first; without it nothing parses.
  const size_t header_end = formatted.find('\n');
  if (ckpt::parse_manifest(std::string_view(formatted).substr(header_end + 1))) __builtin_trap();
  if (!entries->empty()) {
    const size_t first_end = formatted.find('\n', header_end + 1);
    const std::string twice = formatted + formatted.substr(header_end + 1, first_end - header_end);
    if (ckpt::parse_manifest(twice)) __builtin_trap();
  }
  return 0;
}
