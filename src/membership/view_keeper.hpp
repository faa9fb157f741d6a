// ViewKeeper: turns gossip's weakly consistent member list into a sequence of committed views that
// every member agrees on (single-decree Paxos per epoch, the members of view e as acceptors for e+1).
// A sans-IO state machine: inputs are gossip's member list, requests and responses from peers, and
// ticks; outputs (KeeperOutput) are requests to send, views committed, and the next wake-up.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "gossip/types.hpp"
#include "membership/acceptor.hpp"
#include "membership/config.hpp"
#include "membership/desired_view.hpp"
#include "membership/flap_damper.hpp"
#include "membership/round.hpp"
#include "membership/view.hpp"
#include "membership.pb.h"
#include "wire/reject.hpp"

namespace shoal::membership {

struct KeeperStats {
  uint64_t rounds_started = 0;
  uint64_t rounds_failed = 0;
  uint64_t views_installed = 0;
  uint64_t requests_served = 0;
  wire::RejectCounters rejected;
};

class ViewKeeper {
 public:
  ViewKeeper(Config cfg, gossip::Identity self, uint64_t seed);

  // Gossip's current member list (all states, including self). Call after every gossip change.
  void on_members(std::vector<gossip::Member> members, Time now, KeeperOutput& out);
  // A request frame from a peer; returns the response frame (empty: malformed, close the connection).
  std::vector<std::byte> on_request(std::span<const std::byte> bytes, Time now, KeeperOutput& out);
  // The response to one of our requests, or nullopt when it failed or timed out.
  void on_response(uint64_t token, std::optional<std::span<const std::byte>> bytes, Time now, KeeperOutput& out);
  void on_tick(Time now, KeeperOutput& out);

  // The local trainer's straggler verdict (node health): the members named in `epoch` up to `step`. Feeds
  // the eviction rule (eviction.hpp) when Config::eviction is enabled; ignored otherwise.
  void on_verdict(uint64_t epoch, const std::vector<std::string>& named, uint64_t step, Time now, KeeperOutput& out);

  // The operator's override when a majority of the last view is lost: propose the live set now,
  // needing only that all its members accept. Risk: if the lost members are in fact alive on the other
  // side of a partition and do the same, the job splits. Returns why it cannot, if it cannot.
  Status force(Time now, KeeperOutput& out);

  const View& view() const { return view_; }
  KeeperStatus status() const { return status_; }
  const KeeperStats& stats() const { return stats_; }
  const gossip::Identity& self() const { return self_; }
  const Eviction& eviction() const { return eviction_; }

 private:
  struct Pending {
    uint64_t round_id = 0;  // 0: a commit delivery, not part of a round's phase
    std::string name;
    std::string addr;
    int attempts = 0;
    uint64_t commit_epoch = 0;
  };

  void evaluate(Time now, KeeperOutput& out);
  // The status line of a member the committed view evicted (empty when it was not).
  std::string evicted_reason(Time now) const;
  bool designated_proposer() const;
  bool live(const std::string& name, uint64_t generation) const;
  bool live_by_name(const std::string& name) const;
  const gossip::Member* gossip_member(const std::string& name) const;
  // Live, or left gracefully so recently that it still answers as an acceptor.
  bool reachable(const std::string& name, uint64_t generation, Time now) const;
  void start_round(const Desired& d, bool forced, Time now, KeeperOutput& out);
  void send_phase(Time now, KeeperOutput& out);
  void advance_round(Time now, KeeperOutput& out);
  void fail_round(Time now, const std::string& why);
  void send_commit(const std::string& name, const std::string& addr, const View& v, bool full, int attempt,
                   Time now, KeeperOutput& out);
  void install(const View& v, Time now, KeeperOutput& out);

  wire::ViewResponse answer(const wire::ViewRequest& req, Time now, KeeperOutput& out);
  // The acceptor's check of a value that evicts `names` (eviction.hpp); logs a refusal once per epoch.
  bool agrees_to_evict(const std::vector<std::string>& names, const std::string& proposer);
  Vote vote_from(const wire::ViewResponse& resp, bool prepare_phase) const;
  void learn_from(const wire::ViewResponse& resp, Time now, KeeperOutput& out);

  Config cfg_;
  gossip::Identity self_;
  std::mt19937_64 rng_;
  View view_;
  Acceptor acceptor_;
  FlapDamper damper_;
  Eviction eviction_;
  std::optional<KeeperStatus::Evicted> evicted_self_;
  uint64_t refusal_logged_epoch_ = 0;  // the epoch of the last refusal to evict that was logged
  std::vector<gossip::Member> gossip_;
  std::unordered_map<std::string, size_t> gossip_index_;  // name -> index in gossip_ (one record per name)

  std::unique_ptr<Round> round_;
  Time round_deadline_{0};
  bool round_all_members_ = false;
  uint64_t next_round_id_ = 1;
  uint64_t highest_round_seen_ = 0;
  uint64_t next_token_ = 1;
  std::map<uint64_t, Pending> pending_;
  std::multimap<Time, Pending> commit_retries_;
  // Members of the current view whose commit could not be delivered while gossip thought them gone;
  // the commit goes again when gossip sees them alive (name -> addr). Cleared on every install.
  std::map<std::string, std::string> undelivered_;

  std::vector<ViewMember> last_desired_;
  std::optional<Time> pending_since_;
  Time last_change_{0};
  Time backoff_until_{0};
  bool force_requested_ = false;

  KeeperStatus status_;
  KeeperStats stats_;
};

}  // namespace shoal::membership
