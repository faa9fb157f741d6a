// SettleRule: which state every rank of a new communicator takes after a view change, written once for
// every elastic loop (shoal::ElasticLoop, Python's shoal.torch.Elastic). Each rank contributes a few facts
// (does it hold the job's live state, of which step, did it lose a rank it trained with, can it load a
// checkpoint); one small all-reduce (min) gives every rank the same summary, and a pure function of it
// decides, identically everywhere:
//   - nobody holds live state (the job's first build, or every rank restarted): load the checkpoint when
//     every rank can (`restore`); else the loop's own start (ElasticLoop: rank 0's state; Elastic: the ranks'
//     own initialisation, checked to agree);
//   - a rank that trained lost a rank it trained with (a death, a leave) and every rank loads checkpoints
//     after a loss (restore_after_loss): `restore`; when no checkpoint comes, the live state as below;
//   - otherwise (a join, a rebuild of the same view, a loss where the live state is kept): the newest step any
//     rank completed wins, and the lowest rank holding it (`source_rank`) hands its state to all, unless
//     every rank holds that step already with the same digest (`hand_out` false).
// The same rule after a loss and after a join, in C++ and in Python (shoal.SettleRule).
#pragma once

#include <cstdint>
#include <span>

#include "shoal/api.hpp"
#include "shoal/communicator.hpp"

namespace shoal {

// What one rank contributes.
struct SettleFacts {
  bool holds_state = false;  // it holds the job's live state (it trained, took it or loaded it in an earlier view)
  bool kept_peers = true;    // every rank it last trained with is in the new view (true when it held nothing)
  uint64_t next_step = 0;    // the step it would run next (read when holds_state); below 2^42
  uint64_t digest = 0;       // a digest of its live state, compared across ranks (0: states are not compared)
  bool can_restore = false;  // it can load a checkpoint; a restore needs every rank to
  bool restore_after_loss = false;  // after a loss it loads the checkpoint rather than keep the live state
  bool operator==(const SettleFacts&) const = default;
};

// What every rank does; the same on every rank of the communicator.
struct SettleDecision {
  bool restore = false;              // first every rank loads the checkpoint (collective); if none, go on below
  bool anyone_holds_state = false;   // false: nobody does (the loop's own start after a restore that gave nothing)
  bool lost_peers = false;           // a rank that held the state lost a rank it trained with
  uint64_t next_step = 0;            // the newest step a holder would run next (0 when nobody holds state)
  int source_rank = 0;               // the lowest rank holding that step (0 when nobody holds state)
  bool hand_out = true;              // the ranks' states differ: source_rank hands its state to all
  bool operator==(const SettleDecision&) const = default;
};

class SHOAL_API SettleRule {
 public:
  // The decision from every rank's facts, `ranks[r]` being rank r's (pure; what agree() computes with one
  // all-reduce). Throws shoal::Error when a step is 2^42 or more, there are 2^20 ranks or more, or none.
  static SettleDecision decide(std::span<const SettleFacts> ranks);
  // Collective on `comm`: every rank passes its own facts and gets the same decision. It is one all-reduce of
  // nine 64-bit integers, so a peer whose communicator failed makes it throw (ViewChanged, Timeout) before
  // any state moves. Throws shoal::Error for facts out of range (as decide()).
  static SettleDecision agree(Communicator& comm, const SettleFacts& mine);
};

}  // namespace shoal
