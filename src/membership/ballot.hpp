// A Paxos ballot: a round number and the proposer's name, ordered lexicographically, so two
// proposers never issue the same ballot.
#pragma once

#include <compare>
#include <cstdint>
#include <string>

namespace shoal::membership {

struct Ballot {
  uint64_t round = 0;
  std::string proposer;

  auto operator<=>(const Ballot&) const = default;
  bool operator==(const Ballot&) const = default;
  bool is_zero() const { return round == 0 && proposer.empty(); }
};

}  // namespace shoal::membership
