// The short replies of the control socket: the error document any request may get, and the answers
// to `ckpt-committed`, `peer-lost`, `ckpt-safe`, `view-force`, `drain`, `view-exclude` and `view-readmit`.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "control/replies/document.hpp"

namespace shoal::control {

// {"error": "unknown request 'x'", "requests": ["members", ...]}: what went wrong and what is served.
struct ErrorReply {
  static constexpr bool kIsErrorDocument = true;
  static constexpr const char* kWhat = "an error";
  static constexpr std::array kRequiredKeys{"error"};
  std::string error;
  std::vector<std::string> requests;
  bool operator==(const ErrorReply&) const = default;
};

// {"ok": true}: the agent took note of a sealed checkpoint version (`ckpt-committed RANK STEP`), or of a
// trainer's broken connection to a member (`peer-lost NAME GENERATION`).
struct CommittedReply {
  static constexpr const char* kWhat = "an acknowledgement";
  static constexpr std::array kRequiredKeys{"ok"};
  bool ok = false;
  bool operator==(const CommittedReply&) const = default;
};

// {"rank", "committed", "replicated"?, "holders", "persisting", "persisted"?}: how safe a local rank's
// newest checkpoint is (`ckpt-safe RANK`): the newest step committed on this host, the newest held by
// every one of the `holders` peers that placement names (0: no peer to hold it), and with a persist
// directory the newest step written there.
struct CkptSafeReply {
  static constexpr const char* kWhat = "a checkpoint's safety";
  static constexpr std::array kRequiredKeys{"rank", "committed", "holders"};
  uint32_t rank = 0;
  uint64_t committed = 0;
  std::optional<uint64_t> replicated;
  uint32_t holders = 0;
  bool persisting = false;
  std::optional<uint64_t> persisted;
  bool operator==(const CkptSafeReply&) const = default;
};

// {"forced": bool, "error"?: why not, "epoch": the committed epoch}: the answer to `view-force yes`.
struct ForceReply {
  static constexpr const char* kWhat = "the outcome of view-force";
  static constexpr std::array kRequiredKeys{"forced"};
  bool forced = false;
  std::optional<std::string> error;  // present exactly when not forced
  uint64_t epoch = 0;
  bool operator==(const ForceReply&) const = default;
};

// {"draining": bool, "error"?: why not, "within_s": the drain's deadline, "epoch": the committed epoch}: the
// answer to `drain [WITHIN_MS]`. Draining: the local trainers finish their step, save, wait until a peer holds
// that version, and the member leaves gracefully; after within_s it leaves anyway.
struct DrainReply {
  static constexpr const char* kWhat = "the outcome of drain";
  static constexpr std::array kRequiredKeys{"draining"};
  bool draining = false;
  std::optional<std::string> error;  // present exactly when not draining
  double within_s = 0;
  uint64_t epoch = 0;
  bool operator==(const DrainReply&) const = default;
};

// {"committed": bool, "error"?: why not, "epoch": the committed epoch, "members": the member names the request
// named, "excluded": the committed view's excluded list}: the answer to `view-exclude NAME...` and
// `view-readmit NAME...`, once a committed view carries the change (or the wait is over: the change stays
// pending and this agent goes on proposing it, "pending" true).
struct ExcludeReply {
  static constexpr const char* kWhat = "the outcome of view-exclude or view-readmit";
  static constexpr std::array kRequiredKeys{"committed"};
  bool committed = false;
  bool pending = false;
  std::optional<std::string> error;  // present exactly when not committed
  uint64_t epoch = 0;
  std::vector<std::string> members;
  std::vector<std::string> excluded;
  bool operator==(const ExcludeReply&) const = default;
};

void to_json(Json& j, const ErrorReply& r);
void from_json(const Json& j, ErrorReply& r);
void to_json(Json& j, const CommittedReply& r);
void from_json(const Json& j, CommittedReply& r);
void to_json(Json& j, const CkptSafeReply& r);
void from_json(const Json& j, CkptSafeReply& r);
void to_json(Json& j, const ForceReply& r);
void from_json(const Json& j, ForceReply& r);
void to_json(Json& j, const DrainReply& r);
void from_json(const Json& j, DrainReply& r);
void to_json(Json& j, const ExcludeReply& r);
void from_json(const Json& j, ExcludeReply& r);

}  // namespace shoal::control
