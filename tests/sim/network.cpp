// Loss, delay, duplication, reordering and partition decisions of the simulated network.
#include "network.hpp"

namespace shoal::sim {

NetworkModel::NetworkModel(size_t members, LinkParams defaults, uint64_t seed) : defaults_(defaults), rng_(seed) {
  resize(members);
}

void NetworkModel::resize(size_t members) {
  ingress_loss_.resize(members, 0.0);
  egress_loss_.resize(members, 0.0);
  group_.resize(members, 0);
}

void NetworkModel::set_link(uint32_t from, uint32_t to, LinkParams params) { links_[key(from, to)] = params; }

void NetworkModel::clear_link(uint32_t from, uint32_t to) { links_.erase(key(from, to)); }

const LinkParams& NetworkModel::link(uint32_t from, uint32_t to) const {
  if (!links_.empty()) {
    if (auto it = links_.find(key(from, to)); it != links_.end()) return it->second;
  }
  return defaults_;
}

void NetworkModel::set_member_loss(uint32_t member, double ingress, double egress) {
  ingress_loss_.at(member) = ingress;
  egress_loss_.at(member) = egress;
}

void NetworkModel::partition(const std::vector<std::vector<uint32_t>>& groups) {
  heal();
  groups_ = static_cast<uint16_t>(groups.size() + 1);
  for (size_t g = 0; g < groups.size(); ++g) {
    for (uint32_t m : groups[g]) group_.at(m) = static_cast<uint16_t>(g + 1);
  }
  blocked_.assign(size_t(groups_) * groups_, 1);
  for (uint16_t g = 0; g < groups_; ++g) blocked_[g * groups_ + g] = 0;
}

void NetworkModel::block_one_way(std::span<const uint32_t> from, std::span<const uint32_t> to) {
  heal();
  groups_ = 3;
  for (uint32_t m : from) group_.at(m) = 1;
  for (uint32_t m : to) group_.at(m) = 2;
  blocked_.assign(9, 0);
  blocked_[1 * 3 + 2] = 1;
}

void NetworkModel::deafen(uint32_t member) {
  deaf_.resize(group_.size(), 0);
  deaf_.at(member) = 1;
}

void NetworkModel::heal() {
  std::fill(group_.begin(), group_.end(), uint16_t{0});
  groups_ = 1;
  blocked_.clear();
  deaf_.clear();
}

Time NetworkModel::sample_delay(const LinkParams& p) {
  Time d = p.delay + Time(static_cast<int64_t>(rng_.below(static_cast<uint64_t>(p.jitter.count()) + 1)));
  if (rng_.chance(p.reorder)) {
    d += Time(static_cast<int64_t>(rng_.below(static_cast<uint64_t>(p.reorder_delay.count()) + 1)));
  }
  return d;
}

DatagramFate NetworkModel::datagram(uint32_t from, uint32_t to) {
  DatagramFate fate;
  if (blocked(from, to) || (to < deaf_.size() && deaf_[to] != 0)) {
    ++counters_.blocked;
    return fate;
  }
  const LinkParams& p = link(from, to);
  const double keep = (1.0 - p.loss) * (1.0 - egress_loss_[from]) * (1.0 - ingress_loss_[to]);
  if (rng_.chance(1.0 - keep)) {
    ++counters_.lost;
    return fate;
  }
  fate.copies = 1;
  fate.delay[0] = sample_delay(p);
  if (rng_.chance(p.duplicate)) {
    fate.copies = 2;
    fate.delay[1] = sample_delay(p);
    ++counters_.duplicated;
  }
  return fate;
}

Time NetworkModel::stream_delay(uint32_t from, uint32_t to, Segment segment) {
  const LinkParams& p = link(from, to);
  Time d = sample_delay(p);
  const double keep = (1.0 - p.loss) * (1.0 - egress_loss_[from]) * (1.0 - ingress_loss_[to]);
  Time rto = segment == Segment::handshake ? Time(1000000) : Time(200000);
  // Six retries cover any deadline the cores use; beyond that the connection is as good as dead.
  for (int retry = 0; retry < 6 && rng_.chance(1.0 - keep); ++retry) {
    d += rto;
    rto *= 2;
    ++counters_.retransmits;
  }
  return d;
}

}  // namespace shoal::sim
