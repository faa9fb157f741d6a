// The control socket's request table: one request line ("members", "view", "ckpt ls") in, one JSON
// document out. Subsystems register their requests here; nothing about sockets.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::control {

// Request lines longer than this are refused before they are parsed.
inline constexpr size_t kMaxControlRequestBytes = 1024;

class ControlHandlers {
 public:
  // Returns a complete JSON document. `args` are the words after the request's name.
  using Handler = std::function<std::string(std::span<const std::string> args)>;

  // For requests answered later (a long poll): the handler keeps `reply` and calls it once, on the
  // agent's loop, with a complete JSON document.
  using Reply = std::function<void(std::string document)>;
  using AsyncHandler = std::function<void(std::span<const std::string> args, Reply reply)>;

  // Registers (or replaces) the handler of one request name.
  void add(std::string name, std::string summary, Handler handler);
  // Registers a request whose answer may take up to `max_wait`.
  void add_async(std::string name, std::string summary, std::chrono::milliseconds max_wait, AsyncHandler handler);

  // The reply to one request line (without its newline). Unknown requests, empty lines and bytes
  // outside printable ASCII get an error document, never an exception.
  std::string dispatch(std::string_view line) const;
  // Serves `line` if it names an async request: returns how long the answer may take, and calls `reply`
  // (now or later). Returns nullopt (and does nothing) for every other line, which dispatch() serves.
  std::optional<std::chrono::milliseconds> dispatch_async(std::string_view line, Reply reply) const;

  // {"error": message, "requests": [...names]}
  std::string error_reply(std::string_view message) const;

 private:
  struct Entry {
    std::string name;
    std::string summary;
    Handler handler;
    AsyncHandler async_handler;
    std::chrono::milliseconds max_wait{0};
  };
  std::vector<Entry> entries_;
};

}  // namespace shoal::control
