// A tiny in-test network for a handful of gossip cores: delivers their packets and stream requests
// on a fake clock with a fixed latency, optional loss and blocked links, crashes and pauses. The
// real simulator is tests/sim; this one only has to make the unit tests' scenarios readable.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gossip/swim.hpp"

namespace shoal::gossip::testing {

inline Time ms_(int64_t v) { return std::chrono::duration_cast<Time>(std::chrono::milliseconds(v)); }

class TestNet {
 public:
  struct Node {
    std::unique_ptr<Swim> swim;
    bool crashed = false;
    bool silent = false;  // powered off: connections time out instead of being refused
    Time paused_until{0};  // no ticks or deliveries before this
    std::optional<Time> wake;
    std::vector<MemberEvent> events;  // everything it announced
  };

  explicit TestNet(uint64_t seed = 1, Config cfg = {}) : config(std::move(cfg)), rng_(seed) {
    if (config.cluster_id.empty()) config.cluster_id = "test";
  }

  static std::string addr_of(const std::string& name) { return name + ":7946"; }

  // Creates and starts a member; seeds are member names.
  Swim& start(const std::string& name, const std::vector<std::string>& seeds = {}, uint64_t generation = 1) {
    Node& n = nodes_[addr_of(name)];
    n = Node{};
    n.swim = std::make_unique<Swim>(config, Identity{name, generation, addr_of(name)}, MemberMeta{name, 8, {}}, rng_());
    std::vector<std::string> seed_addrs;
    for (const auto& s : seeds) seed_addrs.push_back(addr_of(s));
    Effects out;
    n.swim->start(seed_addrs, now, out);
    apply(addr_of(name), out);
    return *n.swim;
  }

  Swim& node(const std::string& name) { return *nodes_.at(addr_of(name)).swim; }
  Node& state(const std::string& name) { return nodes_.at(addr_of(name)); }
  // The process dies, its host stays up: connections to its port are refused (what gossip's refusal
  // rule reads). power_off: the host goes silent, connections time out.
  void crash(const std::string& name) { nodes_.at(addr_of(name)).crashed = true; }
  void power_off(const std::string& name) {
    nodes_.at(addr_of(name)).crashed = true;
    nodes_.at(addr_of(name)).silent = true;
  }
  // A trainer beside `observer` saw its connection to `subject` break.
  void hint(const std::string& observer, const std::string& subject) {
    Effects out;
    const auto m = node(observer).find(subject);
    node(observer).hint_failed(subject, m ? m->id.generation : 1, now, out);
    apply(addr_of(observer), out);
  }
  // A committed view vouches for `members` at `observer` (Swim::vouch).
  void vouch(const std::string& observer, const std::vector<Member>& members) {
    Effects out;
    node(observer).vouch(members, now, out);
    apply(addr_of(observer), out);
  }
  // TCP connections to `name` are refused while its UDP works (a firewall rejecting its agent port):
  // what a forged or mistaken refusal looks like.
  void refuse_streams_to(const std::string& name) { refusing_.insert(addr_of(name)); }
  void pause(const std::string& name, Time d) { nodes_.at(addr_of(name)).paused_until = now + d; }
  void leave(const std::string& name) {
    Effects out;
    node(name).leave(now, out);
    apply(addr_of(name), out);
  }
  void block(const std::string& a, const std::string& b) {
    blocked_.insert({addr_of(a), addr_of(b)});
    blocked_.insert({addr_of(b), addr_of(a)});
  }
  void heal() { blocked_.clear(); }

  // The state `observer` holds of `subject` (nullopt: unknown).
  std::optional<State> view(const std::string& observer, const std::string& subject) {
    const std::optional<Member> m = node(observer).find(subject);
    if (!m) return std::nullopt;
    return m->state;
  }

  // Delivers a raw datagram to a member, as if from `from`.
  void inject(const std::string& to, const std::string& from, std::vector<std::byte> bytes) {
    push(now + latency, Event{Event::packet, from, addr_of(to), std::move(bytes), 0, {}});
  }

  // Runs until `now + d`, or until `until` holds (checked whenever the clock has moved by
  // `check_every`, so that it may look at every member).
  void run_for(Time d, const std::function<bool()>& until = {}, Time check_every = std::chrono::microseconds(1)) {
    const Time end = now + d;
    Time checked = now;
    while (!events_.empty() && events_.top().at <= end) {
      Event e = events_.top().ev;
      now = events_.top().at;
      events_.pop();
      dispatch(e);
      if (until && now - checked >= check_every) {
        checked = now;
        if (until()) return;
      }
    }
    now = end;
  }

  Time now{0};
  Time latency = std::chrono::microseconds(200);
  double loss = 0.0;         // UDP datagrams lost at random
  double stream_loss = 0.0;  // TCP requests that fail at random (at their deadline)
  std::function<bool(const std::string& from, const std::string& to, const std::vector<std::byte>&)> drop_if;
  uint64_t delivered = 0, dropped = 0;
  uint64_t probe_streams = 0, anti_entropy_streams = 0;  // stream requests sent, by their stated purpose
  Config config;

