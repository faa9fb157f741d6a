// FNV-1a folding of delivered bytes and announced events into the run's trace hash.
#include "trace_hash.hpp"

#include <cstdio>
#include <cstring>

namespace shoal::sim {

void TraceHash::mix_bytes(std::span<const std::byte> bytes) {
  fold(bytes.size());
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);  // host byte order: the hash is compared on one machine
    fold(w);
  }
  for (; i < bytes.size(); ++i) fold(static_cast<uint64_t>(bytes[i]));
}

void TraceHash::mix(std::string_view s) { mix_bytes(std::as_bytes(std::span<const char>(s.data(), s.size()))); }

std::string TraceHash::hex() const {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h_));
  return buf;
}

}  // namespace shoal::sim
