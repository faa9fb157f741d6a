// The `status` reply: one screen for an operator: this host, the committed view and whether it is
// stable, members by state, the last view changes, the checkpoints held here and replication lag:
//   {"self", "addr", "generation", "cluster", "slots",
//    "view": {"epoch", "members", "status", "reason", "in_view", "live_of_view"},
//    "members_by_state": {"alive", "suspect", "dead", "left"},
//    "view_changes": [{"epoch", "members", "joined", "left", "trigger", "seconds"?, "committed_unix"}...],
//    "checkpoints": {"job", "local_versions", "local_bytes", "replicas", "replica_bytes", "pushed",
//                    "push_failed", "received", "receive_refused",
//                    "lag": [{"rank", "committed_step", "replicated_step"?, "steps_behind"?}...]},
//    "health": {"reported", "epoch", "step", "stragglers": [names], "eviction", "evictions"},
//    "trainers": [{"rank", "age_s", "reports", "figures": {KEY: number...}}...]}
// (trainers: what each local trainer last said its run lost, `trainer-stats`; its keys are those of
// health/trainer_stats.hpp, a whole count written as a JSON integer.)
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "control/replies/document.hpp"

namespace shoal::control {

struct StatusView {
  uint64_t epoch = 0;
  uint64_t members = 0;
  std::string status;
  std::string reason;
  bool in_view = false;
  uint64_t live_of_view = 0;
  bool operator==(const StatusView&) const = default;
};

struct MembersByState {
  uint64_t alive = 0, suspect = 0, dead = 0, left = 0;
  bool operator==(const MembersByState&) const = default;
};

struct ViewChangeRow {
  uint64_t epoch = 0;
  uint64_t members = 0;
  std::vector<std::string> joined;
  std::vector<std::string> left;
  std::string trigger;            // the first gossip event after the previous view; empty: none seen
  std::optional<double> seconds;  // from that event to the commit; absent without a trigger
  double committed_unix = 0;      // wall clock of the commit, seconds since 1970
  bool operator==(const ViewChangeRow&) const = default;
};

struct LagRow {
  uint32_t rank = 0;
  uint64_t committed_step = 0;
  std::optional<uint64_t> replicated_step;  // absent: not replicated yet
  std::optional<uint64_t> steps_behind;     // with replicated_step
  bool operator==(const LagRow&) const = default;
};

struct StatusCheckpoints {
  std::string job;
  uint64_t local_versions = 0, local_bytes = 0, replicas = 0, replica_bytes = 0;
  uint64_t pushed = 0, push_failed = 0, received = 0, receive_refused = 0;
  std::vector<LagRow> lag;
  bool operator==(const StatusCheckpoints&) const = default;
};

// The straggler verdict this agent's local trainer last reported (see the `health` reply for the figures).
struct StatusHealth {
  bool reported = false;
  uint64_t epoch = 0;
  uint64_t step = 0;
  std::vector<std::string> stragglers;
  // Eviction of stragglers (--evict-stragglers): "off", or what it does now, for people (e.g. "evicted: a
  // straggler from step 25 (epoch 2), readmitted once alive out of the view for 52 s more").
  std::string eviction;
  uint64_t evictions = 0;  // views installed here that evicted someone
  bool operator==(const StatusHealth&) const = default;
};

// One local trainer's latest `trainer-stats` report.
struct StatusTrainer {
  uint32_t rank = 0;                                    // its local rank (slot) on this host
  double age_s = 0;                                     // seconds since the report came
  uint64_t reports = 0;                                 // reports from this rank since the agent started
  std::vector<std::pair<std::string, double>> figures;  // in the agent's table order; absent ones left out
  bool operator==(const StatusTrainer&) const = default;
};

struct StatusReply {
  static constexpr const char* kWhat = "an agent's status";
  static constexpr std::array kRequiredKeys{"self", "view"};
  std::string self;
  std::string addr;
  uint64_t generation = 0;
  std::string cluster;
  bool keyed = false;  // the agent runs with a cluster key (false: --insecure)
  uint32_t slots = 0;
  StatusView view;
  MembersByState members_by_state;
  std::vector<ViewChangeRow> view_changes;  // oldest first
  StatusCheckpoints checkpoints;
  StatusHealth health;
  std::vector<StatusTrainer> trainers;  // by local rank; empty before the first report (or from an older agent)
  bool operator==(const StatusReply&) const = default;
};

// A change of view-history whose joined or left list holds only its first names: how many there were.
struct NamesCut {
  uint64_t epoch = 0;
  uint64_t joined = 0;
  uint64_t left = 0;
  bool operator==(const NamesCut&) const = default;
};

// The `view-history` reply: the committed views this agent kept (more than status's last few), oldest first:
//   {"self", "kept", "recorded", "view_changes": [as in status], "cut": [{"epoch", "joined", "left"}...]}
struct ViewHistoryReply {
  static constexpr const char* kWhat = "an agent's view history";
  static constexpr std::array kRequiredKeys{"self", "view_changes"};
  std::string self;
  uint64_t kept = 0;      // how many changes the agent keeps at most
  uint64_t recorded = 0;  // views committed here since the start, also those no longer kept
  std::vector<ViewChangeRow> view_changes;
  std::vector<NamesCut> cut;  // the changes whose name lists were cut (past status's last few)
  bool operator==(const ViewHistoryReply&) const = default;
};

void to_json(Json& j, const StatusView& r);
void from_json(const Json& j, StatusView& r);
void to_json(Json& j, const MembersByState& r);
void from_json(const Json& j, MembersByState& r);
void to_json(Json& j, const ViewChangeRow& r);
void from_json(const Json& j, ViewChangeRow& r);
void to_json(Json& j, const LagRow& r);
void from_json(const Json& j, LagRow& r);
void to_json(Json& j, const StatusCheckpoints& r);
void from_json(const Json& j, StatusCheckpoints& r);
void to_json(Json& j, const StatusHealth& r);
void from_json(const Json& j, StatusHealth& r);
void to_json(Json& j, const StatusTrainer& r);
void from_json(const Json& j, StatusTrainer& r);
void to_json(Json& j, const StatusReply& r);
void to_json(Json& j, const NamesCut& r);
void from_json(const Json& j, NamesCut& r);
void to_json(Json& j, const ViewHistoryReply& r);
void from_json(const Json& j, ViewHistoryReply& r);
void from_json(const Json& j, StatusReply& r);

}  // namespace shoal::control
