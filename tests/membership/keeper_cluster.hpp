// A small in-test runtime for ViewKeepers: requests delivered in order with a fixed delay of one
// millisecond, links that can be cut, nodes that can crash, and gossip opinions set by the test.
// (The full simulator in tests/sim models the network in detail; this keeps unit tests readable.)
#pragma once

#include <doctest/doctest.h>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "membership/view_codec.hpp"
#include "membership/view_keeper.hpp"

namespace shoal::membership::testing {

inline std::string addr_of(size_t i) { return "10.0.0." + std::to_string(i + 1) + ":7946"; }
inline std::string name_of(size_t i) { return "h" + std::to_string(i); }

inline gossip::Member member(size_t i, gossip::State s = gossip::State::alive, uint64_t generation = 1) {
  gossip::Member m;
  m.id = gossip::Identity{name_of(i), generation, addr_of(i)};
  m.state = s;
  m.meta.host = "host" + std::to_string(i);
  m.meta.slots = 2;
  return m;
}

class KeeperCluster {
 public:
  explicit KeeperCluster(size_t n, Config cfg = {}) {
    for (size_t i = 0; i < n; ++i) {
      nodes_.push_back(std::make_unique<ViewKeeper>(cfg, gossip::Identity{name_of(i), 1, addr_of(i)}, 1000 + i));
      up_.push_back(true);
      wake_.push_back(Time(0));
    }
    committed_.resize(n);
  }

  ViewKeeper& node(size_t i) { return *nodes_[i]; }
  Time now() const { return now_; }
  size_t size() const { return nodes_.size(); }

  // Node i's gossip sees exactly these members (others absent).
  void set_gossip(size_t i, std::vector<gossip::Member> members) {
    KeeperOutput out;
    nodes_[i]->on_members(std::move(members), now_, out);
    absorb(i, out);
  }
  // Every live node sees members `alive` alive and `dead` dead.
  void everyone_sees(const std::vector<size_t>& alive, const std::vector<size_t>& dead = {}) {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (!up_[i]) continue;
      std::vector<gossip::Member> ms;
      for (size_t a : alive) ms.push_back(member(a));
      for (size_t d : dead) ms.push_back(member(d, gossip::State::dead));
      set_gossip(i, ms);
    }
  }
  // Node i's local trainer reports its straggler verdict (node health).
  void feed_verdict(size_t i, uint64_t epoch, const std::vector<std::string>& named, uint64_t step) {
    if (!up_[i]) return;
    KeeperOutput out;
    nodes_[i]->on_verdict(epoch, named, step, now_, out);
    absorb(i, out);
  }
  // A request that no keeper of the cluster sent (a forger's) delivered to node i now; its answer is returned
  // and whatever node i sends in turn travels like any other request.
  std::vector<std::byte> inject(size_t i, const wire::ViewRequest& req) {
    KeeperOutput out;
    auto resp = nodes_[i]->on_request(encode(req), now_, out);
    absorb(i, out);
    return resp;
  }
  // The operator asks node i to exclude or readmit (ViewKeeper::exclude); what it sends travels like any other.
  shoal::Result<std::vector<std::string>> exclude(size_t i, const std::vector<std::string>& add,
                                                  const std::vector<std::string>& drop) {
    KeeperOutput out;
    auto named = nodes_[i]->exclude(add, drop, now_, out);
    absorb(i, out);
    return named;
  }
  void crash(size_t i) { up_[i] = false; }
  void start(size_t i) { up_[i] = true, wake_[i] = now_; }  // a node crashed (or not started yet) runs
  void cut(size_t a, size_t b) { cut_.insert({a, b}), cut_.insert({b, a}); }
  void heal() { cut_.clear(); }

  // Runs virtual time forward, delivering requests and ticks.
  void run_for(Time span) {
    const Time end = now_ + span;
    while (now_ < end) {
      now_ += Time(1000);
      deliver();
      for (size_t i = 0; i < nodes_.size(); ++i) {
        if (up_[i] && wake_[i] <= now_) {
          wake_[i] = Time::max();
          KeeperOutput out;
          nodes_[i]->on_tick(now_, out);
          absorb(i, out);
        }
      }
    }
  }

  // Every view each node ever committed, by node: the safety check reads these.
  const std::vector<View>& committed(size_t i) const { return committed_[i]; }
  // The QUERY requests (catch-up) node i has sent so far.
  size_t queries_sent(size_t i) const { return i < queries_.size() ? queries_[i] : 0; }

 private:
  struct InFlight {
    size_t from;
    size_t to;
    ViewRequestOut req;
  };

  size_t index_of(const std::string& addr) const {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (addr_of(i) == addr) return i;
    }
    return nodes_.size();
  }

  void absorb(size_t i, KeeperOutput& out) {
    for (auto& v : out.committed) committed_[i].push_back(v);
    for (auto& r : out.requests) {
      wire::ViewRequest decoded;
      if (decoded.ParseFromArray(r.bytes.data(), static_cast<int>(r.bytes.size())) && decoded.has_query()) {
        if (queries_.size() <= i) queries_.resize(i + 1);
        ++queries_[i];
      }
      inflight_.push_back({i, index_of(r.to), std::move(r)});
    }
    if (out.wake_at && *out.wake_at < wake_[i]) wake_[i] = *out.wake_at;
    out.clear();
  }

  void deliver() {
    std::deque<InFlight> batch;
    batch.swap(inflight_);
    for (auto& f : batch) {
      KeeperOutput out;
      const bool reachable = f.to < nodes_.size() && up_[f.to] && !cut_.count({f.from, f.to});
      if (!up_[f.from]) continue;
      if (!reachable) {
        nodes_[f.from]->on_response(f.req.token, std::nullopt, now_, out);
        absorb(f.from, out);
        continue;
      }
      const std::vector<std::byte> resp = nodes_[f.to]->on_request(f.req.bytes, now_, out);
      absorb(f.to, out);
      KeeperOutput back;
      if (resp.empty()) {
        nodes_[f.from]->on_response(f.req.token, std::nullopt, now_, back);
      } else {
        nodes_[f.from]->on_response(f.req.token, std::span<const std::byte>(resp), now_, back);
      }
      absorb(f.from, back);
    }
  }

  std::vector<std::unique_ptr<ViewKeeper>> nodes_;
  std::vector<bool> up_;
  std::vector<Time> wake_;
  std::vector<std::vector<View>> committed_;
  std::deque<InFlight> inflight_;
  std::set<std::pair<size_t, size_t>> cut_;
  std::vector<size_t> queries_;
  Time now_{0};
};

// 0, 1, ..., n - 1: the members of a cluster of n, for everyone_sees.
inline std::vector<size_t> range(size_t n) {
  std::vector<size_t> out;
  for (size_t i = 0; i < n; ++i) out.push_back(i);
  return out;
}

// Safety: for every epoch, every member that committed a view for it committed the same one; and every
// view of the cluster carries the lineage its first view was given.
inline void check_one_view_per_epoch(KeeperCluster& c) {
  std::map<uint64_t, uint64_t> hash_of_epoch;
  std::optional<uint64_t> lineage;
  for (size_t i = 0; i < c.size(); ++i) {
    for (const View& v : c.committed(i)) {
      const auto [it, fresh] = hash_of_epoch.emplace(v.epoch(), v.hash());
      INFO("member " << i << " epoch " << v.epoch());
      CHECK(it->second == v.hash());
      CHECK(v.lineage() != 0);
      if (!lineage) lineage = v.lineage();
      CHECK(v.lineage() == *lineage);
    }
  }
}

}  // namespace shoal::membership::testing
