// Rate limiting for warnings about inputs from the network: at most one line per key (a reject
// cause, an unreachable seed) per interval, reporting how many were held back in between.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace shoal::log {

class WarnLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit WarnLimiter(std::chrono::milliseconds interval) : interval_(interval) {}

  // nullopt: stay quiet. Otherwise log now; the value is how many were suppressed since the last line.
  std::optional<uint64_t> admit(std::string_view key, Clock::time_point now) {
    auto [it, fresh] = slots_.try_emplace(std::string(key));
    Slot& s = it->second;
    if (!fresh && now - s.last < interval_) {
      ++s.suppressed;
      return std::nullopt;
    }
    const uint64_t held = s.suppressed;
    s.last = now;
    s.suppressed = 0;
    return held;
  }

 private:
  struct Slot {
    Clock::time_point last{};
    uint64_t suppressed = 0;
  };
  std::chrono::milliseconds interval_;
  std::map<std::string, Slot, std::less<>> slots_;
};

}  // namespace shoal::log
