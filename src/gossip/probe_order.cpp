// The randomised round-robin probe order.
#include "gossip/probe_order.hpp"

namespace shoal::gossip {

size_t uniform_index(std::mt19937_64& rng, size_t n) {
  // Lemire's multiply-shift: unbiased enough for n far below 2^64, and one generator call.
  const unsigned __int128 product = static_cast<unsigned __int128>(rng()) * n;
  return static_cast<size_t>(product >> 64);
}

void ProbeOrder::add(Slot member, std::mt19937_64& rng) {
  order_.push_back(member);
  const size_t span = order_.size() - pos_;  // the new entry and those not yet probed
  std::swap(order_.back(), order_[pos_ + uniform_index(rng, span)]);
}

std::optional<ProbeOrder::Slot> ProbeOrder::next(const std::function<bool(Slot)>& probeable,
                                                 const std::function<std::vector<Slot>()>& candidates,
                                                 std::mt19937_64& rng) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    while (pos_ < order_.size()) {
      const Slot member = order_[pos_++];
      if (probeable(member)) return member;
    }
    order_ = candidates();
    shuffle_in_place(order_, rng);
    pos_ = 0;
    if (order_.empty()) return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace shoal::gossip
