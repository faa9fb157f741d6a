// ViewKeeper: turns gossip's weakly consistent member list into a sequence of committed views that
// every member agrees on (single-decree Paxos per epoch, the members of view e as acceptors for e+1).
// A sans-IO state machine: inputs are gossip's member list, requests and responses from peers, and
// ticks; outputs (KeeperOutput) are requests to send, views committed, and the next wake-up.
//
// Which views a member installs. Every holder of the cluster key can send any request under any member's
// name, so a view from a peer is never installed on its word alone (view_admission.hpp has the decisions):
// - a view of epoch 2^64-1 is refused (the next epoch would wrap to 0 and none would ever commit again),
//   and so is one more than kMaxEpochJump (2^32) epochs past the member's own;
// - a COMMIT is heard only from a sender (name and generation) in the member's current view or in the
//   view it commits;
// - the value the member itself accepted is installed when its COMMIT comes (Paxos' path: the proposer saw
//   a majority of the acceptors accept it): as an acceptor for epoch e+1, or, while behind (a joiner, or a
//   member readmitted after missing views), a value of a later epoch that admits it and that a round asked
//   it to accept;
// - any other newer view (a full COMMIT of a value it did not accept, a view in a peer's answer, a jump
//   of several epochs) is a hint: the member asks the other members of its own view, at the addresses
//   its view holds, for their committed views (a QUERY request; answers to its own rounds' requests
//   count the same way) and installs the newest view that enough of them hold to make, with itself, a
//   majority of its view (Vouches). A view nobody holds is refused as unconfirmed; while some hold a
//   newer view but too few, it asks again, after settle_quiet at first and up to every commit_retry;
// - a member with no view yet (a joiner) has no view to ask: it asks the members of the offered view
//   that gossip shows alive at the address and generation that view records, and takes the view when a
//   majority of its members, not counting itself, hold exactly it;
// - an orphan, a member of whose view too few others are alive in gossip ever to confirm anything (the
//   cluster moved on without them), installs what it is offered, as a joiner without gossip would.
// Why a majority of the member's own view: its members are the only peers whose addresses it learned
// from an agreed view rather than from the sender, and a view the cluster committed is held by the
// majority that accepted it (or by its successors' members, who answer for the same epoch or a newer
// one). So a single key holder, even a member, cannot move a member to a view of its invention by a
// COMMIT or an answer. What this does not stop: a key holder that runs the protocol's own rounds as a
// proposer (prepare and accept to a majority, or accept and then COMMIT to one member, whose epoch it can
// so move by up to kMaxEpochJump) gets its value committed like any proposer's, because Paxos tolerates
// crashes, not lies; and gossip, which decides
// who is proposed, takes any key holder's word about who is alive. Ballot rounds count from 1 in each
// epoch and an acceptor refuses one more than kMaxBallotStep beyond the highest it has seen, so a forged
// round of 2^64-1 cannot wrap the proposers' rounds either.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gossip/types.hpp"
#include "membership.pb.h"
#include "membership/acceptor.hpp"
#include "membership/config.hpp"
#include "membership/desired_view.hpp"
#include "membership/flap_damper.hpp"
#include "membership/round.hpp"
#include "membership/view.hpp"
#include "membership/view_admission.hpp"
#include "wire/reject.hpp"

namespace shoal::membership {

struct KeeperStats {
  uint64_t rounds_started = 0;
  uint64_t rounds_failed = 0;
  uint64_t views_installed = 0;
  uint64_t requests_served = 0;
  uint64_t catch_ups = 0;  // views installed after members of the view confirmed them
  wire::RejectCounters rejected;
  std::array<uint64_t, kViewRefusals> refused{};  // by ViewRefusal

  uint64_t refused_total() const;
};

class ViewKeeper {
 public:
  ViewKeeper(Config cfg, gossip::Identity self, uint64_t seed);
  ViewKeeper(const ViewKeeper&) = delete;
  ViewKeeper& operator=(const ViewKeeper&) = delete;
  ViewKeeper(ViewKeeper&&) = default;
  ViewKeeper& operator=(ViewKeeper&&) = default;

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

  // The operator's exclusions (exclusion.hpp; view_keeper_exclude.cpp): `exclude` are kept out of views from
  // the next one on, `readmit` let back in (member or host names). Checked against the committed view (a
  // member of it asks; the majority rule; --min-hosts), then proposed by this member at once, without the
  // settle wait or the designated proposer, and committed by a majority like any change. Pending here until a
  // committed view carries it (a round lost to another proposer's value is proposed again on the next view).
  // Returns the member names it resolved, or why not.
  Result<std::vector<std::string>> exclude(const std::vector<std::string>& exclude,
                                           const std::vector<std::string>& readmit, Time now, KeeperOutput& out);
  // What this member's operator asked that no committed view carries yet.
  bool exclusion_pending() const { return !exclude_add_.empty() || !exclude_drop_.empty(); }

  const View& view() const { return view_; }
  KeeperStatus status() const { return status_; }
  const KeeperStats& stats() const { return stats_; }
  const gossip::Identity& self() const { return self_; }
  const Eviction& eviction() const { return eviction_; }

