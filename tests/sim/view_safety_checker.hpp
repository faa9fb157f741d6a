// ViewSafetyChecker: judges the committed views of a run from outside the keepers. It records every
// view committed at every member and counts three failures:
// - divergences: a second, different view (by hash) committed for an epoch anywhere;
// - minority_commits (majority policy): a view for epoch e+1 (e >= 1) first committed by a proposer that
//   had not received ACCEPTED for it from a majority of view e's members (its own vote counted);
// - unconverged: check_converged() found, once faults stopped, live members that do not all hold one
//   view with exactly the live members in it.
// Each failure keeps a message for the report (the first few).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cluster.hpp"
#include "view_layer.hpp"

namespace shoal::sim {

class ViewSafetyChecker : public ViewObserver {
 public:
  explicit ViewSafetyChecker(membership::QuorumPolicy policy) : policy_(policy) {}

  void on_commit(uint32_t member, uint64_t generation, const membership::View& view, gossip::Time now) override;
  void on_accepted(uint32_t proposer, uint32_t voter, uint64_t voter_generation, uint64_t epoch, uint64_t hash,
                   gossip::Time now) override;

  // Whether every running or paused member holds the same committed view and its members are exactly
  // those members at their current generations. Pure: counts nothing.
  static bool converged(Cluster& c);
  // converged(), counting one `unconverged` (with what differs) when it does not hold.
  bool check_converged(Cluster& c);
  // The stall the majority rule demands: the newest view any live member holds has lost a majority of
  // its members (at the generations it names), and every live member holding it reports `stalled`.
  // Returns one of those members (the smallest), where an operator would run `shoal view force`.
  static std::optional<uint32_t> majority_lost_stall(Cluster& c);

  // An operator forced `epoch` (`shoal view force`): its first commit needs no majority of the view before.
  void forced(uint64_t epoch) { forced_.insert(epoch); }

  uint64_t divergences() const { return divergences_; }
  uint64_t minority_commits() const { return minority_commits_; }
  uint64_t unconverged() const { return unconverged_; }
  uint64_t commits() const { return commits_; }
  const std::vector<std::string>& findings() const { return findings_; }

  // The first view committed for the highest epoch seen so far (the empty view before any).
  const membership::View& latest() const;
  // The first view committed for `epoch`, if any member committed one.
  const membership::View* view_of(uint64_t epoch) const;

 private:
  void note(std::string finding);

  membership::QuorumPolicy policy_;
  std::map<uint64_t, membership::View> first_;         // by epoch: the first view committed for it
  std::map<uint64_t, std::set<uint64_t>> hashes_;      // by epoch: every hash committed for it
  // (proposer, epoch, hash) -> the (voter, generation) pairs whose ACCEPTED the proposer received.
  std::map<std::tuple<uint32_t, uint64_t, uint64_t>, std::set<std::pair<uint32_t, uint64_t>>> accepted_;
  std::set<uint64_t> forced_;
  std::optional<uint64_t> lineage_;  // the lineage of the views committed so far
  membership::View empty_;
  uint64_t divergences_ = 0, minority_commits_ = 0, unconverged_ = 0, commits_ = 0;
  std::vector<std::string> findings_;
};

// "e=3 h=1f2e.. [m0/1 m2/1 m5/2]": a short form of a view for findings (names with generations).
std::string brief(const membership::View& v);

}  // namespace shoal::sim
