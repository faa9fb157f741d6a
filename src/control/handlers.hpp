// The control socket's request table: one request line ("members", "view", "ckpt ls") in, one JSON
// document out. Subsystems register their requests here; nothing about sockets.
//
// Who may send what: the socket's file mode (0660) lets the agent's user and group connect (with
// --control-group, that group), and every request names the Access it needs, matched to its effect.
// Queries that only read (members, view, status, session-wait, ckpt-safe, ...) are open to whoever could
// connect; whatever changes state on this host or in the cluster, or costs the cluster work, needs the
// agent's user, its group or root: a local trainer's reports (ckpt-committed: it names the slots' trusted
// writer and a rank's newest step; peer-lost: it has the member probed at once; health-report: a verdict
// that may evict) and the pre-flight check (compute and link probes on every member); a request that
// changes the cluster without its consent (view-force) only the agent's own user or root. The caller is
// who the kernel says (SO_PEERCRED), never what it claims.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::control {

// Request lines longer than this are refused before they are parsed.
inline constexpr size_t kMaxControlRequestBytes = 1024;

// The process at the other end of a control connection, as the kernel reports it.
struct Caller {
  uint32_t uid = 0;
  uint32_t gid = 0;
  int32_t pid = 0;
  bool known = false;  // false: the kernel could not say (the caller then gets queries only)

  // This process itself (in-process use: tests, the fuzz target).
  static Caller itself();
};

enum class Access {
  query,  // anyone who can connect: reads and long polls that change nothing
  owner,  // the agent's own user or root: changes the cluster without its consent
  local,  // the agent's own user, a caller whose group is the agent's, or root: changes state, costs work
};

class ControlHandlers {
 public:
  // Returns a complete JSON document. `args` are the words after the request's name.
  using Handler = std::function<std::string(std::span<const std::string> args)>;
  // A handler that also learns who asked (the kernel's word for it, Caller::known false when it could not say).
  using CallerHandler = std::function<std::string(std::span<const std::string> args, const Caller& caller)>;

  // For requests answered later (a long poll): the handler keeps `reply` and calls it once, on the
  // agent's loop, with a complete JSON document.
  using Reply = std::function<void(std::string document)>;
  using AsyncHandler = std::function<void(std::span<const std::string> args, Reply reply)>;

  // Registers (or replaces) the handler of one request name.
  void add(std::string name, std::string summary, Handler handler, Access access = Access::query);
  void add_with_caller(std::string name, std::string summary, CallerHandler handler, Access access = Access::query);
  // Registers a request whose answer may take up to `max_wait`.
  void add_async(std::string name, std::string summary, std::chrono::milliseconds max_wait, AsyncHandler handler,
                 Access access = Access::query);
  // The access a request needs (nullopt: no such request), and every request's name, in registration order.
  std::optional<Access> access_of(std::string_view name) const;
  std::vector<std::string> names() const;

  // The reply to one request line (without its newline). Unknown requests, empty lines and bytes
  // outside printable ASCII get an error document, never an exception.
  // A caller without the request's Access gets an error document saying who may send it (and the
  // refusal is counted: refused()).
  std::string dispatch(std::string_view line, const Caller& caller = Caller::itself()) const;
  // Serves `line` if it names an async request: returns how long the answer may take, and calls `reply`
  // (now or later). Returns nullopt (and does nothing) for every other line, which dispatch() serves.
  std::optional<std::chrono::milliseconds> dispatch_async(std::string_view line, Reply reply,
                                                          const Caller& caller = Caller::itself()) const;

  // Requests refused for want of access, since start.
  uint64_t refused() const { return refused_; }

  // {"error": message, "requests": [...names]}
  std::string error_reply(std::string_view message) const;

 private:
  struct Entry {
    std::string name;
    std::string summary;
    CallerHandler handler;
    AsyncHandler async_handler;
    std::chrono::milliseconds max_wait{0};
    Access access = Access::query;
  };
  // nullopt when `caller` may send `e`, else the error document.
  std::optional<std::string> refuse(const Entry& e, const Caller& caller) const;

  std::vector<Entry> entries_;
  mutable uint64_t refused_ = 0;
};

}  // namespace shoal::control