 private:
  struct Pending {
    uint64_t round_id = 0;  // 0: a commit delivery (or a query), not part of a round's phase
    std::string name;
    std::string addr;
    int attempts = 0;
    uint64_t commit_epoch = 0;
    uint64_t query_id = 0;  // not 0: a catch-up query of that round
  };
  // One round of catch-up queries to the members of the current view.
  struct CatchUp {
    uint64_t id = 0;
    uint64_t base_epoch = 0;
    size_t outstanding = 0;
    Time deadline{0};
  };

  void evaluate(Time now, KeeperOutput& out);
  // gossip_index_ for a new gossip_: extended when the old names are a prefix of the new, else rebuilt.
  void reindex();
  // The status line of a member the committed view evicted or excludes (empty when neither).
  std::string evicted_reason(Time now) const;
  // The excluded list the next view is to carry while this member's operator has changes pending.
  std::optional<std::vector<std::string>> wanted_excluded() const;
  // At install: pending changes the view carries are done; readmitted names are forgotten by the damper.
  void exclusions_installed(const View& v);
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

  // view_keeper_catch_up.cpp: admitting views offered by peers, confirming them with the members of the
  // current view, counting refusals.
  // A newer view from a peer: installed, confirmed first, or refused (see the header comment).
  void consider(const View& v, ViewSource source, const std::string& sender, uint64_t sender_generation,
                bool accepted_here, Time now, KeeperOutput& out);
  // An accept for an epoch beyond e+1 (this member is behind): keeps the value when it admits this member.
  void keep_behind_value(const wire::ViewRequest& req, Time now);
  // Whether too few other members of the current view are live for a confirmation ever to succeed.
  bool orphaned();
  Vouches& vouches();
  // `name`, asked at `addr`, answered as `generation` that it holds `committed`: counts it, and installs
  // what is confirmed.
  void vouched(const std::string& name, const std::string& addr, uint64_t generation, const View& committed,
               Time now, KeeperOutput& out);
  // A newer view was offered (and not installed): ask the members who can confirm it.
  void want_catch_up(const View& offered, Time now, KeeperOutput& out);
  void start_catch_up(Time now, KeeperOutput& out);
  void finish_catch_up(Time now, KeeperOutput& out);
  void on_query_answer(const Pending& p, Time now, KeeperOutput& out);
  // The catch-up's line for the status (empty when not behind).
  std::string catch_up_note() const;
  void refuse(ViewRefusal why, const std::string& detail, Time now);
  // A ballot round an acceptor (or a proposer reading a nack) may take seriously.
  bool plausible_round(uint64_t round) const;

  wire::ViewResponse answer(const wire::ViewRequest& req, Time now, KeeperOutput& out);
  // The acceptor's check of a value that evicts `names` (eviction.hpp); logs a refusal once per epoch.
  bool agrees_to_evict(const std::vector<std::string>& names, const std::string& proposer);
  Vote vote_from(const wire::ViewResponse& resp, bool prepare_phase) const;
  // A newer committed view in the answer of `p`'s addressee: counted as its report, then considered.
  void learn_from(const Pending& p, const wire::ViewResponse& resp, Time now, KeeperOutput& out);

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
  // name -> index in gossip_ (one record per name). Gossip's list keeps its order while it only grows, so
  // the index is extended, not rebuilt, at each change; its keys view index_names_ (a deque: its strings
  // stay in place as it grows), so the keeper moves but never copies.
  GossipIndex gossip_index_;
  std::deque<std::string> index_names_;

  std::unique_ptr<Round> round_;
  Time round_deadline_{0};
  bool round_all_members_ = false;
  uint64_t next_round_id_ = 1;
  uint64_t highest_round_seen_ = 0;
  uint64_t next_token_ = 1;
  std::map<uint64_t, Pending> pending_;
  // Catch-up: the newest epoch a peer claimed, the tally of what the current view's members hold (made on
  // demand; reset at every install), the round of queries running, and when the next may start.
  uint64_t behind_hint_ = 0;
  std::optional<View> behind_value_;  // the newest value admitting this member it accepted while behind
  std::vector<View> joiner_hints_;  // epoch 0: the latest views offered (at most 4), whose members are asked
  std::optional<Vouches> vouches_;
  std::optional<CatchUp> catch_up_;
  uint64_t next_catch_up_id_ = 1;
  Time catch_up_after_{0};
  int catch_up_retries_ = 0;  // rounds since the last install that confirmed nothing
  std::array<std::optional<Time>, kViewRefusals> refusal_logged_at_{};
  std::multimap<Time, Pending> commit_retries_;
  // Members of the current view whose commit could not be delivered while gossip thought them gone;
  // the commit goes again when gossip sees them alive (name -> addr). Cleared on every install.
  std::map<std::string, std::string> undelivered_;

  std::optional<Time> installed_at_;  // when view_ was installed here (the join window counts from it)
  std::optional<uint64_t>
      last_desired_;  // members_fingerprint of the wanted list (the settle window restarts when it moves)
  std::optional<Time> pending_since_;
  Time last_change_{0};
  Time backoff_until_{0};
  bool force_requested_ = false;
  std::set<std::string> exclude_add_;   // the operator's exclusions not yet in a committed view
  std::set<std::string> exclude_drop_;  // the operator's readmissions not yet in a committed view

  KeeperStatus status_;
  KeeperStats stats_;
};

}  // namespace shoal::membership
