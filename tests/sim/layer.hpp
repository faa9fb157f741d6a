// The seams of the cluster harness: Layer, a second sans-IO core that runs beside gossip on every
// member (the committed-view keeper, later), and ClusterObserver, through which scenarios, tests and
// the invariant checker watch a run without the harness knowing what they measure.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gossip/swim.hpp"
#include "gossip/types.hpp"

namespace shoal::sim {

// A member's status in the harness (not in anyone's view).
enum class MemberStatus : uint8_t { idle, running, paused, crashed, left };
const char* to_string(MemberStatus s);

// A core beside gossip on one member. It is fed the member events of its own member's gossip core and
// talks to its peers over the same simulated network, on its own channel (as the real agent uses one
// TCP port with typed hellos). Its outputs use gossip::Effects: packets, streams and wake_at are
// performed; `events` are ignored (a layer reports its own events through a ClusterObserver or the
// checker it was built with). Each layer's timers are separate from gossip's.
class Layer {
 public:
  virtual ~Layer() = default;
  // The member starts (after its gossip core joined).
  virtual void on_start(gossip::Time now, gossip::Effects& out) = 0;
  // The member's gossip core announced these changes; `gossip` is that core, for a layer that wants
  // the whole member list (the view keeper takes gossip.members() after every change).
  virtual void on_member_events(std::span<const gossip::MemberEvent> events, const gossip::Swim& gossip,
                                gossip::Time now, gossip::Effects& out) = 0;
  virtual void on_packet(const std::string& from, std::span<const std::byte> bytes, gossip::Time now,
                         gossip::Effects& out) = 0;
  // Returns the response (empty: close without answering).
  virtual std::vector<std::byte> on_stream_request(const std::string& from, std::span<const std::byte> bytes,
                                                   gossip::Time now, gossip::Effects& out) = 0;
  virtual void on_stream_response(uint64_t token, std::optional<std::span<const std::byte>> bytes, gossip::Time now,
                                  gossip::Effects& out) = 0;
  virtual void on_tick(gossip::Time now, gossip::Effects& out) = 0;
  // Members the layer wants its member's gossip core to take as alive (gossip::Swim::vouch), as the
  // agent does with the joiners of every view it commits; the harness hands them over after each call.
  virtual std::vector<gossip::Member> take_vouched() { return {}; }
};

// Builds the layers of one member at each (re)start; `seed` differs per member and generation.
using LayerFactory =
    std::function<std::vector<std::unique_ptr<Layer>>(uint32_t member, const gossip::Identity& self, uint64_t seed)>;

// Callbacks run in the middle of delivering an event: an observer may read the cluster but must not
// change it (crash, pause, add members); it schedules such actions with Cluster::at() instead.
class ClusterObserver {
 public:
  virtual ~ClusterObserver() = default;
  // `observer`'s gossip core announced a change about `subject` (both member indices).
  virtual void on_member_event(uint32_t /*observer*/, uint32_t /*subject*/, const gossip::MemberEvent& /*event*/,
                               gossip::Time /*now*/) {}
  // A member was started, paused, resumed (running again), crashed, or stopped after leaving.
  virtual void on_status(uint32_t /*member*/, MemberStatus /*status*/, gossip::Time /*now*/) {}
};

}  // namespace shoal::sim

namespace shoal::sim {

// A ClusterObserver made of callbacks, for scenarios and tests that watch one or two things.
struct EventTap : ClusterObserver {
  std::function<void(uint32_t observer, uint32_t subject, const gossip::MemberEvent& event, gossip::Time now)> event;
  std::function<void(uint32_t member, MemberStatus status, gossip::Time now)> status;

  void on_member_event(uint32_t observer, uint32_t subject, const gossip::MemberEvent& e, gossip::Time now) override {
    if (event) event(observer, subject, e, now);
  }
  void on_status(uint32_t member, MemberStatus s, gossip::Time now) override {
    if (status) status(member, s, now);
  }
};

}  // namespace shoal::sim
