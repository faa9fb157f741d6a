// The forging key holder (forging_layer.hpp): an honest keeper underneath, forged requests and answers on top.
#include "forging_layer.hpp"

#include <limits>

#include "addresses.hpp"
#include "membership/view_codec.hpp"

namespace shoal::sim {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

wire::ViewRequest commit_of(const membership::View& v, const std::string& from, uint64_t generation) {
  wire::ViewRequest req;
  req.set_epoch(v.epoch());
  req.set_from_name(from);
  req.set_from_generation(generation);
  req.mutable_commit()->set_hash(v.hash());
  membership::to_msg(v, req.mutable_commit()->mutable_view());
  return req;
}

}  // namespace

ForgingLayer::ForgingLayer(uint32_t member, membership::Config cfg, gossip::Identity self, uint64_t seed,
                           const std::vector<ViewObserver*>& observers, bool track_accepts, gossip::Time coalesce,
                           uint32_t cluster_size, gossip::Time period,
                           std::function<uint64_t(uint32_t)> generation_of)
    : ViewLayer(member, std::move(cfg), std::move(self), seed, observers, track_accepts, coalesce),
      member_(member),
      cluster_size_(cluster_size),
      generation_of_(std::move(generation_of)),
      period_(period) {}

std::optional<membership::View> ForgingLayer::pair_with(uint32_t m, uint64_t epoch) const {
  std::vector<membership::ViewMember> ms = invented(epoch, 0);
  ms.push_back(membership::ViewMember{member_name(m), member_name(m), member_addr(m), 8, epoch, generation_of_(m)});
  auto v = membership::View::make(epoch, std::move(ms), keeper().view().lineage());
  return v ? std::optional<membership::View>(std::move(*v)) : std::nullopt;
}

std::vector<membership::ViewMember> ForgingLayer::invented(uint64_t epoch, size_t n) const {
  std::vector<membership::ViewMember> out;
  if (const membership::ViewMember* me = keeper().view().find(keeper().self().name)) out.push_back(*me);
  for (size_t i = 0; i < n; ++i) {
    // Addresses no member of the simulated cluster has (members are 10.0.x.y).
    out.push_back(membership::ViewMember{"stranger" + std::to_string(i), "nowhere",
                                         "10.99.0." + std::to_string(i + 1) + ":7946", 8, epoch, 1});
  }
  return out;
}

std::vector<std::byte> ForgingLayer::forged(Kind kind, uint64_t e) const {
  const membership::View& real = keeper().view();
  const std::string& me = keeper().self().name;
  const uint64_t gen = keeper().self().generation;
  const auto make = [&](uint64_t epoch, std::vector<membership::ViewMember> members) {
    auto v = membership::View::make(epoch, std::move(members), real.lineage() ^ 0x0bad);
    return v ? std::optional<membership::View>(std::move(*v)) : std::nullopt;
  };
  std::optional<membership::View> v;
  std::string from = me;
  uint64_t from_gen = gen;
  switch (kind) {
    case overflow: {
      auto forged = membership::View::make(kMax, real.members(), real.lineage());
      if (forged) v = std::move(*forged);
      break;
    }
    case far_epoch: v = make(uint64_t{1} << 40, invented(uint64_t{1} << 40, 2)); break;
    case strangers: v = make(e + 1, invented(e + 1, 3)); break;
    case impersonated: {
      std::vector<membership::ViewMember> ms;
      for (const auto& m : real.members()) {
        if (m.name == me) continue;
        if (from == me) {  // the first other member: its name signs the COMMIT, and it is left out
          from = m.name;
          from_gen = m.generation;
          continue;
        }
        ms.push_back(m);
      }
      for (auto& s : invented(e + 1, 2)) {
        if (s.name != me) ms.push_back(s);
      }
      v = make(e + 1, std::move(ms));
      break;
    }
    case outsider:
      v = make(e + 1, invented(e + 1, 2));
      from = "intruder";
      from_gen = 1;
      break;
    case jump: v = make(e + 7, invented(e + 7, 3)); break;
    case ballot: {
      wire::ViewRequest req;
      req.set_epoch(e + 1);
      req.set_from_name(me);
      req.set_from_generation(gen);
      req.mutable_ballot()->set_round(kMax);
      req.mutable_ballot()->set_proposer(me);
      req.mutable_prepare();
      return membership::encode(req);
    }
    case pair:
    case kinds_: break;
  }
  if (!v) return {};
  return membership::encode(commit_of(*v, from, from_gen));
}

void ForgingLayer::on_tick(gossip::Time now, gossip::Effects& out) {
  ViewLayer::on_tick(now, out);
  if (stopped_) return;
  const uint64_t e = keeper().view().epoch();
  if (e > 0 && now >= next_) {
    const auto kind = static_cast<Kind>(next_kind_);
    next_kind_ = static_cast<uint8_t>((next_kind_ + 1) % kinds_);
    const std::vector<std::byte> bytes = forged(kind, e);
    bool sent = false;
    for (uint32_t m = 0; m < cluster_size_; ++m) {
      if (m == member_) continue;
      std::vector<std::byte> one = bytes;
      if (kind == pair) {
        const auto v = pair_with(m, e + 1);
        if (v) one = membership::encode(commit_of(*v, keeper().self().name, keeper().self().generation));
      }
      if (one.empty()) continue;
      out.streams.push_back(gossip::StreamRequest{next_token_++, member_addr(m), std::move(one), now + period_});
      sent = true;
    }
    if (sent) ++sent_[kind];
    next_ = now + period_;
  }
  if (next_ > now) out.wake_no_later_than(next_);
}

std::vector<std::byte> ForgingLayer::on_stream_request(const std::string& from, std::span<const std::byte> bytes,
                                                       gossip::Time now, gossip::Effects& out) {
  auto req = membership::decode_request(bytes);
  if (stopped_ || !req || !req->has_query()) return ViewLayer::on_stream_request(from, bytes, now, out);
  // A member catching up asks what this one committed: a view of the forger's invention, one epoch ahead.
  const uint64_t epoch = std::max(req->epoch(), keeper().view().epoch()) + 1;
  std::optional<membership::View> lie;
  if (req->epoch() == 0) {  // a joiner: a view of the forger and the joiner alone
    if (const auto m = index_of_addr(from)) lie = pair_with(*m, epoch);
  } else if (auto v = membership::View::make(epoch, invented(epoch, 2), keeper().view().lineage())) {
    lie = std::move(*v);
  }
  if (!lie) return ViewLayer::on_stream_request(from, bytes, now, out);
  wire::ViewResponse resp;
  resp.set_generation(keeper().self().generation);
  resp.set_verdict(wire::ViewResponse::COMMITTED);
  resp.set_committed_epoch(epoch);
  membership::to_msg(*lie, resp.mutable_committed());
  ++lies_;
  return membership::encode(resp);
}

void ForgingLayer::on_stream_response(uint64_t token, std::optional<std::span<const std::byte>> bytes,
                                      gossip::Time now, gossip::Effects& out) {
  if (token >= (uint64_t{1} << 62)) return;  // an answer to a forgery: nothing to learn
  ViewLayer::on_stream_response(token, bytes, now, out);
}

}  // namespace shoal::sim
