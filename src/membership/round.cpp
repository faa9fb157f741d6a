// Quorum arithmetic of one proposer round (see round.hpp for the rules).
#include "membership/round.hpp"

namespace shoal::membership {

Round::Round(uint64_t id, Ballot ballot, View value, const View& base, bool all_members_mode)
    : id_(id), ballot_(std::move(ballot)), value_(std::move(value)), base_(base), all_members_mode_(all_members_mode) {}

std::map<std::string, std::string> Round::targets() const {
  std::map<std::string, std::string> out;
  if (!all_members_mode_) {
    for (const auto& m : base_.members()) out[m.name] = m.addr;
  }
  for (const auto& m : value_.members()) out[m.name] = m.addr;
  for (const auto& [name, addr] : witnesses_) out.emplace(name, addr);
  return out;
}

bool Round::counts_for_majority(const std::string& name, const Vote& v) const {
  const ViewMember* m = base_.find(name);
  return m != nullptr && v.ok && v.acceptor;
}

bool Round::required_all(const std::string& name) const {
  if (value_.find(name) == nullptr) return false;
  return all_members_mode_ || !inherited_;
}

void Round::record(const std::string& name, Vote v) {
  failed_.erase(name);
  votes_[name] = std::move(v);
}

void Round::record_failure(const std::string& name) {
  if (!votes_.count(name)) failed_[name] = true;
}

Quorum Round::quorum() const {
  for (const auto& [name, v] : votes_) {
    if (v.higher) return Quorum::impossible;
  }
  // Every member that must answer has answered yes?
  bool all_required = true;
  for (const auto& m : value_.members()) {
    if (!required_all(m.name)) continue;
    if (failed_.count(m.name)) return Quorum::impossible;
    const auto it = votes_.find(m.name);
    if (it == votes_.end()) {
      all_required = false;
    } else if (!it->second.ok) {
      return Quorum::impossible;
    }
  }
  for (const auto& [name, addr] : witnesses_) {
    if (failed_.count(name)) return Quorum::impossible;
    const auto it = votes_.find(name);
    if (it == votes_.end()) {
      all_required = false;
    } else if (!it->second.ok) {
      return Quorum::impossible;  // it holds a view already (the keeper learns it from the answer)
    }
  }
  if (all_members_mode_) return all_required ? Quorum::reached : Quorum::pending;

  const size_t need = base_.size() / 2 + 1;
  size_t yes = 0, lost = 0;
  for (const auto& m : base_.members()) {
    const auto it = votes_.find(m.name);
    if (it != votes_.end() && counts_for_majority(m.name, it->second)) {
      ++yes;
    } else if (failed_.count(m.name) || it != votes_.end()) {
      ++lost;  // failed, or answered without being able to count (behind, or not an acceptor)
    }
  }
  if (base_.size() - lost < need) return Quorum::impossible;
  return yes >= need && all_required ? Quorum::reached : Quorum::pending;
}

void Round::begin_accept() {
  const Vote* best = nullptr;
  for (const auto& [name, v] : votes_) {
    if (!v.ok || !v.accepted_ballot || !v.accepted) continue;
    const bool counts = all_members_mode_ ? value_.find(name) != nullptr : counts_for_majority(name, v);
    if (!counts) continue;
    if (best == nullptr || *v.accepted_ballot > *best->accepted_ballot) best = &v;
  }
  if (best != nullptr && best->accepted->epoch() == value_.epoch()) {
    // In all-members mode an adopted value is taken only if all its members answered (they are alive);
    // otherwise the override proceeds with its own value, as documented for `shoal view force`.
    bool usable = true;
    if (all_members_mode_) {
      for (const auto& m : best->accepted->members()) {
        const auto it = votes_.find(m.name);
        if (it == votes_.end() || !it->second.ok) usable = false;
      }
    }
    if (usable) {
      inherited_ = true;  // possibly chosen already: finishing it needs only the majority
      value_ = *best->accepted;
    }
  }
  votes_.clear();
  failed_.clear();
  step_ = RoundStep::accept;
}

bool Round::accepted_by(const std::string& name) const {
  const auto it = votes_.find(name);
  return step_ != RoundStep::prepare && it != votes_.end() && it->second.ok;
}

std::string Round::waiting_for() const {
  std::string out;
  size_t n = 0;
  for (const auto& [name, addr] : targets()) {
    if (votes_.count(name) || failed_.count(name)) continue;
    if (n < 5) out += (n ? ", " : "") + name;
    ++n;
  }
  if (n > 5) out += ", ... (" + std::to_string(n) + ")";
  return out;
}

}  // namespace shoal::membership
