// The knobs of committed-view agreement, and what the ViewKeeper asks its runtime to do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gossip/types.hpp"
#include "membership/eviction.hpp"
#include "membership/view.hpp"

namespace shoal::membership {

using gossip::Time;

// Who may move the job to a new view.
enum class QuorumPolicy : uint8_t {
  // A majority of the last view's members must accept, so a minority partition never moves on.
  // The safe default. With 2 hosts, a survivor cannot tell its peer's crash from a partition and stalls.
  majority,
  // Any connected set of at least min_hosts members that all accept may continue. Trades safety for
  // availability: both sides of a partition can commit different views of the same epoch (split brain).
  any,
};

struct Config {
  uint32_t min_hosts = 1;            // no view with fewer members is proposed (bootstrap waits for this many)
  uint32_t max_hosts = 0;            // 0: no limit; joiners beyond it wait
  // Started with seeds: this member joins a cluster and never forms one by itself. Its first view must
  // hold another member; alone (its seeds silent, or gone before a view formed) it waits and keeps trying
  // them, instead of training alone from step 0 in a cluster of one.
  bool joining = false;
  Time settle_quiet{50'000};         // propose once the wanted member set has not changed for this long...
  Time settle_max{500'000};          // ...or once a change has been pending this long (a join storm batches)
  // When every member to remove was declared dead on a confirmed refusal (gossip::Member::refused: its
  // own host refused, other members confirmed) or left gracefully, and nobody joins, the quiet window is
  // this instead: the process is known to be gone, and a silent host keeps settle_quiet.
  Time settle_refused{5'000};
  Time hold_down{10'000'000};        // a removed member must stay alive this long before it is readmitted
  // A host that keeps failing (dead, or restarted as a newer process) is held down longer each time: the
  // hold-down doubles per failure in a row, up to hold_down_max; failures further apart than
  // failures_forgotten start the count again. A restart after a first failure is admitted at once.
  Time hold_down_max{600'000'000};
  Time failures_forgotten{3'600'000'000};
  // Joins in windows (join_window.hpp): once the view holds join_window_from members or more, a view that
  // only adds members is proposed no sooner than join_window after the last view was installed; joiners
  // ride along with any other change at once. 0: every join as soon as it settles.
  Time join_window{10'000'000};
  uint32_t join_window_from = 32;
  Time phase_timeout{1'000'000};     // a prepare or accept phase that has not reached its quorum gives up
  Time retry_backoff{100'000};       // base of the randomised pause after a failed round
  Time takeover_after{2'000'000};    // a member that is not the designated proposer proposes after this long
  Time commit_retry{500'000};        // a commit that did not reach a member is sent again after this long
  // A joiner that could not yet confirm a view offered to it asks its members again after a pause that
  // doubles from settle_quiet up to this (a member of a view: up to commit_retry).
  Time joiner_catch_up_max{8'000'000};
  // A member that left gracefully lingers as an acceptor until a view without it is committed, up to this
  // long (the agent's leave_linger_max): until then it still counts as reachable for the majority, so
  // hosts leaving at once never strand the rest in a stall.
  Time leaver_votes_for{3'000'000};
  QuorumPolicy policy = QuorumPolicy::majority;
  // Node health's eviction of stragglers (eviction.hpp); off by default.
  EvictionConfig eviction;
};

// A TCP request/response to a peer: send `bytes` as one frame, read one frame back, then call
// ViewKeeper::on_response(token, bytes) — or with nullopt if the exchange failed or passed `deadline`.
struct ViewRequestOut {
  uint64_t token = 0;
  std::string to;  // host:port
  std::vector<std::byte> bytes;
  Time deadline{0};
};

struct KeeperOutput {
  std::vector<ViewRequestOut> requests;
  std::vector<View> committed;   // views installed by this call, oldest first
  std::optional<Time> wake_at;

  void wake_no_later_than(Time t) {
    if (!wake_at || t < *wake_at) wake_at = t;
  }
  void clear() {
    requests.clear();
    committed.clear();
    wake_at.reset();
  }
};

enum class KeeperPhase : uint8_t {
  forming,    // no view yet
  stable,     // the committed view matches what gossip sees
  proposing,  // a change is due or a round is running
  stalled,    // a change is needed but may not be made (see reason)
};
const char* to_string(KeeperPhase p);

struct KeeperStatus {
  KeeperPhase phase = KeeperPhase::forming;
  std::string reason;  // for people: why proposing or stalled
  uint64_t epoch = 0;
  size_t live_of_view = 0;   // members of the committed view that gossip sees alive or suspect
  size_t view_size = 0;
  bool in_view = false;      // this member is in the committed view
  // Set when the committed view evicted this member as a straggler: the epoch that did, the step from
  // which its verdict named it, and when (keeper time) its hold-down ends.
  struct Evicted {
    uint64_t epoch = 0;
    uint64_t since_step = 0;
    Time until{0};
  };
  std::optional<Evicted> evicted;
  uint64_t evictions = 0;    // views installed here that evicted someone
  std::string eviction;      // for people: the eviction that is pending or why none is made (empty: none)
};

}  // namespace shoal::membership
