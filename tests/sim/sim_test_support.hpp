// Helpers shared by the simulator tests: small clusters, convergence, and a scriptable Layer that
// records what reaches it.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "addresses.hpp"
#include "cluster.hpp"
#include "invariant_checker.hpp"

namespace shoal::sim::testing {

inline Time ms(int64_t v) { return Time(v * 1000); }
inline Time sec(int64_t v) { return Time(v * 1000000); }

// A small cluster whose member lists are also audited against their events every second.
// Tests in which a live member is declared dead (partitions, long pauses) pass Revival::by_refutation:
// the gossip core brings such a member back within its generation when it refutes with a higher
// incarnation, which the strict rule (the default, Revival::never) counts as a resurrection.
inline ClusterOptions small_cluster(size_t members, uint64_t seed, Revival revival = Revival::never) {
  ClusterOptions o;
  o.members = members;
  o.seed = seed;
  o.audit_interval = sec(1);
  o.revival = revival;
  return o;
}

// Starts everyone now and runs until all know all; false if not within `limit` of virtual time.
inline bool start_and_converge(Cluster& c, Time limit) {
  c.start_all(c.now());
  const Time deadline = c.now() + limit;
  return c.run_until(deadline, ms(10), [&] { return c.ledger().all_know_all(); });
}

// Does every live member other than `subject` show it in `state` (at its current generation)?
inline bool everyone_shows(const Cluster& c, uint32_t subject, gossip::State state) {
  const auto& l = c.ledger();
  return l.count_showing(subject, l.generation(subject), state) == l.live_tracked_others(subject);
}

// Counts the dead announcements about members that were up when announced.
struct FalseDeathCounter : ClusterObserver {
  explicit FalseDeathCounter(Cluster& c) : cluster(c) { c.add_observer(this); }
  void on_member_event(uint32_t observer, uint32_t subject, const gossip::MemberEvent& e, Time now) override {
    const MemberStatus s = cluster.status(subject);
    if (e.member.state == gossip::State::dead && (s == MemberStatus::running || s == MemberStatus::paused)) {
      ++count;
      if (first.empty()) {
        first = member_name(observer) + " declared " + e.member.id.name + " dead at " + format_time(now);
      }
    }
  }
  Cluster& cluster;
  uint64_t count = 0;
  std::string first;
};

// A Layer driven by the test: it records every input, answers stream requests with `reply`, and runs
// the test's hooks on start and on tick.
struct ScriptedLayer : Layer {
  struct Arrival {
    std::string from;
    std::vector<std::byte> bytes;
    Time at;
  };
  struct Answer {
    uint64_t token;
    std::optional<std::vector<std::byte>> bytes;
    Time at;
  };
  std::function<void(ScriptedLayer&, Time, gossip::Effects&)> on_start_hook, on_tick_hook;
  std::vector<Arrival> packets, requests;
  std::vector<Answer> answers;
  std::vector<Time> ticks;
  std::vector<gossip::MemberEvent> events;
  std::vector<std::byte> reply;

  void on_start(Time now, gossip::Effects& out) override {
    if (on_start_hook) on_start_hook(*this, now, out);
  }
  void on_member_events(std::span<const gossip::MemberEvent> evs, const gossip::Swim&, Time,
                        gossip::Effects&) override {
    events.insert(events.end(), evs.begin(), evs.end());
  }
  void on_packet(const std::string& from, std::span<const std::byte> bytes, Time now, gossip::Effects&) override {
    packets.push_back({from, {bytes.begin(), bytes.end()}, now});
  }
  std::vector<std::byte> on_stream_request(const std::string& from, std::span<const std::byte> bytes, Time now,
                                           gossip::Effects&) override {
    requests.push_back({from, {bytes.begin(), bytes.end()}, now});
    return reply;
  }
  void on_stream_response(uint64_t token, std::optional<std::span<const std::byte>> bytes, Time now,
                          gossip::Effects&) override {
    std::optional<std::vector<std::byte>> copy;
    if (bytes) copy.emplace(bytes->begin(), bytes->end());
    answers.push_back({token, std::move(copy), now});
  }
  void on_tick(Time now, gossip::Effects& out) override {
    ticks.push_back(now);
    if (on_tick_hook) on_tick_hook(*this, now, out);
  }
};

inline std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> out;
  for (char c : s) out.push_back(static_cast<std::byte>(c));
  return out;
}

}  // namespace shoal::sim::testing
