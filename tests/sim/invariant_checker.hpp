// InvariantChecker: the properties every run must keep, checked on every record an observer shows
// (each member event, and each member list audited): incarnations never go back within one
// (member, generation), generations never go back, a generation once shown dead or left is never
// shown alive again by the same observer, and queues stay within their bounds. The first violation
// stops the run with a message naming the time, the observer, the member and the rule.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gossip/types.hpp"
#include "view_ledger.hpp"

namespace shoal::sim {

// When may an observer show a (member, generation) alive again after showing it dead?
enum class Revival : uint8_t {
  never,          // a dead generation stays dead; only a new generation comes back
  by_refutation,  // only with an incarnation above the one it died at (the member itself refuted)
};

// The rule a new record breaks against the observer's previous one, or nullopt. Pure.
std::optional<std::string> broken_rule(const SeenRecord& before, const gossip::Member& after,
                                       Revival revival = Revival::never);

// The previous record updated by a new one that broke no rule.
SeenRecord advance(const SeenRecord& before, const gossip::Member& after);

class InvariantChecker {
 public:
  explicit InvariantChecker(ViewLedger& ledger, Revival revival = Revival::never)
      : ledger_(ledger), revival_(revival) {}

  // Checks and records one record shown by `observer` about `subject`; false once a violation is found.
  // `source` says where the record came from ("event", "audit").
  bool observe(uint32_t observer, uint32_t subject, const gossip::Member& m, gossip::Time now, const char* source);
  // A queue (`what`, e.g. "the inbox of m3") holds `size` where at most `bound` is allowed.
  bool check_bound(std::string_view what, size_t size, size_t bound, gossip::Time now);
  // Any other failed property (a scenario's own), reported the same way.
  void fail(std::string message, gossip::Time now);

  bool ok() const { return !violation_; }
  const std::optional<std::string>& violation() const { return violation_; }
  uint64_t records_checked() const { return checked_; }

 private:
  ViewLedger& ledger_;
  Revival revival_;
  std::optional<std::string> violation_;
  uint64_t checked_ = 0;
};

// "12.345678s": virtual times in messages.
std::string format_time(gossip::Time t);

}  // namespace shoal::sim
