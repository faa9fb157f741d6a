// Bookkeeping of the observers' views and the convergence counts.
#include "view_ledger.hpp"

namespace shoal::sim {

ViewLedger::ViewLedger(size_t members, size_t max_tracked) {
  if (max_tracked > 0 && members > max_tracked) stride_ = (members + max_tracked - 1) / max_tracked;
  resize(members);
}

void ViewLedger::resize(size_t members) {
  const size_t old = live_.size();
  if (members <= old) return;
  rows_.resize(members);
  generation_.resize(members, 0);
  live_.resize(members, 0);
  alive_known_.resize(members, 0);
  for (uint32_t o = 0; o < members; ++o) {
    if (tracked(o)) rows_[o].resize(members);
  }
}

size_t ViewLedger::tracked_count() const { return (live_.size() + stride_ - 1) / stride_; }

const SeenRecord* ViewLedger::get(uint32_t observer, uint32_t subject) const {
  if (!tracked(observer) || subject >= rows_[observer].size()) return nullptr;
  return &rows_[observer][subject];
}

void ViewLedger::put(uint32_t observer, uint32_t subject, const SeenRecord& rec) {
  if (!tracked(observer)) return;
  SeenRecord& slot = rows_[observer][subject];
  alive_known_[observer] -= counts(observer, subject, slot) ? 1 : 0;
  slot = rec;
  alive_known_[observer] += counts(observer, subject, slot) ? 1 : 0;
}

void ViewLedger::reset_observer(uint32_t observer) {
  if (!tracked(observer)) return;
  std::fill(rows_[observer].begin(), rows_[observer].end(), SeenRecord{});
  alive_known_[observer] = 0;
}

void ViewLedger::set_subject(uint32_t subject, uint32_t generation, bool live) {
  for (uint32_t o = 0; o < rows_.size(); o += static_cast<uint32_t>(stride_)) {
    if (counts(o, subject, rows_[o][subject])) --alive_known_[o];
  }
  live_count_ -= live_[subject];
  generation_[subject] = generation;
  live_[subject] = live ? 1 : 0;
  live_count_ += live_[subject];
  for (uint32_t o = 0; o < rows_.size(); o += static_cast<uint32_t>(stride_)) {
    if (counts(o, subject, rows_[o][subject])) ++alive_known_[o];
  }
}

bool ViewLedger::all_know_all() const {
  if (live_count_ == 0) return false;
  for (uint32_t o = 0; o < rows_.size(); o += static_cast<uint32_t>(stride_)) {
    if (live_[o] && alive_known_[o] + 1 != live_count_) return false;
  }
  return true;
}

size_t ViewLedger::count_showing(uint32_t subject, uint32_t generation, gossip::State state) const {
  size_t n = 0;
  for (uint32_t o = 0; o < rows_.size(); o += static_cast<uint32_t>(stride_)) {
    if (!live_[o] || o == subject) continue;
    const SeenRecord& r = rows_[o][subject];
    if (r.generation == generation && r.state == state) ++n;
  }
  return n;
}

size_t ViewLedger::live_tracked_others(uint32_t subject) const {
  size_t n = 0;
  for (uint32_t o = 0; o < rows_.size(); o += static_cast<uint32_t>(stride_)) n += (o != subject) ? live_[o] : 0;
  return n;
}

}  // namespace shoal::sim
