// The last committed views as this agent saw them change, for `shoal status`: when each committed,
// what changed (members in and out), and how long the change took here: from the first gossip event
// that differed from the committed view (a member dead, left or new) to the commit. Runs on the
// agent's loop; not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "gossip/types.hpp"
#include "membership/view.hpp"

namespace shoal::agent {

struct ViewChange {
  uint64_t epoch = 0;
  size_t members = 0;
  std::vector<std::string> joined;  // names new in this view
  std::vector<std::string> left;    // names of the previous view not in this one
  std::string trigger;              // the first gossip event after the previous view ("host2 dead"); empty: none seen
  std::optional<double> seconds;    // from that event to the commit
  double committed_unix = 0;        // wall clock of the commit, seconds since 1970
};

class ViewHistory {
 public:
  static constexpr size_t kKept = 8;

  void on_member(const gossip::MemberEvent& e);
  void on_view(const membership::View& view);
  // Newest last.
  std::vector<ViewChange> changes() const { return {changes_.begin(), changes_.end()}; }

 private:
  using Clock = std::chrono::steady_clock;
  std::optional<membership::View> last_;
  std::optional<Clock::time_point> pending_since_;
  std::string pending_trigger_;
  std::deque<ViewChange> changes_;
};

}  // namespace shoal::agent
