// Why an input from the network was refused, and the counters every receiver keeps by cause.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace shoal::wire {

enum class RejectCause : uint8_t {
  truncated,          // fewer bytes than the header announces
  bad_magic,          // not a shoal packet at all
  oversized,          // larger than the receiver accepts
  malformed,          // the schema does not parse, or required fields are missing
  bad_version,        // a protocol version this build does not speak
  wrong_cluster,      // a packet of another cluster id
  bad_auth,           // a cluster-key seal that does not verify: another key, tampered, a seal format we lack
  no_key,             // unsealed at a host with a cluster key, or sealed at a host without one
  replayed,           // a sealed input delivered before (anti-replay window)
  stale,              // a sealed input sent too long ago or too far in the future (clocks, or a replay)
  wrong_destination,  // a sealed input that names another host as its destination (captured and resent)
  overloaded,         // over a cap: a connection budget, or a message with more members/labels than allowed
  count_
};
inline constexpr size_t kRejectCauses = static_cast<size_t>(RejectCause::count_);

std::string_view name(RejectCause c);

struct DecodeError {
  RejectCause cause;
  std::string detail;  // for the log line: what exactly was wrong
};

// Counts refused inputs by cause. Not thread-safe: each event loop owns one.
class RejectCounters {
 public:
  void add(RejectCause c) { ++counts_[static_cast<size_t>(c)]; }
  uint64_t get(RejectCause c) const { return counts_[static_cast<size_t>(c)]; }
  uint64_t total() const;

 private:
  std::array<uint64_t, kRejectCauses> counts_{};
};

}  // namespace shoal::wire
