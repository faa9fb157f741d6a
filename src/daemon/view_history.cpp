// Recording committed views and the gossip event that preceded each.
#include "daemon/view_history.hpp"

#include <algorithm>

#include "base/str_cat.hpp"

namespace shoal::daemon {

void ViewHistory::on_member(const gossip::MemberEvent& e) {
  if (pending_since_) return;  // the first event since the last commit started the change
  const bool in_view = last_ && last_->find(e.member.id.name) != nullptr;
  const bool gone = e.member.state == gossip::State::dead || e.member.state == gossip::State::left;
  const bool news = e.member.state == gossip::State::alive && !in_view;
  if (!(gone && in_view) && !news) return;
  pending_since_ = Clock::now();
  pending_trigger_ = e.member.id.name + " " + gossip::to_string(e.member.state);
}

void ViewHistory::on_view(const membership::View& view) {
  ViewChange c;
  c.epoch = view.epoch();
  c.members = view.size();
  for (const auto& m : view.members()) {
    if (!last_ || last_->find(m.name) == nullptr) c.joined.push_back(m.name);
  }
  if (last_) {
    for (const auto& m : last_->members()) {
      if (view.find(m.name) == nullptr) c.left.push_back(m.name);
    }
  }
  if (pending_since_) {
    c.trigger = pending_trigger_;
    c.seconds = std::chrono::duration<double>(Clock::now() - *pending_since_).count();
    size_t i = 0;
    while (i < kBoundsSeconds.size() && *c.seconds > kBoundsSeconds[i]) ++i;
    ++durations_.buckets[i];
    durations_.sum += *c.seconds;
    ++durations_.count;
  }
  if (!view.evicted().empty()) {
    // No gossip event led to it: the straggler verdict did.
    std::string names;
    for (const auto& n : view.evicted()) names += (names.empty() ? "" : ", ") + n;
    c.trigger = names + " evicted (straggler)";
  }
  if (last_ && view.excluded() != last_->excluded()) {
    // No gossip event led to it either: the operator's `shoal view exclude` / `readmit` (or --precheck-exclude).
    std::vector<std::string> in, out;
    for (const auto& n : view.excluded()) {
      if (!last_->excludes(n)) out.push_back(n);
    }
    for (const auto& n : last_->excluded()) {
      if (!view.excludes(n)) in.push_back(n);
    }
    c.trigger = !out.empty() ? joined(out) + " excluded (operator)" : joined(in) + " readmitted (operator)";
  }
  c.committed_unix = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  c.joined_count = c.joined.size();
  c.left_count = c.left.size();
  changes_.push_back(std::move(c));
  ++recorded_;
  while (changes_.size() > kKept) changes_.pop_front();
  if (changes_.size() > kShown) {  // the change that just left the screen keeps a bounded part of its names
    ViewChange& older = changes_[changes_.size() - kShown - 1];
    if (older.joined.size() > kNamesKept) older.joined.resize(kNamesKept);
    if (older.left.size() > kNamesKept) older.left.resize(kNamesKept);
  }
  last_ = view;
  pending_since_.reset();
  pending_trigger_.clear();
}

}  // namespace shoal::daemon
