// Suspicion timeout arithmetic, confirmation counting and the refusal rule.
#include "gossip/suspicion.hpp"

#include <algorithm>
#include <cmath>

namespace shoal::gossip {

SuspicionBounds suspicion_bounds(Time min_base, double max_mult, uint32_t k, size_t n) {
  const double scale = std::max(1.0, std::log10(static_cast<double>(std::max<size_t>(n, 1))));
  SuspicionBounds b;
  b.min = Time{static_cast<int64_t>(std::llround(static_cast<double>(min_base.count()) * scale))};
  b.max = Time{static_cast<int64_t>(std::llround(static_cast<double>(b.min.count()) * std::max(1.0, max_mult)))};
  b.k = (n < size_t{k} + 2) ? 0 : k;
  return b;
}

uint32_t refusal_confirmations_needed(uint32_t wanted, size_t n) {
  if (n < 3) return 0;
  return static_cast<uint32_t>(std::min<size_t>(wanted, n - 2));
}

Time suspicion_timeout(const SuspicionBounds& b, uint32_t confirmations) {
  if (b.k == 0 || b.max <= b.min) return b.min;
  const double frac = std::log(static_cast<double>(confirmations) + 1.0) / std::log(static_cast<double>(b.k) + 1.0);
  const double span = static_cast<double>((b.max - b.min).count());
  const auto t = Time{static_cast<int64_t>(std::floor(static_cast<double>(b.max.count()) - span * frac))};
  return std::max(b.min, t);
}

SuspicionTimer::SuspicionTimer(Time start, SuspicionBounds bounds, std::string accuser)
    : start_(start), bounds_(bounds), accuser_(std::move(accuser)) {}

bool SuspicionTimer::confirm(const std::string& who) {
  if (who == accuser_) return false;
  if (confirmers_.size() >= bounds_.k) return false;
  if (std::find(confirmers_.begin(), confirmers_.end(), who) != confirmers_.end()) return false;
  confirmers_.push_back(who);
  return true;
}

bool SuspicionTimer::saw_refusal() {
  if (self_refused_) return false;
  self_refused_ = true;
  return true;
}

bool SuspicionTimer::confirm_refusal(const std::string& who) {
  if (refusers_.size() >= kMaxRefusers) return false;
  if (std::find(refusers_.begin(), refusers_.end(), who) != refusers_.end()) return false;
  refusers_.push_back(who);
  return true;
}

bool SuspicionTimer::refusal_confirmed() const {
  return bounds_.refused_k > 0 && self_refused_ && !answered_ && refusers_.size() >= bounds_.refused_k;
}

Time SuspicionTimer::deadline() const {
  const Time normal = start_ + suspicion_timeout(bounds_, confirmations());
  if (!refusal_confirmed()) return normal;
  return std::min(normal, start_ + bounds_.refused_min);
}

}  // namespace shoal::gossip