 private:
  struct Event {
    enum Kind { packet, wake, stream_request, stream_response } kind;
    std::string from, to;
    std::vector<std::byte> bytes;
    uint64_t token = 0;
    std::optional<bool> failed;
    bool refused = false;
  };
  struct Timed {
    Time at;
    uint64_t order;
    Event ev;
    bool operator>(const Timed& o) const { return at != o.at ? at > o.at : order > o.order; }
  };

  void push(Time at, Event e) { events_.push(Timed{at, order_++, std::move(e)}); }

  bool link_up(const std::string& from, const std::string& to) const { return blocked_.count({from, to}) == 0; }

  void apply(const std::string& addr, Effects& out) {
    for (auto& p : out.packets) {
      if (!link_up(addr, p.to) || (loss > 0 && std::bernoulli_distribution(loss)(rng_)) ||
          (drop_if && drop_if(addr, p.to, p.bytes))) {
        ++dropped;
        continue;
      }
      push(now + latency, Event{Event::packet, addr, p.to, std::move(p.bytes), 0, {}});
    }
    for (auto& s : out.streams) {
      ++(s.purpose == StreamPurpose::probe ? probe_streams : anti_entropy_streams);
      auto target = nodes_.find(s.to);
      if (target != nodes_.end() && link_up(addr, s.to) &&
          (refusing_.count(s.to) != 0 || (target->second.crashed && !target->second.silent))) {
        Event refused{Event::stream_response, s.to, addr, {}, s.token, true};
        refused.refused = true;
        push(now + 2 * latency, std::move(refused));  // SYN, RST
        continue;
      }
      if (target == nodes_.end() || !link_up(addr, s.to) ||
          (target->second.crashed && target->second.silent) ||
          (stream_loss > 0 && std::bernoulli_distribution(stream_loss)(rng_))) {
        push(s.deadline, Event{Event::stream_response, s.to, addr, {}, s.token, true});
        continue;
      }
      Event e{Event::stream_request, addr, s.to, std::move(s.bytes), s.token, {}};
      push(now + latency, std::move(e));
    }
    for (auto& e : out.events) nodes_[addr].events.push_back(std::move(e));
    if (out.wake_at) {
      Node& n = nodes_[addr];
      n.wake = *out.wake_at;
      push(*out.wake_at, Event{Event::wake, addr, addr, {}, 0, {}});
    }
    out.packets.clear();
    out.streams.clear();
    out.events.clear();
    out.wake_at.reset();
  }

  // A paused member sees what arrived meanwhile when it resumes, after its timers fired (the worst
  // order for it); a crashed one sees nothing.
  bool hold_if_paused(Node& n, const Event& e) {
    if (n.paused_until <= now) return false;
    push(e.kind == Event::wake ? n.paused_until : n.paused_until + std::chrono::microseconds(1), e);
    return true;
  }

  void dispatch(const Event& e) {
    auto it = nodes_.find(e.to);
    if (it == nodes_.end()) return;
    Node& n = it->second;
    Effects out;
    switch (e.kind) {
      case Event::wake:
        if (n.crashed || !n.wake || *n.wake > now) return;
        if (hold_if_paused(n, e)) return;
        n.wake.reset();
        n.swim->on_tick(now, out);
        break;
      case Event::packet:
        if (n.crashed) return;
        if (hold_if_paused(n, e)) return;
        ++delivered;
        n.swim->on_packet(e.from, e.bytes, now, out);
        break;
      case Event::stream_request: {
        if (n.crashed || !link_up(e.from, e.to)) {
          push(now + latency, Event{Event::stream_response, e.to, e.from, {}, e.token, true});
          return;
        }
        if (hold_if_paused(n, e)) return;
        auto reply = n.swim->on_stream_request(e.from, e.bytes, now, out);
        const bool failed = reply.empty();
        push(now + latency, Event{Event::stream_response, e.to, e.from, std::move(reply), e.token, failed});
        break;
      }
      case Event::stream_response:
        if (n.crashed) return;
        if (hold_if_paused(n, e)) return;
        if (e.refused) {
          n.swim->on_stream_refused(e.token, now, out);
        } else if (e.failed.value_or(false)) {
          n.swim->on_stream_response(e.token, std::nullopt, now, out);
        } else {
          n.swim->on_stream_response(e.token, std::span<const std::byte>(e.bytes), now, out);
        }
        break;
    }
    apply(e.to, out);
  }

  std::mt19937_64 rng_;
  std::map<std::string, Node> nodes_;
  std::set<std::pair<std::string, std::string>> blocked_;
  std::set<std::string> refusing_;
  std::priority_queue<Timed, std::vector<Timed>, std::greater<>> events_;
  uint64_t order_ = 0;
};

}  // namespace shoal::gossip::testing
