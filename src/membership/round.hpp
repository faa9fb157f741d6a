// One proposer round for one epoch: who must answer, the votes so far, and whether the prepare or
// accept phase has reached its quorum or can no longer reach it. Pure bookkeeping, no messages.
//
// Quorum rules (DESIGN.md "Agreement on the member list"):
// - majority mode (the default, epoch > 1): a phase needs a majority of the base view's members
//   (the acceptors). A fresh value also needs every member of the proposed view to answer in both
//   phases, so a communicator can be built from it. A value adopted from an earlier ballot may
//   already be chosen and needs only the majority (the next epoch removes any member that died).
// - all-members mode (bootstrap at epoch 1, an operator's force, or the `any` policy): every member
//   of the proposed view must answer; the base view's majority is not required.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "membership/ballot.hpp"
#include "membership/view.hpp"

namespace shoal::membership {

struct Vote {
  bool ok = false;                      // promised (phase 1) or accepted (phase 2)
  bool acceptor = false;                // the voter counts itself an acceptor for this epoch
  std::optional<Ballot> accepted_ballot;
  std::optional<View> accepted;
  std::optional<Ballot> higher;         // a nack: the ballot the voter promised instead
};

enum class RoundStep : uint8_t { prepare, accept, done, failed };
enum class Quorum : uint8_t { pending, reached, impossible };

class Round {
 public:
  Round(uint64_t id, Ballot ballot, View value, const View& base, bool all_members_mode);

  // Bootstrap (epoch 1): members gossip knows alive outside the value must answer too, by name -> addr.
  // One that already holds a committed view refuses and sends it, and the proposer learns it instead of
  // founding a second epoch 1 beside it; one that cannot be reached keeps the round from completing.
  void require_answer_from(std::map<std::string, std::string> witnesses) { witnesses_ = std::move(witnesses); }

  uint64_t id() const { return id_; }
  uint64_t epoch() const { return value_.epoch(); }
  const Ballot& ballot() const { return ballot_; }
  const View& value() const { return value_; }
  bool inherited() const { return inherited_; }
  RoundStep step() const { return step_; }

  // Everyone this phase asks: the base view's members and the value's members, by name -> addr.
  std::map<std::string, std::string> targets() const;

  void record(const std::string& name, Vote v);
  void record_failure(const std::string& name);
  Quorum quorum() const;

  // Phase 1 done: adopts the highest accepted value among the votes that count, then phase 2.
  void begin_accept();
  void finish(bool committed) { step_ = committed ? RoundStep::done : RoundStep::failed; }

  // Names that accepted the value in phase 2 (they can install the commit by hash).
  bool accepted_by(const std::string& name) const;
  // A description of who has not answered yet, for the status line.
  std::string waiting_for() const;

 private:
  bool counts_for_majority(const std::string& name, const Vote& v) const;
  bool required_all(const std::string& name) const;

  uint64_t id_;
  Ballot ballot_;
  View value_;
  View base_;
  bool all_members_mode_;
  bool inherited_ = false;
  RoundStep step_ = RoundStep::prepare;
  std::map<std::string, std::string> witnesses_;
  std::map<std::string, Vote> votes_;
  std::map<std::string, bool> failed_;
};

}  // namespace shoal::membership
