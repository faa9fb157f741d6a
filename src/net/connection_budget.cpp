// The unauthenticated/authenticated/waiting connection budgets of the agent's TCP port.
#include "net/connection_budget.hpp"

namespace shoal::net {

ConnectionBudget::Admission ConnectionBudget::admit(const std::string& source, Time now) {
  Admission a{next_++, std::nullopt};
  // The address's own cap first: a flooding address pays with its own connections.
  if (unauthenticated_from(source) >= caps_.unauthenticated_per_source) {
    a.evict = candidate_from(source);
  } else if (unauthenticated_.size() >= caps_.unauthenticated_total) {
    // The total is full: the address holding the most pays, so many addresses with a few
    // connections each are not evicted for one that floods.
    const std::string* heaviest = nullptr;
    size_t most = 0;
    for (const auto& [s, n] : per_source_) {
      if (n > most) most = n, heaviest = &s;
    }
    if (heaviest != nullptr) a.evict = candidate_from(*heaviest);
  }
  if (a.evict) {  // a cap is full: an idle candidate goes; a handshake in progress only after its grace
    const Unauthenticated& c = unauthenticated_.at(*a.evict);
    // Time::max() (no time given) makes every candidate old; a clock that went back counts as young.
    const bool young = now != Time::max() && (now < c.since || now - c.since < caps_.eviction_grace);
    if (c.progressed && young) {
      a.evict.reset();
      a.refused = true;
      return a;
    }
  }
  if (a.evict) forget_unauthenticated(*a.evict);
  unauthenticated_.emplace(a.ticket, Unauthenticated{source, now == Time::max() ? Time{} : now});
  ++per_source_[source];
  return a;
}

bool ConnectionBudget::authenticate(Ticket t) {
  if (!unauthenticated_.contains(t)) return false;
  forget_unauthenticated(t);
  if (authenticated_ >= caps_.authenticated) return false;
  admitted_.emplace(t, State::authenticated);
  ++authenticated_;
  return true;
}

bool ConnectionBudget::park(Ticket t) {
  const auto it = admitted_.find(t);
  if (it == admitted_.end() || it->second != State::authenticated) return false;
  --authenticated_;
  if (waiting_ >= caps_.waiting) {
    admitted_.erase(it);
    return false;
  }
  it->second = State::waiting;
  ++waiting_;
  return true;
}

void ConnectionBudget::release(Ticket t) {
  if (unauthenticated_.contains(t)) return forget_unauthenticated(t);
  const auto it = admitted_.find(t);
  if (it == admitted_.end()) return;
  if (it->second == State::authenticated) {
    --authenticated_;
  } else {
    --waiting_;
  }
  admitted_.erase(it);
}

size_t ConnectionBudget::unauthenticated_from(const std::string& source) const {
  const auto it = per_source_.find(source);
  return it == per_source_.end() ? 0 : it->second;
}

std::optional<ConnectionBudget::Ticket> ConnectionBudget::candidate_from(const std::string& source) const {
  std::optional<Ticket> oldest;
  for (const auto& [t, u] : unauthenticated_) {  // by age; at most unauthenticated_total entries
    if (u.source != source) continue;
    if (!u.progressed) return t;
    if (!oldest) oldest = t;
  }
  return oldest;
}

void ConnectionBudget::progressed(Ticket t) {
  if (const auto it = unauthenticated_.find(t); it != unauthenticated_.end()) it->second.progressed = true;
}

std::vector<ConnectionBudget::Ticket> ConnectionBudget::idle() const {
  std::vector<Ticket> out;
  for (const auto& [t, u] : unauthenticated_) {
    if (!u.progressed) out.push_back(t);
  }
  return out;
}

bool ConnectionBudget::is_progressed(Ticket t) const {
  const auto it = unauthenticated_.find(t);
  return it != unauthenticated_.end() && it->second.progressed;
}

void ConnectionBudget::forget_unauthenticated(Ticket t) {
  const auto it = unauthenticated_.find(t);
  if (it == unauthenticated_.end()) return;
  if (const auto s = per_source_.find(it->second.source); s != per_source_.end() && --s->second == 0) {
    per_source_.erase(s);
  }
  unauthenticated_.erase(it);
}

}  // namespace shoal::net
