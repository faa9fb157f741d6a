// The acceptor side of single-decree Paxos for one epoch: the highest ballot promised and the value
// accepted. Reset whenever a new view is installed.
#pragma once

#include <cstdint>
#include <optional>

#include "membership/ballot.hpp"
#include "membership/view.hpp"

namespace shoal::membership {

class Acceptor {
 public:
  // Starts deciding `epoch` afresh (after view epoch-1 was installed).
  void reset(uint64_t epoch);
  uint64_t epoch() const { return epoch_; }

  // Phase 1: promise never to accept a lower ballot. False when a higher ballot was promised.
  bool prepare(const Ballot& b);
  // Phase 2: accept `value` unless a higher ballot was promised.
  bool accept(const Ballot& b, const View& value);

  const Ballot& promised() const { return promised_; }
  const std::optional<Ballot>& accepted_ballot() const { return accepted_ballot_; }
  const std::optional<View>& accepted() const { return accepted_; }

 private:
  uint64_t epoch_ = 1;
  Ballot promised_;
  std::optional<Ballot> accepted_ballot_;
  std::optional<View> accepted_;
};

}  // namespace shoal::membership
