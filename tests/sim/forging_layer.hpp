// ForgingLayer: a key holder that is a member of the cluster. It runs an honest keeper (it votes, so the
// views include it), and besides: every `period` it sends every other member one forged request of a
// cycle (COMMITs of epoch 2^64-1, of 2^40, of a member list without the real hosts under its own name,
// under a real member's name, from outside both views, a far jump, and a prepare of ballot round
// 2^64-1, a view of just the forger and the receiver), and it answers every catch-up QUERY with a view
// of its invention (to a joiner: of the forger and the joiner alone). What honest members must do
// with each is in src/membership/view_keeper.hpp's header.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>

#include "view_layer.hpp"

namespace shoal::sim {

class ForgingLayer : public ViewLayer {
 public:
  enum Kind : uint8_t {
    overflow,      // COMMIT of epoch 2^64-1 holding the real members
    far_epoch,     // COMMIT of epoch 2^40
    strangers,     // COMMIT of e+1: the forger and members that do not exist, under the forger's name
    impersonated,  // COMMIT of e+1: the real members but one, plus strangers, under a real member's name
    outsider,      // COMMIT of e+1 from a name in neither view
    jump,          // COMMIT of e+7: the forger and strangers
    ballot,        // PREPARE of e+1 with ballot round 2^64-1
    pair,          // COMMIT of e+1 to each member: the forger and that member alone (at its current generation)
    kinds_
  };

  // `generation_of(m)`: member m's current generation (the harness knows it; a forger learns it from gossip).
  ForgingLayer(uint32_t member, membership::Config cfg, gossip::Identity self, uint64_t seed,
               const std::vector<ViewObserver*>& observers, bool track_accepts, gossip::Time coalesce,
               uint32_t cluster_size, gossip::Time period, std::function<uint64_t(uint32_t)> generation_of);

  void on_tick(gossip::Time now, gossip::Effects& out) override;
  std::vector<std::byte> on_stream_request(const std::string& from, std::span<const std::byte> bytes, gossip::Time now,
                                           gossip::Effects& out) override;
  void on_stream_response(uint64_t token, std::optional<std::span<const std::byte>> bytes, gossip::Time now,
                          gossip::Effects& out) override;

  // Forged requests sent, by kind, and forged QUERY answers given.
  const std::array<uint64_t, kinds_>& sent() const { return sent_; }
  uint64_t lies() const { return lies_; }
  // Stop forging (the honest keeper underneath goes on).
  void stop() { stopped_ = true; }

 private:
  // The forger itself (as its committed view holds it) and `n` members that do not exist, joining at `epoch`.
  std::vector<membership::ViewMember> invented(uint64_t epoch, size_t n) const;
  std::vector<std::byte> forged(Kind kind, uint64_t e) const;

  // The forger and member m alone, at m's current generation, joining at `epoch`.
  std::optional<membership::View> pair_with(uint32_t m, uint64_t epoch) const;

  uint32_t member_;
  uint32_t cluster_size_;
  std::function<uint64_t(uint32_t)> generation_of_;
  gossip::Time period_;
  gossip::Time next_{0};
  uint8_t next_kind_ = 0;
  uint64_t next_token_ = uint64_t{1} << 62;  // far from the keeper's own tokens
  std::array<uint64_t, kinds_> sent_{};
  uint64_t lies_ = 0;
  bool stopped_ = false;
};

}  // namespace shoal::sim
