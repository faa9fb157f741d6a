// ViewLayer: the committed-view keeper (membership::ViewKeeper) as a simulator Layer on every member,
// driven the way the agent drives it (src/daemon/membership_runtime.cpp): gossip's whole member list
// after every batch of member events, peers' requests and answers over the layer's stream channel,
// and its own timer. ViewKeepers builds one per member at each (re)start and tells its observers
// about every view committed and every acceptance a proposer received, which is what the safety
// checker needs to judge a run from outside the keepers.
#pragma once

#include <utility>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "cluster.hpp"
#include "layer.hpp"
#include "membership/view_keeper.hpp"

namespace shoal::sim {

// Watches the keepers of a cluster. Callbacks run while the cluster delivers an event: they may read
// the cluster but must not change it (see ClusterObserver).
class ViewObserver {
 public:
  virtual ~ViewObserver() = default;
  // `member` (running as `generation`) installed `view`.
  virtual void on_commit(uint32_t /*member*/, uint64_t /*generation*/, const membership::View& /*view*/,
                         gossip::Time /*now*/) {}
  // `proposer` received an ACCEPTED answer for (epoch, hash) from `voter` (running as `voter_generation`),
  // which counted itself an acceptor of that epoch. The proposer's vote for its own value is not seen
  // here (the keeper answers itself without a message).
  virtual void on_accepted(uint32_t /*proposer*/, uint32_t /*voter*/, uint64_t /*voter_generation*/,
                           uint64_t /*epoch*/, uint64_t /*hash*/, gossip::Time /*now*/) {}
};

class ViewLayer : public Layer {
 public:
  // `observers` belongs to the ViewKeepers that built the layer; with `track_accepts` the layer decodes
  // its own accept requests and their answers to report on_accepted (costly in big clusters).
  // `coalesce` > 0: gossip changes reach the keeper at most once per that much time (see ViewKeepers).
  ViewLayer(uint32_t member, membership::Config cfg, gossip::Identity self, uint64_t seed,
            const std::vector<ViewObserver*>& observers, bool track_accepts, gossip::Time coalesce = {});

  void on_start(gossip::Time now, gossip::Effects& out) override;
  void on_member_events(std::span<const gossip::MemberEvent> events, const gossip::Swim& gossip, gossip::Time now,
                        gossip::Effects& out) override;
  void on_packet(const std::string& from, std::span<const std::byte> bytes, gossip::Time now,
                 gossip::Effects& out) override;
  std::vector<std::byte> on_stream_request(const std::string& from, std::span<const std::byte> bytes,
                                           gossip::Time now, gossip::Effects& out) override;
  void on_stream_response(uint64_t token, std::optional<std::span<const std::byte>> bytes, gossip::Time now,
                          gossip::Effects& out) override;
  void on_tick(gossip::Time now, gossip::Effects& out) override;
  std::vector<gossip::Member> take_vouched() override { return std::exchange(vouched_, {}); }

  membership::ViewKeeper& keeper() { return keeper_; }
  const membership::ViewKeeper& keeper() const { return keeper_; }
  // `shoal view force` at this member, at its next tick (wake it through Cluster::wake_layer). The
  // keeper's answer is kept in last_force().
  void request_force() { force_requested_ = true; }
  const std::optional<Status>& last_force() const { return last_force_; }

 private:
  // Carries the keeper's outputs into the harness's effects and tells the observers of commits.
  void perform(membership::KeeperOutput& kout, gossip::Time now, gossip::Effects& out);

  struct AcceptSent {
    uint32_t to = 0;
    uint64_t epoch = 0;
    uint64_t hash = 0;
  };

  void feed(const gossip::Swim& gossip, gossip::Time now, gossip::Effects& out);

  uint32_t member_;
  membership::ViewKeeper keeper_;
  gossip::Time coalesce_;
  const gossip::Swim* gossip_ = nullptr;  // set by the first member events; outlives the layer's calls
  std::optional<gossip::Time> feed_due_;   // coalescing: when the pending changes go to the keeper
  const std::vector<ViewObserver*>& observers_;
  bool track_accepts_;
  std::map<uint64_t, AcceptSent> accepts_;  // by token: our accept requests still waiting for an answer
  std::vector<std::byte> last_accept_bytes_;  // one round sends the same accept to everyone: decode it once
  uint64_t last_accept_epoch_ = 0, last_accept_hash_ = 0;
  membership::KeeperOutput scratch_;
  std::vector<gossip::Member> vouched_;  // joiners of the views committed since the harness last took them
  bool force_requested_ = false;
  std::optional<Status> last_force_;
};

// The keepers of one cluster: a LayerFactory that puts a ViewLayer (channel 1) on every member with
// one Config, and the observers of all of them.
class ViewKeepers {
 public:
  // Builds one member's layer in place of a plain ViewLayer (a forging key holder, for instance); takes
  // what the ViewLayer constructor takes.
  using Maker = std::function<std::unique_ptr<ViewLayer>(
      uint32_t member, const membership::Config& cfg, const gossip::Identity& self, uint64_t seed,
      const std::vector<ViewObserver*>& observers, bool track_accepts, gossip::Time coalesce)>;

  explicit ViewKeepers(membership::Config cfg) : cfg_(std::move(cfg)) {}
  ViewKeepers(const ViewKeepers&) = delete;
  ViewKeepers& operator=(const ViewKeepers&) = delete;

  // For ClusterOptions::layers; the factory refers to this object, which must outlive the cluster.
  LayerFactory factory();
  void add_observer(ViewObserver* o) { observers_.push_back(o); }
  // Report on_accepted to the observers (the safety checker needs it; the big scenarios do not).
  void track_accepts(bool on) { track_accepts_ = on; }
  // 0 (the default, what the agent does): the keeper gets gossip's list after every batch of member
  // events. Above 0: at most once per this much virtual time, which keeps a many-thousand-member
  // bootstrap tractable in one process (each on_members costs O(N log N) in the keeper) at the price
  // of up to this much extra latency.
  void coalesce(gossip::Time t) { coalesce_ = t; }
  const membership::Config& config() const { return cfg_; }
  // Member `member` gets maker's layer at every (re)start.
  void replace(uint32_t member, Maker maker) { makers_[member] = std::move(maker); }

  // The keeper of a running or paused member; null otherwise.
  static ViewLayer* of(Cluster& c, uint32_t m);

 private:
  membership::Config cfg_;
  std::vector<ViewObserver*> observers_;
  bool track_accepts_ = false;
  gossip::Time coalesce_{0};
  std::map<uint32_t, Maker> makers_;
};

}  // namespace shoal::sim
