// The last committed views as this agent saw them change, for `shoal status` (the last kShown) and
// `shoal status --history` (the last kKept): when each committed, what changed (members in and out), and
// how long the change took here: from the first gossip event that differed from the committed view (a
// member dead, left or new) to the commit. Runs on the agent's loop; not thread-safe.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "gossip/types.hpp"
#include "membership/view.hpp"

namespace shoal::daemon {

struct ViewChange {
  uint64_t epoch = 0;
  size_t members = 0;
  std::vector<std::string> joined;  // names new in this view (past the shown ones, the first kNamesKept)
  std::vector<std::string> left;    // names of the previous view not in this one (likewise)
  size_t joined_count = 0;          // all of them, also those no longer kept
  size_t left_count = 0;
  std::string trigger;              // the first gossip event after the previous view ("host2 dead"); empty: none seen
  std::optional<double> seconds;    // from that event to the commit
  double committed_unix = 0;        // wall clock of the commit, seconds since 1970
};

class ViewHistory {
 public:
  static constexpr size_t kShown = 8;   // on `shoal status`'s screen
  static constexpr size_t kKept = 256;  // for `view-history`
  // Names kept of each list once a change is no longer shown (a cluster's first view joins every member).
  static constexpr size_t kNamesKept = 64;

  void on_member(const gossip::MemberEvent& e);
  void on_view(const membership::View& view);
  // The last kShown, newest last.
  std::vector<ViewChange> changes() const {
    return {changes_.end() - static_cast<std::ptrdiff_t>(std::min(changes_.size(), kShown)), changes_.end()};
  }
  // Every change kept (the last kKept), newest last.
  std::vector<ViewChange> all_changes() const { return {changes_.begin(), changes_.end()}; }
  // Views committed since the start, also those no longer kept.
  uint64_t recorded() const { return recorded_; }

  // Every timed change since start, as a histogram of seconds: buckets[i] counts those of at most
  // kBoundsSeconds[i] (not cumulative), the last one those above every bound.
  static constexpr std::array<double, 9> kBoundsSeconds = {0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120};
  struct Histogram {
    std::array<uint64_t, kBoundsSeconds.size() + 1> buckets{};
    double sum = 0;
    uint64_t count = 0;
  };
  const Histogram& durations() const { return durations_; }

 private:
  using Clock = std::chrono::steady_clock;
  std::optional<membership::View> last_;
  std::optional<Clock::time_point> pending_since_;
  std::string pending_trigger_;
  std::deque<ViewChange> changes_;
  uint64_t recorded_ = 0;
  Histogram durations_;
};

}  // namespace shoal::daemon
