// The replies a connected trainer follows its agent by: `session-info` (who the agent is) and the long
// poll `session-wait SEQ TIMEOUT_MS` (the committed view and failures, once newer than SEQ):
//   {"name", "generation", "addr", "cluster", "slots", "job", "store", "key_file", "store_by_lineage",
//    "ckpt_replicas"}
//   {"seq", "broken_epoch", "broken_why", "failures", "view": the `view` reply, or null before the first,
//    "cleared_epoch", "drain": the operator asked this member to drain (`shoal drain`)}
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "control/replies/document.hpp"
#include "control/replies/view.hpp"

namespace shoal::control {

struct SessionInfoReply {
  static constexpr const char* kWhat = "session-info";
  static constexpr std::array kRequiredKeys{"name"};
  std::string name;
  uint64_t generation = 0;
  std::string addr;
  std::string cluster;
  uint32_t slots = 0;
  std::string job;       // checkpoints: the job name; empty from agents that serve none
  std::string store;     // checkpoints: this host's segment names
  std::string key_file;  // the cluster key file; empty: an open cluster (or an agent before keys)
  // The segments are "<store>-<the view's lineage>" (ckpt::store_for_lineage), the job being unnamed;
  // false from agents before lineages.
  bool store_by_lineage = false;
  int64_t ckpt_replicas = -1;  // peer hosts that keep a copy of each version; -1 from agents before it
  bool operator==(const SessionInfoReply&) const = default;
};

struct SessionWaitReply {
  static constexpr const char* kWhat = "a session-wait answer";
  static constexpr std::array kRequiredKeys{"seq"};
  uint64_t seq = 0;
  uint64_t broken_epoch = 0;
  std::string broken_why;
  uint64_t failures = 0;  // failure verdicts about members of the view, ever; 0 from agents before it existed
  std::optional<ViewReply> view;
  // The newest broken epoch whose every reported failure was taken back (the members answer again in the
  // same generation: no view will remove them); 0 when none, and from agents before it existed.
  uint64_t cleared_epoch = 0;
  // This member drains (`shoal drain`, a spot notice, SIGTERM with --drain-on-sigterm): its trainers finish
  // the step, save, wait until a peer holds that version and end; false from agents before it existed.
  bool drain = false;
  bool operator==(const SessionWaitReply&) const = default;
};

void to_json(Json& j, const SessionInfoReply& r);
void from_json(const Json& j, SessionInfoReply& r);
void to_json(Json& j, const SessionWaitReply& r);
void from_json(const Json& j, SessionWaitReply& r);

}  // namespace shoal::control
