// SettleRule: the facts a rank contributes, packed so that one element-wise minimum over the ranks
// summarises them, and the decision taken from that summary (see include/shoal/settle_rule.hpp).
#include "shoal/settle_rule.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <string>

#include "shoal/errors.hpp"

namespace shoal {
namespace {

// A step number and a rank share one int64: steps below 2^42, ranks below 2^20.
constexpr unsigned kRankBits = 20;
constexpr uint64_t kStepLimit = uint64_t{1} << 42;
constexpr int64_t kNone = std::numeric_limits<int64_t>::max();

using Packed = std::array<int64_t, 9>;

// Rank `rank`'s facts, so that the element-wise minimum over the ranks answers every question at once.
Packed pack(const SettleFacts& f, uint64_t rank) {
  if (rank >= (uint64_t{1} << kRankBits)) {
    throw Error("SettleRule: rank " + std::to_string(rank) + " out of range (at most 2^20 ranks)");
  }
  if (f.holds_state && f.next_step >= kStepLimit) {
    throw Error("SettleRule: step counter " + std::to_string(f.next_step) + " out of range (below 2^42)");
  }
  const bool h = f.holds_state;
  const auto half = static_cast<int64_t>(f.digest >> 1);  // min and max of it tell whether all digests agree
  return {
      h ? -1 : 0,                // < 0: someone holds state
      h ? 1 : 0,                 // 1: everyone does
      !h || f.kept_peers ? 1 : 0,  // 1: no holder lost a rank it trained with
      // The newest step a holder would run next and the lowest rank that holds it, in one number.
      h ? static_cast<int64_t>(((kStepLimit - f.next_step) << kRankBits) | rank) : kNone,
      h ? static_cast<int64_t>(f.next_step) : kNone,  // the oldest step a holder is at
      h ? half : kNone,
      h ? -half : 0,
      f.can_restore ? 1 : 0,         // 1: every rank can load a checkpoint
      f.restore_after_loss ? 1 : 0,  // 1: every rank loads one after a loss
  };
}

SettleDecision decide_from(const Packed& m) {
  SettleDecision d;
  d.anyone_holds_state = m[0] < 0;
  const bool everyone_holds = m[1] == 1;
  d.lost_peers = d.anyone_holds_state && m[2] != 1;
  const bool can_restore = m[7] == 1;
  d.restore = can_restore && (!d.anyone_holds_state || (d.lost_peers && m[8] == 1));
  if (d.anyone_holds_state) {
    d.next_step = kStepLimit - (static_cast<uint64_t>(m[3]) >> kRankBits);
    d.source_rank = static_cast<int>(static_cast<uint64_t>(m[3]) & ((uint64_t{1} << kRankBits) - 1));
  }
  // Every rank holds the same state of the same step (the survivors of a loss in data-parallel training, a
  // rebuild of the same view): handing it out would copy every byte onto itself.
  const bool same_everywhere = everyone_holds && static_cast<uint64_t>(m[4]) == d.next_step && m[5] == -m[6];
  d.hand_out = !same_everywhere;
  return d;
}

}  // namespace

SettleDecision SettleRule::decide(std::span<const SettleFacts> ranks) {
  if (ranks.empty()) throw Error("SettleRule: no rank's facts");
  Packed m;
  m.fill(kNone);
  for (size_t r = 0; r < ranks.size(); ++r) {
    const Packed p = pack(ranks[r], r);
    for (size_t i = 0; i < m.size(); ++i) m[i] = std::min(m[i], p[i]);
  }
  return decide_from(m);
}

SettleDecision SettleRule::agree(Communicator& comm, const SettleFacts& mine) {
  Packed p = pack(mine, static_cast<uint64_t>(comm.rank()));
  comm.allreduce(std::span<int64_t>(p), ReduceOp::min);
  return decide_from(p);
}

}  // namespace shoal
