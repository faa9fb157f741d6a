// The `view` reply: the committed view, the keeper's status and the ranks derived from the view:
//   {"self", "epoch", "hash", "lineage", "status", "reason", "world_size", "live_of_view", "in_view",
//    "members": [{"name", "host", "addr", "slots", "join_epoch", "generation"}...],
//    "ranks": [{"rank", "local_rank", "node_rank", "name", "slot"}...], "evicted": [names]}
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "control/replies/document.hpp"

namespace shoal::control {

struct ViewMemberRow {
  std::string name;
  std::string host;
  std::string addr;
  uint32_t slots = 0;
  uint64_t join_epoch = 0;
  uint64_t generation = 0;
  bool operator==(const ViewMemberRow&) const = default;
};

struct RankRow {
  uint32_t rank = 0;
  uint32_t local_rank = 0;
  uint32_t node_rank = 0;
  std::string name;  // the member that runs it
  uint32_t slot = 0;
  bool operator==(const RankRow&) const = default;
};

struct ViewReply {
  static constexpr const char* kWhat = "a view";
  static constexpr std::array kRequiredKeys{"epoch", "members", "ranks"};
  std::string self;
  uint64_t epoch = 0;
  std::string hash;    // the view's hash, 16 hex digits
  std::string lineage;  // the cluster's lineage (View::lineage), 16 hex digits; absent from older agents
  std::string status;  // forming, stable, proposing, stalled
  std::string reason;
  uint32_t world_size = 0;
  uint64_t live_of_view = 0;
  bool in_view = false;
  bool keyed = false;  // the agent runs with a cluster key (false: --insecure)
  std::vector<ViewMemberRow> members;
  std::vector<RankRow> ranks;
  std::vector<std::string> evicted;  // members of the previous view this one removed as stragglers (under the hash)
  std::vector<std::string> excluded;  // members the operator keeps out (`shoal view exclude`; under the hash)
  // Views and ballots from peers this agent refused, by cause (membership::ViewRefusal); absent from older agents.
  std::map<std::string, uint64_t> refused;
  bool operator==(const ViewReply&) const = default;
};

void to_json(Json& j, const ViewMemberRow& r);
void from_json(const Json& j, ViewMemberRow& r);
void to_json(Json& j, const RankRow& r);
void from_json(const Json& j, RankRow& r);
void to_json(Json& j, const ViewReply& r);
void from_json(const Json& j, ViewReply& r);

}  // namespace shoal::control
