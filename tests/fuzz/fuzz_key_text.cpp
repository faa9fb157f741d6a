// Fuzz target: the cluster key file's text (parse_key_text). An accepted ring is well formed and
// parses again from its keys written as hex; a refusal never echoes a line that could be a key.
#include <sodium.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "wire/cluster_key.hpp"

namespace {

bool key_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/' ||
         c == '=';
}

// True when `message` contains a run of 40 or more hex or base64 characters of `text`: a key, or most
// of one. (The parser's own messages have no such run.)
bool echoes_key(std::string_view text, std::string_view message) {
  size_t i = 0;
  while (i < text.size()) {
    if (!key_char(text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && key_char(text[j])) ++j;
    if (j - i >= 40 && message.find(text.substr(i, 40)) != std::string_view::npos) return true;
    i = j;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal::wire;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto ring = parse_key_text(text, "fuzz.key");
  if (!ring) {
    if (echoes_key(text, ring.error().message)) __builtin_trap();
    return 0;
  }

  if (ring->size() == 0 || ring->size() > kMaxRingKeys) __builtin_trap();
  std::string hex_text;
  for (size_t i = 0; i < ring->size(); ++i) {
    const ClusterKey& key = ring->keys()[i];
    if (ring->find(key.id) != &key || key.id != cluster_key_id(key.bytes)) __builtin_trap();
    if (sodium_is_zero(key.bytes.data(), key.bytes.size())) __builtin_trap();
    char hex[2 * kClusterKeyBytes + 1];
    sodium_bin2hex(hex, sizeof hex, key.bytes.data(), key.bytes.size());
    hex_text += std::string("  ") + hex + " \n# comment\n";
  }
  if (&ring->sending() != &ring->keys()[0]) __builtin_trap();
  auto again = parse_key_text(hex_text, "again");
  if (!again || again->size() != ring->size()) __builtin_trap();
  for (size_t i = 0; i < ring->size(); ++i) {
    if (again->keys()[i].id != ring->keys()[i].id ||
        sodium_memcmp(again->keys()[i].bytes.data(), ring->keys()[i].bytes.data(), kClusterKeyBytes) != 0) {
      __builtin_trap();
    }
  }
  return 0;
}
