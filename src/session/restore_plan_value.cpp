// The per-host restore plan value, encoded and decoded (restore_plan_value.hpp).
#include "session/restore_plan_value.hpp"

#include <string>

#include "ckpt.pb.h"
#include "shoal/errors.hpp"

namespace shoal::session {

comm::Bytes encode_host_plan(const ckpt::RestorePlan& plan, std::span<const uint32_t> ranks) {
  wire::HostRestorePlan v;
  if (plan.kind == ckpt::RestorePlan::Kind::none) {
    v.set_none(true);
  } else if (plan.kind == ckpt::RestorePlan::Kind::refused) {
    v.set_refused(plan.error.empty() ? std::string("refused") : plan.error);
  } else {
    for (const uint32_t r : ranks) {
      if (r >= plan.ranks.size()) continue;
      const auto& part = plan.ranks[r];
      v.add_ranks(r);
      auto* p = v.add_plans();
      p->set_step(part.step);
      p->set_world(part.world);
      p->set_source(part.source);
      for (const auto& h : part.holders) {
        auto* ph = p->add_holders();
        ph->set_holder(h.holder);
        ph->set_addr(h.address);
        ph->set_bytes(h.bytes);
      }
    }
  }
  return comm::to_bytes(v.SerializeAsString());
}

std::optional<ckpt::RankPlan> decode_host_plan(const comm::Bytes& value, uint32_t rank, uint32_t writer,
                                               std::span<const ckpt::ExpectedHolder> expected) {
  const std::string where = "the restore plan of rank " + std::to_string(writer) + "'s host";
  wire::HostRestorePlan v;
  if (!v.ParseFromArray(value.data(), static_cast<int>(value.size())) || v.ranks_size() != v.plans_size()) {
    throw Error(where + " is malformed (rank 0 writes it; another key holder may have overwritten it)");
  }
  if (!v.refused().empty()) throw Error("restore refused: " + v.refused());
  if (v.none()) return std::nullopt;
  for (int i = 0; i < v.ranks_size(); ++i) {
    if (v.ranks(i) != rank) continue;
    const auto& p = v.plans(i);
    if (static_cast<size_t>(p.holders_size()) > expected.size()) {
      throw Error(where + " names " + std::to_string(p.holders_size()) + " holders for rank " + std::to_string(rank) +
                  ", more than the view's " + std::to_string(expected.size()) + " ranks");
    }
    ckpt::RankPlan part{p.step(), p.world(), p.source(), {}};
    part.holders.reserve(static_cast<size_t>(p.holders_size()));
    for (const auto& h : p.holders()) part.holders.push_back({h.holder(), h.addr(), h.bytes()});
    if (auto foreign = ckpt::foreign_plan_holder(part, expected)) {
      throw Error(where + " names " + *foreign + " for rank " + std::to_string(rank) +
                  ", which is not a member of the view at that address (written by another key holder?)");
    }
    if (part.source >= part.world) {
      throw Error(where + " gives rank " + std::to_string(rank) + " saved rank " + std::to_string(part.source) +
                  " of a world of " + std::to_string(part.world));
    }
    return part;
  }
  throw Error(where + " has no part for rank " + std::to_string(rank));
}

}  // namespace shoal::session
