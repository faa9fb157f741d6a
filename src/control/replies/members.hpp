// The `members` reply: this member's view of the cluster and the inputs it refused:
//   {"self", "members": [{"name", "addr", "state", "incarnation", "generation"}...], "rejected": {cause: n}}
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "control/replies/document.hpp"

namespace shoal::control {

// Refused inputs by cause, as a JSON object {"truncated": 0, "bad_magic": 2, ...} in the writer's order;
// the causes are the writer's (wire::name of each), kept as text so that a reader of another version
// still shows them all.
struct RejectCounts {
  std::vector<std::pair<std::string, uint64_t>> by_cause;

  // The count of `cause`; nullopt when the document does not name it.
  std::optional<uint64_t> find(std::string_view cause) const;
  bool operator==(const RejectCounts&) const = default;
};

struct MemberRow {
  std::string name;
  std::string addr;
  std::string state;  // alive, suspect, dead, left
  uint64_t incarnation = 0;
  uint64_t generation = 0;
  bool operator==(const MemberRow&) const = default;
};

struct MembersReply {
  static constexpr const char* kWhat = "a member list";
  static constexpr std::array kRequiredKeys{"self", "members"};
  std::string self;
  std::vector<MemberRow> members;  // by name
  RejectCounts rejected;           // every cause, zeros included
  bool operator==(const MembersReply&) const = default;
};

void to_json(Json& j, const RejectCounts& r);
void from_json(const Json& j, RejectCounts& r);
void to_json(Json& j, const MemberRow& r);
void from_json(const Json& j, MemberRow& r);
void to_json(Json& j, const MembersReply& r);
void from_json(const Json& j, MembersReply& r);

}  // namespace shoal::control
