// The eviction rule (see eviction.hpp): continuous verdicts, one per window, the acceptor's agreement.
#include "membership/eviction.hpp"

#include <algorithm>

namespace shoal::membership {

void Eviction::on_verdict(uint64_t epoch, const std::vector<std::string>& named, uint64_t step,
                          uint64_t committed_epoch, Time now) {
  if (epoch != committed_epoch) return;  // figures of another view: they say nothing about this one
  if (epoch != epoch_) {
    epoch_ = epoch;
    named_.clear();
    ever_.clear();
  }
  last_report_ = now;
  std::erase_if(named_, [&](const auto& e) { return std::find(named.begin(), named.end(), e.first) == named.end(); });
  for (const auto& name : named) {
    named_.try_emplace(name, Named{now, step});
    ever_.try_emplace(name, step);
  }
}

void Eviction::on_install(const View& installed, Time now) {
  named_.clear();
  ever_.clear();
  last_report_.reset();
  epoch_ = installed.epoch();
  if (!installed.evicted().empty()) last_eviction_ = now;
}

void Eviction::round_failed(Time now) { quiet_until_ = now + cfg_.after; }

std::optional<std::string> Eviction::candidate(const View& view, Time now) const {
  if (!cfg_.enabled || epoch_ != view.epoch() || !last_report_ || now - *last_report_ > kVerdictMaxAge) {
    return std::nullopt;
  }
  if (now < quiet_until_) return std::nullopt;
  if (last_eviction_ && now - *last_eviction_ < cfg_.window) return std::nullopt;
  const std::string* best = nullptr;
  Time best_since{0};
  for (const auto& [name, n] : named_) {
    if (view.find(name) == nullptr || now - n.since < cfg_.after) continue;
    if (best == nullptr || n.since < best_since) {  // the map is ordered by name: ties keep the smaller
      best = &name;
      best_since = n.since;
    }
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

std::optional<Time> Eviction::next_due(const View& view, Time now) const {
  if (!cfg_.enabled || epoch_ != view.epoch() || named_.empty()) return std::nullopt;
  std::optional<Time> due;
  for (const auto& [name, n] : named_) {
    if (view.find(name) == nullptr) continue;
    const Time t = n.since + cfg_.after;
    if (!due || t < *due) due = t;
  }
  if (!due) return std::nullopt;
  Time at = std::max(*due, quiet_until_);
  if (last_eviction_) at = std::max(at, *last_eviction_ + cfg_.window);
  return at > now ? std::optional<Time>(at) : std::nullopt;
}

bool Eviction::agrees(const std::vector<std::string>& names) const {
  if (!cfg_.enabled) return false;
  return std::all_of(names.begin(), names.end(), [&](const std::string& n) { return ever_.count(n) > 0; });
}

std::optional<Eviction::Named> Eviction::named(const std::string& name) const {
  const auto it = named_.find(name);
  if (it == named_.end()) return std::nullopt;
  return it->second;
}

uint64_t Eviction::first_named_step(const std::string& name) const {
  const auto it = ever_.find(name);
  return it == ever_.end() ? 0 : it->second;
}

}  // namespace shoal::membership
